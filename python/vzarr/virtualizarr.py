"""A VirtualiZarr parser backed by vzarr's Rust scanner: HDF5, NetCDF-4, NetCDF-3 and HDF4 files, local or
on object stores, safe in thread pools (no HDF5 lock: vzarr reads the format itself)::

    from obspec_utils.registry import ObjectStoreRegistry

    #: VirtualiZarr's registry of object stores.
    Registry = ObjectStoreRegistry[Any]
    from obstore.store import LocalStore
    from virtualizarr import open_virtual_dataset, open_virtual_mfdataset
    import vzarr.virtualizarr

    registry = ObjectStoreRegistry({"file://": LocalStore()})
    vds = open_virtual_dataset("file:///data/tas_2023-01.nc", registry=registry,
                               parser=vzarr.virtualizarr.Parser())

A DMR++ sidecar URL (``.../granule.h5.dmrpp``, as NASA's archives publish them beside each granule)
works the same way: the chunks then reference the data file the sidecar describes (``DMRPPParser`` is
the same parser, under the name VirtualiZarr gives its own)::

    vds = open_virtual_dataset("s3://bucket/granule.h5.dmrpp", registry=registry,
                               parser=vzarr.virtualizarr.DMRPPParser())

`Parser()(url, registry)` returns a `ManifestStore` whose manifests hold the same paths, offsets and
lengths as VirtualiZarr's `HDFParser` gives for the same file. Variables vzarr cannot reference raise
`NotImplementedError` (as VirtualiZarr's parsers do), or are left out with a warning when
`skip_unsupported=True`. Object-store files are read with the configuration of the registry's store
for the URL (its `config`), plus `storage_options` when given.
"""

from __future__ import annotations

import json
import math
import os
import threading
import warnings
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Sequence
from urllib.parse import urlparse
from urllib.request import url2pathname

import numpy as np
from virtualizarr.manifests import ChunkManifest, ManifestArray, ManifestGroup, ManifestStore
from virtualizarr.manifests.manifest import INLINED_CHUNK_PATH
from zarr.core.metadata import ArrayV3Metadata

from . import _vzarr

if TYPE_CHECKING:
    import xarray as xr
    from obspec_utils.registry import ObjectStoreRegistry

    #: VirtualiZarr's registry of object stores.
    Registry = ObjectStoreRegistry[Any]

_MISSING, _REFERENCED, _INLINED = 0, 1, 2


class Parser:
    """VirtualiZarr's parser protocol (``__call__(url, registry) -> ManifestStore``) over vzarr, a
    drop-in for VirtualiZarr's ``HDFParser``: the same constructor keywords, and the same manifests
    wherever HDFParser's are right (docs/how-to/virtualizarr.md lists where vzarr differs on purpose).

    Parameters
    ----------
    group
        Only this group (and the groups below it) of the file.
    drop_variables
        Variables (array paths relative to `group`) left out.
    reader_factory
        Accepted for HDFParser's signature and unused: vzarr reads files itself (local files
        directly, others with the registry's object-store configuration).
    links_and_references
        As HDFParser: object references (datasets of them, attributes holding them) as the paths of
        their targets relative to the object, marked with VirtualiZarr's draft Links and Object
        References and ref conventions. Without it vzarr stores them as absolute paths (HDFParser
        refuses them). Soft and external links, and the second names of objects of several hard
        links, are recorded in their groups' ``links_references`` attributes instead of being read,
        and group attributes holding references become ref-convention objects, as HDFParser does;
        without the flag links are followed.
    skip_unsupported
        Leave out, with a warning, variables vzarr cannot reference instead of raising
        `NotImplementedError`.
    storage_options
        Object-store settings added to those of the registry's store (see `vzarr.scan`).
    """

    def __init__(
        self,
        group: str | None = None,
        drop_variables: Iterable[str] | None = None,
        reader_factory: object = None,
        links_and_references: bool = False,
        skip_unsupported: bool = False,
        storage_options: Mapping[str, object] | None = None,
    ):
        self.group = (group or "").strip("/")
        self.drop_variables = set(drop_variables or ())
        self.reader_factory = reader_factory
        self.links_and_references = links_and_references
        self.skip_unsupported = skip_unsupported
        self.storage_options = dict(storage_options or {})

    def __call__(self, url: str, registry: Registry) -> ManifestStore:
        options = _registry_options(url, registry)
        options.update(self.storage_options)
        parsed = _vzarr.parse_file(url, self.skip_unsupported, options or None, self.links_and_references)
        for warning in parsed["warnings"]:
            warnings.warn(f"vzarr: {warning}", stacklevel=2)
        return ManifestStore(registry=registry, group=self._group(url, registry, parsed))

    def _group(self, url: str | None, registry: Registry, parsed: dict[str, Any]) -> ManifestGroup:
        """The ManifestGroup of `parsed` (`url`: the parsed file, None for a combined archive)."""
        prefix = f"{self.group}/" if self.group else ""
        groups = {path: json.loads(attrs) for path, attrs in parsed["groups"]}
        if self.group and self.group not in groups:
            raise ValueError(f"{url or 'the archive'}: group {self.group!r} is not an HDF Group (the file has no such group)")
        # A sidecar's chunks lie in its data file (`data_url`), not in the sidecar.
        sources = _source_urls(parsed.get("data_url") or url, parsed["sources"])
        linked: set[str] = set()
        if self.links_and_references and url is not None:
            linked = _record_links(url, parsed, self.group, self.drop_variables, groups)
        arrays: dict[str, ManifestArray] = {}
        for item in parsed["arrays"]:
            path = item["path"]
            if not path.startswith(prefix):
                continue
            relative = path[len(prefix) :]
            if relative in self.drop_variables or _under(path, linked):
                continue
            arrays[relative] = _manifest_array(registry, sources, item)
            if self.links_and_references:
                arrays[relative] = _with_relative_references(path, arrays[relative])
        kept = {p: a for p, a in groups.items() if not _under(p, linked)}
        return _tree(arrays, {p[len(prefix) :]: a for p, a in kept.items() if p == self.group or p.startswith(prefix)})


