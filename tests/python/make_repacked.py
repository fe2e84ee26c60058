"""Writes the szip and LZO fixtures of tests/native_hdf5/szip.rs and lzo.rs (issue 26) into DIR.

    make_repacked.py DIR szip|lzo

h5py writes the values uncompressed (source.h5): 1-, 2-, 4- and 8-byte integers and floats of both
byte orders, chunks with partial edges in 1, 2 and 3 dimensions, a scanline shorter than a block,
incompressible noise (chunks an optional filter cannot shrink are stored without it), a constant
array (szip's zero-block runs, LZO's long matches) and a never-written chunk. Debian's h5repack
(hdf5-tools; libhdf5 with libaec) then compresses every dataset:

    szip_nn8.h5            SZIP=8,NN     nearest-neighbour preprocessing, 8-pixel blocks
    szip_ec32.h5           SZIP=32,EC    entropy coding only, 32-pixel blocks
    szip_shuffle_nn16.h5   SHUF, SZIP=16,NN   shuffle before szip
    lzo.h5                 UD=305 (PyTables' LZO, optional, cd_values 1, 20, 0)
    lzo_shuffle_fletcher32.h5   SHUF, UD=305, FLET   PyTables' pipeline with shuffle and fletcher32

LZO needs the test plugin (tests/hdf5_plugins/build.sh) on HDF5_PLUGIN_PATH. h5py writes the LZF
fixtures itself (its bundled filter 32000, optional: incompressible chunks are stored without it),
the same values and chunks as source.h5:

    lzf.h5                     compression="lzf"
    lzf_shuffle_fletcher32.h5  shuffle=True, compression="lzf", fletcher32=True

Prints the paths. Fails (exit 1, the reason on stderr) without h5repack for szip and LZO.
"""

import pathlib
import shutil
import subprocess
import sys

import h5py
import numpy as np

TYPES = ["|i1", "|u1", "<i2", ">i2", "<u2", ">u2", "<i4", ">i4", "<u4", "<f4", ">f4", "<i8", ">u8", "<f8", ">f8"]
LZO = "UD=305,1,3,1,20,0"
REPACKS = {
    "szip": {
        "szip_nn8.h5": ["-f", "SZIP=8,NN"],
        "szip_ec32.h5": ["-f", "SZIP=32,EC"],
        "szip_shuffle_nn16.h5": ["-f", "SHUF", "-f", "SZIP=16,NN"],
    },
    "lzo": {
        "lzo.h5": ["-f", LZO],
        "lzo_shuffle_fletcher32.h5": ["-f", "SHUF", "-f", LZO, "-f", "FLET"],
    },
}
#: The fixtures h5py writes itself: file name -> the filter options of every dataset.
WRITES = {
    "lzf": {
        "lzf.h5": {"compression": "lzf"},
        "lzf_shuffle_fletcher32.h5": {"shuffle": True, "compression": "lzf", "fletcher32": True},
    },
}


def values(shape, dtype, rng):
    """Smooth values with some noise, in the type's range."""
    dtype = np.dtype(dtype)
    grid = np.indices(shape).sum(axis=0).astype(np.float64)
    smooth = np.sin(grid / 7.0) * 0.4 + 0.5 + rng.normal(0, 0.02, shape)
    if dtype.kind == "f":
        return (smooth * 1000 - 300).astype(dtype)
    info = np.iinfo(dtype)
    span = min(float(info.max) - float(info.min), 2.0**40)
    low = max(float(info.min), -(2.0**39))
    return np.clip(smooth * span + low, info.min, info.max).astype(dtype)


def source(path, **filters):
    """The datasets, each written with h5py's `filters` (none: uncompressed)."""
    rng = np.random.default_rng(26)
    with h5py.File(path, "w") as f:
        for t in TYPES:
            name = t.replace("|", "").replace("<", "le_").replace(">", "be_")
            f.create_dataset(f"{name}_2d", data=values((37, 45), t, rng), chunks=(16, 20), **filters)
        f.create_dataset("f4_3d", data=values((5, 33, 17), "<f4", rng), chunks=(2, 16, 16), **filters)
        f.create_dataset("i2_1d", data=values((1000,), "<i2", rng), chunks=(300,), **filters)
        # A scanline (the chunk's last dimension) shorter than a block.
        f.create_dataset("narrow_i4", data=values((40, 3), "<i4", rng), chunks=(20, 3), **filters)
        f.create_dataset("noise_u2", data=rng.integers(0, 2**16, (64, 64), dtype="<u2"), chunks=(32, 32), **filters)
        f.create_dataset("const_i4", data=np.full((50, 50), 7, dtype="<i4"), chunks=(25, 50), **filters)
        sparse = f.create_dataset("sparse_f8", shape=(40, 40), dtype="<f8", chunks=(20, 20), fillvalue=-1.5, **filters)
        sparse[:20, :] = values((20, 40), "<f8", rng)


def main():
    out, kind = pathlib.Path(sys.argv[1]), sys.argv[2]
    if kind in WRITES:
        for name, filters in WRITES[kind].items():
            source(out / name, **filters)
            print(out / name)
        return
    repack = shutil.which("h5repack")
    if repack is None:
        sys.exit("make_repacked.py: no h5repack (Debian hdf5-tools)")
    src = out / "source.h5"
    source(src)
    for name, args in REPACKS[kind].items():
        subprocess.run([repack, *args, str(src), str(out / name)], check=True)
        print(out / name)


if __name__ == "__main__":
    main()
