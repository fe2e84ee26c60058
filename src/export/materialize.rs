//! A real Zarr v3 directory store from a native store: every `zarr.json` plus every present chunk's
//! stored bytes, copied verbatim (no decode, no re-encode).
//!
//! ```text
//! tas.zarr/
//! ├── zarr.json              root group, as in the native store
//! ├── tas/zarr.json          array metadata, as in the native store (same grid, same codecs)
//! ├── tas/c/0/0/0            the bytes of chunk (0, 0, 0), copied from its source file
//! └── crs/c                  a 0-d array's only chunk
//! ```
//!
//! The copy is valid because the array's `zarr.json` already describes every chunk's bytes: vzarr only
//! references chunks that decode, through the array's codecs, to exactly their grid edge shape
//! (interior partial chunks are trimmed or rewritten at scan time; rewritten bytes are store-owned and
//! are copied too). Missing chunks get no file: readers return the fill value.
//!
//! With [`MaterializeOptions::shards`], arrays become `sharding_indexed` arrays instead
//! (`materialize/plan` decides the shard grid, `materialize/sharded` writes the shards): each shard
//! object is its source chunks' stored bytes concatenated verbatim plus the shard index, and the outer
//! grid follows the source files (`--shards file`, rectilinear when they differ in length) or a fixed
//! shape. An array whose chunks cannot be packed verbatim (varying chunk edges, a file ending inside a
//! chunk, ...) is written unsharded and reported with the reason ([`ArrayLayout`]).
//!
//! Chunks are fetched through the store's reader (tokio, up to
//! [`MaterializeOptions::max_concurrent_chunks`] chunks, or
//! [`MaterializeOptions::max_concurrent_shards`] shards, at a time) and every object is put whole to an
//! object sink (`materialize/sink`: files under the staging directory). Atomic like the native writer:
//! the tree is built in a hidden sibling directory and published by `store/publish` when complete (one
//! `syncfs`, one `renameat2`). `--overwrite` replaces only a Zarr v3 store (a directory whose root
//! `zarr.json` says `"zarr_format": 3`).

mod plan;
mod regular;
mod sharded;
mod sink;

pub use plan::{
    plan_shards, FileExtent, FileExtents, ShardLayout, ShardSpec, Unshardable, MAX_CHUNKS_PER_SHARD, MAX_SLAB_ENTRIES,
};
#[cfg(feature = "icechunk")]
pub use regular::materialize_update;
pub use regular::{materialize_regular, RegularFormat, RegularOptions};

use std::path::Path;
use std::sync::Arc;

use futures::{StreamExt, TryStreamExt};

use crate::codec::sharding::ShardingIndexed;
use crate::formats::{checked_nodes, staged, store_inputs, ExportError};
use crate::manifest::ChunkEntry;
use crate::metadata::{chunk_key, node_key};
use crate::read::{ArrayReader, EntryRounds, Store};
use crate::store::OutputKind;
use sink::{put, DirSink, ObjectSink};

/// Options of [`materialize`].
#[derive(Debug, Clone)]
pub struct MaterializeOptions {
    /// Replace an existing directory (atomically: the old one stays until the new one is complete).
    /// Default: false.
    pub overwrite: bool,
    /// Chunks fetched and written at once (unsharded arrays). Default: 16.
    pub max_concurrent_chunks: usize,
    /// Write `sharding_indexed` arrays with this shard layout. Default: `None` (one object per chunk).
    pub shards: Option<ShardSpec>,
    /// Shards assembled and written at once; memory holds about this many shards. Default: 4.
    pub max_concurrent_shards: usize,
}

impl Default for MaterializeOptions {
    fn default() -> Self {
        MaterializeOptions { overwrite: false, max_concurrent_chunks: 16, shards: None, max_concurrent_shards: 4 }
    }
}

