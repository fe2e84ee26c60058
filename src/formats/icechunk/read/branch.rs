//! Reading a repository back: the [`VirtualDataset`] a branch's snapshot holds, for `vzarr
//! read/info/verify`.
//!
//! Stage: store -> dataset. Input: a repository location and branch; output: the groups, arrays
//! (their `zarr.json` as stored), every chunk as a source reference or store-owned bytes, and the
//! summary (provenance, warnings) vzarr kept in the snapshot's properties. Virtual references are
//! resolved by vzarr's own reader afterwards, not through Icechunk, so no container needs
//! authorizing here; instead every source is checked now against the reference's checksum (a file
//! modified after the repository was written is refused, as Icechunk would) and fingerprinted (size,
//! modification time) for the reader's own checks.
//!
//! Store-owned chunks (inline or chunk objects of the repository) are copied into owned bytes: the
//! few rewritten chunks and small coordinates, counted in the budget `append` and `compact` give
//! (`read_branch` alone keeps them in memory). The chunk table is dense (24 bytes a chunk), and
//! never larger than the chunks the manifests list allow for (see [`MAX_SPARSE_FACTOR`]).

use std::collections::HashMap;

use futures::StreamExt;
use icechunk::format::manifest::{Checksum, ChunkPayload, SecondsSinceEpoch};
use icechunk::format::snapshot::NodeData;
use icechunk::format::{ByteRange, Path as IcPath};
use icechunk::repository::VersionInfo;
use icechunk::{Repository, Store};
use serde::Deserialize;

use super::super::IcechunkError;
use crate::dataset::{ChunkTable, GroupNode, OwnedBytesBudget, VirtualArray, VirtualDataset};
use crate::formats::SUMMARY_PROPERTY;
use crate::formats::{references_digest, storage, StoredBranch};
use crate::manifest::{ChunkEntry, SourceFile};
use crate::metadata::chunk_key;
use crate::metadata::{group_encodings_from_json, group_from_json, ArrayMetadata};
use crate::read::StoreInfo;
use crate::source::{Location, RemoteOptions};

use super::frames::{Files, FrameError};

/// A cause from Icechunk or object_store, kept as it came.
type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Why a branch's snapshot, nodes or chunks are refused as read, or its references checked
/// (converted into [`IcechunkError::Repository`] with what was being read).
#[derive(Debug, thiserror::Error)]
pub(crate) enum BranchError {
    /// Icechunk, the object store or a URL parser failed.
    #[error("{0}")]
    Icechunk(#[source] BoxError),
    /// A manifest's file does not match what the snapshot records of it.
    #[error(transparent)]
    Frames(#[from] FrameError),
    /// vzarr's summary property does not parse.
    #[error("its vzarr summary is damaged: {0}")]
    Summary(#[source] serde_json::Error),
    /// A reference past the end of its source.
    #[error(
        "array {array} chunk {coords:?}: bytes {offset}..{end} lie past the end of the {size}-byte source {location}"
    )]
    PastEnd {
        /// The array.
        array: String,
        /// The chunk's grid coordinates.
        coords: Vec<u64>,
        /// The reference's first byte.
        offset: u64,
        /// The reference's end.
        end: u64,
        /// The source's size.
        size: u64,
        /// The source.
        location: String,
    },
    /// An array the summary does not list.
    #[error("array {array} is not in the snapshot's summary: the repository is damaged")]
    NotInSummary {
        /// The array.
        array: String,
    },
    /// An array of the summary with no node.
    #[error("array {array} of the snapshot's summary has no node: the repository is damaged")]
    NoNode {
        /// The array.
        array: String,
    },
    /// Chunk counts that differ from the summary's.
    #[error("array {array}: the manifests give {got} but the snapshot's summary records {expected}: the repository is damaged")]
    Counts {
        /// The array.
        array: String,
        /// What the manifests give.
        got: String,
        /// What the summary records.
        expected: String,
    },
    /// References whose digest differs from the summary's.
    #[error(
        "array {array}: its chunk references differ from those the snapshot's summary records (a manifest or chunk \
         is damaged): the repository is damaged"
    )]
    Digest {
        /// The array.
        array: String,
    },
    /// A chunk outside the array's grid.
    #[error("chunk {coord:?} outside the grid {grid:?}")]
    OutsideGrid {
        /// The chunk's coordinates.
        coord: Vec<u32>,
        /// The grid's shape.
        grid: Vec<u64>,
    },
    /// A store-owned chunk that could not be read or held.
    #[error("{key}: {source}")]
    Owned {
        /// The chunk's key.
        key: String,
        /// Icechunk's or the owned bytes' error.
        source: BoxError,
    },
    /// A grid of more chunks than 64 bits count.
    #[error("the grid has too many chunks")]
    TooManyChunks,
    /// A grid far larger than its stored chunks.
    #[error("{chunks} chunks in the grid but only {stored} stored: too sparse to open")]
    TooSparse {
        /// Chunks in the grid.
        chunks: u64,
        /// Chunks stored.
        stored: usize,
    },
}

