//! Stage 3, combine -> store: the contract every store format's writer keeps.
//!
//! Every writer implements [`Writer`] (`write(dataset, destination, options)`, atomic: on error
//! nothing is left at the destination) and returns the store's summary ([`StoreInfo`], `store/summary`).
//! The writers themselves live with their formats in `formats/` (native, kerchunk JSON, kerchunk
//! Parquet, Icechunk, DMR++), each folder holding the format's layout, writer, reader and export.
//! What they share is here: [`WriteError`] and [`WriteOptions`], the summary, and atomic
//! publishing, locally (`store/publish`: a hidden sibling, `syncfs`, `renameat2`) and on object
//! stores (`store/publish_remote`: conditional puts and a lock object).

mod format;
mod icechunk_error;
mod lock;
pub(crate) mod publish;
mod publish_remote;
mod summary;

pub use format::{StoreFormat, UnknownFormat};
pub(crate) use icechunk_error::one_line;
#[cfg(feature = "icechunk")]
pub use icechunk_error::IcechunkError;
pub(crate) use lock::lock;
#[cfg(all(feature = "cli", debug_assertions))]
pub(crate) use publish::sync_count;
pub use publish::{OutputKind, Staged};
pub use publish_remote::{url_sources, RemoteOutput, SINGLE_PUT_MAX};
pub use summary::{ArrayInfo, BlockDigests, StoreInfo, StoreInfoError, STORE_FORMAT_VERSION, STORE_INFO_FILE};

use std::path::{Path, PathBuf};

use crate::dataset::VirtualDataset;

/// A store that could not be written. Nothing is left at the destination when this is returned.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WriteError {
    /// The destination exists and overwriting was not asked for.
    #[error("{}: already exists", path.display())]
    Exists {
        /// The destination.
        path: PathBuf,
    },
    /// The destination exists but is not an output of the kind written: `--overwrite` only replaces
    /// what vzarr would write there, never other files or directories.
    #[error("{}: exists and is not {kind}: refusing to replace it (remove it yourself if it must go)", path.display())]
    NotReplaceable {
        /// The destination.
        path: PathBuf,
        /// What it would have to be ("a vzarr store", ...).
        kind: &'static str,
    },
    /// The destination is one of the inputs, or a directory containing one.
    #[error("{}: is or contains the input {}: refusing to write there", path.display(), input.display())]
    Input {
        /// The destination.
        path: PathBuf,
        /// The input it would destroy.
        input: PathBuf,
    },
    /// A node's name cannot be stored (it collides with a vzarr file or is not a valid path segment).
    #[error("{}: {node}: {reason}", path.display())]
    BadName {
        /// The destination.
        path: PathBuf,
        /// The group or array path.
        node: String,
        /// Why it cannot be written.
        reason: String,
    },
    /// Writing a file failed.
    #[error("{}: {what}: {source}", path.display())]
    Io {
        /// The file being written.
        path: PathBuf,
        /// What was being written.
        what: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The store-owned bytes of an array could not be read back (from the spill file).
    #[error("{}: {array}: {source}", path.display())]
    Owned {
        /// The destination.
        path: PathBuf,
        /// The array.
        array: String,
        /// What failed.
        source: Box<crate::dataset::OwnedBytesError>,
    },
    /// An object-store request failed while publishing an output there.
    #[error("{url}: {what}: {reason}")]
    Remote {
        /// The destination URL.
        url: String,
        /// What was being done.
        what: String,
        /// What failed, in a few words (the server's error code and message when it sent one).
        reason: String,
    },
    /// Another writer is writing the destination (it holds the destination's lock object).
    #[error("{url}: being written by another vzarr ({holder}); if that writer is gone, delete {url}/{lock} or wait until it is stale")]
    Busy {
        /// The destination URL.
        url: String,
        /// Who holds the lock, as its lock object says.
        holder: String,
        /// The lock object's name below the destination.
        lock: &'static str,
    },
    /// Encoding an array's manifest failed.
    #[error("{}: {array}: encoding manifest: {source}", path.display())]
    Manifest {
        /// The destination.
        path: PathBuf,
        /// The array path.
        array: String,
        /// The cause.
        source: crate::manifest::ManifestError,
    },
    /// The Icechunk commit failed (the repository's branches are unchanged).
    #[cfg(feature = "icechunk")]
    #[error(transparent)]
    Icechunk(Box<IcechunkError>),
}

/// Options shared by writers.
#[derive(Debug, Clone, Default)]
pub struct WriteOptions {
    /// Replace an existing destination of the same kind (atomically: the old store stays intact
    /// until the new one is complete; see `store/publish`). Default: false.
    pub overwrite: bool,
}

/// The local source files of a dataset (URLs left out): what an output must not replace or contain.
pub(crate) fn local_sources(sources: &crate::manifest::SourceTable) -> Vec<PathBuf> {
    sources.iter().filter_map(|s| crate::source::local_path(&s.location)).collect()
}

/// Persists a virtual dataset.
pub trait Writer {
    /// Writes `dataset` to `destination`, atomically: on error nothing is left there.
    ///
    /// # Errors
    /// [`WriteError`] naming the file or node that could not be written.
    fn write(
        &self,
        dataset: &VirtualDataset,
        destination: &Path,
        options: &WriteOptions,
    ) -> Result<StoreInfo, WriteError>;
}

/// The [`WriteError::Io`] of doing `what` to `path`.
pub(crate) fn io_error(path: &Path, what: &str) -> impl FnOnce(std::io::Error) -> WriteError {
    let path = path.to_path_buf();
    let what = what.to_string();
    move |source| WriteError::Io { path, what, source }
}
