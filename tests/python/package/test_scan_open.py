"""vzarr.scan and vzarr.open: every value equals netCDF4's read of the source files."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
import vzarr
import xarray as xr
from conftest import read_concat


def test_scan_report_and_store_shape(sample_files, tmp_path):
    out = tmp_path / "tas.vzarr"
    report = vzarr.scan(sample_files, concat=["time"], output=out)
    assert report.files == 12 and report.arrays >= 2 and report.references > 0
    assert report.trusted == report.source_containers
    store = vzarr.open(out)
    assert "tas" in store and len(store) == report.arrays
    tas = store["tas"]
    expected = read_concat(sample_files, "tas")
    assert tas.shape == expected.shape and tas.dtype == expected.dtype
    assert tas.dims == ("time", "lat", "lon")
    # The rectilinear grid: the files' own chunk edges along time (months), summing to the shape.
    assert tas.chunks[0][:3] == (31, 28, 31) and sum(tas.chunks[0]) == tas.shape[0]
    assert tas.attrs["units"] == "K"
    assert store.attrs["Conventions"] == "CF-1.8"


@pytest.mark.parametrize(
    "key",
    [
        (Ellipsis,),
        (slice(59, 66), slice(None), 10),
        (-1,),
        (slice(None, None, 7), 3),
        (Ellipsis, 5),
        (slice(20, 40, 3), slice(2, 9, 2), slice(None, None, 5)),
        (slice(100, 100),),
        (0, 0, 0),
    ],
)
def test_selections_equal_netcdf4(sample_files, tmp_path, key):
    out = tmp_path / "tas.vzarr"
    vzarr.scan("%s/*.nc" % sample_files[0].rsplit("/", 1)[0], concat="time", output=out)
    tas = vzarr.open(out)["tas"]
    expected = read_concat(sample_files, "tas")
    got = tas[key]
    assert got.shape == expected[key].shape
    np.testing.assert_array_equal(got, expected[key])
    if got.ndim:
        got[...] = 0  # results are ordinary writable arrays


def test_uneven_months_with_partial_chunks(monthly, tmp_path):
    out = tmp_path / "tas.vzarr"
    report = vzarr.scan(monthly, concat=["time"], output=out)
    assert report.owned_chunks > 0, "partial interior chunks are rewritten into the store"
    store = vzarr.open(out)
    np.testing.assert_array_equal(store["tas"][...], read_concat(monthly, "tas"))
    np.testing.assert_array_equal(store["time"][...], read_concat(monthly, "time"))
    # Each month's own 10-day chunks, its last one cut where the month ends.
    days = (31, 28, 31, 30, 31, 30)
    edges = tuple(e for n in days for e in [10] * (n // 10) + ([n % 10] if n % 10 else []))
    assert store["tas"].chunks[0] == edges


def test_kerchunk_and_icechunk_outputs(monthly, tmp_path):
    refs = tmp_path / "tas.json"
    vzarr.scan(monthly, concat=["time"], output=refs, format="kerchunk-json")
    doc = json.loads(refs.read_text())
    assert doc["version"] == 1 and "tas/zarr.json" in doc["refs"]

    repo = tmp_path / "tas.icechunk"
    report = vzarr.scan(monthly, concat=["time"], output=repo, format="icechunk")
    assert report.snapshot and report.branch == "main"
    store = vzarr.open(repo)
    np.testing.assert_array_equal(store["tas"][...], read_concat(monthly, "tas"))
    store = vzarr.open(repo, branch="main")
    np.testing.assert_array_equal(store["tas"][3:25, 1], read_concat(monthly, "tas")[3:25, 1])


def test_kerchunk_parquet_output_opens_in_vzarr_and_xarray(sample_files, tmp_path):
    out = tmp_path / "tas.parq"
    vzarr.scan(sample_files[:1], concat=[], output=out, format="kerchunk-parquet")
    assert (out / ".zmetadata").is_file() and (out / "tas" / "refs.0.parq").is_file()
    np.testing.assert_array_equal(vzarr.open(out)["tas"][...], read_concat(sample_files[:1], "tas"))
    ds = xr.open_dataset(out, engine="vzarr", mask_and_scale=False)
    np.testing.assert_array_equal(ds["tas"].values, read_concat(sample_files[:1], "tas"))


def test_the_vzarr_command_is_installed(sample_files, tmp_path):
    import os
    import subprocess
    import sys

    command = os.path.join(os.path.dirname(sys.executable), "vzarr")  # the wheel's console script
    out = tmp_path / "cli.vzarr"
    run = subprocess.run([command, "scan", *sample_files, "--concat", "time", "-o", str(out)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    info = subprocess.run([command, "info", str(out), "--json"], capture_output=True, text=True)
    assert info.returncode == 0, info.stderr
    assert json.loads(info.stdout)["sources"] == 12
    verify = subprocess.run([command, "verify", str(out)], capture_output=True, text=True)
    assert verify.returncode == 1
    lines = verify.stderr.strip().splitlines()
    assert len(lines) == 1 and "verify" in lines[0] and "libnetcdf" in lines[0], verify.stderr


def test_append_and_merge(monthly, tmp_path):
    import subprocess
    import sys

    out = tmp_path / "tas.vzarr"
    vzarr.scan(monthly[:3], concat=["time"], output=out)
    report = vzarr.append(out, monthly[3:])
    assert report.files == 3 and report.sources == 6
    np.testing.assert_array_equal(vzarr.open(out)["tas"][...], read_concat(monthly, "tas"))
    with pytest.raises(vzarr.ScanError, match="already in the store"):
        vzarr.append(out, monthly[:1])

    repo = tmp_path / "tas.icechunk"
    vzarr.scan(monthly[:2], concat=["time"], output=repo, format="icechunk")
    appended = vzarr.append(repo, monthly[2:])
    assert appended.snapshot and appended.branch == "main"
    np.testing.assert_array_equal(vzarr.open(repo)["tas"][...], read_concat(monthly, "tas"))

    # Parts of a sharded scan (two job-array tasks), merged from Python.
    command = os.path.join(os.path.dirname(sys.executable), "vzarr")
    parts = tmp_path / "parts"
    for shard in ("0/2", "1/2"):
        run = subprocess.run(
            [command, "scan", *monthly, "--concat", "time", "--shard", shard, "-o", f"{parts}/"],
            capture_output=True,
            text=True,
        )
        assert run.returncode == 0, run.stderr
    merged = tmp_path / "merged.vzarr"
    vzarr.merge(f"{parts}/*.vzpart", concat=["time"], output=merged)
    np.testing.assert_array_equal(vzarr.open(merged)["tas"][...], read_concat(monthly, "tas"))
    with pytest.raises(vzarr.ScanError, match="scanned along"):
        vzarr.merge(f"{parts}/*.vzpart", concat=["lat"], output=tmp_path / "bad.vzarr")


def test_progress_counts_files_on_standard_error(monthly, tmp_path, capfd):
    vzarr.scan(monthly, concat=["time"], output=tmp_path / "quiet.vzarr")
    assert "scanned" not in capfd.readouterr().err
    vzarr.scan(monthly, concat=["time"], output=tmp_path / "loud.vzarr", progress=True)
    err = capfd.readouterr().err
    assert f"scanned {len(monthly)} files" in err, err
