"""VirtualiZarr's side of benches/sidecars.rs: every DMR++ sidecar under an S3 prefix opened with
`open_virtual_mfdataset` and `DMRPPParser` (what `earthaccess.open_virtual_mfdataset` does on NASA's
granules), concatenated along one dimension, as VirtualiZarr's documentation shows: the prefix listed,
the sidecars parsed one after another (`parallel=False`, the default), the dimension coordinate loaded
from the data files (the default `loadable_variables`).

    python sidecars_virtualizarr.py BUCKET PREFIX CONCAT_DIM

Prints the combined dataset's sizes. The S3 endpoint and credentials come from AWS_ENDPOINT_URL,
AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_REGION.
"""

import os
import sys

import obstore
from obspec_utils.registry import ObjectStoreRegistry
from obstore.store import S3Store
from virtualizarr import open_virtual_mfdataset
from virtualizarr.parsers import DMRPPParser


def main():
    bucket, prefix, concat_dim = sys.argv[1:4]
    store = S3Store(
        bucket,
        endpoint=os.environ["AWS_ENDPOINT_URL"],
        access_key_id=os.environ["AWS_ACCESS_KEY_ID"],
        secret_access_key=os.environ["AWS_SECRET_ACCESS_KEY"],
        region=os.environ["AWS_REGION"],
        client_options={"allow_http": True},
    )
    keys = [meta["path"] for batch in obstore.list(store, prefix=prefix) for meta in batch]
    urls = [f"s3://{bucket}/{key}" for key in sorted(keys) if key.endswith(".dmrpp")]
    registry = ObjectStoreRegistry({f"s3://{bucket}": store})
    ds = open_virtual_mfdataset(
        urls, registry=registry, parser=DMRPPParser(), concat_dim=concat_dim, combine="nested"
    )
    print(dict(ds.sizes))


if __name__ == "__main__":
    main()
