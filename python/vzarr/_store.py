"""`vzarr.open`, `vzarr.Store` and `vzarr.Array`: a store's arrays read as NumPy arrays."""

from __future__ import annotations

import ast
import dataclasses
import json
import os
import threading
from collections.abc import Mapping
from typing import Any, Iterator, Sequence

import numpy as np

from . import _vzarr
from ._notes import compound_dtype, typed_attrs


def open(
    store: str | os.PathLike[str],
    *,
    allow_sources: Sequence[str] = (),
    branch: str | None = None,
    storage_options: Mapping[str, object] | None = None,
    check_sources: bool = True,
) -> "Store":
    """Opens a native store (``*.vzarr``, local or on an object store) or an Icechunk repository (a
    directory or URL; its `branch`, default ``main``).

    Sources are read only inside trusted containers: the user's trust list (which `vzarr.scan` and
    ``vzarr scan`` fill), ``VZARR_ALLOW_SOURCES`` and `allow_sources`. With `check_sources` (the
    default) every source's size, ETag and modification time are compared with the scan's before it
    is read (`vzarr.SourceChanged`). Raises `vzarr.NotFound` when there is no store.

    The store and its arrays pickle as how to open them (location, options, the containers trusted
    here), never as data: a copy sent to another process (dask.distributed workers, multiprocessing)
    opens the store there on first use, once per process.
    """
    location = os.fspath(store)
    how = _OpenArgs(
        location if "://" in location else os.path.abspath(location),
        tuple(allow_sources),
        branch,
        dict(storage_options) if storage_options else None,
        check_sources,
    )
    inner = how.open()
    return Store(inner, dataclasses.replace(how, allow_sources=tuple(inner.trusted)))


@dataclasses.dataclass(frozen=True)
class _OpenArgs:
    """How a store was opened: what a copy in another process opens it with."""

    location: str
    allow_sources: tuple[str, ...]
    branch: str | None
    storage_options: dict[str, object] | None
    check_sources: bool

    def open(self) -> "_vzarr.Store":
        """Opens the store in this process."""
        return _vzarr.Store.open(
            self.location, list(self.allow_sources), self.storage_options, self.check_sources, self.branch
        )

    def key(self) -> str:
        """A text naming these arguments, the key of this process's opened stores."""
        return json.dumps(dataclasses.asdict(self), sort_keys=True, default=repr)


#: The stores and arrays this process opened from pickled copies, by `_OpenArgs.key` (and the
#: array's path), each with the process that opened it: a forked child opens its own, the parent's
#: runtime threads do not survive a fork.
_REOPENED: dict[str, "tuple[int, _vzarr.Store]"] = {}
_REOPENED_ARRAYS: dict[str, "tuple[int, _vzarr.Array]"] = {}
_REOPENED_LOCK = threading.RLock()


def _once_per_process(cache: dict[str, tuple[int, Any]], key: str, open_it: Any) -> Any:
    """What `open_it()` opens, opened once per process and kept in `cache` under `key`."""
    pid = os.getpid()
    with _REOPENED_LOCK:
        held = cache.get(key)
        if held is None or held[0] != pid:
            held = cache[key] = (pid, open_it())
        return held[1]


def _reopened(how: _OpenArgs) -> "_vzarr.Store":
    """The store `how` opens, opened once per process."""
    store: _vzarr.Store = _once_per_process(_REOPENED, how.key(), how.open)
    return store


def _reopened_array(how: _OpenArgs, path: str) -> "_vzarr.Array":
    """The array at `path` of the store `how` opens, opened once per process."""
    array: _vzarr.Array = _once_per_process(
        _REOPENED_ARRAYS, f"{how.key()}\0{path}", lambda: _reopened(how).array(path)
    )
    return array


def _unpickle_store(how: _OpenArgs) -> "Store":
    """A store received from another process: opened on first use."""
    return Store(None, how)


def _unpickle_array(store: "Store", path: str, state: dict[str, Any]) -> "Array":
    """An array received from another process, with the metadata it was sent with; its store is
    opened when the array is first read."""
    array = Array.__new__(Array)
    array.__dict__.update(state)
    array._store = store
    array._inner = None
    array._pid = None
    return array


