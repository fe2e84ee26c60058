//! One new snapshot holding a whole dataset, written below Icechunk's session: nodes through a
//! session, chunk references as manifests built by vzarr, then the snapshot, its transaction log
//! and the branch update, with the public building blocks Icechunk offers library writers.
//!
//! Stage: plan -> store. Input: a dataset, a branch and the snapshot it points at (the base);
//! output: a new snapshot whose parent is the base, the branch moved to it. The steps:
//! 1. a writable session on the branch replaces the content with the dataset's groups and arrays
//!    (`zarr.json` only) and stores the store-owned chunks; it is never committed, only read: its
//!    nodes (ids, shapes, metadata) and the payloads Icechunk gave the owned chunks;
//! 2. per [`Piece`] a manifest is built from the chunk table ([`manifests::build`]) and compressed
//!    (`object`), in parallel on rayon, and stored; memory holds one manifest per thread at a
//!    time. Meanwhile the transaction log is written: the base's nodes deleted, the new ones added
//!    and every chunk of every array updated, as Icechunk's own commit of the same change lists,
//!    compressed straight into its file in a local repository (memory holds a bit per chunk; in
//!    memory it would be 4 bytes a chunk, 0.4 GB at 10^8) and stored from memory elsewhere;
//! 3. the snapshot lists every node with its manifests;
//! 4. the repository info gains the snapshot and the branch moves to it, if the branch still
//!    points at the base (compare-and-swap, retried by Icechunk on contention); otherwise nothing
//!    is on any branch and the call fails.
//!
//! Objects written before step 4 are unreferenced until it succeeds: an interrupted or failed
//! write leaves the branch at the base (Icechunk's garbage collection removes the leftovers).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use bytes::Bytes;
use icechunk::format::manifest::{ChunkPayload, ManifestRef};
use icechunk::format::repo_info::UpdateType;
use icechunk::format::snapshot::{
    ManifestFileInfo, NodeData, NodeSnapshot, Snapshot, SnapshotInfo, SnapshotProperties,
};
use icechunk::format::{ManifestId, NodeId, Path as IcPath, SnapshotId};
use icechunk::repository::{RepositoryError, RepositoryErrorKind};
use icechunk::session::Session;
use icechunk::{Repository, Store};
use rayon::prelude::*;
use tokio::sync::RwLock;

use super::location::local_path;
use super::manifests::{self, Piece};
use super::nodes::{indices, owned_bytes, write_nodes, Sources};
use super::object::{self, Kind};
use super::transaction_log;
use super::IcechunkError;
use crate::dataset::{VirtualArray, VirtualDataset};
use crate::manifest::ChunkEntry;
use crate::metadata::chunk_key;

/// What the new snapshot is made of.
pub(super) struct Commit<'a> {
    pub(super) dataset: &'a VirtualDataset,
    pub(super) sources: &'a Sources,
    pub(super) pieces: &'a [Piece],
    pub(super) message: &'a str,
    pub(super) properties: SnapshotProperties,
}

