//! One array's chunk references in an Icechunk repository, loaded a block at a time.
//!
//! The array's chunks are cut into blocks of consecutive linear (row-major) indices: for a snapshot
//! vzarr wrote, the blocks its summary records a digest for (whole rows along the first axis, as its
//! manifests are split); otherwise blocks of [`FOREIGN_BLOCK_CHUNKS`]. A lookup loads the block
//! holding the chunk: the manifests whose extents meet the block's rows are fetched (Icechunk caches
//! them), their references to the block's chunks read straight from the manifest flatbuffer into a
//! dense table of [`ChunkEntry`]s, and, where a digest is recorded, the block's digest compared with
//! it (so a damaged manifest is refused, not read as other bytes or fill values). A few blocks are
//! kept; memory is bounded by the block size, not the repository's.
//!
//! Source files get ids in the store's [`SourceRegistry`] as references name them. Store-owned
//! chunks (inline bytes, chunk objects of the repository) get a slot in the array's owned table:
//! their [`ChunkEntry::Owned`] offset is the slot, and [`ArrayChunks::owned_bytes`] gives the bytes.

use std::collections::{HashMap, VecDeque};
use std::ops::Range;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use icechunk::asset_manager::AssetManager;
use icechunk::format::flatbuffers::generated;
use icechunk::format::manifest::{ChunkPayload, ChunkRef, Manifest, ManifestExtents};
use icechunk::format::{ChunkId, ManifestId, NodeId};

use crate::manifest::{ChunkEntry, SourceFile};

use super::branch::damaged;
use super::frames::FrameError;

/// A cause from Icechunk, kept as it came.
type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Why an array's chunk references (or a store-owned chunk) cannot be had: each names the array.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ChunksError {
    /// A grid of more chunks than 64 bits count.
    #[error("array {array}: its grid has too many chunks")]
    TooManyChunks {
        /// The array.
        array: String,
    },
    /// Block digests that do not fit the grid.
    #[error(
        "array {array}: the snapshot's summary records {digests} digests of {per_block} chunks for {chunks} chunks: \
         the repository is damaged"
    )]
    Digests {
        /// The array.
        array: String,
        /// Digests recorded.
        digests: usize,
        /// Chunks per digest.
        per_block: u64,
        /// Chunks in the grid.
        chunks: u64,
    },
    /// An owned slot no reference gave.
    #[error("array {array}: no store-owned chunk {slot}")]
    NoOwned {
        /// The array.
        array: String,
        /// The slot.
        slot: u64,
    },
    /// A chunk object that could not be fetched.
    #[error("array {array}: chunk object {chunk}: {}", damaged(&.cause.to_string()))]
    FetchObject {
        /// The array.
        array: String,
        /// The chunk object's id.
        chunk: String,
        /// Icechunk's error (not the error's source: the message says it in other words, which a
        /// printed chain of causes would repeat).
        cause: BoxError,
    },
    /// A chunk object of another length than its reference.
    #[error(
        "array {array}: chunk object {chunk} holds {len} bytes, its reference {length}: the repository is damaged"
    )]
    ObjectLength {
        /// The array.
        array: String,
        /// The chunk object's id.
        chunk: String,
        /// Bytes it holds.
        len: usize,
        /// Bytes its reference gives.
        length: u64,
    },
    /// A manifest that could not be fetched.
    #[error("array {array}: manifest {manifest}: {}", damaged(&.cause.to_string()))]
    FetchManifest {
        /// The array.
        array: String,
        /// The manifest's id.
        manifest: String,
        /// Icechunk's error (not the source, as for [`ChunksError::FetchObject`]).
        cause: BoxError,
    },
    /// A manifest whose file does not match the snapshot's record of it.
    #[error("array {array}: manifest {manifest}: {}", damaged(&.cause.to_string()))]
    ManifestFile {
        /// The array.
        array: String,
        /// The manifest's id.
        manifest: String,
        /// Why its file is refused (not the source, as for [`ChunksError::FetchObject`]).
        cause: Box<FrameError>,
    },
    /// A manifest whose references are refused.
    #[error("array {array}: manifest {manifest}: {source}: the repository is damaged")]
    Manifest {
        /// The array.
        array: String,
        /// The manifest's id.
        manifest: String,
        /// What is wrong with a reference.
        source: ReferenceError,
    },
    /// A lock poisoned by a panic.
    #[error("a lock was poisoned")]
    Poisoned,
    /// A block whose digest differs from the summary's.
    #[error(
        "array {array} chunks {start}..{end}: the references differ from those the snapshot's summary records (a \
         manifest or chunk is damaged): the repository is damaged"
    )]
    Digest {
        /// The array.
        array: String,
        /// The block's first linear chunk index.
        start: u64,
        /// The block's end.
        end: u64,
    },
}

