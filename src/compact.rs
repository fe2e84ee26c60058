//! Compaction, a stage after `read/`: runs of small chunks along one dimension (the daily size-1
//! chunks `vzarr append` adds) are folded into chunks of a target size, in place.
//!
//! ```text
//! store ──load (append::load_native | read_branch)──▶ VirtualDataset ──plan (compact/plan, pure)──▶ pieces
//!   │                                                                                              │
//!   └──read::Store::open_with ── ArrayReader::read_into (folded regions, decoded) ──encode──▶ new chunk table
//!                                                                                              │
//!                    NativeWriter (overwrite: one atomic exchange) | update_icechunk (one commit) ◀┘
//! ```
//!
//! Along the dimension, every maximal run of consecutive chunks smaller than the target becomes
//! chunks of the target size and one of the remainder (`[365, 365, 1 x 40]` with target 30:
//! `[365, 365, 30, 10]`; `compact/plan`). A calendar target (`month`, `season`, `year`, `day`, `10d`)
//! or `by:VAR` gives the dimension the edges `chunking` derives from the store's time coordinate
//! (in its own CF calendar) or from VAR's runs of equal values: a year of daily chunks becomes
//! `[31, 28, 31, 30, ...]`; chunks that already are one period are kept. Each new chunk is read through the store's reader (its
//! sources checked against their fingerprints first), decoded, re-encoded with the array's own codecs
//! and stored by the store itself (a store-owned chunk); every other chunk keeps its reference
//! untouched, and the rectilinear edges of the dimension are rewritten (Zarr rectilinear chunk grid,
//! zarr-extensions `chunk-grids/rectilinear`). A chunk whose every overlapped chunk is missing stays
//! missing.
//!
//! Every chunk is judged by the elements it holds, not by its encoded edge (the last chunk of a
//! file's unlimited `time` is 512 long and holds 31: `compact/plan`), and the last stored file is
//! folded like the others (60 daily files, target 30: `[30, 30]`). `vzarr append` continues a
//! compacted store after its last chunk when that chunk holds its whole edge, as every folded chunk
//! does (`append/splice`).
//!
//! Writes go through the existing writers: a native store is rewritten with [`NativeWriter`]
//! (overwrite: the new store is staged and exchanged with the old one in one `renameat2`, so a kill
//! at any moment leaves the old store or the new one), under the lock `vzarr append` takes; an
//! Icechunk repository gets one commit whose parent is the snapshot read (a concurrent commit makes it
//! fail and writes nothing; readers of earlier snapshots are unaffected).
//!
//! [`NativeWriter`]: crate::formats::NativeWriter

mod appended;
mod fold;
mod plan;
mod run;

pub(crate) use appended::fold_appended;

pub use run::compact_store;

use crate::chunking::ChunkLength;
use crate::read::{OpenOptions, ReadError};

/// A compaction that cannot be done. Nothing is written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CompactError {
    /// The options do not fit the store (a missing dimension, a target of 0 or larger than the
    /// dimension): a usage error.
    #[error("{store}: {reason}")]
    Usage {
        /// The store.
        store: String,
        /// What is wrong.
        reason: String,
    },
    /// The store is missing, not a store, busy, or changed while compacting.
    #[error("{store}: {reason}")]
    Store {
        /// The store.
        store: String,
        /// Why.
        reason: String,
    },
    /// The native store could not be loaded.
    #[error(transparent)]
    Load(Box<crate::append::AppendError>),
    /// Reading a folded region failed (a source changed since the scan is named here).
    #[error(transparent)]
    Read(Box<ReadError>),
    /// A folded chunk could not be encoded with the array's codecs.
    #[error("{store}: {array}: chunk {chunk:?}: encoding: {source}")]
    Encode {
        /// The store.
        store: String,
        /// The array.
        array: String,
        /// The new chunk's grid coordinates.
        chunk: Vec<u64>,
        /// The cause.
        source: crate::codec::CodecError,
    },
    /// Building the new array failed.
    #[error("{store}: {array}: {reason}")]
    Build {
        /// The store.
        store: String,
        /// The array.
        array: String,
        /// What failed.
        reason: String,
    },
    /// Writing the native store failed (the old store is left as it was).
    #[error("writing {store}: {source}")]
    Write {
        /// The store.
        store: String,
        /// The cause.
        source: crate::store::WriteError,
    },
    /// The Icechunk commit failed (the branch is unchanged).
    #[cfg(feature = "icechunk")]
    #[error(transparent)]
    Icechunk(Box<crate::store::IcechunkError>),
}

