//! The native store read as a [`StoreBackend`]: `vzarr.json` (the summary), `sources.bin` (the source
//! table), each node's `zarr.json`, each array's binary `manifest` (header, block index, blocks read as
//! lookups need them) and its `owned.bin`. In stores of format 2 each manifest ends with a binding: the
//! digests of the array's `zarr.json` and of `sources.bin` it was written with, and the checksums of
//! its store-owned chunks, all checked as they are read.

use std::collections::{BTreeMap, VecDeque};
use std::ops::Range;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use bytes::Bytes;
use object_store::ObjectStoreExt;

use super::layout::{MANIFEST_FILE, OWNED_FILE, SOURCES_FILE};
use crate::formats::{Address, Detect};
use crate::manifest::binding::{sha256, Binding, FOOTER_LEN, OWNED_SUM_LEN};
use crate::manifest::{ChunkEntry, ManifestHeader, ManifestIndex, SourceFile, SourceTable};
use crate::metadata::ArrayMetadata;
use crate::read::objects::{fetch_all, fetch_range};
use crate::read::sources::SourceRegistry;
use crate::read::StoreFormat;
use crate::read::StoreInner;
use crate::read::{ChunkIndex, Opened, StoreBackend};
use crate::read::{OpenOptions, ReadError};
use crate::read::{StoreInfo, STORE_INFO_FILE};
use crate::source::{resolve_with, Location, ObjectLocation};

/// A native store's root and the digest of its source table.
#[derive(Debug)]
pub(crate) struct NativeStore {
    root: ObjectLocation,
    /// SHA-256 of `sources.bin` as read, compared with each manifest's binding.
    sources_digest: [u8; 32],
}

/// Whether `location` holds a native store: a local directory with a `vzarr.json` does; any other
/// location may (only reading its `vzarr.json` tells).
pub(crate) fn detect(location: &Location) -> Detect {
    match location {
        Location::Local(path) if path.join(STORE_INFO_FILE).is_file() => Detect::Yes,
        _ => Detect::Probe,
    }
}

/// Opens the native store at `address` (an absolute path, a relative one, or a URL).
///
/// # Errors
/// [`ReadError::NotFound`] when it has no `vzarr.json`; [`ReadError::Store`] when `vzarr.json` or
/// `sources.bin` cannot be read or parsed.
pub(crate) async fn open(address: &Address, options: &OpenOptions) -> Result<Opened, ReadError> {
    let name = address.name.as_str();
    let root = resolve_with(&address.absolute()?, &options.remote)?;
    let info_file = child(&root, STORE_INFO_FILE);
    let bytes = match fetch_all(&info_file, name, STORE_INFO_FILE).await {
        Err(ReadError::Store { source, .. })
            if matches!(source.downcast_ref(), Some(object_store::Error::NotFound { .. })) =>
        {
            return Err(ReadError::NotFound { location: name.to_string(), what: format!("no {STORE_INFO_FILE}") });
        }
        other => other?,
    };
    let info = StoreInfo::parse(&bytes).map_err(|reason| ReadError::Store {
        location: name.to_string(),
        what: format!("parsing {STORE_INFO_FILE}"),
        source: reason.into(),
    })?;
    let bytes = fetch_all(&child(&root, SOURCES_FILE), name, SOURCES_FILE).await?;
    let sources_digest = sha256(&bytes);
    let sources = SourceTable::decode(&bytes).map_err(|e| ReadError::Store {
        location: name.to_string(),
        what: format!("parsing {SOURCES_FILE}"),
        source: e.into(),
    })?;
    let backend = Arc::new(NativeStore { root, sources_digest });
    Ok(Opened { info, sources: SourceRegistry::fixed(sources), backend })
}

/// The object at `parts` (slash-separated node names and a file name) below `root`. Names are taken
/// as they are (non-ASCII letters, backslashes), as the writer wrote them; only a name object_store
/// cannot hold raw (control characters) is percent-encoded.
fn child(root: &ObjectLocation, parts: &str) -> ObjectLocation {
    let path = parts.split('/').filter(|p| !p.is_empty()).fold(root.path.clone(), |p, part| {
        match object_store::path::PathPart::parse(part) {
            Ok(raw) => p.join(raw),
            Err(_) => p.join(part),
        }
    });
    ObjectLocation { store: root.store.clone(), path }
}

#[async_trait]
impl StoreBackend for NativeStore {
    fn kind(&self) -> StoreFormat {
        StoreFormat::Native
    }

    async fn node_metadata(&self, store: &StoreInner, path: &str) -> Result<Bytes, ReadError> {
        let file = if path.is_empty() { "zarr.json".to_string() } else { format!("{path}/zarr.json") };
        let bytes = fetch_all(&child(&self.root, &file), &store.location, &file).await?;
        crate::metadata::from_text(&bytes).map_err(|e| ReadError::Store {
            location: store.location.clone(),
            what: format!("parsing {file}"),
            source: e.into(),
        })?;
        Ok(bytes)
    }

