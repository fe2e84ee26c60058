"""A pytest plugin that runs VirtualiZarr's own tests (shipped in its wheel) with vzarr's parser in
place of VirtualiZarr's `HDFParser`.

    PYTHONPATH=tests/python/virtualizarr_suite pytest -p conftest <virtualizarr>/tests/test_xarray.py ...

(loaded as the module `conftest`, as VirtualiZarr's repository-level conftest.py is: its tests import
codec constants `from conftest`.)
(`./dev test` runs it; tests/python/virtualizarr_suite/run.sh names the modules.) What it provides:

- `virtualizarr.parsers.HDFParser` is `vzarr.virtualizarr.Parser` before any test module imports it
  (set `VZARR_SUITE_PARSER=virtualizarr` to keep VirtualiZarr's own, the baseline the counts are
  measured against);
- the fixtures of VirtualiZarr's repository-level conftest.py, which the wheel does not ship, written
  here from what the tests ask of them;
- offline stand-ins for `xarray.tutorial` (the tests' `air_temperature` and `ROMS_example` are
  downloaded otherwise): datasets of the same variables, shapes, types, encodings and attributes,
  with generated values;
- tests marked `network` (remote files) or `minio` (a docker container) are skipped, as VirtualiZarr's
  conftest skips them without `--run-network-tests` / `--run-minio-tests`;
- the tests where vzarr deliberately differs from HDFParser (`EXPECTED_DIFFERENCES`) and those of
  what vzarr's parser does not do yet (`NOT_YET`), each with the reason (docs/how-to/virtualizarr.md lists
  them), are strict xfails: a test that starts passing fails the run until its entry goes.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Optional

import numpy as np
import pytest
import virtualizarr.parsers
import xarray as xr
from obspec_utils.registry import ObjectStoreRegistry
from obstore.store import LocalStore

try:  # the numcodecs names of imagecodecs' codecs (lzf, lz4h5, bz2), as VirtualiZarr's CI has them
    import imagecodecs.numcodecs

    imagecodecs.numcodecs.register_codecs()
except ImportError:
    pass

USE_VZARR = os.environ.get("VZARR_SUITE_PARSER", "vzarr") != "virtualizarr"
if USE_VZARR:
    import vzarr.virtualizarr

    virtualizarr.parsers.HDFParser = vzarr.virtualizarr.Parser  # type: ignore[misc]

#: Codecs VirtualiZarr's tests import from its repository-level conftest.
ARRAYBYTES_CODEC = {"name": "bytes", "configuration": {"endian": "little"}}
ZLIB_CODEC = {"name": "numcodecs.zlib", "configuration": {"level": 1}}

#: Tests that pass with HDFParser and fail with vzarr's parser on purpose: test id suffix -> reason.
EXPECTED_DIFFERENCES = {
    "test_hdf.py::TestObjectReferences::test_off_by_default": (
        "vzarr stores object references as the paths of their targets by default; HDFParser refuses "
        "them without links_and_references=True"
    ),
    "test_hdf.py::TestReferenceAttributes::test_unchanged_by_default": (
        "vzarr stores an object-reference attribute as its target's path by default; HDFParser keeps "
        "the h5py.Reference"
    ),
    "test_hdf.py::TestDatasetDims::test_multiple_dimension_scales": (
        "vzarr takes the first of several dimension scales attached to a dimension; HDFParser refuses"
    ),
    "test_hdf.py::TestCompoundObjectFields::test_reference_fields_need_the_flag": (
        "vzarr stores a compound's object-reference members as the paths of their targets by default; "
        "HDFParser refuses them without links_and_references=True"
    ),
    "test_hdf.py::TestDatasetToManifestArray::test_unlimited_dimension_compressed_chunks_not_trimmed": (
        "vzarr shrinks a compressed oversized chunk too (decoded, cropped and inlined: an exact copy), "
        "so VirtualiZarr can concatenate it; HDFParser keeps the chunk of 512"
    ),
    "test_hdf.py::TestDatasetToManifestArray::test_unlimited_dimension_compressed_chunks_warn_unless_loaded": (
        "vzarr's shrunk chunk concatenates, so there is no oversized chunk to warn about"
    ),
}

#: Tests that pass with HDFParser and do not pass with vzarr's parser yet: what is missing. Strict
#: xfails, so that the day one passes the entry must go (docs/how-to/virtualizarr.md lists them too).
NOT_YET: dict[str, str] = {}


def _listed(nodeid: str, table: dict[str, str]) -> str | None:
    """The reason `table` gives for the test `nodeid` (parameters ignored), if it lists it."""
    base = nodeid.split("[")[0]
    return next((reason for suffix, reason in table.items() if base.endswith(suffix)), None)


def pytest_collection_modifyitems(config, items):
    skip_network = pytest.mark.skip(reason="needs the network (VirtualiZarr's --run-network-tests)")
    skip_minio = pytest.mark.skip(reason="needs docker and MinIO (VirtualiZarr's --run-minio-tests)")
    for item in items:
        if "network" in item.keywords:
            item.add_marker(skip_network)
        elif "minio" in item.keywords:
            item.add_marker(skip_minio)
        elif USE_VZARR and (reason := _listed(item.nodeid, EXPECTED_DIFFERENCES)):
            item.add_marker(pytest.mark.xfail(reason=f"vzarr differs on purpose: {reason}", strict=True))
        elif USE_VZARR and (reason := _listed(item.nodeid, NOT_YET)):
            item.add_marker(pytest.mark.xfail(reason=f"not in vzarr yet: {reason}", strict=True))


# ---- offline stand-ins for xarray.tutorial ----------------------------------------------------


def _air_temperature() -> xr.Dataset:
    """The variables, shapes, types, encodings and attributes of xarray's `air_temperature` (NCEP
    reanalysis, 4x daily 2013-2014 over North America), with generated values."""
    time = np.datetime64("2013-01-01T00") + np.arange(2920) * np.timedelta64(6, "h")
    lat = np.arange(75.0, 14.9, -2.5, dtype="f4")
    lon = np.arange(200.0, 330.1, 2.5, dtype="f4")
    rng = np.random.default_rng(2013)
    values = (230 + 70 * rng.random((time.size, lat.size, lon.size))).round(2)
    air = xr.Variable(("time", "lat", "lon"), values.astype("f4"))
    air.attrs = {
        "long_name": "4xDaily Air temperature at sigma level 995",
        "units": "degK",
        "precision": np.int16(2),
        "GRIB_id": np.int16(11),
        "GRIB_name": "TMP",
        "var_desc": "Air temperature",
        "dataset": "NMC Reanalysis",
        "level_desc": "Surface",
        "statistic": "Individual Obs",
        "parent_stat": "Other",
        "actual_range": np.array([185.16, 322.1], dtype="f4"),
    }
    air.encoding = {"dtype": "int16", "scale_factor": 0.01, "_FillValue": None}
    ds = xr.Dataset(
        {"air": air},
        coords={
            "lat": ("lat", lat, {"standard_name": "latitude", "long_name": "Latitude", "units": "degrees_north", "axis": "Y"}),
            "lon": ("lon", lon, {"standard_name": "longitude", "long_name": "Longitude", "units": "degrees_east", "axis": "X"}),
            "time": ("time", time, {"standard_name": "time", "long_name": "Time"}),
        },
        attrs={
            "Conventions": "COARDS",
            "title": "4x daily NMC reanalysis (1948)",
            "description": "Data is from NMC initialized reanalysis\n(4x/day).  These are the 0.9950 sigma level values.",
            "platform": "Model",
            "references": "http://www.esrl.noaa.gov/psd/data/gridded/data.ncep.reanalysis.html",
        },
    )
    ds["time"].encoding = {"units": "hours since 1800-01-01", "calendar": "standard", "dtype": "float32"}
    for name in ("lat", "lon"):
        ds[name].encoding = {"_FillValue": None}
    return ds


def _roms_example() -> xr.Dataset:
    """The coordinates of xarray's `ROMS_example` (a ROMS ocean model output): dimension coordinates
    `ocean_time` and `s_rho`, 2-D `lon_rho`, `lat_rho`, `h`, the 1-D `Cs_r` and the scalars `hc`
    and `Vtransform`, with generated values."""
    eta, xi, s = 8, 9, 5
    rng = np.random.default_rng(4)
    lon, lat = np.meshgrid(np.linspace(-93, -88, xi), np.linspace(27, 31, eta))
    coords = {
        "ocean_time": ("ocean_time", np.array(["2001-08-01T00", "2001-08-02T00"], dtype="datetime64[ns]")),
        "s_rho": ("s_rho", np.linspace(-0.9, -0.1, s), {"long_name": "S-coordinate at RHO-points"}),
        "lon_rho": (("eta_rho", "xi_rho"), lon, {"long_name": "longitude of RHO-points", "units": "degree_east"}),
        "lat_rho": (("eta_rho", "xi_rho"), lat, {"long_name": "latitude of RHO-points", "units": "degree_north"}),
        "h": (("eta_rho", "xi_rho"), 5 + 50 * rng.random((eta, xi)), {"long_name": "bathymetry at RHO-points"}),
        "Cs_r": ("s_rho", np.linspace(-0.8, -0.01, s), {"long_name": "S-coordinate stretching curves at RHO-points"}),
        "hc": ((), 20.0, {"long_name": "S-coordinate parameter, critical depth"}),
        "Vtransform": ((), np.int32(2), {"long_name": "vertical terrain-following transformation equation"}),
    }
    data = {
        "zeta": (("ocean_time", "eta_rho", "xi_rho"), rng.random((2, eta, xi)).astype("f4"), {"units": "meter"}),
        "salt": (("ocean_time", "s_rho", "eta_rho", "xi_rho"), 30 + rng.random((2, s, eta, xi)).astype("f4"), {}),
    }
    return xr.Dataset(data, coords=coords, attrs={"title": "ROMS example (vzarr's offline stand-in)"})


_TUTORIAL = {"air_temperature": _air_temperature, "ROMS_example": _roms_example}


def _tutorial_file(name: str, cache: Path) -> Path:
    path = cache / f"{name}.nc"
    if not path.exists():
        if name not in _TUTORIAL:
            raise ValueError(f"vzarr_suite: no offline stand-in for xarray.tutorial dataset {name!r}")
        _TUTORIAL[name]().to_netcdf(path, format="NETCDF4")
    return path


@pytest.fixture(autouse=True)
def offline_tutorial(monkeypatch, tmp_path_factory):
    """`xarray.tutorial.open_dataset` / `load_dataset` open a generated stand-in file."""
    cache = tmp_path_factory.getbasetemp() / "tutorial"
    cache.mkdir(exist_ok=True)

    def open_dataset(name, cache_dir=None, *, engine=None, **kwargs):
        return xr.open_dataset(_tutorial_file(name, cache), engine=engine, **kwargs)

    def load_dataset(*args, **kwargs):
        with open_dataset(*args, **kwargs) as ds:
            return ds.load()

    monkeypatch.setattr(xr.tutorial, "open_dataset", open_dataset)
    monkeypatch.setattr(xr.tutorial, "load_dataset", load_dataset)


# ---- the fixtures of VirtualiZarr's repository-level conftest.py ------------------------------


@pytest.fixture
def local_registry() -> ObjectStoreRegistry:
    return ObjectStoreRegistry({"file://": LocalStore()})


@pytest.fixture
def empty_netcdf4_file(tmp_path: Path) -> str:
    path = tmp_path / "empty.nc"
    xr.Dataset().to_netcdf(path, format="NETCDF4")
    return str(path)


@pytest.fixture
def netcdf4_file(tmp_path: Path) -> str:
    path = tmp_path / "air.nc"
    with xr.tutorial.open_dataset("air_temperature") as ds:
        ds.to_netcdf(path, format="NETCDF4")
    return str(path)


@pytest.fixture
def netcdf3_file(tmp_path: Path) -> Callable[[xr.Dataset], str]:
    """Writes a dataset as a NetCDF-3 file and returns its path."""

    def write(ds: xr.Dataset) -> str:
        path = tmp_path / "file.nc"
        ds.to_netcdf(path, format="NETCDF3_CLASSIC", engine="netcdf4")
        return str(path)

    return write


@pytest.fixture
def netcdf4_file_with_data_in_multiple_groups(tmp_path: Path) -> str:
    path = tmp_path / "test.nc"
    xr.DataArray([1, 2, 3], name="foo").to_dataset().to_netcdf(path)
    xr.DataArray([4, 5], name="bar").to_dataset().to_netcdf(path, group="subgroup", mode="a")
    return str(path)


@pytest.fixture
def netcdf4_file_with_data_in_sibling_groups(tmp_path: Path) -> str:
    path = tmp_path / "test.nc"
    xr.DataArray([1, 2, 3], name="foo", dims=["x"]).to_dataset().to_netcdf(path, group="subgroup1")
    bar = xr.DataArray([4, 5], name="bar", dims=["x"], coords={"x": [0, 1]})
    bar.to_dataset().to_netcdf(path, group="subgroup2", mode="a")
    return str(path)


def _split_files(tmp_path: Path, parts: list[dict], encoding) -> tuple[str, ...]:
    paths = []
    with xr.tutorial.open_dataset("air_temperature") as ds:
        for i, selection in enumerate(parts, start=1):
            path = tmp_path / f"air{i}.nc"
            ds.isel(**selection).to_netcdf(path, encoding=encoding)
            paths.append(str(path))
    return tuple(paths)


@pytest.fixture
def netcdf4_files_factory(tmp_path: Path) -> Callable[..., tuple[str, ...]]:
    def create(encoding: Optional[Mapping[str, Mapping[str, Any]]] = None) -> tuple[str, ...]:
        return _split_files(tmp_path, [{"time": slice(None, 1460)}, {"time": slice(1460, None)}], encoding)

    return create


@pytest.fixture
def netcdf4_files_factory_2d(tmp_path: Path) -> Callable[..., tuple[str, ...]]:
    def create(encoding: Optional[Mapping[str, Mapping[str, Any]]] = None) -> tuple[str, ...]:
        halves = [slice(None, 1460), slice(1460, None)]
        lats = [slice(None, 10), slice(10, 20)]
        parts = [{"time": t, "lat": lat} for lat in lats for t in halves]
        return _split_files(tmp_path, parts, encoding)

    return create


@pytest.fixture
def netcdf4_file_with_2d_coords(tmp_path: Path) -> str:
    path = tmp_path / "ROMS_example.nc"
    with xr.tutorial.open_dataset("ROMS_example") as ds:
        ds.to_netcdf(path, format="NETCDF4")
    return str(path)


@pytest.fixture
def netcdf4_virtual_dataset(netcdf4_file, local_registry):
    from virtualizarr import open_virtual_dataset

    with open_virtual_dataset(
        netcdf4_file, registry=local_registry, parser=virtualizarr.parsers.HDFParser(), loadable_variables=[]
    ) as ds:
        yield ds


@pytest.fixture
def hdf5_groups_file(tmp_path: Path) -> str:
    path = tmp_path / "air.nc"
    with xr.tutorial.open_dataset("air_temperature") as ds:
        ds.to_netcdf(path, format="NETCDF4", group="test/group")
    return str(path)


@pytest.fixture
def hdf5_empty(tmp_path: Path) -> str:
    import h5py

    path = tmp_path / "empty.nc"
    with h5py.File(path, "w") as f:
        f.create_dataset("empty", shape=(), dtype="float32").attrs["empty"] = "true"
    return str(path)


@pytest.fixture
def hdf5_scalar(tmp_path: Path) -> str:
    import h5py

    path = tmp_path / "scalar.nc"
    with h5py.File(path, "w") as f:
        f.create_dataset("scalar", data=0.1, dtype="float32").attrs["scalar"] = "true"
    return str(path)


@pytest.fixture
def simple_netcdf4(tmp_path: Path) -> str:
    path = tmp_path / "simple.nc"
    data = np.arange(12, dtype="int32").reshape(3, 4)
    xr.Dataset({"foo": (("x", "y"), data)}).to_netcdf(path)
    return str(path)


@pytest.fixture
def array_v3_metadata():
    from virtualizarr.manifests.utils import create_v3_array_metadata

    def create(
        shape: tuple = (5, 5),
        chunks: tuple = (5, 5),
        data_type: np.dtype = np.dtype("int32"),
        codecs: list[dict] | None = None,
        fill_value: int | float | None = None,
        attributes: dict | None = None,
        dimension_names: Iterable[str] | None = None,
    ):
        return create_v3_array_metadata(
            shape=shape,
            chunk_shape=chunks,
            data_type=data_type,
            codecs=codecs or [{"name": "bytes", "configuration": {"endian": "little"}}],
            fill_value=fill_value or 0,
            attributes=attributes,
            dimension_names=dimension_names,
        )

    return create


@pytest.fixture
def manifest_array(array_v3_metadata):
    import itertools

    from virtualizarr.manifests import ChunkManifest, ManifestArray

    def create(shape: tuple = (5, 2), chunks: tuple = (5, 2), codecs: list[dict] | None = None, dimension_names=None):
        codecs = codecs or [ARRAYBYTES_CODEC, ZLIB_CODEC]
        metadata = array_v3_metadata(shape=shape, chunks=chunks, codecs=codecs, dimension_names=dimension_names)
        grid = [-(-s // c) for s, c in zip(shape, chunks)]
        entries = {}
        for index in itertools.product(*[range(n) for n in grid]) if grid else [(0,)]:
            key = ".".join(map(str, index))
            entries[key] = {"path": f"/foo.{key}.nc", "offset": sum(index) * 10, "length": sum(index) + 5}
        return ManifestArray(chunkmanifest=ChunkManifest(entries), metadata=metadata)

    return create
