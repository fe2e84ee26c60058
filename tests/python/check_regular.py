"""Regular-copy check: zarr-python (and icechunk-python for a repository) and xarray read a regular
copy `vzarr materialize --chunks` wrote, and every value equals netCDF4's reads of the files.

    check_regular.py (--zarr DIR | --repo REPO) --chunks tas=90,4,5 [--sharded tas]
                     [--changed tas=4/0/0,5/0/0] --concat time SOURCE.nc...

Opens a Zarr directory with zarr-python's LocalStore, or an Icechunk repository (no virtual chunk
containers: a regular copy owns its chunks) through a read-only session of `main`. Checks every
array bit for bit against netCDF4's raw reads of the sources (check_interop.py), that the grid is
zarr-python's regular grid of the chunk shape given (`--chunks NAME=N,N,..`, inner chunks of a sharded
array), and that the arrays named by `--sharded` use the sharding codec.

--changed NAME=C/C/C,.. (repeatable): the repository's last commit, against its parent, changed exactly
these chunks of these arrays (and no other array's chunks): `vzarr materialize --update` rewrites only what an append
touched.

Prints one line per check and a closing "N passed, M failed" line; exits 1 when any check failed.
"""

import argparse
import sys

import netCDF4
import numpy as np
import xarray as xr
import zarr

from check_interop import check_xarray, check_zarr_group
from results import Results


def lengths(text):
    name, values = text.split("=", 1)
    return name, values


def check_chunks(results, group, name, expected):
    def one():
        array = group[name]
        if array.chunks != expected:
            raise AssertionError(f"{name}: chunks {array.chunks}, expected {expected}")
        return f"{name}: chunks {array.chunks}, shards {array.shards}"

    results.check(f"regular chunks of {name}", one)


def check_changed(results, repo, changed):
    def one():
        ancestry = list(repo.ancestry(branch="main"))
        diff = repo.diff(from_snapshot_id=ancestry[1].id, to_snapshot_id=ancestry[0].id)
        got = {path.lstrip("/"): sorted(tuple(c) for c in coords) for path, coords in diff.updated_chunks.items()}
        got = {k: v for k, v in got.items() if v}
        if got != changed:
            raise AssertionError(f"changed chunks {got}, expected {changed}")
        return f"{got}"

    results.check("the last commit changed only the touched chunks", one)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--zarr", help="a Zarr v3 directory store")
    where.add_argument("--repo", help="an Icechunk repository (a local directory)")
    parser.add_argument("--chunks", action="append", default=[], help="NAME=N,N,.. the expected chunk shape")
    parser.add_argument("--sharded", action="append", default=[], help="an array expected to be sharded")
    parser.add_argument("--changed", action="append", default=[], help="NAME=C/C/C,.. chunks the last commit changed")
    parser.add_argument("--concat", default="time")
    parser.add_argument("sources", nargs="+")
    args = parser.parse_args()
    print(f"zarr {zarr.__version__}, xarray {xr.__version__}, netCDF4 {netCDF4.__version__}, numpy {np.__version__}")
    results = Results()
    repo = None
    if args.repo:
        import icechunk

        print(f"icechunk {icechunk.__version__}")
        repo = icechunk.Repository.open(icechunk.local_filesystem_storage(args.repo))
        store = repo.readonly_session("main").store
        label = "icechunk"
    else:
        store = zarr.storage.LocalStore(args.zarr, read_only=True)
        label = "zarr"
    group = zarr.open_group(store, mode="r", zarr_format=3)
    names = check_zarr_group(results, label, group, args.sources, args.concat, expect_sharded=tuple(args.sharded))
    check_xarray(results, label, store, names, args.sources, args.concat)
    for spec in args.chunks:
        name, values = lengths(spec)
        check_chunks(results, group, name, tuple(int(v) for v in values.split(",")))
    if args.changed:
        if repo is None:
            parser.error("--changed needs --repo")
        changed = {}
        for spec in args.changed:
            name, values = lengths(spec)
            changed[name] = sorted(tuple(int(c) for c in v.split("/")) for v in values.split(","))
        check_changed(results, repo, changed)
    sys.exit(0 if results.summary() else 1)


if __name__ == "__main__":
    main()
