"""Fixtures of the Python package's tests (run by `./dev test` against the installed wheel).

Every value read through vzarr is compared with netCDF4 (libnetcdf) or h5py reading the source
files. The user's trust list is a temporary one (XDG_CONFIG_HOME), so tests never touch the real one.
"""

from __future__ import annotations

import glob
import os
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import netCDF4
import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[3]
SAMPLE = REPO / "fixtures" / "sample"


@pytest.fixture(autouse=True)
def private_trust_list(tmp_path_factory, monkeypatch):
    config = tmp_path_factory.mktemp("config")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))
    monkeypatch.delenv("VZARR_ALLOW_SOURCES", raising=False)
    return config


@pytest.fixture(scope="session")
def sample_files() -> list[str]:
    files = sorted(glob.glob(str(SAMPLE / "*.nc")))
    assert len(files) == 12
    return files


def read_concat(files: list[str], name: str) -> np.ndarray:
    """`name` of every file concatenated along its first dimension, as libnetcdf reads it (masked
    values filled with the variable's fill value, as vzarr and Zarr return them)."""
    parts = []
    for f in files:
        with netCDF4.Dataset(f) as ds:
            var = ds[name]
            var.set_auto_maskandscale(False)
            parts.append(np.asarray(var[:]))
    return np.concatenate(parts)


def write_monthly(directory: Path, days=(31, 28, 31, 30, 31, 30), chunk=10, nlat=5, nlon=7, compress=True):
    """Monthly files of daily `tas` chunked by `chunk` days: months end inside chunks (uneven files,
    partial last chunks), the case other tools get wrong."""
    directory.mkdir(parents=True, exist_ok=True)
    files, start = [], 0
    rng = np.random.default_rng(7)
    for m, n in enumerate(days):
        path = directory / f"tas_2001-{m + 1:02d}.nc"
        with netCDF4.Dataset(path, "w") as ds:
            ds.createDimension("time", None)
            ds.createDimension("lat", nlat)
            ds.createDimension("lon", nlon)
            t = ds.createVariable("time", "f8", ("time",))
            t.units = "days since 2001-01-01"
            t.calendar = "standard"
            t[:] = np.arange(start, start + n)
            lat = ds.createVariable("lat", "f4", ("lat",))
            lat[:] = np.linspace(-60, 60, nlat)
            lon = ds.createVariable("lon", "f4", ("lon",))
            lon[:] = np.linspace(0, 300, nlon)
            v = ds.createVariable(
                "tas", "f4", ("time", "lat", "lon"), chunksizes=(chunk, nlat, nlon), zlib=compress, fill_value=-999.0
            )
            v.units = "K"
            data = (250 + 30 * rng.random((n, nlat, nlon))).astype("f4")
            data[0, 0, 0] = -999.0  # a masked value in every month
            v[:] = data
            ds.title = "uneven monthly archive"
        files.append(str(path))
        start += n
    return files


@pytest.fixture
def monthly(tmp_path) -> list[str]:
    return write_monthly(tmp_path / "monthly")


@pytest.fixture
def s3_endpoint():
    """A moto S3 server on 127.0.0.1 (the one `./dev test` installs in target/pyenv) with a bucket `out`."""
    python = REPO / "target" / "pyenv" / "bin" / "python"
    if not (python.parent / "moto_server").exists():
        pytest.fail(f"moto is missing from {python.parent}: `./dev test` installs it (tests/python/setup.sh)")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    # moto with its writes atomic, as the Rust tests run it (tests/python/moto_atomic.py says why).
    atomic = REPO / "tests" / "python" / "moto_atomic.py"
    process = subprocess.Popen([str(python), str(atomic), "-H", "127.0.0.1", "-p", str(port)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    endpoint = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(urllib.request.Request(f"{endpoint}/out", method="PUT"), timeout=1)
                break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail("moto_server did not start within 30 s")
                time.sleep(0.2)
        yield endpoint
    finally:
        process.terminate()
        process.wait(timeout=30)
