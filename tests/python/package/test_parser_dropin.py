"""vzarr.virtualizarr as a drop-in for VirtualiZarr: the parser's oversized chunks, external links (followed,
or recorded with links_and_references=True),
booleans and fixed-length bytes, and `open_virtual_mfdataset` on daily files with an unlimited time.
Every value is compared with h5py's or netCDF4's read of the source files."""

from __future__ import annotations

import h5py
import netCDF4
import numpy as np
import pytest
import xarray as xr
import zarr
from conftest import read_concat
from obspec_utils.registry import ObjectStoreRegistry
from obstore.store import LocalStore
from virtualizarr import open_virtual_mfdataset
from virtualizarr.manifests import ManifestArray, ManifestGroup, ManifestStore
from virtualizarr.parsers import HDFParser

import vzarr
import vzarr.virtualizarr


def registry():
    return ObjectStoreRegistry({"file://": LocalStore()})


def url_of(path) -> str:
    return "file://" + str(path)


def parse(path, **kwargs) -> ManifestStore:
    return vzarr.virtualizarr.Parser(**kwargs)(url_of(path), registry())


def write_daily(directory, days=6, compress_time=False, nlat=3, nlon=4):
    """Daily NetCDF-4 files, one time step each along an unlimited `time` (HDF5 chunks of 512 for
    the 1-element `time`, of 1 x nlat x nlon for `tas`), as libnetcdf writes everyday archives."""
    directory.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(11)
    files = []
    for day in range(days):
        path = directory / f"tas_day{day:03d}.nc"
        with netCDF4.Dataset(path, "w") as ds:
            ds.createDimension("time", None)
            ds.createDimension("lat", nlat)
            ds.createDimension("lon", nlon)
            t = ds.createVariable("time", "f8", ("time",), zlib=compress_time)
            t.units = "days since 2001-01-01"
            t[:] = [day]
            lat = ds.createVariable("lat", "f4", ("lat",))
            lat[:] = np.linspace(-30, 30, nlat)
            lon = ds.createVariable("lon", "f4", ("lon",))
            lon[:] = np.linspace(0, 270, nlon)
            v = ds.createVariable("tas", "f4", ("time", "lat", "lon"), zlib=True)
            v[:] = (250 + 30 * rng.random((1, nlat, nlon))).astype("f4")
        files.append(str(path))
    return files


def read_manifest_arrays(vds: xr.Dataset, names) -> dict[str, np.ndarray]:
    """The values of a virtual dataset's ManifestArrays, read by zarr through VirtualiZarr's own
    ManifestStore (as its writers' readers would read them)."""
    arrays = {n: vds[n].data for n in names}
    assert all(isinstance(a, ManifestArray) for a in arrays.values())
    store = ManifestStore(registry=registry(), group=ManifestGroup(arrays=arrays, attributes={}))
    root = zarr.open_group(store, mode="r", zarr_format=3)
    return {n: root[n][...] for n in names}


@pytest.mark.parametrize("compress_time", [False, True], ids=["uncompressed", "compressed"])
def test_oversized_chunks_shrink_to_the_array(tmp_path, compress_time):
    path = write_daily(tmp_path / "d", days=1, compress_time=compress_time)[0]
    time = parse(path)._group.arrays["time"]
    with netCDF4.Dataset(path) as ds:
        assert ds["time"].chunking() == [512]  # the file's oversized chunk
    assert time.metadata.chunks == (1,)
    if compress_time:  # decoded, cropped, inlined: an exact copy
        assert len(time.manifest._inlined) == 1
    else:  # a prefix of the stored chunk, as HDFParser references it
        theirs = HDFParser()(url_of(path), registry())._group.arrays["time"]
        assert time.metadata.chunks == theirs.metadata.chunks
        np.testing.assert_array_equal(time.manifest._offsets, theirs.manifest._offsets)
        np.testing.assert_array_equal(time.manifest._lengths, theirs.manifest._lengths)
    root = zarr.open_group(parse(path), mode="r", zarr_format=3)
    np.testing.assert_array_equal(root["time"][...], read_concat([path], "time"))
    np.testing.assert_array_equal(root["tas"][...], read_concat([path], "tas"))


