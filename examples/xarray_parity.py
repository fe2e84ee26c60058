#!/usr/bin/env python3
"""xarray parity: a vzarr output opens in xarray exactly as its source files do.

    python examples/xarray_parity.py STORE FILES... [--store STORE2] [--concat DIM]...
                                     [--case NAME --expected TSV] [--json]
    python examples/xarray_parity.py --batch CASES.json --expected TSV     (the test suite's form)

STORE is vzarr's kerchunk JSON (`vzarr export --kerchunk`, `vzarr scan --format kerchunk-json`;
opened through fsspec's reference filesystem), a materialized Zarr v3 directory (`vzarr
materialize`), both opened with xarray's zarr engine, or a native store (`vzarr scan -o X.vzarr`),
opened with vzarr's own engine (`engine="vzarr"`: needs the vzarr package); --store adds more stores
to check against the same files. FILES are the source files,
in the order vzarr scanned them. The sources are opened with `xr.open_dataset(f, engine="netcdf4")`
(libnetcdf: xarray's default engine). Where that view differs from the store and the sources are HDF5,
they are opened with `engine="h5netcdf"` too (h5py: libhdf5 itself, with hdf5plugin's filters; phony
dimensions compared by size, as the two libraries name and share them differently; fixed-length
strings, which h5netcdf leaves as bytes, compared as the text netCDF4 decodes): when the
store equals that view, netCDF4's differences are printed marked `netCDF4 view only: ` (libnetcdf
misreads a few HDF5 files: the first byte of a string member of a compound, memory it never wrote,
variables it does not list); when netCDF4 cannot open the sources (or crashes on them:
--netcdf4-crashes), h5netcdf's differences are printed marked `h5netcdf view: `. Several files are
combined as vzarr combined them: `xr.combine_nested` along one --concat dimension (in the order
given), `xr.combine_by_coords` for several (tiles), with global attributes kept only when equal in
every file (`combine_attrs="drop_conflicts"`). Every group is compared (`group=`).

Compared, with xarray's default decoding on both sides (CF times, masking, scaling): the variables,
dimensions and their sizes, coordinates, each variable's dimensions, decoded dtype and decoded values
(NaN- and NaT-aware; strings are strings whether NumPy holds them as `<U`, StringDType or `str`
objects, as xarray's own backends differ there, and compounds compare by fields, not padding), each variable's attributes and the global attributes, ignoring the bookkeeping
attributes netCDF hides (`_NCProperties`, `_Netcdf4Dimid`, `DIMENSION_LIST`, ...). Numeric attribute
values are compared by value (a JSON number carries no float32/int16 type); a scalar and a list of one
value are different. When xarray cannot decode the source (CF time units without a calendar, ...),
both sides are opened with the same fallback (`decode_times=False`, then `decode_cf=False`): that is no
difference; nor is xarray failing on the store with exactly the error it gives on the sources.

Prints one line per difference, `DIFF <store kind> <group>/<what>`, then one line per store (`ok` or
the number of differences), and exits 1 when a store differs (0 otherwise). With --expected TSV and
--case NAME the differences must be exactly the lines of TSV for NAME (`NAME<TAB>difference<TAB>
reason`): a difference not listed, or a listed one that no longer happens, fails. --json prints
{store: [differences]} instead (tests/corpus/run.py). --batch checks a JSON list of cases
`{"case", "stores", "files", "concat"}` in one run. Needs xarray, zarr 3, fsspec, netCDF4 and
h5netcdf (hdf5plugin when present).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import warnings
from pathlib import Path

import netCDF4
import numpy as np
import xarray as xr

# Attributes libnetcdf, HDF5 dimension scales or the zarr/xarray stack keep for themselves.
BOOKKEEPING = {
    "_NCProperties", "_Netcdf4Dimid", "_Netcdf4Coordinates", "_IsNetcdf4", "_SuperblockVersion",
    "_nc3_strict", "DIMENSION_LIST", "REFERENCE_LIST", "CLASS", "NAME", "_ARRAY_DIMENSIONS",
}
# Fallbacks tried in order when xarray cannot decode the source (same options for the store).
OPEN_LEVELS = ({}, {"decode_times": False}, {"decode_times": False, "decode_timedelta": False},
               {"decode_cf": False})

# The two views of an HDF5 source xarray has: its netCDF4 engine (libnetcdf, xarray's default) and its
# h5netcdf engine (h5py, libhdf5 itself). The store is compared with netCDF4's view; where that differs,
# with h5netcdf's: libnetcdf misreads some HDF5 files (the first byte of a string member of a compound,
# memory it never wrote, variables it does not list, files it crashes on) that h5py reads as they are.
NETCDF4, H5NETCDF = "netcdf4", "h5netcdf"
# The prefix of a difference from netCDF4's view of a source whose h5netcdf view equals the store.
NETCDF4_ONLY = "netCDF4 view only: "
# The prefix of a difference from h5netcdf's view of a source netCDF4 cannot open.
H5NETCDF_VIEW = "h5netcdf view: "
# The line standing for netCDF4's view of a source netCDF4-python crashes on (run.py probes that).
NETCDF4_CRASHES = "/: not compared: netCDF4-python crashes on the source"


# ---------------------------------------------------------------------------------------------------
# Opening.

def is_icechunk(store: str) -> bool:
    """An Icechunk repository directory (`vzarr scan --format icechunk`)."""
    return Path(store, "repo").is_file() or Path(store, "refs").is_dir()


def is_native(store: str) -> bool:
    """A native vzarr store directory (`vzarr scan -o X.vzarr`): opened with vzarr's own engine."""
    return Path(store, "vzarr.json").is_file()


