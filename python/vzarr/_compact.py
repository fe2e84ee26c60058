"""`vzarr.compact` (small chunks folded in place) and `vzarr.materialize` (a regular copy)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Mapping

from . import _vzarr


@dataclass(frozen=True)
class ArrayFold:
    """One array's chunk edges along the dimension, before and after."""

    path: str
    before: list[int]
    after: list[int]
    #: Store-owned chunks written (0 in a dry run).
    chunks_written: int


@dataclass(frozen=True)
class CompactReport:
    """What `compact` did (or, with ``dry_run=True``, would do)."""

    store: str
    #: False in a dry run, and when there was nothing to fold.
    written: bool
    arrays: list[ArrayFold] = field(default_factory=list)
    #: Icechunk repositories: the new snapshot and its branch.
    snapshot: str | None = None
    branch: str | None = None


def compact(
    store: str | os.PathLike[str],
    *,
    dim: str,
    target: int | str,
    tail: bool = False,
    dry_run: bool = False,
    storage_options: Mapping[str, object] | None = None,
    branch: str | None = None,
    message: str | None = None,
) -> CompactReport:
    """Folds runs of chunks shorter than `target` along `dim` into chunks of `target` (and one of
    the remainder), in place: a native store is replaced atomically, an Icechunk repository gets one
    commit on `branch`. Every other chunk keeps its reference. `target` may also be a calendar unit,
    `"month"`, `"season"` (DJF, MAM, JJA, SON), `"year"`, `"day"` or a duration such as `"10d"` or
    `"6h"` (each chunk becomes the steps of one period, from the dimension's CF time coordinate in
    its own calendar), or `"by:VAR"` (one chunk per run of equal values of the 1-D variable VAR).
    `tail=True` folds only the chunks after the last chunk of `target` (after `vzarr.append`).
    Raises `ValueError` for a dimension no array has, a target of 0 or larger than the dimension, a
    calendar unit along a dimension without a CF time coordinate, `vzarr.SourceChanged` for a source
    modified since the scan; nothing is written then."""
    report = _vzarr.compact(
        os.fspath(store),
        dim,
        target,
        tail,
        dry_run,
        dict(storage_options) if storage_options else None,
        branch,
        message,
    )
    arrays = [ArrayFold(**a) for a in report.pop("arrays")]
    return CompactReport(arrays=arrays, **report)


def materialize(
    store: str | os.PathLike[str],
    output: str | os.PathLike[str],
    *,
    chunks: Mapping[str, int | str] | None = None,
    max_memory: int | None = None,
    overwrite: bool = False,
    storage_options: Mapping[str, object] | None = None,
    shards: Mapping[str, int | str] | None = None,
    format: str = "zarr",
    update: bool = False,
    branch: str | None = None,
    message: str | None = None,
    codec: str | None = None,
) -> dict[str, Any]:
    """Writes `store` at `output` as a copy whose arrays have a regular chunk grid (`chunks`: length
    per dimension name, such as ``{"time": 90, "lat": 45}``; dimensions not named keep their chunk
    length where it is regular). A length along a time dimension may be a calendar unit
    (``"month"``, ``"season"``, ``"year"``, ``"day"``, ``"6h"``, ``"10d"``) and along any dimension
    ``"by:VAR"`` (one chunk per run of equal values of VAR): the grid is then rectilinear along it,
    one chunk per month (readers need the rectilinear extension). Every chunk is decoded and re-encoded, at most `max_memory` bytes
    read at once. `codec` (``"zstd"``, ``"zstd:5"``, ``"gzip:6"``, ``"none"``) encodes the chunks with
    that compression instead of the array's codecs.

    `format="zarr"` (the default) writes a Zarr v3 store (a directory, or an ``s3://`` prefix); a
    rerun of a local copy after an interruption continues where it stopped. `shards` packs the
    chunks into ``sharding_indexed`` shards of these lengths per dimension name (each a multiple of
    the chunk length; ``{"time": "month"}`` with ``chunks={"time": 1, ...}``: one shard per month of
    regular inner chunks). `format="icechunk"` writes an Icechunk repository (a directory or an
    ``s3://`` URL) with one commit on `branch` (default ``main``), with `message`.

    `update=True` (with ``format="icechunk"`` and no `chunks`) brings such a repository up to date
    after ``vzarr append`` grew `store`: only the chunks the new region touches are rewritten, in
    one commit. Returns ``{"output", "arrays", "chunks", "bytes", "committed"}``."""
    return _vzarr.materialize(
        os.fspath(store),
        os.fspath(output),
        _lengths(chunks or {}),
        max_memory,
        overwrite,
        dict(storage_options) if storage_options else None,
        _lengths(shards) if shards is not None else None,
        format,
        update,
        branch,
        message,
        codec,
    )


def _lengths(lengths: Mapping[str, int | str]) -> list[tuple[str, str]]:
    """Lengths by dimension name as the extension takes them: a number or a unit, as text."""
    return [(str(k), v if isinstance(v, str) else str(int(v))) for k, v in lengths.items()]
