"""kerchunk Parquet reference sets between vzarr and the Python stack (issue 39).

    check_parquet.py read DIR [--no-virtualizarr] FILE...
                                             fsspec's ReferenceFileSystem (LazyReferenceMapper) + zarr-python
                                             read vzarr's Parquet set DIR, equal to netCDF4 on FILE...
                                             (concatenated along time when several); VirtualiZarr's
                                             KerchunkParquetParser opens DIR, and its references read
                                             through fsspec give the same values (not for sets with
                                             subgroups: LazyReferenceMapper takes every node listed in
                                             .zmetadata for an array when VirtualiZarr lists its keys,
                                             for kerchunk's own sets too).
    check_parquet.py kerchunk FILE DIR       kerchunk's SingleHdf5ToZarr + refs_to_dataframe write DIR.
    check_parquet.py virtualizarr FILE DIR   VirtualiZarr's HDFParser + .vz.to_kerchunk(format="parquet").

Prints one `ok   ...` line per check; exits 1 on the first difference.
"""

import sys

import fsspec
import netCDF4
import numpy as np
import xarray as xr


def fail(message):
    print(f"FAIL {message}")
    sys.exit(1)


def expected(files):
    """Every variable of FILE... as netCDF4 reads it (masking off), concatenated along time."""
    datasets = [netCDF4.Dataset(f) for f in files]
    for ds in datasets:
        ds.set_auto_mask(False)
    out = {}
    for name, var in datasets[0].variables.items():
        values = [np.asarray(d.variables[name][...]) for d in datasets]
        if len(files) > 1 and "time" in var.dimensions:
            out[name] = np.concatenate(values, axis=var.dimensions.index("time"))
        else:
            out[name] = values[0]
    return out


def compare(what, ds, files, scalars=True):
    want = expected(files)
    for name, values in want.items():
        if not scalars and values.ndim == 0:
            # VirtualiZarr 2.8 keys the chunk of a 0-d array "name/" (not "name/0") when it writes
            # kerchunk references, and refuses it when it reads Parquet: not vzarr's to check.
            print(f"skip {what} {name}: 0-d")
            continue
        if name not in ds.variables:
            fail(f"{what}: {name} missing")
        got = np.asarray(ds[name].values)
        if got.shape != values.shape or not np.array_equal(got, values, equal_nan=values.dtype.kind == "f"):
            fail(f"{what}: {name} differs from netCDF4 (shape {got.shape} vs {values.shape})")
        print(f"ok   {what} {name} {values.shape}")


def open_refs(refs):
    """xarray over fsspec references (a Parquet directory or a dict), as Zarr v2, no decoding."""
    fs = fsspec.filesystem("reference", fo=refs, remote_protocol="file")
    return xr.open_dataset(
        fs.get_mapper(""), engine="zarr", zarr_format=2, consolidated=False, mask_and_scale=False, decode_times=False
    )


def read(directory, files):
    compare("fsspec+zarr", open_refs(directory), files)
    from obspec_utils.registry import ObjectStoreRegistry
    from obstore.store import LocalStore
    from virtualizarr import open_virtual_dataset
    from virtualizarr.parsers import KerchunkParquetParser

    registry = ObjectStoreRegistry({"file://": LocalStore()})
    vds = open_virtual_dataset(directory, registry=registry, parser=KerchunkParquetParser(), loadable_variables=[])
    refs = vds.vz.to_kerchunk(format="dict")
    compare("virtualizarr KerchunkParquetParser", open_refs(refs), files, scalars=False)


def write_kerchunk(file, directory):
    from kerchunk.df import refs_to_dataframe
    from kerchunk.hdf import SingleHdf5ToZarr

    refs = SingleHdf5ToZarr(file, inline_threshold=0).translate()
    refs_to_dataframe(refs, directory, record_size=7)
    print(f"ok   kerchunk wrote {directory}")


def write_virtualizarr(file, directory):
    from obspec_utils.registry import ObjectStoreRegistry
    from obstore.store import LocalStore
    from virtualizarr import open_virtual_dataset
    from virtualizarr.parsers import HDFParser

    registry = ObjectStoreRegistry({"file://": LocalStore()})
    vds = open_virtual_dataset(f"file://{file}", registry=registry, parser=HDFParser(), loadable_variables=[])
    # VirtualiZarr 2.8 cannot write a 0-d array to Parquet (its chunk key is "name/", which
    # kerchunk's refs_to_dataframe refuses).
    vds = vds.drop_vars([name for name, var in vds.variables.items() if var.ndim == 0])
    vds.vz.to_kerchunk(directory, format="parquet", record_size=5)
    print(f"ok   virtualizarr wrote {directory}")


def main(argv):
    mode, rest = argv[0], argv[1:]
    if mode == "read" and rest[1] == "--no-virtualizarr":
        compare("fsspec+zarr", open_refs(rest[0]), rest[2:])
    elif mode == "read":
        read(rest[0], rest[1:])
    elif mode == "kerchunk":
        write_kerchunk(*rest)
    elif mode == "virtualizarr":
        write_virtualizarr(*rest)
    else:
        fail(f"unknown mode {mode}")


if __name__ == "__main__":
    main(sys.argv[1:])
