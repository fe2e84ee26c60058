"""Reads through xarray at vzarr's own speed (issue 50): what a read costs a chunk through
`engine="vzarr"`, with and without dask, each with its baseline measured in the same run. Run with
`./dev bench-python` (release wheel), or `python benches/xarray_reads.py` where vzarr is installed.

Generates an sst archive as the daily OISST files are: 365 daily NetCDF-4 files of
`sst(time, lat, lon)` int16 (scale_factor and add_offset float64, so xarray decodes it to float64),
zlib-compressed in chunks of 1 x 30 x 30 (288 a day, 105,120 in all), along an unlimited `time`.
Prints, for the store `vzarr.scan` writes of it:

1. the read without dask, `xr.open_dataset(store, engine="vzarr")["sst"].values`: the baseline;
2. `chunks="auto"` (a few large dask chunks): its time against the read without dask
   (target <= 1.3x);
3. `chunks={}` (dask chunks = the store's grid: a task a chunk) on dask's threaded scheduler: the
   time a chunk, dask's scheduling included (target <= 0.15 ms);
4. the same on a `dask.distributed.LocalCluster` of 2 worker processes;
5. `xr.open_mfdataset(files, engine="netcdf4")` reading the same values, the way without vzarr.

Every result is compared with the read without dask, and that with netCDF4's.
`VZARR_BENCH_DAYS` sets the number of files (365 by default).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import netCDF4
import numpy as np
import xarray as xr

import vzarr

DAYS = int(os.environ.get("VZARR_BENCH_DAYS", "365"))
NLAT, NLON, EDGE = 360, 720, 30


def make_archive(directory: Path) -> list[str]:
    """The daily files (see the module's docs)."""
    directory.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(7)
    lat = np.linspace(-89.75, 89.75, NLAT)
    base = 1500 + 1300 * np.cos(np.deg2rad(lat))[:, None] * np.ones((1, NLON))
    files = []
    for day in range(DAYS):
        path = directory / f"sst_{day:03d}.nc"
        with netCDF4.Dataset(path, "w") as ds:
            ds.createDimension("time", None)
            ds.createDimension("lat", NLAT)
            ds.createDimension("lon", NLON)
            t = ds.createVariable("time", "f8", ("time",))
            t.units = "days since 2001-01-01"
            t[:] = [day]
            v = ds.createVariable("sst", "i2", ("time", "lat", "lon"), chunksizes=(1, EDGE, EDGE), zlib=True,
                                  fill_value=np.int16(-999))
            v.scale_factor = 0.01
            v.add_offset = 0.0
            v.set_auto_maskandscale(False)
            v[0] = (base + rng.normal(0, 50, (NLAT, NLON))).astype("i2")
        files.append(str(path))
    return files


def timed(label: str, f: Callable[[], Any]) -> tuple[float, Any]:
    """`f()` and the seconds it took, printed with `label`."""
    start = time.perf_counter()
    result = f()
    seconds = time.perf_counter() - start
    print(f"  {label:<66} {seconds:8.3f} s", flush=True)
    return seconds, result


def check(name: str, values: np.ndarray, expected: np.ndarray) -> None:
    """Stops the run when a read differs from the read without dask."""
    if not np.array_equal(values, expected, equal_nan=True):
        raise SystemExit(f"{name}: the values differ from the read without dask")


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="vzarr-readbench-"))
    os.environ["XDG_CONFIG_HOME"] = str(work / "config")
    try:
        print(f"generating {DAYS} daily files of {NLAT // EDGE * NLON // EDGE} chunks in {work}", flush=True)
        files = make_archive(work / "daily")
        store = work / "sst.vzarr"
        vzarr.scan(files, concat=["time"], output=store)
        chunks = DAYS * (NLAT // EDGE) * (NLON // EDGE)

        open_store = lambda **kw: xr.open_dataset(store, engine="vzarr", **kw)["sst"]  # noqa: E731
        plain, expected = timed('1. open_dataset(store, engine="vzarr")["sst"].values', lambda: open_store().values)
        assert expected.dtype == np.float64

        auto, values = timed('2. chunks="auto"', lambda: open_store(chunks="auto").values)
        check("chunks=auto", values, expected)
        print(f'   chunks="auto" / without dask: {auto / plain:.2f}x (target <= 1.3x)', flush=True)

        grid, values = timed(f"3. chunks={{}} ({chunks} tasks, threaded scheduler)", lambda: open_store(chunks={}).values)
        check("chunks={}", values, expected)
        print(f"   {grid / chunks * 1e3:.3f} ms a chunk (target <= 0.15 ms)", flush=True)

        from distributed import Client, LocalCluster

        with LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None) as cluster:
            with Client(cluster):
                spread, values = timed("4. chunks={} on a LocalCluster of 2 worker processes",
                                       lambda: open_store(chunks={}).values)
        check("LocalCluster", values, expected)
        print(f"   {spread / chunks * 1e3:.3f} ms a chunk", flush=True)

        theirs, reference = timed(
            '5. xr.open_mfdataset(files, engine="netcdf4")["sst"].values',
            lambda: xr.open_mfdataset(files, engine="netcdf4", combine="nested", concat_dim="time",
                                      data_vars="minimal", coords="minimal", compat="override")["sst"].values,
        )
        if not np.array_equal(reference, expected, equal_nan=True):
            raise SystemExit("the store's values differ from netCDF4's read of the files")
        print(f"   open_mfdataset / vzarr without dask: {theirs / plain:.1f}x", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