/// What is wrong with a manifest's reference to a chunk of the array.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ReferenceError {
    /// A chunk index of another rank than the grid.
    #[error("a chunk index of {rank} dimensions for a grid of {grid}")]
    Rank {
        /// The index's rank.
        rank: usize,
        /// The grid's.
        grid: usize,
    },
    /// A chunk index outside the grid.
    #[error("a chunk index {index} outside the grid {grid:?}")]
    Outside {
        /// The coordinate outside.
        index: u32,
        /// The grid's shape.
        grid: Vec<u64>,
    },
    /// A reference with no payload.
    #[error("a chunk reference has no payload")]
    NoPayload,
    /// A reference of a kind vzarr does not know.
    #[error("a chunk reference of an unknown kind")]
    UnknownKind,
    /// Two references to one chunk.
    #[error("chunk {linear} is referenced twice")]
    Twice {
        /// The chunk's linear index.
        linear: u64,
    },
    /// A source the store's registry refuses.
    #[error("{0}")]
    Source(String),
    /// Icechunk's reference iterator failed (its error kept, not made the source: its own causes
    /// are not part of the message, and a printed chain of causes would add them).
    #[error("{0}")]
    Icechunk(BoxError),
}
use crate::read::sources::SourceRegistry;

/// Chunks per block of an array whose snapshot records no block digests.
pub(crate) const FOREIGN_BLOCK_CHUNKS: u64 = 1 << 20;
/// The most chunks a block may have (a recorded block size past it is refused).
const MAX_BLOCK_CHUNKS: u64 = 1 << 27;
/// Blocks kept loaded per array.
const CACHED_BLOCKS: usize = 4;

/// A manifest of the array: its id, size and the extents of the chunks it holds.
#[derive(Debug, Clone)]
pub(crate) struct ManifestSpan {
    pub(crate) id: ManifestId,
    pub(crate) size: u64,
    pub(crate) extents: ManifestExtents,
}

/// A store-owned chunk: bytes in hand, or a chunk object of the repository.
#[derive(Debug, Clone)]
enum Owned {
    Bytes(Bytes),
    Object(ChunkRef),
}

/// The chunk references of one array of a repository snapshot.
pub(crate) struct ArrayChunks {
    repo: String,
    path: String,
    node: NodeId,
    assets: Arc<AssetManager>,
    manifests: Vec<ManifestSpan>,
    grid_shape: Vec<u64>,
    num_chunks: u64,
    per_block: u64,
    /// Per block, the digest the snapshot's summary records.
    digests: Option<Vec<String>>,
    blocks: tokio::sync::Mutex<VecDeque<(u64, Arc<Vec<ChunkEntry>>)>>,
    owned: Mutex<Vec<Owned>>,
    /// The manifests whose files were checked (`formats/icechunk/read/frames`) before their first fetch.
    checked: Mutex<std::collections::HashSet<String>>,
}

impl std::fmt::Debug for ArrayChunks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArrayChunks").field("path", &self.path).field("manifests", &self.manifests.len()).finish()
    }
}

/// What [`ArrayChunks::new`] needs to know of the array.
pub(crate) struct ArrayNode {
    pub(crate) path: String,
    pub(crate) node: NodeId,
    pub(crate) manifests: Vec<ManifestSpan>,
    pub(crate) grid_shape: Vec<u64>,
    /// Recorded block digests: chunks per block and one digest per block.
    pub(crate) digests: Option<(u64, Vec<String>)>,
}

