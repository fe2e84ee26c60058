//! Icechunk repositories opened through [`Store::open_with`](super::Store::open_with), read lazily: the
//! Icechunk [`StoreBackend`].
//!
//! Opening reads the branch's snapshot only: its nodes (every group's and array's `zarr.json`, each
//! array's list of manifests and their extents) and the summary vzarr recorded with it. The summary
//! becomes the store's [`StoreInfo`] after its arrays and grid sizes are checked against the nodes.
//! Chunk references are read when a selection needs them, a block of an array at a time
//! ([`ArrayChunks`]), each block checked against the digest the summary records; sources are
//! numbered as references name them, and each is checked against its references' checksum (not
//! modified after the repository was written) when first read. Reading one chunk of a repository
//! of 10^7 references fetches the snapshot and one manifest.
//!
//! A repository another tool wrote has no summary: its [`StoreInfo`] counts no chunks (zeros, as
//! `info` shows them), and blocks are checked only structurally.

mod branch;
mod chunks;
mod flex;
mod frames;

use std::collections::HashMap;
use std::sync::Arc;

use icechunk::format::snapshot::NodeData;
use icechunk::repository::VersionInfo;

pub use branch::{read_branch, read_icechunk};
pub(crate) use branch::{read_branch_in, refresh_sources};
pub(crate) use chunks::ArrayChunks;
use chunks::{ArrayNode, ManifestSpan};

use super::{one_line, IcechunkError};
use crate::manifest::{ChunkEntry, SourceFile};
use crate::metadata::{noted_group_json, to_text, ArrayMetadata};
use crate::read::sources::SourceRegistry;
use crate::read::StoreFormat;
use crate::read::StoreInner;
use crate::read::{ArrayInfo, StoreInfo};
use crate::read::{ChunkIndex, Opened, StoreBackend};
use crate::read::{OpenOptions, ReadError};
use branch::{damaged, ParsedNode};

/// What a store opened on a repository's branch serves beside its [`StoreInfo`].
#[derive(Debug)]
pub(crate) struct RepositoryView {
    /// Per node path (`""` for the root): its `zarr.json` as a native store writes it.
    nodes: HashMap<String, bytes::Bytes>,
    /// Per array path: its metadata and chunk references.
    arrays: HashMap<String, (ArrayMetadata, Arc<ArrayChunks>)>,
}

/// Whether `location` holds an Icechunk repository: a local directory that looks like one does; a
/// URL may (only opening it tells), and is asked first when its name ends in `.icechunk`.
pub(crate) fn detect(location: &crate::source::Location) -> crate::formats::Detect {
    use crate::formats::Detect;
    match location {
        crate::source::Location::Local(path) if super::looks_like_repository(path) => Detect::Yes,
        crate::source::Location::Local(_) => Detect::No,
        crate::source::Location::Url(url) if url.trim_end_matches('/').ends_with(".icechunk") => Detect::Named,
        crate::source::Location::Url(_) => Detect::Probe,
    }
}

/// `branch` of the repository at `address` (a path or URL), named `name` in messages.
///
/// # Errors
/// [`ReadError::Repository`] when the repository, the branch or its snapshot cannot be read.
pub(crate) async fn open(address: &str, name: &str, branch: &str, options: &OpenOptions) -> Result<Opened, ReadError> {
    let opened = branch::guarded(address, open_view(address, branch, &options.remote)).await;
    let (info, view) = opened.map_err(|e| repository_error(name, &e.to_string().replace(address, name)))?;
    // vzarr's summary lists the sources by id (its provenance's ids): the registry starts with them.
    let sources = SourceRegistry::seeded(&info.source_urls, |url| branch::recorded(url, None));
    Ok(Opened { info, sources, backend: Arc::new(view) })
}

#[async_trait::async_trait]
impl StoreBackend for RepositoryView {
    fn kind(&self) -> StoreFormat {
        StoreFormat::Icechunk
    }

    async fn node_metadata(&self, store: &StoreInner, path: &str) -> Result<bytes::Bytes, ReadError> {
        self.nodes.get(path).cloned().ok_or_else(|| crate::read::no_node(store, path, "the repository's snapshot"))
    }

    async fn array(&self, store: &StoreInner, path: &str) -> Result<(ArrayMetadata, Arc<dyn ChunkIndex>), ReadError> {
        let Some((metadata, chunks)) = self.arrays.get(path) else {
            let reason = "the snapshot's summary lists it but the snapshot has no such array";
            return Err(ReadError::Store {
                location: store.location.clone(),
                what: path.to_string(),
                source: reason.into(),
            });
        };
        Ok((metadata.clone(), chunks.clone()))
    }

