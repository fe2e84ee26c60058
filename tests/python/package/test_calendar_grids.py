"""Calendar chunk grids (issue 54): `vzarr.compact(store, dim="time", target="month")` (and seasons,
years, days, durations) on daily and 6-hourly files in every CF calendar. The edges each chunk must
hold come from cftime (netCDF4's `num2date`) decoding the files' time values, grouped by period;
every value reads as netCDF4 reads the files, and xarray's dask chunks are the months.
"""

from __future__ import annotations

import cftime
import netCDF4
import numpy as np
import pytest
import vzarr
import xarray as xr
from conftest import read_concat

CALENDARS = ["standard", "proleptic_gregorian", "julian", "noleap", "all_leap", "360_day"]


def write_steps(directory, calendar, *, files=4, steps=100, step_hours=24.0, start_hour=12.0, gap=None):
    """`files` files of `steps` time steps each, `tas(time, lat, lon)` chunked by 7 steps along an
    unlimited `time` (libnetcdf-written, as netCDF4-python writes them), times in `calendar` from
    1999-12-01 plus `start_hour`; `gap` (first, count) leaves steps out of the first file."""
    directory.mkdir(parents=True, exist_ok=True)
    paths, offset = [], 0
    rng = np.random.default_rng(3)
    for k in range(files):
        path = directory / f"tas_{calendar}_{k}.nc"
        hours = start_hour + step_hours * (offset + np.arange(steps))
        if gap is not None and k == 0:
            first, count = gap
            hours = np.delete(hours, np.s_[first : first + count])
        with netCDF4.Dataset(path, "w") as ds:
            ds.createDimension("time", None)
            ds.createDimension("lat", 3)
            ds.createDimension("lon", 4)
            t = ds.createVariable("time", "f8", ("time",))
            t.units = "hours since 1999-12-01 00:00:00"
            t.calendar = calendar
            t[:] = hours
            tas = ds.createVariable("tas", "f4", ("time", "lat", "lon"), chunksizes=(7, 3, 4), zlib=True)
            tas[:] = rng.standard_normal((len(hours), 3, 4)).astype("f4")
        paths.append(str(path))
        offset += steps
    return paths


def expected_edges(files, key):
    """Run lengths of `key(date)` over the files' dates, as cftime decodes them."""
    dates = []
    for f in files:
        with netCDF4.Dataset(f) as ds:
            t = ds["time"]
            dates.extend(cftime.num2date(t[:], t.units, calendar=t.calendar))
    return run_lengths([key(d) for d in dates])


def run_lengths(keys):
    """The lengths of the runs of equal consecutive `keys`."""
    edges, last = [], object()
    for k in keys:
        if edges and k == last:
            edges[-1] += 1
        else:
            edges.append(1)
        last = k
    return edges


