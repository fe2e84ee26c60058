"""vzarr.compact: a store's monthly chunks folded into 90-day chunks read as netCDF4 reads the files."""

from __future__ import annotations

import numpy as np
import pytest
import vzarr
import zarr
from conftest import read_concat


def test_compact_folds_and_reads_as_the_files(sample_files, tmp_path):
    out = tmp_path / "tas.vzarr"
    vzarr.scan(sample_files, concat=["time"], output=out)
    plan = vzarr.compact(out, dim="time", target=90, dry_run=True)
    assert not plan.written and vzarr.open(out)["tas"].chunks[0][:3] == (31, 28, 31)
    report = vzarr.compact(out, dim="time", target=90)
    assert report.written
    tas = next(a for a in report.arrays if a.path == "tas")
    # The last file's chunk (December) stays, so that vzarr.append can continue the store.
    assert tas.after == [90, 90, 90, 64, 31] and tas.chunks_written > 0
    store = vzarr.open(out)
    assert store["tas"].chunks[0] == (90, 90, 90, 64, 31)
    for name in ("tas", "time"):
        np.testing.assert_array_equal(store[name][...], read_concat(sample_files, name))
    assert not vzarr.compact(out, dim="time", target=90).written, "nothing left to fold"


def test_bad_targets_are_value_errors(sample_files, tmp_path):
    out = tmp_path / "tas.vzarr"
    vzarr.scan(sample_files, concat=["time"], output=out)
    for dim, target in (("time", 0), ("time", 10**6), ("depth", 3)):
        with pytest.raises(ValueError):
            vzarr.compact(out, dim=dim, target=target)


def test_materialize_regular_copy_reads_as_the_files(sample_files, tmp_path):
    out = tmp_path / "tas.vzarr"
    vzarr.scan(sample_files, concat=["time"], output=out)
    copy = tmp_path / "tas.zarr"
    report = vzarr.materialize(out, copy, chunks={"time": 90}, max_memory=1 << 20)
    assert report["chunks"] > 0
    group = zarr.open_group(copy, mode="r")
    assert group["tas"].chunks[0] == 90
    np.testing.assert_array_equal(group["tas"][...], read_concat(sample_files, "tas"))
