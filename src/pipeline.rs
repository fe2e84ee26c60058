//! The whole job as two library calls, for pipelines and language bindings:
//!
//! ```text
//!  Archive (inputs, --concat dims once, options) ──scan()──▶ VirtualDataset ──write_dataset(Output)──▶ Written
//!          inputs::expand_inputs → scan::scan_files → combine::combine       store/ (native, kerchunk, Icechunk;
//!                                                                            local or on an object store)
//! ```
//!
//! [`Archive`] names the inputs (paths, URLs, glob patterns) and how to combine them: the
//! concatenation dimensions are given once and reach both the scan (which records their coordinates
//! and prepares partial last chunks) and the combine. [`write_dataset`] writes the result where
//! [`Output`] says, atomically: a local output is published in one step, an object-store output is
//! written locally and uploaded with the store made visible last.
//!
//! ```no_run
//! # fn demo() -> Result<(), vzarr::pipeline::PipelineError> {
//! use vzarr::pipeline::{write_dataset, Archive, Format, Output};
//! let archive = Archive::new(["fixtures/sample/*.nc"]).concat("time")?;
//! let scanned = archive.scan()?;
//! let written = write_dataset(&scanned.dataset, &Output::new("tas.vzarr", Format::Native))?;
//! println!("{} arrays, {} references", written.arrays().len(), written.references());
//! # Ok(()) }
//! ```

mod append;
mod archive;
mod merge;
mod output;
mod sidecars;

pub use append::{AppendTo, Appended};
pub use archive::{Archive, ScannedArchive, ScannedShard};
pub use merge::MergedParts;
pub use output::{write_dataset, write_dataset_on, Format, Output, Written};
pub use sidecars::{Sidecar, SidecarsWritten};

pub use crate::inputs::InputError;
// The stages a pipeline calls past scanning (`combine/`, `append/`, `compact/`).
pub use crate::append::{load_native, AppendError};
pub use crate::combine::{combine, CombineError, CombineOptions, ConcatDim, DimKey};
pub use crate::compact::{compact_store, describe_edges, ArrayFold, CompactError, CompactOptions, CompactReport};
pub use crate::parts::{Shard, ShardError};

/// A pipeline step that failed; each variant keeps the stage's own error as its source.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PipelineError {
    /// Options that do not fit together (an unparsable `--concat` spec, several files without a
    /// concatenation dimension, ...).
    #[error("{0}")]
    Options(String),
    /// The inputs could not be expanded into files.
    #[error(transparent)]
    Inputs(#[from] crate::inputs::InputError),
    /// A file could not be scanned.
    #[error(transparent)]
    Scan(#[from] crate::scan::ScanError),
    /// The scanned files do not combine.
    #[error(transparent)]
    Combine(#[from] crate::combine::CombineError),
    /// The output could not be written (nothing is left at the destination).
    #[error("writing {output}: {source}")]
    Write {
        /// The output's path or URL.
        output: String,
        /// Why.
        source: crate::store::WriteError,
    },
    /// The Icechunk commit failed (the branch is unchanged). Needs feature `icechunk`.
    #[cfg(feature = "icechunk")]
    #[error(transparent)]
    Icechunk(#[from] crate::store::IcechunkError),
    /// A store that cannot be appended to: missing, not a native store, or busy.
    #[error("{store}: {reason}")]
    Store {
        /// The store.
        store: String,
        /// Why.
        reason: String,
    },
    /// New files that do not follow the store's end, or a store that records no way to append.
    #[error(transparent)]
    Append(#[from] crate::append::AppendError),
    /// Scan parts that are damaged, or not the parts of one run.
    #[error(transparent)]
    Parts(#[from] crate::parts::ShardError),
    /// Scan parts merged along other dimensions than they were scanned along.
    #[error("{}: the parts were scanned along [{}] but are merged along [{}]: merge along the same dimensions", part.display(), scanned.join(", "), given.join(", "))]
    PartsDimensions {
        /// A part.
        part: std::path::PathBuf,
        /// The dimensions the parts were scanned along.
        scanned: Vec<String>,
        /// The dimensions given to the merge.
        given: Vec<String>,
    },
    /// A part on an object store could not be copied for reading.
    #[error("{url}: {what}: {reason}")]
    PartCopy {
        /// The part's URL.
        url: String,
        /// What was being done.
        what: String,
        /// Why it failed, in one line.
        reason: String,
    },
    /// The tokio runtime for object-store inputs or outputs could not be started.
    #[error("starting the I/O runtime: {0}")]
    Runtime(#[source] std::io::Error),
    /// Folding appended steps into the store's grid (`append --chunks time=month`) failed.
    #[error(transparent)]
    Compact(#[from] Box<crate::compact::CompactError>),
}

/// A multi-threaded tokio runtime of two workers, for callers without one of their own (the
/// `*_on` calls take the caller's handle).
///
/// # Errors
/// [`PipelineError::Runtime`] when the runtime cannot be started.
pub fn runtime() -> Result<tokio::runtime::Runtime, PipelineError> {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().map_err(PipelineError::Runtime)
}
