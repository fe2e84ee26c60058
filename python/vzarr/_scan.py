"""`vzarr.scan`: files scanned, combined and written in one call."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence

from . import _vzarr

FORMATS = ("native", "kerchunk-json", "kerchunk-parquet", "icechunk")


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


def _paths(inputs: str | os.PathLike[str] | Iterable[str | os.PathLike[str]]) -> list[str]:
    if isinstance(inputs, (str, os.PathLike)):
        return [os.fspath(inputs)]
    return [os.fspath(i) for i in inputs]


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
) -> ScanReport:
    """Scans `inputs` (paths, URLs or glob patterns such as ``"s3://bucket/cmip/*.nc"``), combines
    them along the `concat` dimensions (``["time"]``, ``["member=attr:variant_label", "time"]``; the
    first is outermost) and writes `output` as `format`: ``"native"`` (a ``.vzarr`` store),
    ``"kerchunk-json"``, ``"kerchunk-parquet"`` (a directory; Zarr v2, so arrays on a rectilinear
    grid are refused) or ``"icechunk"`` (a new snapshot on `branch`, default ``main``).

    The sources' containers join the user's trust list (as the command line does), so
    `vzarr.open(output)` reads them without `allow_sources`. With `progress`, a line on
    standard error counts the files scanned and the references found. Inputs may be DMR++ sidecars
    (``granule.h5.dmrpp``: their chunks reference the data file beside them); with
    ``sidecars="dmrpp"`` a file with a ``<file>.dmrpp`` beside it is scanned from that sidecar
    (`ScanReport.from_sidecars` counts them). Raises `vzarr.ScanError` for a file
    that cannot be scanned or files that do not combine, `vzarr.AlreadyExists` when `output` exists
    and `overwrite` is false, `vzarr.NotFound` for a pattern matching nothing.
    """
    if format not in FORMATS:
        raise ValueError(f"format {format!r}: expected one of {', '.join(FORMATS)}")
    if isinstance(concat, str):
        concat = [concat]
    report = _vzarr.scan(
        _paths(inputs),
        list(concat or ()),
        os.fspath(output),
        format,
        overwrite,
        skip_unsupported,
        list(take_first),
        drop_missing,
        dict(storage_options) if storage_options else None,
        branch,
        message,
        True,
        progress,
        sidecars,
    )
    return ScanReport(**report)


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
) -> AppendReport:
    """Appends new files (paths, URLs or glob patterns) after the end of `store` along its
    concatenation dimension, without rescanning it: a native store is replaced atomically (a
    concurrent append is refused), an Icechunk repository gets one new snapshot on `branch`. The
    scan and combine options are those the store records. Raises `vzarr.ScanError` for files that do
    not follow the store's end (or would open a gap, unless `allow_gaps`)."""
    report = _vzarr.append(
        os.fspath(store),
        _paths(inputs),
        allow_gaps,
        dict(storage_options) if storage_options else None,
        branch,
        message,
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
    )
    return ScanReport(**report)
