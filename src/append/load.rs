//! Loading a native `*.vzarr` store back into a [`VirtualDataset`]: the planning step of an append
//! works on the stored references, never on the old source files.
//!
//! Reads the store's own files only: `vzarr.json` (summary, provenance, warnings), `sources.bin`,
//! every node's `zarr.json`, every array's `manifest.bin` (decoded whole) and `owned.bin` (a block at a
//! time, into owned bytes that spill past their memory budget).

use std::path::Path;

use super::AppendError;
use crate::dataset::{ChunkTable, GroupNode, OwnedBytes, OwnedBytesBudget, VirtualArray, VirtualDataset};
use crate::formats::node_file;
use crate::formats::{MANIFEST_FILE, OWNED_FILE, SOURCES_FILE};
use crate::manifest::binding::{sha256, Binding, FOOTER_LEN};
use crate::manifest::{ChunkEntry, ManifestHeader, ManifestIndex, SourceTable};
use crate::metadata::{group_encodings_from_json, group_from_json, ArrayMetadata};
use crate::store::{StoreInfo, STORE_INFO_FILE};

/// Reads the native store at `root` into a dataset: sources, groups, arrays with every chunk entry
/// and their owned bytes (counted in `budget`), provenance and warnings (each array's `rewritten_chunks` from `vzarr.json`).
///
/// # Errors
/// [`AppendError::Store`] naming the store file that is missing or invalid.
pub fn load_native(root: &Path, budget: &OwnedBytesBudget) -> Result<VirtualDataset, AppendError> {
    let info = StoreInfo::parse(&read(root, STORE_INFO_FILE)?)
        .map_err(|e| store_error(root, STORE_INFO_FILE, e.to_string()))?;
    let sources_bytes = read(root, SOURCES_FILE)?;
    let sources_digest = sha256(&sources_bytes);
    let sources = SourceTable::decode(&sources_bytes).map_err(|e| store_error(root, SOURCES_FILE, e.to_string()))?;
    let mut groups = Vec::with_capacity(info.groups.len());
    for path in &info.groups {
        let file = node_file(path, "zarr.json");
        let doc = parse_json(root, &file)?;
        let damaged = |e: crate::metadata::MetadataError| store_error(root, &file, e.to_string());
        let attributes = group_from_json(&doc).map_err(damaged)?;
        let attribute_encodings = group_encodings_from_json(&doc).map_err(damaged)?;
        groups.push(GroupNode { path: path.clone(), attributes, attribute_encodings });
    }
    let mut arrays = Vec::with_capacity(info.arrays.len());
    for array in &info.arrays {
        let bound = info.format_version >= 2;
        let mut loaded = load_array(root, &array.path, sources.len(), bound.then_some(&sources_digest), budget)?;
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
        hdf5_links: Default::default(),
    })
}

/// `sources_digest`: the SHA-256 of `sources.bin` for stores of format 2, whose manifests are bound.
fn load_array(
    root: &Path,
    path: &str,
    num_sources: usize,
    sources_digest: Option<&[u8; 32]>,
    budget: &OwnedBytesBudget,
) -> Result<VirtualArray, AppendError> {
    let meta_file = node_file(path, "zarr.json");
    let doc = parse_json(root, &meta_file)?;
    let metadata = ArrayMetadata::from_json(&doc).map_err(|e| store_error(root, &meta_file, e.to_string()))?;
    let manifest_file = node_file(path, MANIFEST_FILE);
    let manifest = read(root, &manifest_file)?;
    let bad_manifest = |reason: String| store_error(root, &manifest_file, reason);
    let index_end = ManifestHeader::parse(&manifest).map_err(|e| bad_manifest(e.to_string()))?.index_range().end;
    let (indexed, trailer) = manifest.split_at(usize::try_from(index_end).unwrap_or(usize::MAX).min(manifest.len()));
    let entries = ManifestIndex::decode_all(indexed).map_err(|e| bad_manifest(e.to_string()))?;
    // Stores of format 2 bind each manifest to its zarr.json and sources.bin, as the reader checks.
    let binding = match sources_digest {
        Some(digest) => Some(bound(trailer, &entries, &doc, digest).map_err(bad_manifest)?),
        None => None,
    };
    if entries.len() as u64 != metadata.chunk_grid.num_chunks() {
        let reason = format!("{} entries for a grid of {} chunks", entries.len(), metadata.chunk_grid.num_chunks());
        return Err(store_error(root, &manifest_file, reason));
    }
    let owned_file = node_file(path, OWNED_FILE);
    let owned_bytes = load_owned(root, &owned_file, budget)?;
    if let Some(entry) = entries.iter().find(|e| match **e {
        ChunkEntry::Source { source, .. } => (source as usize) >= num_sources,
        ChunkEntry::Owned { .. } => e.end().is_none_or(|end| end > owned_bytes.len()),
        ChunkEntry::Missing => false,
    }) {
        return Err(store_error(root, &manifest_file, format!("entry {entry:?} points outside the store")));
    }
    if let Some(binding) = &binding {
        for entry in &entries {
            let ChunkEntry::Owned { offset, length } = *entry else { continue };
            let bytes = owned_bytes.read(offset, length).map_err(|e| store_error(root, &owned_file, e.to_string()))?;
            binding
                .check_owned(offset, &bytes)
                .map_err(|e| store_error(root, &owned_file, format!("integrity: {e}")))?;
        }
    }
    Ok(VirtualArray {
        path: path.to_string(),
        metadata,
        chunks: ChunkTable::from_entries(entries, owned_bytes),
        rewritten_chunks: 0,
        digest: None,
        tails: Vec::new(),
    })
}