def store_kind(store: str) -> str:
    if Path(store).is_file():
        return "kerchunk"
    if is_native(store):
        return "vzarr"
    return "icechunk" if is_icechunk(store) else "materialized"


def zarr_store(store: str):
    """A zarr store object for a kerchunk JSON file or an Icechunk repository (its `main` branch, with
    the repository's virtual chunk containers authorized for local files), or the directory itself."""
    if Path(store).is_file():
        import fsspec
        from zarr.storage import FsspecStore
        fs = fsspec.filesystem("reference", fo=store, asynchronous=True)
        return FsspecStore(fs, read_only=True, path="")
    if is_icechunk(store):
        import icechunk
        storage = icechunk.local_filesystem_storage(store)
        config = icechunk.Repository.fetch_config(storage)
        prefixes = [c.url_prefix for c in config.virtual_chunk_containers.values()]
        access = {p: icechunk.credentials.LocalFileSystemAccess for p in prefixes}
        repo = icechunk.Repository.open(storage, authorize_virtual_chunk_access=access)
        return repo.readonly_session("main").store
    return store


def groups_of(path: str, view: str = NETCDF4) -> list[str]:
    """Every group of a netCDF file as `view` (the library) lists them, depth first, the root as ""."""
    out = []

    def walk(group, prefix):
        out.append(prefix)
        for name, sub in group.groups.items():
            walk(sub, f"{prefix}/{name}" if prefix else name)

    if view == H5NETCDF:
        import h5netcdf
        with h5netcdf.File(path, "r") as f:
            walk(f, "")
    else:
        with netCDF4.Dataset(path) as ds:
            walk(ds, "")
    return out


def is_hdf5(path: str) -> bool:
    """Whether `path` is an HDF5 file (netCDF-4 included): what h5netcdf can open."""
    import h5py
    return bool(h5py.is_hdf5(path))


def open_sources(files: list[str], group: str, concat: list[str], options: dict, view: str = NETCDF4
                 ) -> xr.Dataset:
    kwargs = {"engine": view, "group": group or None, **options}
    if view == H5NETCDF:
        kwargs["phony_dims"] = "sort"  # as libnetcdf: dimensions of every dataset without scales
    parts = [xr.open_dataset(f, **kwargs).load() for f in files]
    if len(parts) == 1:
        return parts[0]
    common = {"data_vars": "minimal", "coords": "minimal", "compat": "override", "join": "exact",
              "combine_attrs": "drop_conflicts"}
    if len(concat) == 1:
        return xr.combine_nested(parts, concat_dim=concat[0], **common)
    return xr.combine_by_coords(parts, **common)


