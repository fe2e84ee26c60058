"""Writes the fixtures of HDF5 external links (tests/native_hdf5/external_links.rs).

    make_external_links.py DIR

DIR/target.h5 (h5py): group /grp with a dimension scale x (40), a chunked float32 dataset (40, 30) in
16 x 16 chunks with gzip and shuffle whose first axis is x, a contiguous int16 dataset and a group
attribute; and /data with a chunked, zlib-compressed int32 dataset (12, 5) and a contiguous float64
dataset (5, 6).
DIR/main.h5 (h5py): a dataset of its own, then external links to target.h5's group /grp, to its two
datasets in /data, a dangling link to a missing file and one to a missing object of target.h5; a
subgroup holds a link to target.h5's /data (a group reached twice through links).
DIR/netcdf.h5 (h5py): what libnetcdf opens of main.h5 (it refuses a file with a dangling link, and a
linked group whose dataset has a dimension scale: netCDF4-python fails on it): the dataset of its own,
the links to target.h5's two datasets in /data and the subgroup's link to /data.
DIR/cycle_a.h5 and DIR/cycle_b.h5 (h5py): each has a dataset and an external link to the other's root
group (a cycle).
DIR/day1.h5 and DIR/day2.h5 (h5py): a time coordinate (3 values each, unlimited) and a link
`values` to a float32 (time, 4) dataset with the time scale in day1_data.h5 / day2_data.h5; combined
along time.
"""

import sys
from pathlib import Path

import h5py
import numpy as np


def write_target(path):
    with h5py.File(path, "w") as f:
        grp = f.create_group("grp")
        grp.attrs["title"] = "linked group"
        x = grp.create_dataset("x", data=np.arange(40, dtype="f8") * 0.5)
        x.make_scale("x")
        values = np.arange(40 * 30, dtype="f4").reshape(40, 30) / 7.0
        chunked = grp.create_dataset("chunked", data=values, chunks=(16, 16), compression="gzip", shuffle=True)
        chunked.attrs["units"] = "K"
        chunked.dims[0].attach_scale(x)
        grp.create_dataset("contig", data=np.arange(10, dtype="<i2") - 3)
        data = f.create_group("data")
        data.create_dataset(
            "compressed", data=np.arange(60, dtype="i4").reshape(12, 5) * 11, chunks=(5, 5), compression="gzip"
        )
        data.create_dataset("contiguous", data=np.linspace(-1, 1, 30).reshape(5, 6))


def write_main(path):
    with h5py.File(path, "w") as f:
        f.create_dataset("local", data=np.arange(8, dtype="f8") ** 2, chunks=(4,))
        f["linked_group"] = h5py.ExternalLink("target.h5", "/grp")
        f["linked_chunked"] = h5py.ExternalLink("target.h5", "/data/compressed")
        f["linked_contig"] = h5py.ExternalLink("target.h5", "/data/contiguous")
        f["dangling_file"] = h5py.ExternalLink("missing.h5", "/x")
        f["dangling_object"] = h5py.ExternalLink("target.h5", "/nope")
        sub = f.create_group("sub")
        sub["again"] = h5py.ExternalLink("target.h5", "/data")


def write_netcdf(path):
    with h5py.File(path, "w") as f:
        f.create_dataset("local", data=np.arange(8, dtype="f8") ** 2, chunks=(4,))
        f["linked_chunked"] = h5py.ExternalLink("target.h5", "/data/compressed")
        f["linked_contig"] = h5py.ExternalLink("target.h5", "/data/contiguous")
        f.create_group("sub")["again"] = h5py.ExternalLink("target.h5", "/data")


def write_cycle(dir):
    for me, other in (("cycle_a", "cycle_b"), ("cycle_b", "cycle_a")):
        with h5py.File(dir / f"{me}.h5", "w") as f:
            f.create_dataset("v", data=np.arange(3, dtype="i4") + (10 if me == "cycle_b" else 0))
            f["other"] = h5py.ExternalLink(f"{other}.h5", "/")


def write_days(dir):
    for day in (1, 2):
        with h5py.File(dir / f"day{day}_data.h5", "w") as f:
            time = f.create_dataset("time", data=np.arange(3, dtype="f8") + 3 * (day - 1), maxshape=(None,))
            time.make_scale("time")
            values = np.arange(12, dtype="f4").reshape(3, 4) + 100 * day
            v = f.create_dataset("values", data=values, chunks=(3, 4), maxshape=(None, 4), compression="gzip")
            v.dims[0].attach_scale(time)
        with h5py.File(dir / f"day{day}.h5", "w") as f:
            time = f.create_dataset("time", data=np.arange(3, dtype="f8") + 3 * (day - 1), maxshape=(None,))
            time.make_scale("time")
            f["values"] = h5py.ExternalLink(f"day{day}_data.h5", "/values")


def main():
    dir = Path(sys.argv[1])
    dir.mkdir(parents=True, exist_ok=True)
    write_target(dir / "target.h5")
    write_main(dir / "main.h5")
    write_netcdf(dir / "netcdf.h5")
    write_cycle(dir)
    write_days(dir)


if __name__ == "__main__":
    main()
