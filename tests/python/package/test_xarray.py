"""The xarray backend (engine="vzarr") and the zarr-python store against the source files."""

from __future__ import annotations

import numpy as np
import pytest
import vzarr
import xarray as xr
import zarr


def open_files(files):
    return xr.open_mfdataset(
        files,
        engine="netcdf4",
        combine="nested",
        concat_dim="time",
        data_vars="minimal",
        coords="minimal",
        compat="override",
        join="override",
    )


def test_engine_equals_open_mfdataset(sample_files, tmp_path):
    out = tmp_path / "tas.vzarr"
    vzarr.scan(sample_files, concat=["time"], output=out)
    ours = xr.open_dataset(out, engine="vzarr")
    theirs = open_files(sample_files)
    for name in theirs.variables:
        xr.testing.assert_identical(ours[name].load(), theirs[name].load())
    # Global attributes equal, but for the history line vzarr prepends (CF 2.6.2).
    assert {k: v for k, v in ours.attrs.items() if k != "history"} == {
        k: v for k, v in theirs.attrs.items() if k != "history"
    }


def test_engine_is_lazy_and_chunks_follow_the_grid(monthly, tmp_path):
    out = tmp_path / "tas.vzarr"
    vzarr.scan(monthly, concat=["time"], output=out)
    ds = xr.open_dataset(out, engine="vzarr", chunks={})
    store = vzarr.open(out)
    assert ds.tas.chunks[0] == store["tas"].chunks[0]  # the months' 10-day chunks, cut at month ends
    theirs = open_files(monthly)
    xr.testing.assert_identical(ds.tas.load(), theirs.tas.load())
    # Masked values (_FillValue) decode as NaN, as from the files.
    assert np.isnan(ds.tas.values[0, 0, 0]) and np.isnan(theirs.tas.values[0, 0, 0])
    lazy = xr.open_dataset(out, engine="vzarr")
    point = lazy.tas.isel(time=45, lat=2, lon=3)
    assert float(point) == float(theirs.tas.isel(time=45, lat=2, lon=3))


def test_engine_opens_icechunk_repositories(monthly, tmp_path):
    repo = tmp_path / "tas.icechunk"
    vzarr.scan(monthly, concat=["time"], output=repo, format="icechunk")
    ds = xr.open_dataset(repo, engine="vzarr", branch="main", chunks={})
    xr.testing.assert_identical(ds.tas.load(), open_files(monthly).tas.load())


def test_zarr_store_serves_metadata_and_chunks(monthly, tmp_path):
    out = tmp_path / "tas.vzarr"
    vzarr.scan(monthly, concat=["time"], output=out)
    store = vzarr.open(out).zarr_store()
    with zarr.config.set({"array.rectilinear_chunks": False}):
        with pytest.raises(Exception, match="rectilinear_chunks"):
            zarr.open_group(store, mode="r")["tas"]
    with zarr.config.set({"array.rectilinear_chunks": True}):
        group = zarr.open_group(store, mode="r", zarr_format=3)
        from conftest import read_concat

        np.testing.assert_array_equal(group["tas"][:], read_concat(monthly, "tas"))
        ds = xr.open_zarr(store, consolidated=False, zarr_format=3)
        xr.testing.assert_identical(ds.tas.load(), open_files(monthly).tas.load())