impl ArrayChunks {
    /// The array `node` of repository `repo`, whose manifests `assets` fetches.
    ///
    /// # Errors
    /// When the grid has more chunks than 64 bits count, or the recorded digests do not fit it.
    pub(crate) fn new(repo: &str, node: ArrayNode, assets: Arc<AssetManager>) -> Result<Self, ChunksError> {
        let num_chunks = node
            .grid_shape
            .iter()
            .try_fold(1u64, |acc, &n| acc.checked_mul(n))
            .ok_or_else(|| ChunksError::TooManyChunks { array: node.path.clone() })?;
        let (per_block, digests) = match node.digests {
            Some((per_block, digests)) => {
                let blocks = num_chunks.div_ceil(per_block.max(1));
                if per_block == 0 || per_block > MAX_BLOCK_CHUNKS || blocks != digests.len() as u64 {
                    let (array, digests) = (node.path.clone(), digests.len());
                    return Err(ChunksError::Digests { array, digests, per_block, chunks: num_chunks });
                }
                (per_block, Some(digests))
            }
            None => (FOREIGN_BLOCK_CHUNKS, None),
        };
        Ok(ArrayChunks {
            repo: repo.to_string(),
            path: node.path,
            node: node.node,
            assets,
            manifests: node.manifests,
            grid_shape: node.grid_shape,
            num_chunks,
            per_block,
            digests,
            blocks: tokio::sync::Mutex::default(),
            owned: Mutex::default(),
            checked: Mutex::default(),
        })
    }

    /// The entries of linear chunk indices `range` (clipped to the grid).
    ///
    /// # Errors
    /// When a manifest cannot be fetched or is damaged (one line naming the array and manifest).
    pub(crate) async fn entries(
        &self,
        range: Range<u64>,
        sources: &SourceRegistry,
    ) -> Result<Vec<ChunkEntry>, ChunksError> {
        let end = range.end.min(self.num_chunks);
        let mut out = Vec::with_capacity(end.saturating_sub(range.start).min(self.per_block) as usize);
        let mut linear = range.start;
        while linear < end {
            let block = linear / self.per_block;
            let first = block * self.per_block;
            let entries = self.block(block, sources).await?;
            let to = end.min(first + entries.len() as u64);
            out.extend_from_slice(&entries[(linear - first) as usize..(to - first) as usize]);
            linear = to.max(linear + 1);
        }
        Ok(out)
    }

    /// The entry of each linear chunk index of `linear` (any order; each block loaded once per run).
    ///
    /// # Errors
    /// As [`ArrayChunks::entries`].
    pub(crate) async fn entries_at(
        &self,
        linear: &[u64],
        sources: &SourceRegistry,
    ) -> Result<Vec<ChunkEntry>, ChunksError> {
        let mut out = Vec::with_capacity(linear.len());
        let mut current: Option<(u64, Arc<Vec<ChunkEntry>>)> = None;
        for &l in linear {
            if l >= self.num_chunks {
                out.push(ChunkEntry::Missing);
                continue;
            }
            let block = l / self.per_block;
            let entries = match &current {
                Some((b, entries)) if *b == block => entries.clone(),
                _ => {
                    let entries = self.block(block, sources).await?;
                    current = Some((block, entries.clone()));
                    entries
                }
            };
            out.push(entries[(l - block * self.per_block) as usize]);
        }
        Ok(out)
    }

    /// The bytes of the store-owned chunk in slot `slot` (a [`ChunkEntry::Owned`] offset).
    ///
    /// # Errors
    /// When the slot is unknown or the chunk object cannot be fetched.
    pub(crate) async fn owned_bytes(&self, slot: u64) -> Result<Bytes, ChunksError> {
        let owned = self.owned.lock().unwrap_or_else(|e| e.into_inner()).get(slot as usize).cloned();
        match owned {
            Some(Owned::Bytes(bytes)) => Ok(bytes),
            Some(Owned::Object(chunk)) => self.fetch_object(&chunk).await,
            None => Err(ChunksError::NoOwned { array: self.path.clone(), slot }),
        }
    }

