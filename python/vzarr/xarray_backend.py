"""The xarray backend ``engine="vzarr"``: native stores and Icechunk repositories opened lazily.

Only the chunks a selection needs are read (a `BackendArray` over `vzarr.Array`), CF conventions are
decoded as for any file, with the attribute types vzarr recorded (float32 packed data unpack to
float32, as from the source), vzarr's own ``vzarr:`` notes go to each variable's ``encoding``, and
``chunks={}`` gives dask chunks equal to the store's rectilinear grid (the files' own chunk edges,
e.g. the months' lengths)::

    ds = xr.open_dataset("tas.vzarr", engine="vzarr", chunks={})
"""

from __future__ import annotations

import base64
import os
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
from xarray import Dataset, Variable
from xarray.backends import BackendArray, BackendEntrypoint
from xarray.backends.common import AbstractDataStore
from xarray.backends.store import StoreBackendEntrypoint
from xarray.core import indexing
from xarray.core.utils import FrozenDict

from ._store import Array, Store
from ._store import open as open_store


class VzarrBackendArray(BackendArray):
    """A lazily read vzarr array: basic indexing goes to Rust, the rest is done by xarray."""

    def __init__(self, array: Array):
        self.array = array
        self.shape = array.shape
        self.dtype = array.dtype

    def __getitem__(self, key: indexing.ExplicitIndexer) -> np.ndarray[Any, Any]:
        values: np.ndarray[Any, Any] = indexing.explicit_indexing_adapter(
            key, self.shape, indexing.IndexingSupport.BASIC, self._read
        )
        return values

    def _read(self, key: tuple[Any, ...]) -> np.ndarray[Any, Any]:
        return self.array[key]


def _fill_value(attrs: dict[str, Any], dtype: np.dtype) -> None:
    """Decodes a `_FillValue` attribute written in xarray's Zarr v3 form (base64 of the value's
    little-endian bytes) into the value itself, as xarray's zarr backend does."""
    value = attrs.get("_FillValue")
    if not isinstance(value, str) or dtype.kind not in "fcSU":
        return
    try:
        raw = base64.standard_b64decode(value)
    except ValueError:
        return
    if dtype.kind in "fc":
        attrs["_FillValue"] = np.frombuffer(raw, dtype="<f8")[0].astype(dtype) if len(raw) == 8 else value
    else:
        attrs["_FillValue"] = raw


def _enum(name: str, dtype: np.dtype, members: dict[str, int] | None, attrs: dict[str, Any],
          encoding: dict[str, Any]) -> None:
    """An HDF5 enum variable (its `members`, from the ``zarr.json`` extension field) as xarray's
    netCDF4 engine shows one: the members in the encoding's ``dtype`` (metadata ``enum`` and
    ``enum_name``, which xarray writes back as a netCDF-4 enum type), not as the CF flags vzarr
    derived from them for Zarr readers."""
    if not members:
        return
    attrs.pop("flag_values", None)
    attrs.pop("flag_meanings", None)
    # The file's type name is not recorded; the variable's names the type xarray would write.
    encoding["dtype"] = np.dtype(dtype, metadata={"enum": dict(members), "enum_name": name})


