"""Icechunk check: icechunk-python + zarr-python + xarray read a repository vzarr wrote, and every value
equals netCDF4's.

    check_icechunk.py --repo REPO [--branch main] [--snapshots N] [--stale] --concat time SOURCE.nc...

Opens the repository as docs/how-to/icechunk.md documents it: the virtual chunk containers from its config, each
authorized for local-file access; `zarr.open_group(session.store)` and
`xr.open_zarr(session.store, zarr_format=3, consolidated=False)` on a read-only session of the branch.
Every array is compared bit for bit with netCDF4's raw reads of the sources (concatenated along the
concatenation dimension; others equal the first file's), as check_interop.py does.

--snapshots N: the branch's history holds exactly N snapshots after the initial one.
--stale: afterwards, sets the first source's modification time one hour later and checks that
Icechunk refuses to read its chunks (the references carry the scan's last-modified time); the time
is restored before exiting.

Prints one line per check and a closing "N passed, M failed" line; exits 1 when any check failed.
"""

import argparse
import os
import sys

import icechunk
import netCDF4
import numpy as np
import xarray as xr
import zarr

from check_interop import check_xarray, check_zarr_group, expected_values, same_bits
from results import Results


def open_repository(path):
    storage = icechunk.local_filesystem_storage(path)
    config = icechunk.Repository.fetch_config(storage)
    prefixes = [c.url_prefix for c in config.virtual_chunk_containers.values()]
    access = {p: icechunk.credentials.LocalFileSystemAccess for p in prefixes}
    return icechunk.Repository.open(storage, authorize_virtual_chunk_access=access), prefixes


def check_stale(results, repo, branch, sources, concat):
    """Touch the first source: reading a variable with chunks in it must fail."""
    source = sources[0]
    before = os.stat(source)
    name = "tas"
    try:
        os.utime(source, ns=(before.st_atime_ns, before.st_mtime_ns + 3600 * 10**9))

        def refused():
            group = zarr.open_group(repo.readonly_session(branch).store, mode="r", zarr_format=3)
            try:
                group[name][...]
            except Exception as e:  # noqa: BLE001 - any read error is the refusal
                return f"refused: {type(e).__name__}: {str(e).splitlines()[0][:120]}"
            raise AssertionError(f"{name} read without error from a source modified after the scan")

        results.check("icechunk refuses a source modified after the scan", refused)
    finally:
        os.utime(source, ns=(before.st_atime_ns, before.st_mtime_ns))

    def readable_again():
        group = zarr.open_group(repo.readonly_session(branch).store, mode="r", zarr_format=3)
        same_bits(group[name][...], expected_values(sources, name, concat), f"icechunk:{name} after restoring")

    results.check("icechunk reads again once the modification time is restored", readable_again)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repo", required=True, help="the Icechunk repository (a local directory)")
    parser.add_argument("--branch", default="main")
    parser.add_argument("--snapshots", type=int, help="expected snapshots on the branch after the initial one")
    parser.add_argument("--stale", action="store_true", help="also check that a touched source is refused")
    parser.add_argument("--concat", default="time", help="concatenation dimension (default: time)")
    parser.add_argument("sources", nargs="+", help="source files, in concatenation order")
    args = parser.parse_args()

    print(f"icechunk {icechunk.__version__}, zarr {zarr.__version__}, xarray {xr.__version__}, "
          f"netCDF4 {netCDF4.__version__}, numpy {np.__version__}")
    zarr.config.set({"array.rectilinear_chunks": True})
    results = Results()
    repo, prefixes = open_repository(args.repo)

    def containers():
        if not prefixes:
            raise AssertionError("the repository config has no virtual chunk container")
        return " ".join(prefixes)

    results.check("icechunk virtual chunk containers", containers)
    if args.snapshots is not None:
        def history():
            messages = [s.message for s in repo.ancestry(branch=args.branch)]
            if len(messages) != args.snapshots + 1:
                raise AssertionError(f"{len(messages)} snapshots on {args.branch}: {messages}")
            return f"{messages}"

        results.check("icechunk history", history)
    store = repo.readonly_session(args.branch).store
    group = zarr.open_group(store, mode="r", zarr_format=3)
    names = check_zarr_group(results, "icechunk", group, args.sources, args.concat)
    check_xarray(results, "icechunk", store, names, args.sources, args.concat)
    if args.stale:
        check_stale(results, repo, args.branch, args.sources, args.concat)
    sys.exit(0 if results.summary() else 1)


if __name__ == "__main__":
    main()