/// Writes `commit` as a new snapshot on `branch`, whose tip must still be `base` when the branch
/// moves; returns the snapshot's id and the number of manifests written.
pub(super) async fn write_snapshot(
    repository: &Repository,
    branch: &str,
    base: &SnapshotId,
    commit: Commit<'_>,
    repo: &str,
) -> Result<(SnapshotId, u64), IcechunkError> {
    let failed = |what: &str| {
        let (repo, what) = (repo.to_string(), what.to_string());
        move |e: String| IcechunkError::Repository { repo, what, reason: e }
    };
    let asset_manager = Arc::clone(repository.asset_manager());
    if asset_manager.spec_version() < icechunk::format::format_constants::SpecVersionBin::V2 {
        let reason = "the repository is in Icechunk format 1; vzarr writes format 2 (migrate the repository with Icechunk first)";
        return Err(failed("writing")(reason.into()));
    }
    let session = repository.writable_session(branch).await.map_err(|e| failed("opening a session")(e.to_string()))?;
    if session.snapshot_id() != base {
        return Err(failed("opening a session")("another commit moved the branch; nothing was written".into()));
    }
    for (location, file) in commit.sources.urls.iter().zip(commit.dataset.sources.iter()) {
        session.validate_virtual_chunk_location(location).map_err(|e| IcechunkError::Location {
            location: file.location.clone(),
            reason: format!("outside every virtual chunk container of the repository: {e}"),
        })?;
    }
    let (nodes, owned) = stage_nodes(session, commit.dataset, repo).await?;
    let ids = array_ids(commit.dataset, &nodes, repo)?;

    let base_snapshot =
        asset_manager.fetch_snapshot(base).await.map_err(|e| failed("reading the base snapshot")(e.to_string()))?;
    let id = SnapshotId::random();
    let (spec, level) = (asset_manager.spec_version(), i32::from(repository.config().compression().level()));

    // The transaction log is built and compressed on a thread of its own while the manifests are:
    // into its file in a local repository, else in memory, then stored.
    let plan = transaction_log::Plan::new(&id, &base_snapshot, &nodes, commit.dataset, &ids)
        .map_err(failed("building the transaction log"))?;
    let local = local_path(repo).map(|p| std::path::absolute(&p).unwrap_or(p));
    let log_id = id.clone();
    let log = tokio::task::spawn_blocking(move || match local {
        Some(root) => {
            object::write_local_transaction_log(&root, &log_id, |out| plan.file_into(out, spec, level)).map(|_| None)
        }
        None => plan.file(spec, level).map(Some),
    });

    let (manifest_files, manifest_refs) = write_manifests(repository, &commit, &ids, &owned, repo).await?;
    let log = log.await.map_err(|e| e.to_string()).and_then(|log| log.map_err(|e| e.to_string()));
    if let Some(log) = log.map_err(failed("writing the transaction log"))? {
        object::put_transaction_log(repository, &id, log)
            .await
            .map_err(|e| failed("writing the transaction log")(e.to_string()))?;
    }
    let manifests = manifest_files.len() as u64;

    let nodes = with_manifests(nodes, manifest_refs);
    let snapshot = Snapshot::from_iter(
        Some(id.clone()),
        None,
        asset_manager.spec_version(),
        commit.message,
        Some(commit.properties),
        manifest_files,
        None,
        nodes.into_iter().map(Ok),
    )
    .map_err(|e| failed("building the snapshot")(e.to_string()))?;
    let (new_time, base_time) = (snapshot.flushed_at(), base_snapshot.flushed_at());
    if let (Ok(new_time), Ok(base_time)) = (new_time, base_time) {
        if new_time <= base_time {
            let reason = format!("the clock reads {new_time}, not after the base snapshot's {base_time}");
            return Err(failed("building the snapshot")(reason));
        }
    }
    let snapshot = Arc::new(snapshot);
    asset_manager
        .write_snapshot(Arc::clone(&snapshot))
        .await
        .map_err(|e| failed("writing the snapshot")(e.to_string()))?;
    move_branch(repository, branch, base, &snapshot)
        .await
        .map_err(|e| failed(&format!("moving branch {branch:?} to the new snapshot"))(e.to_string()))?;
    Ok((id, manifests))
}

