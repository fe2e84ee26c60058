"""`Store._repr_html_` and `Array._repr_html_`: the chunk grid's SVG, parsed, draws exactly the chunk
edges the store's `zarr.json` gives, to scale along each dimension."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET

import netCDF4
import pytest

import vzarr
from vzarr import _repr

SVG = "{http://www.w3.org/2000/svg}"


def grid_edges(zarr_json: dict) -> list[list[int]]:
    """Per dimension, the inner chunk edges (element indices) of a `zarr.json`'s chunk grid, read
    from the document itself (regular, or rectilinear with [size, count] runs)."""
    grid, shape = zarr_json["chunk_grid"], zarr_json["shape"]
    out = []
    for d, n in enumerate(shape):
        if grid["name"] == "regular":
            size = grid["configuration"]["chunk_shape"][d]
            out.append(list(range(size, n, size)))
            continue
        entry = grid["configuration"]["chunk_shapes"][d]
        sizes = [entry] * -(-n // entry) if isinstance(entry, int) else []
        for item in [] if isinstance(entry, int) else entry:
            sizes += [item[0]] * item[1] if isinstance(item, list) else [item]
        edges, at = [], 0
        for size in sizes[:-1]:
            at += size
            edges.append(at)
        out.append([e for e in edges if e < n])
    return out


def drawn(html: str) -> dict[str, tuple[int, list[int], list[float]]]:
    """Per dimension drawn in the SVG of `html`: its length, edges and the edges' x positions."""
    svg = re.search(r"<svg.*?</svg>", html, re.S).group(0)
    root = ET.fromstring(svg)
    out = {}
    for g in root.iter(f"{SVG}g"):
        if g.get("class") != "vzarr-dim":
            continue
        lines = [line for line in g.iter(f"{SVG}line") if line.get("class") == "vzarr-edge"]
        out[g.get("data-dim")] = (
            int(g.get("data-length")),
            [int(line.get("data-edge")) for line in lines],
            [float(line.get("x1")) for line in lines],
        )
    return out


@pytest.fixture
def uneven_store(monthly, tmp_path):
    out = tmp_path / "uneven.vzarr"
    vzarr.scan(monthly, concat=["time"], output=out)
    return vzarr.open(out)


def test_array_svg_draws_the_grid_edges_to_scale(uneven_store):
    for path in uneven_store:
        array = uneven_store[path]
        if not array.shape:
            continue
        metadata = json.loads(uneven_store.zarr_metadata(path))
        dims = drawn(array._repr_html_())
        assert list(dims) == list(metadata["dimension_names"]), path
        for (name, (length, edges, xs)), expected, n in zip(dims.items(), grid_edges(metadata), metadata["shape"]):
            assert length == n
            assert edges == expected, (path, name)
            for edge, x in zip(edges, xs):
                assert x == pytest.approx(_repr.LABEL_WIDTH + _repr.BAR_WIDTH * edge / n, abs=1e-3)
    # The months' lengths are visible: the rectilinear time grid has an edge at every month's end.
    time_edges = drawn(uneven_store["tas"]._repr_html_())["time"][1]
    assert {31, 59, 90}.issubset(time_edges)


def test_array_html_shows_shape_dtype_dims_and_references(uneven_store, monthly):
    html = uneven_store["tas"]._repr_html_()
    for text in (str(uneven_store["tas"].shape), "float32", "time, lat, lon", "rectilinear", "references"):
        assert text in html
    stats = next(a for a in uneven_store.info["arrays"] if a["path"] == "tas")["stats"]
    assert f"{stats['referenced']} ({stats['referenced_bytes']} bytes)" in html
    assert f"<td style=\"text-align:left\">{len(monthly)}</td>" in html  # sources


def test_store_html_lists_every_array(uneven_store, monthly):
    html = uneven_store._repr_html_()
    for path in uneven_store:
        assert f"<code>{path}</code>" in html
    with netCDF4.Dataset(monthly[0]) as ds:
        assert set(ds.variables) <= set(uneven_store)


def test_too_many_edges_are_summarised():
    svg = _repr.chunk_grid_svg(["x"], [10_000], [[1] * 10_000])
    assert "vzarr-edge" not in svg and "10000 in 10000 chunks" in svg
    ET.fromstring(svg)