fn boxed(e: impl std::error::Error + Send + Sync + 'static) -> BranchError {
    BranchError::Icechunk(Box::new(e))
}

/// A grid may have at most this many times more chunks than the manifests list (plus 2^20):
/// the dense chunk table is never sized by a shape alone.
///
/// Needs feature `icechunk`.
pub(crate) const MAX_SPARSE_FACTOR: u64 = 64;

/// The sources met so far: location -> id, and the strictest checksum seen for each.
#[derive(Default)]
struct SourceIds {
    ids: HashMap<String, u32>,
    locations: Vec<String>,
    checksums: Vec<Option<u32>>,
}

impl SourceIds {
    fn id(&mut self, url: &str, checksum: Option<&Checksum>) -> u32 {
        let seconds = match checksum {
            Some(Checksum::LastModified(SecondsSinceEpoch(s))) => Some(*s),
            _ => None,
        };
        // Looked up before inserting: a reference's location is allocated only for a new source.
        let id = match self.ids.get(url) {
            Some(&id) => id,
            None => {
                let id = self.locations.len() as u32;
                self.ids.insert(url.to_string(), id);
                self.locations.push(url.to_string());
                self.checksums.push(None);
                id
            }
        };
        let slot = &mut self.checksums[id as usize];
        *slot = match (*slot, seconds) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        id
    }
}

/// The dataset on `branch` of the repository at `repo`.
///
/// # Errors
/// [`IcechunkError`] when the repository, the branch, a node or a chunk cannot be read, and
/// [`IcechunkError::Location`] for a source that is missing or was modified after the repository
/// was written.
///
/// Needs feature `icechunk`.
pub async fn read_icechunk(repo: &str, branch: &str, remote: &RemoteOptions) -> Result<VirtualDataset, IcechunkError> {
    let stored = read_branch(repo, branch, remote).await?;
    let mut dataset = stored.dataset;
    let mut files = Vec::with_capacity(dataset.sources.len());
    for (location, seconds) in stored.urls.iter().zip(&stored.checksums) {
        files.push(fingerprint(location, *seconds, remote).await?);
    }
    dataset.sources = table(files);
    check_references(&dataset).map_err(|e| IcechunkError::Repository {
        repo: repo.to_string(),
        what: "checking the references against their sources".into(),
        reason: e.to_string(),
    })?;
    Ok(dataset)
}

/// Refuses a reference that does not lie inside its source as fingerprinted now: a damaged
/// manifest, or a source truncated since the repository was written.
fn check_references(dataset: &VirtualDataset) -> Result<(), BranchError> {
    for array in &dataset.arrays {
        for (linear, entry) in array.chunks.iter().enumerate() {
            let ChunkEntry::Source { source, offset, length } = entry else { continue };
            let Some(file) = dataset.sources.get(source) else { continue };
            if offset.checked_add(length).is_none_or(|end| end > file.size) {
                let coords = array.metadata.chunk_grid.chunk_coords(linear as u64);
                return Err(BranchError::PastEnd {
                    array: array.path.clone(),
                    coords,
                    offset,
                    end: offset.saturating_add(length),
                    size: file.size,
                    location: file.location.to_string(),
                });
            }
        }
    }
    Ok(())
}

/// The dataset on `branch` of the repository at `repo`, sources as recorded (not fingerprinted).
///
/// # Errors
/// [`IcechunkError::NoBranch`] for a branch the repository lacks, else [`IcechunkError`] when the
/// repository, a node or a chunk cannot be read.
///
/// Needs feature `icechunk`.
pub async fn read_branch(repo: &str, branch: &str, remote: &RemoteOptions) -> Result<StoredBranch, IcechunkError> {
    read_branch_in(repo, branch, remote, &OwnedBytesBudget::unlimited()).await
}

