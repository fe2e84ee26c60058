"""Attribute types and compound dtypes as the source's readers show them (h5py, netCDF4): vzarr keeps
what JSON and Zarr's struct cannot say in the `zarr.json` extension field "vzarr", and the package
and its xarray engine apply it. Every expected value comes from h5py or netCDF4 reading the fixture."""

from __future__ import annotations

import h5py
import netCDF4
import numpy as np
import vzarr
import xarray as xr


def assert_same_attrs(ours: dict, theirs) -> None:
    """Every attribute of `theirs` (h5py's) is in `ours`, of the same type and value."""
    for name, value in theirs.items():
        assert name in ours, name
        assert type(ours[name]) is type(value), (name, type(ours[name]), type(value))
        # The type and size; h5py keeps a big-endian attribute's byte order, JSON has none.
        assert np.asarray(ours[name]).dtype == np.asarray(value).dtype.newbyteorder("="), name
        np.testing.assert_array_equal(ours[name], value)


def assert_same_records(ours: np.ndarray, theirs: np.ndarray) -> None:
    """Structured arrays equal field by field (nested fields too), whatever their padding."""
    assert ours.dtype.names == theirs.dtype.names
    for name in theirs.dtype.names:
        a, b = ours[name], theirs[name]
        if b.dtype.names:
            assert_same_records(a, b)
        else:
            assert a.dtype == b.dtype, name
            np.testing.assert_array_equal(a, b)


def field_layout(dtype: np.dtype) -> list:
    """Names, subarray shapes and base kinds of a structured dtype, nested ones included: what a
    reader shows of it, apart from padding."""
    out = []
    for name in dtype.names:
        field = dtype.fields[name][0]
        base, shape = (field.subdtype if field.subdtype else (field, ()))
        out.append((name, shape, field_layout(base) if base.names else base.str))
    return out


def test_h5py_booleans_are_booleans(tmp_path):
    """h5py writes NumPy booleans as an enum (FALSE=0, TRUE=1): vzarr writes JSON booleans and gives
    `np.bool_` and boolean arrays, on groups and arrays, as h5py does."""
    src = tmp_path / "bools.h5"
    with h5py.File(src, "w") as f:
        f.attrs["created_on_s390x"] = np.bool_(False)
        f.attrs["flags"] = np.array([True, False, True])
        d = f.create_dataset("x", data=np.arange(4, dtype="i2"))
        d.attrs["valid"] = np.bool_(True)
        d.attrs["mask"] = np.array([False, True])
        d.attrs["count"] = np.int8(3)
        # Not h5py's boolean (lower-case names): its integers.
        d.attrs.create("other", 1, dtype=h5py.enum_dtype({"false": 0, "true": 1}, basetype="i1"))
        f.create_group("g").attrs["on"] = np.bool_(True)
    out = tmp_path / "bools.vzarr"
    vzarr.scan([str(src)], output=out)
    store = vzarr.open(out)
    root = store.zarr_metadata("")
    assert b'"created_on_s390x": false' in root  # Zarr readers see JSON booleans
    ds = xr.open_dataset(out, engine="vzarr")
    with h5py.File(src) as f:
        assert_same_attrs(store.attrs, f.attrs)
        assert_same_attrs(ds.attrs, f.attrs)
        assert_same_attrs(store.group_attrs("g"), f["g"].attrs)
        assert_same_attrs(store["x"].attrs, f["x"].attrs)
        assert_same_attrs(ds.x.attrs, f["x"].attrs)


def test_complex_attributes_are_complex_numbers(tmp_path):
    """A complex attribute is a JSON object {"r", "i"} for Zarr readers; its type is noted, and
    vzarr gives NumPy complex numbers of that type, as h5py does (h5py's compound-dtype-complex.h5)."""
    src = tmp_path / "complex.h5"
    with h5py.File(src, "w") as f:
        for name, dtype in [("c8", "<c8"), ("c16", "<c16"), (">c16", ">c16")]:
            d = f.create_dataset(name.replace(">", "be"), data=np.array([1 + 2j, -3.5j], dtype=dtype))
            d.attrs["c1"] = np.array(1.5 - 2j, dtype=dtype)[()]
            d.attrs["c2"] = np.array([1j, 2, np.nan + 1j], dtype=dtype)
        f["c8"].attrs["real"] = np.float32(0.5)
    out = tmp_path / "complex.vzarr"
    vzarr.scan([str(src)], output=out)
    store = vzarr.open(out)
    ds = xr.open_dataset(out, engine="vzarr")
    with h5py.File(src) as f:
        for name in ("c8", "c16", "bec16"):
            assert store[name].zarr_metadata["attributes"]["c1"] == {"r": 1.5, "i": -2.0}
            assert_same_attrs(store[name].attrs, f[name].attrs)
            assert_same_attrs(ds[name].attrs, f[name].attrs)
            np.testing.assert_array_equal(ds[name].values, f[name][...])


