"""Writes the compound, opaque and committed-type fixtures of issue 26 (tests/native_hdf5/structs.rs).

    make_structs.py DIR

DIR/structs.h5 (h5py) holds compound datasets of every layout vzarr references as a Zarr `struct`
(packed; little- and big-endian; members out of offset order; nested compounds with complex, string,
enum and opaque members; chunked with gzip+shuffle, contiguous, compact), compounds with padding
(which vzarr stores packed: contiguous, chunked with filters, compact, nested with gaps and a fill
value), compounds with array members (`write_arrays`), the layouts it refuses (members of both byte
orders, an array member too wide), opaque datasets, a
dataset and attributes of a committed (named) compound type, and compound attributes. DIR/structs.nc
(netCDF4-python) holds a netCDF-4 compound variable, one whose C alignment leaves padding, and a
compound attribute; DIR/table.h5 PyTables tables (one with multidimensional columns) when PyTables
is installed. DIR/text_structs.h5 (h5py) holds compounds with variable-length string and object
reference members (`write_text_structs`), which vzarr stores with UTF-32 text fields, and
DIR/text_parts/part{0,1}.h5 two files of such a compound whose text differs in width.
"""

import pathlib
import sys

import h5py
import numpy as np


def records(dtype, n):
    """n elements of `dtype` whose every leaf field holds distinct values (array members' elements too)."""

    def values(dt, count, seed, name):
        if dt.subdtype is not None:
            base, shape = dt.subdtype
            return values(base, count * int(np.prod(shape)), seed, name).reshape((count,) + shape)
        if dt.names:
            data = np.zeros(count, dt)
            for k, field in enumerate(dt.names):
                data[field] = values(dt.fields[field][0], count, seed * 7 + k, field)
            return data
        if dt.kind in "SV":
            return np.array([f"{name}{i + seed}".encode()[: dt.itemsize] for i in range(count)], dt)
        if dt.kind == "c":
            return (np.arange(count) * 1.5 + 1j * (seed - np.arange(count))).astype(dt)
        if dt.kind == "b":
            return np.arange(count) % 2 == 0
        return ((np.arange(count) * (seed % 5 + 3) + seed) % 120).astype(dt)

    return values(dtype, n, 1, "")


def write_arrays(f):
    """Compounds with array members (nested structs named by index in vzarr): chunked with gzip+shuffle
    and contiguous, both byte orders, multidimensional, strings, arrays of compounds, array members in
    nested compounds, with padding (aligned; arrays of padded compounds), with a fill value, and one
    refused (a dimension wider than a struct's field limit)."""
    point = np.dtype([("x", "<f4"), ("y", "<f4")])
    le = np.dtype([("n", "<u2"), ("c", "<f8", (3,)), ("m", "<i2", (2, 2)), ("s", "S4", (2,))])
    f.create_dataset("array_members", data=records(le, 25), chunks=(4,), compression="gzip", shuffle=True)
    be = np.dtype([("c", ">f8", (3,)), ("m", ">i2", (2, 2)), ("s", "S4", (2,))])
    f.create_dataset("array_members_be", data=records(be, 7))
    f.create_dataset("array_grid", data=records(le, 12).reshape(3, 4), chunks=(2, 3))
    of_compound = np.dtype([("id", "<i4"), ("pts", point, (2, 3))])
    f.create_dataset("array_of_compound", data=records(of_compound, 10), chunks=(3,), compression="gzip")
    nested = np.dtype([("p", [("q", "<i4", (2,)), ("r", "<f4")]), ("z", "<f8")])
    f.create_dataset("array_in_nested", data=records(nested, 6), chunks=(4,))
    aligned = np.dtype([("a", "u1"), ("c", "<f8", (3,)), ("b", "<i2")], align=True)
    f.create_dataset("array_padded", data=records(aligned, 9), chunks=(4,), compression="gzip", shuffle=True)
    padded = np.dtype({"names": ["a", "b"], "formats": ["<i2", "<f8"], "offsets": [0, 8], "itemsize": 16})
    f.create_dataset("array_of_padded", data=records(np.dtype([("v", padded, (3,)), ("n", "<u2")]), 5))
    # A fill value of distinct array elements, in chunks never written.
    fill = f.create_dataset("array_fill", shape=(10,), dtype=be, chunks=(3,), fillvalue=records(be, 2)[1])
    fill[3:6] = records(be, 3)
    f.create_dataset("wide_array", data=np.zeros(2, [("w", "u1", (5000,))]))


