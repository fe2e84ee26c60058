"""The everyday archive as the tools archives are made with write it.

24 monthly files of daily ``tas(time, lat, lon)`` with ``time`` UNLIMITED, its ``time_bnds`` and
CF attributes, first written by netCDF4-python with libnetcdf's default chunking (the 1-D ``time``
in one chunk of 512 holding 28-31 values, ``tas`` in chunks of one day), then rewritten file by
file by nccopy, NCO's ncks, CDO and xarray + h5netcdf, each with the options its users give it.
Every producer's files hold the same values; what differs is how they are laid out (chunk shapes,
filters, the last chunk of each file partly filled, attributes the tool adds).
"""

from __future__ import annotations

import calendar
import shutil
import subprocess
from pathlib import Path

import netCDF4
import numpy as np

NLAT, NLON = 18, 36
MONTHS = 24
FILL = np.float32(1.0e20)

# Each producer: how one file of libnetcdf's is rewritten (the source path, the destination).
REWRITES = {
    "nccopy": lambda src, dst: ["nccopy", "-k", "nc4", "-d", "4", "-s", "-c", "time/8,lat/9,lon/18", src, dst],
    "nco": lambda src, dst: ["ncks", "-O", "-4", "-L", "4", "--cnk_dmn", "time,10", src, dst],
    "cdo": lambda src, dst: ["cdo", "-s", "-f", "nc4", "-z", "zip_4", "copy", src, dst],
}
PRODUCERS = ("netcdf4", *REWRITES, "h5netcdf")


def write_libnetcdf(directory: Path) -> list[str]:
    """The archive as netCDF4-python writes it with libnetcdf's defaults."""
    directory.mkdir(parents=True, exist_ok=True)
    files, day = [], 0
    for i in range(MONTHS):
        year, month = 2000 + i // 12, i % 12 + 1
        days = calendar.monthrange(year, month)[1]
        path = directory / f"tas_day_{year}{month:02d}.nc"
        with netCDF4.Dataset(path, "w") as ds:
            ds.createDimension("time", None)
            ds.createDimension("bnds", 2)
            ds.createDimension("lat", NLAT)
            ds.createDimension("lon", NLON)
            time = ds.createVariable("time", "f8", ("time",))
            time.setncatts({"units": "days since 2000-01-01", "calendar": "standard", "bounds": "time_bnds",
                            "axis": "T", "standard_name": "time"})
            bounds = ds.createVariable("time_bnds", "f8", ("time", "bnds"))
            lat = ds.createVariable("lat", "f8", ("lat",))
            lat.setncatts({"units": "degrees_north", "axis": "Y", "standard_name": "latitude"})
            lon = ds.createVariable("lon", "f8", ("lon",))
            lon.setncatts({"units": "degrees_east", "axis": "X", "standard_name": "longitude"})
            tas = ds.createVariable("tas", "f4", ("time", "lat", "lon"), zlib=True, complevel=4, fill_value=FILL)
            tas.setncatts({"units": "K", "standard_name": "air_temperature", "cell_methods": "time: mean"})
            lat[:] = np.linspace(-85.0, 85.0, NLAT)
            lon[:] = np.arange(NLON) * 10.0
            time[:] = day + np.arange(days) + 0.5
            bounds[:] = np.stack([day + np.arange(days), day + np.arange(days) + 1.0], axis=1)
            values = (250.0 + 50.0 * np.random.default_rng(i).random((days, NLAT, NLON))).astype("f4")
            values[0, 0, :3] = FILL  # missing values in every month
            tas[:] = values
            ds.setncatts({"variant_label": "r1i1p1f1", "frequency": "day", "Conventions": "CF-1.7"})
        files.append(str(path))
        day += days
    return files


def write_h5netcdf(sources: list[str], directory: Path) -> list[str]:
    """Each file opened with xarray and written with ``engine="h5netcdf"``, time kept unlimited."""
    import xarray as xr

    directory.mkdir(parents=True, exist_ok=True)
    files = []
    for src in sources:
        dst = directory / Path(src).name
        with xr.open_dataset(src, engine="netcdf4", decode_times=False) as ds:
            ds.load().to_netcdf(dst, engine="h5netcdf", unlimited_dims=["time"])
        files.append(str(dst))
    return files


def write_archive(producer: str, root: Path) -> list[str]:
    """The archive as `producer` writes it, under ``root/producer``."""
    sources = write_libnetcdf(root / "netcdf4") if not (root / "netcdf4").exists() else sorted(
        str(p) for p in (root / "netcdf4").glob("*.nc"))
    if producer == "netcdf4":
        return sources
    if producer == "h5netcdf":
        return write_h5netcdf(sources, root / producer)
    directory = root / producer
    directory.mkdir(parents=True, exist_ok=True)
    tool = REWRITES[producer]("", "")[0]
    if shutil.which(tool) is None:
        raise RuntimeError(f"{tool} is not installed: `./dev setup` installs it")
    files = []
    for src in sources:
        dst = str(directory / Path(src).name)
        subprocess.run(REWRITES[producer](src, dst), check=True, capture_output=True)
        files.append(dst)
    return files
