"""The producer matrix: the everyday archive as netCDF4-python (libnetcdf's defaults), nccopy, NCO,
CDO and xarray + h5netcdf write it, through every output vzarr writes, each read by the tool users
read it with and every value compared with netCDF4's read of the files.

What each output is read with:

- native store: xarray's ``engine="vzarr"``;
- kerchunk JSON: fsspec's reference file system and xarray's zarr engine;
- kerchunk Parquet: the same, through fsspec's lazy Parquet references (Zarr v2);
- Icechunk: icechunk-python's session store and xarray's zarr engine;
- DMR++: VirtualiZarr's own ``DMRPPParser``, one sidecar per file (DMR++ describes one file);
- compaction (``vzarr compact --dim time --target 30``), regular copy and sharded copy
  (``vzarr materialize``): zarr-python through xarray's zarr engine, and the chunk edges checked
  against what the files hold (a last chunk judged by the elements it holds, not by its encoded
  extent);
- month-chunked copy (``--chunks time=month``) and month shards of one-day chunks (``--shards
  time=month --chunks time=1``): the same, with zarr-python's rectilinear chunks on, the edges
  checked against the calendar's month lengths.

The reference is netCDF4-python reading each file with masking and scaling off (the stored
values), concatenated along time; xarray's decoded view of the output is also compared with
xarray's decoded view of the files (``open_mfdataset`` with the netCDF4 engine).
"""

from __future__ import annotations

import calendar
import json
from pathlib import Path

import fsspec
import netCDF4
import numpy as np
import pytest
import xarray as xr
import zarr
from conftest import read_concat
from producers import PRODUCERS, write_archive

import vzarr

VARIABLES = ("tas", "time", "time_bnds", "lat", "lon")
OUTPUTS = ("native", "kerchunk-json", "kerchunk-parquet", "icechunk", "dmrpp", "compact", "regular", "sharded",
           "month", "month-sharded")
