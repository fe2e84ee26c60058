"""Writes the blosc2 fixtures of tests/native_hdf5/blosc2.rs (HDF5 filter 32026) into DIR.

    make_blosc2.py DIR

DIR/blosc2.h5 (h5py + hdf5plugin's Blosc2 filter, the code of PyTables' hdf5-blosc2): for every
compressor (blosclz, lz4, lz4hc, zlib, zstd), filter (none, byte shuffle, bit shuffle) and a 1-, 2-,
4- or 8-byte type (both byte orders), a 1-d dataset (chunks are super-chunks of one Blosc2 chunk, the
last one partial) and a 2-d one (chunks are b2nd arrays; partial edge chunks); then 3-d and 4-d
datasets whose small block size (filter value 1) gives b2nd blocks that do not divide the chunk
(padding), chunks of several blocks and streams, incompressible noise (plain-copy chunks), constant
chunks (special chunks, runs), a dataset with a fill value and never-written chunks, one with
fletcher32 after blosc2, and one with fletcher32 before it (the filter then writes a plain super-chunk,
not a b2nd array: its input is no longer the chunk's size).

DIR/blosc2_tables.h5 (PyTables, complib "blosc2:<codec>"): CArrays of chosen chunk shapes (b2nd),
an EArray with bit shuffle and fletcher32 (after blosc2), and a Table (PyTables writes its chunks
itself, as contiguous super-chunks).

Prints the paths.
"""

import pathlib
import sys

import h5py
import hdf5plugin
import numpy as np
import tables
from make_repacked import values  # smooth values with noise in a type's range, as for szip and LZO

CODECS = ["blosclz", "lz4", "lz4hc", "zlib", "zstd"]
FILTERS = {"nofilter": hdf5plugin.Blosc2.NOFILTER, "shuffle": hdf5plugin.Blosc2.SHUFFLE,
           "bitshuffle": hdf5plugin.Blosc2.BITSHUFFLE}
TYPES = ["|i1", "<u2", ">i4", "<f4", "<f8", ">f8"]
# The compressor codes of hdf5plugin.Blosc2 (cd_values[6]).
CODES = {"blosclz": 0, "lz4": 1, "lz4hc": 2, "zlib": 4, "zstd": 5}


def blocked(blocksize, clevel, shuffle, codec):
    """The filter with an explicit block size in bytes (hdf5plugin.Blosc2 leaves it to the filter)."""
    return {"compression": 32026, "compression_opts": (0, blocksize, 0, 0, clevel, shuffle, CODES[codec])}


