//! Opening a store and its arrays, and the read loop that ties plan, fetch and decode together.

use std::sync::Arc;

use super::backend::ChunkIndex;
use super::backend::StoreInner;
use super::decode::{decode_batch, decode_chunk_into, DecodeContext};
use super::fetch::{fetch_batch, FetchContext, Fetched};
use super::plan::{split_by_bytes, Batch, ChunkRead};
use super::StoreFormat;
use super::StoreInfo;
use super::{ArrayData, ReadError, ReadOptions};
use crate::grid::Selection;
use crate::manifest::{ChunkEntry, SourceTable};
use crate::metadata::ArrayMetadata;
use crate::source::{Location, RemoteOptions};
use crate::trust::Authorization;

/// Spans looked up in the manifest per planning round (bounds planning memory on huge reads).
const SPANS_PER_ROUND: usize = 1 << 16;

/// Chunks along the first dimension one slab of a read spans at most ([`crate::grid::ChunkGrid::slabs`]):
/// a read of 10^7 one-step chunks holds the pieces of 2^16 at a time (2.6 MB), not 400 MB of them.
const SLAB_CHUNKS: u64 = 1 << 16;

/// How [`Store::open_with`] opens a store and reads its sources.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct OpenOptions {
    /// The containers sources may be read from ([`Authorization::check`], at the first read of each
    /// source). Default: none, so no source can be read: give the containers the writer reported
    /// (`StoreInfo::source_containers`) or [`Authorization::from_user_config`] (what the command line
    /// trusts).
    pub authorization: Authorization,
    /// How object stores (the store's own and its sources') are reached. Default: credentials and
    /// endpoints from the environment.
    pub remote: RemoteOptions,
    /// Compare each source's size, ETag and modification time with the scan's before reading it.
    /// Default: true.
    pub check_sources: bool,
    /// The branch of an Icechunk repository to read. Default: `None`, which reads a native store, or
    /// the `main` branch of a repository.
    pub branch: Option<String>,
}

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions {
            authorization: Authorization::default(),
            remote: RemoteOptions::default(),
            check_sources: true,
            branch: None,
        }
    }
}

impl OpenOptions {
    /// Default options reading sources inside `authorization`'s containers.
    pub fn new(authorization: Authorization) -> Self {
        OpenOptions { authorization, ..OpenOptions::default() }
    }

    /// With these remote options.
    #[must_use]
    pub fn with_remote(mut self, remote: RemoteOptions) -> Self {
        self.remote = remote;
        self
    }

    /// Reading this branch of an Icechunk repository.
    #[must_use]
    pub fn with_branch(mut self, branch: impl Into<String>) -> Self {
        self.branch = Some(branch.into());
        self
    }

    /// With source checks on or off.
    #[must_use]
    pub fn with_check_sources(mut self, check: bool) -> Self {
        self.check_sources = check;
        self
    }
}

/// An opened store: its summary, source table and arrays. Opened by [`Store::open`] and
/// [`Store::open_with`], which the format registry (`formats`) defines: it picks the store's format
/// and opens it with that format's reader.
#[derive(Debug, Clone)]
pub struct Store {
    inner: Arc<StoreInner>,
}

impl Store {
    /// The store `inner` describes.
    pub(crate) fn from_inner(inner: StoreInner) -> Self {
        Store { inner: Arc::new(inner) }
    }

    /// Which kind of store this is.
    pub fn kind(&self) -> StoreFormat {
        self.inner.backend.kind()
    }

    /// The location the store was opened from, as given (for messages).
    pub fn location(&self) -> &str {
        &self.inner.location
    }

    /// The location the store was opened from, as classified when it was opened.
    pub fn address(&self) -> &Location {
        &self.inner.address
    }

    /// The store summary (`vzarr.json`).
    pub fn info(&self) -> &StoreInfo {
        &self.inner.info
    }

    /// The source files known now: every one of a native store; of an Icechunk repository, those
    /// the manifests loaded so far name (a repository lists its sources only in its manifests:
    /// [`Store::all_sources`] loads them all).
    pub fn sources(&self) -> Arc<SourceTable> {
        self.inner.sources.table()
    }

    /// Every source file. For an Icechunk repository this reads every array's manifests (each
    /// checked as a read would check it).
    ///
    /// # Errors
    /// As [`ArrayReader::entries`].
    pub async fn all_sources(&self) -> Result<Arc<SourceTable>, ReadError> {
        if self.is_repository() {
            for summary in &self.inner.info.arrays {
                let array = self.array(&summary.path).await?;
                let n = array.metadata().chunk_grid.num_chunks();
                let mut start = 0;
                while start < n {
                    let end = start.saturating_add(super::ENTRIES_PER_ROUND).min(n);
                    array.entries(start..end).await?;
                    start = end;
                }
            }
        }
        Ok(self.inner.sources.table())
    }