def write_h5(path):
    point = np.dtype([("x", "<f4"), ("y", "<f4")])
    color = h5py.enum_dtype({"red": 0, "green": 1, "blue": 2}, basetype="u1")
    flat = np.dtype([("id", "<i4"), ("value", "<f8"), ("name", "S6")])
    nested = np.dtype([("p", point), ("c", "<c8"), ("color", color), ("tag", "V3"), ("n", "<u2")])
    with h5py.File(path, "w") as f:
        f.create_dataset("chunked", data=records(flat, 25), chunks=(4,), compression="gzip", shuffle=True)
        f.create_dataset("contiguous_be", data=records(flat, 7).astype([("id", ">i4"), ("value", ">f8"), ("name", "S6")]))
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_layout(h5py.h5d.COMPACT)
        space = h5py.h5s.create_simple((5,))
        h5py.h5d.create(f.id, b"compact", h5py.h5t.py_create(flat), space, dcpl=dcpl).write(
            h5py.h5s.ALL, h5py.h5s.ALL, records(flat, 5))
        f.create_dataset("nested", data=records(nested, 9), chunks=(3,))
        # Big-endian members listed out of offset order.
        unordered = np.dtype({"names": ["a", "b", "c"], "formats": [">i4", ">u2", ">f8"], "offsets": [10, 0, 2],
                              "itemsize": 14})
        f.create_dataset("unordered", data=records(np.dtype([("b", "<u2"), ("c", "<f8"), ("a", "<i4")]), 6)
                         .astype(unordered))
        f.create_dataset("grid", data=records(flat, 12).reshape(3, 4), chunks=(2, 3))
        f.create_dataset("opaque", data=np.array([b"ab\x00c", b"\xff\x01\x02\x03", b"wxyz"], dtype="V4"), chunks=(2,))
        # Padding between members and at the end: stored packed by vzarr (contiguous, chunked with
        # gzip+shuffle and a partial last chunk, compact; nested with gaps, big-endian, with a fill value
        # and chunks never written).
        padded = np.dtype({"names": ["a", "b"], "formats": ["<i2", "<f8"], "offsets": [0, 8], "itemsize": 16})
        f.create_dataset("padded", data=records(np.dtype([("a", "<i2"), ("b", "<f8")]), 3).astype(padded))
        f.create_dataset("padded_chunked", data=records(np.dtype([("a", "<i2"), ("b", "<f8")]), 25).astype(padded),
                         chunks=(4,), compression="gzip", shuffle=True)
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_layout(h5py.h5d.COMPACT)
        h5py.h5d.create(f.id, b"padded_compact", h5py.h5t.py_create(padded), h5py.h5s.create_simple((4,)),
                        dcpl=dcpl).write(h5py.h5s.ALL, h5py.h5s.ALL,
                                         records(np.dtype([("a", "<i2"), ("b", "<f8")]), 4).astype(padded))
        inner = np.dtype({"names": ["c", "d"], "formats": ["i1", ">f8"], "offsets": [2, 4], "itemsize": 12})
        gappy = np.dtype({"names": ["x", "in"], "formats": [">f4", inner], "offsets": [1, 7], "itemsize": 21})
        dense = np.dtype([("x", ">f4"), ("in", [("c", "i1"), ("d", ">f8")])])
        fill = np.array((-1.5, (-2, -3.25)), dense).astype(gappy)
        gaps = f.create_dataset("padded_nested", shape=(10,), dtype=gappy, chunks=(3,), fillvalue=fill)
        gaps[3:8] = records(dense, 5).astype(gappy)
        # Refused: members of both byte orders.
        f.create_dataset("mixed_order", data=np.zeros(3, [("a", "<i4"), ("b", ">i4")]))
        # A committed (named) compound type, used by a dataset and an attribute.
        f["pair_t"] = np.dtype([("u", "<i2"), ("v", "<f4")])
        committed = f.create_dataset("committed", data=records(f["pair_t"].dtype, 4), dtype=f["pair_t"])
        committed.attrs.create("pair", np.array((3, 2.5), dtype=f["pair_t"]))
        f.attrs["record"] = records(np.dtype([("p", point), ("c", "<c8"), ("color", color), ("n", "<u2")]), 1)[0]
        f.attrs["records"] = records(flat, 2)
        write_arrays(f)
        f.attrs["with_array"] = np.array((np.arange(3, dtype="<f4"), 7), dtype=[("v", "<f4", (3,)), ("n", "<u2")])


def write_nc(path):
    import netCDF4

    # netCDF4-python aligns compound members as a C compiler would: `obs_t` needs no padding, so it is
    # referenced; `padded_t` has 2 unused bytes before `level`, so it is stored packed.
    with netCDF4.Dataset(path, "w") as f:
        fields = [("time", "<f8"), ("level", "<f4"), ("station", "<i2"), ("flag", "<i2")]
        obs_t = f.createCompoundType(np.dtype(fields), "obs_t")
        padded_t = f.createCompoundType(np.dtype([("time", "<f8"), ("station", "<i2"), ("level", "<f4")]), "padded_t")
        f.createDimension("obs", 8)
        v = f.createVariable("obs", obs_t, ("obs",), chunksizes=(3,), zlib=True)
        v[:] = records(obs_t.dtype, 8)
        v.setncattr("first", records(obs_t.dtype, 1)[0])
        f.createVariable("padded", padded_t, ("obs",))[:] = records(padded_t.dtype, 8)


