//! Stage 4, store -> read: open a store and read any selection of any array.
//!
//! A read runs in three steps (STYLE practice 10):
//! 1. **plan** (`read/plan`, pure): selection -> chunk spans through the array's [`ChunkGrid`] ->
//!    manifest entries -> batches of byte ranges grouped by file;
//! 2. **fetch** (`read/fetch`, tokio + object_store): each batch's ranges, at most
//!    `max_concurrent_requests` files at a time, nearby ranges coalesced by object_store; the next
//!    batch is fetched while the current one decodes;
//! 3. **decode** (`read/decode`, rayon): chunks decoded in parallel straight into the output buffer.
//!
//! The API is async (no runtime is built inside the library); [`blocking`] wraps it for synchronous
//! callers.
//!
//! [`ChunkGrid`]: crate::grid::ChunkGrid

mod array_data;
pub mod blocking;
mod decode;
mod fetch;
mod open;
mod plan;
mod strings;
pub(crate) use strings::MAX_ELEMENTS as MAX_STRING_ELEMENTS;

pub use array_data::{ArrayData, Element};
pub use open::{ArrayReader, Store};

use crate::codec::CodecError;
use crate::grid::GridError;
use crate::manifest::ManifestError;
use crate::metadata::MetadataError;
use crate::source::SourceError;

type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// A read that failed. Each variant names the store location or source file, and the array.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    /// A file of the store could not be read or parsed.
    #[error("{location}: {what}: {source}")]
    Store {
        /// Store location.
        location: String,
        /// Which file, doing what.
        what: String,
        /// The cause.
        source: BoxError,
    },
    /// No such array in the store.
    #[error("{location}: no array named {array:?} (arrays: {available})")]
    NoSuchArray {
        /// Store location.
        location: String,
        /// The requested path.
        array: String,
        /// The arrays the store has, comma-separated.
        available: String,
    },
    /// An array's `zarr.json` is invalid.
    #[error("{location}: {array}: {source}")]
    Metadata {
        /// Store location.
        location: String,
        /// Array path.
        array: String,
        /// The cause.
        source: MetadataError,
    },
    /// An array's manifest is invalid.
    #[error("{location}: {array}: manifest: {source}")]
    Manifest {
        /// Store location.
        location: String,
        /// Array path.
        array: String,
        /// The cause.
        source: ManifestError,
    },
    /// The selection does not fit the array.
    #[error("{array}: selection: {source}")]
    Selection {
        /// Array path.
        array: String,
        /// The cause.
        source: GridError,
    },
    /// A source location cannot be resolved.
    #[error("{0}")]
    Source(#[from] SourceError),
    /// Fetching bytes failed.
    #[error("{location}: {array}: fetching {what}: {source}")]
    Fetch {
        /// The file.
        location: String,
        /// Array path.
        array: String,
        /// What was fetched.
        what: String,
        /// The cause.
        source: Box<object_store::Error>,
    },
    /// A source file changed since it was scanned: its references may point at the wrong bytes.
    #[error("{location}: source file changed since the scan ({reason}); scan it again")]
    SourceChanged {
        /// The file.
        location: String,
        /// What differs.
        reason: String,
    },
    /// A chunk did not decode.
    #[error("{location}: {array}: chunk {chunk:?}: {source}")]
    Decode {
        /// The file holding the chunk (or the store's owned bytes).
        location: String,
        /// Array path.
        array: String,
        /// Chunk grid coordinates.
        chunk: Vec<u64>,
        /// The cause.
        source: CodecError,
    },
    /// The caller's buffer has the wrong size, or the requested element type differs.
    #[error("{array}: {reason}")]
    Output {
        /// Array path.
        array: String,
        /// What is wrong.
        reason: String,
    },
}

/// Options for reads.
#[derive(Debug, Clone)]
pub struct ReadOptions {
    /// Files fetched from at once. Default: 16.
    pub max_concurrent_requests: usize,
    /// Stored bytes fetched per batch; bounds memory beyond the output. Default: 64 MiB.
    pub batch_bytes: u64,
    /// Check each source file's size and modification time against the scan before reading it.
    /// Default: true.
    pub check_sources: bool,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions { max_concurrent_requests: 16, batch_bytes: 64 << 20, check_sources: true }
    }
}
