"""Writes the fixtures of issue 26's object references, null dataspaces, time types, `_NCPROPERTIES`
and blosc chunks (tests/native_hdf5/special_types.rs, tests/native_hdf5/blosc.rs).

    make_special_types.py DIR [blosc]

DIR/references.h5 (h5py): object references (old-style `H5R_OBJECT`, h5py's `ref_dtype`) to a
dataset, a group, a nested dataset and the root, plus a null reference, in a 1-d dataset, a chunked
2-d one and a scalar; object-reference attributes on a dataset and a group; a dataset of region
references (refused).
DIR/null.h5 (h5py): a dataset of null dataspace (`h5py.Empty`) beside a plain one.
DIR/times.h5 (PyTables): a time32 and a time64 EArray and a table with a time column (the HDF5 time
class), beside a plain array.
DIR/bitfields.h5 (h5py, low-level API): bitfield datasets (8-bit chunked with gzip+shuffle, 16-bit
big-endian chunked, 32-bit little-endian contiguous, 64-bit scalar), a compound with a bitfield member
and bitfield attributes (scalar and list).
DIR/booleans.h5 (PyTables, which writes NumPy booleans as 8-bit bitfields): a boolean array, a table
with a boolean column (chunked, zlib) and a boolean attribute.
DIR/arrays.h5 (h5py): datasets of HDF5 array datatypes (class 10): contiguous 2-d of float64[3],
chunked with gzip+shuffle of big-endian int16[2][3], a scalar of uint32[4], an array of a nested array
type (float32[3] inside [2], low-level API), arrays of a compound and of fixed-length strings, and an
array of variable-length strings (refused).
DIR/array_atoms.h5 (PyTables): a chunked array of int32[2] atoms with unwritten chunks and a default of
-9, and an extendable zlib+shuffle array of float64[3] atoms.
DIR/committed.h5 (h5py): committed datatypes (atomic, compound, enum; one in group /types) used by
attributes of the root, a group and datasets and by contiguous and chunked datasets. libnetcdf refuses
the file (a committed atomic type is no netCDF user type).
DIR/committed_dense.h5 (h5py, format versions of HDF5 1.8): committed compound and enum types only (libnetcdf reads
it), a dataset of each, twelve attributes of committed types on one dataset (dense attribute storage).
DIR/sohm.h5 (h5py, with `H5Pset_shared_mesg_index` called through ctypes on h5py's own libhdf5, which
h5py does not expose): every shareable message (datatypes, dataspaces, fill values, filter pipelines,
attributes) in the shared object header message table, attributes of shared datatypes and dataspaces
on the root and on chunked datasets; sixty datasets in /many turn its index from a list into a B-tree.
DIR/dimension_lists.h5 (h5py, `DIMENSION_LIST` written by hand as vlen object references): variables
whose list is shorter than their rank, has an empty entry, names a dataset that is no dimension scale,
or is longer than their rank, beside scales x and y.
DIR/scales.h5 (h5py): a dimension scale in group /g reached from the root through a soft link, and
scales whose `NAME` is no netCDF name (text with spaces, empty).
DIR/ncproperties.nc (netCDF4-python): user attributes `_NCPROPERTIES` on the root and a variable,
beside libnetcdf's own `_NCProperties`.
DIR/attribute_types.h5 (h5py): attributes of types JSON text has no plain form for (issue 41) on a
dataset: variable-length sequences of int32 (1-d, one empty) and of float64, an array type of
int16[2][3] and a scalar of uint8[4], opaque values (4 bytes, 1-d and scalar), and strings that are
not valid UTF-8 (fixed-length, and variable-length ones in the global heap); on the root, a
sequence, an array type and an opaque value (base64, noted in the root group's `vzarr` field).

With `blosc`, only DIR/blosc.h5 (h5py + hdf5plugin): one dataset per blosc compressor (blosclz, lz4,
lz4hc, zlib, zstd) and shuffle (none, byte, bit), of 1-, 2-, 4- and 8-byte elements, chunks of several
blosc blocks and partial edge chunks, an incompressible dataset (memcpy'd frames) and one with a
fill value and unwritten chunks.
"""

