"""DMR++ sidecars from Python: `vzarr.scan` of a sidecar (and `sidecars="dmrpp"`), and
`vzarr.virtualizarr.DMRPPParser` on `.dmrpp` URLs, against h5py reading the data files."""

from __future__ import annotations

import shutil

import h5py
import pytest
import numpy as np
import xarray as xr
from conftest import REPO
from obspec_utils.registry import ObjectStoreRegistry
from obstore.store import LocalStore
from virtualizarr import open_virtual_dataset

import vzarr
import vzarr.virtualizarr

PAIRS = REPO / "fixtures" / "dmrpp"
# (data file, variable): chunked with shuffle, deflate twice and fletcher32; a fill value with
# unwritten chunks; a fixed-length string array.
CASES = [
    ("dmrpp/SDS_shuf_2def_fle.h5", "IntArray"),
    ("fill_value/FValue_c_b.h5", "chunks_some_fill"),
    ("dmrpp/chunked_twoD.h5", "d_4_chunks"),
]


def copy_pair(tmp_path, name):
    data = PAIRS / name
    shutil.copy(data, tmp_path / data.name)
    shutil.copy(f"{data}.dmrpp", tmp_path / f"{data.name}.dmrpp")
    return tmp_path / data.name


def h5py_values(path, variable):
    with h5py.File(path, "r") as f:
        return f[variable][()]


def test_scan_of_a_sidecar_reads_the_data_files_values(tmp_path):
    for name, variable in CASES:
        data = copy_pair(tmp_path, name)
        store = tmp_path / f"{data.name}.vzarr"
        report = vzarr.scan(f"{data}.dmrpp", output=store)
        assert report.references > 0
        np.testing.assert_array_equal(vzarr.open(store)[variable][...], h5py_values(data, variable), err_msg=name)


def test_sidecars_option_counts_the_sidecars_used(tmp_path):
    data = copy_pair(tmp_path, CASES[0][0])
    report = vzarr.scan(str(data), output=tmp_path / "a.vzarr", sidecars="dmrpp")
    assert report.from_sidecars == 1
    (tmp_path / f"{data.name}.dmrpp").unlink()
    report = vzarr.scan(str(data), output=tmp_path / "b.vzarr", sidecars="dmrpp")
    assert report.from_sidecars == 0


def test_dmrpp_parser_references_the_data_file(tmp_path):
    registry = ObjectStoreRegistry({"file://": LocalStore()})
    for name, variable in CASES:
        data = copy_pair(tmp_path, name)
        store = vzarr.virtualizarr.DMRPPParser()(f"file://{data}.dmrpp", registry)
        array = store._group.arrays[variable]
        paths = {p for p in np.asarray(array.manifest._paths).ravel() if p}
        assert paths == {f"file://{data}"}, name
        vds = open_virtual_dataset(f"file://{data}.dmrpp", registry=registry, parser=vzarr.virtualizarr.DMRPPParser())
        loaded = xr.open_zarr(store, zarr_format=3, consolidated=False, mask_and_scale=False)
        np.testing.assert_array_equal(loaded[variable].values, h5py_values(data, variable), err_msg=name)
        assert variable in vds


def test_scan_writes_sidecars_that_read_as_the_files(tmp_path):
    files = [copy_pair(tmp_path, name) for name, _ in CASES]
    out = tmp_path / "sidecars"
    report = vzarr.scan([str(f) for f in files], output=out, format="dmrpp")
    assert report.files == len(files) and report.references > 0
    for (name, variable), data in zip(CASES, files):
        sidecar = out / f"{data.name}.dmrpp"
        store = tmp_path / f"{data.name}.again.vzarr"
        vzarr.scan(str(sidecar), output=store)
        np.testing.assert_array_equal(vzarr.open(store)[variable][...], h5py_values(data, variable), err_msg=name)
    with pytest.raises(vzarr.AlreadyExists):
        vzarr.scan(str(files[0]), output=out, format="dmrpp")
    assert vzarr.scan(str(files[0]), output=out, format="dmrpp", overwrite=True).files == 1
    with pytest.raises(ValueError, match="concat does not apply"):
        vzarr.scan([str(f) for f in files], concat=["time"], output=out, format="dmrpp")