/// [`read_branch`], the store-owned chunks counted in `budget` (past it they spill): what `append`
/// and `compact` read a branch with.
pub(crate) async fn read_branch_in(
    repo: &str,
    branch: &str,
    remote: &RemoteOptions,
    budget: &OwnedBytesBudget,
) -> Result<StoredBranch, IcechunkError> {
    guarded(repo, read_branch_unguarded(repo, branch, remote, budget)).await
}

/// `work` on the repository at `repo`, a panic in it (Icechunk panics on some damaged snapshots: an
/// unknown node type in the flatbuffer) becoming this repository's error.
pub(crate) async fn guarded<T>(
    repo: &str,
    work: impl std::future::Future<Output = Result<T, IcechunkError>>,
) -> Result<T, IcechunkError> {
    use futures::FutureExt;
    std::panic::AssertUnwindSafe(work).catch_unwind().await.unwrap_or_else(|panic| {
        let message = panic
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| panic.downcast_ref::<&str>().copied())
            .unwrap_or("a panic");
        Err(IcechunkError::Repository {
            repo: repo.to_string(),
            what: "reading the branch".into(),
            reason: format!("Icechunk failed on it ({message}): the repository is damaged"),
        })
    })
}

async fn read_branch_unguarded(
    repo: &str,
    branch: &str,
    remote: &RemoteOptions,
    budget: &OwnedBytesBudget,
) -> Result<StoredBranch, IcechunkError> {
    let (repository, snapshot) = open_branch(repo, branch, remote).await?;
    let version = VersionInfo::SnapshotId(snapshot.clone());
    let mut stored = read_version(&repository, &version, repo, budget).await?;
    stored.snapshot = snapshot.to_string();
    Ok(stored)
}

/// The repository at `repo` and the snapshot its `branch` points at.
///
/// # Errors
/// [`IcechunkError::NoBranch`] for a branch the repository lacks (naming those it has), else
/// [`IcechunkError::Repository`].
pub(crate) async fn open_branch(
    repo: &str,
    branch: &str,
    remote: &RemoteOptions,
) -> Result<(Repository, icechunk::format::SnapshotId), IcechunkError> {
    let failed =
        |what: &str, e: String| IcechunkError::Repository { repo: repo.to_string(), what: what.into(), reason: e };
    let storage = storage(repo, remote).await?;
    let files = Files::new(storage.as_ref()).await.map_err(|e| failed("opening", e.to_string()))?;
    files.check_repo_info().await.map_err(|e| failed("opening", e.to_string()))?;
    let repository = Repository::open(std::sync::Arc::clone(&storage))
        .config(read_config())
        .execute()
        .await
        .map_err(|e| failed("opening", e.to_string()))?;
    match repository.lookup_branch(branch).await {
        Ok(snapshot) => {
            files
                .check_snapshot(&snapshot.to_string())
                .await
                .map_err(|e| failed("opening the branch", e.to_string()))?;
            Ok((repository, snapshot))
        }
        Err(e) => {
            let branches = repository.list_branches().await.map_err(|_| failed("opening the branch", e.to_string()))?;
            if branches.contains(branch) {
                return Err(failed("opening the branch", e.to_string()));
            }
            let available: Vec<&str> = branches.iter().map(String::as_str).collect();
            let (repo, branch, available) = (repo.to_string(), branch.to_string(), available.join(", "));
            Err(IcechunkError::NoBranch { repo, branch, available })
        }
    }
}

/// Chunk references Icechunk's manifest cache holds when a repository is read: 2^20, 16 of the
/// manifests vzarr writes. Icechunk's default (15 million) let 1,000 reads at random places of a
/// repository of 10^8 references hold 0.8 GB of manifests; the lazy reader keeps the blocks it
/// decoded from them itself (`formats/icechunk/read/chunks`).
const READ_CACHE_CHUNK_REFS: u64 = 1 << 20;

/// The config a repository is opened with for reading: [`READ_CACHE_CHUNK_REFS`], layered on the
/// persisted config, never saved.
fn read_config() -> icechunk::RepositoryConfig {
    let caching = icechunk::config::CachingConfig { num_chunk_refs: Some(READ_CACHE_CHUNK_REFS), ..Default::default() };
    icechunk::RepositoryConfig { caching: Some(caching), ..Default::default() }
}

