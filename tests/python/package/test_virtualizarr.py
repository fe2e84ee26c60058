"""vzarr.virtualizarr.Parser against VirtualiZarr's HDFParser and against netCDF4's reads."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import xarray as xr
from conftest import read_concat
from obspec_utils.registry import ObjectStoreRegistry
from obstore.store import LocalStore
from virtualizarr import open_virtual_dataset, open_virtual_mfdataset
from virtualizarr.parsers import HDFParser

import vzarr
import vzarr.virtualizarr


def registry():
    return ObjectStoreRegistry({"file://": LocalStore()})


def url_of(path: str) -> str:
    return "file://" + path


def test_manifests_equal_hdfparser(monthly, sample_files):
    for path in [*monthly[:2], *sample_files[:2]]:
        url = url_of(path)
        ours = vzarr.virtualizarr.Parser()(url, registry())._group
        theirs = HDFParser()(url, registry())._group
        assert sorted(ours.arrays) == sorted(theirs.arrays), path
        assert ours.metadata.attributes["title"] == theirs.metadata.attributes["title"]
        for name, b in theirs.arrays.items():
            a = ours.arrays[name]
            assert a.metadata.shape == b.metadata.shape and a.metadata.data_type == b.metadata.data_type
            assert a.metadata.fill_value == b.metadata.fill_value or (
                np.isnan(a.metadata.fill_value) and np.isnan(b.metadata.fill_value)
            )
            assert a.metadata.dimension_names == b.metadata.dimension_names, name
            for key in ("units", "long_name", "standard_name", "calendar"):
                assert a.metadata.attributes.get(key) == b.metadata.attributes.get(key), (name, key)
            chunks_a = a.metadata.chunk_grid.chunk_shape
            chunks_b = b.metadata.chunk_grid.chunk_shape
            if chunks_a == chunks_b:
                # Same chunks: the same references and the same codecs.
                assert a.metadata.codecs == b.metadata.codecs, name
                np.testing.assert_array_equal(a.manifest._paths, b.manifest._paths)
                np.testing.assert_array_equal(a.manifest._offsets, b.manifest._offsets)
                np.testing.assert_array_equal(a.manifest._lengths, b.manifest._lengths)
            else:
                # HDFParser shrinks a chunk larger than the whole array to the array (referencing the
                # chunk's first bytes); vzarr keeps the file's chunk. Both must read the file's values.
                assert all(cb == s for cb, s in zip(chunks_b, b.metadata.shape)), name
                assert a.manifest._offsets.ravel()[0] == b.manifest._offsets.ravel()[0], name


def test_open_virtual_dataset_reads_the_files_values(monthly):
    vds = open_virtual_dataset(url_of(monthly[0]), registry=registry(), parser=vzarr.virtualizarr.Parser())
    assert vds["tas"].shape == (31, 5, 7)
    store = vzarr.virtualizarr.Parser()(url_of(monthly[0]), registry())
    ds = xr.open_zarr(store, consolidated=False, zarr_format=3, mask_and_scale=False, decode_times=False)
    np.testing.assert_array_equal(ds["tas"].values, read_concat(monthly[:1], "tas"))
    np.testing.assert_array_equal(ds["time"].values, read_concat(monthly[:1], "time"))


def test_open_virtual_mfdataset_in_a_thread_pool(tmp_path):
    from conftest import write_monthly

    # Months of 30 days chunked by 10: regular grids VirtualiZarr can concatenate.
    files = write_monthly(tmp_path / "even", days=(30, 30, 30, 30), chunk=10)
    kwargs = dict(combine="nested", concat_dim="time", data_vars="minimal", coords="minimal", compat="override")
    with ThreadPoolExecutor(4) as pool:
        vds = open_virtual_mfdataset(
            [url_of(p) for p in files], registry=registry(), parser=vzarr.virtualizarr.Parser(), parallel=pool, **kwargs
        )
        reference = open_virtual_mfdataset(
            [url_of(p) for p in files], registry=registry(), parser=HDFParser(), parallel=pool, **kwargs
        )
    ours, theirs = vds["tas"].data.manifest, reference["tas"].data.manifest
    np.testing.assert_array_equal(ours._paths, theirs._paths)
    np.testing.assert_array_equal(ours._offsets, theirs._offsets)
    np.testing.assert_array_equal(ours._lengths, theirs._lengths)


def test_uneven_months_are_refused_by_virtualizarr_and_combined_by_vzarr(monthly, tmp_path):
    with pytest.raises(ValueError, match="partial chunks"):
        open_virtual_mfdataset(
            [url_of(p) for p in monthly[:2]],
            registry=registry(),
            parser=vzarr.virtualizarr.Parser(),
            combine="nested",
            concat_dim="time",
            data_vars="minimal",
            coords="minimal",
            compat="override",
        )
    out = tmp_path / "uneven.vzarr"
    vzarr.scan(monthly[:2], concat=["time"], output=out)
    np.testing.assert_array_equal(vzarr.open(out)["tas"][...], read_concat(monthly[:2], "tas"))


def test_unsupported_variables_raise_not_implemented(tmp_path):
    import h5py

    path = tmp_path / "opaque.h5"
    with h5py.File(path, "w") as f:
        f["ok"] = np.arange(10, dtype="i4")
        f.create_dataset("vlen", data=np.array([np.arange(3), np.arange(2)], dtype=object), dtype=h5py.vlen_dtype("i4"))
    with pytest.raises(NotImplementedError, match="vlen"):
        vzarr.virtualizarr.Parser()(url_of(str(path)), registry())
    with pytest.warns(UserWarning, match="vlen"):
        store = vzarr.virtualizarr.Parser(skip_unsupported=True)(url_of(str(path)), registry())
    assert list(store._group.arrays) == ["ok"]


def test_parsers_from_eight_threads(monthly, sample_files):
    urls = [url_of(p) for p in [*monthly, *sample_files]] * 2
    expected = {u: sorted(HDFParser()(u, registry())._group.arrays) for u in set(urls)}

    def parse(u):
        return u, sorted(vzarr.virtualizarr.Parser()(u, registry())._group.arrays)

    with ThreadPoolExecutor(8) as pool:
        for u, names in pool.map(parse, urls):
            assert names == expected[u]


def test_parser_keeps_non_finite_attributes_as_netcdf4_reads_them(tmp_path):
    """The parser's `zarr.json` text writes NaN and Infinity attributes as JSON's bare tokens (floats
    for Python), never as vzarr's in-memory markers."""
    import netCDF4

    src = tmp_path / "nan.nc"
    with netCDF4.Dataset(src, "w") as ds:
        ds.createDimension("x", 3)
        t = ds.createVariable("t", "f8", ("x",))
        t.missing_value = np.nan
        t.valid_max = np.inf
        t[:] = [1.0, 2.0, 3.0]
    ours = vzarr.virtualizarr.Parser()(url_of(str(src)), registry())._group.arrays["t"].metadata.attributes
    with netCDF4.Dataset(src) as ds:
        theirs = {k: ds["t"].getncattr(k) for k in ds["t"].ncattrs()}
    assert np.isnan(ours["missing_value"]) and np.isnan(theirs["missing_value"])
    assert ours["valid_max"] == theirs["valid_max"]
