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
//! Every store format is read through the two traits of `read/backend` (`StoreBackend` for a
//! store's nodes, `ChunkIndex` for an array's chunk entries), which each format implements in its
//! own folder of `formats/`; the format registry there opens a location as a [`Store`]
//! ([`Store::open_with`]). This room knows no format.
//!
//! [`ChunkGrid`]: crate::grid::ChunkGrid

mod array_data;
mod backend;
pub mod blocking;
mod decode;
mod fetch;
pub(crate) mod objects;
mod open;
mod plan;
mod rounds;
pub(crate) mod sources;
mod strings;

pub use array_data::{ArrayData, ArrayDataError, Element};
pub use backend::StoreKind;
pub(crate) use backend::{no_node, ChunkIndex, Opened, StoreBackend, StoreInner};
pub use open::{ArrayReader, OpenOptions, Store};
pub(crate) use rounds::EntryRounds;
pub use rounds::ENTRIES_PER_ROUND;

// What a store is summarised as (`store/summary`), the same for every format: what `Store::info`
// and `Store::kind` give.
pub use crate::store::{ArrayInfo, BlockDigests, StoreFormat, StoreInfo, STORE_FORMAT_VERSION, STORE_INFO_FILE};

// What opening and reading a store takes from the rooms below: the trust list and the authorization
// every source is checked against (`trust/`), where stores and sources are (`source/`).
pub use crate::source::{
    fingerprint, is_url, owned_bytes_budget, owned_bytes_budget_from_env, store_for_url, Location, MemoryBudgetError,
    RemoteError, RemoteOptions, MEMORY_BUDGET_VAR,
};
pub use crate::store::StoreInfoError;
pub use crate::trust::{
    container_of, containers_of, containers_of_locations, Authorization, Authorized, TrustError, TrustList, ALLOW_ENV,
    TRUST_FILE,
};

use crate::codec::CodecError;
use crate::grid::GridError;
use crate::manifest::ManifestError;
use crate::metadata::MetadataError;
use crate::source::SourceError;

pub(crate) type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

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
    /// No store at the location: it has no `vzarr.json` (a missing path, or something else).
    #[error("{location}: no vzarr store there ({what})")]
    NotFound {
        /// Store location.
        location: String,
        /// What was not found.
        what: String,
    },
    /// The server answered a ranged read with fewer bytes than asked for, on every attempt.
    #[error("{location}: bytes {start}..{end}: the server sent {got} bytes, fewer than asked for")]
    ShortReply {
        /// The object.
        location: String,
        /// First byte asked for.
        start: u64,
        /// One past the last byte asked for.
        end: u64,
        /// Bytes sent on the last attempt.
        got: usize,
    },
    /// An Icechunk repository, or its branch, could not be read.
    #[error("{location}: {source}")]
    Repository {
        /// The repository location.
        location: String,
        /// The cause.
        source: BoxError,
    },
    /// A branch was given for a location that holds a native store, not an Icechunk repository.
    #[error("{location}: a branch applies to Icechunk repositories only (this is a native store; {reason})")]
    NotARepository {
        /// The location.
        location: String,
        /// Why it did not open as a repository.
        reason: String,
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
    /// A source may not be read: outside the authorized containers, or not a regular file.
    #[error("{0}")]
    Untrusted(#[from] crate::trust::TrustError),
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
    /// The store's files do not belong together: an array's `zarr.json` or the source table is not
    /// the one its manifest was written for, or store-owned chunk bytes fail their checksum.
    #[error("{location}: {array}: integrity: {reason}")]
    Integrity {
        /// Store location.
        location: String,
        /// Array path.
        array: String,
        /// What does not match.
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
    /// A size taken from the store's metadata is above a limit, or overflows: refused before anything
    /// is allocated.
    #[error("{location}: {array}: {what} ({}) exceeds {limit}", bytes.map_or_else(|| "more than 2^64 bytes".to_string(), |b| format!("{b} bytes")))]
    TooLarge {
        /// Store location.
        location: String,
        /// Array path.
        array: String,
        /// What is too large ("the selection", "its largest chunk").
        what: String,
        /// Its size in bytes; `None` when the size overflows 64 bits.
        bytes: Option<u64>,
        /// The limit, described ("the memory limit of N bytes (--max-memory)").
        limit: String,
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
    /// Check each source file's size, ETag and modification time against the scan before reading it.
    /// Default: true. (`Store::set_check_sources(false)` turns the check off for every read.)
    pub check_sources: bool,
    /// Largest buffer a read allocates, in bytes: the selection's output, and each decoded chunk.
    /// Default: half of the machine's physical memory ([`default_max_memory`]).
    pub max_memory: u64,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            max_concurrent_requests: 16,
            batch_bytes: 64 << 20,
            check_sources: true,
            max_memory: default_max_memory(),
        }
    }
}

/// Largest decoded chunk accepted from a store's metadata, whatever the memory limit: 1 TiB (the
/// largest slab `scan --max-slab-mib` writes).
pub const MAX_CHUNK_BYTES: u64 = 1 << 40;

/// Half of the physical memory (1 GiB when it cannot be determined).
pub fn default_max_memory() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let (pages, page) = unsafe { (libc::sysconf(libc::_SC_PHYS_PAGES), libc::sysconf(libc::_SC_PAGESIZE)) };
    match (u64::try_from(pages), u64::try_from(page)) {
        (Ok(pages), Ok(page)) if pages > 0 && page > 0 => pages.saturating_mul(page) / 2,
        _ => 1 << 30,
    }
}
