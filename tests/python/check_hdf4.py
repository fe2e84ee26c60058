"""vzarr's HDF4 scan against pyhdf (libhdf4), through xarray and zarr-python.

    check_hdf4.py --refs REFS.json --concat DIM SOURCE.hdf [SOURCE.hdf ...]
    check_hdf4.py --refs REFS.json SOURCE.hdf

REFS.json is vzarr's kerchunk export of the SOURCE files combined along the new dimension DIM (one
file per index, in the order given). xarray opens the references; for every data set pyhdf lists:
  1. its dimensions in xarray are DIM then the HDF-EOS2 names (`YDim`, `XDim`) or the SD names;
  2. the values xarray reads (raw: no mask, no scale) equal pyhdf's `get()` of each file, bit for bit.
Without --concat, REFS.json is the export of one file: zarr-python reads every array the references
hold (those of vgroups' groups too) and its values equal pyhdf's (data sets vzarr left out are absent
from the references); xarray opens vgroups' groups as a data tree.
Prints one line per check and a closing "N passed, M failed" line; exits 1 when any check failed.
"""

import argparse
import os
import sys

import fsspec
import numpy as np
import xarray as xr
import zarr
from pyhdf.error import HDF4Error
from pyhdf.SD import SD, SDC
from zarr.storage import FsspecStore

from results import Results


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--refs", required=True)
    parser.add_argument("--concat")
    parser.add_argument("sources", nargs="+")
    args = parser.parse_args()
    # libhdf4 finds external files next to the sources, as vzarr does (it reads HDFEXTDIR once).
    os.environ["HDFEXTDIR"] = ":".join(dict.fromkeys(os.path.dirname(os.path.abspath(p)) for p in args.sources))
    print(f"zarr {zarr.__version__}, xarray {xr.__version__}")
    zarr.config.set({"array.rectilinear_chunks": True})
    fs = fsspec.filesystem("reference", fo=args.refs, asynchronous=True)
    store = FsspecStore(fs, read_only=True, path="")
    if args.concat is None:
        sys.exit(0 if check_one(store, args.sources[0]) else 1)
    ds = xr.open_zarr(store, consolidated=False, zarr_format=3, mask_and_scale=False, decode_times=False)
    results = Results()
    files = [SD(path, SDC.READ) for path in args.sources]
    for name in files[0].datasets():
        sds = files[0].select(name)
        if sds.iscoordvar():
            continue

        def dims(name=name):
            got = ds[name].dims
            if got[0] != args.concat or len(got) != len(sds.dimensions()) + 1:
                raise AssertionError(f"dimensions {got}")
            return f"{got}"

        def values(name=name):
            ours = ds[name].values
            theirs = np.stack([f.select(name).get() for f in files])
            if ours.shape != theirs.shape or ours.astype(theirs.dtype).tobytes() != theirs.tobytes():
                raise AssertionError(f"values differ: {ours!r} vs pyhdf {theirs!r}")
            return f"{theirs.shape} {theirs.dtype}"

        results.check(f"{name} dimensions", dims)
        results.check(f"{name} values", values)
    sys.exit(0 if results.summary() else 1)


def check_one(store, source):
    """Every array of the references against pyhdf's read of the same data set."""
    group = zarr.open_group(store, mode="r", zarr_format=3)
    results = Results()
    sd = SD(source, SDC.READ)
    names = set(sd.datasets())
    # Arrays of vgroups' groups too (named by their data set: pyhdf selects data sets by name).
    members = [(path, node) for path, node in group.members(max_depth=None) if isinstance(node, zarr.Array)]
    for path, array in members:
        name = path.rsplit("/", 1)[-1]
        if name not in names:
            continue  # coordinates vzarr derives (HDF-EOS2 grids)

        def values(name=name, array=array):
            try:
                theirs = sd.select(name).get()
            except HDF4Error as e:
                if "cannot currently deal" in str(e):  # little-endian number types
                    return "not compared: pyhdf cannot read its number type"
                raise
            ours = np.asarray(array[...])
            if theirs.dtype.kind == "S" or ours.dtype.kind == "S":
                ours, theirs = ours.view(np.uint8), np.asarray(theirs).view(np.uint8)
            if ours.shape != theirs.shape or ours.astype(theirs.dtype).tobytes() != theirs.tobytes():
                raise AssertionError(f"values differ: {ours!r} vs pyhdf {theirs!r}")
            return f"{theirs.shape} {theirs.dtype}"

        results.check(f"{source}:{path} values", values)
    grouped = [path for path, _ in members if "/" in path and path.rsplit("/", 1)[-1] in names]
    if grouped:
        results.check(f"{source}: xarray's data tree holds the vgroups' data sets", lambda: datatree(store, sd, grouped))
    return results.summary()


def datatree(store, sd, paths):
    """xarray opens the groups as a data tree; each grouped data set reads as pyhdf reads it."""
    tree = xr.open_datatree(store, engine="zarr", consolidated=False, zarr_format=3, mask_and_scale=False)
    for path in paths:
        group, name = path.rsplit("/", 1)
        ours, theirs = tree[group].ds[name].values, sd.select(name).get()
        if ours.shape != theirs.shape or ours.astype(theirs.dtype).tobytes() != theirs.tobytes():
            raise AssertionError(f"{path}: values differ: {ours!r} vs pyhdf {theirs!r}")
    return f"{len(paths)} arrays in {len(list(tree.subtree))} nodes"


if __name__ == "__main__":
    main()