def _under(path: str, linked: set[str]) -> bool:
    """Whether `path` is one of the `linked` paths or lies below one."""
    if not linked:
        return False
    parts = path.split("/")
    return any("/".join(parts[:n]) in linked for n in range(1, len(parts) + 1))


def _record_links(
    url: str, parsed: dict[str, Any], top: str, drop: set[str], groups: dict[str, dict[str, Any]]
) -> set[str]:
    """HDFParser's ``links_and_references=True`` form of a file's links and group reference
    attributes, written into `groups` (path -> attributes): walking the groups from `top` as
    HDFParser does (members by name, depth first), a soft or external link, and a member reached by
    a hard link whose object was already met under another name, is recorded in its group's
    ``links_references`` attribute as a ref-convention object (relative to the group; an external
    link's file resolved against `url`) instead of being copied. Returns the paths of the members
    so recorded (the scan followed them: what lies at or below them is left out)."""
    from virtualizarr.parsers.hdf.hdf import LINKS_REFERENCES_CONVENTION, REF_CONVENTION

    for group, name in parsed.get("reference_attributes") or ():
        attributes = groups.get(group)
        if attributes is not None and name in attributes:
            attributes[name] = _ref_objects(attributes[name], "/" + group)
            _add_convention(attributes, REF_CONVENTION)
    members: dict[str, list[tuple[str, str, str, str]]] = {}
    for group, name, kind, target, path in parsed.get("links") or ():
        members.setdefault(group, []).append((name, kind, target, path))
    seen: dict[str, str] = {}
    linked: set[str] = set()

    def visit(group: str, top_level: bool) -> None:
        here = "/" + group
        links: dict[str, Any] = {}
        for name, kind, target, path in sorted(members.get(group, ()), key=lambda m: m[0].encode()):
            if top_level and name in drop:
                continue
            member = f"{group}/{name}" if group else name
            if kind == "soft":
                links[name] = {"ref": {"node": _relative(target, here) if target.startswith("/") else target}}
            elif kind == "external":
                links[name] = {"ref": {"uri": _resolve_external(url, target), "node": "/" + path.lstrip("/")}}
            elif target in seen:
                links[name] = {"ref": {"node": _relative(seen[target], here)}}
            else:
                seen[target] = "/" + member
                if member in groups:
                    visit(member, False)
                continue
            linked.add(member)
        if links and group in groups:
            _add_convention(groups[group], LINKS_REFERENCES_CONVENTION)
            _add_convention(groups[group], REF_CONVENTION)
            groups[group]["links_references"] = {"links": links}

    visit(top, True)
    return linked


def _resolve_external(url: str, filename: str) -> str:
    """The URL of an external link's file: as written when a URL, a `file://` URL when an absolute
    path, else resolved against the directory of the file `url` (as HDFParser resolves it)."""
    import posixpath

    if "://" in filename:
        return filename
    if filename.startswith("/"):
        return f"file://{filename}"
    base = url.rpartition("/")[0]
    scheme, sep, rest = base.partition("://")
    if not sep:
        return posixpath.normpath(posixpath.join(base, filename))
    root, slash, path = rest.partition("/")
    return f"{scheme}://{root}{slash}{posixpath.normpath(posixpath.join(path, filename))}"


def _source_urls(url: str | None, locations: list[str]) -> list[str]:
    """The URL of each source of a parsed file or archive: the location as a URL (`file://` for a
    local path), and for a parsed file the file's own `url` (as the caller spelled it) for the file
    itself, source 0 (the others are the files its HDF5 external links point into)."""
    def as_url(location: str) -> str:
        return location if "://" in location else Path(location).resolve().as_uri()

    if url is not None and locations:
        return [url] + [as_url(location) for location in locations[1:]]  # the file itself: no lookup
    return [as_url(location) for location in locations]


def _manifest_array(registry: Registry, sources: list[str], item: dict[str, Any]) -> ManifestArray:
    shape = tuple(item["grid_shape"])
    offsets = np.frombuffer(item["offsets"], dtype="<u8").astype(np.uint64).reshape(shape)
    lengths = np.frombuffer(item["lengths"], dtype="<u8").astype(np.uint64).reshape(shape)
    uniform = item.get("uniform_source")
    if uniform is None:
        kinds = np.frombuffer(item["kinds"], dtype=np.uint8).reshape(shape)
        ids = np.frombuffer(item["sources"], dtype="<u4").reshape(shape)
        paths = _paths(sources, kinds, ids)
    else:
        paths = _one_path(sources[uniform], shape)
    inlined = {}
    for linear, data in item["inlined"].items():
        index = np.unravel_index(linear, shape) if shape else ()
        paths[index] = INLINED_CHUNK_PATH
        inlined[tuple(int(i) for i in index)] = data
    zarr_json = _as_hdfparser(item["zarr_json"])
    if '"rectilinear"' in zarr_json:
        zarr_json = _regular_grid(registry, zarr_json, paths, offsets, lengths, inlined)
        _refuse_rectilinear(item["path"], zarr_json, sources[0])
    metadata, oversized = _metadata(zarr_json)
    if oversized:
        return _shrunk(registry, metadata, paths, offsets, lengths, inlined, all_referenced=uniform is not None)
    manifest = ChunkManifest.from_arrays(
        paths=paths, offsets=offsets, lengths=lengths, validate_paths=False, inlined=inlined or None
    )
    return ManifestArray(metadata=metadata, chunkmanifest=manifest)


