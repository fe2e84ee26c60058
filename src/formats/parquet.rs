//! kerchunk Parquet reference sets (kerchunk's `docs/source/spec.rst`, "Parquet references"): a
//! directory of consolidated Zarr v2 metadata (`.zmetadata`) and per array `refs.N.parq` record
//! files, the layout fsspec's `LazyReferenceMapper` reads.
//!
//! - `parquet/write`: [`KerchunkParquetWriter`] and the `.zmetadata` builder the export shares;
//! - `parquet/records`: the record files' rows and columns;
//! - `parquet/read`: a set opened as a store, served as the kerchunk reader's reference view;
//! - `parquet/export`: an opened store of any format exported as the same set.
//!
//! Needs feature `kerchunk-parquet`.

mod export;
mod read;
mod records;
mod write;

pub use export::{export_kerchunk_parquet, KerchunkParquetOptions, KerchunkParquetReport};
pub(crate) use read::{detect, open};
pub use write::{KerchunkParquetWriter, DEFAULT_RECORD_SIZE, ZMETADATA};
