//! A store's summary, `vzarr.json` ([`StoreInfo`]): the format version, the groups and arrays with
//! their chunk counts, the provenance and the scan's warnings. Every store format produces one when
//! it is opened (the native store keeps it as the file [`STORE_INFO_FILE`]; an Icechunk repository
//! as a commit property; reference sets in their `vzarr` header), and every reader and writer works
//! from it.

use serde::{Deserialize, Serialize};

use crate::dataset::{ChunkStats, Provenance, ScanWarning, VirtualArray, VirtualDataset};

/// Store summary file at the root.
pub const STORE_INFO_FILE: &str = "vzarr.json";
/// Version of the native store layout; bumped on every incompatible change.
pub const STORE_FORMAT_VERSION: u32 = 2;

/// One array as summarised in `vzarr.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArrayInfo {
    /// Slash-separated path.
    pub path: String,
    /// Chunks in the grid.
    pub chunks: u64,
    /// What the chunks are.
    pub stats: ChunkStats,
    /// Chunks vzarr rewrote.
    pub rewritten_chunks: u64,
    /// Icechunk snapshots only: a digest of every chunk's reference or stored bytes
    /// (`formats/icechunk/digest`), which a reader checks the manifests against.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub references_digest: Option<String>,
    /// Icechunk snapshots only: the same digest per block of chunks, which a reader loading the
    /// manifests one block at a time checks each block against.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_digests: Option<BlockDigests>,
}

/// Digests of an array's chunks in blocks of `chunks` chunks, in linear (row-major) order; the
/// last block may be shorter. Blocks are runs of whole rows along the first axis, as the
/// manifests are split.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockDigests {
    /// Chunks per block.
    pub chunks: u64,
    /// One digest per block, as 16 hexadecimal digits.
    pub digests: Vec<String>,
}

/// The `vzarr.json` document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoreInfo {
    /// Always `"vzarr"`.
    pub format: String,
    /// [`STORE_FORMAT_VERSION`] of the writer.
    pub format_version: u32,
    /// The program that wrote it.
    pub generator: String,
    /// Number of source files.
    pub sources: u64,
    /// Group paths, the root (`""`) first.
    pub groups: Vec<String>,
    /// Arrays in order.
    pub arrays: Vec<ArrayInfo>,
    /// How arrays map to source files.
    pub provenance: Provenance,
    /// Variables left out while scanning.
    pub warnings: Vec<ScanWarning>,
    /// The containers (location prefixes ending in `/`) holding the sources, which a reader must
    /// authorize (see `trust`). Format version 2; empty in older stores.
    #[serde(default)]
    pub source_containers: Vec<String>,
    /// An Icechunk snapshot's summary: the virtual chunk URL of each source, by source id (the ids
    /// `provenance` uses), since a repository names its sources only in its references. Empty in a
    /// native store (`sources.bin` lists them) and in summaries written before it was recorded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub source_urls: Vec<String>,
}

/// Why a `vzarr.json` is refused ([`StoreInfo::parse`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreInfoError {
    /// Not JSON of the summary's shape.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// JSON of another format.
    #[error("not a vzarr store (format {format:?})")]
    NotVzarr {
        /// The format it names.
        format: String,
    },
    /// A format version newer than this vzarr reads.
    #[error("store format version {version} is newer than this vzarr reads ({}); upgrade vzarr", STORE_FORMAT_VERSION)]
    Newer {
        /// The store's format version.
        version: u32,
    },
}

impl StoreInfo {
    /// A native store's `vzarr.json`, checked to be a vzarr store of a format version this vzarr
    /// reads: the one place both the reader and `append` parse it.
    ///
    /// # Errors
    /// [`StoreInfoError`]: not JSON of this shape, not a vzarr store, or a newer format version.
    pub fn parse(bytes: &[u8]) -> Result<Self, StoreInfoError> {
        let info: StoreInfo = serde_json::from_slice(bytes)?;
        if info.format != "vzarr" {
            return Err(StoreInfoError::NotVzarr { format: info.format });
        }
        if info.format_version > STORE_FORMAT_VERSION {
            return Err(StoreInfoError::Newer { version: info.format_version });
        }
        Ok(info)
    }

    /// The summary every writer records of `dataset` (a native store's `vzarr.json`, a kerchunk
    /// file's and an Icechunk snapshot's summary), written as `format` with `arrays`.
    pub(crate) fn of(dataset: &VirtualDataset, format: &str, arrays: Vec<ArrayInfo>) -> Self {
        StoreInfo {
            format: format.into(),
            format_version: STORE_FORMAT_VERSION,
            generator: concat!("vzarr ", env!("CARGO_PKG_VERSION")).into(),
            sources: dataset.sources.len() as u64,
            groups: dataset.groups.iter().map(|g| g.path.clone()).collect(),
            arrays,
            provenance: dataset.provenance.clone(),
            warnings: dataset.warnings.clone(),
            source_containers: crate::trust::containers_of(&dataset.sources),
            source_urls: Vec::new(),
        }
    }
}

impl ArrayInfo {
    /// The statistics of `array` as scanned and combined.
    pub(crate) fn of(array: &VirtualArray) -> Self {
        ArrayInfo {
            path: array.path.clone(),
            chunks: array.chunks.len() as u64,
            stats: array.chunks.stats(),
            rewritten_chunks: array.rewritten_chunks,
            references_digest: None,
            block_digests: None,
        }
    }

    /// An array of `chunks` chunks whose contents are not counted (all statistics zero).
    pub(crate) fn of_grid(path: &str, chunks: u64) -> Self {
        ArrayInfo {
            path: path.to_string(),
            chunks,
            stats: ChunkStats::default(),
            rewritten_chunks: 0,
            references_digest: None,
            block_digests: None,
        }
    }
}