def test_attributes_json_cannot_hold_are_bytes(tmp_path):
    """HDF5 opaque values and strings that are not UTF-8 are base64 text for Zarr readers (noted in
    `attribute_encodings`); the package gives their bytes, on groups and arrays, as h5py reads them
    (h5py gives an opaque value as `np.void` of the same bytes)."""
    src = tmp_path / "bytes.h5"
    with h5py.File(src, "w") as f:
        f.attrs["opaque"] = np.void(b"\x01\x02\x03")
        f.attrs["raw"] = np.bytes_(b"\xff\xfe")
        f.attrs["text"] = "ok"
        d = f.create_dataset("x", data=np.arange(3, dtype="i2"))
        d.attrs["opaque"] = np.void(b"\x04\x05")
        d.attrs["raws"] = np.array([b"\xff", b"ab"], dtype="S2")
        f.create_group("g").attrs["raw"] = np.bytes_(b"\xc3\x28")
    out = tmp_path / "bytes.vzarr"
    vzarr.scan([str(src)], output=out)
    store = vzarr.open(out)
    assert b'"raw": "//4="' in store.zarr_metadata("")  # Zarr readers see the base64 text
    with h5py.File(src) as f:
        for ours, theirs in ((store.attrs, f.attrs), (store.group_attrs("g"), f["g"].attrs),
                             (store["x"].attrs, f["x"].attrs)):
            assert set(ours) == set(theirs)
            for name, value in theirs.items():
                if isinstance(value, np.void):
                    assert ours[name] == value.tobytes(), name
                elif isinstance(value, np.ndarray):
                    assert ours[name].dtype == value.dtype, name
                    np.testing.assert_array_equal(ours[name], value)
                else:
                    assert type(ours[name]) in (bytes, str) and ours[name] == value, name


def write_compounds(path) -> None:
    """Compounds as h5py writes NumPy dtypes: members declared out of offset order (PyTables'
    out_of_order_types.h5), array members (HDF-EOS5 Point.h5's `ID`, 2-d ones), and a nested
    compound declared out of order, alone and as an array member (libnetcdf does not show that
    variable: arrays of compounds)."""
    out_of_order = np.dtype(
        {"names": ["test_5", "test_10", "test_15"], "formats": ["<i4", "<f8", "<i2"], "offsets": [12, 4, 0],
         "itemsize": 16}
    )
    inner = np.dtype({"names": ["y", "x"], "formats": ["<i2", "i1"], "offsets": [1, 0], "itemsize": 3})
    arrays = np.dtype([("ID", "i1", (8,)), ("grid", "<f4", (5, 10)), ("t", "<f8")])
    nested = np.dtype([("n", inner), ("pts", inner, (2,))])
    rng = np.random.default_rng(3)
    with h5py.File(path, "w") as f:
        a = np.zeros(3, out_of_order)
        a["test_5"], a["test_10"], a["test_15"] = [1, 2, 3], [0.5, 1.5, 2.5], [7, 8, 9]
        f.create_dataset("ooo", data=a)
        b = np.zeros(4, arrays)
        b["ID"] = rng.integers(-100, 100, (4, 8))
        b["grid"] = rng.random((4, 5, 10))
        b["t"] = np.arange(4)
        f.create_dataset("arrays", data=b, chunks=(2,))
        c = np.zeros(3, nested)
        for name, shape in (("n", (3,)), ("pts", (3, 2))):
            c[name]["y"] = rng.integers(-1000, 1000, shape)
            c[name]["x"] = rng.integers(-100, 100, shape)
        f.create_dataset("nested", data=c)


def test_compounds_show_declared_order_and_subarray_fields(tmp_path):
    """vzarr's struct lists fields in offset order and holds array members as structs of fields
    "0", "1", ...; `vzarr.Array.dtype` and the engine show the declared order and subarray fields,
    as h5py and netCDF4 do, over the same bytes."""
    src = tmp_path / "compounds.h5"
    write_compounds(src)
    out = tmp_path / "compounds.vzarr"
    vzarr.scan([str(src)], output=out)
    store = vzarr.open(out)
    ds = xr.open_dataset(out, engine="vzarr")
    fields = [f["name"] for f in store["ooo"].zarr_metadata["data_type"]["configuration"]["fields"]]
    assert fields == ["test_15", "test_10", "test_5"]  # Zarr readers: offset order
    with h5py.File(src) as f, netCDF4.Dataset(src) as nc:
        assert "nested" not in nc.variables
        for name in ("ooo", "arrays", "nested"):
            theirs = f[name][...]
            assert field_layout(store[name].dtype) == field_layout(theirs.dtype), name
            if name in nc.variables:
                assert field_layout(store[name].dtype) == field_layout(nc[name].dtype), name
            assert_same_records(store[name][...], theirs)
            assert_same_records(store[name][1:3], theirs[1:3])
            assert_same_records(ds[name].values, theirs)
        assert store["arrays"].dtype["grid"].shape == (5, 10)
        assert store["nested"].dtype["pts"].base.names == ("y", "x")
