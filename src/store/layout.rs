//! The native store's file names and its `vzarr.json` summary, shared by the writer and the reader.
//!
//! ```text
//! tas.vzarr/
//! ├── zarr.json            root group (Zarr v3)
//! ├── vzarr.json           StoreInfo: format version, arrays, provenance, warnings
//! ├── sources.bin          SourceTable: every source file once, with its fingerprint
//! ├── tas/zarr.json        array metadata (Zarr v3; rectilinear or regular grid)
//! ├── tas/manifest.bin     chunk manifest (docs/design/001-manifest-format.md)
//! ├── tas/owned.bin        store-owned chunk bytes, when any
//! └── grp/zarr.json        a group; its arrays below it
//! ```

use serde::{Deserialize, Serialize};

use crate::dataset::{ChunkStats, Provenance, ScanWarning, VirtualArray, VirtualDataset};

/// Store summary file at the root.
pub const STORE_INFO_FILE: &str = "vzarr.json";
/// Source table file at the root.
pub const SOURCES_FILE: &str = "sources.bin";
/// Per-array manifest file.
pub const MANIFEST_FILE: &str = "manifest.bin";
/// Per-array owned-bytes file.
pub const OWNED_FILE: &str = "owned.bin";
/// Version of the native store layout; bumped on every incompatible change.
pub const STORE_FORMAT_VERSION: u32 = 2;

/// The file `file` of node `path` (`""`: the root) inside a native store: `tas/zarr.json`.
pub(crate) fn node_file(path: &str, file: &str) -> String {
    if path.is_empty() {
        file.to_string()
    } else {
        format!("{path}/{file}")
    }
}

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
    /// (`store/icechunk/digest`), which a reader checks the manifests against.
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

impl StoreInfo {
    /// A native store's `vzarr.json`, checked to be a vzarr store of a format version this vzarr
    /// reads: the one place both the reader and `append` parse it.
    ///
    /// # Errors
    /// One phrase: not JSON of this shape, not a vzarr store, or a newer format version.
    pub fn parse(bytes: &[u8]) -> Result<Self, String> {
        let info: StoreInfo = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
        if info.format != "vzarr" {
            return Err(format!("not a vzarr store (format {:?})", info.format));
        }
        if info.format_version > STORE_FORMAT_VERSION {
            return Err(format!(
                "store format version {} is newer than this vzarr reads ({STORE_FORMAT_VERSION}); upgrade vzarr",
                info.format_version
            ));
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

/// Every path segment of a node, checked to be a valid directory name that does not collide with
/// vzarr's own files. Arrays are leaves, so only a group's entries can collide: `zarr.json` in any
/// group, and `vzarr.json` / `sources.bin` at the root. Names such as `c`, `manifest.bin`, ones with
/// a backslash or non-ASCII letters are fine (Zarr v3 allows them, no file of the store shares their
/// place, and the reader names them raw). Control characters cannot be file names here.
pub(crate) fn check_node_path(path: &str) -> Result<(), String> {
    for (depth, segment) in path.split('/').enumerate() {
        if segment.is_empty() || segment == "." || segment == ".." {
            return Err(format!("invalid path segment {segment:?}"));
        }
        if segment.chars().any(|c| c.is_ascii_control()) {
            return Err("name contains a control character, which cannot be a file name".into());
        }
        let root_file = depth == 0 && [STORE_INFO_FILE, SOURCES_FILE].contains(&segment);
        if segment == "zarr.json" || root_file {
            return Err(format!("name {segment:?} collides with a file of the store"));
        }
    }
    Ok(())
}