def _one_path(source: str, shape: tuple[int, ...]) -> np.ndarray[Any, Any]:
    """The paths of an array whose every chunk is referenced from `source` (the Rust side says so:
    no chunk's kind or source is compared here): one assignment (numpy's `full` and fancy indexing of
    variable-length strings cost about ten times as much per chunk)."""
    paths = np.empty(shape, dtype=np.dtypes.StringDType())
    paths[...] = source
    return paths


def _paths(sources: list[str], kinds: np.ndarray[Any, Any], ids: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """The path of every chunk: its source's URL where the chunk is referenced, "" elsewhere (an
    array whose chunks lie in more than one source, or not all in one: `_one_path` otherwise)."""
    paths = np.empty(kinds.shape, dtype=np.dtypes.StringDType())
    paths[...] = ""
    referenced = kinds == _REFERENCED
    if referenced.any():
        paths[referenced] = np.asarray(sources, dtype=np.dtypes.StringDType())[ids[referenced]]
    return paths


def _as_hdfparser(zarr_json: str) -> str:
    """The array's `zarr.json` as HDFParser gives it where vzarr's native store follows libnetcdf:
    fixed-length strings without the `_Encoding: utf-8` the native store adds (so that xarray's Zarr
    backend shows text, as netCDF4 does; HDFParser's store gives bytes, `b'hello'`), and attributes of
    more than one dimension nested to their shape (noted in the `vzarr` field's
    `attribute_shapes`; libnetcdf lists them flat). The text is parsed only when it may need either."""
    strings = '"null_terminated_bytes"' in zarr_json and '"_Encoding"' in zarr_json
    if not strings and '"attribute_shapes"' not in zarr_json:
        return zarr_json
    doc = json.loads(zarr_json)
    attributes = doc.get("attributes") or {}
    data_type = doc.get("data_type")
    length = data_type.get("configuration", {}).get("length_bytes", 0) if isinstance(data_type, dict) else 0
    if strings and length > 1 and attributes.get("_Encoding") == "utf-8":
        del attributes["_Encoding"]
    for name, shape in ((doc.get("vzarr") or {}).get("attribute_shapes") or {}).items():
        value = attributes.get(name)
        if isinstance(value, list) and len(value) == math.prod(shape):
            attributes[name] = np.array(value, dtype=object).reshape(shape).tolist()
    return json.dumps(doc)


def _oversized(metadata: ArrayV3Metadata) -> bool:
    """Whether a chunk is longer than the array along some dimension (HDF5's chunk of an unlimited
    dimension holding fewer values: 512 for a 1-element `time`)."""
    chunks = getattr(metadata.chunk_grid, "chunk_shape", None)
    if chunks is None or not metadata.shape:
        return False
    return any(c > max(s, 1) for c, s in zip(chunks, metadata.shape))


def _shrunk(
    registry: Registry,
    metadata: ArrayV3Metadata,
    paths: np.ndarray[Any, np.dtypes.StringDType],
    offsets: np.ndarray,
    lengths: np.ndarray,
    inlined: dict[tuple[int, ...], bytes],
    all_referenced: bool = False,
) -> ManifestArray:
    """The array with its oversized chunks shrunk to the array, exactly, so that VirtualiZarr can
    concatenate it (its chunks must be regular across files).

    The grid keeps its shape (a dimension whose chunk is longer than the array has one chunk either
    way). Uncompressed chunks trimmed along the first dimension only keep their references: the
    smaller chunk is a prefix of the stored one, as HDFParser trims them. Any other chunk (compressed,
    or trimmed along a later dimension) is read, decoded with the array's codecs, cropped and
    inlined, encoded with the `bytes` codec alone: an exact copy of the values."""
    chunks = _chunk_shape(metadata)
    small = tuple(min(c, max(s, 1)) for c, s in zip(chunks, metadata.shape))
    dtype = metadata.data_type.to_native_dtype()
    raw = len(metadata.codecs) == 1 and getattr(metadata.codecs[0], "endian", "x") != "x"
    if raw and small[1:] == chunks[1:] and dtype.itemsize:
        length = math.prod(small) * dtype.itemsize
        if all_referenced:  # every chunk in a source file (the Rust side said so): no path compared
            lengths = np.full(lengths.shape, length, dtype=np.uint64)
        else:
            lengths = np.where(paths == "", lengths, np.uint64(length)).astype(np.uint64)
        inlined = {index: data[:length] for index, data in inlined.items()}
        new = _with_regular_chunks(metadata, small)
        manifest = ChunkManifest.from_arrays(
            paths=paths, offsets=offsets, lengths=lengths, validate_paths=False, inlined=inlined or None
        )
        return ManifestArray(metadata=new, chunkmanifest=manifest)
    return _inlined_copy(registry, metadata, small, paths, offsets, lengths, inlined)


def _with_regular_chunks(metadata: ArrayV3Metadata, chunks: tuple[int, ...]) -> ArrayV3Metadata:
    """`_with_chunks(metadata, chunks, None)`, made once per metadata object: `_metadata` gives the
    files of an archive one shared object per distinct variable, so the unlimited `time` of 365 daily
    files is shrunk once, not rebuilt through `to_dict`/`from_dict` per file (a third of the parser's
    Python time). The entry keeps its metadata alive, so its `id` cannot be reused while cached."""
    key = (id(metadata), chunks)
    with _metadata_lock:
        hit = _shrunk_metadata.get(key)
    if hit is not None and hit[0] is metadata:
        return hit[1]
    new = _with_chunks(metadata, chunks, codecs=None)
    with _metadata_lock:
        if len(_shrunk_metadata) >= 4096:
            _shrunk_metadata.clear()
        _shrunk_metadata[key] = (metadata, new)
    return new


#: `_with_regular_chunks`'s results: (id of the metadata, chunk shape) -> (the metadata, shrunk).
_shrunk_metadata: dict[tuple[int, tuple[int, ...]], tuple[ArrayV3Metadata, ArrayV3Metadata]] = {}


def _with_chunks(metadata: ArrayV3Metadata, chunks: tuple[int, ...], codecs: list[Any] | None) -> ArrayV3Metadata:
    """`metadata` with chunk shape `chunks` (and `codecs`, when given)."""
    d = metadata.to_dict()
    d["chunk_grid"] = {"name": "regular", "configuration": {"chunk_shape": list(chunks)}}
    if codecs is not None:
        d["codecs"] = codecs
    return ArrayV3Metadata.from_dict(d)


def _inlined_copy(
    registry: Registry,
    metadata: ArrayV3Metadata,
    small: tuple[int, ...],
    paths: np.ndarray[Any, np.dtypes.StringDType],
    offsets: np.ndarray,
    lengths: np.ndarray,
    inlined: dict[tuple[int, ...], bytes],
) -> ManifestArray:
    """Every chunk read from its file (or its inlined bytes), decoded with `metadata`'s codecs,
    cropped to `small` and inlined with the `bytes` codec (little-endian)."""
    codec = {"name": "bytes", "configuration": {"endian": "little"}}
    if metadata.data_type.to_native_dtype().itemsize <= 1:
        codec = {"name": "bytes"}
    new = _with_chunks(metadata, small, codecs=[codec])
    grid = paths.shape
    out_paths = np.full(grid, "", dtype=np.dtypes.StringDType())
    out: dict[tuple[int, ...], bytes] = {}
    for index in np.ndindex(grid):
        if index in inlined:
            encoded = inlined[index]
        elif paths[index]:
            encoded = _read_range(registry, str(paths[index]), int(offsets[index]), int(lengths[index]))
        else:
            continue
        values = _decode_chunk(_doc(metadata), list(_chunk_shape(metadata)), encoded)
        cropped = np.ascontiguousarray(values[tuple(slice(0, n) for n in small)])
        out[index] = cropped.astype(cropped.dtype.newbyteorder("<")).tobytes()
        out_paths[index] = INLINED_CHUNK_PATH
    out_lengths = np.array([len(out.get(i, b"")) for i in np.ndindex(grid)], dtype=np.uint64).reshape(grid)
    manifest = ChunkManifest.from_arrays(
        paths=out_paths,
        offsets=np.zeros(grid, dtype=np.uint64),
        lengths=out_lengths,
        validate_paths=False,
        inlined=out or None,
    )
    return ManifestArray(metadata=new, chunkmanifest=manifest)


def _read_range(registry: Registry, url: str, offset: int, length: int) -> bytes:
    """`length` bytes at `offset` of the file at `url` (a local path or `file://` URL, else through
    the registry's store for the URL)."""
    if url.startswith("file://"):
        path = url2pathname(urlparse(url).path)
    elif "://" not in url:
        path = url
    else:
        import obstore

        store, key = registry.resolve(url)
        return bytes(obstore.get_range(store, key, start=offset, length=length))
    with open(path, "rb") as f:
        f.seek(offset)
        data = f.read(length)
    if len(data) != length:
        raise ValueError(f"{url}: {length} bytes at offset {offset}: the file has {len(data)}")
    return data


def _chunk_shape(metadata: ArrayV3Metadata) -> tuple[int, ...]:
    """The chunk shape of an array on a regular grid."""
    shape: tuple[int, ...] = tuple(getattr(metadata.chunk_grid, "chunk_shape"))
    return shape


def _doc(metadata: ArrayV3Metadata) -> dict[str, Any]:
    """`metadata` as its `zarr.json` document."""
    from zarr.core.buffer import default_buffer_prototype

    doc: dict[str, Any] = json.loads(metadata.to_buffer_dict(default_buffer_prototype())["zarr.json"].to_bytes())
    return doc


def _chunk_doc(doc: dict[str, Any], chunk_shape: list[int]) -> dict[str, Any]:
    """An array document of one chunk of `chunk_shape` with `doc`'s type, fill value and codecs."""
    return dict(
        doc,
        shape=list(chunk_shape),
        chunk_grid={"name": "regular", "configuration": {"chunk_shape": list(chunk_shape)}},
        attributes={},
    )


def _chunk_key(chunk_shape: Sequence[int]) -> str:
    return "c/" + "/".join("0" for _ in chunk_shape) if len(chunk_shape) else "c"


def _decode_chunk(doc: dict[str, Any], chunk_shape: list[int], encoded: bytes) -> np.ndarray[Any, Any]:
    """One chunk's values, decoded by zarr with the array's own codecs (`doc`: its `zarr.json`)."""
    import zarr
    from zarr.core.buffer.cpu import Buffer
    from zarr.storage import MemoryStore

    store = MemoryStore()
    store._store_dict["zarr.json"] = Buffer.from_bytes(json.dumps(_chunk_doc(doc, chunk_shape)).encode())
    store._store_dict[_chunk_key(chunk_shape)] = Buffer.from_bytes(encoded)
    return np.asarray(zarr.open_array(store, mode="r", zarr_format=3)[...])


def _encode_chunk(doc: dict[str, Any], values: np.ndarray[Any, Any]) -> bytes:
    """`values` (one whole chunk) encoded by zarr with the array's own codecs."""
    import zarr
    from zarr.core.buffer.cpu import Buffer
    from zarr.storage import MemoryStore

    store = MemoryStore()
    store._store_dict["zarr.json"] = Buffer.from_bytes(json.dumps(_chunk_doc(doc, list(values.shape))).encode())
    array = zarr.open_array(store, mode="r+", zarr_format=3, config={"write_empty_chunks": True})
    array[...] = values
    return store._store_dict[_chunk_key(values.shape)].to_bytes()


def _edge_sizes(entry: Any, extent: int) -> list[int]:
    """The chunk sizes of one dimension of a `rectilinear` grid (an integer: regular; else a list of
    sizes and [size, count] runs)."""
    if isinstance(entry, int):
        return [entry] * max(1, -(-extent // entry))
    sizes: list[int] = []
    for item in entry:
        sizes.extend([item[0]] * item[1] if isinstance(item, list) else [item])
    return sizes


def _regular_grid(
    registry: Registry,
    zarr_json: str,
    paths: np.ndarray[Any, np.dtypes.StringDType],
    offsets: np.ndarray,
    lengths: np.ndarray,
    inlined: dict[tuple[int, ...], bytes],
) -> str:
    """A combined `rectilinear` grid whose chunks are all of one size per dimension but the last,
    longer one (a file's oversized chunk of an unlimited dimension, last in the concatenation) as
    the regular grid of that size, the last chunks made exact: a prefix of an uncompressed chunk
    cropped along the first dimension, else decoded, cropped and re-encoded with the array's codecs
    and inlined. Other grids are returned as they are (`open_virtual_mfdataset` refuses them)."""
    doc = json.loads(zarr_json)
    entries = doc["chunk_grid"]["configuration"]["chunk_shapes"]
    sizes = [_edge_sizes(e, n) for e, n in zip(entries, doc["shape"])]
    if any(len(s) != n for s, n in zip(sizes, paths.shape)):
        return zarr_json
    regular = [s[0] for s in sizes]
    if any(x != c for s, c in zip(sizes, regular) for x in s[:-1]) or any(s[-1] < c for s, c in zip(sizes, regular)):
        return zarr_json
    doc["chunk_grid"] = {"name": "regular", "configuration": {"chunk_shape": regular}}
    raw = [c["name"] for c in doc["codecs"]] == ["bytes"]
    itemsize = ArrayV3Metadata.from_dict(doc).data_type.to_native_dtype().itemsize
    for index in np.ndindex(paths.shape):
        stored = [sizes[d][i] for d, i in enumerate(index)]
        if stored == regular or not paths[index]:
            continue
        if raw and stored[1:] == regular[1:]:
            length = math.prod(regular) * itemsize
            if index in inlined:
                inlined[index] = inlined[index][:length]
            lengths[index] = length
            continue
        encoded = inlined.get(index) or _read_range(registry, str(paths[index]), int(offsets[index]), int(lengths[index]))
        values = _decode_chunk(doc, stored, encoded)[tuple(slice(0, c) for c in regular)]
        inlined[index] = _encode_chunk(doc, np.ascontiguousarray(values))
        paths[index] = INLINED_CHUNK_PATH
        offsets[index] = 0
        lengths[index] = len(inlined[index])
    return json.dumps(doc)


_metadata_lock = threading.Lock()


def _metadata(zarr_json: str) -> tuple[ArrayV3Metadata, bool]:
    """The array metadata of a ``zarr.json`` text and whether a chunk is longer than the array
    (`_oversized`). The files of an archive mostly share their variables' metadata, and
    ArrayV3Metadata is immutable: each distinct text is parsed and judged once."""
    with _metadata_lock:
        return _parse_metadata(zarr_json)


@lru_cache(maxsize=4096)
def _parse_metadata(zarr_json: str) -> tuple[ArrayV3Metadata, bool]:
    metadata = ArrayV3Metadata.from_dict(json.loads(zarr_json))
    return metadata, _oversized(metadata)


def _tree(arrays: dict[str, ManifestArray], groups: dict[str, dict[str, Any]]) -> ManifestGroup:
    """The nested ManifestGroups of flat array and group paths (relative to the root)."""

    def build(path: str) -> ManifestGroup:
        prefix = f"{path}/" if path else ""
        here = {name[len(prefix) :]: a for name, a in arrays.items() if name.startswith(prefix) and "/" not in name[len(prefix) :]}
        children = {
            g[len(prefix) :]: build(g)
            for g in groups
            if g and g.startswith(prefix) and g != path and "/" not in g[len(prefix) :]
        }
        return ManifestGroup(arrays=here, groups=children, attributes=groups.get(path, {}))

    return build("")


def _registry_options(url: str, registry: Registry) -> dict[str, Any]:
    """The configuration of the registry's store for `url` (obstore stores carry the object_store
    configuration keys vzarr's builders take), for object-store URLs."""
    if url.startswith("file://") or "://" not in url:
        return {}
    try:
        store, _ = registry.resolve(url)
    except Exception:  # noqa: BLE001 - no store registered: the environment's configuration applies
        return {}
    config = getattr(store, "config", None) or {}
    options = {}
    for key, value in dict(config).items():
        if key in ("bucket", "container_name"):
            continue
        options[str(key)] = value if isinstance(value, (bool, str)) else str(value)
    return options


#: The xarray combine keyword values whose result vzarr's combine gives (files that combine cleanly
#: along their concatenation dimensions: the variables without them equal in every file).
_COMBINE_KEYWORDS = {
    "compat": {"no_conflicts", "equals", "identical", "override", "broadcast_equals"},
    "data_vars": {"all", "minimal", "different"},
    "coords": {"different", "minimal", "all"},
    "join": {"outer", "exact", "override"},
    "combine_attrs": {"override", "drop_conflicts", "no_conflicts", "identical"},
}


def open_virtual_mfdataset(
    urls: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    registry: Registry | None = None,
    parser: Parser | None = None,
    concat_dim: str | Sequence[str] | None = None,
    compat: str = "no_conflicts",
    preprocess: Callable[..., Any] | None = None,
    data_vars: str = "all",
    coords: str = "different",
    combine: str = "by_coords",
    parallel: object = False,
    join: str = "outer",
    attrs_file: str | os.PathLike[str] | None = None,
    combine_attrs: str = "override",
    *,
    group: str | None = None,
    drop_variables: Iterable[str] | None = None,
    loadable_variables: Iterable[str] | None = None,
    decode_times: bool | None = None,
    storage_options: Mapping[str, object] | None = None,
    skip_unsupported: bool = False,
) -> "xr.Dataset":
    """VirtualiZarr's `open_virtual_mfdataset` with the files scanned and combined by vzarr in Rust:
    the combined virtual dataset (ManifestArrays; `loadable_variables` loaded as VirtualiZarr loads
    them), ready for ``.vz.to_icechunk()`` / ``.vz.to_kerchunk()``.

    `urls` are paths, URLs or glob patterns. ``combine="nested"`` concatenates along `concat_dim`
    (one name, or several: outermost first) in the order given; ``combine="by_coords"`` (the default)
    finds the dimensions whose coordinates differ between the first two files and orders every file
    by them. `registry` resolves the references when variables are loaded (default: a registry of
    the local file system); `group`, `drop_variables` and `skip_unsupported` (or those of `parser`,
    a `vzarr.virtualizarr.Parser`) select what is read, `storage_options` configure object stores.

    `compat`, `data_vars`, `coords`, `join` and `combine_attrs` are accepted with the values whose
    result vzarr's combine gives (variables without the concatenation dimensions must agree across
    files, attributes are the first file's); others, `preprocess`, `parallel` and `attrs_file`
    raise `NotImplementedError`. A combined chunk grid that is not regular (files of different
    lengths along a chunked dimension: a rectilinear grid, which VirtualiZarr's ManifestArray cannot
    hold) raises `ValueError` naming the dimension and the vzarr call that handles it.
    """
    import xarray  # noqa: F401 - VirtualiZarr's datasets are xarray's

    _check_combine_keywords(
        preprocess, parallel, attrs_file, compat=compat, data_vars=data_vars, coords=coords, join=join,
        combine_attrs=combine_attrs,
    )
    parser = parser or Parser(group=group, drop_variables=drop_variables, skip_unsupported=skip_unsupported,
                              storage_options=storage_options)
    if not isinstance(parser, Parser):
        raise TypeError(f"parser: expected a vzarr.virtualizarr.Parser, got {type(parser).__name__}")
    inputs = [os.fspath(u) for u in ([urls] if isinstance(urls, (str, os.PathLike)) else urls)]
    if not inputs:
        raise OSError("No data sources to open, pass urls to the `urls` parameter.")
    registry = registry if registry is not None else _local_registry()
    if combine == "nested":
        if concat_dim is None:
            raise ValueError("combine='nested' needs concat_dim (the dimension to concatenate along)")
        dims = [concat_dim] if isinstance(concat_dim, str) else list(concat_dim)
    elif combine == "by_coords":
        if concat_dim is not None:
            raise ValueError(
                "When combine='by_coords', passing a value for `concat_dim` has no effect. To manually "
                "combine along a specific dimension you should instead specify combine='nested' along "
                "with a value for `concat_dim`."
            )
        dims = None
    else:
        raise ValueError(f"{combine} is an invalid option for the keyword argument `combine`")
    options = dict(_registry_options(_url(inputs[0]), registry))
    options.update(parser.storage_options)
    if dims is None:
        dims = _differing_dimensions(parser, inputs, registry)
    parsed = _vzarr.parse_archive(
        [_path_of(u) for u in inputs], dims, parser.skip_unsupported, options or None
    )
    for warning in parsed["warnings"]:
        warnings.warn(f"vzarr: {warning}", stacklevel=2)
    store = ManifestStore(registry=registry, group=parser._group(None, registry, parsed))
    return store.to_virtual_dataset(loadable_variables=loadable_variables, decode_times=decode_times)


def _check_combine_keywords(preprocess: object, parallel: object, attrs_file: object, **keywords: str) -> None:
    """Refuses, in one line each, what vzarr's combine does not do."""
    if preprocess is not None:
        raise NotImplementedError("vzarr's open_virtual_mfdataset: preprocess is not supported (vzarr combines in Rust)")
    if parallel not in (False, None):
        raise NotImplementedError(
            "vzarr's open_virtual_mfdataset: parallel is not supported (vzarr scans the files in parallel itself)"
        )
    if attrs_file is not None:
        raise NotImplementedError("vzarr's open_virtual_mfdataset: attrs_file is not supported (attributes are the first file's)")
    for name, value in keywords.items():
        if value not in _COMBINE_KEYWORDS[name]:
            raise NotImplementedError(
                f"vzarr's open_virtual_mfdataset: {name}={value!r} is not supported "
                f"(supported: {', '.join(sorted(_COMBINE_KEYWORDS[name]))})"
            )


def _local_registry() -> Registry:
    from obspec_utils.registry import ObjectStoreRegistry
    from obstore.store import LocalStore

    return ObjectStoreRegistry({"file://": LocalStore()})


def _url(path: str) -> str:
    """A path as a `file://` URL (URLs as they are)."""
    return path if "://" in path else Path(path).resolve().as_uri()


def _path_of(url: str) -> str:
    """A `file://` URL as the local path vzarr's scan takes (other inputs as they are)."""
    return url2pathname(urlparse(url).path) if url.startswith("file://") else url


def _differing_dimensions(parser: Parser, inputs: list[str], registry: Registry) -> list[str]:
    """The dimensions whose coordinate values differ between the first two files (glob patterns
    expanded): what `combine_by_coords` concatenates along."""
    files = _expand(inputs)
    if len(files) < 2:
        return []
    import zarr

    stores = [parser(_url(f), registry) for f in files[:2]]
    groups = [zarr.open_group(s, mode="r", zarr_format=3) for s in stores]
    dims = []
    for name, array in groups[0].arrays():
        other = groups[1].get(name)
        if getattr(array.metadata, "dimension_names", None) != (name,) or not isinstance(other, zarr.Array):
            continue
        if array.shape != other.shape or not np.array_equal(np.asarray(array[...]), np.asarray(other[...])):
            dims.append(name)
    if not dims:
        raise ValueError(
            f"{files[0]}, {files[1]}: no dimension coordinate differs between the first two files; "
            "pass combine='nested' and concat_dim"
        )
    return dims


def _expand(inputs: list[str]) -> list[str]:
    """Local glob patterns expanded (sorted), other inputs as they are."""
    import glob

    files: list[str] = []
    for item in inputs:
        path = _path_of(item)
        if "://" not in path and any(c in path for c in "*?["):
            files.extend(sorted(glob.glob(path)))
        else:
            files.append(item)
    return files


def _refuse_rectilinear(path: str, zarr_json: str, first: str) -> None:
    """One line naming the array and the dimension whose combined chunks are irregular (a grid
    `_regular_grid` could not make regular); `first` is the first file, for the vzarr call."""
    doc = json.loads(zarr_json)
    grid = doc["chunk_grid"]
    if grid.get("name") != "rectilinear":
        return
    names = doc.get("dimension_names") or []
    sizes = [_edge_sizes(e, n) for e, n in zip(grid["configuration"]["chunk_shapes"], doc["shape"])]
    irregular = [i for i, s in enumerate(sizes) if any(x != s[0] for x in s[:-1]) or s[-1] < s[0]]
    i = irregular[0] if irregular else 0
    dim = names[i] if i < len(names) and names[i] else f"#{i}"
    raise ValueError(
        f"{path}: the combined chunks along {dim!r} are irregular (a rectilinear grid, which "
        f"VirtualiZarr's ManifestArray cannot hold); vzarr.scan([{_path_of(first)!r}, ...], concat={dim!r}, "
        f"output=...) writes it, and vzarr.open / xarray.open_dataset(..., engine='vzarr') read it"
    )


def _with_relative_references(path: str, array: ManifestArray) -> ManifestArray:
    """`array` (at `path`) with HDFParser's ``links_and_references=True`` form of its object
    references: reference attributes as ref-convention objects (``{"ref": {"node": relative}}``,
    None for a null reference), and an array of references (or a compound's reference members) as
    the targets' paths relative to the array, in the source's chunks, marked with the Links and
    Object References convention."""
    from virtualizarr.parsers.hdf.hdf import LINKS_REFERENCES_CONVENTION, REF_CONVENTION

    notes = array.metadata.to_dict().get("vzarr") or {}
    if not isinstance(notes, dict):
        return array
    names = notes.get("reference_attributes") or []
    chunk_shape = (notes.get("object_references") or {}).get("chunk_shape")
    if not names and chunk_shape is None and not notes.get("reference_fields"):
        return array
    doc = _doc(array.metadata)
    attributes = doc.setdefault("attributes", {})
    here = "/" + path.strip("/")
    for name in names:
        if name in attributes:
            attributes[name] = _ref_objects(attributes[name], here)
            _add_convention(attributes, REF_CONVENTION)
    fields = notes.get("reference_fields") or []
    if fields:
        return _relative_reference_fields(doc, array, fields, here)
    if chunk_shape is None:
        return ManifestArray(metadata=ArrayV3Metadata.from_dict(doc), chunkmanifest=array.manifest)
    _add_convention(attributes, LINKS_REFERENCES_CONVENTION)
    attributes["links_references"] = {"references": True}
    values = np.asarray(zarr_array_values(array))
    relative = np.vectorize(lambda p: _relative(p, here), otypes=[object])(values) if values.size else values
    shape = tuple(doc["shape"])
    chunks = tuple(max(min(c, s), 1) for c, s in zip(chunk_shape, shape))
    doc["fill_value"] = ""
    doc["chunk_grid"] = {"name": "regular", "configuration": {"chunk_shape": list(chunks)}}
    return _inlined_array(doc, relative, np.full(chunks, "", dtype=object))


def _relative_reference_fields(
    doc: dict[str, Any], array: ManifestArray, fields: list[str], here: str
) -> ManifestArray:
    """A struct array (an HDF5 compound with object reference members, whose values vzarr stores)
    with the paths of its reference `fields` relative to the array at `here`, each field as wide as
    its longest path, in the array's chunks, marked with the Links and Object References convention
    naming the fields, as HDFParser gives it."""
    from virtualizarr.parsers.hdf.hdf import LINKS_REFERENCES_CONVENTION
    from zarr.core.dtype import parse_data_type

    values = np.asarray(zarr_array_values(array))
    relative = {
        name: np.vectorize(lambda p: _relative(str(p), here), otypes=[object])(values[name])
        if values.size
        else values[name].astype(object)
        for name in fields
    }
    names = values.dtype.names or ()
    widest = {name: max((len(v) for v in paths.flat), default=0) for name, paths in relative.items()}
    dtype = np.dtype(
        [(n, f"<U{max(1, widest[n])}") if n in relative else (n, values.dtype.fields[n][0]) for n in names]
    )
    out = np.zeros(values.shape, dtype=dtype)
    for name in names:
        out[name] = relative.get(name, values[name])
    data_type = parse_data_type(dtype, zarr_format=3)
    doc["data_type"] = data_type.to_json(zarr_format=3)
    doc["fill_value"] = data_type.to_json_scalar(data_type.default_scalar(), zarr_format=3)
    attributes = doc.setdefault("attributes", {})
    _add_convention(attributes, LINKS_REFERENCES_CONVENTION)
    attributes["links_references"] = {"references": list(fields)}
    chunks = tuple(doc["chunk_grid"]["configuration"]["chunk_shape"])
    return _inlined_array(doc, out, np.zeros(chunks, dtype=dtype))


def _inlined_array(doc: dict[str, Any], values: np.ndarray[Any, Any], empty: np.ndarray[Any, Any]) -> ManifestArray:
    """The ManifestArray of `doc` whose every chunk (of `empty`'s shape, filled from `empty` past the
    array's end) holds `values`, encoded with the array's codecs and inlined."""
    shape, chunks = values.shape, empty.shape
    grid = tuple(-(-s // c) for s, c in zip(shape, chunks))
    inlined: dict[tuple[int, ...], bytes] = {}
    for index in np.ndindex(grid):
        region = tuple(slice(i * c, min((i + 1) * c, s)) for i, c, s in zip(index, chunks, shape))
        block = empty.copy()
        part = np.asarray(values[region], dtype=empty.dtype)
        block[tuple(slice(0, n) for n in part.shape)] = part
        inlined[index] = _encode_chunk(doc, block)
    lengths = np.zeros(grid, dtype=np.uint64)
    for index, data in inlined.items():
        lengths[index] = len(data)
    manifest = ChunkManifest.from_arrays(
        paths=np.full(grid, INLINED_CHUNK_PATH, dtype=np.dtypes.StringDType()),
        offsets=np.zeros(grid, dtype=np.uint64),
        lengths=lengths,
        validate_paths=False,
        inlined=inlined or None,
    )
    return ManifestArray(metadata=ArrayV3Metadata.from_dict(doc), chunkmanifest=manifest)


def zarr_array_values(array: ManifestArray) -> np.ndarray[Any, Any]:
    """The values of a ManifestArray whose chunks are all inlined (vzarr's store-owned strings)."""
    import zarr
    from zarr.core.buffer.cpu import Buffer
    from zarr.storage import MemoryStore

    store = MemoryStore()
    store._store_dict["zarr.json"] = Buffer.from_bytes(json.dumps(_doc(array.metadata)).encode())
    for index, data in array.manifest._inlined.items():
        key = "c/" + "/".join(str(i) for i in index) if len(index) else "c"
        store._store_dict[key] = Buffer.from_bytes(data)
    return np.asarray(zarr.open_array(store, mode="r", zarr_format=3)[...])


def _relative(target: str, here: str) -> str:
    """The path of `target` from the node `here` (``..`` is the node's parent, as the ref
    convention reads it); the empty string for a null reference."""
    import posixpath

    return posixpath.relpath(target, here) if target else ""


def _ref_objects(value: Any, here: str) -> Any:
    """An attribute's reference paths as ref-convention objects, None for a null reference."""
    if isinstance(value, list):
        return [_ref_objects(v, here) for v in value]
    return {"ref": {"node": _relative(value, here)}} if value else None


def _add_convention(attributes: dict[str, Any], convention: dict[str, Any]) -> None:
    """Registers `convention` in the node's `zarr_conventions` attribute, once."""
    registered = list(attributes.get("zarr_conventions", []))
    if all(not isinstance(c, dict) or c.get("uuid") != convention["uuid"] for c in registered):
        registered.append(dict(convention))
    attributes["zarr_conventions"] = registered


DMRPPParser = Parser
"""`Parser` by the name of VirtualiZarr's DMR++ parser: give it ``.dmrpp`` URLs."""
