"""vzarr's HDF4 scan against pyhdf (libhdf4), through xarray and zarr-python.

    check_hdf4.py --refs REFS.json --concat DIM SOURCE.hdf [SOURCE.hdf ...]

REFS.json is vzarr's kerchunk export of the SOURCE files combined along the new dimension DIM (one
file per index, in the order given). xarray opens the references; for every data set pyhdf lists:
  1. its dimensions in xarray are DIM then the HDF-EOS2 names (`YDim`, `XDim`) or the SD names;
  2. the values xarray reads (raw: no mask, no scale) equal pyhdf's `get()` of each file, bit for bit.
Prints one line per check and a closing "N passed, M failed" line; exits 1 when any check failed.
"""

import argparse
import sys

import fsspec
import numpy as np
import xarray as xr
import zarr
from pyhdf.SD import SD, SDC
from zarr.storage import FsspecStore

from results import Results


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--refs", required=True)
    parser.add_argument("--concat", required=True)
    parser.add_argument("sources", nargs="+")
    args = parser.parse_args()
    print(f"zarr {zarr.__version__}, xarray {xr.__version__}")
    zarr.config.set({"array.rectilinear_chunks": True})
    fs = fsspec.filesystem("reference", fo=args.refs, asynchronous=True)
    store = FsspecStore(fs, read_only=True, path="")
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


if __name__ == "__main__":
    main()
