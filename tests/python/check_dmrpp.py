"""VirtualiZarr's DMRPPParser reads vzarr's DMR++ sidecars (issue 39).

    check_dmrpp.py FILE...   for each FILE, FILE.dmrpp (written by vzarr beside it) is opened with
                             DMRPPParser, root group and every subgroup, and every variable's values
                             read through the resulting ManifestStore equal h5py's.

Prints one `ok   FILE VARIABLE` line per variable; exits 1 on the first difference.
"""

import sys

import h5py
import numpy as np
import xarray as xr
from obspec_utils.registry import ObjectStoreRegistry
from obstore.store import LocalStore
from virtualizarr.parsers import DMRPPParser


def fail(message):
    print(f"FAIL {message}")
    sys.exit(1)


def groups(h5):
    """The group paths of an HDF5 file, the root first ("")."""
    found = [""]
    h5.visititems(lambda name, obj: found.append(name) if isinstance(obj, h5py.Group) else None)
    return found


def check(path):
    registry = ObjectStoreRegistry({"file://": LocalStore()})
    with h5py.File(path, "r") as h5:
        for group in groups(h5):
            parser = DMRPPParser(group=f"/{group}" if group else None)
            store = parser(f"file://{path}.dmrpp", registry)
            ds = xr.open_zarr(store, consolidated=False, zarr_format=3, mask_and_scale=False, decode_times=False)
            node = h5[group] if group else h5
            for name, obj in node.items():
                if not isinstance(obj, h5py.Dataset) or obj.dtype.kind not in "iuf":
                    continue
                # VirtualiZarr parses neither a variable without stored chunks nor dmrpp:compact (on BES's
                # sidecars as on vzarr's): those are compared against BES's sidecars in Rust instead.
                layout = obj.id.get_create_plist().get_layout()
                unallocated = obj.id.get_offset() is None if layout == h5py.h5d.CONTIGUOUS else False
                # Nor a scalar: its chunk shape is empty, so it lists no chunk (it reads the fill value).
                scalar = obj.shape == ()
                if layout == h5py.h5d.COMPACT or unallocated or scalar or (obj.chunks and obj.id.get_num_chunks() == 0):
                    print(f"skip {path} {group}/{name}: no chunks VirtualiZarr parses")
                    continue
                if name not in ds.variables:
                    fail(f"{path} {group}/{name}: not in VirtualiZarr's dataset")
                want = obj[...]
                got = ds[name].values
                if got.shape != want.shape or not np.array_equal(got, want, equal_nan=want.dtype.kind == "f"):
                    fail(f"{path} {group}/{name}: differs from h5py")
                print(f"ok   {path} {group}/{name} {want.shape}")


for file in sys.argv[1:]:
    check(file)
