"""xarray's side of benches/materialize.rs: the regular copy of the monthly archive made with xarray and
dask, and the check of every copy against netCDF4's read of the files.

    python materialize_xarray.py mfdataset CHUNKS OUT FILE...   xr.open_mfdataset(files).chunk().to_zarr()
    python materialize_xarray.py engine CHUNKS OUT STORE        xr.open_dataset(store, engine="vzarr")...
    python materialize_xarray.py floor CHUNKS - FILE...           xarray's own codec floor
    python materialize_xarray.py check CHUNKS OUT,OUT,... FILE...

CHUNKS is `time=90,lat=45,lon=90`. The copies print their wall and CPU seconds (open, rechunk and
write, as a user times the cell; the interpreter's start-up and imports not counted) on the last line; `check` prints one
line per copy and exits non-zero when a copy's `tas` differs from the files or is not chunked CHUNKS.

`floor` times the codec work of xarray's copy with the libraries xarray's copy uses, as
benches/common/floor.rs does for vzarr's: the files' stored chunks read first (h5py's
`read_direct_chunk`, untimed), then each inflated with the system zlib (the one libhdf5 links;
Python's `zlib` module), unshuffled (numcodecs) and placed in a padded array, and each target chunk
cut and encoded with numcodecs' zstd (zarr-python's default: level 0, libzstd's default 3), on a
pool of two threads (the GIL is released inside zlib, numcodecs and NumPy's copies). One copy more
than vzarr's floor (into the whole array, then out of it); the best of two runs.
"""

import sys
import time
import zlib
from concurrent.futures import ThreadPoolExecutor

import netCDF4
import numpy as np
import xarray as xr
import zarr


def chunks_of(spec: str) -> dict[str, int]:
    return {name: int(n) for name, n in (part.split("=") for part in spec.split(","))}


def write(ds: xr.Dataset, chunks: dict[str, int], out: str) -> None:
    """`ds.chunk(chunks).to_zarr(out)`, the source's chunk encoding dropped first (as xarray's error
    asks: kept, it would name the files' chunks, which overlap the new dask chunks)."""
    for var in ds.variables.values():
        var.encoding.pop("chunks", None)
        var.encoding.pop("preferred_chunks", None)
    ds.chunk(chunks).to_zarr(out, mode="w", zarr_format=3, consolidated=False)


def timed(run) -> str:
    """`wall cpu`: the seconds `run()` takes, and the CPU seconds of every thread of this process."""
    start, cpu = time.perf_counter(), time.process_time()
    run()
    return f"{time.perf_counter() - start} {time.process_time() - cpu}"


def mfdataset(chunks: dict[str, int], out: str, files: list[str]) -> str:
    return timed(lambda: write(xr.open_mfdataset(files, combine="by_coords"), chunks, out))


def engine(chunks: dict[str, int], out: str, store: str) -> str:
    return timed(lambda: write(xr.open_dataset(store, engine="vzarr", chunks={}), chunks, out))


def stored_chunks(files: list[str]) -> tuple[list, tuple[int, ...]]:
    """Every stored chunk of `tas` in the files: (origin in the whole array, chunk shape, bytes), and
    the array's shape."""
    import h5py

    stored, first = [], 0
    for f in files:
        with h5py.File(f, "r") as h:
            tas = h["tas"]
            for i in range(tas.id.get_num_chunks()):
                at = tas.id.get_chunk_info(i).chunk_offset
                origin = (first + at[0], *at[1:])
                stored.append((origin, tas.chunks, tas.id.read_direct_chunk(at)[1]))
            first += tas.shape[0]
            rest = tas.shape[1:]
    return stored, (first, *rest)


def floor(chunks: dict[str, int], files: list[str]) -> str:
    import numcodecs

    stored, shape = stored_chunks(files)
    target = (chunks["time"], chunks["lat"], chunks["lon"])
    padded = tuple(-(-n // c) * c for n, c in zip(shape, target))
    shuffle, zstd = numcodecs.Shuffle(elementsize=4), numcodecs.Zstd(level=0)

    whole = np.full(padded, np.nan, dtype="<f4")

    def run() -> None:
        whole.fill(np.nan)

        def decode(item) -> None:
            (t, y, x), edges, data = item
            block = np.frombuffer(shuffle.decode(zlib.decompress(data)), dtype="<f4").reshape(edges)
            n = min(edges[0], shape[0] - t)
            whole[t : t + n, y : y + edges[1], x : x + edges[2]] = block[:n]

        def encode(origin) -> int:
            t, y, x = origin
            cut = np.ascontiguousarray(whole[t : t + target[0], y : y + target[1], x : x + target[2]])
            return len(zstd.encode(cut))

        origins = [(t, y, x) for t in range(0, padded[0], target[0]) for y in range(0, padded[1], target[1])
                   for x in range(0, padded[2], target[2])]
        with ThreadPoolExecutor(2) as pool:
            list(pool.map(decode, stored))
            list(pool.map(encode, origins))

    runs = [timed(run) for _ in range(2)]
    if not np.array_equal(whole[: shape[0]], read_files(files)):
        sys.exit("the floor decoded other values than netCDF4 reads")
    return min(runs, key=lambda r: float(r.split()[0]))


def read_files(files: list[str]) -> np.ndarray:
    """`tas` of the files as netCDF4 reads it, concatenated along time."""
    values = []
    for f in files:
        with netCDF4.Dataset(f) as ds:
            ds.set_auto_maskandscale(False)
            values.append(ds["tas"][:])
    return np.concatenate(values)


def check(chunks: dict[str, int], outs: list[str], files: list[str]) -> None:
    expected = read_files(files)
    shape = [chunks["time"], chunks["lat"], chunks["lon"]]
    for out in outs:
        tas = zarr.open_group(out, mode="r")["tas"]
        got = tas[...]
        if got.dtype != expected.dtype or not np.array_equal(got, expected):
            sys.exit(f"{out}: tas differs from the files (netCDF4)")
        if list(tas.chunks) != shape:
            sys.exit(f"{out}: tas is chunked {tas.chunks}, not {shape}")
        print(f"  {out}: tas {got.shape} in chunks {tuple(tas.chunks)} equals the files (netCDF4)")


def main() -> None:
    mode, spec, out = sys.argv[1:4]
    rest = sys.argv[4:]
    chunks = chunks_of(spec)
    if mode == "mfdataset":
        print(mfdataset(chunks, out, rest))
    elif mode == "engine":
        print(engine(chunks, out, rest[0]))
    elif mode == "floor":
        print(floor(chunks, rest))
    elif mode == "check":
        check(chunks, out.split(","), rest)
    else:
        sys.exit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