def h5py_file(path):
    rng = np.random.default_rng(32026)
    with h5py.File(path, "w") as f:
        for codec in CODECS:
            for fname, flt in FILTERS.items():
                for t in TYPES:
                    name = f"{codec}_{fname}_{np.dtype(t).str[1:]}{'be' if t[0] == '>' else ''}"
                    opts = hdf5plugin.Blosc2(cname=codec, clevel=5, filters=flt)
                    f.create_dataset(name + "_1d", data=values((1000,), t, rng), chunks=(300,), **opts)
                    f.create_dataset(name + "_2d", data=values((60, 50), t, rng), chunks=(32, 24), **opts)
        # b2nd blocks that do not divide the chunk (padding), several blocks per chunk.
        f.create_dataset("blocks_3d", data=values((23, 17, 11), "<f4", rng), chunks=(10, 7, 5),
                         **blocked(64, 5, hdf5plugin.Blosc2.SHUFFLE, "zstd"))
        f.create_dataset("blocks_4d", data=values((9, 8, 7, 6), "<i2", rng), chunks=(5, 3, 7, 4),
                         **blocked(32, 5, hdf5plugin.Blosc2.BITSHUFFLE, "lz4"))
        f.create_dataset("blocks_1d", data=values((5000,), "<i8", rng), chunks=(2000,),
                         **blocked(1000, 5, hdf5plugin.Blosc2.SHUFFLE, "blosclz"))
        # Blosc2's delta filter (code 3 in the shuffle slot), alone and (PyTables below) after a shuffle.
        f.create_dataset("delta_2d", data=values((40, 30), "<i4", rng), chunks=(16, 16),
                         **blocked(256, 5, 3, "zstd"))
        f.create_dataset("delta_1d", data=values((3000,), "<u2", rng), chunks=(1000,), **blocked(512, 5, 3, "lz4"))
        # Chunks of 800 KB: many blocks, each split in one stream per byte.
        f.create_dataset("big_chunks", data=values((400, 1000), "<f8", rng), chunks=(100, 1000),
                         **hdf5plugin.Blosc2(cname="lz4", clevel=9, filters=hdf5plugin.Blosc2.SHUFFLE))
        f.create_dataset("big_1d", data=values((300_000,), "<f4", rng), chunks=(250_000,),
                         **hdf5plugin.Blosc2(cname="zstd", clevel=1, filters=hdf5plugin.Blosc2.BITSHUFFLE))
        # Noise does not compress: plain-copy chunks.
        f.create_dataset("incompressible", data=rng.integers(0, 2**63, (80, 70), dtype="<i8"), chunks=(40, 40),
                         **hdf5plugin.Blosc2(cname="blosclz", clevel=1, filters=hdf5plugin.Blosc2.NOFILTER))
        f.create_dataset("incompressible_1d", data=rng.integers(0, 2**63, 5000, dtype="<i8"), chunks=(1200,),
                         **hdf5plugin.Blosc2(cname="lz4", clevel=1, filters=hdf5plugin.Blosc2.NOFILTER))
        # Constant chunks: zeros and a repeated value.
        f.create_dataset("zeros", data=np.zeros((50, 40), "<f8"), chunks=(20, 20),
                         **hdf5plugin.Blosc2(cname="zstd", clevel=5, filters=hdf5plugin.Blosc2.SHUFFLE))
        f.create_dataset("sevens_1d", data=np.full(3000, 7, "<i4"), chunks=(1000,),
                         **hdf5plugin.Blosc2(cname="blosclz", clevel=5, filters=hdf5plugin.Blosc2.NOFILTER))
        sparse = f.create_dataset("sparse", shape=(40, 40), dtype="<i4", chunks=(16, 16), fillvalue=-7,
                                  **hdf5plugin.Blosc2(cname="zstd", clevel=3, filters=hdf5plugin.Blosc2.BITSHUFFLE))
        sparse[:16, 16:] = np.arange(16 * 24, dtype="<i4").reshape(16, 24)
        before = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        before.set_chunk((16, 16))
        before.set_fletcher32()
        before.set_filter(32026, h5py.h5z.FLAG_OPTIONAL, (0, 0, 0, 0, 5, 1, CODES["zstd"]))
        space = h5py.h5s.create_simple((30, 30))
        h5py.h5d.create(f.id, b"fletcher32_before", h5py.h5t.IEEE_F32LE, space, dcpl=before)
        f["fletcher32_before"][...] = values((30, 30), "<f4", rng)
        f.create_dataset("fletcher32_after", data=values((30, 30), "<f4", rng), chunks=(16, 16), fletcher32=True,
                         **hdf5plugin.Blosc2(cname="lz4", clevel=5, filters=hdf5plugin.Blosc2.SHUFFLE))


def tables_file(path):
    rng = np.random.default_rng(305)
    with tables.open_file(str(path), "w") as f:
        for codec, shape, chunks, dtype in [("zstd", (50, 40), (16, 16), "<f8"), ("lz4", (31, 29, 5), (8, 8, 5), "<i4"),
                                            ("blosclz", (100, 10), (100, 10), "|u1")]:
            filters = tables.Filters(complib=f"blosc2:{codec}", complevel=5, shuffle=True)
            a = f.create_carray("/", f"carray_{codec}", obj=values(shape, dtype, rng), chunkshape=chunks,
                                filters=filters)
            assert a.chunkshape == chunks
        filters = tables.Filters(complib="blosc2:zlib", complevel=5, bitshuffle=True, fletcher32=True)
        e = f.create_earray("/", "earray_fletcher32", atom=tables.Float32Atom(), shape=(0, 20), filters=filters,
                            chunkshape=(16, 20))
        e.append(values((70, 20), "<f4", rng))
        filters = tables.Filters(complib="blosc2:zstd", complevel=5, shuffle=True)
        table = f.create_table("/", "table", {"x": tables.Int32Col(), "y": tables.Float64Col()}, filters=filters,
                               chunkshape=(100,))
        rows = np.zeros(1050, dtype=[("x", "<i4"), ("y", "<f8")])
        rows["x"] = np.arange(1050)
        rows["y"] = values((1050,), "<f8", rng)
        table.append(rows)


def main():
    out = pathlib.Path(sys.argv[1])
    h5py_file(out / "blosc2.h5")
    tables_file(out / "blosc2_tables.h5")
    print(out / "blosc2.h5")
    print(out / "blosc2_tables.h5")


if __name__ == "__main__":
    main()
