"""Errors arrive as vzarr's exception classes with one-line messages that name the problem."""

from __future__ import annotations

import os
import shutil

import numpy as np
import pytest
import vzarr


def test_missing_store(tmp_path):
    with pytest.raises(vzarr.NotFound, match="no vzarr store"):
        vzarr.open(tmp_path / "missing.vzarr")
    assert issubclass(vzarr.NotFound, vzarr.Error)


def test_unauthorized_source(monthly, tmp_path, monkeypatch):
    out = tmp_path / "tas.vzarr"
    vzarr.scan(monthly, concat=["time"], output=out)
    # A reader whose trust list is empty may not read the sources ...
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "other-user"))
    tas = vzarr.open(out)["tas"]
    with pytest.raises(vzarr.NotAuthorized, match="not authorized"):
        tas[0]
    # ... until they allow the container.
    container = os.path.dirname(monthly[0]) + "/"
    assert vzarr.open(out, allow_sources=[container])["tas"][0].shape == tas.shape[1:]


def test_changed_source(monthly, tmp_path):
    out = tmp_path / "tas.vzarr"
    vzarr.scan(monthly, concat=["time"], output=out)
    with open(monthly[1], "ab") as f:
        f.write(b"\0" * 16)
    tas = vzarr.open(out)["tas"]
    with pytest.raises(vzarr.SourceChanged, match="changed since the scan"):
        tas[40]
    assert vzarr.open(out, check_sources=False)["tas"][5].shape == tas.shape[1:]


def test_bad_selections(sample_files, tmp_path):
    out = tmp_path / "tas.vzarr"
    vzarr.scan(sample_files, concat=["time"], output=out)
    tas = vzarr.open(out)["tas"]
    with pytest.raises(IndexError, match="out of bounds"):
        tas[365]
    with pytest.raises(IndexError, match="too many indices"):
        tas[0, 0, 0, 0]
    with pytest.raises(IndexError, match="positive step"):
        tas[::-1]
    with pytest.raises(TypeError, match="integers, slices and Ellipsis"):
        tas[[1, 2]]
    with pytest.raises(KeyError):
        vzarr.open(out)["nope"]


def test_scan_errors_name_the_file(monthly, tmp_path):
    broken = tmp_path / "broken.nc"
    broken.write_bytes(b"CDF\x01" + b"\xff" * 60)
    with pytest.raises(vzarr.ScanError, match="broken.nc"):
        vzarr.scan([*monthly, str(broken)], concat=["time"], output=tmp_path / "x.vzarr")
    assert not (tmp_path / "x.vzarr").exists(), "nothing is written"
    with pytest.raises(vzarr.NotFound, match="no files match"):
        vzarr.scan(str(tmp_path / "none-*.nc"), concat=["time"], output=tmp_path / "y.vzarr")
    vzarr.scan(monthly, concat=["time"], output=tmp_path / "z.vzarr")
    with pytest.raises(vzarr.AlreadyExists, match="already exists"):
        vzarr.scan(monthly, concat=["time"], output=tmp_path / "z.vzarr")
    vzarr.scan(monthly, concat=["time"], output=tmp_path / "z.vzarr", overwrite=True)
    with pytest.raises(ValueError, match="format"):
        vzarr.scan(monthly, concat=["time"], output=tmp_path / "w", format="zip")