    /// Whether the store is an Icechunk repository's branch (whose sources are known only as its
    /// manifests are read, and whose chunk counts are known without reading only when vzarr wrote
    /// it).
    pub fn is_repository(&self) -> bool {
        self.kind() == StoreFormat::Icechunk
    }

    /// Whether every read through this store (and its clones) first compares each source's size,
    /// ETag and modification time with the scan's ([`ReadError::SourceChanged`] when they differ).
    /// Default: true. `false` reads sources as they are now (`--no-check-sources`): a source
    /// changed since the scan then gives wrong values or a decoding error. Reads with
    /// [`ReadOptions::check_sources`](super::ReadOptions::check_sources) false skip the check too.
    pub fn set_check_sources(&self, check: bool) {
        self.inner.set_check_sources(check);
    }

    /// Source `id`'s object and stored location, authorized and (unless the checks are off)
    /// compared with its fingerprint: what a reader outside the store (`verify`'s copies for
    /// libnetcdf) reads.
    ///
    /// # Errors
    /// [`ReadError::Untrusted`], [`ReadError::SourceChanged`], or the error of fetching its metadata.
    #[cfg(feature = "verify")]
    pub(crate) async fn checked_source(&self, id: u32) -> Result<(crate::source::ObjectLocation, String), ReadError> {
        let (location, name) = self.inner.source_location(id)?;
        self.inner.check_source(id, &location).await?;
        Ok((location, name))
    }

    /// Compares every source this store may read with its fingerprint (unless the checks are off,
    /// [`Store::set_check_sources`]): what an export, which reads no chunk, checks before it
    /// publishes references to them. Sources the store may only reference, not read, are not looked
    /// at. At most 16 sources are looked at at once.
    ///
    /// # Errors
    /// [`ReadError::SourceChanged`] for a source that changed since the scan, or the error of
    /// fetching its metadata.
    #[cfg(feature = "cli")]
    pub(crate) async fn check_readable_sources(&self) -> Result<(), ReadError> {
        use futures::StreamExt;
        if !self.inner.checks_sources() {
            return Ok(());
        }
        let count = self.inner.sources.table().len() as u32;
        let readable = (0..count).filter(|&id| {
            self.inner.source(id).is_ok_and(|file| self.inner.authorization.check(&file.location).is_ok())
        });
        let checks = readable.map(|id| async move {
            let (location, _) = self.inner.source_location(id)?;
            self.inner.check_source(id, &location).await
        });
        let mut results = futures::stream::iter(checks.collect::<Vec<_>>()).buffer_unordered(16);
        while let Some(result) = results.next().await {
            result?;
        }
        Ok(())
    }

    /// The authorization the store was opened with.
    pub fn authorization(&self) -> &Authorization {
        &self.inner.authorization
    }

    /// Checks every source against the store's authorization without reading any
    /// ([`Authorization::check`]: what must pass before another library, such as libnetcdf, opens them).
    ///
    /// # Errors
    /// [`ReadError::Untrusted`] for the first source that may not be read.
    pub fn authorize_sources(&self) -> Result<(), ReadError> {
        for file in self.inner.sources.table().iter() {
            self.inner.authorization.check(&file.location)?;
        }
        Ok(())
    }

    /// Checks that references to every source may be published ([`Authorization::check_reference`]:
    /// what an export, which writes references rather than reading them, must do).
    ///
    /// # Errors
    /// [`ReadError::Untrusted`] for the first source that may not be referenced.
    pub fn authorize_references(&self) -> Result<(), ReadError> {
        for file in self.inner.sources.table().iter() {
            self.inner.authorization.check_reference(&file.location)?;
        }
        Ok(())
    }

    /// The `zarr.json` bytes of node `path` (`""` for the root group, `grp`, `grp/tas`), exactly as
    /// stored (re-serialising a parsed document could change the last digit of a float), checked to
    /// be one UTF-8 JSON document.
    ///
    /// # Errors
    /// [`ReadError::Store`] when the file cannot be read or is not JSON.
    pub async fn node_metadata(&self, path: &str) -> Result<bytes::Bytes, ReadError> {
        self.inner.backend.node_metadata(&self.inner, path).await
    }