import pathlib
import sys

import h5py
import numpy as np


def references(path):
    with h5py.File(path, "w") as f:
        target = f.create_dataset("target", data=np.arange(6, dtype="i4"))
        grp = f.create_group("grp")
        inner = grp.create_dataset("inner", data=np.linspace(0, 1, 4))
        ref = h5py.ref_dtype
        refs = [target.ref, grp.ref, inner.ref, h5py.Reference(), f.ref]
        f.create_dataset("refs", data=np.array(refs, dtype=ref))
        grid = [[target.ref, inner.ref, grp.ref], [f.ref, target.ref, h5py.Reference()]] * 3
        f.create_dataset("refs_2d", data=np.array(grid, dtype=ref), chunks=(4, 2))
        f.create_dataset("one_ref", data=inner.ref, dtype=ref)
        target.attrs.create("see_also", [inner.ref, grp.ref], dtype=ref)
        grp.attrs.create("first", target.ref, dtype=ref)
        f.create_dataset("regions", data=[target.regionref[1:3]], dtype=h5py.regionref_dtype)


def null(path):
    with h5py.File(path, "w") as f:
        f.create_dataset("empty", data=h5py.Empty("f4"))
        f.create_dataset("data", data=np.arange(5, dtype="i2"))
        f["data"].attrs["nothing"] = h5py.Empty("f8")


def times(path):
    import tables

    class Row(tables.IsDescription):
        when = tables.Time64Col()
        value = tables.Float64Col()

    with tables.open_file(str(path), "w") as f:
        e32 = f.create_earray("/", "earr32", tables.Time32Atom(), (0,))
        e32.append(np.arange(10, dtype="i4") * 3600)
        e64 = f.create_earray("/", "earr64", tables.Time64Atom(), (0,))
        e64.append(np.arange(10, dtype="f8") * 1.5)
        table = f.create_table("/", "tbl", Row)
        for i in range(5):
            table.row["when"] = 1.7e9 + i
            table.row["value"] = i / 4
            table.row.append()
        table.flush()
        f.create_array("/", "plain", np.arange(4, dtype="f4"))


def bitfields(path):
    """Bitfields are written through the low-level API with the file type as the memory type, so the
    bytes written are the NumPy unsigned integers' bytes, unconverted (NumPy has no bitfield type)."""

    def dataset(f, name, ftype, data, chunks=None, gzip=False):
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        if chunks:
            dcpl.set_chunk(chunks)
        if gzip:
            dcpl.set_shuffle()
            dcpl.set_deflate(4)
        space = h5py.h5s.create_simple(data.shape) if data.shape else h5py.h5s.create(h5py.h5s.SCALAR)
        ds = h5py.h5d.create(f.id, name.encode(), ftype, space, dcpl=dcpl)
        ds.write(h5py.h5s.ALL, h5py.h5s.ALL, np.ascontiguousarray(data), mtype=ftype)

    def attribute(obj, name, ftype, data):
        space = h5py.h5s.create_simple(data.shape) if data.shape else h5py.h5s.create(h5py.h5s.SCALAR)
        h5py.h5a.create(obj.id, name.encode(), ftype, space).write(np.ascontiguousarray(data), mtype=ftype)

    with h5py.File(path, "w") as f:
        dataset(f, "b8", h5py.h5t.STD_B8LE, (np.arange(50, dtype="u1") * 37).reshape(5, 10), chunks=(2, 4),
                gzip=True)
        dataset(f, "b16be", h5py.h5t.STD_B16BE, (np.arange(30) * 2011).astype(">u2"), chunks=(7,))
        dataset(f, "b32", h5py.h5t.STD_B32LE, (np.arange(12, dtype="<u4") * 357_913_941).reshape(3, 4))
        dataset(f, "b64", h5py.h5t.STD_B64BE, np.array(0x0123456789ABCDEF, dtype=">u8"))
        record = h5py.h5t.create(h5py.h5t.COMPOUND, 8)
        record.insert(b"flags", 0, h5py.h5t.STD_B16LE)
        record.insert(b"level", 2, h5py.h5t.STD_I16LE)
        record.insert(b"value", 4, h5py.h5t.IEEE_F32LE)
        values = np.zeros(6, [("flags", "<u2"), ("level", "<i2"), ("value", "<f4")])
        values["flags"] = [1, 2, 4, 0x8000, 0xFFFF, 0]
        values["level"] = np.arange(6) - 3
        values["value"] = np.arange(6) / 4
        dataset(f, "records", record, values, chunks=(4,))
        attribute(f["b8"], "mask", h5py.h5t.STD_B8LE, np.array(0xA5, dtype="u1"))
        attribute(f["b8"], "masks", h5py.h5t.STD_B16BE, np.array([1, 0xFF00, 0xFFFF], dtype=">u2"))


