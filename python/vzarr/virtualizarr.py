"""A VirtualiZarr parser backed by vzarr's Rust scanner: HDF5, NetCDF-4, NetCDF-3 and HDF4 files, local or
on object stores, safe in thread pools (no HDF5 lock: vzarr reads the format itself)::

    from obspec_utils.registry import ObjectStoreRegistry
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
import threading
import warnings
from functools import lru_cache
from typing import Iterable, Mapping

import numpy as np
from virtualizarr.manifests import ChunkManifest, ManifestArray, ManifestGroup, ManifestStore
from virtualizarr.manifests.manifest import INLINED_CHUNK_PATH
from zarr.core.metadata import ArrayV3Metadata

from . import _vzarr

_MISSING, _REFERENCED, _INLINED = 0, 1, 2


class Parser:
    """VirtualiZarr's parser protocol (``__call__(url, registry) -> ManifestStore``) over vzarr.

    Parameters
    ----------
    group
        Only this group (and the groups below it) of the file.
    drop_variables
        Variables (array paths relative to `group`) left out.
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
        skip_unsupported: bool = False,
        storage_options: Mapping[str, object] | None = None,
    ):
        self.group = (group or "").strip("/")
        self.drop_variables = set(drop_variables or ())
        self.skip_unsupported = skip_unsupported
        self.storage_options = dict(storage_options or {})

    def __call__(self, url: str, registry) -> ManifestStore:
        options = _registry_options(url, registry)
        options.update(self.storage_options)
        parsed = _vzarr.parse_file(url, self.skip_unsupported, options or None)
        for warning in parsed["warnings"]:
            warnings.warn(f"vzarr: {warning}", stacklevel=2)
        return ManifestStore(registry=registry, group=self._group(url, parsed))

    def _group(self, url: str, parsed: dict) -> ManifestGroup:
        prefix = f"{self.group}/" if self.group else ""
        groups = {path: json.loads(attrs) for path, attrs in parsed["groups"]}
        if self.group and self.group not in groups:
            raise ValueError(f"{url}: no group {self.group!r}")
        arrays: dict[str, ManifestArray] = {}
        for item in parsed["arrays"]:
            path = item["path"]
            if not path.startswith(prefix):
                continue
            relative = path[len(prefix) :]
            if relative in self.drop_variables:
                continue
            # A sidecar's chunks lie in its data file.
            arrays[relative] = _manifest_array(parsed.get("data_url") or url, item)
        return _tree(arrays, {p[len(prefix) :]: a for p, a in groups.items() if p == self.group or p.startswith(prefix)})


def _manifest_array(url: str, item: dict) -> ManifestArray:
    shape = tuple(item["grid_shape"])
    kinds = np.frombuffer(item["kinds"], dtype=np.uint8).reshape(shape)
    offsets = np.frombuffer(item["offsets"], dtype="<u8").astype(np.uint64).reshape(shape)
    lengths = np.frombuffer(item["lengths"], dtype="<u8").astype(np.uint64).reshape(shape)
    paths = np.full(shape, "", dtype=np.dtypes.StringDType())
    paths[kinds == _REFERENCED] = url
    inlined = {}
    for linear, data in item["inlined"].items():
        index = np.unravel_index(linear, shape) if shape else ()
        paths[index] = INLINED_CHUNK_PATH
        inlined[tuple(int(i) for i in index)] = data
    manifest = ChunkManifest.from_arrays(
        paths=paths, offsets=offsets, lengths=lengths, validate_paths=False, inlined=inlined or None
    )
    return ManifestArray(metadata=_metadata(item["zarr_json"]), chunkmanifest=manifest)


_metadata_lock = threading.Lock()


def _metadata(zarr_json: str) -> ArrayV3Metadata:
    """The array metadata of a ``zarr.json`` text. The files of an archive mostly share their
    variables' metadata, and ArrayV3Metadata is immutable: each distinct text is parsed once."""
    with _metadata_lock:
        return _parse_metadata(zarr_json)


@lru_cache(maxsize=4096)
def _parse_metadata(zarr_json: str) -> ArrayV3Metadata:
    return ArrayV3Metadata.from_dict(json.loads(zarr_json))


def _tree(arrays: dict[str, ManifestArray], groups: dict[str, dict]) -> ManifestGroup:
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


def _registry_options(url: str, registry) -> dict:
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


DMRPPParser = Parser
"""`Parser` by the name of VirtualiZarr's DMR++ parser: give it ``.dmrpp`` URLs."""