@pytest.mark.parametrize("compress_time", [False, True], ids=["uncompressed", "compressed"])
def test_virtualizarr_concatenates_daily_files_with_an_unlimited_time(tmp_path, compress_time):
    files = write_daily(tmp_path / "d", compress_time=compress_time)
    vds = open_virtual_mfdataset(
        [url_of(p) for p in files],
        registry=registry(),
        parser=vzarr.virtualizarr.Parser(),
        combine="nested",
        concat_dim="time",
        loadable_variables=[],
        data_vars="minimal",
        coords="minimal",
        compat="override",
    )
    values = read_manifest_arrays(vds, ["time", "tas"])
    np.testing.assert_array_equal(values["time"], read_concat(files, "time"))
    np.testing.assert_array_equal(values["tas"], read_concat(files, "tas"))


@pytest.mark.parametrize("combine", ["nested", "by_coords"])
def test_vzarr_open_virtual_mfdataset_equals_netcdf4(tmp_path, combine):
    files = write_daily(tmp_path / "d")
    kwargs = {"concat_dim": "time"} if combine == "nested" else {}
    vds = vzarr.virtualizarr.open_virtual_mfdataset(
        files[::-1] if combine == "by_coords" else files, combine=combine, loadable_variables=[], **kwargs
    )
    assert vds["tas"].shape == (len(files), 3, 4)
    values = read_manifest_arrays(vds, ["time", "tas", "lat"])
    np.testing.assert_array_equal(values["time"], read_concat(files, "time"))
    np.testing.assert_array_equal(values["tas"], read_concat(files, "tas"))
    with netCDF4.Dataset(files[0]) as ds:
        np.testing.assert_array_equal(values["lat"], ds["lat"][:])
    # The same manifests as VirtualiZarr's own combine of HDFParser's per-file manifests.
    theirs = open_virtual_mfdataset(
        [url_of(p) for p in files], registry=registry(), parser=HDFParser(), combine="nested", concat_dim="time",
        loadable_variables=[], data_vars="minimal", coords="minimal", compat="override",
    )
    for name in ("tas", "time"):
        ours_m, theirs_m = vds[name].data.manifest, theirs[name].data.manifest
        np.testing.assert_array_equal(ours_m._paths, theirs_m._paths)
        np.testing.assert_array_equal(ours_m._offsets, theirs_m._offsets)
        np.testing.assert_array_equal(ours_m._lengths, theirs_m._lengths)


def test_vzarr_open_virtual_mfdataset_loads_coordinates(tmp_path):
    files = write_daily(tmp_path / "d")
    vds = vzarr.virtualizarr.open_virtual_mfdataset(files, combine="nested", concat_dim="time", decode_times=False)
    assert isinstance(vds["tas"].data, ManifestArray)
    np.testing.assert_array_equal(vds["time"].values, read_concat(files, "time"))


def test_rectilinear_grid_is_refused_in_one_line(monthly):
    with pytest.raises(ValueError, match=r"along 'time' are irregular.*vzarr\.scan") as error:
        vzarr.virtualizarr.open_virtual_mfdataset(monthly[:2], combine="nested", concat_dim="time")
    assert "\n" not in str(error.value)


def test_external_link_is_referenced_in_its_own_file(tmp_path):
    with h5py.File(tmp_path / "other.h5", "w") as other:
        other["acquisition/raw"] = np.arange(4)
        other["padding"] = np.arange(10, 20)  # so the offsets would read other bytes of links.h5
    path = tmp_path / "links.h5"
    with h5py.File(path, "w") as f:
        f["values"] = np.arange(10.0, 14.0)
        f["raw"] = h5py.ExternalLink("other.h5", "/acquisition/raw")
    store = parse(path)
    paths = store._group.arrays["raw"].manifest._paths
    assert set(paths.ravel().tolist()) == {(tmp_path / "other.h5").resolve().as_uri()}
    root = zarr.open_group(store, mode="r", zarr_format=3)
    with h5py.File(path) as f:
        np.testing.assert_array_equal(root["raw"][...], f["raw"][...])
        np.testing.assert_array_equal(root["values"][...], f["values"][...])


