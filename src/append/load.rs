//! Loading a native `*.vzarr` store back into a [`VirtualDataset`]: the planning step of an append
//! works on the stored references, never on the old source files.
//!
//! Reads the store's own files only: `vzarr.json` (summary, provenance, warnings), `sources.bin`,
//! every node's `zarr.json`, every array's `manifest.bin` (decoded whole) and `owned.bin`.

use std::path::Path;

use super::AppendError;
use crate::dataset::{ChunkTable, GroupNode, VirtualArray, VirtualDataset};
use crate::manifest::{ChunkEntry, ManifestIndex, SourceTable};
use crate::metadata::{group_from_json, ArrayMetadata};
use crate::store::{StoreInfo, MANIFEST_FILE, OWNED_FILE, SOURCES_FILE, STORE_FORMAT_VERSION, STORE_INFO_FILE};

/// Reads the native store at `root` into a dataset: sources, groups, arrays with every chunk entry
/// and their owned bytes, provenance and warnings (each array's `rewritten_chunks` from `vzarr.json`).
///
/// # Errors
/// [`AppendError::Store`] naming the store file that is missing or invalid.
pub fn load_native(root: &Path) -> Result<VirtualDataset, AppendError> {
    let info: StoreInfo = serde_json::from_slice(&read(root, STORE_INFO_FILE)?)
        .map_err(|e| store_error(root, STORE_INFO_FILE, e.to_string()))?;
    if info.format != "vzarr" || info.format_version > STORE_FORMAT_VERSION {
        let reason = format!("not a vzarr store this version reads (format {:?} {})", info.format, info.format_version);
        return Err(store_error(root, STORE_INFO_FILE, reason));
    }
    let sources =
        SourceTable::decode(&read(root, SOURCES_FILE)?).map_err(|e| store_error(root, SOURCES_FILE, e.to_string()))?;
    let mut groups = Vec::with_capacity(info.groups.len());
    for path in &info.groups {
        let file = node_file(path, "zarr.json");
        let doc = parse_json(root, &file)?;
        let attributes = group_from_json(&doc).map_err(|e| store_error(root, &file, e.to_string()))?;
        groups.push(GroupNode { path: path.clone(), attributes });
    }
    let mut arrays = Vec::with_capacity(info.arrays.len());
    for array in &info.arrays {
        let mut loaded = load_array(root, &array.path, sources.len())?;
        loaded.rewritten_chunks = array.rewritten_chunks;
        arrays.push(loaded);
    }
    Ok(VirtualDataset {
        sources,
        groups,
        arrays,
        warnings: info.warnings,
        provenance: info.provenance,
        concat: Vec::new(),
    })
}

fn load_array(root: &Path, path: &str, num_sources: usize) -> Result<VirtualArray, AppendError> {
    let meta_file = node_file(path, "zarr.json");
    let metadata = ArrayMetadata::from_json(&parse_json(root, &meta_file)?)
        .map_err(|e| store_error(root, &meta_file, e.to_string()))?;
    let manifest_file = node_file(path, MANIFEST_FILE);
    let entries = ManifestIndex::decode_all(&read(root, &manifest_file)?)
        .map_err(|e| store_error(root, &manifest_file, e.to_string()))?;
    if entries.len() as u64 != metadata.chunk_grid.num_chunks() {
        let reason = format!("{} entries for a grid of {} chunks", entries.len(), metadata.chunk_grid.num_chunks());
        return Err(store_error(root, &manifest_file, reason));
    }
    let owned_file = node_file(path, OWNED_FILE);
    let owned = match std::fs::read(root.join(&owned_file)) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(store_error(root, &owned_file, e.to_string())),
    };
    for entry in &entries {
        let bad = match *entry {
            ChunkEntry::Source { source, .. } => (source as usize) >= num_sources,
            ChunkEntry::Owned { .. } => entry.end().is_none_or(|end| end > owned.len() as u64),
            ChunkEntry::Missing => false,
        };
        if bad {
            return Err(store_error(root, &manifest_file, format!("entry {entry:?} points outside the store")));
        }
    }
    Ok(VirtualArray {
        path: path.to_string(),
        metadata,
        chunks: ChunkTable { entries, owned },
        rewritten_chunks: 0,
        digest: None,
        tails: Vec::new(),
    })
}

fn node_file(path: &str, file: &str) -> String {
    if path.is_empty() {
        file.to_string()
    } else {
        format!("{path}/{file}")
    }
}

fn read(root: &Path, file: &str) -> Result<Vec<u8>, AppendError> {
    std::fs::read(root.join(file)).map_err(|e| store_error(root, file, e.to_string()))
}

fn parse_json(root: &Path, file: &str) -> Result<serde_json::Value, AppendError> {
    serde_json::from_slice(&read(root, file)?).map_err(|e| store_error(root, file, e.to_string()))
}

fn store_error(root: &Path, file: &str, reason: String) -> AppendError {
    AppendError::Store { store: root.display().to_string(), file: file.to_string(), reason }
}