@pytest.mark.parametrize("fmt", ["NETCDF4", "NETCDF3_CLASSIC"])
def test_engine_keeps_attribute_types_and_char_fill_values(tmp_path, fmt):
    """Packed float32 data unpack to float32 and a char array's _FillValue masks, as netCDF4 shows
    the source: the engine applies the attribute types and withheld attributes vzarr keeps in the
    `zarr.json` extension field "vzarr" (JSON numbers carry no float32 type; xarray's Zarr backend
    fails on a byte-string `_FillValue`)."""
    import netCDF4

    src = tmp_path / "packed.nc"
    with netCDF4.Dataset(src, "w", format=fmt) as ds:
        ds.createDimension("x", 4)
        ds.createDimension("n", 3)
        sst = ds.createVariable("sst", "i2", ("x",), fill_value=np.int16(-32767))
        sst.scale_factor = np.float32(0.01)
        sst.add_offset = np.float32(273.15)
        sst.valid_range = np.array([-3000, 3000], dtype="i2")
        sst.not_measured = np.float32(np.nan)  # a non-finite attribute: JSON's bare NaN token
        temp = ds.createVariable("temp", "f8", ("x",))
        temp.missing_value = np.nan
        temp[:] = np.array([1.5, np.nan, -np.inf, 3.0])
        sst.set_auto_maskandscale(False)
        sst[:] = np.array([-32767, 0, 150, -1200], dtype="i2")
        code = ds.createVariable("code", "S1", ("x", "n"), fill_value=b"e")
        code.set_auto_maskandscale(False)
        code[:] = netCDF4.stringtochar(np.array([b"ab", b"eee", b"cd", b"f"], dtype="S3"))
    out = tmp_path / "packed.vzarr"
    vzarr.scan([str(src)], output=out)
    ours = xr.open_dataset(out, engine="vzarr")
    theirs = xr.open_dataset(src, engine="netcdf4")
    assert theirs.sst.dtype == np.float32  # the case being checked
    for name in ("sst", "code", "temp"):
        xr.testing.assert_identical(ours[name].load(), theirs[name].load())
        assert ours[name].dtype == theirs[name].dtype, name
    for name, value in netCDF4.Dataset(src)["sst"].__dict__.items():
        ours_value = vzarr.open(out)["sst"].attrs[name]
        assert np.asarray(ours_value).dtype == np.asarray(value).dtype, name
        np.testing.assert_array_equal(ours_value, value)
    with pytest.raises(OSError, match="no group 'nowhere'"):
        xr.open_dataset(out, engine="vzarr", group="nowhere")


@pytest.mark.parametrize("fmt", ["NETCDF4", "NETCDF3_64BIT"])
def test_one_character_strings_keep_their_dimension(tmp_path, fmt):
    """Strings of one character (xarray writes `char x1(x, string1)`) read as the source shows them:
    folded into `S1` the store's `x1(x)` would read in xarray as the single string "abc", since xarray
    stacks every `S1` array's last dimension. Checked through engine="vzarr" and xarray's zarr engine
    on vzarr's Zarr store, against the netCDF4 engine on the file."""
    src = tmp_path / "chars.nc"
    expected = xr.Dataset(
        {"x1": ("x", np.array([b"a", b"b", b"c"])), "y": (("a", "b"), np.array([[b"1", b"a"], [b"2", b"b"]]))}
    )
    expected.to_netcdf(src, format=fmt, encoding={"x1": {"dtype": "S1"}, "y": {"dtype": "S1"}})
    out = tmp_path / "chars.vzarr"
    vzarr.scan([str(src)], output=out)
    theirs = xr.open_dataset(src, engine="netcdf4").load()
    assert theirs.x1.dims == ("x",) and theirs.x1.values.tolist() == [b"a", b"b", b"c"]  # the case checked
    ours = xr.open_dataset(out, engine="vzarr").load()
    xr.testing.assert_identical(ours, theirs)
    with zarr.config.set({"array.rectilinear_chunks": True}):
        zarr_view = xr.open_zarr(vzarr.open(out).zarr_store(), consolidated=False, zarr_format=3).load()
    for name in ("x1", "y"):
        xr.testing.assert_identical(zarr_view[name], theirs[name])


def test_engine_shows_enums_as_netcdf4_does(tmp_path):
    """An enum variable: vzarr writes its members as CF flags for Zarr readers and records them in
    the `zarr.json` extension field; engine="vzarr" shows the enum as xarray's netCDF4 engine does
    (members in the encoding's dtype metadata, no flag attributes), values equal."""
    import netCDF4

    src = tmp_path / "enum.nc"
    members = {"clear": 0, "partly cloudy": 1, "overcast": 2, "missing": 255}
    with netCDF4.Dataset(src, "w") as ds:
        ds.createDimension("x", 5)
        cloud_t = ds.createEnumType(np.uint8, "cloud_t", members)
        cloud = ds.createVariable("cloud", cloud_t, ("x",), fill_value=255)
        cloud[:] = np.array([0, 2, 1, 255, 0], dtype="u1")
    out = tmp_path / "enum.vzarr"
    vzarr.scan([str(src)], output=out)
    ours = xr.open_dataset(out, engine="vzarr")
    theirs = xr.open_dataset(src, engine="netcdf4")
    xr.testing.assert_identical(ours.cloud.load(), theirs.cloud.load())
    assert ours.cloud.encoding["dtype"].metadata == theirs.cloud.encoding["dtype"].metadata  # enum and enum_name
    assert theirs.cloud.encoding["dtype"].metadata["enum_name"] == "cloud_t"  # the file's type name, checked
    # Zarr readers see the members as CF flags.
    flags = vzarr.open(out)["cloud"].attrs
    assert flags["flag_meanings"].split() == [n.replace(" ", "_") for n in theirs.cloud.encoding["dtype"].metadata["enum"]]


