"""The native HDF5 reader against h5py (libhdf5 2.0), for files Debian's libhdf5 cannot open too.

    check_hdf5.py --refs REFS.json SOURCE.h5

REFS.json is vzarr's kerchunk export of a scan of SOURCE.h5. For every dataset h5py reads as numbers
(HDF5 array datatypes of numbers included, with the array's dimensions after the dataset's):
  1. every chunk reference equals h5py's `get_chunk_info_by_coord` (byte offset and size), a chunk
     h5py has no record of is absent from the references, and a chunk stored with a filter skipped
     (non-zero filter mask) is held inline (rewritten by vzarr), as is every chunk of an array whose
     filter has no Zarr codec (szip, LZO, blosc2: `copied_chunks` in the `zarr.json` extension field
     `vzarr`);
  2. the values zarr-python reads through the references equal h5py's `dataset[()]`, bit for bit;
  3. for datasets of object references, the strings zarr-python reads equal h5py's `f[ref].name`.
Prints one line per check and a closing "N passed, M failed" line; exits 1 when any check failed.
"""

import argparse
import json
import sys

import fsspec
import h5py
import numpy as np
import zarr
from zarr.storage import FsspecStore

from results import Results

try:
    # Registers the blosc filter (HDF5 filter 32001) with h5py's libhdf5 for the blosc fixtures.
    import hdf5plugin  # noqa: F401
except ImportError:
    pass


def element(dtype):
    """The base dtype and the dimensions of a subarray dtype (an HDF5 array datatype; nested ones
    flattened), or (dtype, ())."""
    shape = ()
    while dtype.subdtype is not None:
        dtype, inner = dtype.subdtype
        shape += inner
    return dtype, shape


def numeric_datasets(f):
    """Datasets of numbers, and of HDF5 array datatypes of numbers (h5py: a subarray dtype, whose
    values `dataset[()]` gives with the array's dimensions appended, as vzarr stores them)."""
    def numeric(dtype):
        base = element(dtype)[0]
        return base.kind in "iuf" and base.names is None

    found = []
    f.visititems(lambda name, obj: found.append(name) if isinstance(obj, h5py.Dataset) and numeric(obj.dtype)
                 else None)
    return found


def reference_datasets(f):
    found = []
    f.visititems(lambda name, obj: found.append(name) if isinstance(obj, h5py.Dataset)
                 and h5py.check_dtype(ref=obj.dtype) is h5py.Reference else None)
    return found


def check_reference_paths(f, group, name):
    """vzarr stores object references as the paths of their targets: h5py's `f[ref].name`."""
    theirs = [f[r].name if r else "" for r in np.asarray(f[name][()], dtype=object).ravel()]
    ours = [str(s) for s in np.asarray(group[name][...]).ravel()]
    if ours != theirs:
        raise AssertionError(f"paths differ: {ours} vs h5py {theirs}")
    return f"{len(theirs)} references"


def check_chunks(refs, name, ds):
    if ds.chunks is None:
        return "not chunked"
    array = json.loads(refs[f"{name}/zarr.json"])
    copied = "copied_chunks" in array.get("vzarr", {})
    counts = [-(-n // c) for n, c in zip(ds.shape, ds.chunks)]
    # An array datatype's dimensions are whole in every chunk: chunk 0 along each.
    whole = (0,) * len(element(ds.dtype)[1])
    compared = rewritten = 0
    for index in np.ndindex(*counts):
        origin = tuple(i * c for i, c in zip(index, ds.chunks))
        key = f"{name}/c/" + "/".join(str(i) for i in index + whole) if index + whole else f"{name}/c/0"
        info = ds.id.get_chunk_info_by_coord(origin)
        ours = refs.get(key)
        if info.byte_offset is None:
            if isinstance(ours, list):
                raise AssertionError(f"{key}: vzarr references {ours}, h5py has no chunk")
            continue
        if (info.filter_mask or copied) and isinstance(ours, str):
            # A chunk stored with a filter skipped (an optional filter that failed) cannot be
            # referenced under the array's codecs: vzarr rewrites it into the store (inline here);
            # so are all chunks of an array with a filter no Zarr codec describes.
            rewritten += 1
            continue
        if not isinstance(ours, list) or ours[1:] != [info.byte_offset, info.size]:
            raise AssertionError(f"{key}: vzarr {ours}, h5py offset {info.byte_offset} size {info.size}")
        compared += 1
    assert array["chunk_grid"], "zarr.json has a grid"
    return f"{compared} chunks" + (f", {rewritten} rewritten (filter skipped)" if rewritten else "")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--refs", required=True)
    parser.add_argument("source")
    args = parser.parse_args()
    print(f"h5py {h5py.version.version} (HDF5 {h5py.version.hdf5_version}), zarr {zarr.__version__}")
    zarr.config.set({"array.rectilinear_chunks": True})
    refs = json.load(open(args.refs))["refs"]
    fs = fsspec.filesystem("reference", fo=args.refs, asynchronous=True)
    group = zarr.open_group(FsspecStore(fs, read_only=True, path=""), mode="r", zarr_format=3)
    results = Results()
    with h5py.File(args.source, "r") as f:
        for name in numeric_datasets(f):
            ds = f[name]
            results.check(f"{args.source}:{name} chunk references", lambda: check_chunks(refs, name, ds))

            def values(name=name, ds=ds):
                ours, theirs = np.asarray(group[name][...]), ds[()]
                if ours.shape != theirs.shape or ours.astype(theirs.dtype).tobytes() != theirs.tobytes():
                    raise AssertionError(f"values differ: {ours!r} vs h5py {theirs!r}")
                return f"{theirs.shape} {theirs.dtype}"

            results.check(f"{args.source}:{name} values", values)
        for name in reference_datasets(f):
            results.check(f"{args.source}:{name} reference paths",
                          lambda name=name: check_reference_paths(f, group, name))
    sys.exit(0 if results.summary() else 1)


if __name__ == "__main__":
    main()