    async fn array(&self, store: &StoreInner, path: &str) -> Result<(ArrayMetadata, Arc<dyn ChunkIndex>), ReadError> {
        let doc = fetch_all(&child(&self.root, &format!("{path}/zarr.json")), &store.location, "zarr.json").await?;
        let metadata_error =
            |source| ReadError::Metadata { location: store.location.clone(), array: path.to_string(), source };
        let doc: serde_json::Value = crate::metadata::from_text(&doc)
            .map_err(|e| crate::metadata::MetadataError::Invalid { field: "zarr.json", reason: e.to_string() })
            .map_err(metadata_error)?;
        let manifest_loc = child(&self.root, &format!("{path}/{MANIFEST_FILE}"));
        let bound = store.info.format_version >= 2;
        let (manifest, binding) = open_manifest(&manifest_loc, &store.location, path, bound).await?;
        if let Some(reason) = binding.as_ref().and_then(|b| b.mismatch(&doc, &self.sources_digest)) {
            return Err(ReadError::Integrity { location: store.location.clone(), array: path.to_string(), reason });
        }
        let metadata = ArrayMetadata::from_json(&doc).map_err(metadata_error)?;
        if manifest.header().num_chunks != metadata.chunk_grid.num_chunks() {
            return Err(ReadError::Store {
                location: store.location.clone(),
                what: format!("{path}/{MANIFEST_FILE}"),
                source: format!(
                    "manifest has {} chunks, the grid {}",
                    manifest.header().num_chunks,
                    metadata.chunk_grid.num_chunks()
                )
                .into(),
            });
        }
        let owned = child(&self.root, &format!("{path}/{OWNED_FILE}"));
        let index = NativeIndex { manifest, location: manifest_loc, owned, binding, recent: Mutex::default() };
        Ok((metadata, Arc::new(index)))
    }

    async fn check_source(
        &self,
        _store: &StoreInner,
        _id: u32,
        file: SourceFile,
        location: &ObjectLocation,
    ) -> Result<(), ReadError> {
        let meta = location.store.head(&location.path).await.map_err(|source| ReadError::Fetch {
            location: file.location.clone(),
            array: String::new(),
            what: "file metadata".into(),
            source: Box::new(source),
        })?;
        let now = crate::source::object_fingerprint(&file.location, &meta);
        match file.changed_since(&now) {
            Some(reason) => Err(ReadError::SourceChanged { location: file.location.clone(), reason }),
            None => Ok(()),
        }
    }
}

/// A native array's manifest and its `owned.bin`.
#[derive(Debug)]
struct NativeIndex {
    /// The manifest's header and block index.
    manifest: ManifestIndex,
    /// The manifest file.
    location: ObjectLocation,
    /// The array's `owned.bin`.
    owned: ObjectLocation,
    /// The manifest's binding (store format 2), whose checksums owned bytes are checked against.
    binding: Option<Binding>,
    /// The blocks decoded last, most recent first (at most [`RECENT_BLOCKS`]).
    recent: Mutex<VecDeque<(u64, Arc<Vec<ChunkEntry>>)>>,
}

/// Decoded manifest blocks an array keeps for the next reads: reads of a chunk or a few at a time
/// (a dask task a chunk) would otherwise fetch and decode a block of 4,096 entries for each. At
/// most this many blocks (about 100 KB each) an array.
const RECENT_BLOCKS: usize = 16;

impl NativeIndex {
    /// The entries of manifest block `block`, decoded once while it stays among the recent ones.
    async fn block(&self, store: &StoreInner, array: &str, block: u64) -> Result<Arc<Vec<ChunkEntry>>, ReadError> {
        if let Some(entries) = self.recent_block(block) {
            return Ok(entries);
        }
        let range = self.manifest.block_bytes(block);
        let bytes = fetch_range(&self.location, range, &store.location, "manifest block").await?;
        let entries = self.manifest.decode_block(block, &bytes).map_err(|source| ReadError::Manifest {
            location: store.location.clone(),
            array: array.to_string(),
            source,
        })?;
        let entries = Arc::new(entries);
        let mut recent = self.recent.lock().unwrap_or_else(|e| e.into_inner());
        recent.retain(|(b, _)| *b != block);
        recent.push_front((block, entries.clone()));
        recent.truncate(RECENT_BLOCKS);
        Ok(entries)
    }

    /// Block `block`'s entries if it is among the recent ones (then the most recent).
    fn recent_block(&self, block: u64) -> Option<Arc<Vec<ChunkEntry>>> {
        let mut recent = self.recent.lock().unwrap_or_else(|e| e.into_inner());
        let at = recent.iter().position(|(b, _)| *b == block)?;
        let hit = recent.remove(at)?;
        let entries = hit.1.clone();
        recent.push_front(hit);
        Some(entries)
    }
}

