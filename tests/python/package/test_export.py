"""vzarr.export: a store written as kerchunk reference JSON and as a kerchunk Parquet reference set;
each read back (vzarr for the JSON's Zarr v3, fsspec + xarray for the Parquet's Zarr v2) equal to
netCDF4's reads of the source files."""

from __future__ import annotations


import fsspec
import numpy as np
import pytest
import vzarr
import xarray as xr
from conftest import REPO, read_concat, write_monthly


def test_export_json_reads_as_the_files(sample_files, tmp_path):
    store = tmp_path / "tas.vzarr"
    vzarr.scan(sample_files, concat=["time"], output=store)
    refs = tmp_path / "tas.json"
    report = vzarr.export(store, refs)
    assert report["references"] > 0 and report["bytes"] == refs.stat().st_size
    exported = vzarr.open(refs)
    assert exported["tas"].chunks[0][:3] == (31, 28, 31)
    for name in ("tas", "time"):
        np.testing.assert_array_equal(exported[name][...], read_concat(sample_files, name))
    with pytest.raises(vzarr.AlreadyExists):
        vzarr.export(store, refs)
    assert vzarr.export(store, refs, overwrite=True)["references"] == report["references"]


def test_export_parquet_reads_as_the_files_through_fsspec(tmp_path):
    # Months of 30 days in chunks of 10: tas is regular; time, chunked by libnetcdf's default for an
    # unlimited dimension, is not, and is inlined (one chunk of its values); with a threshold below its
    # size it is left out.
    files = write_monthly(tmp_path / "even", days=(30, 30, 30), chunk=10)
    store = tmp_path / "tas.vzarr"
    vzarr.scan(files, concat=["time"], output=store)
    out = tmp_path / "tas.parq"
    report = vzarr.export(store, out, format="kerchunk-parquet", record_size=4)
    assert report["left_out"] == [] and report["inline"] >= 1
    assert report["arrays"] == 4 and report["record_files"] == 1 + 1 + 1 + 3  # lat, lon, time; tas: 9 chunks by 4
    fs = fsspec.filesystem("reference", fo=str(out), remote_protocol="file")
    ds = xr.open_dataset(fs.get_mapper(""), engine="zarr", zarr_format=2, consolidated=False,
                         mask_and_scale=False, decode_times=False)
    np.testing.assert_array_equal(ds["tas"].values, read_concat(files, "tas"))
    np.testing.assert_array_equal(ds["lat"].values, read_concat(files[:1], "lat"))
    np.testing.assert_array_equal(ds["time"].values, read_concat(files, "time"))
    left = tmp_path / "left.parq"
    report = vzarr.export(store, left, format="kerchunk-parquet", skip_unsupported=True, inline_threshold=64)
    assert [w["variable"] for w in report["left_out"]] == ["time"]
    assert "rectilinear" in report["left_out"][0]["message"]


def test_export_refuses_bad_arguments_and_what_zarr_v2_cannot_say(sample_files, tmp_path):
    store = tmp_path / "tas.vzarr"
    vzarr.scan(sample_files, concat=["time"], output=store)
    with pytest.raises(ValueError, match="kerchunk-parquet"):
        vzarr.export(store, tmp_path / "x.json", record_size=10)
    with pytest.raises(ValueError, match="format"):
        vzarr.export(store, tmp_path / "x.zip", format="zip")
    with pytest.raises(ValueError, match="at least 1"):
        vzarr.export(store, tmp_path / "x.parq", format="kerchunk-parquet", record_size=0)
    with pytest.raises(vzarr.Error, match="rectilinear.*inline threshold of 1000 bytes"):
        vzarr.export(store, tmp_path / "x.parq", format="kerchunk-parquet", inline_threshold=1000)
    assert not (tmp_path / "x.parq").exists()


def test_export_parquet_to_s3_reads_back_as_the_files(tmp_path, s3_endpoint):
    files = write_monthly(tmp_path / "even", days=(30, 30), chunk=10)
    store = tmp_path / "tas.vzarr"
    vzarr.scan(files, concat=["time"], output=store)
    options = {"endpoint_url": s3_endpoint, "key": "test", "secret": "test", "region": "us-east-1"}
    report = vzarr.export(store, "s3://out/refs/tas.parq", format="kerchunk-parquet", storage_options=options)
    assert report["arrays"] == 4 and report["left_out"] == []  # time inlined
    exported = vzarr.open("s3://out/refs/tas.parq", storage_options=options)
    for name in ("tas", "time"):
        np.testing.assert_array_equal(exported[name][...], read_concat(files, name))
    with pytest.raises(vzarr.AlreadyExists):
        vzarr.export(store, "s3://out/refs/tas.parq", format="kerchunk-parquet", skip_unsupported=True,
                     storage_options=options)
