"""Compound and opaque datasets through zarr-python and xarray equal h5py's reads (issue 26).

    check_structs.py --refs REFS.json SOURCE.h5

REFS.json is vzarr's kerchunk export of a scan of SOURCE.h5 (`--skip-unsupported`). For every dataset
h5py reads as a NumPy structured (compound) or void (opaque) array, or whose dtype is a subarray (an HDF5
array datatype, which h5py reads with the array's dimensions appended), that the references hold:
  1. zarr-python opens it as a structured / void array whose fields are h5py's, in offset order;
  2. every field of every element, as zarr-python reads it, equals h5py's read bit for bit (nested
     fields field by field; an array member element by element, zarr's x["c"]["1"]["2"] against
     h5py's x["c"][:, 1, 2]); a variable-length string member equals h5py's text and an object
     reference member the path of the object h5py dereferences it to;
  3. xarray (`open_zarr`) gives the same values;
and every compound attribute of the file, of its datasets' and of its groups', is a JSON object equal
field by field to h5py's value. Prints one line per check and a closing "N passed, M failed" line;
exits 1 when any check failed.
"""

import argparse
import json
import sys

import fsspec
import h5py
import numpy as np
import xarray as xr
import zarr
from zarr.storage import FsspecStore

from results import Results


def record_datasets(f):
    found = []
    f.visititems(lambda name, obj: found.append(name) if isinstance(obj, h5py.Dataset)
                 and obj.dtype.kind == "V" else None)
    return found


def leaves(dtype, prefix=(), arrays=True):
    """(path, dtype) of every leaf field; complex numbers and strings are leaves. With `arrays`, an
    array (subarray) member is one leaf per element, its path step the element's index tuple (vzarr
    stores it as nested structs named by index: h5py's x["c"][:, 1, 2] is zarr's x["c"]["1"]["2"]);
    without, the array member is one leaf."""
    if dtype.subdtype is not None and arrays:
        base, shape = dtype.subdtype
        out = []
        for index in np.ndindex(shape):
            out += leaves(base, prefix + (index,), arrays)
        return out
    if dtype.names is None:
        return [(prefix, dtype)]
    out = []
    for name in dtype.names:
        out += leaves(dtype.fields[name][0], prefix + (name,), arrays)
    return out


def field(values, path):
    """The field at `path` of h5py's values: names pick members, index tuples array elements."""
    for step in path:
        values = values[step] if isinstance(step, str) else values[(Ellipsis,) + step]
    return np.asarray(values)


def zarr_field(values, path):
    """The field at `path` of zarr-python's values: an array element is a field per index."""
    for step in path:
        for name in (step,) if isinstance(step, str) else map(str, step):
            values = values[name]
    return np.asarray(values)


def as_text(value, f):
    """h5py's value of a variable-length string or object reference member as vzarr stores it: the
    text, or the path of the referenced object (empty for a null reference)."""
    if isinstance(value, h5py.Reference):
        return f[value].name if value else ""
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def same_fields(ours, theirs, f=None):
    if ours.shape != theirs.shape:
        raise AssertionError(f"shape {ours.shape} != h5py {theirs.shape}")
    if theirs.dtype.names is None:
        if theirs.dtype.kind == "S" and ours.dtype.kind in "OUT":
            # xarray decodes fixed-length strings (`_Encoding`, as libnetcdf reads them as strings):
            # compared as the bytes they encode, in h5py's width.
            ours = np.array([str(x).encode("utf-8") for x in ours.ravel()], dtype=theirs.dtype).reshape(ours.shape)
        # Numbers in either byte order (an array datatype's base) compare in native order.
        native = theirs.dtype.newbyteorder("=")
        if ours.dtype.itemsize != theirs.dtype.itemsize or ours.astype(native).tobytes() != theirs.astype(
                native).tobytes():
            raise AssertionError(f"raw bytes differ: {ours!r} vs h5py {theirs!r}")
        return f"{theirs.shape} {theirs.dtype}"
    expected = sorted(theirs.dtype.names, key=lambda n: theirs.dtype.fields[n][1])
    if list(ours.dtype.names) != expected:
        raise AssertionError(f"fields {ours.dtype.names} != h5py's in offset order {expected}")
    for path, dtype in leaves(theirs.dtype):
        a, b = zarr_field(ours, path), field(theirs, path)
        if dtype.kind == "O":
            # A variable-length string or object reference member: vzarr's UTF-32 text.
            texts = [as_text(v, f) for v in b.ravel()]
            if [str(x) for x in a.ravel()] != texts or a.dtype.kind != "U":
                raise AssertionError(f"field {'.'.join(path)}: {a!r} vs h5py {texts!r}")
            continue
        native = dtype.newbyteorder("=")
        if a.astype(native).tobytes() != b.astype(native).tobytes():
            raise AssertionError(f"field {'.'.join(path)}: {a!r} vs h5py {b!r}")
    return f"{theirs.shape} {len(leaves(theirs.dtype))} leaf fields"


