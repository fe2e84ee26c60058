//! What every format's export shares: an opened [`Store`] walked node by node ([`checked_nodes`]),
//! its sources as URLs ([`reference_urls`]), the outputs it must not overwrite ([`store_inputs`],
//! [`store_urls`]), staging and publishing an output ([`staged`]), and [`ExportError`].
//!
//! The exports themselves live with their formats (`kerchunk/export`, `parquet/export`); copies
//! with the chunk bytes in them are `export/materialize`'s.

use std::path::{Path, PathBuf};

use super::urls::{source_urls, UrlError, UrlPrefix};
use crate::read::{ReadError, Store};
use crate::store::{OutputKind, Staged, WriteError};

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
        super::check_node_path(node).map_err(|reason| ExportError::Node {
            store: store.location().to_string(),
            node: node.clone(),
            reason,
        })?;
    }
    Ok((groups, arrays))
}

/// The URLs a reference export of `store` writes for its sources, `prefixes` applied, once every
/// source is known (a repository names them in its manifests) and authorized: the references name
/// them all.
pub(crate) async fn reference_urls(store: &Store, prefixes: &[UrlPrefix]) -> Result<Vec<String>, ExportError> {
    let sources = store.all_sources().await?;
    store.authorize_references()?;
    Ok(source_urls(&sources, prefixes)?)
}

/// The URL of `source` among `urls` (for the message: chunk `linear` of `array`).
pub(crate) fn source_url<'a, U>(urls: &'a [U], source: u32, array: &str, linear: u64) -> Result<&'a U, ExportError> {
    urls.get(source as usize).ok_or_else(|| {
        ExportError::Url(UrlError::Location {
            location: format!("source {source} of {array} (chunk {linear})"),
            reason: format!("not in the source table of {} files", urls.len()),
        })
    })
}

/// The root group (path `""`) and the groups `groups` of `store`, with their attributes and the
/// note of those written as base64, read from their `zarr.json` (as vzarr writes it: non-finite
/// numbers are bare tokens).
#[cfg(any(feature = "kerchunk-parquet", feature = "icechunk"))]
pub(crate) async fn groups_of(store: &Store, groups: &[String]) -> Result<Vec<crate::dataset::GroupNode>, ExportError> {
    let mut nodes = Vec::with_capacity(groups.len() + 1);
    for path in std::iter::once(&String::new()).chain(groups) {
        let bad = |reason: String| ExportError::Node {
            store: store.location().into(),
            node: if path.is_empty() { "/".into() } else { path.clone() },
            reason: format!("its zarr.json: {reason}"),
        };
        let doc = crate::metadata::from_text(&store.node_metadata(path).await?).map_err(|e| bad(e.to_string()))?;
        let attributes = crate::metadata::group_from_json(&doc).map_err(|e| bad(e.to_string()))?;
        let attribute_encodings = crate::metadata::group_encodings_from_json(&doc).map_err(|e| bad(e.to_string()))?;
        nodes.push(crate::dataset::GroupNode { path: path.clone(), attributes, attribute_encodings });
    }
    Ok(nodes)
}

/// The URLs an object-store output made from `store` must not be nor contain: the store's, when it
/// is on an object store, and its sources' (all of them once [`Store::all_sources`] has run).
pub fn store_urls(store: &Store) -> Vec<String> {
    let mut urls = crate::store::url_sources(&store.sources());
    if let Some(url) = store.address().as_url() {
        urls.push(url.to_string());
    }
    urls
}

/// The local paths an output made from `store` must not replace or contain: the store and its
/// sources.
pub fn store_inputs(store: &Store) -> Vec<PathBuf> {
    let mut inputs = crate::store::local_sources(&store.sources());
    if let Some(path) = store.address().local_path() {
        inputs.push(path.to_path_buf());
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
