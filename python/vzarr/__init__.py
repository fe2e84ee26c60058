"""vzarr: virtual Zarr v3 datasets over archives of HDF5, NetCDF-4, NetCDF-3 and HDF4 files.

Scan an archive into a store without copying a byte, then open it from Python::

    import vzarr
    report = vzarr.scan("archive/*.nc", concat=["time"], output="tas.vzarr")
    store = vzarr.open("tas.vzarr")
    tas = store["tas"]
    week = tas[59:66, :, 10]          # a NumPy array, read from the source files

    import xarray as xr
    ds = xr.open_dataset("tas.vzarr", engine="vzarr", chunks={})   # dask chunks = the store's grid

Everything runs in vzarr's Rust library (scans and reads in parallel, the GIL released); no C
library is needed at run time.
"""

from ._vzarr import (
    AlreadyExists,
    Error,
    NotAuthorized,
    NotFound,
    ScanError,
    SelectionError,
    SourceChanged,
    __version__,
)
from ._compact import ArrayFold, CompactReport, compact, materialize
from ._export import export
from ._scan import AppendReport, PartReport, ScanReport, append, merge, scan
from ._store import Array, Store, open

__all__ = [
    "AlreadyExists",
    "AppendReport",
    "Array",
    "ArrayFold",
    "CompactReport",
    "Error",
    "NotAuthorized",
    "NotFound",
    "PartReport",
    "ScanError",
    "ScanReport",
    "SelectionError",
    "SourceChanged",
    "Store",
    "__version__",
    "append",
    "compact",
    "export",
    "materialize",
    "merge",
    "open",
    "scan",
]
