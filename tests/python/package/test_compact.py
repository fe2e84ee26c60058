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
    # Every month folds, December too (vzarr.append continues after a folded last chunk).
    assert tas.after == [90, 90, 90, 90, 5] and tas.chunks_written > 0
    store = vzarr.open(out)
    assert store["tas"].chunks[0] == (90, 90, 90, 90, 5)
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


def test_materialize_sharded_recoded_icechunk_and_update(sample_files, tmp_path):
    icechunk = pytest.importorskip("icechunk")
    out = tmp_path / "tas.vzarr"
    vzarr.scan(sample_files[:10], concat=["time"], output=out)
    # Shards of two 30-day chunks, re-encoded with zstd.
    sharded = tmp_path / "sharded.zarr"
    vzarr.materialize(out, sharded, chunks={"time": 30}, shards={"time": 60}, codec="zstd:5")
    tas = zarr.open_group(sharded, mode="r")["tas"]
    assert tas.chunks[0] == 30 and tas.shards[0] == 60
    np.testing.assert_array_equal(tas[...], read_concat(sample_files[:10], "tas"))
    with pytest.raises(ValueError):
        vzarr.materialize(out, tmp_path / "bad.zarr", chunks={"time": 30}, codec="blosc")
    # An Icechunk repository, then brought up to date after an append: one more commit.
    repo = tmp_path / "tas.icechunk"
    report = vzarr.materialize(out, repo, chunks={"time": 30}, format="icechunk", message="copy")
    assert report["committed"]
    vzarr.append(out, sample_files[10:])
    report = vzarr.materialize(out, repo, format="icechunk", update=True)
    assert report["committed"] and report["chunks"] > 0
    repository = icechunk.Repository.open(icechunk.local_filesystem_storage(str(repo)))
    assert len(list(repository.ancestry(branch="main"))) == 3
    group = zarr.open_group(repository.readonly_session("main").store, mode="r")
    for name in ("tas", "time"):
        np.testing.assert_array_equal(group[name][...], read_concat(sample_files, name))
    assert not vzarr.materialize(out, repo, format="icechunk", update=True)["committed"]