    /// Opens array `path` (`tas`, `grp/tas`).
    ///
    /// # Errors
    /// [`ReadError::NoSuchArray`] for an unknown path; [`ReadError::Metadata`] or
    /// [`ReadError::Manifest`] when its files are invalid.
    pub async fn array(&self, path: &str) -> Result<ArrayReader, ReadError> {
        let inner = &self.inner;
        if !inner.array_paths.contains(path) {
            let available: Vec<&str> = inner.info.arrays.iter().map(|a| a.path.as_str()).collect();
            return Err(ReadError::NoSuchArray {
                location: inner.location.clone(),
                array: path.to_string(),
                available: available.join(", "),
            });
        }
        let (metadata, index) = inner.backend.array(inner, path).await?;
        self.check_chunk_size(path, &metadata)?;
        Ok(ArrayReader { inner: self.inner.clone(), path: path.to_string(), metadata, index })
    }

    /// Refuses an array whose largest chunk decodes to more than [`crate::read::MAX_CHUNK_BYTES`].
    fn check_chunk_size(&self, path: &str, metadata: &ArrayMetadata) -> Result<(), ReadError> {
        let chunk_bytes = largest_chunk_bytes(metadata);
        if chunk_bytes.is_none_or(|b| b > crate::read::MAX_CHUNK_BYTES) {
            return Err(ReadError::TooLarge {
                location: self.inner.location.clone(),
                array: path.to_string(),
                what: "its largest chunk".into(),
                bytes: chunk_bytes,
                limit: format!("the bound of {} bytes per chunk", crate::read::MAX_CHUNK_BYTES),
            });
        }
        Ok(())
    }
}

/// Decoded bytes of the array's largest chunk (the product of each dimension's largest edge times the
/// element size); `None` when it overflows 64 bits.
fn largest_chunk_bytes(metadata: &ArrayMetadata) -> Option<u64> {
    let dims = metadata.chunk_grid.dims();
    dims.iter().try_fold(metadata.element_size() as u64, |acc, d| acc.checked_mul(d.edge_range().map_or(0, |r| r.1)))
}

/// One array of an opened store.
#[derive(Debug)]
pub struct ArrayReader {
    inner: Arc<StoreInner>,
    path: String,
    metadata: ArrayMetadata,
    index: Arc<dyn ChunkIndex>,
}

impl ArrayReader {
    /// The array path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The array metadata.
    pub fn metadata(&self) -> &ArrayMetadata {
        &self.metadata
    }

    /// The array shape.
    pub fn shape(&self) -> Vec<u64> {
        self.metadata.shape()
    }

    /// Manifest entries for linear chunk indices `range` (decoding only the blocks involved).
    ///
    /// # Errors
    /// [`ReadError::Store`] / [`ReadError::Manifest`] when a block cannot be fetched or decoded.
    pub async fn entries(&self, range: std::ops::Range<u64>) -> Result<Vec<ChunkEntry>, ReadError> {
        self.index.entries(&self.inner, &self.path, range).await
    }

    /// The stored (still encoded) bytes of one chunk, exactly as its entry references them: from the
    /// source file for [`ChunkEntry::Source`] (whose size and modification time are first checked
    /// against the scan, once per store), from the array's `owned.bin` for [`ChunkEntry::Owned`];
    /// `None` for [`ChunkEntry::Missing`].
    ///
    /// # Errors
    /// [`ReadError::Fetch`] when the bytes cannot be read; [`ReadError::SourceChanged`] when the source
    /// file changed since the scan or holds fewer bytes than referenced.
    pub async fn stored_chunk(&self, entry: &ChunkEntry) -> Result<Option<bytes::Bytes>, ReadError> {
        Ok(self.stored_chunks(std::slice::from_ref(entry)).await?.pop().flatten())
    }

    /// The stored bytes of several chunks, in the order of `entries` (`None` for missing ones),
    /// fetched as reads fetch them (`read/fetch`: per file, nearby ranges in one GET carrying the
    /// source's recorded ETag or time, every reply's length checked). Checks and errors as
    /// [`ArrayReader::stored_chunk`].
    ///
    /// # Errors
    /// As [`ArrayReader::stored_chunk`].
    pub async fn stored_chunks(&self, entries: &[ChunkEntry]) -> Result<Vec<Option<bytes::Bytes>>, ReadError> {
        let reads = entries.iter().map(|&entry| ChunkRead { coords: Vec::new(), pieces: Vec::new(), entry }).collect();
        let ctx = FetchContext { store: self.inner.clone(), array: self.path.clone(), index: self.index.clone() };
        let fetched = fetch_batch(ctx, Batch::new(reads), ReadOptions::default()).await?;
        let mut out = vec![None; entries.len()];
        for (request, data) in fetched.batch.requests.iter().zip(fetched.data) {
            for (readers, bytes) in request.readers.iter().zip(data) {
                for &i in readers {
                    out[i] = Some(bytes.clone());
                }
            }
        }
        Ok(out)
    }