/// Replaces the sources at `locations` by their fingerprints now (size, modification time), each
/// checked against the references' checksum: the files `append` reads again.
///
/// # Errors
/// [`IcechunkError::Location`] for a source missing, unknown to the branch, or modified after the
/// repository was written.
///
/// Needs feature `icechunk`.
pub(crate) async fn refresh_sources(
    stored: &mut StoredBranch,
    locations: &[String],
    remote: &RemoteOptions,
) -> Result<(), IcechunkError> {
    let mut files: Vec<SourceFile> = stored.dataset.sources.iter().cloned().collect();
    for location in locations {
        let Some(id) = files.iter().position(|f| f.location == *location) else {
            let reason = "not a source of the branch".to_string();
            return Err(IcechunkError::Location { location: location.clone(), reason });
        };
        files[id] = fingerprint(&stored.urls[id], stored.checksums[id], remote).await?;
    }
    stored.dataset.sources = table(files);
    Ok(())
}

async fn read_version(
    repository: &Repository,
    version: &VersionInfo,
    repo: &str,
    budget: &OwnedBytesBudget,
) -> Result<StoredBranch, IcechunkError> {
    // Errors name the snapshot file, what was being read from it, and the cause.
    let snapshot = match version {
        VersionInfo::SnapshotId(id) => format!("snapshot {id} (snapshots/{id})"),
        _ => "the snapshot".to_string(),
    };
    let failed = |what: &str, e: String| IcechunkError::Repository {
        repo: repo.to_string(),
        what: format!("{what} {snapshot}"),
        reason: damaged(&e),
    };
    let summary = summary(repository, version).await.map_err(|e| failed("reading", e.to_string()))?;
    check_manifest_files(repository, version).await.map_err(|e| failed("reading", e.to_string()))?;
    let session = repository.readonly_session(version).await.map_err(|e| failed("opening", e.to_string()))?;
    let nodes: Vec<_> = session
        .list_nodes(&IcPath::root())
        .await
        .map_err(|e| failed("listing the nodes of", e.to_string()))?
        .collect::<Result<_, _>>()
        .map_err(|e| failed("listing the nodes of", e.to_string()))?;
    let session = std::sync::Arc::new(tokio::sync::RwLock::new(session));
    let store = Store::from_session(session.clone()).await;
    let mut dataset = VirtualDataset::default();
    let mut sources = SourceIds::default();
    // The summary's source list numbers the sources as the scan did, also those no reference names
    // any more (their chunks compacted into store-owned ones) but the provenance still does.
    for url in summary.iter().flat_map(|info| &info.source_urls) {
        sources.id(url, None);
    }
    for node in nodes {
        let (path, parsed) = parse_node(repo, &snapshot, &node)?;
        let bad = |reason: String| node_error(repo, &path, reason);
        match parsed {
            ParsedNode::Group(attributes, attribute_encodings) => {
                dataset.groups.push(GroupNode { path, attributes, attribute_encodings });
            }
            ParsedNode::Array(metadata) => {
                let chunks = {
                    let session = session.read().await;
                    chunk_table(&session, &store, &node.path, &path, &metadata, &mut sources, budget).await.map_err(
                        |e| bad(format!("reading its chunks (manifests of {snapshot}): {}", damaged(&e.to_string()))),
                    )?
                };
                dataset.arrays.push(VirtualArray {
                    path,
                    metadata: *metadata,
                    chunks,
                    rewritten_chunks: 0,
                    digest: None,
                    tails: Vec::new(),
                });
            }
        }
    }
    dataset.groups.sort_by(|a, b| a.path.cmp(&b.path));
    let recorded = sources.locations.iter().zip(&sources.checksums).map(|(url, seconds)| recorded(url, *seconds));
    dataset.sources = table(recorded.collect());
    if let Some(info) = summary {
        check_summary(&dataset, &info, &sources.locations)
            .map_err(|e| failed("checking the manifests against", e.to_string()))?;
        apply_summary(&mut dataset, info);
    }
    Ok(StoredBranch { dataset, snapshot: String::new(), urls: sources.locations, checksums: sources.checksums })
}