def open_store(store, group: str, options: dict) -> xr.Dataset:
    # Not loaded here: a variable whose chunks cannot be read is one difference, not a failed open.
    if is_native(store):
        return xr.open_dataset(store, engine="vzarr", group=group or None, **options)
    return xr.open_zarr(zarr_store(store), group=group or None, zarr_format=3, consolidated=False,
                        chunks=None, **options)


def open_both(files, store, group, concat, view=NETCDF4):
    """(source, store dataset, options used) at the first level of OPEN_LEVELS where the sources open,
    or raises. Levels where the sources and the store fail alike are passed; when the store then fails
    where the sources open, it still behaved as the sources do under xarray's default decoding:
    SameFailure. Otherwise the store's error is raised (a difference)."""
    last, alike = None, True
    for options in OPEN_LEVELS:
        try:
            source = open_sources(files, group, concat, options, view)
        except Exception as e:  # noqa: BLE001 - try the next fallback
            last = e
            alike = alike and same_failure(e, lambda: open_store(store, group, options).load())
            continue
        try:
            return source, open_store(store, group, options), options
        except Exception as e:  # noqa: BLE001 - a difference unless the default decoding failed alike
            if last is not None and alike:
                raise SameFailure(f"{type(last).__name__}: {one_line(last)}") from e
            raise
    raise SourceError(f"the sources do not open in xarray: {type(last).__name__}: {one_line(last)}")


def same_failure(error: Exception, open_it) -> bool:
    try:
        open_it()
    except Exception as e:  # noqa: BLE001 - compared with the source's error
        return type(e) is type(error) and str(e) == str(error)
    return False


class SameFailure(Exception):
    """xarray fails on the store exactly as on the sources: no difference."""


class SourceError(Exception):
    """xarray cannot open the source files at all: nothing to compare."""


# ---------------------------------------------------------------------------------------------------
# Comparing.

def show(value) -> str:
    if isinstance(value, np.ndarray):
        value = value.tolist()
    elif isinstance(value, np.generic):
        value = value.item()
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def attr_kind(value) -> str:
    """"str", "bytes", "number" or "bool", and a shape: the parts of an attribute JSON can carry."""
    arr = np.asarray(value)
    if arr.dtype.kind in "US" or isinstance(value, str):
        kind = "str"
    elif arr.dtype.kind == "b":
        kind = "bool"
    elif arr.dtype.kind in "iuf":
        kind = "number"
    else:
        kind = arr.dtype.kind
    shape = "scalar" if arr.ndim == 0 else f"list of {arr.size}"
    return f"{kind} {shape}"


def same_attr(a, b) -> bool:
    if attr_kind(a) != attr_kind(b):
        return False
    x, y = np.asarray(a), np.asarray(b)
    if x.dtype.kind in "iufb" and y.dtype.kind in "iufb":
        x, y = x.astype(np.float64) if x.dtype.kind == "f" else x, y.astype(np.float64) if y.dtype.kind == "f" else y
        return x.shape == y.shape and bool(np.all((x == y) | (np.isnan(x) & np.isnan(y)) if
                                                  x.dtype.kind == "f" and y.dtype.kind == "f" else x == y))
    return x.shape == y.shape and bool(np.all(x == y))


def appended_history(source, ours) -> bool:
    """Whether `ours` is the source's history (if any) with vzarr's line(s) appended (CF 2.6.2)."""
    if not isinstance(ours, str) or (source is not None and not isinstance(source, str)):
        return False
    before = source or ""
    return ours != before and ours.startswith(before) and "vzarr" in ours[len(before):]


