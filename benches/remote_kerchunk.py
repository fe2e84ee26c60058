"""kerchunk's side of benches/remote.rs: scan every NetCDF-4 file under an S3 prefix as its
documentation shows (SingleHdf5ToZarr over an s3fs file object, per file), then combine them along one
dimension (MultiZarrToZarr) and write the references as JSON. A combine kerchunk refuses is reported
on stdout; the per-file references are written then.

    python remote_kerchunk.py BUCKET/PREFIX CONCAT_DIM OUT.json

The S3 endpoint and credentials come from AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY
and AWS_REGION.
"""

import json
import os
import sys

import s3fs
from kerchunk.combine import MultiZarrToZarr
from kerchunk.hdf import SingleHdf5ToZarr


def main():
    prefix, concat_dim, out = sys.argv[1:4]
    fs = s3fs.S3FileSystem(
        key=os.environ["AWS_ACCESS_KEY_ID"],
        secret=os.environ["AWS_SECRET_ACCESS_KEY"],
        client_kwargs={"endpoint_url": os.environ["AWS_ENDPOINT_URL"], "region_name": os.environ["AWS_REGION"]},
    )
    singles = []
    for path in sorted(fs.glob(f"{prefix}/*.nc")):
        url = f"s3://{path}"
        with fs.open(url, "rb") as f:
            singles.append(SingleHdf5ToZarr(f, url).translate())
    # The coordinate values MultiZarrToZarr needs are inlined in the references (small arrays are).
    # Files whose chunks differ along the axis (months of 28-31 days) cannot be combined by kerchunk:
    # say so on stdout and keep the per-file references.
    try:
        combined = MultiZarrToZarr(singles, concat_dims=[concat_dim]).translate()
    except ValueError as e:
        print(f"MultiZarrToZarr refused: {str(e).splitlines()[0]}")
        combined = {"singles": singles}
    with open(out, "w") as f:
        json.dump(combined, f)


if __name__ == "__main__":
    main()
