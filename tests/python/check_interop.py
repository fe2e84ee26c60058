"""Cross-implementation check: the Python stack reads vzarr output, and every value equals netCDF4's.

    check_interop.py --refs REFS.json --zarr MATERIALIZED_DIR --concat time SOURCE.nc...
    check_interop.py --refs REFS.json --zarr DIR --member member=variant_label SOURCE.nc...
    check_interop.py --zarr SHARDED_DIR --expect-sharded tas,time_bnds --concat time SOURCE.nc...
    check_interop.py --refs REFS.json --s3-endpoint http://127.0.0.1:PORT --concat time SOURCE.nc...

Opens
  1. the kerchunk reference JSON through fsspec's ReferenceFileSystem and zarr.storage.FsspecStore,
     with zarr-python's `array.rectilinear_chunks` on;
  2. the same store with xarray: xr.open_zarr(store, zarr_format=3, consolidated=False);
  3. the materialized Zarr v3 directory store with zarr.open_group (and xarray);
and compares every array, bit for bit, with netCDF4-python's raw reads (no masking, no scaling) of the
source files: arrays with the concatenation dimension are the files' values concatenated in the given
order, the others equal the first file's.

With --member DIM=ATTR (a whole archive scanned with `--concat DIM=attr:ATTR --concat time`, variables
in separate files): xarray must open DIM as a coordinate of strings, the distinct values of the global
attribute ATTR in natural order; every array equals netCDF4's reads of the files that hold it, grouped
by member (files of a member ordered by their first time value); arrays led by DIM stack the members.

With --s3-endpoint the references point into S3 (`s3://bucket/key`): fsspec reaches them through s3fs at
that endpoint (moto's test credentials), as a user opens vzarr's export of a scan of an S3 archive.

Prints one line per check and a closing "N passed, M failed" line; exits 1 when any check failed. Pinned environment: tests/python/setup.sh.
"""

import argparse
import re
import sys

import fsspec
import netCDF4
import numpy as np
import xarray as xr
import zarr
from zarr.storage import FsspecStore

from results import Results



def raw_netcdf(path, name):
    with netCDF4.Dataset(path) as ds:
        var = ds[name]
        var.set_auto_maskandscale(False)
        values = np.asarray(var[...])
        return values, list(var.dimensions)


def expected_values(sources, name, concat):
    first, dims = raw_netcdf(sources[0], name)
    if concat not in dims:
        return first
    parts = [first] + [raw_netcdf(p, name)[0] for p in sources[1:]]
    return np.concatenate(parts, axis=dims.index(concat))


def same_bits(ours, theirs, what):
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    if ours.shape != theirs.shape:
        raise AssertionError(f"{what}: shape {ours.shape} != netCDF4 {theirs.shape}")
    if ours.dtype.newbyteorder("=") != theirs.dtype.newbyteorder("="):
        raise AssertionError(f"{what}: dtype {ours.dtype} != netCDF4 {theirs.dtype}")
    a = np.ascontiguousarray(ours.astype(ours.dtype.newbyteorder("="))).reshape(-1)
    b = np.ascontiguousarray(theirs.astype(theirs.dtype.newbyteorder("="))).reshape(-1)
    if a.tobytes() != b.tobytes():
        bad = np.flatnonzero((a.view(np.uint8).reshape(a.size, -1) != b.view(np.uint8).reshape(b.size, -1)).any(axis=1))
        i = int(bad[0])
        raise AssertionError(f"{what}: {bad.size} elements differ, first at flat index {i}: {a[i]!r} vs netCDF4 {b[i]!r}")


def grid_name(array):
    grid = array.metadata.to_dict().get("chunk_grid", {})
    return grid.get("name", "?") if isinstance(grid, dict) else type(grid).__name__


def is_sharded(array):
    return any(isinstance(c, zarr.codecs.ShardingCodec) for c in array.metadata.codecs)


def check_zarr_group(results, label, group, sources, concat, expect_sharded=()):
    names = sorted(path for path, node in group.members(max_depth=None) if isinstance(node, zarr.Array))
    for name in names:
        def one(name=name):
            array = group[name]
            if name in expect_sharded and not is_sharded(array):
                raise AssertionError(f"{label}:{name}: zarr-python does not see a sharding_indexed codec")
            same_bits(array[...], expected_values(sources, name, concat), f"{label}:{name}")
            sharded = " sharded" if is_sharded(array) else ""
            return f"{array.shape} {array.dtype} grid={grid_name(array)}{sharded}"

        results.check(f"{label} zarr {name}", one)
    return names


def open_xarray(results, label, store):
    """xr.open_zarr exactly as docs/how-to/exports.md documents it (raw values, so bits can be compared)."""
    return xr.open_zarr(store, zarr_format=3, consolidated=False, mask_and_scale=False, decode_times=False)


def check_xarray(results, label, store, names, sources, concat):
    holder = {}

    def open_it():
        holder["ds"] = open_xarray(results, label, store)
        return f"{len(holder['ds'].variables)} variables"

    results.check(f"{label} xarray open", open_it)
    if "ds" not in holder:
        return
    ds = holder["ds"]
    for name in (n for n in names if "/" not in n):  # xarray opens one group: the root's variables
        def one(name=name):
            same_bits(ds[name].values, expected_values(sources, name, concat), f"{label}:xarray:{name}")

        results.check(f"{label} xarray {name}", one)


