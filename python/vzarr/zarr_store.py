"""`vzarr.Store.zarr_store()`: a read-only zarr-python store serving a vzarr store's ``zarr.json``
documents and chunk bytes straight from the source files, no kerchunk JSON in between::

    import zarr
    zarr.config.set({"array.rectilinear_chunks": True})   # vzarr's grids follow the files' chunks
    group = zarr.open_group(vzarr.open("tas.vzarr").zarr_store(), mode="r")
    ds = xr.open_zarr(vzarr.open("tas.vzarr").zarr_store(), consolidated=False)

Keys are Zarr v3's: ``zarr.json``, ``<group>/zarr.json``, ``<array>/zarr.json`` and chunk keys
``<array>/c/<i>/<j>/...`` (the default ``/`` chunk key encoding). A chunk's bytes are read from its
source file (or the store, for chunks vzarr holds itself) in Rust, with the GIL released, on a
worker thread so that zarr's event loop keeps running.
"""

from __future__ import annotations

import asyncio
from typing import AsyncIterator, Iterable, Iterator, Protocol, Sequence

from zarr.abc.store import ByteRequest, OffsetByteRequest, RangeByteRequest, Store, SuffixByteRequest
from zarr.core.buffer import Buffer, BufferPrototype


class ChunkSource(Protocol):
    """What the zarr store needs of one array: its rank and its stored chunks (`vzarr.Array`)."""

    @property
    def ndim(self) -> int:
        """The array's number of dimensions."""
        ...

    def chunk_bytes(self, coords: Sequence[int]) -> bytes | None:
        """The stored bytes of the chunk at `coords`, None for a missing chunk."""
        ...


class NodeSource(Protocol):
    """What the zarr store needs of a vzarr store: its nodes' documents and arrays (`vzarr.Store`).
    Declared here, so that this module imports nothing of the package's store module (which
    imports this one)."""

    @property
    def location(self) -> str:
        """The store's location."""
        ...

    @property
    def groups(self) -> list[str]:
        """The store's group paths."""
        ...

    def zarr_metadata(self, path: str) -> bytes:
        """The ``zarr.json`` bytes of node `path`."""
        ...

    def __getitem__(self, path: str) -> ChunkSource:
        """Array `path`."""
        ...

    def __iter__(self) -> Iterator[str]:
        """The store's array paths."""
        ...

_READ_ONLY = "vzarr stores are read-only through zarr: write with vzarr.scan"


class VzarrStore(Store):
    """A vzarr store as a read-only `zarr.abc.store.Store`."""

    supports_writes = False
    supports_deletes = False
    supports_partial_writes = False
    supports_listing = True

    def __init__(self, store: NodeSource):
        super().__init__(read_only=True)
        self._store = store
        self._arrays = set(store)
        self._groups = set(store.groups)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, VzarrStore) and other._store.location == self._store.location

    def __repr__(self) -> str:
        return f"VzarrStore({self._store.location!r})"

    def _node_of(self, key: str) -> tuple[str, tuple[int, ...] | None] | None:
        """(node path, None) for a ``zarr.json`` key, (array path, chunk coordinates) for a chunk
        key, None for any other key."""
        if key == "zarr.json":
            return "", None
        if key.endswith("/zarr.json"):
            node = key[: -len("/zarr.json")]
            return (node, None) if node in self._arrays or node in self._groups else None
        array, sep, rest = key.rpartition("/c/")
        if not sep and key.startswith("c/"):
            array, rest = "", key[2:]
        elif not sep and key == "c":
            array, rest = "", ""
        if array not in self._arrays:
            return None
        try:
            coords = tuple(int(part) for part in rest.split("/")) if rest else ()
        except ValueError:
            return None
        return array, coords

    def _read(self, key: str) -> bytes | None:
        node = self._node_of(key)
        if node is None:
            return None
        path, coords = node
        if coords is None:
            return self._store.zarr_metadata(path)
        array = self._store[path]
        if len(coords) != array.ndim or (array.ndim == 0 and coords):
            return None
        return array.chunk_bytes(coords)

    async def get(
        self, key: str, prototype: BufferPrototype, byte_range: ByteRequest | None = None
    ) -> Buffer | None:
        """The bytes at `key` (a byte range of them), None when absent."""
        data = await asyncio.to_thread(self._read, key)
        if data is None:
            return None
        if byte_range is not None:
            data = _slice(data, byte_range)
        return prototype.buffer.from_bytes(data)

    async def get_partial_values(
        self, prototype: BufferPrototype, key_ranges: Iterable[tuple[str, ByteRequest | None]]
    ) -> list[Buffer | None]:
        """The byte ranges asked for, one per (key, range) pair."""
        return list(await asyncio.gather(*(self.get(k, prototype, r) for k, r in key_ranges)))

    async def exists(self, key: str) -> bool:
        """Whether `key` holds a document or a chunk."""
        node = self._node_of(key)
        if node is None:
            return False
        if node[1] is None:
            return True
        return await asyncio.to_thread(self._read, key) is not None

    async def set(self, key: str, value: Buffer) -> None:
        """Refused: the store is read-only."""
        raise PermissionError(_READ_ONLY)

    async def delete(self, key: str) -> None:
        """Refused: the store is read-only."""
        raise PermissionError(_READ_ONLY)

    def _metadata_keys(self) -> list[str]:
        keys = ["zarr.json"]
        keys += [f"{g}/zarr.json" for g in sorted(self._groups) if g]
        keys += [f"{a}/zarr.json" for a in sorted(self._arrays)]
        return keys

    async def list(self) -> AsyncIterator[str]:
        """Every key."""
        # Chunk keys are not listed: an archive can hold 10^8 of them, and zarr never needs the list.
        for key in self._metadata_keys():
            yield key

    async def list_prefix(self, prefix: str) -> AsyncIterator[str]:
        """The keys starting with `prefix`."""
        for key in self._metadata_keys():
            if key.startswith(prefix):
                yield key

    async def list_dir(self, prefix: str) -> AsyncIterator[str]:
        """The keys and prefixes directly under `prefix`."""
        prefix = prefix.rstrip("/")
        start = f"{prefix}/" if prefix else ""
        seen = set()
        for key in self._metadata_keys():
            if not key.startswith(start):
                continue
            child = key[len(start) :].split("/", 1)[0]
            if child not in seen:
                seen.add(child)
                yield child


def _slice(data: bytes, byte_range: ByteRequest) -> bytes:
    if isinstance(byte_range, RangeByteRequest):
        return data[byte_range.start : byte_range.end]
    if isinstance(byte_range, OffsetByteRequest):
        return data[byte_range.offset :]
    if isinstance(byte_range, SuffixByteRequest):
        return data[-byte_range.suffix :] if byte_range.suffix else b""
    raise TypeError(f"unexpected byte range {byte_range!r}")