def compare_attrs(where: str, source: dict, ours: dict) -> list[str]:
    diffs = []
    for name in sorted(set(source) | set(ours)):
        if name in BOOKKEEPING:
            continue
        if name not in ours:
            diffs.append(f"{where}: attribute {name}: missing (source {show(source[name])})")
        elif name == "history" and appended_history(source.get(name), ours[name]):
            diffs.append(f"{where}: attribute history: vzarr appended its line")
        elif name not in source:
            diffs.append(f"{where}: attribute {name}: extra {show(ours[name])}")
        elif not same_attr(source[name], ours[name]):
            diffs.append(f"{where}: attribute {name}: {show(ours[name])} ({attr_kind(ours[name])}) != source "
                         f"{show(source[name])} ({attr_kind(source[name])})")
    return diffs


def as_complex(x: np.ndarray) -> np.ndarray:
    """A two-field compound of floats (h5py's complex numbers as netCDF4 presents them: `{r, i}`) as
    complex numbers; anything else unchanged."""
    names = x.dtype.names or ()
    if len(names) == 2 and all(x.dtype[n].kind == "f" for n in names):
        return x[names[0]] + 1j * x[names[1]]
    return x


def as_subarrays(x: np.ndarray) -> np.ndarray:
    """A struct whose fields are named "0", "1", ... (how vzarr writes an HDF5 array member of a
    compound: zarr-python's struct has no subarray fields) as the array it stands for, the index last,
    as NumPy's subarray field holds it; anything else unchanged."""
    names = x.dtype.names or ()
    if names and list(names) == [str(i) for i in range(len(names))]:
        return np.stack([as_subarrays(x[n]) for n in names], axis=-1)
    return x


def same_fields(a: np.ndarray, b: np.ndarray) -> bool:
    """Two structured arrays of different dtypes: the same field names, each field's values equal
    (an index-named struct compared as the subarray it stands for)."""
    if a.dtype.names != b.dtype.names:
        return False
    return all(same_values(as_subarrays(a[n]), as_subarrays(b[n])) for n in a.dtype.names)


def same_values(a: np.ndarray, b: np.ndarray) -> bool:
    a, b = as_complex(a), as_complex(b)
    if a.shape != b.shape:
        return False
    if (a.dtype.names is None) != (b.dtype.names is None):
        return False
    if a.dtype.names is not None and a.dtype != b.dtype:
        return same_fields(a, b)
    if a.dtype.kind in "fc" and b.dtype.kind in "fc":
        return bool(np.array_equal(a, b, equal_nan=True))
    if a.dtype.kind in "mM" and b.dtype.kind in "mM":
        return bool(np.all((a == b) | (np.isnat(a) & np.isnat(b))))
    if a.dtype.kind == "O" or b.dtype.kind == "O":
        return all(x == y or (x != x and y != y) for x, y in zip(a.ravel().tolist(), b.ravel().tolist()))
    return bool(np.array_equal(a, b))


def is_text(x: np.ndarray) -> bool:
    """Strings, whichever NumPy form holds them: fixed-width `<U`, `StringDType` (zarr-python 3's
    form of Zarr v3 strings) or objects that are all `str` (netCDF4's variable-length strings)."""
    if x.dtype.kind in "UT":
        return True
    return x.dtype.kind == "O" and all(isinstance(v, str) for v in x.ravel().tolist())


def same_layout_free(a: np.dtype, b: np.dtype) -> bool:
    """The same structured type up to alignment padding: the same field names in order, each of the
    same type (netCDF4 reads compounds into an aligned NumPy dtype, zarr-python's struct is packed)."""
    if a.names is None or b.names is None or a.names != b.names:
        return False
    return all(a[n] == b[n] or same_layout_free(a[n], b[n]) for n in a.names)


def same_type(src: np.ndarray, ours: np.ndarray) -> bool:
    """Whether two decoded arrays have the same type for a reader: equal dtypes, or both strings
    (values compared as text), or the same fields where only padding differs. How strings are held
    differs between xarray's own backends (netCDF4 `<U`/object, h5netcdf object, zarr StringDType)."""
    return src.dtype == ours.dtype or (is_text(src) and is_text(ours)) or same_layout_free(src.dtype, ours.dtype)