def test_booleans_are_booleans(tmp_path):
    path = tmp_path / "flags.h5"
    with h5py.File(path, "w") as f:
        f["flag"] = np.array([True, False, True, True])
    store = parse(path)
    metadata = store._group.arrays["flag"].metadata
    assert metadata.data_type.to_native_dtype() == np.dtype(bool)
    assert "flag_values" not in metadata.attributes
    ds = xr.open_zarr(store, consolidated=False, zarr_format=3)
    with h5py.File(path) as f:
        assert ds["flag"].dtype == f["flag"].dtype == np.dtype(bool)
        np.testing.assert_array_equal(ds["flag"].values, f["flag"][...])
    native = tmp_path / "flags.vzarr"
    vzarr.scan(path, output=native)
    with h5py.File(path) as f:
        np.testing.assert_array_equal(vzarr.open(native)["flag"][...], f["flag"][...])


def test_fixed_length_bytes_stay_bytes(tmp_path):
    path = tmp_path / "bytes.h5"
    with h5py.File(path, "w") as f:
        f["data"] = np.array([b"hello", b"world"], dtype="S10")
    store = parse(path)
    assert "_Encoding" not in store._group.arrays["data"].metadata.attributes
    with xr.open_zarr(store, zarr_format=3, consolidated=False) as ds, h5py.File(path) as f:
        np.testing.assert_array_equal(ds["data"].to_numpy(), f["data"][...])


def test_hdfparser_keywords_are_accepted(tmp_path):
    path = write_daily(tmp_path / "d", days=1)[0]
    store = vzarr.virtualizarr.Parser(group=None, drop_variables=["lat"], reader_factory=object)(url_of(path), registry())
    assert "lat" not in store._group.arrays and "tas" in store._group.arrays


def test_attributes_keep_their_shape(tmp_path):
    path = tmp_path / "attrs.h5"
    with h5py.File(path, "w") as f:
        d = f.create_dataset("data", data=np.arange(4))
        d.attrs["grid"] = np.arange(6, dtype="i4").reshape(2, 3)
        d.attrs["names"] = np.array([[b"a", b"b"], [b"c", b"d"]])
        d.attrs["flat"] = np.array([1.5, 2.5])
    attributes = parse(path)._group.arrays["data"].metadata.attributes
    with h5py.File(path) as f:
        theirs = f["data"].attrs
        assert attributes["grid"] == theirs["grid"].tolist()
        assert attributes["names"] == np.strings.decode(theirs["names"], "utf-8").tolist()
        assert attributes["flat"] == theirs["flat"].tolist()
    # The native store lists them flat, as libnetcdf gives them (in C order).
    native = tmp_path / "attrs.vzarr"
    vzarr.scan(path, output=native)
    with h5py.File(path) as f:
        np.testing.assert_array_equal(vzarr.open(native)["data"].attrs["grid"], f["data"].attrs["grid"].ravel())


def test_links_and_references_gives_relative_paths(tmp_path):
    import posixpath

    path = tmp_path / "refs.h5"
    with h5py.File(path, "w") as f:
        f["values"] = np.arange(3.0)
        f.create_group("devices/probe")
        g = f.create_group("general/electrodes")
        g.create_dataset("group", data=[f["devices/probe"].ref] * 4 + [h5py.Reference()], dtype=h5py.ref_dtype, chunks=(2,))
        f["values"].attrs["table"] = g.ref
    store = parse(path, links_and_references=True)
    root = zarr.open_group(store, mode="r", zarr_format=3)
    with h5py.File(path) as f:
        refs = f["general/electrodes/group"][...]
        expected = [posixpath.relpath(f[r].name, "/general/electrodes/group") if r else "" for r in refs]
        assert root["general/electrodes/group"][...].tolist() == expected
        assert root["values"].attrs["table"] == {"ref": {"node": posixpath.relpath(f[f["values"].attrs["table"]].name, "/values")}}
    marr = store._group["general"]["electrodes"].arrays["group"]
    assert marr.metadata.chunks == (2,) and len(marr.manifest._inlined) == 3
    # Without the flag: the absolute paths h5py's `f[ref].name` gives.
    plain = zarr.open_group(parse(path), mode="r", zarr_format=3)
    with h5py.File(path) as f:
        assert plain["general/electrodes/group"][...].tolist() == [f[r].name if r else "" for r in refs]