def same_attribute(ours, theirs, what):
    if theirs.dtype.names is None:
        return
    values = theirs.reshape(-1)
    ours = ours if isinstance(ours, list) else [ours]
    if len(ours) != values.size:
        raise AssertionError(f"{what}: {len(ours)} values, h5py {values.size}")
    for mine, value in zip(ours, values):
        for path, dtype in leaves(theirs.dtype, arrays=False):
            got = mine
            for name in path:
                got = got[name]
            expected = field(value, path)
            if dtype.kind == "S":
                expected = expected.tobytes().split(b"\0")[0].decode()
            elif dtype.kind == "c":
                expected = {"r": float(expected.real), "i": float(expected.imag)}
            else:
                expected = expected.tolist()
            if got != expected:
                raise AssertionError(f"{what}: field {'.'.join(path)}: {got!r} vs h5py {expected!r}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--refs", required=True)
    parser.add_argument("source")
    args = parser.parse_args()
    print(f"h5py {h5py.version.version}, zarr {zarr.__version__}, xarray {xr.__version__}")
    refs = json.load(open(args.refs))["refs"]
    fs = fsspec.filesystem("reference", fo=args.refs, asynchronous=True)
    store = FsspecStore(fs, read_only=True, path="")
    group = zarr.open_group(store, mode="r", zarr_format=3)
    results = Results()
    with h5py.File(args.source, "r") as f:
        names = [n for n in record_datasets(f) if f"{n}/zarr.json" in refs]
        for name in names:
            ds = f[name]
            results.check(f"{name} zarr-python", lambda ds=ds, name=name: same_fields(group[name][...], ds[()], f))
        parents = sorted({n.rpartition("/")[0] for n in names})
        for parent in parents:
            def through_xarray(parent=parent):
                ds = xr.open_zarr(store, group=parent or None, zarr_format=3, consolidated=False)
                checked = []
                for name in names:
                    if name.rpartition("/")[0] == parent:
                        same_fields(ds[name.rpartition("/")[2]].values, f[name][()], f)
                        checked.append(name)
                return ", ".join(checked)
            results.check(f"/{parent} xarray", through_xarray)

        def attributes():
            compared = 0
            objects = [("", f)]
            f.visititems(lambda name, obj: objects.append((name, obj)))
            for name, obj in objects:
                key = f"{name}/zarr.json" if name else "zarr.json"
                if key not in refs:
                    continue
                stored = json.loads(refs[key]).get("attributes", {})
                for attr, value in obj.attrs.items():
                    value = np.asarray(value)
                    # Dimension-scale bookkeeping (compounds of references), never user attributes.
                    if value.dtype.names is None or attr in ("REFERENCE_LIST", "DIMENSION_LIST"):
                        continue
                    if attr not in stored:
                        raise AssertionError(f"{name or '/'}:{attr}: missing from the store")
                    same_attribute(stored[attr], value, f"{name or '/'}:{attr}")
                    compared += 1
            return f"{compared} compound attributes"

        results.check("compound attributes", attributes)
    sys.exit(0 if results.summary() else 1)


if __name__ == "__main__":
    main()