def packed(var: xr.Variable) -> bool:
    return "scale_factor" in var.encoding or "add_offset" in var.encoding


def compare_variable(where: str, src: xr.Variable, ours: xr.Variable, view: str = NETCDF4) -> list[str]:
    diffs = []
    if dims_in(src.dims, view) != dims_in(ours.dims, view):
        return [f"{where}: dims {ours.dims} != source {src.dims}"]
    # The decoded dtypes xarray announces, before loading (a loaded char array may come out narrower).
    src_dtype, ours_dtype = src.dtype, ours.dtype
    try:
        a = np.asarray(ours.values)
    except Exception as e:  # noqa: BLE001 - the store's failure is the difference
        return diffs + [f"{where}: read: {type(e).__name__}: {one_line(e)}"] + \
            compare_attrs(where, dict(src.attrs), dict(ours.attrs))
    b = np.asarray(src.values)
    if view == H5NETCDF and b.dtype.kind == "S" and is_text(a):
        # h5netcdf leaves fixed-length strings as bytes; netCDF4 (and the store, as it) decodes them.
        b = np.char.decode(b, "utf-8")
    if src_dtype != ours_dtype and not same_type(b, a):
        why = " (packed: scale_factor/add_offset are JSON numbers, which carry no float32 type)" \
            if packed(src) and src_dtype == np.float32 and ours_dtype == np.float64 else ""
        diffs.append(f"{where}: dtype {ours_dtype} != source {src_dtype}{why}")
    if a.dtype != b.dtype and a.dtype.kind in "fc" and b.dtype.kind in "fc":
        a = a.astype(b.dtype)  # the dtype difference is reported above; compare what the values are
    if not same_values(a, b):
        diffs.append(f"{where}: values differ ({first_difference(a, b)})")
    diffs += compare_attrs(where, dict(src.attrs), dict(ours.attrs))
    return diffs


def first_difference(a: np.ndarray, b: np.ndarray) -> str:
    if a.shape != b.shape:
        return f"shape {a.shape} != source {b.shape}"
    try:
        for i, (x, y) in enumerate(zip(a.ravel().tolist(), b.ravel().tolist())):
            if not (x == y or (x != x and y != y)):
                return f"first at flat index {i}: {show(x)} != source {show(y)}"
    except Exception as e:  # noqa: BLE001 - a description only
        return f"{type(e).__name__}"
    return "types differ"


def compare_datasets(group: str, source: xr.Dataset, ours: xr.Dataset, view: str = NETCDF4) -> list[str]:
    g = f"/{group}" if group else "/"
    diffs = []
    for name in sorted(set(source.variables) - set(ours.variables)):
        diffs.append(f"{g}: variable {name}: missing")
    for name in sorted(set(ours.variables) - set(source.variables)):
        diffs.append(f"{g}: variable {name}: extra")
    if sizes_in(source, view) != sizes_in(ours, view):
        diffs.append(f"{g}: dimensions {sorted(ours.sizes.items())} != source {sorted(source.sizes.items())}")
    for name in sorted(set(source.coords) ^ set(ours.coords)):
        if name in source.variables and name in ours.variables:
            side = "source" if name in source.coords else "store"
            diffs.append(f"{g}: variable {name}: a coordinate in the {side} only")
    for name in sorted(set(source.variables) & set(ours.variables)):
        diffs += compare_variable(f"{g}{'/' if group else ''}{name}", source.variables[name], ours.variables[name],
                                  view)
    diffs += compare_attrs(f"{g}: global", dict(source.attrs), dict(ours.attrs))
    return diffs