def write_table(path):
    try:
        import tables
    except ImportError:
        return

    class Particle(tables.IsDescription):
        name = tables.StringCol(8, pos=0)
        idnumber = tables.Int64Col(pos=1)
        energy = tables.Float64Col(pos=2)
        grid = tables.Int32Col(pos=3)

    class Track(tables.IsDescription):
        id = tables.Int32Col(pos=0)
        pos = tables.Float64Col(shape=(2, 3), pos=1)
        hits = tables.Int16Col(shape=(4,), pos=2)

    with tables.open_file(str(path), "w") as f:
        table = f.create_table("/", "particles", Particle, filters=tables.Filters(complevel=1, complib="zlib"),
                               chunkshape=(16,))
        row = table.row
        for i in range(50):
            row["name"] = f"p{i}".encode()
            row["idnumber"] = i * 1000
            row["energy"] = i * 0.25
            row["grid"] = -i
            row.append()
        table.flush()
        tracks = f.create_table("/", "tracks", Track, filters=tables.Filters(complevel=1, complib="zlib"),
                                chunkshape=(8,))
        row = tracks.row
        for i in range(30):
            row["id"] = i
            row["pos"] = np.arange(6).reshape(2, 3) * 0.5 + i
            row["hits"] = np.arange(4) - i
            row.append()
        tracks.flush()


def write_text_structs(path):
    """Compounds with variable-length string and object reference members: contiguous and scalar,
    chunked with gzip (references to a dataset, a group and none), big-endian numbers in a 2-D grid
    of partial chunks, C-aligned with padding, non-ASCII text, and chunks never written (empty
    strings and zeros)."""
    text = h5py.string_dtype()
    with h5py.File(path, "w") as f:
        f["values"] = np.arange(3.0)
        f.create_group("group")
        names = np.dtype([("id", "<i8"), ("name", text)])
        f.create_dataset("names", data=np.array([(1, "a"), (2, "bcd"), (3, "")], dtype=names))
        f.create_dataset("scalar", data=np.array((7, "seven"), dtype=names), shape=())
        rows = np.dtype([("start", "<i4"), ("label", text), ("target", h5py.ref_dtype), ("w", "<f4")])
        targets = [f["values"].ref, f["group"].ref, h5py.Reference()]
        data = [(i, "é" * (i % 4) + f"row {i}", targets[i % 3], i / 4) for i in range(11)]
        f.create_dataset("rows", data=np.array(data, dtype=rows), chunks=(4,), compression="gzip", shuffle=True)
        grid = np.dtype([("n", ">i4"), ("s", text), ("x", ">f8")])
        cells = [(i, "cell " * (i % 3) + str(i), -i * 0.5) for i in range(15)]
        f.create_dataset("grid", data=np.array(cells, dtype=grid).reshape(5, 3), chunks=(2, 2))
        aligned = np.dtype([("a", "u1"), ("s", text), ("b", "<f8")], align=True)
        f.create_dataset("aligned", data=np.array([(1, "x", 0.5), (2, "yy", 1.5)], dtype=aligned))
        partly = f.create_dataset("partly", shape=(10,), dtype=names, chunks=(3,))
        partly[0:2] = np.array([(5, "written"), (6, "too")], dtype=names)


def write_text_parts(directory):
    """Two files of one compound variable with a string member along an unlimited dimension, the
    second's text longer, and a scalar compound whose text differs between them: concatenated, the
    combined text field takes the wider width."""
    directory.mkdir(exist_ok=True)
    text = h5py.string_dtype()
    dtype = np.dtype([("id", "<i4"), ("name", text)])
    parts = [(["a", "bb"], "short"), (["ccc", "d", "é" * 5], "a longer one")]
    for i, (names, meta) in enumerate(parts):
        with h5py.File(directory / f"part{i}.h5", "w") as f:
            rows = np.array([(10 * i + k, n) for k, n in enumerate(names)], dtype=dtype)
            f.create_dataset("obs", data=rows, maxshape=(None,), chunks=(2,))
            f.create_dataset("meta", data=np.array((i, meta), dtype=dtype), shape=())


def main():
    out = pathlib.Path(sys.argv[1])
    write_h5(out / "structs.h5")
    write_text_structs(out / "text_structs.h5")
    write_text_parts(out / "text_parts")
    write_nc(out / "structs.nc")
    write_table(out / "table.h5")


if __name__ == "__main__":
    main()