class Store(Mapping[str, "Array"]):
    """An opened store: a mapping of array paths (``"tas"``, ``"group/var"``) to `Array`."""

    def __init__(self, inner: "_vzarr.Store | None", how: _OpenArgs | None = None):
        # `inner` is None for a copy received from another process: `how` opens it on first use.
        self._opened = inner
        self._pid = os.getpid()
        self._how = how
        self._path_list: list[str] | None = None
        self._arrays: dict[str, Array] = {}

    @property
    def _inner(self) -> "_vzarr.Store":
        """The opened store of this process."""
        if self._opened is None or self._pid != os.getpid():
            if self._how is None:
                raise RuntimeError("this vzarr.Store was opened in another process and cannot be re-opened here")
            self._opened, self._pid = _reopened(self._how), os.getpid()
        return self._opened

    @property
    def _paths(self) -> list[str]:
        if self._path_list is None:
            self._path_list = list(self._inner.array_paths())
        return self._path_list

    def __reduce__(self) -> tuple[Any, ...]:
        if self._how is None:
            raise TypeError("a vzarr.Store made from a bare _vzarr.Store cannot be pickled: open it with vzarr.open")
        return (_unpickle_store, (self._how,))

    @property
    def location(self) -> str:
        """Where the store was opened from."""
        if self._opened is not None:
            return self._opened.location
        assert self._how is not None  # a copy from another process, not opened yet
        return self._how.location

    @property
    def attrs(self) -> dict[str, Any]:
        """The root group's attributes."""
        return self.group_attrs("")

    @property
    def groups(self) -> list[str]:
        """Group paths, the root (``""``) first."""
        return list(self._inner.group_paths())

    def group_attrs(self, path: str) -> dict[str, Any]:
        """The attributes of the group at `path`, as the source file's reader shows them (h5py's
        booleans as ``np.bool_``, values JSON text cannot hold as ``bytes``)."""
        doc = json.loads(self._inner.node_metadata(path))
        encodings = (doc.get("vzarr") or {}).get("attribute_encodings") or {}
        return typed_attrs(doc.get("attributes", {}), {}, encodings)

    @property
    def info(self) -> dict[str, Any]:
        """The store's summary: sources, arrays and chunk counts, provenance, warnings."""
        info: dict[str, Any] = json.loads(self._inner.info_json())
        return info

    def zarr_metadata(self, path: str) -> bytes:
        """The ``zarr.json`` document of the group or array at `path`."""
        return self._inner.node_metadata(path)

    def __getitem__(self, path: str) -> "Array":
        if path not in self._arrays:
            if path not in self._paths:
                raise KeyError(path)
            self._arrays[path] = Array(self._inner.array(path), self)
        return self._arrays[path]

    def __iter__(self) -> Iterator[str]:
        return iter(self._paths)

    def __len__(self) -> int:
        return len(self._paths)

    def __repr__(self) -> str:
        return f"<vzarr.Store {self.location!r}: {len(self)} arrays>"

    def _repr_html_(self) -> str:
        """Jupyter's view: location, sources, references and each array with its chunk grid."""
        from ._repr import store_html

        return store_html(self)

    def zarr_store(self) -> "Any":
        """A read-only `zarr.abc.store.Store` serving this store's ``zarr.json`` documents and chunk
        bytes straight from the sources, for `zarr.open_group` and `xarray.open_zarr`. Arrays with
        rectilinear chunk grids need ``zarr.config.set({"array.rectilinear_chunks": True})``."""
        from .zarr_store import VzarrStore

        return VzarrStore(self)