def view_diffs(store: str, files: list[str], concat: list[str], view: str) -> list[str]:
    """Every difference between xarray on the source files through engine `view` and xarray on
    `store`."""
    diffs = []
    try:
        groups = groups_of(files[0], view)
    except Exception as e:  # noqa: BLE001 - nothing to compare with
        name = "netCDF4" if view == NETCDF4 else view
        return [f"/: not compared: {name} cannot open the source: {type(e).__name__}: {one_line(e)}"]
    for group in groups:
        g = f"/{group}" if group else "/"
        try:
            source, ours, options = open_both(files, store, group, concat, view)
        except SameFailure:
            continue
        except SourceError as e:
            diffs.append(f"{g}: not compared: {e}")
            continue
        except Exception as e:  # noqa: BLE001 - the store's failure is the difference
            diffs.append(f"{g}: open: {type(e).__name__}: {one_line(e).replace(str(store), 'STORE')}")
            continue
        if view == NETCDF4:
            diffs += compare_datasets(group, source, ours)
            continue
        try:
            diffs += compare_datasets(group, source, ours, view)
        except Exception as e:  # noqa: BLE001 - xarray's h5netcdf view of some HDF5 types is malformed
            diffs.append(f"{g}: not compared: h5netcdf's view fails: {type(e).__name__}: {one_line(e)}")
    return diffs


def uncompared(diffs: list[str]) -> bool:
    """Whether a view could not be compared at all (the source's root group did not open)."""
    return any(d.startswith("/: not compared: ") for d in diffs)


def parity(store: str, files: list[str], concat: list[str], netcdf4_crashes: bool = False) -> list[str]:
    """Every difference between xarray on the source files and xarray on `store`: those from netCDF4's
    view; where there are any and the sources are HDF5, h5netcdf's view is compared too. When it
    equals the store, netCDF4's differences come back marked NETCDF4_ONLY (the file opens as xarray
    shows the source); when netCDF4 could not open the source and h5netcdf could, its line saying so
    comes back marked NETCDF4_ONLY and h5netcdf's differences marked H5NETCDF_VIEW.
    `netcdf4_crashes`: the source crashes netCDF4-python (run.py probes it), so only h5netcdf's view
    is opened."""
    first = [NETCDF4_CRASHES] if netcdf4_crashes else view_diffs(store, files, concat, NETCDF4)
    if not first or not all(is_hdf5(f) for f in files):
        return first
    second = view_diffs(store, files, concat, H5NETCDF)
    if not second:
        return [NETCDF4_ONLY + d for d in first]
    if uncompared(first) and not uncompared(second):
        return [NETCDF4_ONLY + d for d in first] + [H5NETCDF_VIEW + d for d in second]
    return first


PHONY = re.compile(r"phony_dim_\d+")


def dims_in(dims: tuple, view: str) -> tuple:
    """A variable's dimensions as compared in `view`: in h5netcdf's, phony dimensions (those of
    datasets without dimension scales) are all "phony_dim", as libnetcdf and h5netcdf number and share
    them differently (libnetcdf across the file, h5netcdf by size within a group); their sizes are
    compared through the values' shapes."""
    return tuple("phony_dim" if view == H5NETCDF and PHONY.fullmatch(d) else d for d in dims)


def sizes_in(ds: xr.Dataset, view: str):
    """A group's dimensions and sizes as compared in `view` (h5netcdf's: the set of (name, size) pairs,
    phony dimensions named "phony_dim", see dims_in)."""
    if view != H5NETCDF:
        return dict(ds.sizes)
    return {(dims_in((d,), view)[0], n) for d, n in ds.sizes.items()}


def one_line(e: Exception) -> str:
    text = " ".join(str(e).split())
    return text if len(text) <= 200 else text[:197] + "..."


# ---------------------------------------------------------------------------------------------------
# Expectations and the command line.

def read_expected(path: str, case: str) -> dict[str, str]:
    """The listed differences of `case`: `{difference: reason}`. A line whose case is `CASE@KIND`
    applies to stores of that kind only (keyed `KIND\tdifference` here)."""
    expected = {}
    for line in Path(path).read_text().splitlines():
        if line and not line.startswith("#"):
            fields = line.split("\t")
            name, _, kind = fields[0].partition("@")
            if name == case:
                key = f"{kind}\t{fields[1]}" if kind else fields[1]
                expected[key] = fields[2] if len(fields) > 2 else ""
    return expected