def natural_key(text):
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", text)]


def global_attribute(path, name):
    with netCDF4.Dataset(path) as ds:
        return str(ds.getncattr(name))


def first_time(path):
    with netCDF4.Dataset(path) as ds:
        return float(ds["time"][0])


def has_variable(path, name):
    with netCDF4.Dataset(path) as ds:
        return name in ds.variables


def archive_expected(sources, name, member_dim, attr, stacked):
    holders = [p for p in sources if has_variable(p, name)]
    by_member = {}
    for p in holders:
        by_member.setdefault(global_attribute(p, attr), []).append(p)
    members = sorted(by_member, key=natural_key)
    per_member = []
    for m in members:
        paths = sorted(by_member[m], key=first_time)
        # Files of different variables at the same time hold the same coordinates: take one.
        paths = [p for i, p in enumerate(paths) if i == 0 or first_time(p) != first_time(paths[i - 1])]
        per_member.append(expected_values(paths, name, "time"))
    return np.stack(per_member) if stacked else per_member[0]


def check_archive(results, label, store, sources, member_dim, attr):
    holder = {}

    def open_it():
        holder["ds"] = open_xarray(results, label, store)
        return f"{len(holder['ds'].variables)} variables"

    results.check(f"{label} xarray open", open_it)
    if "ds" not in holder:
        return
    ds = holder["ds"]

    def members():
        coord = ds.coords[member_dim]
        if coord.dtype.kind not in "UOT":
            raise AssertionError(f"{member_dim}: dtype {coord.dtype}, not strings")
        expected = sorted({global_attribute(p, attr) for p in sources}, key=natural_key)
        got = [str(v) for v in coord.values]
        if got != expected:
            raise AssertionError(f"{member_dim}: {got} != {expected}")
        return f"{got} ({coord.dtype})"

    results.check(f"{label} xarray {member_dim} is a coordinate of strings", members)
    for name in (n for n in ds.variables if n != member_dim):
        def one(name=name):
            stacked = ds[name].dims[:1] == (member_dim,)
            same_bits(ds[name].values, archive_expected(sources, name, member_dim, attr, stacked), f"{label}:xarray:{name}")
            return f"{ds[name].dims}"

        results.check(f"{label} xarray {name}", one)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--refs", help="kerchunk reference JSON written by vzarr export")
    parser.add_argument("--zarr", help="Zarr v3 directory store written by vzarr materialize")
    parser.add_argument("--expect-sharded", default="",
                        help="comma-separated arrays of --zarr that must be sharding_indexed arrays")
    parser.add_argument("--concat", default="time", help="concatenation dimension (default: time)")
    parser.add_argument("--member", help="DIM=ATTR: a whole archive with a new dimension keyed by ATTR")
    parser.add_argument("--s3-endpoint", help="the S3 endpoint the references' s3:// URLs live at")
    parser.add_argument("sources", nargs="+", help="source files, in concatenation order")
    args = parser.parse_args()
    remote = {}
    if args.s3_endpoint:
        remote = {"remote_protocol": "s3", "remote_options": {
            "endpoint_url": args.s3_endpoint, "key": "testing", "secret": "testing", "asynchronous": True,
            "client_kwargs": {"region_name": "us-east-1"}}}

    print(f"zarr {zarr.__version__}, xarray {xr.__version__}, fsspec {fsspec.__version__}, "
          f"netCDF4 {netCDF4.__version__}, numpy {np.__version__}")
    zarr.config.set({"array.rectilinear_chunks": True})
    results = Results()
    if args.member:
        dim, attr = args.member.split("=", 1)
        if args.refs:
            fs = fsspec.filesystem("reference", fo=args.refs, asynchronous=True, **remote)
            check_archive(results, "kerchunk", FsspecStore(fs, read_only=True, path=""), args.sources, dim, attr)
        if args.zarr:
            check_archive(results, "materialized", args.zarr, args.sources, dim, attr)
        sys.exit(0 if results.summary() else 1)
    if args.refs:
        fs = fsspec.filesystem("reference", fo=args.refs, asynchronous=True, **remote)
        store = FsspecStore(fs, read_only=True, path="")
        group = zarr.open_group(store, mode="r", zarr_format=3)
        names = check_zarr_group(results, "kerchunk", group, args.sources, args.concat)
        check_xarray(results, "kerchunk", store, names, args.sources, args.concat)
    if args.zarr:
        group = zarr.open_group(args.zarr, mode="r", zarr_format=3)
        expect = [n for n in args.expect_sharded.split(",") if n]
        names = check_zarr_group(results, "materialized", group, args.sources, args.concat, expect)

        def all_expected_present():
            missing = [n for n in expect if n not in names]
            if missing:
                raise AssertionError(f"--expect-sharded names arrays the store does not have: {missing}")

        results.check("materialized --expect-sharded arrays present", all_expected_present)
        check_xarray(results, "materialized", args.zarr, names, args.sources, args.concat)
    sys.exit(0 if results.summary() else 1)


if __name__ == "__main__":
    main()