def write_text_compounds(path):
    """Compounds with variable-length string and object reference members (h5py record arrays):
    chunked with gzip, 2-D with partial chunks, scalar, with non-ASCII text and null references."""
    text = h5py.string_dtype()
    with h5py.File(path, "w") as f:
        f["values"] = np.arange(3.0)
        f.create_group("devices/probe")
        rows = np.dtype([("start", "<i4"), ("label", text), ("target", h5py.ref_dtype)])
        targets = [f["values"].ref, f["devices/probe"].ref, h5py.Reference()]
        data = [(i, "é" * (i % 3) + f"r{i}", targets[i % 3]) for i in range(7)]
        f.create_group("tables").create_dataset(
            "rows", data=np.array(data, dtype=rows), chunks=(3,), compression="gzip"
        )
        grid = np.dtype([("n", ">i2"), ("s", text)])
        cells = np.array([(i, "x" * i) for i in range(6)], dtype=grid).reshape(2, 3)
        f.create_dataset("grid", data=cells, chunks=(1, 2))
        f.create_dataset("scalar", data=np.array((7, "seven"), dtype=grid), shape=())


def h5py_text(f, value, here=None):
    """h5py's value of a string or reference member as vzarr gives it: the text; the path of the
    referenced object (relative to `here` when given), empty for a null reference."""
    import posixpath

    if isinstance(value, h5py.Reference):
        if not value:
            return ""
        return posixpath.relpath(f[value].name, here) if here else f[value].name
    return value.decode() if isinstance(value, bytes) else value


@pytest.mark.parametrize("links_and_references", [False, True])
def test_compounds_with_strings_and_references_read_as_h5py(tmp_path, links_and_references):
    """The parser gives compounds with string and reference members as NumPy structured arrays with
    `U<n>` fields as wide as their longest value, inlined per source chunk, equal to h5py's values
    (references as absolute paths, or relative ones with `links_and_references`, as HDFParser gives
    them and names the fields in `links_references`); vzarr's own store and xarray engine too."""
    path = tmp_path / "text.h5"
    write_text_compounds(path)
    store = parse(path, links_and_references=links_and_references)
    root = zarr.open_group(store, mode="r", zarr_format=3)
    out = tmp_path / "text.vzarr"
    vzarr.scan([str(path)], output=out)
    native = vzarr.open(out)
    with h5py.File(path) as f:
        for name in ("tables/rows", "grid", "scalar"):
            theirs = f[name][...]
            here = "/" + name if links_and_references else None
            parent, _, leaf = name.rpartition("/")
            ds = xr.open_dataset(out, engine="vzarr", group=parent or None)
            for ours in (root[name][...], native[name][...], ds[leaf].values):
                assert ours.dtype.names == theirs.dtype.names, name
                assert ours.shape == theirs.shape, name
            for field in theirs.dtype.names:
                column = np.asarray(theirs[field])
                if column.dtype.kind != "O":
                    for ours in (root[name][...], native[name][...], ds[leaf].values):
                        np.testing.assert_array_equal(ours[field], column, err_msg=f"{name}.{field}")
                    continue
                relative = [h5py_text(f, v, here) for v in column.ravel()]
                absolute = [h5py_text(f, v) for v in column.ravel()]
                width = max(1, max(len(t) for t in relative))
                assert root[name].dtype[field] == np.dtype(f"<U{width}"), f"{name}.{field}"
                assert root[name][...][field].ravel().tolist() == relative, f"{name}.{field}"
                assert native[name][...][field].ravel().tolist() == absolute, f"{name}.{field}"
                assert ds[leaf].values[field].ravel().tolist() == absolute, f"{name}.{field}"
        marr = store._group["tables"].arrays["rows"]
        assert marr.metadata.chunks == (3,) and len(marr.manifest._inlined) == 3  # 7 rows in chunks of 3
        attributes = marr.metadata.attributes
        if links_and_references:
            assert attributes["links_references"] == {"references": ["target"]}
        else:
            assert "links_references" not in attributes
        # HDFParser gives the same fields and values with the flag (it refuses references without).
        if links_and_references:
            theirs = zarr.open_group(HDFParser(links_and_references=True)(url_of(path), registry()), mode="r")
            for name in ("tables/rows", "grid", "scalar"):
                assert root[name].dtype == theirs[name].dtype, name
                assert root[name][...].tolist() == theirs[name][...].tolist(), name