#[async_trait]
impl ChunkIndex for NativeIndex {
    async fn entries(&self, store: &StoreInner, array: &str, range: Range<u64>) -> Result<Vec<ChunkEntry>, ReadError> {
        let manifest = &self.manifest;
        let end = range.end.min(manifest.header().num_chunks);
        let mut out = Vec::with_capacity(end.saturating_sub(range.start) as usize);
        if range.start >= end {
            return Ok(out);
        }
        for block in manifest.block_of(range.start)..=manifest.block_of(end - 1) {
            let entries = self.block(store, array, block).await?;
            let chunks = manifest.block_chunks(block);
            let from = range.start.max(chunks.start) - chunks.start;
            let to = end.min(chunks.end) - chunks.start;
            out.extend_from_slice(&entries[from as usize..to as usize]);
        }
        Ok(out)
    }

    async fn entries_at(&self, store: &StoreInner, array: &str, linear: &[u64]) -> Result<Vec<ChunkEntry>, ReadError> {
        let manifest = &self.manifest;
        // Lookups of a selection that cuts across the fastest dimension alternate between blocks:
        // each block is fetched once.
        let mut blocks = BTreeMap::new();
        for &l in linear {
            let block = manifest.block_of(l);
            if let std::collections::btree_map::Entry::Vacant(slot) = blocks.entry(block) {
                slot.insert(self.block(store, array, block).await?);
            }
        }
        Ok(linear
            .iter()
            .map(|&l| {
                let block = manifest.block_of(l);
                let start = manifest.block_chunks(block).start;
                blocks.get(&block).map_or(ChunkEntry::Missing, |entries| entries[(l - start) as usize])
            })
            .collect())
    }

    async fn owned_chunks(
        &self,
        store: &StoreInner,
        array: &str,
        ranges: &[Range<u64>],
        concurrent: usize,
    ) -> Result<Vec<Bytes>, ReadError> {
        let name = format!("{}/{}", store.location, array);
        let bytes = crate::read::objects::get_owned_ranges(&self.owned, &name, array, ranges, concurrent).await?;
        for (got, want) in bytes.iter().zip(ranges) {
            if got.len() as u64 != want.end - want.start {
                let reason =
                    format!("short read at offset {}: {} of {} bytes", want.start, got.len(), want.end - want.start);
                return Err(ReadError::SourceChanged { location: name, reason });
            }
            if let Some(binding) = &self.binding {
                binding.check_owned(want.start, got).map_err(|e| ReadError::Integrity {
                    location: store.location.clone(),
                    array: array.to_string(),
                    reason: e.to_string(),
                })?;
            }
        }
        Ok(bytes)
    }
}

/// Reads a manifest's header and index and, when `bound` (store format 2), its binding trailer
/// (fetched with the index in one request; the owned checksums in a second one when there are any).
async fn open_manifest(
    loc: &ObjectLocation,
    store: &str,
    array: &str,
    bound: bool,
) -> Result<(ManifestIndex, Option<Binding>), ReadError> {
    let manifest_error = |source| ReadError::Manifest { location: store.to_string(), array: array.to_string(), source };
    let head = fetch_range(loc, 0..ManifestHeader::LEN as u64, store, "manifest header").await?;
    let header = ManifestHeader::parse(&head).map_err(manifest_error)?;
    let range = header.index_range();
    if !bound {
        let index = fetch_range(loc, range, store, "manifest index").await?;
        return Ok((ManifestIndex::new(header, &index).map_err(manifest_error)?, None));
    }
    let end = range.end.saturating_add(FOOTER_LEN);
    let bytes = fetch_range(loc, range.start..end, store, "manifest index and binding").await?;
    let split = (range.end - range.start).min(bytes.len() as u64) as usize;
    let index = ManifestIndex::new(header, &bytes[..split]).map_err(manifest_error)?;
    let (mut binding, count) =
        Binding::parse_footer(&bytes[split..], index.header().owned_entries).map_err(manifest_error)?;
    if count > 0 {
        let sums = end..end.saturating_add(count.saturating_mul(OWNED_SUM_LEN));
        // The count comes from the file: check that the file holds the records before fetching
        // (and allocating) them.
        let size = loc.store.head(&loc.path).await.map(|m| m.size).map_err(|e| ReadError::Store {
            location: store.to_string(),
            what: format!("{array}/{MANIFEST_FILE}: size"),
            source: e.into(),
        })?;
        if sums.end != size {
            let reason = "binding footer: owned checksum count does not match the file size";
            return Err(manifest_error(crate::manifest::ManifestError::InvalidHeader { reason }));
        }
        let bytes = fetch_range(loc, sums, store, "manifest owned checksums").await?;
        binding.parse_sums(&bytes, count).map_err(manifest_error)?;
    }
    Ok((index, Some(binding)))
}
