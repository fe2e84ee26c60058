"""Writes Python kerchunk's own reference JSON (Zarr v2 keys) for netCDF-4/HDF5 files, as a user of
kerchunk makes it: one file's (`SingleHdf5ToZarr`), or several concatenated along a dimension
(`MultiZarrToZarr`). The cargo test `interop::kerchunk_documents_of_python_kerchunk_open_as_stores`
opens what this writes through vzarr and compares every value with libnetcdf's read of the files.

Usage: kerchunk_refs.py OUT.json FILE [FILE ...] [--concat DIM]
"""

import argparse
import json

from kerchunk.combine import MultiZarrToZarr
from kerchunk.hdf import SingleHdf5ToZarr


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("files", nargs="+")
    parser.add_argument("--concat", help="the dimension to concatenate the files along")
    args = parser.parse_args()
    singles = [SingleHdf5ToZarr(path, inline_threshold=100).translate() for path in args.files]
    if args.concat:
        doc = MultiZarrToZarr(singles, concat_dims=[args.concat]).translate()
    else:
        doc = singles[0]
    with open(args.out, "w") as out:
        json.dump(doc, out)


if __name__ == "__main__":
    main()