/// A snapshot node's `zarr.json`, parsed.
pub(crate) enum ParsedNode {
    /// A group: its attributes and those written as base64 (the `vzarr` note).
    Group(crate::metadata::Attributes, std::collections::BTreeMap<String, String>),
    /// An array and its metadata (boxed: far larger than a group's attributes).
    Array(Box<ArrayMetadata>),
}

/// `node`'s path (no leading slash; `""` for the root) and its `zarr.json` parsed, as a group or an
/// array as Icechunk records it. A document that does not parse is the node's error, naming
/// `snapshot` (the snapshot file, for messages).
pub(crate) fn parse_node(
    repo: &str,
    snapshot: &str,
    node: &icechunk::format::snapshot::NodeSnapshot,
) -> Result<(String, ParsedNode), IcechunkError> {
    let path = node.path.to_string().trim_start_matches('/').to_string();
    let damaged = |e: String| node_error(repo, &path, format!("its zarr.json in {snapshot} is damaged: {e}"));
    // As the writers write it: non-finite attribute values as bare `NaN`/`Infinity`.
    let doc = crate::metadata::from_text(&node.user_data).map_err(|e| damaged(e.to_string()))?;
    let parsed = match node.node_data {
        NodeData::Group => ParsedNode::Group(
            group_from_json(&doc).map_err(|e| damaged(e.to_string()))?,
            group_encodings_from_json(&doc).map_err(|e| damaged(e.to_string()))?,
        ),
        NodeData::Array { .. } => {
            ParsedNode::Array(Box::new(ArrayMetadata::from_json(&doc).map_err(|e| damaged(e.to_string()))?))
        }
    };
    Ok((path, parsed))
}

/// Node `path`'s error (`/` naming the root).
pub(crate) fn node_error(repo: &str, path: &str, reason: String) -> IcechunkError {
    let node = if path.is_empty() { "/".to_string() } else { path.to_string() };
    IcechunkError::Node { repo: repo.to_string(), node, reason }
}

fn table(files: Vec<SourceFile>) -> crate::manifest::SourceTable {
    let mut table = crate::manifest::SourceTable::new();
    for file in files {
        table.push(file);
    }
    table
}

/// A source as the references record it: its location (a local path for `file://` URLs, as a scan
/// names it), no size, the checksum's second as modification time.
pub(crate) fn recorded(url: &str, seconds: Option<u32>) -> SourceFile {
    let path = url.starts_with("file://").then(|| url::Url::parse(url).ok()?.to_file_path().ok()).flatten();
    let location = path.map_or_else(|| url.to_string(), |p| crate::source::location_for_path(&p));
    SourceFile::new(location, 0, seconds.map(|s| i64::from(s) * 1_000_000_000))
}

/// The vzarr summary of the branch's snapshot, when vzarr wrote it: read from the repository's
/// list of snapshots (not from the snapshot file itself, whose damage it helps detect; Icechunk's
/// decoder of a damaged snapshot's properties can allocate without bound).
pub(crate) async fn summary(repository: &Repository, version: &VersionInfo) -> Result<Option<StoreInfo>, BranchError> {
    let ancestry = repository.ancestry(version).await.map_err(boxed)?;
    let mut ancestry = std::pin::pin!(ancestry);
    let Some(first) = ancestry.next().await else { return Ok(None) };
    let info = first.map_err(boxed)?;
    info.metadata.get(SUMMARY_PROPERTY).map(parse_summary).transpose()
}

/// vzarr's summary from its snapshot property: one JSON string in the repositories vzarr writes now,
/// a tree of JSON values in older ones.
fn parse_summary(value: &serde_json::Value) -> Result<StoreInfo, BranchError> {
    let summary = match value {
        serde_json::Value::String(text) => serde_json::from_str(text),
        tree => StoreInfo::deserialize(tree),
    };
    summary.map_err(BranchError::Summary)
}

/// Icechunk's terse messages for a file that does not decode, said in words a user can act on.
pub(crate) fn damaged(reason: &str) -> String {
    let reason = super::super::one_line(reason);
    match reason.as_str() {
        "Invalid Icechunk metadata file" | "I/O error" | "invalid magic numbers in file" => {
            format!("the file does not decode ({reason}): the repository is damaged")
        }
        "object not found" => "a file it lists is missing (object not found): the repository is damaged".into(),
        _ => reason,
    }
}