    /// The manifest entries of the chunks at linear indices `linear`, in order, looked up as a read
    /// looks them up.
    pub(crate) async fn entries_at(&self, linear: &[u64]) -> Result<Vec<ChunkEntry>, ReadError> {
        self.index.entries_at(&self.inner, &self.path, linear).await
    }

    /// Decodes the chunk at `coords` (its `entry`, and its stored bytes from
    /// [`ArrayReader::stored_chunks`]) into `out`, which holds exactly its decoded elements, as a
    /// read decodes it; errors name the source file.
    pub(crate) fn decode_stored_into(
        &self,
        coords: &[u64],
        entry: ChunkEntry,
        stored: Option<&[u8]>,
        out: &mut [u8],
    ) -> Result<(), ReadError> {
        let names = |id: u32| self.inner.sources.get(id).map_or_else(|| format!("source {id}"), |f| f.location);
        let ctx = DecodeContext { array: &self.path, store: &self.inner.location, source_name: &names };
        decode_chunk_into(&self.metadata, coords, entry, stored, out, &ctx)
    }

    /// Reads `selection` into a new buffer.
    ///
    /// # Errors
    /// [`ReadError`] for an invalid selection, a missing or changed source file, or a chunk that does not
    /// decode; each names the file and the array.
    ///
    /// A `string` array (the coordinate of a new concatenation dimension) is returned as fixed-width
    /// UTF-8 bytes padded with NULs ([`DataType::FixedBytes`] of its longest element, NumPy `S<n>`);
    /// [`ArrayReader::read_strings`] gives the strings.
    ///
    /// [`DataType::FixedBytes`]: crate::metadata::DataType::FixedBytes
    pub async fn read(&self, selection: &Selection, options: &ReadOptions) -> Result<ArrayData, ReadError> {
        if self.metadata.data_type == crate::metadata::DataType::String {
            let strings = super::strings::read_strings(self, selection).await?;
            return Ok(super::strings::fixed_width(&strings, selection.out_shape()));
        }
        let len = self.check_memory(selection, options)?;
        let mut bytes = vec![0u8; len];
        self.read_into(selection, &mut bytes, options).await?;
        Ok(ArrayData { data_type: self.metadata.data_type, shape: selection.out_shape(), bytes })
    }

    /// The output size of `selection` in bytes, checked against `options.max_memory` (with the
    /// array's largest decoded chunk, which each decoding thread also holds).
    fn check_memory(&self, selection: &Selection, options: &ReadOptions) -> Result<usize, ReadError> {
        let too_large = |what: &str, bytes| ReadError::TooLarge {
            location: self.inner.location.clone(),
            array: self.path.clone(),
            what: what.to_string(),
            bytes,
            limit: format!("the memory limit of {} bytes", options.max_memory),
        };
        let chunk = largest_chunk_bytes(&self.metadata);
        if chunk.is_none_or(|b| b > options.max_memory) {
            return Err(too_large("its largest chunk", chunk));
        }
        let bytes =
            selection.len().checked_mul(self.metadata.element_size() as u64).filter(|_| selection.len() < u64::MAX);
        match bytes.and_then(|b| usize::try_from(b).ok()) {
            Some(b) if (b as u64) <= options.max_memory => Ok(b),
            _ => Err(too_large("the selection", bytes)),
        }
    }

    /// Reads the selected elements of a `string` array.
    ///
    /// # Errors
    /// [`ReadError::Output`] when the array is not of the `string` data type or too large;
    /// [`ReadError::Selection`], [`ReadError::Decode`], and the fetch errors of [`ArrayReader::read`].
    pub async fn read_strings(&self, selection: &Selection) -> Result<Vec<String>, ReadError> {
        if self.metadata.data_type != crate::metadata::DataType::String {
            let reason = format!("{} array, not strings", self.metadata.data_type);
            return Err(ReadError::Output { array: self.path.clone(), reason });
        }
        super::strings::read_strings(self, selection).await
    }

