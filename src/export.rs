//! Stage 5, read -> other stores: an opened [`Store`] exported for other readers.
//!
//! `export/kerchunk` writes kerchunk reference JSON (the same document as the kerchunk writer of
//! `store/kerchunk`, which this reuses), `export/kerchunk_parquet` a kerchunk Parquet reference set
//! (the same directory as `store/kerchunk_parquet`'s writer, whose documents and record files it
//! reuses; feature `kerchunk-parquet`), and `export/materialize` writes a real Zarr v3 store with the
//! chunk bytes copied, optionally packed into `sharding_indexed` shards. All walk the store the same
//! way: every node's `zarr.json`, then every array's manifest entries a round (or, for Parquet, a record) at a
//! time ([`ENTRIES_PER_ROUND`](crate::read::ENTRIES_PER_ROUND)), so memory stays bounded whatever the
//! archive's size. This room depends on `read/` and `store/`; neither depends on it.

mod kerchunk;
#[cfg(feature = "kerchunk-parquet")]
mod kerchunk_parquet;
mod materialize;

pub use kerchunk::{export_kerchunk, KerchunkOptions};
#[cfg(feature = "kerchunk-parquet")]
pub use kerchunk_parquet::{export_kerchunk_parquet, KerchunkParquetOptions, KerchunkParquetReport};
#[cfg(feature = "icechunk")]
pub use materialize::materialize_update;
pub use materialize::{
    file_extents, materialize, materialize_regular, plan_shards, ArrayLayout, FileExtent, FileExtents,
    MaterializeOptions, MaterializeReport, RegularFormat, RegularOptions, ShardLayout, ShardSpec, Sharding,
    Unshardable, MAX_CHUNKS_PER_SHARD, MAX_SLAB_ENTRIES,
};

use std::path::{Path, PathBuf};

use crate::read::{ReadError, Store};
use crate::store::{OutputKind, Staged, UrlError, WriteError};

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
    #[error(transparent)]
    Url(#[from] UrlError),
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

/// Every node path of `store` checked to be a safe relative path (a store written by another
/// program could name `../x`), groups first (without the root), then arrays.
pub(crate) fn checked_nodes(store: &Store) -> Result<(Vec<String>, Vec<String>), ExportError> {
    let info = store.info();
    let groups: Vec<String> = info.groups.iter().filter(|g| !g.is_empty()).cloned().collect();
    let arrays: Vec<String> = info.arrays.iter().map(|a| a.path.clone()).collect();
    for node in groups.iter().chain(&arrays) {
        crate::store::check_node_path(node).map_err(|reason| ExportError::Node {
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
    let mut inputs = crate::store::local_sources(&store.sources());
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