#: Variables of a netCDF-4 file and how they are written: the filters, chunk shapes and string types
#: whose encoding engine="vzarr" must report as the netCDF4 engine does.
ENCODED = {
    "deflated": (("t", "y"), np.arange(40.0).reshape(8, 5),
                 dict(zlib=True, complevel=4, shuffle=True, fletcher32=True, chunksizes=(4, 5))),
    "zstd": (("t", "y"), np.arange(40, dtype="f4").reshape(8, 5), dict(compression="zstd", complevel=2, chunksizes=(2, 5))),
    "blosc": (("t", "y"), np.repeat(np.arange(8, dtype="i4"), 5).reshape(8, 5),
              dict(compression="blosc_lz4", blosc_shuffle=2, chunksizes=(8, 5))),
    "plain": (("y",), np.arange(5, dtype="i2"), dict(contiguous=True)),
    "chunked": (("t",), np.arange(8, dtype="u1"), dict(chunksizes=(3,))),
    "chars": (("t",), np.array([b"ab", b"c", b"def", b"g", b"hi", b"", b"j", b"kl"]), dict(dtype="S1", chunksizes=(4, 3))),
    "names": (("y",), np.array(["ab", "c", "déf", "g", "hi"], dtype=object), dict(dtype=str)),
}


def test_engine_encoding_is_netcdf4s_and_writes_the_same_file(tmp_path):
    """The encoding engine="vzarr" reports equals what xarray's netCDF4 engine reports for the
    source (every key but `source`, the file there and the store here), and `to_netcdf` of the
    dataset opened either way writes the same file: filters, chunking, types, values."""
    import netCDF4

    src = tmp_path / "encoded.nc"
    ds = xr.Dataset({name: (dims, values) for name, (dims, values, _) in ENCODED.items()})
    ds.to_netcdf(src, engine="netcdf4", encoding={name: enc for name, (_, _, enc) in ENCODED.items()})
    out = tmp_path / "encoded.vzarr"
    vzarr.scan([str(src)], output=out)
    ours = xr.open_dataset(out, engine="vzarr")
    theirs = xr.open_dataset(src, engine="netcdf4")
    assert theirs.zstd.encoding["zstd"] and theirs.blosc.encoding["blosc"]  # the cases being checked
    assert theirs.plain.encoding["contiguous"] and not theirs.chunked.encoding["contiguous"]
    for name in ENCODED:
        expected = {k: v for k, v in theirs[name].encoding.items() if k != "source"}
        if name == "chars":
            # The store does not record the name of a char array's string dimension (netCDF4's
            # `char_dim_name`, and its key in `preferred_chunks`); xarray writes its default name,
            # this file's, in its place.
            char_dim = expected.pop("char_dim_name")
            assert expected["preferred_chunks"].pop(char_dim) == 3
        np.testing.assert_equal({k: ours[name].encoding.get(k) for k in expected}, expected, err_msg=name)
        xr.testing.assert_identical(ours[name].load(), theirs[name].load())
    # Neither engine's blosc encoding writes back: xarray passes netCDF4 a complevel without a
    # compression ("Unsupported value for compression kwarg"), the same failure for both.
    for opened in (ours, theirs):
        with pytest.raises(ValueError, match="Unsupported value for compression kwarg"):
            opened[["blosc"]].to_netcdf(tmp_path / "blosc.nc")
    ours.drop_vars("blosc").to_netcdf(tmp_path / "ours.nc")
    theirs.drop_vars("blosc").to_netcdf(tmp_path / "theirs.nc")
    with netCDF4.Dataset(tmp_path / "ours.nc") as a, netCDF4.Dataset(tmp_path / "theirs.nc") as b:
        assert {k: len(v) for k, v in a.dimensions.items()} == {k: len(v) for k, v in b.dimensions.items()}
        assert list(a.variables) == list(b.variables)
        for name, theirs_var in b.variables.items():
            ours_var = a.variables[name]
            assert ours_var.dimensions == theirs_var.dimensions, name
            assert ours_var.dtype == theirs_var.dtype, name
            assert ours_var.filters() == theirs_var.filters(), name
            assert ours_var.chunking() == theirs_var.chunking(), name
            assert ours_var.__dict__.keys() == theirs_var.__dict__.keys(), name
            np.testing.assert_array_equal(ours_var[:], theirs_var[:])