def arrays(path):
    """The values are written with the file type as the memory type (h5py converts no NumPy array to
    an array datatype): each NumPy array holds the elements in the file's byte order, dataset axes
    first, then the array type's."""

    def create(f, name, dtype, data, shape=None, **kwds):
        ds = f.create_dataset(name, shape=data.shape[: data.ndim - len(dtype[1])] if shape is None else shape,
                              dtype=dtype, **kwds)
        if data.size:
            ds.id.write(h5py.h5s.ALL, h5py.h5s.ALL, np.ascontiguousarray(data), mtype=ds.id.get_type())

    with h5py.File(path, "w") as f:
        create(f, "contiguous", ("<f8", (3,)), np.arange(60, dtype="<f8").reshape(4, 5, 3) / 8)
        create(f, "chunked", (">i2", (2, 3)), (np.arange(60) * 97 - 2000).astype(">i2").reshape(10, 2, 3),
               chunks=(4,), compression="gzip", shuffle=True)
        create(f, "scalar", ("<u4", (4,)), np.array([7, 8, 9, 4_000_000_000], dtype="<u4"))
        inner = h5py.h5t.array_create(h5py.h5t.IEEE_F32LE, (3,))
        nested = h5py.h5t.array_create(inner, (2,))
        space = h5py.h5s.create_simple((5,))
        h5py.h5d.create(f.id, b"nested", nested, space).write(
            h5py.h5s.ALL, h5py.h5s.ALL, np.arange(30, dtype="<f4").reshape(5, 2, 3) - 10.5, mtype=nested)
        pair = np.dtype([("n", "<i2"), ("x", "<f4")])
        records = np.zeros((6, 3), pair)
        records["n"] = np.arange(18).reshape(6, 3) - 4
        records["x"] = np.arange(18).reshape(6, 3) * 0.5
        create(f, "of_struct", (pair, (3,)), records, chunks=(4,))
        create(f, "strings", ("S4", (2,)), np.array([[b"ab", b"cdef"], [b"", b"xyz"], [b"q", b"rs"]], "S4"))
        # Refused: the strings of an array of variable-length strings live in the global heap.
        f.create_dataset("vlen_strings", shape=(2,), dtype=np.dtype((h5py.string_dtype(), (2,))))


def array_atoms(path):
    """PyTables arrays of array atoms (HDF5 array datatypes), as PyTables' own test files hold them."""
    import tables

    with tables.open_file(str(path), "w") as f:
        # Chunks 0 and 2 never written: they read as the atom's default, -9 in every position.
        sparse = f.create_carray("/", "sparse", tables.Int32Atom(shape=(2,), dflt=[-9, -9]), shape=(12,),
                                 chunkshape=(4,))
        sparse[4:8] = np.arange(8).reshape(4, 2)
        md = f.create_earray("/", "mdatom", tables.Float64Atom(shape=(3,)), (0, 5),
                             filters=tables.Filters(complevel=1, complib="zlib", shuffle=True))
        md.append(np.arange(105, dtype="f8").reshape(7, 5, 3) / 4)