    /// Checks source `id` against its references' checksum: refused when modified after the
    /// repository was written. Its fingerprint now replaces the record, so later reads carry it as
    /// their precondition.
    async fn check_source(
        &self,
        store: &StoreInner,
        id: u32,
        file: SourceFile,
        _location: &crate::source::ObjectLocation,
    ) -> Result<(), ReadError> {
        let Some((url, seconds)) = store.sources.url(id) else { return Ok(()) };
        let now = branch::fingerprint(&url, seconds, &store.remote)
            .await
            .map_err(|e| repository_error(&store.location, &e.to_string()))?;
        store.sources.replace(id, SourceFile { location: file.location, ..now });
        Ok(())
    }
}

#[async_trait::async_trait]
impl ChunkIndex for ArrayChunks {
    async fn entries(
        &self,
        store: &StoreInner,
        _array: &str,
        range: std::ops::Range<u64>,
    ) -> Result<Vec<ChunkEntry>, ReadError> {
        ArrayChunks::entries(self, range, &store.sources).await.map_err(|e| repository_cause(self.repo(), e))
    }

    async fn entries_at(&self, store: &StoreInner, _array: &str, linear: &[u64]) -> Result<Vec<ChunkEntry>, ReadError> {
        ArrayChunks::entries_at(self, linear, &store.sources).await.map_err(|e| repository_cause(self.repo(), e))
    }

    async fn owned_chunks(
        &self,
        _store: &StoreInner,
        _array: &str,
        ranges: &[std::ops::Range<u64>],
        _concurrent: usize,
    ) -> Result<Vec<bytes::Bytes>, ReadError> {
        let mut out = Vec::with_capacity(ranges.len());
        for range in ranges {
            let bytes = self.owned_bytes(range.start).await.map_err(|e| repository_cause(self.repo(), e))?;
            if bytes.len() as u64 != range.end - range.start {
                let reason = format!(
                    "store-owned chunk {} holds {} bytes, its entry {}",
                    range.start,
                    bytes.len(),
                    range.end - range.start
                );
                return Err(repository_error(self.repo(), &reason));
            }
            out.push(bytes);
        }
        Ok(out)
    }
}

/// A repository's error in one line, its location said once.
/// [`repository_error`] of `cause`, kept as the error's source when its text is already what
/// [`repository_error`] would make of it (one line, not prefixed by the location).
fn repository_cause(location: &str, cause: impl std::error::Error + Send + Sync + 'static) -> ReadError {
    let text = cause.to_string();
    if one_line(&text) == text && !text.starts_with(&format!("{location}: ")) {
        ReadError::Repository { location: location.to_string(), source: Box::new(cause) }
    } else {
        repository_error(location, &text)
    }
}

pub(crate) fn repository_error(location: &str, text: &str) -> ReadError {
    let text = one_line(text);
    let text = text.strip_prefix(&format!("{location}: ")).map_or(text.clone(), str::to_string);
    ReadError::Repository { location: location.to_string(), source: text.into() }
}