class VzarrDataStore(AbstractDataStore):
    """The variables of one group of a vzarr store, for xarray's decoding."""

    def __init__(self, store: Store, group: str | None = None):
        self.store = store
        self.group = (group or "").strip("/")

    def _names(self) -> Iterable[tuple[str, str]]:
        prefix = f"{self.group}/" if self.group else ""
        for path in self.store:
            if path.startswith(prefix) and "/" not in path[len(prefix) :]:
                yield path[len(prefix) :], path

    def get_variables(self) -> Mapping[str, Variable]:
        """The group's arrays as lazily read xarray variables, with their attributes and encoding."""
        variables = {}
        for name, path in self._names():
            array = self.store[path]
            dims = array.dims or tuple(f"{name}_dim_{i}" for i in range(array.ndim))
            attrs = dict(array.attrs)
            _fill_value(attrs, array.dtype)
            encoding = {
                "preferred_chunks": dict(zip(dims, array.chunks)),
                "chunks": tuple(max(edges) if edges else 0 for edges in array.chunks),
                "source": self.store.location,
            }
            # vzarr's notes on how the store holds the data (chunks copied, fill value undefined in
            # the source) are storage facts: xarray keeps those in the encoding, not the attributes
            # (stores written before the notes moved to the extension field had them as attributes).
            notes = array.zarr_metadata.get("vzarr") or {}
            encoding.update({f"vzarr:{k}": notes[k] for k in ("copied_chunks", "fill_value") if k in notes})
            encoding.update({k: attrs.pop(k) for k in list(attrs) if k.startswith("vzarr:")})
            _enum(name, array.dtype, notes.get("enum"), attrs, encoding)
            data = indexing.LazilyIndexedArray(VzarrBackendArray(array))
            variables[name] = Variable(dims, data, attrs, encoding)
        return FrozenDict(variables)

    def get_attrs(self) -> Mapping[str, Any]:
        """The group's attributes."""
        return FrozenDict(self.store.group_attrs(self.group))

    def get_dimensions(self) -> Any:
        """Not used: dimensions come with the variables."""
        raise NotImplementedError("vzarr stores give dimensions through their variables")

    def close(self) -> None:
        """Nothing to release: reads open the sources as they go."""
        pass


class VzarrBackendEntrypoint(BackendEntrypoint):
    """``xr.open_dataset(path, engine="vzarr")``: a native vzarr store (``*.vzarr``) or an Icechunk
    repository, opened lazily."""

    description = "Open vzarr stores (virtual Zarr v3 over HDF5/NetCDF archives) and Icechunk repositories"
    url = "https://github.com/vzarr/vzarr"
    open_dataset_parameters = (
        "filename_or_obj",
        "drop_variables",
        "group",
        "allow_sources",
        "branch",
        "storage_options",
        "check_sources",
        "mask_and_scale",
        "decode_times",
        "concat_characters",
        "decode_coords",
        "use_cftime",
        "decode_timedelta",
    )

    def guess_can_open(self, filename_or_obj: Any) -> bool:
        """A path ending in ``.vzarr`` or a directory holding ``vzarr.json``."""
        if not isinstance(filename_or_obj, (str, os.PathLike)):
            return False
        path = os.fspath(filename_or_obj)
        return path.rstrip("/").endswith(".vzarr") or os.path.isfile(os.path.join(path, "vzarr.json"))

    def open_dataset(
        self,
        filename_or_obj: Any,
        *,
        drop_variables: Any = None,
        group: str | None = None,
        allow_sources: Sequence[str] = (),
        branch: str | None = None,
        storage_options: Mapping[str, object] | None = None,
        check_sources: bool = True,
        mask_and_scale: bool = True,
        decode_times: Any = True,
        concat_characters: bool = True,
        decode_coords: Any = True,
        use_cftime: bool | None = None,
        decode_timedelta: Any = None,
    ) -> Dataset:
        """The store (a path, URL or `vzarr.Store`) as an xarray Dataset read through vzarr;
        `allow_sources`, `branch`, `storage_options` and `check_sources` as in `vzarr.open`."""
        if isinstance(filename_or_obj, Store):
            store = filename_or_obj
        else:
            store = open_store(
                filename_or_obj,
                allow_sources=allow_sources,
                branch=branch,
                storage_options=storage_options,
                check_sources=check_sources,
            )
        if group and group.strip("/") not in store.groups:
            # As xarray's netCDF4 engine: a missing group is an OSError naming it.
            raise OSError(f"{store.location}: no group {group.strip('/')!r} in the store")
        datastore = VzarrDataStore(store, group)
        return StoreBackendEntrypoint().open_dataset(
            datastore,
            mask_and_scale=mask_and_scale,
            decode_times=decode_times,
            concat_characters=concat_characters,
            decode_coords=decode_coords,
            drop_variables=drop_variables,
            use_cftime=use_cftime,
            decode_timedelta=decode_timedelta,
        )
