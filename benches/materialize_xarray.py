"""xarray's side of benches/materialize.rs: the regular copy of the monthly archive made with xarray and
dask, and the check of every copy against netCDF4's read of the files.

    python materialize_xarray.py mfdataset CHUNKS OUT FILE...   xr.open_mfdataset(files).chunk().to_zarr()
    python materialize_xarray.py engine CHUNKS OUT STORE        xr.open_dataset(store, engine="vzarr")...
    python materialize_xarray.py check CHUNKS OUT,OUT,... FILE...

CHUNKS is `time=90,lat=45,lon=90`. The copies print their wall and CPU seconds (open, rechunk and
write, as a user times the cell; the interpreter's start-up and imports not counted) on the last line; `check` prints one
line per copy and exits non-zero when a copy's `tas` differs from the files or is not chunked CHUNKS.
"""

import sys
import time

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


def check(chunks: dict[str, int], outs: list[str], files: list[str]) -> None:
    expected = []
    for f in files:
        with netCDF4.Dataset(f) as ds:
            ds.set_auto_maskandscale(False)
            expected.append(ds["tas"][:])
    expected = np.concatenate(expected)
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
    elif mode == "check":
        check(chunks, out.split(","), rest)
    else:
        sys.exit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
