//! # vzarr: virtual Zarr v3 datasets over HDF5 and NetCDF archives
//!
//! vzarr records where every chunk of every variable of an archive's files lives, and presents the
//! whole archive as Zarr v3 arrays without copying a byte.
//!
//! ```text
//!  files ──scan──▶ VirtualDataset ──(combine)──▶ VirtualDataset ──write──▶ store (*.vzarr, ...)
//!  (.nc/.h5)  scan/          dataset.rs                       formats/<format>/write  (store/: the contract)
//!                                                                            │
//!  values ◀──decode (rayon)◀──fetch (tokio, object_store)◀──plan (grid + manifest)◀──read/ ◀── formats/<format>/read
//!                                                                                     │
//!  kerchunk JSON / Parquet ◀── formats/<format>/export;  materialized Zarr ◀── export/ ◀┘
//! ```
//!
//! Rooms depend only on rooms before them in that flow (`export` on `formats` on `read` on `store`
//! on `dataset` and the pure model); none imports a later one. Each store format is one folder of
//! `formats/` (its layout, writer, reader and export); `read/` knows none of them.
//!
//! The pure model (`grid`, `codec`, `manifest`, `metadata`, `dataset`, `ndcopy`) knows nothing of
//! HDF5, netCDF or I/O. [`grid::ChunkGrid`] is the spine: the scanner builds `zarr.json` from it and
//! the reader resolves selections through it.
//!
//! The whole job is two calls of [`pipeline`]; reading goes through [`read::Store`] (async) or
//! [`read::blocking::BlockingStore`]:
//!
//! ```no_run
//! # fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use vzarr::grid::{DimSelection, Selection};
//! use vzarr::pipeline::{write_dataset, Archive, Format, Output};
//! use vzarr::read::blocking::BlockingStore;
//! use vzarr::read::{Authorization, OpenOptions, ReadOptions};
//! // Scan and combine in one call; the concatenation dimensions are given once.
//! let scanned = Archive::new(["cmip/*.nc"]).concat("member=attr:variant_label")?.concat("time")?.scan()?;
//! let written = write_dataset(&scanned.dataset, &Output::new("tas.vzarr", Format::Native))?;
//! // Sources are read only inside authorized containers: here the ones this store was written for
//! // (`Authorization::from_user_config()` gives what the command line trusts).
//! let options = OpenOptions::new(Authorization::new(written.source_containers()));
//! let store = BlockingStore::open_with("tas.vzarr", &options)?;
//! let tas = store.array("tas")?;
//! let week = Selection::new([DimSelection::from(0), DimSelection::from(0..7)], &tas.reader().shape())?;
//! let values = tas.read(&week, &ReadOptions::default())?.to_ndarray::<f32>()?;
//! # Ok(()) }
//! ```

//!
//! ## Features
//!
//! | feature | default | what it gates |
//! | --- | --- | --- |
//! | `cli` | yes | the command line: the `cli` module and the `vzarr` binary (brings `icechunk`) |
//! | `verify` | yes | the `verify` module, the oracle of `vzarr verify` (links libnetcdf, libhdf5, libhdf4) |
//! | `icechunk` | yes | Icechunk repositories: `formats::IcechunkWriter`, `formats::write_icechunk` and the other `formats::Icechunk*` items, opening repositories with [`read::Store`] |
//! | `aws`, `gcp`, `azure`, `http` | yes | object-store backends for `s3://`, `gs://`, `az://`, `http(s)://` sources and outputs (no items; without one, such a URL is a one-line error naming the feature) |
//! | `zstd` | yes | zstd through libzstd (no items; without it the pure-Rust `ruzstd`) |
//!
//! Every item that needs a feature says so in its documentation ("Needs feature ..."); on docs.rs the
//! items carry the feature badge. `default-features = false` is pure Rust: no C library, no
//! command-line crates.

#![cfg_attr(docsrs, feature(doc_cfg))]
#![warn(missing_docs, unreachable_pub)]
#![warn(clippy::missing_errors_doc)]

mod append;
mod base64;
mod cftime;
pub mod chunking;
#[cfg(feature = "cli")]
pub mod cli;
mod codec;
mod combine;
mod compact;
pub mod dataset;
mod error_kind;
pub mod export;
pub mod formats;
pub mod grid;
mod inputs;
mod kinds;
mod manifest;
mod metadata;
mod ndcopy;
mod parts;
pub mod pipeline;
pub mod read;
mod rechunk;
pub mod scan;
mod source;
mod store;
mod test_hooks;
mod trust;
#[cfg(feature = "verify")]
pub mod verify;

pub use dataset::VirtualDataset;
pub use error_kind::ErrorKind;
pub use formats::NativeWriter;
pub use grid::{ChunkGrid, Selection};
pub use read::{ArrayData, ArrayReader, ReadError, ReadOptions, Store};
pub use scan::{scan_file, ScanError, ScanOptions};
pub use store::{WriteError, WriteOptions, Writer};

#[doc(hidden)]
pub mod testing;
