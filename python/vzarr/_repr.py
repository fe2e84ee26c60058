"""HTML representations of `Store` and `Array` for Jupyter (`_repr_html_`): shape, dtype, dimensions,
sources and references, and an SVG of the chunk grid drawn to scale along each dimension.

The SVG has one bar per dimension, as wide for every dimension; each chunk edge inside the array is a
vertical line at its position scaled to the dimension's length, so a rectilinear grid's uneven chunks
(months of 31, 28, 31 days) show as uneven spacing. Each bar is a ``<g class="vzarr-dim">`` with
``data-dim`` (its name) and ``data-length``, and each edge line carries ``data-edge`` (the element
index it falls at), for tests and tools. A dimension with more than `MAX_EDGES` chunk edges is drawn
as a filled bar and says how many chunks it has.
"""

from __future__ import annotations

import html
from itertools import accumulate
from typing import TYPE_CHECKING, Any, Sequence

if TYPE_CHECKING:
    from ._store import Array, Store

#: Most chunk edges drawn along one dimension.
MAX_EDGES = 400
#: Width of every dimension's bar, in SVG user units.
BAR_WIDTH = 360
#: Left margin (dimension labels) and height of one bar's row.
LABEL_WIDTH = 110
ROW_HEIGHT = 28
BAR_HEIGHT = 14


def chunk_grid_svg(dims: Sequence[str], shape: Sequence[int], chunks: Sequence[Sequence[int]]) -> str:
    """The SVG of a chunk grid: per dimension (name `dims[i]`, length `shape[i]`) the chunk sizes
    `chunks[i]` (the last cut at the array's end), drawn to scale."""
    rows = [_dimension_row(i, name, n, sizes) for i, (name, n, sizes) in enumerate(zip(dims, shape, chunks))]
    width = LABEL_WIDTH + BAR_WIDTH + 120
    height = ROW_HEIGHT * max(len(rows), 1) + 4
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="vzarr-grid" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">' + "".join(rows) + "</svg>"
    )


def _dimension_row(row: int, name: str, length: int, sizes: Sequence[int]) -> str:
    y = row * ROW_HEIGHT + 4
    edges = list(accumulate(sizes))[:-1]  # the inner edges
    parts = [
        f'<g class="vzarr-dim" data-dim="{html.escape(name)}" data-length="{length}">',
        f'<text x="0" y="{y + BAR_HEIGHT - 2}">{html.escape(name)}</text>',
    ]
    fill = "#cfe2f3" if len(edges) <= MAX_EDGES else "#9fc5e8"
    parts.append(
        f'<rect x="{LABEL_WIDTH}" y="{y}" width="{BAR_WIDTH}" height="{BAR_HEIGHT}" fill="{fill}" stroke="#3d85c6"/>'
    )
    if len(edges) <= MAX_EDGES:
        for edge in edges:
            x = LABEL_WIDTH + BAR_WIDTH * edge / length
            parts.append(
                f'<line class="vzarr-edge" data-edge="{edge}" x1="{x:.3f}" x2="{x:.3f}" y1="{y}" '
                f'y2="{y + BAR_HEIGHT}" stroke="#3d85c6"/>'
            )
    label = f"{length} in {len(sizes)} chunk{'s' if len(sizes) != 1 else ''}"
    parts.append(f'<text x="{LABEL_WIDTH + BAR_WIDTH + 6}" y="{y + BAR_HEIGHT - 2}">{label}</text>')
    parts.append("</g>")
    return "".join(parts)


def _grid_kind(chunks: Sequence[Sequence[int]]) -> str:
    regular = all(len(set(sizes[:-1])) <= 1 and (len(sizes) < 2 or sizes[-1] <= sizes[0]) for sizes in chunks)
    return "regular" if regular else "rectilinear"


def _table(rows: Sequence[tuple[str, Any]]) -> str:
    cells = "".join(
        f'<tr><th style="text-align:left;padding-right:1em">{html.escape(k)}</th>'
        f'<td style="text-align:left">{html.escape(str(v))}</td></tr>'
        for k, v in rows
    )
    return f"<table>{cells}</table>"


def _array_stats(store_info: dict[str, Any] | None, path: str) -> dict[str, Any]:
    for item in (store_info or {}).get("arrays", []):
        if item.get("path") == path:
            return dict(item)
    return {}


def array_html(array: Array, store_info: dict[str, Any] | None = None) -> str:
    """The HTML of one array: a table of its facts and the SVG of its chunk grid."""
    dims = list(array.dims) if array.dims else [f"dim_{i}" for i in range(len(array.shape))]
    stats = _array_stats(store_info, array.path).get("stats", {})
    rows: list[tuple[str, Any]] = [
        ("shape", array.shape),
        ("dtype", array.dtype),
        ("dimensions", ", ".join(dims) if dims else "(scalar)"),
        ("chunk grid", f"{_grid_kind(array.chunks)}, {_count(array.chunks)} chunks"),
    ]
    if stats:
        rows.append(("references", f"{stats.get('referenced', 0)} ({stats.get('referenced_bytes', 0)} bytes)"))
        if stats.get("owned"):
            rows.append(("store-owned chunks", f"{stats['owned']} ({stats.get('owned_bytes', 0)} bytes)"))
        if stats.get("missing"):
            rows.append(("unwritten chunks", stats["missing"]))
    if store_info is not None:
        rows.append(("sources (store)", store_info.get("sources", 0)))
    title = f"<b>vzarr.Array</b> <code>{html.escape(array.path)}</code>"
    svg = chunk_grid_svg(dims, array.shape, array.chunks) if array.shape else ""
    return f'<div class="vzarr-array">{title}{_table(rows)}{svg}</div>'


def _count(chunks: Sequence[Sequence[int]]) -> int:
    total = 1
    for sizes in chunks:
        total *= len(sizes)
    return total


def store_html(store: Store) -> str:
    """The HTML of a store: its location, sources and references, and each array (collapsed)."""
    info = store.info
    arrays = info.get("arrays", [])
    references = sum(a.get("stats", {}).get("referenced", 0) for a in arrays)
    rows = [
        ("location", store.location),
        ("sources", info.get("sources", 0)),
        ("arrays", len(store)),
        ("references", references),
    ]
    items = "".join(
        f"<details><summary><code>{html.escape(path)}</code> {html.escape(str(store[path].shape))} "
        f"{html.escape(str(store[path].dtype))}</summary>{array_html(store[path], info)}</details>"
        for path in store
    )
    return f'<div class="vzarr-store"><b>vzarr.Store</b>{_table(rows)}{items}</div>'
