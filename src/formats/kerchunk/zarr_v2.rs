//! The Zarr v2 documents of kerchunk's formats (zarr-specs v2, "Metadata"), both ways:
//! `zarr_v2/decode` reads `.zgroup`/`.zarray`/`.zattrs` keys into the Zarr v3 documents vzarr reads
//! (kerchunk JSON with v2 keys, kerchunk Parquet's `.zmetadata`); `zarr_v2/encode` writes Zarr v3
//! metadata as those documents (the kerchunk Parquet writer and export).

pub(crate) mod decode;
#[cfg(feature = "kerchunk-parquet")]
pub(crate) mod encode;