def booleans(path):
    import tables

    class Row(tables.IsDescription):
        ok = tables.BoolCol(pos=0)
        value = tables.Float64Col(pos=1)

    with tables.open_file(str(path), "w") as f:
        flags = f.create_array("/", "flags", np.arange(10) % 3 == 0)
        flags.attrs.checked = np.bool_(True)
        table = f.create_table("/", "tbl", Row, filters=tables.Filters(complevel=1, complib="zlib"), chunkshape=(4,))
        for i in range(9):
            table.row["ok"] = i % 2 == 0
            table.row["value"] = i / 8
            table.row.append()
        table.flush()


def committed(path):
    with h5py.File(path, "w") as f:
        f["mytype"] = np.dtype("<i2")
        f["comp_t"] = np.dtype([("a", "<i4"), ("b", "<f8")])
        f["enum_t"] = h5py.enum_dtype({"RED": 0, "GREEN": 1, "BLUE": 2}, basetype="u1")
        types = f.create_group("types")
        types["f4be"] = np.dtype(">f4")
        f.attrs.create("a", [1, 2, 3], dtype=f["mytype"])
        d = f.create_dataset("d", data=np.arange(6).reshape(2, 3), dtype=f["mytype"])
        d.attrs.create("scale", 2.5, dtype=types["f4be"])
        f.create_dataset("c", data=np.array([(1, 2.0), (3, 4.0)], dtype=f["comp_t"].dtype), dtype=f["comp_t"])
        f.create_dataset("e", data=np.array([0, 2, 1], dtype="u1"), dtype=f["enum_t"], chunks=(2,))
        g = f.create_dataset("g", data=np.linspace(0, 1, 5), dtype=types["f4be"], chunks=(2,), compression="gzip")
        g.attrs.create("e", [2, 1], dtype=f["enum_t"])
        g.attrs.create("c", np.array((5, 6.0), dtype=f["comp_t"].dtype), dtype=f["comp_t"])
        types.attrs.create("levels", [10, 20], dtype=f["mytype"])


def committed_dense(path):
    # The 1.8 format's newest versions (dense attribute storage), which libhdf5 1.10 (the tests' oracle) reads.
    with h5py.File(path, "w", libver=("v108", "v110")) as f:
        grp = f.create_group("types")
        grp["comp_t"] = np.dtype([("a", "<i4"), ("b", "<f8")])
        f["enum_t"] = h5py.enum_dtype({"LOW": -1, "HIGH": 1}, basetype="i1")
        comp = grp["comp_t"]
        f.create_dataset("c", data=np.array([(i, i / 2) for i in range(5)], dtype=comp.dtype), dtype=comp)
        e = f.create_dataset("e", data=np.array([1, -1, 1, 1], dtype="i1"), dtype=f["enum_t"], chunks=(2,))
        for i in range(12):
            e.attrs.create(f"c{i:02}", np.array((i, i * 1.5), dtype=comp.dtype), dtype=comp)
        e.attrs.create("e", [-1, 1, 1], dtype=f["enum_t"])


def sohm_fcpl():
    """A file creation property list sharing every shareable message of any size in one index."""
    import ctypes
    import glob
    import os

    libs = os.path.join(os.path.dirname(h5py.__file__), os.pardir, "h5py.libs", "libhdf5-*.so*")
    lib = ctypes.CDLL(glob.glob(libs)[0])
    lib.H5Pset_shared_mesg_nindexes.argtypes = [ctypes.c_int64, ctypes.c_uint]
    lib.H5Pset_shared_mesg_index.argtypes = [ctypes.c_int64, ctypes.c_uint, ctypes.c_uint, ctypes.c_uint]
    fcpl = h5py.h5p.create(h5py.h5p.FILE_CREATE)
    # H5O_SHMESG_SDSPACE_FLAG | DTYPE | FILL | PLINE | ATTR
    every = 0x0002 | 0x0008 | 0x0020 | 0x0800 | 0x1000
    assert lib.H5Pset_shared_mesg_nindexes(fcpl.id, 1) >= 0
    assert lib.H5Pset_shared_mesg_index(fcpl.id, 0, every, 0) >= 0
    return fcpl