/// Refuses a snapshot whose manifests do not match their files (the size it records against the
/// object's, each frame's declared size: `frames`), before Icechunk sizes requests and buffers by
/// those numbers.
pub(crate) async fn check_manifest_files(repository: &Repository, version: &VersionInfo) -> Result<(), BranchError> {
    let VersionInfo::SnapshotId(id) = version else { return Ok(()) };
    let snapshot = repository.asset_manager().fetch_snapshot(id).await.map_err(boxed)?;
    let mut manifests = Vec::new();
    for file in snapshot.manifest_files() {
        let file = file.map_err(boxed)?;
        manifests.push((file.id.to_string(), file.size_bytes));
    }
    Ok(Files::of(repository.asset_manager()).check_manifests(&manifests).await?)
}

/// Checks the arrays read from the manifests against the summary vzarr recorded with the snapshot:
/// the same arrays, each with the same grid size, the same numbers of referenced, store-owned and
/// missing chunks, and (where recorded) the same digest of every reference and stored chunk
/// (`urls`: each source id's virtual chunk URL). A snapshot or manifest damaged so that chunks fall
/// out of a manifest's extents or out of the node list would otherwise read as fill values, and a
/// damaged reference as other bytes.
fn check_summary(dataset: &VirtualDataset, info: &StoreInfo, urls: &[String]) -> Result<(), BranchError> {
    for array in &dataset.arrays {
        if !info.arrays.iter().any(|a| a.path == array.path) {
            return Err(BranchError::NotInSummary { array: array.path.clone() });
        }
    }
    for recorded in &info.arrays {
        let Some(array) = dataset.array(&recorded.path) else {
            return Err(BranchError::NoNode { array: recorded.path.clone() });
        };
        let (found, want) = (array.chunks.stats(), &recorded.stats);
        let counts = |chunks: u64, s: &crate::dataset::ChunkStats| (chunks, s.referenced, s.owned, s.missing);
        let (got, expected) = (counts(array.chunks.len() as u64, &found), counts(recorded.chunks, want));
        if got != expected || found.referenced_bytes != want.referenced_bytes {
            let describe = |(n, r, o, m): (u64, u64, u64, u64)| {
                format!("{n} chunks ({r} referenced, {o} store-owned, {m} missing)")
            };
            let (got, expected) = (describe(got), describe(expected));
            return Err(BranchError::Counts { array: array.path.clone(), got, expected });
        }
        if let Some(recorded_digest) = &recorded.references_digest {
            let digest = references_digest(array, |id| urls.get(id as usize).map(String::as_str));
            if digest.as_ref() != Some(recorded_digest) {
                return Err(BranchError::Digest { array: array.path.clone() });
            }
        }
    }
    Ok(())
}

/// Keeps the summary's provenance and warnings, and the arrays' order and rewrite counts.
fn apply_summary(dataset: &mut VirtualDataset, info: StoreInfo) {
    let order: HashMap<&str, usize> = info.arrays.iter().enumerate().map(|(i, a)| (a.path.as_str(), i)).collect();
    dataset.arrays.sort_by_key(|a| order.get(a.path.as_str()).copied().unwrap_or(usize::MAX));
    for array in &mut dataset.arrays {
        if let Some(&i) = order.get(array.path.as_str()) {
            array.rewritten_chunks = info.arrays[i].rewritten_chunks;
        }
    }
    dataset.provenance = info.provenance;
    dataset.warnings = info.warnings;
}