impl From<ReadError> for CompactError {
    fn from(e: ReadError) -> Self {
        CompactError::Read(Box::new(e))
    }
}

impl From<crate::append::AppendError> for CompactError {
    fn from(e: crate::append::AppendError) -> Self {
        CompactError::Load(Box::new(e))
    }
}

#[cfg(feature = "icechunk")]
impl From<crate::store::IcechunkError> for CompactError {
    fn from(e: crate::store::IcechunkError) -> Self {
        CompactError::Icechunk(Box::new(e))
    }
}

/// How to compact. Every field documents its default.
#[derive(Debug, Clone)]
pub struct CompactOptions {
    /// The dimension whose chunks are folded (`time`). Required.
    pub dim: String,
    /// The target chunk length along it. Required. A number of elements (>= 1, at most the
    /// dimension's length: runs of shorter chunks fold into chunks of that length); a calendar unit
    /// (`month`, `season`, `year`, `day`, a duration such as `10d`: every chunk becomes the steps of
    /// one period, from the dimension's CF time coordinate in its calendar); or `by:VAR`, one chunk
    /// per run of equal values of the 1-D variable VAR.
    pub target: ChunkLength,
    /// Fold only the chunks after the last chunk of at least the target size (for a calendar unit
    /// or `by:VAR`, after the last chunk that already is one period or group): the daily-append
    /// case. Default: false (every chunk).
    pub tail: bool,
    /// Plan only: report what would be folded, write nothing. Default: false.
    pub dry_run: bool,
    /// How the store and its sources are opened (trust, remote settings, and for an Icechunk
    /// repository the branch, default `main`).
    pub open: OpenOptions,
    /// Icechunk repositories: the commit message. Default: `vzarr compact: DIM to TARGET`.
    pub message: Option<String>,
    /// Largest buffer one read allocates (a folded region of an array). Default: 1 GiB.
    pub max_memory: u64,
    /// The memory budget of the store-owned bytes loaded from a native store (past it they spill).
    /// Default: what `VZARR_OWNED_MEMORY` sets, else 64 MiB.
    pub owned_budget: crate::dataset::OwnedBytesBudget,
}

impl CompactOptions {
    /// Options folding along `dim` to `target`, every other field at its default.
    pub fn new(dim: impl Into<String>, target: impl Into<ChunkLength>, open: OpenOptions) -> Self {
        CompactOptions {
            dim: dim.into(),
            target: target.into(),
            tail: false,
            dry_run: false,
            open,
            message: None,
            max_memory: 1 << 30,
            owned_budget: crate::scan::ScanOptions::default().owned_budget,
        }
    }
}

/// One array's compaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArrayFold {
    /// The array path.
    pub path: String,
    /// Its chunk edges along the dimension before, as the chunks hold them
    /// ([`ChunkDim::held_edges`](crate::grid::ChunkDim::held_edges)).
    pub before: Vec<u64>,
    /// And after.
    pub after: Vec<u64>,
    /// Store-owned chunks written (0 in a dry run).
    pub chunks_written: u64,
}

/// What a compaction did (or, in a dry run, would do).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CompactReport {
    /// The arrays folded; empty when there was nothing to fold.
    pub arrays: Vec<ArrayFold>,
    /// The store was rewritten (false in a dry run and when nothing was to fold).
    pub written: bool,
    /// Icechunk repositories: the new snapshot and its branch.
    pub snapshot: Option<(String, String)>,
}

/// Edges in run-length form for messages: `[365, 365, 1 x 40]`.
pub fn describe_edges(edges: &[u64]) -> String {
    let mut parts = Vec::new();
    let mut rest = edges;
    while let Some(&edge) = rest.first() {
        let run = rest.iter().take_while(|&&e| e == edge).count();
        match run {
            1 => parts.push(edge.to_string()),
            2 => parts.extend([edge.to_string(), edge.to_string()]),
            n => parts.push(format!("{edge} x {n}")),
        }
        rest = &rest[run..];
    }
    format!("[{}]", parts.join(", "))
}

#[cfg(test)]
mod tests {
    #[test]
    fn edges_are_described_in_runs() {
        let mut edges = vec![365, 365];
        edges.extend(std::iter::repeat_n(1, 40));
        assert_eq!(super::describe_edges(&edges), "[365, 365, 1 x 40]");
        assert_eq!(super::describe_edges(&[30, 10]), "[30, 10]");
    }
}
