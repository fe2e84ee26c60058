//! Where an array's chunk entries come from: a native store's manifest, an Icechunk repository's
//! manifests (loaded as reads need them), or a reference document's table.

use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::Arc;

use super::inner::StoreInner;
use super::objects::fetch_range;
use super::ReadError;
use crate::manifest::{ChunkEntry, ManifestIndex};
use crate::source::ObjectLocation;

/// An array's chunk index.
#[derive(Debug)]
pub(crate) enum ChunkIndex {
    /// A native store's manifest.
    Native {
        /// The manifest's header and block index.
        manifest: ManifestIndex,
        /// The manifest file.
        location: ObjectLocation,
    },
    /// An Icechunk repository's manifests.
    #[cfg(feature = "icechunk")]
    Repository(Arc<super::repository::ArrayChunks>),
    /// A reference document's table, read whole.
    Table(Arc<super::references::ReferenceTable>),
}

impl ChunkIndex {
    /// Entries for linear chunk indices `range` (clipped to the grid), loading only the manifest
    /// blocks involved.
    pub(crate) async fn entries(
        &self,
        store: &StoreInner,
        array: &str,
        range: Range<u64>,
    ) -> Result<Vec<ChunkEntry>, ReadError> {
        match self {
            ChunkIndex::Native { manifest, location } => {
                let end = range.end.min(manifest.header().num_chunks);
                let mut out = Vec::with_capacity(end.saturating_sub(range.start) as usize);
                if range.start >= end {
                    return Ok(out);
                }
                for block in manifest.block_of(range.start)..=manifest.block_of(end - 1) {
                    let entries = native_block(store, array, manifest, location, block).await?;
                    let chunks = manifest.block_chunks(block);
                    let from = range.start.max(chunks.start) - chunks.start;
                    let to = end.min(chunks.end) - chunks.start;
                    out.extend_from_slice(&entries[from as usize..to as usize]);
                }
                Ok(out)
            }
            #[cfg(feature = "icechunk")]
            ChunkIndex::Repository(chunks) => chunks
                .entries(range, store.sources())
                .await
                .map_err(|e| super::repository::repository_error(chunks.repo(), &e)),
            ChunkIndex::Table(table) => {
                let n = table.entries.len() as u64;
                let (start, end) = (range.start.min(n) as usize, range.end.min(n) as usize);
                Ok(table.entries[start..end.max(start)].to_vec())
            }
        }
    }

    /// The entry of every linear chunk index of `linear`, each manifest block fetched once.
    pub(crate) async fn entries_at(
        &self,
        store: &StoreInner,
        array: &str,
        linear: &[u64],
    ) -> Result<Vec<ChunkEntry>, ReadError> {
        match self {
            ChunkIndex::Native { manifest, location } => {
                // Lookups of a selection that cuts across the fastest dimension alternate between
                // blocks: each block is fetched once.
                let mut blocks = BTreeMap::new();
                for &l in linear {
                    let block = manifest.block_of(l);
                    if let std::collections::btree_map::Entry::Vacant(slot) = blocks.entry(block) {
                        slot.insert(native_block(store, array, manifest, location, block).await?);
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
            #[cfg(feature = "icechunk")]
            ChunkIndex::Repository(chunks) => chunks
                .entries_at(linear, store.sources())
                .await
                .map_err(|e| super::repository::repository_error(chunks.repo(), &e)),
            ChunkIndex::Table(table) => Ok(linear
                .iter()
                .map(|&l| table.entries.get(l as usize).copied().unwrap_or(ChunkEntry::Missing))
                .collect()),
        }
    }
}

async fn native_block(
    store: &StoreInner,
    array: &str,
    manifest: &ManifestIndex,
    location: &ObjectLocation,
    block: u64,
) -> Result<Vec<ChunkEntry>, ReadError> {
    let bytes = fetch_range(location, manifest.block_bytes(block), &store.location, "manifest block").await?;
    manifest.decode_block(block, &bytes).map_err(|source| ReadError::Manifest {
        location: store.location.clone(),
        array: array.to_string(),
        source,
    })
}