/// Step 2's manifests: built and compressed on rayon's threads, a batch of one per thread at a
/// time, each batch then stored concurrently. Returns the manifest files and each array's
/// manifest references.
async fn write_manifests(
    repository: &Repository,
    commit: &Commit<'_>,
    ids: &[NodeId],
    owned: &[BTreeMap<u64, ChunkPayload>],
    repo: &str,
) -> Result<(Vec<ManifestFileInfo>, HashMap<NodeId, Vec<ManifestRef>>), IcechunkError> {
    let spec = repository.asset_manager().spec_version();
    let level = i32::from(repository.config().compression().level());
    let mut manifest_refs: HashMap<NodeId, Vec<ManifestRef>> = HashMap::new();
    let mut manifest_files = Vec::new();
    for pieces in commit.pieces.chunks(rayon::current_num_threads().max(1)) {
        let built: Vec<_> = pieces
            .par_iter()
            .map(|piece| {
                let array = &commit.dataset.arrays[piece.array];
                let failed =
                    |reason: String| IcechunkError::Node { repo: repo.into(), node: array.path.clone(), reason };
                let manifest = ManifestId::random();
                let built =
                    manifests::build(&manifest, &ids[piece.array], array, piece, commit.sources, &owned[piece.array]);
                let Some(built) = built.map_err(failed)? else { return Ok(None) };
                let file =
                    object::file(&built.bytes, Kind::Manifest, spec, level).map_err(|e| failed(e.to_string()))?;
                Ok(Some((manifest, built.refs, built.extents, built.array, file)))
            })
            .collect::<Result<_, IcechunkError>>()?;
        let puts = built.into_iter().flatten().map(|(id, refs, extents, array, file)| async move {
            let size = object::put_manifest(repository, &id, file).await.map_err(|e| e.to_string())?;
            let info = ManifestFileInfo { id: id.clone(), size_bytes: size, num_chunk_refs: refs };
            Ok::<_, String>((info, array, ManifestRef { object_id: id, extents }))
        });
        for put in futures::future::join_all(puts).await {
            let (info, array, manifest) = put.map_err(|reason| IcechunkError::Repository {
                repo: repo.into(),
                what: "writing a manifest".into(),
                reason,
            })?;
            manifest_files.push(info);
            manifest_refs.entry(ids[array].clone()).or_default().push(manifest);
        }
    }
    Ok((manifest_files, manifest_refs))
}

/// Step 3's nodes: each array with its manifests, sorted by path as a snapshot lists them.
fn with_manifests(nodes: Vec<NodeSnapshot>, mut refs: HashMap<NodeId, Vec<ManifestRef>>) -> Vec<NodeSnapshot> {
    let mut nodes: Vec<NodeSnapshot> = nodes
        .into_iter()
        .map(|node| match node.node_data {
            NodeData::Array { shape, dimension_names, .. } => {
                let manifests = refs.remove(&node.id).unwrap_or_default();
                NodeSnapshot { node_data: NodeData::Array { shape, dimension_names, manifests }, ..node }
            }
            NodeData::Group => node,
        })
        .collect();
    nodes.sort_by_cached_key(|node| node.path.to_string());
    nodes
}

/// Step 1: the dataset's nodes and store-owned chunks through `session`, read back as Icechunk's
/// nodes and, per array, the owned chunks' payloads by linear index.
async fn stage_nodes(
    session: Session,
    dataset: &VirtualDataset,
    repo: &str,
) -> Result<(Vec<NodeSnapshot>, Vec<BTreeMap<u64, ChunkPayload>>), IcechunkError> {
    let session = Arc::new(RwLock::new(session));
    let store = Store::from_session(Arc::clone(&session)).await;
    write_nodes(&store, dataset, repo).await?;
    for array in &dataset.arrays {
        write_owned(&store, array, repo).await?;
    }
    drop(store);
    let session = session.read().await;
    let failed =
        |e: String| IcechunkError::Repository { repo: repo.into(), what: "listing the new nodes".into(), reason: e };
    let nodes = session.list_nodes(&IcPath::root()).await.map_err(|e| failed(e.to_string()))?;
    let nodes: Vec<NodeSnapshot> = nodes.collect::<Result<_, _>>().map_err(|e| failed(e.to_string()))?;
    let mut owned = Vec::with_capacity(dataset.arrays.len());
    for array in &dataset.arrays {
        let failed = |reason: String| IcechunkError::Node { repo: repo.into(), node: array.path.clone(), reason };
        let path = IcPath::try_from(format!("/{}", array.path).as_str()).map_err(|e| failed(e.to_string()))?;
        let grid = &array.metadata.chunk_grid;
        let mut payloads = BTreeMap::new();
        for (linear, entry) in array.chunks.iter().enumerate() {
            if let ChunkEntry::Owned { .. } = entry {
                let coords = indices(&grid.chunk_coords(linear as u64)).map_err(|e| failed(e.to_string()))?;
                let payload = session.get_chunk_ref(&path, &coords).await.map_err(|e| failed(e.to_string()))?;
                let payload =
                    payload.ok_or_else(|| failed(format!("chunk {linear}: the owned chunk was not stored")))?;
                payloads.insert(linear as u64, payload);
            }
        }
        owned.push(payloads);
    }
    Ok((nodes, owned))
}

