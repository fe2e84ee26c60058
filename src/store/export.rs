//! What the exporters share: reading a native store back out for other readers.
//!
//! Stage: store -> other stores. `store/kerchunk` writes kerchunk reference JSON and
//! `store/materialize` writes a real Zarr v3 directory store; both walk an opened [`Store`] the same
//! way: every node's `zarr.json`, then every array's manifest entries, [`ENTRIES_PER_ROUND`] at a time
//! (one manifest block fetch per 4096 entries), so memory stays bounded whatever the archive's size.
//! They depend on `read/` for that walk; `read/` never depends on them.

use std::path::{Path, PathBuf};

use crate::manifest::ChunkEntry;
use crate::read::{ArrayReader, ReadError, Store};
use crate::store::{OutputKind, Staged, WriteError};

/// Manifest entries fetched and handled per round when walking an array.
pub const ENTRIES_PER_ROUND: u64 = 1 << 16;

/// An export (kerchunk JSON or materialized store) that failed. Nothing is left at the destination.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExportError {
    /// The vzarr store could not be read (the message names the store, array and file).
    #[error(transparent)]
    Read(Box<ReadError>),
    /// The output could not be written (the message names the file).
    #[error(transparent)]
    Write(#[from] WriteError),
    /// A source file location cannot be written as a URL.
    #[error("{location}: cannot be written as a URL: {reason}")]
    Location {
        /// The location as stored.
        location: String,
        /// Why.
        reason: String,
    },
    /// A `--url-prefix` rule is not of the form `OLD=NEW`.
    #[error("url prefix {value:?}: {reason}")]
    UrlPrefix {
        /// The rule as given.
        value: String,
        /// What is wrong.
        reason: String,
    },
    /// A node of the store cannot be exported (bad path, wrong node type, background task failed).
    #[error("{store}: {node}: {reason}")]
    Node {
        /// The store location.
        store: String,
        /// The group or array path.
        node: String,
        /// What is wrong.
        reason: String,
    },
}

impl From<ReadError> for ExportError {
    fn from(e: ReadError) -> Self {
        ExportError::Read(Box::new(e))
    }
}

/// The key (and relative file path) of node `path`'s metadata: `zarr.json` for the root, else
/// `<path>/zarr.json`.
pub fn node_key(path: &str) -> String {
    if path.is_empty() {
        "zarr.json".into()
    } else {
        format!("{path}/zarr.json")
    }
}

/// The Zarr v3 key of chunk `coords` of `array` with the default `/` chunk key encoding:
/// `<array>/c/i/j/k`, and `<array>/c` for a 0-d array.
pub fn chunk_key(array: &str, coords: &[u64]) -> String {
    let mut key = format!("{array}/c");
    for c in coords {
        key.push('/');
        key.push_str(&c.to_string());
    }
    key
}

/// The manifest entries of `array` in rounds of [`ENTRIES_PER_ROUND`]: `(first linear index, entries)`.
pub(crate) struct EntryRounds<'a> {
    array: &'a ArrayReader,
    next: u64,
    end: u64,
}

impl<'a> EntryRounds<'a> {
    pub(crate) fn new(array: &'a ArrayReader) -> Self {
        EntryRounds { array, next: 0, end: array.metadata().chunk_grid.num_chunks() }
    }

    /// The next round, `None` after the last chunk.
    pub(crate) async fn next_round(&mut self) -> Result<Option<(u64, Vec<ChunkEntry>)>, ReadError> {
        if self.next >= self.end {
            return Ok(None);
        }
        let start = self.next;
        self.next = start.saturating_add(ENTRIES_PER_ROUND).min(self.end);
        let entries = self.array.entries(start..self.next).await?;
        Ok(Some((start, entries)))
    }
}

/// Every node path of `store` checked to be a safe relative path (a store written by another
/// program could name `../x`), groups first (without the root), then arrays.
pub(crate) fn checked_nodes(store: &Store) -> Result<(Vec<String>, Vec<String>), ExportError> {
    let info = store.info();
    let groups: Vec<String> = info.groups.iter().filter(|g| !g.is_empty()).cloned().collect();
    let arrays: Vec<String> = info.arrays.iter().map(|a| a.path.clone()).collect();
    for node in groups.iter().chain(&arrays) {
        super::layout::check_node_path(node).map_err(|reason| ExportError::Node {
            store: store.location().to_string(),
            node: node.clone(),
            reason,
        })?;
    }
    Ok((groups, arrays))
}

/// The local paths an output made from `store` must not replace or contain: the store and its
/// sources.
pub fn store_inputs(store: &Store) -> Vec<PathBuf> {
    let mut inputs = super::local_sources(&store.sources());
    if !crate::source::is_url(store.location()) {
        inputs.push(PathBuf::from(store.location()));
    }
    inputs
}

/// Runs `build` on the staging path of `destination` (see `store/publish`), then publishes it; on
/// any error the staging is removed and nothing reaches `destination`.
pub(crate) async fn staged<T, F>(
    destination: &Path,
    kind: OutputKind,
    overwrite: bool,
    inputs: &[PathBuf],
    build: impl FnOnce(PathBuf) -> F,
) -> Result<T, ExportError>
where
    F: std::future::Future<Output = Result<T, ExportError>>,
{
    let staged = Staged::begin(destination, kind, overwrite, inputs)?;
    let value = build(staged.path().to_path_buf()).await?;
    staged.publish()?;
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_follow_the_default_chunk_key_encoding() {
        assert_eq!(node_key(""), "zarr.json");
        assert_eq!(node_key("grp/tas"), "grp/tas/zarr.json");
        assert_eq!(chunk_key("tas", &[0, 12, 3]), "tas/c/0/12/3");
        assert_eq!(chunk_key("grp/crs", &[]), "grp/crs/c");
    }
}