def write_links(path, libver):
    """Soft (absolute, relative, dangling), external and hard links, in a group of 12 links (dense
    link storage with libver="latest"; old-style symbol tables with "earliest")."""
    with h5py.File(path.parent / "other.h5", "w") as other:
        other["acquisition/raw"] = np.arange(4)
    with h5py.File(path, "w", libver=libver) as f:
        f["values"] = np.arange(3.0)
        electrodes = f.create_group("general/electrodes")
        electrodes["location"] = np.arange(2)
        f["probe/electrodes"] = electrodes  # a group of two names
        f["values_again"] = f["values"]  # a dataset of two names
        g = f.create_group("general/g")
        g.create_group("child")["inner"] = np.arange(5)
        for i in range(12):
            g[f"soft{i:02d}"] = h5py.SoftLink("/values" if i % 2 else "child/inner")
        g["dangling"] = h5py.SoftLink("/nowhere")
        f["raw"] = h5py.ExternalLink("other.h5", "/acquisition/raw")


def stored_members(group: ManifestGroup, path="/"):
    """(group path, sorted member names, links_references) of every group of a ManifestGroup tree."""
    links = group.metadata.attributes.get("links_references", {}).get("links", {})
    yield path, sorted([*group.arrays, *group.groups, *links]), links
    for name, child in group.groups.items():
        yield from stored_members(child, f"{path.rstrip('/')}/{name}")


@pytest.mark.parametrize("libver", ["earliest", "latest"])
def test_links_are_recorded_as_hdf5_stores_them(tmp_path, libver):
    import posixpath

    path = tmp_path / "links.h5"
    write_links(path, libver)
    store = parse(path, links_and_references=True)
    groups = list(stored_members(store._group))
    first_names = {}
    with h5py.File(path) as f:
        for group_path, names, links in groups:
            assert names == sorted(f[group_path].keys()), group_path
            for name, ref in links.items():
                link = f[group_path].get(name, getlink=True)
                if isinstance(link, h5py.SoftLink):
                    expected = posixpath.relpath(link.path, group_path) if link.path.startswith("/") else link.path
                    assert ref == {"ref": {"node": expected}}
                elif isinstance(link, h5py.ExternalLink):
                    assert ref == {"ref": {"uri": url_of(tmp_path / link.filename), "node": link.path}}
                else:  # a second name of an object stored under the path `ref` names
                    target = posixpath.normpath(posixpath.join(group_path, ref["ref"]["node"]))
                    assert h5py.h5o.get_info(f[target].id).addr == h5py.h5o.get_info(f[group_path][name].id).addr
                    first_names[f"{group_path.rstrip('/')}/{name}"] = target
        assert first_names == {"/probe/electrodes": "/general/electrodes", "/values_again": "/values"}
        root = zarr.open_group(store, mode="r", zarr_format=3)
        for name in ["values", "general/electrodes/location", "general/g/child/inner"]:
            np.testing.assert_array_equal(root[name][...], f[name][...])
    # The same records as VirtualiZarr's HDFParser.
    theirs = HDFParser(links_and_references=True)(url_of(path), registry())
    assert sorted(stored_members(theirs._group)) == sorted(groups)