    async fn fetch_object(&self, chunk: &ChunkRef) -> Result<Bytes, ChunksError> {
        let range = chunk.offset..chunk.offset.saturating_add(chunk.length);
        let bytes = self.assets.fetch_chunk(&self.path, &[], &chunk.id, &range).await.map_err(|e| {
            ChunksError::FetchObject { array: self.path.clone(), chunk: chunk.id.to_string(), cause: Box::new(e) }
        })?;
        if bytes.len() as u64 != chunk.length {
            let (array, chunk_id) = (self.path.clone(), chunk.id.to_string());
            return Err(ChunksError::ObjectLength { array, chunk: chunk_id, len: bytes.len(), length: chunk.length });
        }
        Ok(bytes)
    }

    /// Block `block`'s entries, loaded (and checked) unless kept from an earlier lookup.
    async fn block(&self, block: u64, sources: &SourceRegistry) -> Result<Arc<Vec<ChunkEntry>>, ChunksError> {
        let mut cache = self.blocks.lock().await;
        if let Some((_, entries)) = cache.iter().find(|(b, _)| *b == block) {
            return Ok(entries.clone());
        }
        let entries = Arc::new(self.load(block, sources).await?);
        if cache.len() >= CACHED_BLOCKS {
            cache.pop_front();
        }
        cache.push_back((block, entries.clone()));
        Ok(entries)
    }

    async fn load(&self, block: u64, sources: &SourceRegistry) -> Result<Vec<ChunkEntry>, ChunksError> {
        let start = block * self.per_block;
        let end = start.saturating_add(self.per_block).min(self.num_chunks);
        let mut loaded = Loaded::new(start..end);
        let rows = self.rows(start..end);
        for span in &self.manifests {
            let along_rows = span.extents.iter().next();
            if along_rows.is_some_and(|r| u64::from(r.end) <= rows.start || u64::from(r.start) >= rows.end) {
                continue;
            }
            self.check_manifest(span).await?;
            let manifest = self.assets.fetch_manifest(&self.path, &span.id, span.size).await.map_err(|e| {
                ChunksError::FetchManifest {
                    array: self.path.clone(),
                    manifest: span.id.to_string(),
                    cause: Box::new(e),
                }
            })?;
            self.read_manifest(&manifest, &mut loaded, sources).map_err(|source| ChunksError::Manifest {
                array: self.path.clone(),
                manifest: span.id.to_string(),
                source,
            })?;
        }
        if let Some(digests) = &self.digests {
            self.check_digest(&loaded, &digests[block as usize]).await?;
        }
        Ok(loaded.entries)
    }

    /// Checks the file of the manifest `span` names before its first fetch: Icechunk sizes its
    /// request and buffer by the recorded size and its decode buffer by what the frame declares.
    async fn check_manifest(&self, span: &ManifestSpan) -> Result<(), ChunksError> {
        let id = span.id.to_string();
        if self.checked.lock().map_err(|_| ChunksError::Poisoned)?.contains(&id) {
            return Ok(());
        }
        super::frames::Files::of(&self.assets).check_manifest(&id, span.size).await.map_err(|source| {
            ChunksError::ManifestFile { array: self.path.clone(), manifest: id.clone(), cause: Box::new(source) }
        })?;
        self.checked.lock().map_err(|_| ChunksError::Poisoned)?.insert(id);
        Ok(())
    }

    /// The rows (indices along the first axis) that linear indices `range` lie in.
    fn rows(&self, range: Range<u64>) -> Range<u64> {
        let Some(&rows) = self.grid_shape.first() else { return 0..1 };
        let per_row = (self.num_chunks / rows.max(1)).max(1);
        range.start / per_row..(range.end.saturating_sub(1) / per_row) + 1
    }