/// Stores an array's store-owned chunks as Icechunk chunks.
pub(super) async fn write_owned(store: &Store, array: &VirtualArray, repo: &str) -> Result<(), IcechunkError> {
    let failed = |reason: String| IcechunkError::Node { repo: repo.into(), node: array.path.clone(), reason };
    let grid = &array.metadata.chunk_grid;
    for (linear, entry) in array.chunks.iter().enumerate() {
        if let ChunkEntry::Owned { offset, length } = entry {
            let bytes = owned_bytes(array, offset, length).map_err(|e| failed(format!("chunk {linear}: {e}")))?;
            let key = chunk_key(&array.path, &grid.chunk_coords(linear as u64));
            store.set(&key, Bytes::from(bytes.into_owned())).await.map_err(|e| failed(format!("{key}: {e}")))?;
        }
    }
    Ok(())
}

/// Each dataset array's node id in the new snapshot, checking that Icechunk read the same chunk
/// grid shape from its `zarr.json` as the chunk table has (the manifests index chunks by it).
fn array_ids(dataset: &VirtualDataset, nodes: &[NodeSnapshot], repo: &str) -> Result<Vec<NodeId>, IcechunkError> {
    let by_path: HashMap<String, &NodeSnapshot> = nodes.iter().map(|n| (n.path.to_string(), n)).collect();
    dataset
        .arrays
        .iter()
        .map(|array| {
            let failed = |reason: String| IcechunkError::Node { repo: repo.into(), node: array.path.clone(), reason };
            let node = by_path.get(&format!("/{}", array.path));
            let node = node.ok_or_else(|| failed("the array is missing from the session".into()))?;
            let NodeData::Array { shape, .. } = &node.node_data else {
                return Err(failed("Icechunk stored the array as a group".into()));
            };
            let theirs: Vec<u64> = shape.num_chunks().map(u64::from).collect();
            let ours = array.metadata.chunk_grid.grid_shape();
            if theirs != ours {
                return Err(failed(format!(
                    "Icechunk reads a grid of {theirs:?} chunks, the chunk table has {ours:?}"
                )));
            }
            Ok(node.id.clone())
        })
        .collect()
}

/// Step 4: adds `snapshot` to the repository info with `base` as parent and moves `branch` to it,
/// if the branch still points at `base`.
async fn move_branch(
    repository: &Repository,
    branch: &str,
    base: &SnapshotId,
    snapshot: &Snapshot,
) -> Result<(), RepositoryError> {
    let config = repository.config();
    let (retries, per_file) = (*config.repo_update_retries(), config.num_updates_per_repo_info_file());
    let asset_manager = repository.asset_manager();
    let spec = asset_manager.spec_version();
    let id = snapshot.id();
    let update = |info: Arc<icechunk::format::repo_info::RepoInfo>, backup: &str, _| {
        let tip = info.resolve_branch(branch).map_err(|e| e.inject())?;
        if &tip != base {
            return Err(RepositoryError::capture(RepositoryErrorKind::Conflict {
                expected_parent: Some(base.clone()),
                actual_parent: Some(tip),
            }));
        }
        let entry = SnapshotInfo {
            parent_id: Some(base.clone()),
            ..SnapshotInfo::from_snapshot_file(snapshot).map_err(|e| e.inject())?
        };
        let kind = UpdateType::NewCommitUpdate { branch: branch.to_string(), new_snap_id: id.clone() };
        let info =
            info.add_snapshot(spec, entry, Some(branch), kind, None, backup, per_file).map_err(|e| e.inject())?;
        Ok(Arc::new(info))
    };
    asset_manager.update_repo_info(&retries, update).await.map(|_| ())
}