class Array:
    """One array of a store. Indexing (integers, slices with a positive step, Ellipsis) reads the
    selection in parallel in Rust, with the GIL released, and returns a NumPy array."""

    def __init__(self, inner: "_vzarr.Array", store: "Store | None" = None):
        self._inner: "_vzarr.Array | None" = inner
        self._pid: int | None = os.getpid()
        self._store = store
        self._metadata: dict[str, Any] = json.loads(inner.metadata_json())
        kind = inner.dtype
        self._strings = kind == "str"
        if self._strings:
            self.dtype = np.dtype(object)
        elif kind.startswith("["):
            # A struct: NumPy's list of (name, type) pairs, shown as the source's compound (declared
            # member order, array members as subarrays) when vzarr noted how (`_notes`).
            descr = ast.literal_eval(kind)
            note = (self._metadata.get("vzarr") or {}).get("compound")
            self.dtype = compound_dtype(descr, note) if note else np.dtype(descr)
        else:
            self.dtype = np.dtype(kind)
        self.shape = tuple(inner.shape)
        self.path = inner.path
        dims = inner.dims
        self.dims = tuple(dims) if dims is not None else None
        self.chunks = tuple(tuple(edges) for edges in inner.chunks)

    def _array(self) -> "_vzarr.Array":
        """The opened array of this process (re-opened through its store in a process it was sent to)."""
        if self._inner is None or self._pid != os.getpid():
            store = self._store
            if store is None:
                raise RuntimeError(f"vzarr array {self.path!r} has no store to re-open it from")
            inner = store._inner.array(self.path) if store._how is None else _reopened_array(store._how, self.path)
            self._inner, self._pid = inner, os.getpid()
        return self._inner

    def __reduce__(self) -> tuple[Any, ...]:
        if self._store is None:
            raise TypeError(f"vzarr array {self.path!r} has no store to re-open it from and cannot be pickled")
        state = {k: v for k, v in self.__dict__.items() if k not in ("_inner", "_pid", "_store")}
        return (_unpickle_array, (self._store, self.path, state))

    @property
    def attrs(self) -> dict[str, Any]:
        """The array's attributes as the source file's reader shows them: numbers of the types vzarr
        recorded for them in the ``zarr.json`` extension field ``"vzarr"`` (``np.float32`` for a
        float32 ``scale_factor``: JSON numbers carry no type; ``np.complex64`` for a complex
        attribute, a JSON object of its parts), h5py's booleans as ``np.bool_``, values JSON text
        cannot hold (written as base64: opaque values, strings that are not UTF-8) as ``bytes``,
        and the attributes withheld there from Zarr readers that fail on them (a char array's
        ``_FillValue``, as bytes)."""
        return _source_attrs(self._metadata, self.dtype)

    @property
    def fill_value(self) -> Any:
        """The fill value, as ``zarr.json`` writes it."""
        return self._metadata.get("fill_value")

    @property
    def zarr_metadata(self) -> dict[str, Any]:
        """The array's ``zarr.json`` document."""
        return self._metadata

    @property
    def ndim(self) -> int:
        """Number of dimensions."""
        return len(self.shape)

    @property
    def size(self) -> int:
        """Number of elements."""
        return int(np.prod(self.shape, dtype=np.int64))

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d array")
        return self.shape[0]

    def __repr__(self) -> str:
        return f"<vzarr.Array {self.path!r} {self.shape} {self.dtype}>"

    def _repr_html_(self) -> str:
        """Jupyter's view: shape, dtype, dimensions, references and the chunk grid drawn to scale."""
        from ._repr import array_html

        return array_html(self, self._store.info if self._store is not None else None)

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray[Any, Any]:
        data = self[...]
        return data if dtype is None else data.astype(dtype)

    def __getitem__(self, key: Any) -> np.ndarray[Any, Any]:
        entries, out_shape = _selection(key, self.shape)
        if self._strings:
            values = self._array().read_strings(entries)
            out = np.empty(len(values), dtype=object)
            out[:] = values
            return out.reshape(out_shape)
        count = int(np.prod(out_shape, dtype=np.int64))
        buffer = bytearray(count * self.dtype.itemsize)
        self._array().read_into(entries, buffer)
        return np.frombuffer(buffer, dtype=self.dtype).reshape(out_shape)

    def chunk_bytes(self, coords: Sequence[int]) -> bytes | None:
        """The stored (encoded) bytes of chunk `coords`; None for a chunk never written."""
        return self._array().chunk_bytes([int(c) for c in coords])


def _source_attrs(metadata: dict[str, Any], dtype: np.dtype) -> dict[str, Any]:
    """An array's ``attributes`` with the notes of its ``"vzarr"`` extension field applied."""
    notes = metadata.get("vzarr") or {}
    attrs = typed_attrs(
        metadata.get("attributes", {}), notes.get("attribute_types") or {}, notes.get("attribute_encodings") or {}
    )
    for name, value in (notes.get("withheld_attributes") or {}).items():
        if name == "_FillValue" and dtype.kind == "S" and isinstance(value, str):
            value = value.encode("utf-8")
        attrs[name] = value
    return attrs


def _selection(key: Any, shape: tuple[int, ...]) -> tuple[list[Any], tuple[int, ...]]:
    """Per dimension an index or ``(start, stop, step)``, and the result's shape (NumPy rules)."""
    if not isinstance(key, tuple):
        key = (key,)
    ellipses = sum(1 for k in key if k is Ellipsis)
    if ellipses > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if ellipses:
        at = key.index(Ellipsis)
        key = key[:at] + (slice(None),) * (len(shape) - len(key) + 1) + key[at + 1 :]
    if len(key) > len(shape):
        raise IndexError(f"too many indices: the array is {len(shape)}-dimensional, {len(key)} were given")
    entries: list[Any] = []
    out_shape: list[int] = []
    for dim, (k, n) in enumerate(zip(key, shape)):
        if isinstance(k, (int, np.integer)) and not isinstance(k, (bool, np.bool_)):
            i = int(k)
            if i < 0:
                i += n
            if not 0 <= i < n:
                raise IndexError(f"index {int(k)} is out of bounds for axis {dim} with size {n}")
            entries.append(i)
        elif isinstance(k, slice):
            start, stop, step = k.indices(n)
            if step < 1:
                raise IndexError("vzarr reads slices with a positive step")
            stop = max(stop, start)
            entries.append((start, stop, step))
            out_shape.append(len(range(start, stop, step)))
        else:
            raise TypeError(
                f"vzarr arrays are indexed with integers, slices and Ellipsis, not {type(k).__name__}"
            )
    for n in shape[len(key) :]:
        entries.append((0, n, 1))
        out_shape.append(n)
    return entries, tuple(out_shape)