    /// Records the references of `manifest` to chunks of the loaded block.
    fn read_manifest(
        &self,
        manifest: &Arc<Manifest>,
        loaded: &mut Loaded,
        sources: &SourceRegistry,
    ) -> Result<(), ReferenceError> {
        // A manifest flagged as compressed but without a location dictionary (vzarr's own, whose
        // flatbuffer takes the schema's default flag) holds plain locations: read directly, not
        // through Icechunk's iterator (a `String` and a registry lookup per reference: most of the
        // time of opening a repository and reading one chunk).
        if manifest.uses_location_compression() && manifest.location_dictionary_size().is_some() {
            return self.read_compressed_manifest(manifest, loaded, sources);
        }
        // SAFETY: a `Manifest` holds a verified flatbuffer: `Manifest::from_buffer` (every manifest
        // Icechunk fetches) verifies it, and Icechunk's own accessors read it unchecked likewise.
        // Verifying it again here doubled the cost of loading a block.
        let root = unsafe { flatbuffers::root_unchecked::<generated::Manifest>(manifest.bytes()) };
        let Some(array) = root.arrays().lookup_by_key(self.node.0, |a, id| a.node_id().0.cmp(id)) else {
            return Ok(());
        };
        // Consecutive references usually share one location string of the flatbuffer: the last
        // one's id is reused without hashing it.
        let mut ids: HashMap<&str, u32> = HashMap::new();
        let mut last: Option<(&str, u32)> = None;
        for chunk in array.refs() {
            let index = chunk.index();
            let Some(linear) = loaded.slot_of(index.iter(), &self.grid_shape)? else { continue };
            let entry = if let Some(id) = chunk.chunk_id() {
                let chunk = ChunkRef { id: ChunkId::new(id.0), offset: chunk.offset(), length: chunk.length() };
                self.owned_entry(Owned::Object(chunk.clone()), chunk.length, loaded)
            } else if let Some(url) = chunk.location() {
                let id = match last {
                    Some((shared, id)) if std::ptr::eq(shared, url) => id,
                    _ => match ids.get(url) {
                        Some(&id) => id,
                        None => {
                            let seconds = Some(chunk.checksum_last_modified()).filter(|&s| s > 0);
                            let id = sources
                                .id_of(url, seconds, chunk.checksum_etag(), record)
                                .map_err(ReferenceError::Source)?;
                            ids.insert(url, id);
                            loaded.urls.entry(id).or_insert_with(|| url.to_string());
                            id
                        }
                    },
                };
                last = Some((url, id));
                ChunkEntry::Source { source: id, offset: chunk.offset(), length: chunk.length() }
            } else if let Some(bytes) = chunk.inline() {
                let bytes = Bytes::copy_from_slice(bytes.bytes());
                let length = bytes.len() as u64;
                self.owned_entry(Owned::Bytes(bytes), length, loaded)
            } else {
                return Err(ReferenceError::NoPayload);
            };
            loaded.set(linear, entry)?;
        }
        Ok(())
    }

    /// [`ArrayChunks::read_manifest`] for a manifest whose locations are compressed (Icechunk's
    /// own writer, with location compression on): through Icechunk's payload iterator.
    fn read_compressed_manifest(
        &self,
        manifest: &Arc<Manifest>,
        loaded: &mut Loaded,
        sources: &SourceRegistry,
    ) -> Result<(), ReferenceError> {
        if !manifest.arrays().any(|id| id == self.node) {
            return Ok(());
        }
        let icechunk = |e: icechunk::format::IcechunkFormatError| ReferenceError::Icechunk(Box::new(e));
        for item in Arc::clone(manifest).iter(self.node.clone()).map_err(icechunk)? {
            let (coords, payload) = item.map_err(icechunk)?;
            let Some(linear) = loaded.slot_of(coords.0.iter().copied(), &self.grid_shape)? else { continue };
            let entry = match payload {
                ChunkPayload::Virtual(r) => {
                    let (seconds, etag) = match &r.checksum {
                        Some(icechunk::format::manifest::Checksum::LastModified(s)) => (Some(s.0), None),
                        Some(icechunk::format::manifest::Checksum::ETag(e)) => (None, Some(e.0.as_str())),
                        None => (None, None),
                    };
                    let id = sources.id_of(r.location.url(), seconds, etag, record).map_err(ReferenceError::Source)?;
                    loaded.urls.entry(id).or_insert_with(|| r.location.url().to_string());
                    ChunkEntry::Source { source: id, offset: r.offset, length: r.length }
                }
                ChunkPayload::Inline(bytes) => {
                    let length = bytes.len() as u64;
                    self.owned_entry(Owned::Bytes(bytes), length, loaded)
                }
                ChunkPayload::Ref(chunk) => {
                    let length = chunk.length;
                    self.owned_entry(Owned::Object(chunk), length, loaded)
                }
                _ => return Err(ReferenceError::UnknownKind),
            };
            loaded.set(linear, entry)?;
        }
        Ok(())
    }

