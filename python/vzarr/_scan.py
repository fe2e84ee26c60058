"""`vzarr.scan`: files scanned, combined and written in one call; on a dask.distributed cluster
(`client=`, `_distributed`), or one shard of a sharded scan (`shard=`) for `merge`."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Iterable, Literal, Mapping, Sequence, overload

from . import _distributed, _vzarr
from ._vzarr import AlreadyExists

FORMATS = ("native", "kerchunk-json", "kerchunk-parquet", "icechunk", "dmrpp")


@dataclass(frozen=True)
class ScanReport:
    """What `scan` wrote."""

    #: The output's path or URL.
    output: str
    #: Files scanned.
    files: int
    #: Arrays written.
    arrays: int
    #: Chunk references into the source files.
    references: int
    #: Chunks the output holds itself (partial chunks rewritten, small arrays, strings).
    owned_chunks: int
    #: Variables left out (`skip_unsupported=True`) or dropped (`drop_missing=True`), one line each.
    warnings: list[str] = field(default_factory=list)
    #: The containers (location prefixes) holding the sources, which a reader must authorize.
    source_containers: list[str] = field(default_factory=list)
    #: Containers newly added to the user's trust list.
    trusted: list[str] = field(default_factory=list)
    #: Icechunk output: the new snapshot and its branch.
    snapshot: str | None = None
    branch: str | None = None
    #: Files scanned from their sidecars (`sidecars="dmrpp"`) instead of themselves.
    from_sidecars: int = 0


@dataclass(frozen=True)
class PartReport:
    """What `scan` with ``shard=(i, n)`` wrote: one part of a sharded scan, for `merge`."""

    #: The part file written.
    output: str
    #: This shard and the number of shards, ``(i, n)``.
    shard: tuple[int, int]
    #: The shard's files (a contiguous slice of the sorted inputs).
    files: int
    #: Every input of the run (every shard's).
    inputs: int
    #: The position of the shard's first file among the sorted inputs.
    first: int
    #: Chunk entries of the shard's files.
    references: int
    #: Variables left out (`skip_unsupported=True`), one line each.
    warnings: list[str] = field(default_factory=list)
    #: Files scanned from their sidecars (`sidecars="dmrpp"`) instead of themselves.
    from_sidecars: int = 0


def _paths(inputs: str | os.PathLike[str] | Iterable[str | os.PathLike[str]]) -> list[str]:
    if isinstance(inputs, (str, os.PathLike)):
        return [os.fspath(inputs)]
    return [os.fspath(i) for i in inputs]


@overload
def scan(
    inputs: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    *,
    concat: Sequence[str] | str | None = None,
    output: str | os.PathLike[str],
    format: str = "native",
    overwrite: bool = False,
    skip_unsupported: bool = False,
    take_first: Sequence[str] = (),
    drop_missing: bool = False,
    storage_options: Mapping[str, object] | None = None,
    progress: bool = False,
    branch: str | None = None,
    message: str | None = None,
    sidecars: str | None = None,
    shard: None = None,
    client: Any = None,
    retries: int | None = None,
    inline_threshold: int | None = None,
) -> ScanReport: ...


@overload
def scan(
    inputs: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    *,
    concat: Sequence[str] | str | None = None,
    output: str | os.PathLike[str],
    format: str = "native",
    overwrite: bool = False,
    skip_unsupported: bool = False,
    take_first: Sequence[str] = (),
    drop_missing: bool = False,
    storage_options: Mapping[str, object] | None = None,
    progress: bool = False,
    branch: str | None = None,
    message: str | None = None,
    sidecars: str | None = None,
    shard: tuple[int, int],
    client: Literal[None] = None,
    retries: int | None = None,
    inline_threshold: int | None = None,
) -> PartReport: ...


def scan(
    inputs: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    *,
    concat: Sequence[str] | str | None = None,
    output: str | os.PathLike[str],
    format: str = "native",
    overwrite: bool = False,
    skip_unsupported: bool = False,
    take_first: Sequence[str] = (),
    drop_missing: bool = False,
    storage_options: Mapping[str, object] | None = None,
    progress: bool = False,
    branch: str | None = None,
    message: str | None = None,
    sidecars: str | None = None,
    shard: tuple[int, int] | None = None,
    client: Any = None,
    retries: int | None = None,
    inline_threshold: int | None = None,
) -> ScanReport | PartReport:
    """Scans `inputs` (paths, URLs or glob patterns such as ``"s3://bucket/cmip/*.nc"``), combines
    them along the `concat` dimensions (``["time"]``, ``["member=attr:variant_label", "time"]``; the
    first is outermost) and writes `output` as `format`: ``"native"`` (a ``.vzarr`` store),
    ``"kerchunk-json"``, ``"kerchunk-parquet"`` (a directory; Zarr v2, so arrays on a rectilinear
    grid are refused), ``"icechunk"`` (a new snapshot on `branch`, default ``main``) or ``"dmrpp"``:
    one DMR++ sidecar per file, ``output/<file name>.dmrpp`` (`output` a local directory, created
    when missing), as OPeNDAP's ``get_dmrpp`` writes them; nothing is combined, so `concat` and the
    combine options are refused with it. For the kerchunk formats, `inline_threshold` (bytes of
    decoded values, default 1 MiB) is the largest array whose chunk grid is rectilinear that is
    written inline as one chunk of its values (Zarr v2 has no rectilinear grid); a larger one is
    refused by name.

    The sources' containers join the user's trust list (as the command line does), so
    `vzarr.open(output)` reads them without `allow_sources`. With `progress`, a line on
    standard error counts the files scanned and the references found. Inputs may be DMR++ sidecars
    (``granule.h5.dmrpp``: their chunks reference the data file beside them); with
    ``sidecars="dmrpp"`` a file with a ``<file>.dmrpp`` beside it is scanned from that sidecar
    (`ScanReport.from_sidecars` counts them). Raises `vzarr.ScanError` for a file
    that cannot be scanned or files that do not combine, `vzarr.AlreadyExists` when `output` exists
    and `overwrite` is false, `vzarr.NotFound` for a pattern matching nothing.

    With ``shard=(i, n)`` only shard `i` (from 0) of `n` is scanned, the `i`-th of `n` contiguous
    slices of the sorted inputs, and written as a *part* (atomically) to `output`, or to
    ``part-0000i-of-0000n.vzpart`` inside it when `output` is a directory or ends in ``/``; a
    `PartReport` is returned. Every shard of a run must be given the same inputs and `concat`;
    `merge` combines the parts into the store one scan would write. The combine options
    (`take_first`, `drop_missing`, `format`, ...) belong to `merge` and are refused here.

    With ``client=`` (a `distributed.Client`: LocalCluster, dask-jobqueue, Kubernetes, Coiled) the
    shards are scanned as tasks on the cluster's workers (two per worker thread, at most one per
    file), their parts staged in a directory beside `output` and merged into it; the report is a
    one-machine scan's and the store the same. The workers must reach the inputs (a shared file
    system or object-store URLs), not the output. A task that raises is run again up to `retries`
    times, a task whose worker dies is rescheduled by dask; a file that cannot be scanned fails
    the call with vzarr's one-line error, and no part is left behind.
    """
    if format not in FORMATS:
        raise ValueError(f"format {format!r}: expected one of {', '.join(FORMATS)}")
    if isinstance(concat, str):
        concat = [concat]
    options = dict(storage_options) if storage_options else None
    if format == "dmrpp":
        refused = {"concat": bool(concat), "take_first": bool(take_first), "drop_missing": drop_missing,
                   "branch": branch is not None, "message": message is not None, "sidecars": sidecars is not None,
                   "shard": shard is not None, "client": client is not None,
                   "inline_threshold": inline_threshold is not None}
        given = [name for name, on in refused.items() if on]
        if given:
            raise ValueError(f"{given[0]} does not apply to format=\"dmrpp\": a sidecar describes one file")
        report = _vzarr.write_sidecars(_paths(inputs), os.fspath(output), overwrite, skip_unsupported, options)
        report.pop("sidecars")
        return ScanReport(**report)
    if shard is not None:
        if client is not None:
            raise ValueError("shard and client exclude each other: client= scans every shard")
        refused = {"format": format != "native", "take_first": bool(take_first), "drop_missing": drop_missing,
                   "branch": branch is not None, "message": message is not None,
                   "inline_threshold": inline_threshold is not None}
        given = [name for name, on in refused.items() if on]
        if given:
            raise ValueError(f"{given[0]} applies when the parts are merged: give it to vzarr.merge, not to a shard scan")
        return _scan_shard(_paths(inputs), list(concat or ()), os.fspath(output), shard, skip_unsupported,
                           options, sidecars)
    if client is not None:
        return _scan_on_cluster(client, _paths(inputs), list(concat or ()), os.fspath(output), format, overwrite,
                                skip_unsupported, list(take_first), drop_missing, options, progress, branch,
                                message, sidecars, retries, inline_threshold)
    report = _vzarr.scan(
        _paths(inputs),
        list(concat or ()),
        os.fspath(output),
        format,
        overwrite,
        skip_unsupported,
        list(take_first),
        drop_missing,
        options,
        branch,
        message,
        True,
        progress,
        sidecars,
        inline_threshold,
    )
    return ScanReport(**report)


def _part_path(output: str, shard: tuple[int, int]) -> str:
    """`output` itself, or ``part-IIIII-of-NNNNN.vzpart`` inside it when it is a directory or ends
    in ``/`` (created if missing), as ``vzarr scan --shard`` names parts."""
    if "://" in output:
        raise ValueError(f"{output}: scan(shard=...) writes its part to a local path (vzarr scan --shard writes to object stores)")
    name = f"part-{shard[0]:05}-of-{shard[1]:05}.vzpart"
    if output.endswith(("/", os.sep)):
        os.makedirs(output, exist_ok=True)
        return os.path.join(output, name)
    return os.path.join(output, name) if os.path.isdir(output) else output


def _scan_shard(
    inputs: list[str],
    concat: list[str],
    output: str,
    shard: tuple[int, int],
    skip_unsupported: bool,
    storage_options: dict[str, object] | None,
    sidecars: str | None,
) -> PartReport:
    index, count = shard
    if index < 0 or count < 1 or index >= count:
        raise ValueError(f"shard {shard!r}: expected (i, n) with 0 <= i < n")
    part = _part_path(output, shard)
    report = _vzarr.scan_shard(inputs, concat, part, index, count, skip_unsupported, storage_options, sidecars)
    report["shard"] = tuple(report["shard"])
    return PartReport(**report)


def _scan_on_cluster(
    client: Any,
    inputs: list[str],
    concat: list[str],
    output: str,
    format: str,
    overwrite: bool,
    skip_unsupported: bool,
    take_first: list[str],
    drop_missing: bool,
    storage_options: dict[str, object] | None,
    progress: bool,
    branch: str | None,
    message: str | None,
    sidecars: str | None,
    retries: int | None,
    inline_threshold: int | None,
) -> ScanReport:
    if not overwrite and format != "icechunk" and "://" not in output and os.path.lexists(output):
        # Refused before the cluster's work, as the write would refuse it after.
        raise AlreadyExists(f"{output}: exists (pass overwrite=True to replace it)")

    def merge_parts(parts: list[str]) -> dict[str, Any]:
        return _vzarr.merge(parts, concat, output, format, overwrite, take_first, drop_missing, storage_options,
                            branch, message, True, inline_threshold)

    report, from_sidecars = _distributed.scan_on_cluster(
        client, inputs, concat, output, merge_parts, skip_unsupported=skip_unsupported,
        storage_options=storage_options, sidecars=sidecars, retries=retries, progress=progress,
    )
    return ScanReport(**report, from_sidecars=from_sidecars)


@dataclass(frozen=True)
class AppendReport:
    """What `append` did."""

    #: The store appended to.
    store: str
    #: New files appended.
    files: int
    #: Source files in the store after the append.
    sources: int
    #: Variables left out, one line each.
    warnings: list[str] = field(default_factory=list)
    #: The containers holding the store's sources, the new files' among them.
    source_containers: list[str] = field(default_factory=list)
    #: Containers newly added to the user's trust list.
    trusted: list[str] = field(default_factory=list)
    #: Icechunk repositories: the new snapshot and its branch.
    snapshot: str | None = None
    branch: str | None = None


def append(
    store: str | os.PathLike[str],
    inputs: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    *,
    allow_gaps: bool = False,
    storage_options: Mapping[str, object] | None = None,
    branch: str | None = None,
    message: str | None = None,
    chunks: Mapping[str, int | str] | None = None,
) -> AppendReport:
    """Appends new files (paths, URLs or glob patterns) after the end of `store` along its
    concatenation dimension, without rescanning it: a native store is replaced atomically (a
    concurrent append is refused), an Icechunk repository gets one new snapshot on `branch`. The
    scan and combine options are those the store records. `chunks={"time": "month"}` keeps the
    store's grid along that dimension: the new steps fold into the last chunk until it holds a
    whole month (also `"season"`, `"year"`, `"day"`, a duration such as `"10d"`, `"by:VAR"` or a
    number of steps), then into the next, in the same write. Raises `vzarr.ScanError` for files that
    do not follow the store's end (or would open a gap, unless `allow_gaps`), `ValueError` for a
    `chunks` that does not apply."""
    grid = None
    if chunks:
        if len(chunks) != 1:
            raise ValueError(f"chunks: one dimension, not {len(chunks)}")
        ((dim, length),) = chunks.items()
        grid = (dim, str(length))
    report = _vzarr.append(
        os.fspath(store),
        _paths(inputs),
        allow_gaps,
        dict(storage_options) if storage_options else None,
        branch,
        message,
        True,
        grid,
    )
    return AppendReport(**report)


def merge(
    parts: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    *,
    concat: Sequence[str] | str | None = None,
    output: str | os.PathLike[str],
    format: str = "native",
    overwrite: bool = False,
    take_first: Sequence[str] = (),
    drop_missing: bool = False,
    storage_options: Mapping[str, object] | None = None,
    branch: str | None = None,
    message: str | None = None,
    inline_threshold: int | None = None,
) -> ScanReport:
    """Merges the parts of a sharded scan (``vzarr scan --shard I/N`` on a job array; files, glob
    patterns or object-store URLs) into the store one scan over all inputs would have written.
    `concat` must name the dimensions the parts were scanned along."""
    if format not in FORMATS:
        raise ValueError(f"format {format!r}: expected one of {', '.join(FORMATS)}")
    if isinstance(concat, str):
        concat = [concat]
    report = _vzarr.merge(
        _paths(parts),
        list(concat or ()),
        os.fspath(output),
        format,
        overwrite,
        list(take_first),
        drop_missing,
        dict(storage_options) if storage_options else None,
        branch,
        message,
        True,
        inline_threshold,
    )
    return ScanReport(**report)