/// How one array was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sharding {
    /// One object per chunk, as asked.
    Unsharded,
    /// `sharding_indexed`: the outer (shard) grid and the inner chunk shape.
    Sharded(ShardLayout),
    /// Sharding was asked for but is impossible without re-encoding: one object per chunk, and why.
    Fallback(Unshardable),
}

/// One array of a materialization.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArrayLayout {
    /// The array path.
    pub path: String,
    /// How it was written.
    pub sharding: Sharding,
    /// Chunks copied (as chunk files or inside shards).
    pub chunks_copied: u64,
    /// Of those, chunks shorter than the inner chunk at the array's end, padded with the fill value and
    /// re-encoded ([`ShardLayout::short_last`]); every other chunk is copied verbatim.
    pub padded_chunks: u64,
    /// Objects (chunk files or shards) written for it.
    pub objects: u64,
    /// Bytes of those objects.
    pub bytes: u64,
    /// A regular copy whose source and target chunks cross badly: the chunk shape of the
    /// intermediate array it was copied through (rechunker's intermediate pass); `None` otherwise.
    pub intermediate: Option<Vec<u64>>,
}

/// What a materialization wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MaterializeReport {
    /// Arrays written.
    pub arrays: u64,
    /// Chunks copied (as chunk files or inside shards).
    pub chunks: u64,
    /// Chunk and shard objects written (metadata documents not counted).
    pub objects: u64,
    /// Bytes of those objects.
    pub bytes: u64,
    /// Per array, in store order.
    pub layouts: Vec<ArrayLayout>,
}

impl MaterializeReport {
    /// Counts one more array written as `layout` says.
    fn add(&mut self, layout: ArrayLayout) {
        self.arrays += 1;
        self.objects += layout.objects;
        self.bytes += layout.bytes;
        self.chunks += layout.chunks_copied;
        self.layouts.push(layout);
    }
}

/// Writes the native store `store` as a real Zarr v3 directory store at `destination`.
/// `progress(n)` is called as chunks are copied, `n` chunks at a time (from the calling task).
///
/// # Errors
/// [`ExportError`] naming the store, array, source file or output file; nothing is left at
/// `destination` (an existing directory is kept unless the new one is complete).
pub async fn materialize(
    store: &Store,
    destination: &Path,
    options: &MaterializeOptions,
    progress: &(dyn Fn(u64) + Send + Sync),
) -> Result<MaterializeReport, ExportError> {
    // Every source known (a repository names them in its manifests) before the output's checks.
    store.all_sources().await?;
    let (groups, arrays) = checked_nodes(store)?;
    let extents = file_extents(store);
    let build = |root: std::path::PathBuf| async move {
        let sink: Arc<dyn ObjectSink> = Arc::new(DirSink::create(&root)?);
        for node in std::iter::once(&String::new()).chain(&groups) {
            put(&sink, node_key(node), store.node_metadata(node).await?).await?;
        }
        let mut report = MaterializeReport::default();
        for path in &arrays {
            let array = store.array(path).await?;
            let layout = write_array(store, &array, &sink, &extents, options, progress).await?;
            report.arrays += 1;
            report.objects += layout.objects;
            report.bytes += layout.bytes;
            report.layouts.push(layout);
        }
        report.chunks = report.layouts.iter().map(|l| l.chunks_copied).sum();
        Ok(report)
    };
    staged(destination, OutputKind::ZarrStore, options.overwrite, &store_inputs(store), build).await
}

/// The files of `store` along its concatenation dimension, from its provenance.
pub fn file_extents(store: &Store) -> FileExtents {
    let provenance = &store.info().provenance;
    let name = |id: u32| store.sources().get(id).map_or_else(|| format!("source {id}"), |f| f.location.clone());
    let files = provenance
        .parts
        .iter()
        .map(|p| FileExtent { file: name(p.source), start: p.start, length: p.length })
        .collect();
    FileExtents { dim: provenance.concat_dim.clone(), files }
}

