"""Writes the fixtures of issue 26's object references, null dataspaces, time types, `_NCPROPERTIES`
and blosc chunks (tests/native_hdf5/special_types.rs, tests/native_hdf5/blosc.rs).

    make_special_types.py DIR [blosc]

DIR/references.h5 (h5py): object references (old-style `H5R_OBJECT`, h5py's `ref_dtype`) to a
dataset, a group, a nested dataset and the root, plus a null reference, in a 1-d dataset, a chunked
2-d one and a scalar; object-reference attributes on a dataset and a group; a dataset of region
references (refused).
DIR/null.h5 (h5py): a dataset of null dataspace (`h5py.Empty`) beside a plain one.
DIR/times.h5 (PyTables): a time32 and a time64 EArray and a table with a time column (the HDF5 time
class), beside a plain array.
DIR/ncproperties.nc (netCDF4-python): user attributes `_NCPROPERTIES` on the root and a variable,
beside libnetcdf's own `_NCProperties`.

With `blosc`, only DIR/blosc.h5 (h5py + hdf5plugin): one dataset per blosc compressor (blosclz, lz4,
lz4hc, zlib, zstd) and shuffle (none, byte, bit), of 1-, 2-, 4- and 8-byte elements, chunks of several
blosc blocks and partial edge chunks, an incompressible dataset (memcpy'd frames) and one with a
fill value and unwritten chunks.
"""

import pathlib
import sys

import h5py
import numpy as np


def references(path):
    with h5py.File(path, "w") as f:
        target = f.create_dataset("target", data=np.arange(6, dtype="i4"))
        grp = f.create_group("grp")
        inner = grp.create_dataset("inner", data=np.linspace(0, 1, 4))
        ref = h5py.ref_dtype
        refs = [target.ref, grp.ref, inner.ref, h5py.Reference(), f.ref]
        f.create_dataset("refs", data=np.array(refs, dtype=ref))
        grid = [[target.ref, inner.ref, grp.ref], [f.ref, target.ref, h5py.Reference()]] * 3
        f.create_dataset("refs_2d", data=np.array(grid, dtype=ref), chunks=(4, 2))
        f.create_dataset("one_ref", data=inner.ref, dtype=ref)
        target.attrs.create("see_also", [inner.ref, grp.ref], dtype=ref)
        grp.attrs.create("first", target.ref, dtype=ref)
        f.create_dataset("regions", data=[target.regionref[1:3]], dtype=h5py.regionref_dtype)


def null(path):
    with h5py.File(path, "w") as f:
        f.create_dataset("empty", data=h5py.Empty("f4"))
        f.create_dataset("data", data=np.arange(5, dtype="i2"))
        f["data"].attrs["nothing"] = h5py.Empty("f8")


def times(path):
    import tables

    class Row(tables.IsDescription):
        when = tables.Time64Col()
        value = tables.Float64Col()

    with tables.open_file(str(path), "w") as f:
        e32 = f.create_earray("/", "earr32", tables.Time32Atom(), (0,))
        e32.append(np.arange(10, dtype="i4") * 3600)
        e64 = f.create_earray("/", "earr64", tables.Time64Atom(), (0,))
        e64.append(np.arange(10, dtype="f8") * 1.5)
        table = f.create_table("/", "tbl", Row)
        for i in range(5):
            table.row["when"] = 1.7e9 + i
            table.row["value"] = i / 4
            table.row.append()
        table.flush()
        f.create_array("/", "plain", np.arange(4, dtype="f4"))


def ncproperties(path):
    import netCDF4

    with netCDF4.Dataset(path, "w") as f:
        f.createDimension("x", 3)
        v = f.createVariable("v", "f4", ("x",))
        v[:] = [1.0, 2.0, 3.0]
        f.setncattr("_NCPROPERTIES", "a user attribute, not libnetcdf's")
        v.setncattr("_NCPROPERTIES", "on a variable too")


def blosc(path):
    import hdf5plugin

    rng = np.random.default_rng(26)
    smooth = lambda n, dtype: (np.sin(np.arange(n) / 17.0) * 1000).astype(dtype)  # noqa: E731
    shuffles = {"noshuffle": hdf5plugin.Blosc.NOSHUFFLE, "shuffle": hdf5plugin.Blosc.SHUFFLE,
                "bitshuffle": hdf5plugin.Blosc.BITSHUFFLE}
    with h5py.File(path, "w") as f:
        for cname in ("blosclz", "lz4", "lz4hc", "zlib", "zstd"):
            for sname, shuffle in shuffles.items():
                for dtype in ("u1", "<i2", ">f4", "<f8"):
                    data = smooth(3000, dtype).reshape(60, 50)
                    f.create_dataset(f"{cname}_{sname}_{np.dtype(dtype).str[1:]}", data=data, chunks=(32, 32),
                                     **hdf5plugin.Blosc(cname=cname, clevel=5, shuffle=shuffle))
        # Chunks of 512 KiB: several blosc blocks each.
        f.create_dataset("big_chunks", data=smooth(400_000, "<f8").reshape(400, 1000), chunks=(100, 1000),
                         **hdf5plugin.Blosc(cname="lz4", clevel=9, shuffle=hdf5plugin.Blosc.SHUFFLE))
        # Random bytes do not compress: blosc stores them as they are (memcpy'd frames).
        f.create_dataset("incompressible", data=rng.integers(0, 2**63, 5000, dtype="<i8"), chunks=(1200,),
                         **hdf5plugin.Blosc(cname="blosclz", clevel=1, shuffle=hdf5plugin.Blosc.NOSHUFFLE))
        sparse = f.create_dataset("sparse", shape=(40, 40), dtype="<i4", chunks=(16, 16), fillvalue=-7,
                                  **hdf5plugin.Blosc(cname="zstd", clevel=3, shuffle=hdf5plugin.Blosc.BITSHUFFLE))
        sparse[:16, 16:] = np.arange(16 * 24, dtype="<i4").reshape(16, 24)


def main():
    out = pathlib.Path(sys.argv[1])
    if sys.argv[2:] == ["blosc"]:
        blosc(out / "blosc.h5")
        return
    references(out / "references.h5")
    null(out / "null.h5")
    times(out / "times.h5")
    ncproperties(out / "ncproperties.nc")


if __name__ == "__main__":
    main()
