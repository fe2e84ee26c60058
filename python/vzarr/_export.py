"""`vzarr.export`: a store written as kerchunk references other tools read (JSON or Parquet)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

from . import _vzarr


def export(
    store: str | os.PathLike[str],
    output: str | os.PathLike[str],
    *,
    format: str = "kerchunk-json",
    url_prefix: Iterable[str] = (),
    record_size: int | None = None,
    skip_unsupported: bool = False,
    overwrite: bool = False,
    storage_options: Mapping[str, object] | None = None,
    inline_threshold: int | None = None,
) -> dict[str, Any]:
    """Writes `store` (a native store, an Icechunk repository or a kerchunk document) at `output` (a
    path, or an ``s3://``, ``gs://``, ``az://`` URL) as kerchunk references, as ``vzarr export`` does:
    `format="kerchunk-json"` one reference JSON file, `format="kerchunk-parquet"` a Parquet reference
    set of `record_size` rows per file (default 100,000), the files `vzarr.scan(...,
    format="kerchunk-parquet")` writes for the same dataset. `url_prefix` entries ``"OLD=NEW"``
    rewrite source locations (the first match applies). Parquet holds Zarr v2 metadata, which cannot
    say a rectilinear chunk grid: such an array whose decoded values take at most `inline_threshold`
    bytes (default 1 MiB, ``vzarr export --inline-threshold``; 0 inlines nothing) is written as one
    inline chunk of its values, a larger one raises `vzarr.Error` naming it, or with
    `skip_unsupported=True` is left out and listed in the report's ``left_out``. JSON's Zarr v3 keys
    say a rectilinear grid, so JSON inlines such arrays only when `inline_threshold` is given. The output is
    written whole or not at all; `overwrite` replaces only an earlier export of the same kind
    (`vzarr.AlreadyExists` otherwise).

    Returns the report: ``{"output", "metadata", "references", "inline", "bytes"}`` for JSON,
    ``{"output", "arrays", "record_files", "references", "inline", "left_out"}`` for Parquet
    (``left_out``: ``{"variable", "message"}`` per array)."""
    return _vzarr.export(
        os.fspath(store),
        os.fspath(output),
        format,
        [str(p) for p in url_prefix],
        record_size,
        skip_unsupported,
        overwrite,
        dict(storage_options) if storage_options else None,
        inline_threshold,
    )