DAYS = [calendar.monthrange(2000 + i // 12, i % 12 + 1)[1] for i in range(24)]


@pytest.fixture(autouse=True)
def rectilinear_chunks():
    """zarr-python reads rectilinear grids once a user turns them on, as the outputs need."""
    with zarr.config.set({"array.rectilinear_chunks": True}):
        yield


@pytest.fixture(scope="module")
def archives(tmp_path_factory) -> dict[str, list[str]]:
    root = tmp_path_factory.mktemp("producers")
    return {producer: write_archive(producer, root) for producer in PRODUCERS}


def netcdf4_values(files: list[str], name: str) -> np.ndarray:
    """`name` as netCDF4 reads it from the files (stored values): concatenated along time, or the
    first file's for a variable without time."""
    with netCDF4.Dataset(files[0]) as ds:
        along_time = "time" in ds[name].dimensions
    return read_concat(files if along_time else files[:1], name)


def assert_values(ds: xr.Dataset, files: list[str], label: str) -> None:
    for name in VARIABLES:
        assert name in ds.variables, f"{label}: {name} missing"
        np.testing.assert_array_equal(ds[name].values, netcdf4_values(files, name), err_msg=f"{label}: {name}")


def assert_decoded_view(ds: xr.Dataset, files: list[str], label: str) -> None:
    """xarray's decoded view of the output equals its view of the files."""
    with xr.open_mfdataset(files, engine="netcdf4", combine="nested", concat_dim="time",
                           data_vars="minimal", coords="minimal", compat="override") as source:
        for name in VARIABLES:
            xr.testing.assert_equal(ds[name].load(), source[name].load())


def open_raw(mapper_or_store, zarr_format: int) -> xr.Dataset:
    return xr.open_dataset(mapper_or_store, engine="zarr", zarr_format=zarr_format, consolidated=False,
                           mask_and_scale=False, decode_times=False, chunks=None)


def open_decoded(mapper_or_store, zarr_format: int) -> xr.Dataset:
    return xr.open_dataset(mapper_or_store, engine="zarr", zarr_format=zarr_format, consolidated=False,
                           chunks=None)


def time_edges(path: Path, name: str) -> list[int]:
    """The chunk edges along time of array `name` of a Zarr v3 store, as its metadata gives them."""
    meta = json.loads((path / name / "zarr.json").read_text())
    grid = meta["chunk_grid"]
    if grid["name"] == "regular":
        edge = grid["configuration"]["chunk_shape"][0]
        return [edge] * -(-meta["shape"][0] // edge)
    edges = []
    for edge in grid["configuration"]["chunk_shapes"][0]:
        edges.extend([edge[0]] * edge[1] if isinstance(edge, list) else [edge])
    return edges


def held(edges: list[int], length: int) -> list[int]:
    """The elements each chunk holds: its edge, the last one cut at the array's end."""
    out, start = [], 0
    for edge in edges:
        if start >= length:
            break
        out.append(min(edge, length - start))
        start += edge
    return out


@pytest.mark.parametrize("output", OUTPUTS)
@pytest.mark.parametrize("producer", PRODUCERS)
def test_every_producer_through_every_output(archives, tmp_path, producer, output):
    files = archives[producer]
    label = f"{producer} -> {output}"
    store = tmp_path / "tas.vzarr"
    if output in ("native", "compact", "regular", "sharded", "month", "month-sharded"):
        vzarr.scan(files, concat=["time"], output=store)
    if output == "native":
        with xr.open_dataset(store, engine="vzarr", mask_and_scale=False, decode_times=False) as ds:
            assert_values(ds, files, label)
        with xr.open_dataset(store, engine="vzarr") as ds:
            assert_decoded_view(ds, files, label)
    elif output == "kerchunk-json":
        refs = tmp_path / "tas.json"
        vzarr.scan(files, concat=["time"], output=refs, format="kerchunk-json")
        fs = fsspec.filesystem("reference", fo=str(refs), remote_protocol="file")
        zarr_format = 2 if ".zgroup" in json.loads(refs.read_text())["refs"] else 3
        assert_values(open_raw(fs.get_mapper(""), zarr_format), files, label)
        assert_decoded_view(open_decoded(fs.get_mapper(""), zarr_format), files, label)
    elif output == "kerchunk-parquet":
        refs = tmp_path / "tas.parq"
        if producer in ("nco", "nccopy"):
            # NCO and nccopy chunk tas by 10 and 8 days, so months end inside chunks: its grid is
            # rectilinear, which Zarr v2 cannot say, and at 1.9 MB it is over the inline threshold. It is refused by name
            # with the reason; left out on request, the rest of the archive reads as the files.
            with pytest.raises(vzarr.Error, match=r"tas: .*rectilinear.*inline threshold"):
                vzarr.scan(files, concat=["time"], output=refs, format="kerchunk-parquet")
            assert not refs.exists()
            report = vzarr.scan(files, concat=["time"], output=refs, format="kerchunk-parquet",
                                skip_unsupported=True)
            assert len(report.warnings) == 1 and ": tas: " in report.warnings[0], report.warnings
            fs = fsspec.filesystem("reference", fo=str(refs), remote_protocol="file")
            ds = open_raw(fs.get_mapper(""), 2)
            for name in VARIABLES[1:]:
                np.testing.assert_array_equal(ds[name].values, netcdf4_values(files, name), err_msg=f"{label}: {name}")
            assert "tas" not in ds.variables
            # With a threshold that holds it, tas is inlined too, and the whole archive reads as the files.
            vzarr.scan(files, concat=["time"], output=refs, format="kerchunk-parquet", overwrite=True,
                       inline_threshold=4 << 20)
        else:
            vzarr.scan(files, concat=["time"], output=refs, format="kerchunk-parquet")
        fs = fsspec.filesystem("reference", fo=str(refs), remote_protocol="file")
        assert_values(open_raw(fs.get_mapper(""), 2), files, label)
        assert_decoded_view(open_decoded(fs.get_mapper(""), 2), files, label)
    elif output == "icechunk":
        import icechunk  # pinned in the package's test environment: never skipped
        repo = tmp_path / "tas.icechunk"
        vzarr.scan(files, concat=["time"], output=repo, format="icechunk")
        containers = [icechunk.VirtualChunkContainer(f"file://{Path(files[0]).parent}/",
                                                     icechunk.local_filesystem_store(str(Path(files[0]).parent)))]
        config = icechunk.RepositoryConfig.default()
        for c in containers:
            config.set_virtual_chunk_container(c)
        repository = icechunk.Repository.open(
            icechunk.local_filesystem_storage(str(repo)), config=config,
            authorize_virtual_chunk_access=icechunk.containers_credentials({c.url_prefix: None for c in containers}))
        session = repository.readonly_session("main")
        assert_values(open_raw(session.store, 3), files, label)
        assert_decoded_view(open_decoded(session.store, 3), files, label)
    elif output == "dmrpp":
        from obspec_utils.registry import ObjectStoreRegistry
        from obstore.store import LocalStore
        from virtualizarr.parsers import DMRPPParser

        # Beside the files, where DMRPPParser looks for the data (the sidecar's URL without .dmrpp).
        sidecars = Path(files[0]).parent
        vzarr.scan(files, output=sidecars, format="dmrpp", overwrite=True)
        registry = ObjectStoreRegistry({"file://": LocalStore()})
        for f in files:
            sidecar = sidecars / f"{Path(f).name}.dmrpp"
            manifest = DMRPPParser()(f"file://{sidecar}", registry)
            ds = open_raw(manifest, 3)
            assert_values(ds, [f], f"{label} ({Path(f).name})")
    else:
        copy = tmp_path / "tas.zarr"
        if output == "compact":
            vzarr.compact(store, dim="time", target=30)
            copy = store
        elif output == "regular":
            vzarr.materialize(store, copy, chunks={"time": 30})
        elif output == "sharded":
            vzarr.materialize(store, copy, chunks={"time": 10}, shards={"time": 30})
        elif output == "month":
            vzarr.materialize(store, copy, chunks={"time": "month"})
        else:
            vzarr.materialize(store, copy, chunks={"time": 1}, shards={"time": "month"})
        length = sum(DAYS)
        for name in ("tas", "time_bnds"):
            edges = held(time_edges(copy, name), length)
            if output == "sharded":
                shard = json.loads((copy / name / "zarr.json").read_text())["chunk_grid"]
                assert shard["configuration"]["chunk_shape"][0] == 30, label
            elif output.startswith("month"):
                assert edges == DAYS, f"{label}: {name}: {edges}"
            else:
                assert edges == [30] * (length // 30) + [length % 30], f"{label}: {name}: {edges}"
        with zarr.config.set({"array.rectilinear_chunks": True}):
            if output == "compact":
                ds = xr.open_dataset(copy, engine="vzarr", mask_and_scale=False, decode_times=False)
                decoded = xr.open_dataset(copy, engine="vzarr")
            else:
                zarr.open_group(copy, mode="r")  # zarr-python opens the copy itself
                ds, decoded = open_raw(str(copy), 3), open_decoded(str(copy), 3)
            with ds, decoded:
                assert_values(ds, files, label)
                assert_decoded_view(decoded, files, label)
