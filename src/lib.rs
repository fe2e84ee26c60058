//! # vzarr: virtual Zarr v3 datasets over HDF5 and NetCDF archives
//!
//! vzarr records where every chunk of every variable of an archive's files lives, and presents the
//! whole archive as Zarr v3 arrays without copying a byte.
//!
//! ```text
//!  files ──scan──▶ VirtualDataset ──(combine)──▶ VirtualDataset ──write──▶ store (*.vzarr)
//!  (.nc/.h5)  scan/          dataset.rs                                    store/
//!                                                                            │
//!  values ◀──decode (rayon)◀──fetch (tokio, object_store)◀──plan (grid + manifest)◀──read/
//! ```
//!
//! The pure model (`grid`, `codec`, `manifest`, `metadata`, `dataset`, `ndcopy`) knows nothing of
//! HDF5, netCDF or I/O. [`grid::ChunkGrid`] is the spine: the scanner builds `zarr.json` from it and
//! the reader resolves selections through it.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use vzarr::{scan_file, NativeWriter, ScanOptions, Selection, Store, WriteOptions, Writer, ReadOptions};
//! let dataset = scan_file("fixtures/sample/tas_2023-01.nc".as_ref(), &ScanOptions::default())?;
//! let info = NativeWriter.write(&dataset, "tas.vzarr".as_ref(), &WriteOptions::default())?;
//! // Sources are read only inside authorized containers: here the ones this store was written for
//! // (`vzarr::trust::Authorization::from_user_config()` gives what the command line trusts).
//! let store = Store::open("tas.vzarr", &vzarr::trust::Authorization::new(&info.source_containers)).await?;
//! let tas = store.array("tas").await?;
//! let first_day = tas.read(&Selection::parse("0", &tas.shape())?, &ReadOptions::default()).await?;
//! # Ok(()) }
//! ```

#![warn(missing_docs, unreachable_pub)]
#![warn(clippy::missing_errors_doc)]

pub mod append;
mod base64;
pub mod cftime;
#[cfg(feature = "cli")]
pub mod cli;
pub mod codec;
pub mod combine;
pub mod dataset;
pub mod grid;
pub mod inputs;
pub mod manifest;
pub mod metadata;
mod ndcopy;
pub mod parts;
pub mod pipeline;
pub mod read;
pub mod scan;
pub mod source;
pub mod store;
mod test_hooks;
pub mod trust;
#[cfg(feature = "verify")]
pub mod verify;

pub use dataset::VirtualDataset;
pub use grid::{ChunkGrid, Selection};
pub use read::{ArrayData, ArrayReader, ReadError, ReadOptions, Store};
pub use scan::{scan_file, ScanError, ScanOptions};
pub use store::{NativeWriter, WriteError, WriteOptions, Writer};
