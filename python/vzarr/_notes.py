"""vzarr's notes in ``zarr.json`` (the extension field ``"vzarr"``) applied, so that attributes and
dtypes are the source reader's (h5py, netCDF4), not what JSON and Zarr's struct can say:

- attribute encodings: the values JSON text cannot hold (HDF5 opaque values, strings that are not
  valid UTF-8), written as base64, as ``bytes``;
- attribute types: numbers of their type (``np.float32``), complex numbers from their JSON objects
  ``{"r": .., "i": ..}`` (``np.complex64``), h5py's booleans (JSON ``true``/``false``) as
  ``np.bool_`` and arrays of booleans;
- the ``compound`` note: a struct array's NumPy dtype with the source compound's declared member
  order and its array members as subarray fields, over the same packed bytes.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

import numpy as np

_COMPLEX = ("complex64", "complex128")


def typed_attrs(
    attrs: dict[str, Any], types: dict[str, str], encodings: dict[str, str] | None = None
) -> dict[str, Any]:
    """`attrs` (JSON values) as the source's reader gives them, with `types` (``attribute_types``)
    and `encodings` (``attribute_encodings``: the attributes written as base64, given as bytes)."""
    out = {name: _boolean(value) for name, value in attrs.items()}
    for name, encoding in (encodings or {}).items():
        if encoding == "base64" and name in out:
            out[name] = _bytes(out[name])
    for name, type_name in types.items():
        value = out.get(name)
        if type_name in _COMPLEX:
            typed = _complex(value, np.dtype(type_name))
        elif isinstance(value, (int, float, list)) and not isinstance(value, bool):
            typed = np.asarray(value, dtype=np.dtype(type_name))
        else:
            continue
        if typed is not None:
            out[name] = typed[()] if typed.ndim == 0 else typed
    return out


def _bytes(value: Any) -> Any:
    """An attribute JSON text could not hold, from its base64 text: ``bytes``, or for an array an
    ``S`` array as h5py gives fixed-length strings (an HDF5 opaque value too, which h5py gives as
    ``np.void`` of the same bytes). A value that is not base64 is left as it is."""
    try:
        if isinstance(value, str):
            return base64.b64decode(value, validate=True)
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            return np.array([base64.b64decode(v, validate=True) for v in value])
    except binascii.Error:
        pass
    return value


def _boolean(value: Any) -> Any:
    """JSON booleans (vzarr writes h5py's boolean attributes so) as h5py reads them."""
    if isinstance(value, bool):
        return np.bool_(value)
    if isinstance(value, list) and value and all(isinstance(v, bool) for v in value):
        return np.array(value, dtype=bool)
    return value


def _complex(value: Any, dtype: np.dtype) -> np.ndarray | None:
    """A complex attribute's JSON objects of two parts (real first), None when it is not that."""

    def number(part: Any) -> complex | None:
        if not isinstance(part, dict) or len(part) != 2:
            return None
        real, imag = part.values()
        if not all(isinstance(p, (int, float)) and not isinstance(p, bool) for p in (real, imag)):
            return None
        return complex(real, imag)

    values = [number(v) for v in value] if isinstance(value, list) else number(value)
    if values is None or (isinstance(values, list) and (not values or None in values)):
        return None
    return np.asarray(values, dtype=dtype)


def compound_dtype(descr: list[Any], note: dict[str, Any]) -> np.dtype[Any]:
    """The NumPy dtype of a struct whose packed fields `descr` (NumPy's list of (name, type)) hold
    a compound described by `note` (the ``compound`` note): fields at their packed offsets, listed
    in the declared order, array members as subarrays, nested compounds likewise."""
    fields: dict[str, tuple[np.dtype, int]] = {}
    offset = 0
    for name, fmt in descr:
        dtype = _field_dtype(name, fmt, note)
        fields[name] = (dtype, offset)
        offset += dtype.itemsize
    names = note.get("member_order") or [name for name, _ in descr]
    return np.dtype(
        {
            "names": names,
            "formats": [fields[n][0] for n in names],
            "offsets": [fields[n][1] for n in names],
            "itemsize": offset,
        }
    )


def _field_dtype(name: str, fmt: Any, note: dict[str, Any]) -> np.dtype:
    """Field `name` of type `fmt` (a NumPy type string or a struct's list): an array member's
    nested structs of fields "0", "1", ... become one subarray of its base type."""
    dims = (note.get("array_members") or {}).get(name) or []
    base = fmt
    for _ in dims:
        base = base[0][1]
    nested = (note.get("members") or {}).get(name) or {}
    base_dtype = compound_dtype(base, nested) if isinstance(base, list) else np.dtype(base)
    return np.dtype((base_dtype, tuple(dims))) if dims else base_dtype