def sohm(path):
    fapl = h5py.h5p.create(h5py.h5p.FILE_ACCESS)
    fapl.set_libver_bounds(h5py.h5f.LIBVER_V18, h5py.h5f.LIBVER_LATEST)
    fid = h5py.h5f.create(str(path).encode(), h5py.h5f.ACC_TRUNC, fcpl=sohm_fcpl(), fapl=fapl)
    with h5py.File(fid) as f:
        for i in range(3):
            d = f.create_dataset(f"v{i}", data=np.arange(12, dtype="<f4").reshape(3, 4) + i, chunks=(2, 2),
                                 compression="gzip")
            d.attrs["units"] = "K"
            d.attrs["scale"] = np.array([1.5, 2.5], dtype="<f8")
            d.attrs["flag"] = np.int16(i)
        f.attrs["title"] = "shared messages"
        f.attrs["levels"] = np.arange(4, dtype="<i4")
        many = f.create_group("many")
        for i in range(60):
            d = many.create_dataset(f"d{i:02}", data=np.arange(i + 1, dtype="<i2"))
            d.attrs.create("counts", np.arange(i + 2, dtype="<u1"))


def dimension_lists(path):
    refs = h5py.vlen_dtype(h5py.ref_dtype)

    def attach(dataset, entries):
        value = np.empty(len(entries), dtype=object)
        for i, entry in enumerate(entries):
            value[i] = np.array(entry, dtype=h5py.ref_dtype)
        dataset.attrs.create("DIMENSION_LIST", value, dtype=refs)

    with h5py.File(path, "w") as f:
        x = f.create_dataset("x", data=np.arange(3, dtype="f4"))
        x.make_scale("x")
        y = f.create_dataset("y", data=np.arange(4, dtype="f4"))
        y.make_scale("y")
        plain = f.create_dataset("plain", data=np.arange(5, dtype="i4"))
        values = np.arange(12, dtype="f4").reshape(3, 4)
        attach(f.create_dataset("short", data=values), [[x.ref]])
        attach(f.create_dataset("empty_entry", data=values), [[x.ref], []])
        attach(f.create_dataset("not_a_scale", data=values), [[x.ref], [plain.ref]])
        attach(f.create_dataset("long", data=values), [[x.ref], [y.ref], [x.ref]])
        attach(f.create_dataset("odd", data=np.arange(35, dtype="i2").reshape(7, 5)), [[], [plain.ref]])


def scales(path):
    with h5py.File(path, "w") as f:
        x = f.create_group("g").create_dataset("x", data=np.arange(3, dtype="f4"))
        x.make_scale("x")
        f["xs"] = h5py.SoftLink("/g/x")
        f.create_dataset("v", data=np.arange(3, dtype="f4")).dims[0].attach_scale(x)
        lon = f.create_dataset("lon", data=np.arange(4, dtype="f4"))
        lon.make_scale("longitude (degrees east)")
        f.create_dataset("w", data=np.ones((4, 2), dtype="i2")).dims[0].attach_scale(lon)
        y = f.create_dataset("y", data=np.arange(2, dtype="f4"))
        y.make_scale("")
        f["w"].dims[1].attach_scale(y)


def ncproperties(path):
    import netCDF4

    with netCDF4.Dataset(path, "w") as f:
        f.createDimension("x", 3)
        v = f.createVariable("v", "f4", ("x",))
        v[:] = [1.0, 2.0, 3.0]
        f.setncattr("_NCPROPERTIES", "a user attribute, not libnetcdf's")
        v.setncattr("_NCPROPERTIES", "on a variable too")