def season(d):
    return (d.year + 1, 0) if d.month == 12 else (d.year, d.month // 3)


@pytest.mark.parametrize("calendar", CALENDARS)
def test_month_chunks_in_every_calendar(tmp_path, calendar):
    files = write_steps(tmp_path / "in", calendar)
    out = tmp_path / "tas.vzarr"
    vzarr.scan(files, concat=["time"], output=out)
    report = vzarr.compact(out, dim="time", target="month")
    assert report.written
    months = expected_edges(files, lambda d: (d.year, d.month))
    store = vzarr.open(out)
    for name in ("tas", "time"):
        assert list(store[name].chunks[0]) == months, name
        np.testing.assert_array_equal(store[name][...], read_concat(files, name))
    # What xarray users see: dask chunks that are the months, values as the files decode.
    with xr.open_dataset(out, engine="vzarr", chunks={}) as ds, xr.open_mfdataset(files) as src:
        assert list(ds["tas"].chunks[0]) == months
        np.testing.assert_array_equal(ds["tas"].values, src["tas"].values)
        assert list(ds.indexes["time"]) == list(src.indexes["time"])


@pytest.mark.parametrize(
    "unit,key",
    [
        ("season", season),
        ("year", lambda d: d.year),
        ("day", lambda d: (d.year, d.month, d.day)),
        ("12h", lambda d: (d.year, d.month, d.day, d.hour // 12)),
    ],
)
def test_seasons_years_and_days_of_six_hourly_steps(tmp_path, unit, key):
    # 6-hourly steps at 03:00, 09:00, 15:00, 21:00: each belongs to its own day.
    files = write_steps(tmp_path / "in", "noleap", files=3, steps=500, step_hours=6.0, start_hour=3.0)
    out = tmp_path / "tas.vzarr"
    vzarr.scan(files, concat=["time"], output=out)
    vzarr.compact(out, dim="time", target=unit)
    store = vzarr.open(out)
    assert list(store["tas"].chunks[0]) == expected_edges(files, key)
    np.testing.assert_array_equal(store["tas"][...], read_concat(files, "tas"))


def test_durations_and_gaps(tmp_path):
    # Ten days missing from December 1999: that month is the days it has.
    files = write_steps(tmp_path / "in", "standard", gap=(5, 10))
    out = tmp_path / "tas.vzarr"
    vzarr.scan(files, concat=["time"], output=out)
    vzarr.compact(out, dim="time", target="month")
    months = expected_edges(files, lambda d: (d.year, d.month))
    assert months[0] == 21
    assert list(vzarr.open(out)["tas"].chunks[0]) == months
    # 10-day spans from midnight of the first step's day.
    spans = tmp_path / "spans.vzarr"
    vzarr.scan(files, concat=["time"], output=spans)
    vzarr.compact(spans, dim="time", target="10d")
    with netCDF4.Dataset(files[0]) as ds:
        first = ds["time"][0] // 24 * 24
    hours = read_concat(files, "time")
    assert list(vzarr.open(spans)["tas"].chunks[0]) == run_lengths(((hours - first) // 240).tolist())
    np.testing.assert_array_equal(vzarr.open(spans)["tas"][...], read_concat(files, "tas"))


def test_a_dimension_without_a_cf_time_coordinate_is_a_value_error(tmp_path):
    files = write_steps(tmp_path / "in", "standard", files=1)
    out = tmp_path / "tas.vzarr"
    vzarr.scan(files, concat=["time"], output=out)
    with pytest.raises(ValueError, match="time dimension lat has no CF time coordinate"):
        vzarr.compact(out, dim="lat", target="month")
    with pytest.raises(ValueError, match="a chunk length is a number"):
        vzarr.compact(out, dim="time", target="fortnight")


def test_append_keeps_month_chunks(tmp_path):
    files = write_steps(tmp_path / "in", "noleap", files=4, steps=40)
    out = tmp_path / "tas.vzarr"
    vzarr.scan(files[:2], concat=["time"], output=out)
    vzarr.compact(out, dim="time", target="month")
    vzarr.append(out, files[2:], chunks={"time": "month"})
    store = vzarr.open(out)
    assert list(store["tas"].chunks[0]) == expected_edges(files, lambda d: (d.year, d.month))
    np.testing.assert_array_equal(store["tas"][...], read_concat(files, "tas"))
    with pytest.raises(ValueError):
        vzarr.append(out, files[3:], chunks={"time": "fortnight"})


@pytest.mark.parametrize("calendar", ["standard", "noleap", "360_day"])
def test_month_chunked_and_month_sharded_copies_open_in_zarr_python_and_xarray(tmp_path, calendar):
    import zarr

    files = write_steps(tmp_path / "in", calendar)
    store = tmp_path / "tas.vzarr"
    vzarr.scan(files, concat=["time"], output=store)
    months = expected_edges(files, lambda d: (d.year, d.month))
    chunked, sharded = tmp_path / "months.zarr", tmp_path / "shards.zarr"
    vzarr.materialize(store, chunked, chunks={"time": "month", "lat": 3})
    vzarr.materialize(store, sharded, chunks={"time": 1, "lat": 3, "lon": 2}, shards={"time": "month"})
    with zarr.config.set({"array.rectilinear_chunks": True}):
        for out in (chunked, sharded):
            group = zarr.open_group(out, mode="r", zarr_format=3)
            for name in ("tas", "time"):
                array = group[name]
                np.testing.assert_array_equal(array[...], read_concat(files, name), err_msg=f"{out.name} {name}")
                grid = array.metadata.chunk_grid.to_dict()
                assert grid["name"] == "rectilinear", grid
            # One month, read alone: the steps cftime puts in it.
            start = sum(months[:3])
            np.testing.assert_array_equal(
                group["tas"][start : start + months[3]], read_concat(files, "tas")[start : start + months[3]]
            )
        # What xarray users see: the files' decoded values and times.
        for out in (chunked, sharded):
            with xr.open_zarr(out, zarr_format=3, consolidated=False) as ds, xr.open_mfdataset(files) as src:
                np.testing.assert_array_equal(ds["tas"].values, src["tas"].values)
                assert list(ds.indexes["time"]) == list(src.indexes["time"])
    with pytest.raises(ValueError, match="a chunk length is a number"):
        vzarr.materialize(store, tmp_path / "bad.zarr", chunks={"time": "fortnight"})


def test_append_reads_back_to_the_start_of_a_long_period(tmp_path):
    # Hourly steps kept in whole years: the last stored year began more than 4,096 steps (the first
    # window an append reads the time coordinate in) before the store's end.
    files = write_steps(tmp_path / "in", "noleap", files=4, steps=3000, step_hours=1.0, start_hour=0.5)
    out = tmp_path / "tas.vzarr"
    vzarr.scan(files[:2], concat=["time"], output=out)
    vzarr.compact(out, dim="time", target="year")
    vzarr.append(out, files[2:], chunks={"time": "year"})
    store = vzarr.open(out)
    years = expected_edges(files, lambda d: d.year)
    assert years[0] == 744 and len(years) == 3, years
    assert list(store["tas"].chunks[0]) == years
    assert list(store["time"].chunks[0]) == years
    np.testing.assert_array_equal(store["tas"][...], read_concat(files, "tas"))