    fn owned_entry(&self, owned: Owned, length: u64, loaded: &mut Loaded) -> ChunkEntry {
        let mut slots = self.owned.lock().unwrap_or_else(|e| e.into_inner());
        let slot = slots.len() as u64;
        slots.push(owned);
        loaded.owned.push(slot);
        ChunkEntry::Owned { offset: slot, length }
    }

    /// Compares the loaded block's digest with the recorded one.
    async fn check_digest(&self, loaded: &Loaded, recorded: &str) -> Result<(), ChunksError> {
        let mut bytes: HashMap<u64, Bytes> = HashMap::with_capacity(loaded.owned.len());
        for &slot in &loaded.owned {
            bytes.insert(slot, self.owned_bytes(slot).await?);
        }
        let entries = loaded.entries.iter().enumerate().map(|(i, e)| (loaded.range.start + i as u64, *e));
        let url = |id: u32| loaded.urls.get(&id).map(String::as_str);
        let owned = |slot: u64, _| bytes.get(&slot).map(|b| std::borrow::Cow::Borrowed(b.as_ref()));
        let digest = crate::formats::chunks_digest(entries, url, owned);
        if digest.as_deref() != Some(recorded) {
            let (start, end) = (loaded.range.start, loaded.range.end);
            return Err(ChunksError::Digest { array: self.path.clone(), start, end });
        }
        Ok(())
    }

    /// The repository location, for messages.
    pub(crate) fn repo(&self) -> &str {
        &self.repo
    }
}

/// A virtual reference's source as the reference records it.
fn record(url: &str, seconds: Option<u32>, etag: Option<&str>) -> SourceFile {
    super::branch::recorded(url, seconds).with_etag(etag.map(str::to_string))
}

/// A block being loaded: its entries, the URLs of the sources they name, the owned slots.
struct Loaded {
    range: Range<u64>,
    entries: Vec<ChunkEntry>,
    urls: HashMap<u32, String>,
    owned: Vec<u64>,
}

impl Loaded {
    fn new(range: Range<u64>) -> Self {
        let entries = vec![ChunkEntry::Missing; (range.end - range.start) as usize];
        Loaded { range, entries, urls: HashMap::new(), owned: Vec::new() }
    }

    /// The linear index of the chunk at `coords` when it lies in the block; an error when it lies
    /// outside the grid.
    fn slot_of(
        &self,
        coords: impl ExactSizeIterator<Item = u32>,
        shape: &[u64],
    ) -> Result<Option<u64>, ReferenceError> {
        if coords.len() != shape.len() {
            return Err(ReferenceError::Rank { rank: coords.len(), grid: shape.len() });
        }
        let mut linear = 0u64;
        for (c, &n) in coords.zip(shape) {
            if u64::from(c) >= n {
                return Err(ReferenceError::Outside { index: c, grid: shape.to_vec() });
            }
            linear = linear * n + u64::from(c);
        }
        Ok(self.range.contains(&linear).then_some(linear))
    }

    fn set(&mut self, linear: u64, entry: ChunkEntry) -> Result<(), ReferenceError> {
        let slot = &mut self.entries[(linear - self.range.start) as usize];
        if !matches!(slot, ChunkEntry::Missing) {
            return Err(ReferenceError::Twice { linear });
        }
        *slot = entry;
        Ok(())
    }
}