async fn open_view(
    repo: &str,
    branch: &str,
    remote: &crate::source::RemoteOptions,
) -> Result<(StoreInfo, RepositoryView), IcechunkError> {
    let (repository, id) = branch::open_branch(repo, branch, remote).await?;
    let snapshot_name = format!("snapshot {id} (snapshots/{id})");
    let failed = |what: &str, e: String| IcechunkError::Repository {
        repo: repo.to_string(),
        what: format!("{what} {snapshot_name}"),
        reason: damaged(&e),
    };
    let version = VersionInfo::SnapshotId(id.clone());
    let assets = Arc::clone(repository.asset_manager());
    let snapshot = assets.fetch_snapshot(&id).await.map_err(|e| failed("reading", e.to_string()))?;
    let summary = branch::summary(&repository, &version).await.map_err(|e| failed("reading", e.to_string()))?;
    let sizes: HashMap<_, u64> = snapshot
        .manifest_files()
        .map(|file| file.map(|f| (f.id, f.size_bytes)))
        .collect::<Result<_, _>>()
        .map_err(|e| failed("reading", e.to_string()))?;
    let mut view = RepositoryView { nodes: HashMap::new(), arrays: HashMap::new() };
    let mut groups = Vec::new();
    let mut arrays = Vec::new();
    for node in snapshot.iter() {
        let node = node.map_err(|e| failed("listing the nodes of", e.to_string()))?;
        let (path, parsed) = branch::parse_node(repo, &snapshot_name, &node)?;
        let bad = |reason: String| branch::node_error(repo, &path, reason);
        match parsed {
            ParsedNode::Group(attributes, encodings) => {
                view.nodes
                    .insert(path.clone(), to_text(&noted_group_json(&attributes, &encodings)).into_bytes().into());
                groups.push(path);
            }
            ParsedNode::Array(metadata) => {
                // `parse_node` parses an array node's document only.
                let NodeData::Array { shape, manifests, .. } = node.node_data else { continue };
                let grid_shape = metadata.chunk_grid.grid_shape();
                let icechunk_shape: Vec<u64> = shape.num_chunks().map(u64::from).collect();
                if grid_shape != icechunk_shape {
                    return Err(bad(format!(
                        "its zarr.json gives a grid of {grid_shape:?} chunks, the snapshot {icechunk_shape:?}: the \
                         repository is damaged"
                    )));
                }
                let recorded = summary.as_ref().and_then(|s| s.arrays.iter().find(|a| a.path == path));
                let digests = recorded.and_then(|a| a.block_digests.clone()).map(|d| (d.chunks, d.digests));
                let manifests = manifests
                    .into_iter()
                    .map(|m| ManifestSpan {
                        size: sizes.get(&m.object_id).copied().unwrap_or(0),
                        id: m.object_id,
                        extents: m.extents,
                    })
                    .collect();
                let array = ArrayNode { path: path.clone(), node: node.id, manifests, grid_shape, digests };
                let chunks = ArrayChunks::new(repo, array, Arc::clone(&assets)).map_err(|e| bad(e.to_string()))?;
                view.nodes.insert(path.clone(), metadata.to_text().into_bytes().into());
                arrays.push(ArrayInfo::of_grid(&path, metadata.chunk_grid.num_chunks()));
                view.arrays.insert(path, (*metadata, Arc::new(chunks)));
            }
        }
    }
    let info = match summary {
        Some(summary) => {
            check_summary(&summary, &arrays)
                .map_err(|e| failed("checking the nodes against the summary of", e.to_string()))?;
            summary
        }
        None => {
            groups.sort();
            foreign_info(groups, arrays)
        }
    };
    Ok((info, view))
}

/// Why a snapshot's nodes do not match its summary ([`check_summary`]).
#[derive(Debug, thiserror::Error)]
enum SummaryError {
    /// An array the summary does not list.
    #[error("array {array} is not in the snapshot's summary: the repository is damaged")]
    NotInSummary {
        /// The array.
        array: String,
    },
    /// An array whose grid size differs from the summary's.
    #[error("array {array} has {chunks} chunks in its zarr.json but {recorded} in the snapshot's summary: the repository is damaged")]
    Chunks {
        /// The array.
        array: String,
        /// Its chunks by its zarr.json.
        chunks: u64,
        /// Its chunks by the summary.
        recorded: u64,
    },
    /// An array of the summary with no node.
    #[error("array {array} of the snapshot's summary has no node: the repository is damaged")]
    NoNode {
        /// The array.
        array: String,
    },
}

/// Checks that the snapshot's arrays are those of its summary, each with the grid size recorded.
fn check_summary(summary: &StoreInfo, arrays: &[ArrayInfo]) -> Result<(), SummaryError> {
    for array in arrays {
        let Some(recorded) = summary.arrays.iter().find(|a| a.path == array.path) else {
            return Err(SummaryError::NotInSummary { array: array.path.clone() });
        };
        if recorded.chunks != array.chunks {
            let (chunks, recorded) = (array.chunks, recorded.chunks);
            return Err(SummaryError::Chunks { array: array.path.clone(), chunks, recorded });
        }
    }
    if let Some(missing) = summary.arrays.iter().find(|a| !arrays.iter().any(|b| b.path == a.path)) {
        return Err(SummaryError::NoNode { array: missing.path.clone() });
    }
    Ok(())
}

/// The summary of a repository another tool wrote: its nodes, chunk counts unknown (zero).
fn foreign_info(groups: Vec<String>, arrays: Vec<ArrayInfo>) -> StoreInfo {
    StoreInfo {
        format: "icechunk".into(),
        format_version: crate::read::STORE_FORMAT_VERSION,
        generator: String::new(),
        sources: 0,
        groups,
        arrays,
        provenance: Default::default(),
        warnings: Vec::new(),
        source_containers: Vec::new(),
        source_urls: Vec::new(),
    }
}