def attribute_types(path):
    with h5py.File(path, "w") as f:
        d = f.create_dataset("d", data=np.arange(4, dtype="i4"))
        seqs = np.empty(3, dtype=object)
        seqs[:] = [np.array([1, -2, 3], dtype="i4"), np.array([], dtype="i4"), np.array([7], dtype="i4")]
        d.attrs.create("seq", seqs, dtype=h5py.vlen_dtype(np.dtype("i4")))
        floats = np.empty(2, dtype=object)
        floats[:] = [np.array([1.5, np.nan]), np.array([-0.25])]
        d.attrs.create("seq_f8", floats, dtype=h5py.vlen_dtype(np.dtype("f8")))
        d.attrs.create("grid", np.arange(12, dtype="<i2").reshape(2, 2, 3) - 5, dtype=np.dtype(("<i2", (2, 3))))
        d.attrs.create("quad", np.arange(4, dtype="u1") + 250, dtype=np.dtype(("u1", (4,))))
        d.attrs.create("blob", np.array([b"\x00\x01\x02\x03", b"\xff\xfe\x00\xfc"], dtype="V4"))
        d.attrs.create("one_blob", np.void(b"\x80abc"))
        d.attrs.create("latin", np.bytes_(b"caf\xe9"))
        d.attrs.create("latin_vlen", [b"na\xefve", b"d\xe9j\xe0 vu"], dtype=h5py.string_dtype("ascii"))
        d.attrs["plain"] = "text stays text"
        root = np.empty(2, dtype=object)
        root[:] = [np.array([10, 20], dtype="i4"), np.array([30], dtype="i4")]
        f.attrs.create("seq", root, dtype=h5py.vlen_dtype(np.dtype("i4")))
        f.attrs.create("grid", np.arange(6, dtype="<i2").reshape(2, 3), dtype=np.dtype(("<i2", (3,))))
        f.attrs.create("blob", np.void(b"\x01\x02"))


def blosc(path):
    import hdf5plugin

    rng = np.random.default_rng(26)
    smooth = lambda n, dtype: (np.sin(np.arange(n) / 17.0) * 1000).astype(dtype)  # noqa: E731
    shuffles = {"noshuffle": hdf5plugin.Blosc.NOSHUFFLE, "shuffle": hdf5plugin.Blosc.SHUFFLE,
                "bitshuffle": hdf5plugin.Blosc.BITSHUFFLE}
    with h5py.File(path, "w") as f:
        for cname in ("blosclz", "lz4", "lz4hc", "zlib", "zstd"):
            for sname, shuffle in shuffles.items():
                for dtype in ("u1", "<i2", ">f4", "<f8"):
                    data = smooth(3000, dtype).reshape(60, 50)
                    f.create_dataset(f"{cname}_{sname}_{np.dtype(dtype).str[1:]}", data=data, chunks=(32, 32),
                                     **hdf5plugin.Blosc(cname=cname, clevel=5, shuffle=shuffle))
        # Chunks of 512 KiB: several blosc blocks each.
        f.create_dataset("big_chunks", data=smooth(400_000, "<f8").reshape(400, 1000), chunks=(100, 1000),
                         **hdf5plugin.Blosc(cname="lz4", clevel=9, shuffle=hdf5plugin.Blosc.SHUFFLE))
        # Random bytes do not compress: blosc stores them as they are (memcpy'd frames).
        f.create_dataset("incompressible", data=rng.integers(0, 2**63, 5000, dtype="<i8"), chunks=(1200,),
                         **hdf5plugin.Blosc(cname="blosclz", clevel=1, shuffle=hdf5plugin.Blosc.NOSHUFFLE))
        sparse = f.create_dataset("sparse", shape=(40, 40), dtype="<i4", chunks=(16, 16), fillvalue=-7,
                                  **hdf5plugin.Blosc(cname="zstd", clevel=3, shuffle=hdf5plugin.Blosc.BITSHUFFLE))
        sparse[:16, 16:] = np.arange(16 * 24, dtype="<i4").reshape(16, 24)


def main():
    out = pathlib.Path(sys.argv[1])
    if sys.argv[2:] == ["blosc"]:
        blosc(out / "blosc.h5")
        return
    references(out / "references.h5")
    null(out / "null.h5")
    times(out / "times.h5")
    ncproperties(out / "ncproperties.nc")
    bitfields(out / "bitfields.h5")
    booleans(out / "booleans.h5")
    arrays(out / "arrays.h5")
    array_atoms(out / "array_atoms.h5")
    committed(out / "committed.h5")
    committed_dense(out / "committed_dense.h5")
    sohm(out / "sohm.h5")
    dimension_lists(out / "dimension_lists.h5")
    scales(out / "scales.h5")
    attribute_types(out / "attribute_types.h5")


if __name__ == "__main__":
    main()
