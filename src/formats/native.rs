//! The native store format (`*.vzarr`): Zarr v3 metadata plus a binary chunk manifest per array
//! (docs/design/001-manifest-format.md).
//!
//! - `native/layout`: the file names below the store's directory, the contract of both sides;
//! - `native/write`: [`NativeWriter`], atomic by construction (a hidden sibling published in one step);
//! - `native/read`: the store opened as a [`StoreBackend`](crate::read), manifests read a block at a
//!   time as lookups need them, each checked against the binding it was written with.
//!
//! A native store is exported to other formats by `formats/kerchunk` and `formats/parquet`, and
//! copied by `export/materialize`.

pub(crate) mod layout;
mod read;
mod write;

pub(crate) use read::{detect, open};
pub(crate) use write::write_file;
pub use write::NativeWriter;