/// Writes one array's metadata and chunks or shards.
async fn write_array(
    store: &Store,
    array: &ArrayReader,
    sink: &Arc<dyn ObjectSink>,
    extents: &FileExtents,
    options: &MaterializeOptions,
    progress: &(dyn Fn(u64) + Send + Sync),
) -> Result<ArrayLayout, ExportError> {
    let path = array.path().to_string();
    let metadata = store.node_metadata(&path).await?;
    let plan = options.shards.as_ref().map(|spec| plan_shards(array.metadata(), spec, extents));
    let (sharding, written) = match plan {
        Some(Ok(layout)) => {
            put(sink, node_key(&path), sharded_metadata(store, array, &metadata, &layout)?).await?;
            let shards = options.max_concurrent_shards;
            let written = sharded::write_shards(array, store.location(), &layout, sink, shards, progress).await?;
            (Sharding::Sharded(layout), written)
        }
        plan => {
            put(sink, node_key(&path), metadata).await?;
            let written = copy_chunks(array, sink, options, progress).await?;
            let sharding = match plan {
                Some(Err(reason)) => Sharding::Fallback(reason),
                _ => Sharding::Unsharded,
            };
            (sharding, written)
        }
    };
    Ok(ArrayLayout {
        path,
        sharding,
        chunks_copied: written.chunks,
        padded_chunks: written.padded,
        objects: written.objects,
        bytes: written.bytes,
        intermediate: None,
    })
}

/// The array's `zarr.json` as stored, with the shard grid as `chunk_grid` and the stored codecs
/// moved inside a `sharding_indexed` codec.
fn sharded_metadata(
    store: &Store,
    array: &ArrayReader,
    stored: &[u8],
    layout: &ShardLayout,
) -> Result<Vec<u8>, ExportError> {
    let node_error = |reason: String| ExportError::Node {
        store: store.location().to_string(),
        node: array.path().to_string(),
        reason,
    };
    let mut doc: serde_json::Value = crate::metadata::from_text(stored).map_err(|e| node_error(e.to_string()))?;
    let object = doc.as_object_mut().ok_or_else(|| node_error("zarr.json is not an object".into()))?;
    let codec = ShardingIndexed { chunk_shape: layout.chunk_shape.clone(), codecs: array.metadata().codecs.clone() };
    object.insert("chunk_grid".into(), layout.grid.to_json());
    object.insert("codecs".into(), serde_json::Value::Array(vec![codec.to_json()]));
    Ok(crate::metadata::to_text(&doc).into_bytes())
}

/// Copies every present chunk of `array` as one object each.
async fn copy_chunks(
    array: &ArrayReader,
    sink: &Arc<dyn ObjectSink>,
    options: &MaterializeOptions,
    progress: &(dyn Fn(u64) + Send + Sync),
) -> Result<sharded::Written, ExportError> {
    let grid = &array.metadata().chunk_grid;
    let mut rounds = EntryRounds::new(array);
    let mut written = sharded::Written::default();
    while let Some((start, entries)) = rounds.next_round().await? {
        let present = (start..).zip(entries).filter(|(_, e)| !matches!(e, ChunkEntry::Missing));
        let copies = futures::stream::iter(present).map(|(linear, entry)| {
            let key = chunk_key(array.path(), &grid.chunk_coords(linear));
            copy_chunk(array, entry, key, sink)
        });
        let mut copies = copies.buffer_unordered(options.max_concurrent_chunks.max(1));
        while let Some(bytes) = copies.try_next().await? {
            written.objects += 1;
            written.chunks += 1;
            written.bytes += bytes;
            progress(1);
        }
    }
    Ok(written)
}

/// Fetches one chunk's stored bytes and puts them as `key`.
async fn copy_chunk(
    array: &ArrayReader,
    entry: ChunkEntry,
    key: String,
    sink: &Arc<dyn ObjectSink>,
) -> Result<u64, ExportError> {
    match array.stored_chunk(&entry).await? {
        Some(bytes) => put(sink, key, bytes).await,
        None => Ok(0),
    }
}
