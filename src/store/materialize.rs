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
//! Chunks are fetched through the store's reader (tokio, up to
//! [`MaterializeOptions::max_concurrent_chunks`] at a time) and written on tokio's blocking pool.
//! Atomic like the native writer: the tree is built in a hidden sibling directory and published by
//! `store/publish` when complete (one `syncfs`, one `renameat2`). `--overwrite` replaces only a Zarr v3
//! store (a directory whose root `zarr.json` says `"zarr_format": 3`).

use std::path::{Path, PathBuf};

use futures::{StreamExt, TryStreamExt};

use super::export::{checked_nodes, chunk_key, node_key, staged, store_inputs, EntryRounds, ExportError};
use super::native::{io_error, write_file};
use super::publish::OutputKind;
use super::WriteError;
use crate::manifest::ChunkEntry;
use crate::read::{ArrayReader, Store};

/// Options of [`materialize`].
#[derive(Debug, Clone)]
pub struct MaterializeOptions {
    /// Replace an existing directory (atomically: the old one stays until the new one is complete).
    /// Default: false.
    pub overwrite: bool,
    /// Chunks fetched and written at once. Default: 16.
    pub max_concurrent_chunks: usize,
}

impl Default for MaterializeOptions {
    fn default() -> Self {
        MaterializeOptions { overwrite: false, max_concurrent_chunks: 16 }
    }
}

/// What a materialization wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MaterializeReport {
    /// Arrays written.
    pub arrays: u64,
    /// Chunk files written.
    pub chunks: u64,
    /// Bytes of chunk files.
    pub bytes: u64,
}

/// Writes the native store `store` as a real Zarr v3 directory store at `destination`.
/// `progress(n)` is called after every `n` chunks written (from the calling task).
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
    let (groups, arrays) = checked_nodes(store)?;
    let build = |root: PathBuf| async move {
        create_dir(&root)?;
        write_file(&root.join("zarr.json"), &store.node_metadata("").await?)?;
        for node in groups.iter().chain(&arrays) {
            let path = root.join(node_key(node));
            create_dir(path.parent().unwrap_or(&root))?;
            write_file(&path, &store.node_metadata(node).await?)?;
        }
        let mut report = MaterializeReport::default();
        for path in &arrays {
            let array = store.array(path).await?;
            let (chunks, bytes) = copy_chunks(&array, &root, options, progress).await?;
            report.arrays += 1;
            report.chunks += chunks;
            report.bytes += bytes;
        }
        Ok(report)
    };
    staged(destination, OutputKind::ZarrStore, options.overwrite, &store_inputs(store), build).await
}

/// Copies every present chunk of `array` under `root`; returns (chunks, bytes) written.
async fn copy_chunks(
    array: &ArrayReader,
    root: &Path,
    options: &MaterializeOptions,
    progress: &(dyn Fn(u64) + Send + Sync),
) -> Result<(u64, u64), ExportError> {
    let grid = &array.metadata().chunk_grid;
    let mut rounds = EntryRounds::new(array);
    let (mut chunks, mut bytes) = (0u64, 0u64);
    while let Some((start, entries)) = rounds.next_round().await? {
        let present = (start..).zip(entries).filter(|(_, e)| !matches!(e, ChunkEntry::Missing));
        let copies = futures::stream::iter(present).map(|(linear, entry)| {
            let file = root.join(chunk_key(array.path(), &grid.chunk_coords(linear)));
            copy_chunk(array, entry, file)
        });
        let mut copies = copies.buffer_unordered(options.max_concurrent_chunks.max(1));
        while let Some(written) = copies.try_next().await? {
            chunks += 1;
            bytes += written;
            progress(1);
        }
    }
    Ok((chunks, bytes))
}

/// Fetches one chunk's stored bytes and writes them to `file` (on the blocking pool).
async fn copy_chunk(array: &ArrayReader, entry: ChunkEntry, file: PathBuf) -> Result<u64, ExportError> {
    let Some(bytes) = array.stored_chunk(&entry).await? else {
        return Ok(0);
    };
    let target = file.clone();
    let task = tokio::task::spawn_blocking(move || {
        if let Some(dir) = target.parent() {
            create_dir(dir)?;
        }
        write_file(&target, &bytes).map(|()| bytes.len() as u64)
    });
    let written = task.await.map_err(|e| io_error(&file, "writing chunk")(std::io::Error::other(e)))?;
    Ok(written?)
}

fn create_dir(dir: &Path) -> Result<(), WriteError> {
    std::fs::create_dir_all(dir).map_err(io_error(dir, "creating directory"))
}
