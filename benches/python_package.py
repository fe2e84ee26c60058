"""Benchmarks of the Python package, each with a baseline measured in the same run (issue: the
Python package). Run with `./dev bench-python` (or `target/pyenv/bin/python benches/python_package.py`
after installing the wheel).

Generates 365 daily NetCDF-4 files of `tas(24, 120, 160)` float32, chunks (1, 40, 40): 288 chunks a
file, zlib-compressed, along an unlimited `time` (HDF5's chunk of 512 for its one value). Prints per step the time of each side and the ratio:

1. the parser alone: `vzarr.virtualizarr.Parser()(url, registry)` vs VirtualiZarr's
   `HDFParser()(url, registry)` over every file (sequential, as open_virtual_mfdataset without
   `parallel` calls them; the best of three passes each), and both in a pool of 8 threads;
2. `open_virtual_mfdataset` end to end with each parser (VirtualiZarr's own assembly of the virtual
   datasets is common to both and bounds this ratio), and `vzarr.virtualizarr.open_virtual_mfdataset`
   (scan and combine in Rust) against VirtualiZarr's with HDFParser, whose manifests it must equal;
3. `xr.open_dataset(store, engine="vzarr").load()` vs `xr.open_mfdataset(files, engine="h5netcdf").load()`;
4. `vzarr.scan` from Python vs the `vzarr scan` command on the same files.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import netCDF4
import numpy as np
import xarray as xr
from obspec_utils.registry import ObjectStoreRegistry
from obstore.store import LocalStore
from virtualizarr import open_virtual_mfdataset
from virtualizarr.parsers import HDFParser

import vzarr
import vzarr.virtualizarr

DAYS = int(os.environ.get("VZARR_BENCH_DAYS", "365"))
#: The steps to run (`VZARR_BENCH_STEPS=1,3`), all by default.
STEPS = {int(s) for s in os.environ.get("VZARR_BENCH_STEPS", "1,2,3,4").split(",")}


def make_archive(directory: Path) -> list[str]:
    directory.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(1)
    base = (250 + 20 * np.sin(np.linspace(0, 6, 120 * 160))).reshape(120, 160).astype("f4")
    files = []
    for day in range(DAYS):
        path = directory / f"tas_{day:03d}.nc"
        with netCDF4.Dataset(path, "w") as ds:
            ds.createDimension("time", None)  # unlimited, as libnetcdf and xarray write archives
            ds.createDimension("hour", 24)
            ds.createDimension("lat", 120)
            ds.createDimension("lon", 160)
            t = ds.createVariable("time", "f8", ("time",))
            t.units = "days since 2001-01-01"
            t[:] = [day]
            v = ds.createVariable("tas", "f4", ("time", "hour", "lat", "lon"), chunksizes=(1, 1, 40, 40), zlib=True)
            v[0] = base + rng.normal(0, 1, (24, 120, 160)).astype("f4")
        files.append(str(path))
    return files


def timed(label: str, f):
    start = time.perf_counter()
    result = f()
    seconds = time.perf_counter() - start
    print(f"  {label:<58} {seconds:8.3f} s", flush=True)
    return seconds, result


def ratio(name: str, baseline: float, ours: float, target: float | None = None) -> None:
    goal = f" (target >= {target:g}x)" if target else ""
    print(f"{name}: {baseline / ours:.1f}x faster{goal}\n", flush=True)


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="vzarr-pybench-"))
    os.environ["XDG_CONFIG_HOME"] = str(work / "config")
    try:
        print(f"generating {DAYS} daily files of 288 chunks in {work}", flush=True)
        files = make_archive(work / "daily")
        urls = ["file://" + f for f in files]
        registry = ObjectStoreRegistry({"file://": LocalStore()})

        if 1 in STEPS:
            parser_alone(urls, registry)
        if 2 in STEPS:
            virtual_mfdataset(urls, registry)
        if 3 in STEPS:
            xarray_load(files, work)
        if 4 in STEPS:
            python_scan(files, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


#: Passes of step 1, each parser in turn: the best pass of each is compared (as `timeit` does), so
#: that a pass slowed by something else on the machine does not decide the ratio.
PASSES = 3


def parser_alone(urls, registry) -> None:
    print(f"1. the parser alone, every file ({PASSES} passes, each parser in turn; the best of each)")
    theirs, ours = [], []
    for _ in range(PASSES):
        theirs.append(timed("HDFParser()(url, registry)", lambda: [HDFParser()(u, registry) for u in urls])[0])
        ours.append(timed("vzarr.virtualizarr.Parser()(url, registry)", lambda: [vzarr.virtualizarr.Parser()(u, registry) for u in urls])[0])
    ratio("parser", min(theirs), min(ours), 20)
    with ThreadPoolExecutor(8) as pool:
        theirs, _ = timed("HDFParser, 8 threads", lambda: list(pool.map(lambda u: HDFParser()(u, registry), urls)))
        ours, _ = timed("vzarr Parser, 8 threads", lambda: list(pool.map(lambda u: vzarr.virtualizarr.Parser()(u, registry), urls)))
    ratio("parser in 8 threads", theirs, ours)



def virtual_mfdataset(urls, registry) -> None:
    print("2. open_virtual_mfdataset end to end")
    kwargs = dict(combine="nested", concat_dim="time", data_vars="minimal", coords="minimal", compat="override")
    theirs, reference = timed(
        "VirtualiZarr's, with HDFParser", lambda: open_virtual_mfdataset(urls, registry=registry, parser=HDFParser(), **kwargs)
    )
    ours, _ = timed(
        "VirtualiZarr's, with vzarr's Parser",
        lambda: open_virtual_mfdataset(urls, registry=registry, parser=vzarr.virtualizarr.Parser(), **kwargs),
    )
    ratio("VirtualiZarr's open_virtual_mfdataset, vzarr's Parser vs HDFParser", theirs, ours)
    rust, combined = timed(
        "vzarr.virtualizarr.open_virtual_mfdataset (scan + combine in Rust)",
        lambda: vzarr.virtualizarr.open_virtual_mfdataset(urls, registry=registry, **kwargs),
    )
    ratio("vzarr.virtualizarr.open_virtual_mfdataset vs VirtualiZarr's with HDFParser", theirs, rust, 10)
    a, b = combined["tas"].data.manifest, reference["tas"].data.manifest
    same = all(np.array_equal(getattr(a, f), getattr(b, f)) for f in ("_paths", "_offsets", "_lengths"))
    # `time`, a dimension coordinate, is loaded by both (VirtualiZarr's default loadable variables).
    same_time = np.array_equal(combined["time"].values, reference["time"].values)
    print(f"  tas manifests {'equal' if same else 'DIFFER'}, time values {'equal' if same_time else 'DIFFER'}\n")
    if not (same and same_time):
        raise SystemExit("vzarr's combined virtual dataset differs from VirtualiZarr's")



def xarray_load(files, work) -> None:
    print("3. loading the whole variable through xarray")
    store = work / "tas.vzarr"
    vzarr.scan(files, concat=["time"], output=store)
    theirs, reference = timed(
        'xr.open_mfdataset(files, engine="h5netcdf").load()',
        lambda: xr.open_mfdataset(files, engine="h5netcdf", combine="nested", concat_dim="time",
                                  data_vars="minimal", coords="minimal", compat="override").load(),
    )
    ours, loaded = timed('xr.open_dataset(store, engine="vzarr").load()', lambda: xr.open_dataset(store, engine="vzarr").load())
    assert np.array_equal(loaded.tas.values, reference.tas.values), "the values differ"
    ratio("xarray load", theirs, ours, 3)



def python_scan(files, work) -> None:
    print("4. vzarr.scan from Python vs the vzarr command")
    command = os.path.join(os.path.dirname(sys.executable), "vzarr")
    cli, _ = timed("vzarr scan (command)", lambda: subprocess.run(
        [command, "scan", *files, "--concat", "time", "-o", str(work / "cli.vzarr")], check=True, capture_output=True))
    py, _ = timed("vzarr.scan (Python)", lambda: vzarr.scan(files, concat=["time"], output=work / "py.vzarr"))
    print(f"vzarr.scan / vzarr scan: {py / cli:.2f} (target <= 1.10)\n")


if __name__ == "__main__":
    main()
