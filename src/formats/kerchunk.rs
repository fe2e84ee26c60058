//! kerchunk reference JSON (version 1): a store as one document of inline metadata and
//! `[url, offset, length]` references.
//!
//! - `kerchunk/write`: [`KerchunkWriter`] and the streaming document writer both entry points share;
//! - `kerchunk/read`: a document opened as a store (Zarr v3 keys as vzarr writes them, or Zarr v2
//!   keys as Python kerchunk does), parsed into a compact form;
//! - `kerchunk/zarr_v2`: the Zarr v2 mapping, both ways (read here, written by `formats/parquet`);
//! - `kerchunk/export`: an opened store of any format exported as the same document.

mod export;
pub(crate) mod read;
mod write;
pub(crate) mod zarr_v2;

pub use export::{export_kerchunk, KerchunkOptions};
pub(crate) use read::{detect, open};
pub(crate) use write::RefsWriter;
pub use write::{KerchunkReport, KerchunkWriter, KERCHUNK_VERSION};