def test_engine_preferred_chunks_follow_the_grid(monthly, tmp_path):
    """`preferred_chunks` as xarray's zarr engine gives them: one int on a regular dimension, the
    chunk edges on a rectilinear one (the months' 10-day chunks, cut at month ends)."""
    out = tmp_path / "tas.vzarr"
    vzarr.scan(monthly, concat=["time"], output=out)
    tas = xr.open_dataset(out, engine="vzarr").tas
    edges = vzarr.open(out)["tas"].chunks
    assert len(set(edges[0][:-1])) > 1  # the case being checked: a rectilinear time dimension
    assert tas.encoding["preferred_chunks"] == {"time": edges[0], "lat": edges[1][0], "lon": edges[2][0]}
    # The source's chunk shape, as the netCDF4 engine reports it for the first file (open_mfdataset).
    first = xr.open_dataset(monthly[0], engine="netcdf4").tas.encoding
    assert (tas.encoding["chunksizes"], tas.encoding["contiguous"]) == (first["chunksizes"], first["contiguous"])


def test_engine_tells_one_chunk_from_contiguous(tmp_path):
    src = tmp_path / "one_chunk.nc"
    xr.Dataset({"x": ("y", np.arange(5.0))}).to_netcdf(src, encoding={"x": {"chunksizes": (5,)}})
    out = tmp_path / "one_chunk.vzarr"
    vzarr.scan([str(src)], output=out)
    theirs = xr.open_dataset(src, engine="netcdf4").x.encoding
    assert not theirs["contiguous"]  # the case being checked
    ours = xr.open_dataset(out, engine="vzarr").x.encoding
    assert (ours["contiguous"], ours["chunksizes"]) == (False, (5,))


def test_engine_reports_copied_filters_as_netcdf4_and_h5netcdf_do(tmp_path):
    """Chunks vzarr copies (szip and LZF have no Zarr codec) keep the source's filters in the
    encoding, from the pipeline the scan recorded (the `source_filters` note): szip as xarray's
    netCDF4 engine reports it, LZF (which netCDF4 cannot express) as its h5netcdf engine does
    (`compression='lzf'`, `compression_opts=None`); the values equal each engine's."""
    import netCDF4

    values = (np.sin(np.arange(20 * 40) / 9.0) * 100).astype("f4").reshape(20, 40)
    szip = tmp_path / "szip.nc"
    with netCDF4.Dataset(szip, "w") as f:
        f.createDimension("y", 20)
        f.createDimension("x", 40)
        for name, coding, pixels in (("nn8", "nn", 8), ("ec16", "ec", 16)):
            var = f.createVariable(name, "f4", ("y", "x"), compression="szip", szip_coding=coding,
                                   szip_pixels_per_block=pixels, chunksizes=(10, 20))
            var[:] = values
    lzf = tmp_path / "lzf.nc"
    ds = xr.Dataset({"plain": (("y", "x"), values), "filtered": (("y", "x"), values)})
    ds.to_netcdf(lzf, engine="h5netcdf", encoding={
        "plain": {"compression": "lzf", "chunksizes": (5, 8)},
        "filtered": {"compression": "lzf", "shuffle": True, "fletcher32": True, "chunksizes": (5, 5)},
    })
    for src, engine, names in ((szip, "netcdf4", ("nn8", "ec16")), (lzf, "h5netcdf", ("plain", "filtered"))):
        out = tmp_path / f"{src.stem}.vzarr"
        vzarr.scan([str(src)], output=out)
        ours = xr.open_dataset(out, engine="vzarr")
        theirs = xr.open_dataset(src, engine=engine)
        for name in names:
            assert "vzarr:copied_chunks" in ours[name].encoding  # the case being checked: copies
            expected = {k: v for k, v in theirs[name].encoding.items() if k != "source"}
            np.testing.assert_equal({k: ours[name].encoding.get(k) for k in expected}, expected, err_msg=name)
            xr.testing.assert_identical(ours[name].load(), theirs[name].load())
    assert ours.filtered.encoding["compression"] == "lzf" and ours.filtered.encoding["compression_opts"] is None
    szip_encoding = xr.open_dataset(tmp_path / "szip.vzarr", engine="vzarr").ec16.encoding
    assert szip_encoding["szip"] == {"coding": "ec", "pixels_per_block": 16}
