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
  3. for datasets of object references, the strings zarr-python reads equal h5py's `f[ref].name`;
  4. attributes of the kinds JSON has no plain form for (variable-length sequences, array types,
     opaque values, byte strings that are not UTF-8), of every such dataset and of the root group,
     as zarr-python reads them equal h5py's `attrs`: nested lists of the same values and shape, and
     base64 (noted in the `vzarr` field's `attribute_encodings`) of the same bytes. A root group
     attribute that needs base64 is absent (a group has no `vzarr` field).
Prints one line per check and a closing "N passed, M failed" line; exits 1 when any check failed.
"""

import argparse
import base64
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


# netCDF-4's and dimension scales' own attributes, which vzarr leaves out (src/scan/hdf5/attributes.rs).
BOOKKEEPING = {"DIMENSION_LIST", "REFERENCE_LIST", "CLASS", "NAME", "_Netcdf4Dimid", "_Netcdf4Coordinates",
               "_NCProperties", "_IsNetcdf4", "_SuperblockVersion", "_nc3_strict"}


def special_attribute(value):
    """The kind of an h5py attribute value JSON text has no plain form for, or None."""
    if isinstance(value, str):
        # h5py decodes variable-length strings that are not UTF-8 with surrogate escapes.
        try:
            value.encode("utf-8")
            return None
        except UnicodeEncodeError:
            return "bytes"
    value = np.asarray(value) if not isinstance(value, (bytes, np.void)) else value
    if isinstance(value, bytes):
        try:
            value.decode("utf-8")
            return None
        except UnicodeDecodeError:
            return "bytes"
    if isinstance(value, np.void) or value.dtype.kind == "V":
        return "bytes"
    if value.dtype == object:
        items = list(value.ravel())
        if items and all(isinstance(i, np.ndarray) and i.dtype.kind in "iufb" for i in items):
            return "sequences"
        if items and all(isinstance(i, (bytes, str)) for i in items) and any(special_attribute(i) for i in items):
            return "bytes"
    return None


def raw_bytes(item):
    """The bytes of an h5py attribute element: opaque, byte string, or text with surrogate escapes."""
    if isinstance(item, np.void):
        return item.tobytes()
    if isinstance(item, str):
        return item.encode("utf-8", "surrogateescape")
    return bytes(item)


def check_special_attributes(theirs, ours, encodings):
    """Every special attribute h5py reads (`theirs`) against vzarr's through zarr-python (`ours`)."""
    checked = 0
    for key in theirs:
        if key in BOOKKEEPING:
            continue
        value = theirs[key]
        kind = special_attribute(value)
        subarray = kind is None and isinstance(value, np.ndarray) and value.dtype.kind in "iuf" and (
            theirs.get_id(key).dtype.subdtype is not None)
        if kind is None and not subarray:
            continue
        checked += 1
        if kind == "bytes":
            if encodings.get(key) != "base64":
                raise AssertionError(f"{key}: not noted as base64 ({encodings})")
            items = [value] if isinstance(value, (bytes, np.void)) or np.ndim(value) == 0 else list(value.ravel())
            wanted = [raw_bytes(i) for i in items]
            got = [ours[key]] if isinstance(ours[key], str) else ours[key]
            got = [base64.b64decode(g) for g in got]
            if got != wanted:
                raise AssertionError(f"{key}: bytes {got} vs h5py {wanted}")
        elif kind == "sequences":
            wanted = [list(i) for i in value.ravel()]
            got = ours[key] if len(wanted) != 1 else [ours[key]]
            same = len(got) == len(wanted) and all(
                np.array_equal(np.asarray(g, dtype=float), np.asarray(w, dtype=float), equal_nan=True)
                for g, w in zip(got, wanted))
            if not same:
                raise AssertionError(f"{key}: sequences {got} vs h5py {wanted}")
        else:
            got = np.asarray(ours[key])
            if got.shape != value.shape or not np.array_equal(got, value):
                raise AssertionError(f"{key}: {got!r} vs h5py {value!r} (shape kept)")
    return f"{checked} attributes"


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
            def attributes(name=name, ds=ds):
                encodings = json.loads(refs[f"{name}/zarr.json"]).get("vzarr", {}).get("attribute_encodings", {})
                return check_special_attributes(ds.attrs, group[name].attrs.asdict(), encodings)

            results.check(f"{args.source}:{name} special attributes", attributes)
        root_encodings = json.loads(refs["zarr.json"]).get("vzarr", {}).get("attribute_encodings", {})
        results.check(f"{args.source}:/ special attributes",
                      lambda: check_special_attributes(f.attrs, group.attrs.asdict(), root_encodings))
        for name in reference_datasets(f):
            results.check(f"{args.source}:{name} reference paths",
                          lambda name=name: check_reference_paths(f, group, name))
    sys.exit(0 if results.summary() else 1)


if __name__ == "__main__":
    main()