/// Bytes of `owned.bin` read at once while loading it.
const OWNED_BLOCK: usize = 1 << 20;

/// An array's `owned.bin` (none: no bytes), read a block at a time into [`OwnedBytes`], which keeps
/// it in memory within `budget` and spills the rest: a store of copies is never read
/// into memory whole. The bytes keep their offsets in the file.
fn load_owned(root: &Path, owned_file: &str, budget: &OwnedBytesBudget) -> Result<OwnedBytes, AppendError> {
    use std::os::unix::fs::FileExt;
    let fail = |e: std::io::Error| store_error(root, owned_file, e.to_string());
    let file = match std::fs::File::open(root.join(owned_file)) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(OwnedBytes::with_budget(budget)),
        Err(e) => return Err(fail(e)),
    };
    let len = file.metadata().map_err(fail)?.len();
    let mut owned = OwnedBytes::with_budget(budget);
    let mut block = vec![0u8; OWNED_BLOCK.min(usize::try_from(len).unwrap_or(OWNED_BLOCK))];
    let mut at = 0u64;
    while at < len {
        let n = block.len().min(usize::try_from(len - at).unwrap_or(usize::MAX));
        file.read_exact_at(&mut block[..n], at).map_err(fail)?;
        owned.push(&block[..n]).map_err(|e| store_error(root, owned_file, e.to_string()))?;
        at += n as u64;
    }
    Ok(owned)
}

/// The binding trailer after a manifest's index (store format 2), checked against the array's
/// `zarr.json` and the store's `sources.bin`.
fn bound(
    trailer: &[u8],
    entries: &[ChunkEntry],
    doc: &serde_json::Value,
    sources_digest: &[u8; 32],
) -> Result<Binding, String> {
    let owned = entries.iter().filter(|e| matches!(e, ChunkEntry::Owned { .. })).count() as u64;
    let split = (FOOTER_LEN as usize).min(trailer.len());
    let (mut binding, count) = Binding::parse_footer(&trailer[..split], owned).map_err(|e| e.to_string())?;
    binding.parse_sums(&trailer[split..], count).map_err(|e| e.to_string())?;
    match binding.mismatch(doc, sources_digest) {
        Some(reason) => Err(format!("integrity: {reason}")),
        None => Ok(binding),
    }
}

fn read(root: &Path, file: &str) -> Result<Vec<u8>, AppendError> {
    std::fs::read(root.join(file)).map_err(|e| store_error(root, file, e.to_string()))
}

/// A `zarr.json` as the writers write it: non-finite attribute values as bare `NaN`/`Infinity`.
fn parse_json(root: &Path, file: &str) -> Result<serde_json::Value, AppendError> {
    crate::metadata::from_text(&read(root, file)?).map_err(|e| store_error(root, file, e.to_string()))
}

fn store_error(root: &Path, file: &str, reason: String) -> AppendError {
    AppendError::Store { store: root.display().to_string(), file: file.to_string(), reason }
}