    /// Reads `selection` into `out`, which must hold exactly its elements (native byte order, C order).
    ///
    /// # Errors
    /// As [`ArrayReader::read`], and [`ReadError::Output`] when `out` has the wrong length.
    pub async fn read_into(
        &self,
        selection: &Selection,
        out: &mut [u8],
        options: &ReadOptions,
    ) -> Result<(), ReadError> {
        if self.metadata.codecs.is_strings() {
            let reason = "a string array is read with read() or read_strings()".to_string();
            return Err(ReadError::Output { array: self.path.clone(), reason });
        }
        let grid = &self.metadata.chunk_grid;
        let selection_error = |source| ReadError::Selection { array: self.path.clone(), source };
        let slabs = grid.slabs(selection, SLAB_CHUNKS).map_err(selection_error)?;
        let want = self.check_memory(selection, options)?;
        if out.len() != want {
            return Err(ReadError::Output {
                array: self.path.clone(),
                reason: format!("buffer of {} bytes for a selection of {want} bytes", out.len()),
            });
        }
        let row_bytes = out.len() / selection.counts().first().map_or(1, |&n| n.max(1) as usize);
        let mut rest = out;
        for slab in &slabs {
            let rows = if slabs.len() == 1 { rest.len() } else { slab.counts()[0] as usize * row_bytes };
            let (part, after) = std::mem::take(&mut rest).split_at_mut(rows);
            self.read_slab(slab, part, options).await?;
            rest = after;
        }
        Ok(())
    }

    /// Reads one slab of a selection (`ChunkGrid::slabs`) into `out`, which holds its elements.
    async fn read_slab(&self, selection: &Selection, out: &mut [u8], options: &ReadOptions) -> Result<(), ReadError> {
        let grid = &self.metadata.chunk_grid;
        let selection_error = |source| ReadError::Selection { array: self.path.clone(), source };
        let pieces = grid.pieces(selection).map_err(selection_error)?;
        let out_shape = selection.counts();
        let ctx = FetchContext { store: self.inner.clone(), array: self.path.clone(), index: self.index.clone() };
        let mut spans = grid.spans(&pieces);
        let mut pending: Option<tokio::task::JoinHandle<Result<Fetched, ReadError>>> = None;
        loop {
            let round: Vec<_> = spans.by_ref().take(SPANS_PER_ROUND).collect();
            if round.is_empty() {
                break;
            }
            let reads = self.lookup(round).await?;
            for group in split_by_bytes(reads, options.batch_bytes) {
                // Fetch this batch while the previous one decodes.
                let task = tokio::spawn(fetch_batch(ctx.clone(), Batch::new(group), options.clone()));
                if let Some(previous) = pending.replace(task) {
                    self.decode(previous, out, &out_shape).await?;
                }
            }
        }
        if let Some(last) = pending.take() {
            self.decode(last, out, &out_shape).await?;
        }
        Ok(())
    }

    /// Pairs spans with their manifest entries, fetching each needed block once.
    async fn lookup(&self, spans: Vec<crate::grid::ChunkSpan>) -> Result<Vec<ChunkRead>, ReadError> {
        let grid = &self.metadata.chunk_grid;
        let linear: Vec<u64> = spans.iter().map(|span| grid.linear_index(&span.coords)).collect();
        let entries = self.entries_at(&linear).await?;
        Ok(spans.into_iter().zip(entries).map(|(span, entry)| ChunkRead::new(span, entry)).collect())
    }

    async fn decode(
        &self,
        task: tokio::task::JoinHandle<Result<Fetched, ReadError>>,
        out: &mut [u8],
        out_shape: &[u64],
    ) -> Result<(), ReadError> {
        let fetched = task
            .await
            .map_err(|e| ReadError::Output { array: self.path.clone(), reason: format!("fetch task failed: {e}") })??;
        let names = |id: u32| self.inner.sources.get(id).map_or_else(|| format!("source {id}"), |f| f.location);
        let ctx = DecodeContext { array: &self.path, store: &self.inner.location, source_name: &names };
        let mut decode = move || decode_batch(&fetched, &self.metadata, out, out_shape, &ctx);
        // Decoding is CPU work on rayon: on a multi-threaded runtime this worker tells tokio it blocks,
        // so the runtime's other tasks (the next batch's fetch) move to other workers meanwhile.
        match tokio::runtime::Handle::try_current().map(|h| h.runtime_flavor()) {
            Ok(tokio::runtime::RuntimeFlavor::MultiThread) => tokio::task::block_in_place(decode),
            _ => decode(),
        }
    }
}