def for_kind(expected: dict[str, str], kind: str) -> dict[str, str]:
    """The differences expected of a store of `kind`."""
    out = {}
    for key, reason in expected.items():
        only, sep, difference = key.partition("\t")
        if not sep:
            out[key] = reason
        elif only == kind:
            out[difference] = reason
    return out


def check(stores: list[str], files: list[str], concat: list[str], expected: dict[str, str],
          label: str = "", listed_in: str = "") -> bool:
    """Prints the differences of every store; False when one is not in `expected` or an expected one
    no longer happens."""
    failed = False
    prefix = f"{label}: " if label else ""
    for store in stores:
        diffs = parity(store, files, concat)
        kind = store_kind(store)
        expected_here = for_kind(expected, kind)
        unexpected = [d for d in diffs if d not in expected_here]
        stale = [d for d in expected_here if d not in diffs]
        for d in diffs:
            note = f"  # {expected_here[d]}" if expected_here.get(d) else ""
            print(f"{'DIFF' if d in unexpected else 'known'} {prefix}{kind} {d}{note}")
        for d in stale:
            print(f"STALE {prefix}{kind} {d}: listed in {listed_in} but no longer happens")
        failed |= bool(unexpected or stale)
        status = "ok" if not diffs else f"{len(diffs)} differences ({len(diffs) - len(unexpected)} expected)"
        print(f"{prefix}{kind} {store}: {status}")
    return not failed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("store", nargs="?", help="kerchunk JSON file or materialized Zarr v3 directory")
    parser.add_argument("files", nargs="*", help="the source files, in scan order")
    parser.add_argument("--store", action="append", default=[], dest="stores", help="another store to check")
    parser.add_argument("--concat", action="append", default=[], help="concatenation dimension (repeatable)")
    parser.add_argument("--expected", help="TSV of expected differences (CASE, difference, reason)")
    parser.add_argument("--case", help="this case's name in --expected")
    parser.add_argument("--json", action="store_true", help="print {store: [differences]} as JSON only")
    parser.add_argument("--probe", action="store_true",
                        help="only open FILES with xarray (every group); exit 0 when they open or fail cleanly")
    parser.add_argument("--netcdf4-crashes", action="store_true",
                        help="the source crashes netCDF4-python: compare with h5netcdf's view only")
    parser.add_argument("--batch", help="JSON list of cases {case, stores, files, concat}, checked against "
                                        "--expected in one run (the test suite's form)")
    args = parser.parse_args()
    if args.case and not args.expected:
        parser.error("--case needs --expected")
    if args.probe and args.store:
        args.files.insert(0, args.store)
    elif not args.batch and (not args.store or not args.files):
        parser.error("STORE and FILES are required (or --batch)")
    warnings.simplefilter("ignore")
    try:  # h5py's filters for compressed sources, as an h5py user has them (blosc2, zstd, lz4, ...)
        import hdf5plugin  # noqa: F401
    except ImportError:
        pass
    import zarr
    zarr.config.set({"array.rectilinear_chunks": True})
    if args.probe:  # does opening the sources alone crash the interpreter (libnetcdf on odd files)?
        for group in groups_of(args.files[0]):
            for options in OPEN_LEVELS:
                try:
                    open_sources(args.files, group, args.concat, options)
                    break
                except Exception:  # noqa: BLE001 - only a crash matters here
                    continue
        return 0
    if args.batch:
        ok = True
        for case in json.loads(Path(args.batch).read_text()):
            expected = read_expected(args.expected, case["case"]) if args.expected else {}
            ok &= check(case["stores"], case["files"], case.get("concat", []), expected, case["case"], args.expected)
        print("parity: all cases as expected" if ok else "parity: FAILED")
        return 0 if ok else 1
    stores = [args.store, *args.stores]
    if args.json:
        print(json.dumps({s: parity(s, args.files, args.concat, args.netcdf4_crashes) for s in stores}))
        return 0
    expected = read_expected(args.expected, args.case) if args.expected and args.case else {}
    return 0 if check(stores, args.files, args.concat, expected, listed_in=args.expected or "") else 1


if __name__ == "__main__":
    sys.exit(main())