async fn chunk_table(
    session: &icechunk::session::Session,
    store: &Store,
    node: &IcPath,
    path: &str,
    metadata: &ArrayMetadata,
    sources: &mut SourceIds,
    budget: &OwnedBytesBudget,
) -> Result<ChunkTable, BranchError> {
    let grid = &metadata.chunk_grid;
    let grid_shape = grid.grid_shape();
    let mut listed: Vec<(u64, ChunkEntry)> = Vec::new();
    let mut owned = crate::dataset::OwnedBytes::with_budget(budget);
    let mut chunks = std::pin::pin!(session.array_chunk_iterator(node).await);
    while let Some(info) = chunks.next().await {
        let info = info.map_err(boxed)?;
        let coord = &info.coord.0;
        if coord.len() != grid_shape.len() || coord.iter().zip(&grid_shape).any(|(&c, &n)| u64::from(c) >= n) {
            return Err(BranchError::OutsideGrid { coord: coord.clone(), grid: grid_shape.clone() });
        }
        // Row-major, as `ChunkGrid::linear_index`, without a vector per reference.
        let linear = coord.iter().zip(&grid_shape).fold(0u64, |acc, (&c, &n)| acc * n + u64::from(c));
        let entry = match info.payload {
            ChunkPayload::Virtual(r) => {
                let source = sources.id(r.location.url(), r.checksum.as_ref());
                ChunkEntry::Source { source, offset: r.offset, length: r.length }
            }
            _ => {
                let coords: Vec<u64> = coord.iter().map(|&c| u64::from(c)).collect();
                let key = chunk_key(path, &coords);
                let owned_error = |source: BoxError| BranchError::Owned { key: key.clone(), source };
                let bytes = store.get(&key, &ByteRange::ALL).await.map_err(|e| owned_error(Box::new(e)))?;
                let offset = owned.push(&bytes).map_err(|e| owned_error(Box::new(e)))?;
                ChunkEntry::Owned { offset, length: bytes.len() as u64 }
            }
        };
        listed.push((linear, entry));
    }
    let n = grid.checked_num_chunks().ok_or(BranchError::TooManyChunks)?;
    let most = (listed.len() as u64).saturating_mul(MAX_SPARSE_FACTOR).saturating_add(1 << 20);
    if n > most {
        return Err(BranchError::TooSparse { chunks: n, stored: listed.len() });
    }
    let mut table = ChunkTable::missing(n as usize);
    table.owned = owned;
    for (linear, entry) in listed {
        table.set(linear as usize, entry);
    }
    Ok(table)
}

/// The source at virtual chunk URL `url`, fingerprinted now; refused when modified after
/// `checksum` (seconds since the epoch).
pub(crate) async fn fingerprint(
    url: &str,
    checksum: Option<u32>,
    remote: &RemoteOptions,
) -> Result<SourceFile, IcechunkError> {
    let bad = |reason: String| IcechunkError::Location { location: url.to_string(), reason };
    let file = if url.starts_with("file://") {
        let path = url::Url::parse(url)
            .ok()
            .and_then(|u| u.to_file_path().ok())
            .ok_or_else(|| bad("not a local file path".into()))?;
        crate::source::fingerprint(&path).map_err(|e| bad(e.to_string()))?
    } else if Location::parse(url).is_url() {
        remote_fingerprint(url, remote).await.map_err(|e| bad(e.to_string()))?
    } else {
        return Err(bad("not a URL".into()));
    };
    if let (Some(seconds), Some(mtime)) = (checksum, file.mtime_ns) {
        if mtime > i64::from(seconds) * 1_000_000_000 {
            return Err(bad("modified after the repository was written: scan it again".into()));
        }
    }
    Ok(file)
}

async fn remote_fingerprint(url: &str, remote: &RemoteOptions) -> Result<SourceFile, BranchError> {
    use object_store::ObjectStoreExt;
    let parsed = url::Url::parse(url).map_err(boxed)?;
    let (store, path) = crate::source::store_for_url(&parsed, remote).map_err(boxed)?;
    let meta = store.head(&path).await.map_err(boxed)?;
    Ok(SourceFile::new(url, meta.size, meta.last_modified.timestamp_nanos_opt()))
}

#[cfg(test)]
mod tests {
    use super::parse_summary;
    use crate::dataset::Provenance;
    use crate::read::StoreInfo;

    fn info() -> StoreInfo {
        StoreInfo {
            format: "vzarr".into(),
            format_version: 2,
            generator: "test".into(),
            sources: 2,
            groups: vec![String::new()],
            arrays: Vec::new(),
            provenance: Provenance { concat_dim: Some("time".into()), ..Provenance::default() },
            warnings: Vec::new(),
            source_containers: vec!["/archive/".into()],
            source_urls: Vec::new(),
        }
    }

    #[test]
    fn summaries_read_as_a_json_string_and_as_the_older_tree_of_values() {
        let text = serde_json::Value::String(serde_json::to_string(&info()).unwrap());
        assert_eq!(parse_summary(&text).unwrap(), info());
        let tree = serde_json::to_value(info()).unwrap();
        assert_eq!(parse_summary(&tree).unwrap(), info());
        let damaged = serde_json::Value::String("{\"format\":".into());
        assert!(parse_summary(&damaged).unwrap_err().to_string().starts_with("its vzarr summary is damaged"));
    }
}
