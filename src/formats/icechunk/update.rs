//! Committing a changed dataset on top of the branch snapshot it was planned from: `vzarr append` on
//! an Icechunk repository.
//!
//! Stage: plan -> store. Input: the dataset the branch held ([`StoredBranch`], read by
//! `read_branch`) and the dataset to commit (the append's plan); output: one new snapshot on the
//! branch whose parent is the snapshot read. Only what differs enters the commit's change set:
//! - a group or array whose `zarr.json` changed is updated (an array keeps its chunks; the appended
//!   dimension grows);
//! - per array, a chunk whose entry changed (a new chunk, the last stored chunk trimmed or rewritten
//!   as a store-owned chunk, re-encoded times) is set, one that disappeared is deleted; unchanged
//!   references are not touched (compared by source location, checksum, offset and length, since
//!   source ids shift when files are inserted);
//! - nodes gone from the dataset are deleted, new ones written whole.
//!
//! Icechunk then writes a new manifest for each manifest it has changes in (the whole array's, or
//! with manifest splitting, those of the splits touched) and reuses every other; unchanged arrays
//! keep their manifests. Memory is bounded by the number of changed chunks, not the stored total.
//!
//! Atomicity: the session starts at the snapshot read; if the branch has moved since, nothing is
//! written. The changes are written as a new snapshot (manifests, snapshot, transaction log) not yet
//! on any branch, whose parent is the snapshot read; then the branch is moved to it by
//! compare-and-swap from the snapshot read, so a concurrent commit makes this one fail, and an
//! interrupted one leaves the previous snapshot the branch's tip (and at most an unreferenced
//! snapshot, removed by Icechunk's garbage collection).
//!
//! Test hook (debug builds): `VZARR_TEST_CRASH_AT=icechunk-snapshot-written` kills the process (SIGKILL) after the
//! new snapshot is written and before the branch moves.

use crate::test_hooks::crash_point;
use std::sync::Arc;

use bytes::Bytes;
use icechunk::format::manifest::VirtualChunkRef;
use icechunk::format::Path as IcPath;
use icechunk::{Repository, Store};
use tokio::sync::RwLock;

use super::nodes::{check_nodes, icechunk_array_json, indices, owned_bytes, set_json, set_refs, sources, Sources};
use super::snapshot::write_owned;
use super::write::{open_or_create, properties, write_config};
use super::StoredBranch;
use super::{IcechunkError, IcechunkInfo, IcechunkOptions};
use crate::dataset::{VirtualArray, VirtualDataset};
use crate::manifest::ChunkEntry;
use crate::metadata::{chunk_key, node_key};
use crate::metadata::{group_json, noted_group_json, Attributes};

/// References handed to Icechunk per call.
const REFS_PER_CALL: usize = 1 << 16;

pub(super) async fn update(
    stored: &StoredBranch,
    dataset: &VirtualDataset,
    repo: &str,
    options: &IcechunkOptions,
) -> Result<IcechunkInfo, IcechunkError> {
    let failed = |what: &str, e: String| IcechunkError::Repository { repo: repo.into(), what: what.into(), reason: e };
    check_nodes(dataset, repo)?;
    let (new_sources, prefixes) = sources(dataset)?;
    let (old_sources, _) = sources(&stored.dataset)?;
    let existing = IcechunkOptions { commit_to_existing: true, ..options.clone() };
    let (repository, created) = open_or_create(repo, &existing, &prefixes).await?;
    if created {
        return Err(failed("appending", "the repository has disappeared".into()));
    }
    let writer = Repository::open(Arc::clone(repository.storage()))
        .config(write_config(dataset, options.manifest_chunks.max(1)))
        .execute()
        .await
        .map_err(|e| failed("opening the repository for writing", e.to_string()))?;
    let session = writer
        .writable_session(&options.branch)
        .await
        .map_err(|e| failed(&format!("opening branch {:?}", options.branch), e.to_string()))?;
    if session.snapshot_id().to_string() != stored.snapshot {
        let reason = "another commit moved the branch while appending; nothing was written, run the append again";
        return Err(failed(&format!("branch {:?}", options.branch), reason.into()));
    }
    let session = Arc::new(RwLock::new(session));
    let store = Store::from_session(Arc::clone(&session)).await;
    let both = Both { old: &stored.dataset, new: dataset, old_sources: &old_sources, new_sources: &new_sources };
    update_nodes(&store, &both, repo).await?;
    drop(store);
    let message = options.message.clone().unwrap_or_else(|| format!("vzarr {}", env!("CARGO_PKG_VERSION")));
    let snapshot = {
        let mut session = session.write().await;
        let commit =
            session.commit(&message).properties(properties(dataset, options.manifest_chunks.max(1))).anonymous();
        commit.execute().await.map_err(|e| failed("writing the new snapshot", e.to_string()))?
    };
    crash_point("icechunk-snapshot-written");
    let base = icechunk::format::SnapshotId::try_from(stored.snapshot.as_str())
        .map_err(|e| failed("reading the base snapshot id", e.to_string()))?;
    writer.reset_branch(&options.branch, &snapshot, Some(&base)).await.map_err(|e| {
        let what = format!("moving branch {:?} to the new snapshot", options.branch);
        if matches!(e.kind, icechunk::repository::RepositoryErrorKind::Conflict { .. }) {
            let reason = "another commit moved the branch while appending; nothing was committed, run the append again";
            return failed(&what, reason.into());
        }
        failed(&what, e.to_string())
    })?;
    let manifests = new_manifests(&writer, &base, &snapshot).await.map_err(|e| failed("counting manifests", e))?;
    Ok(IcechunkInfo {
        repo: repo.to_string(),
        branch: options.branch.clone(),
        snapshot: snapshot.to_string(),
        created: false,
        containers: prefixes,
        sources: dataset.sources.len() as u64,
        arrays: dataset.arrays.iter().map(crate::store::ArrayInfo::of).collect(),
        manifests,
    })
}

/// The manifests `snapshot` holds that its parent `base` does not: those the commit wrote.
async fn new_manifests(
    repository: &Repository,
    base: &icechunk::format::SnapshotId,
    snapshot: &icechunk::format::SnapshotId,
) -> Result<u64, String> {
    let asset_manager = repository.asset_manager();
    let old = asset_manager.fetch_snapshot(base).await.map_err(|e| e.to_string())?;
    let new = asset_manager.fetch_snapshot(snapshot).await.map_err(|e| e.to_string())?;
    let mut count = 0;
    for file in new.manifest_files() {
        let file = file.map_err(|e| e.to_string())?;
        if old.manifest_info(&file.id).map_err(|e| e.to_string())?.is_none() {
            count += 1;
        }
    }
    Ok(count)
}

/// The stored and the new dataset, with their sources in Icechunk's terms.
struct Both<'a> {
    old: &'a VirtualDataset,
    new: &'a VirtualDataset,
    old_sources: &'a Sources,
    new_sources: &'a Sources,
}

/// Records every changed node and chunk in the session behind `store`.
async fn update_nodes(store: &Store, both: &Both<'_>, repo: &str) -> Result<(), IcechunkError> {
    let failed = |node: &str, e: String| IcechunkError::Node { repo: repo.into(), node: node.into(), reason: e };
    for old in both.old.arrays.iter().filter(|a| both.new.array(&a.path).is_none()) {
        store.delete(&node_key(&old.path)).await.map_err(|e| failed(&old.path, e.to_string()))?;
    }
    for old in both.old.groups.iter().filter(|g| !both.new.groups.iter().any(|n| n.path == g.path)) {
        if !old.path.is_empty() {
            store.delete(&node_key(&old.path)).await.map_err(|e| failed(&old.path, e.to_string()))?;
        }
    }
    let root = match both.new.groups.iter().find(|g| g.path.is_empty()) {
        Some(g) => noted_group_json(&g.attributes, &g.attribute_encodings),
        None => group_json(&Attributes::new()),
    };
    set_json(store, "", &root).await.map_err(|e| failed("/", e.to_string()))?;
    for group in both.new.groups.iter().filter(|g| !g.path.is_empty()) {
        let doc = noted_group_json(&group.attributes, &group.attribute_encodings);
        set_json(store, &group.path, &doc).await.map_err(|e| failed(&group.path, e.to_string()))?;
    }
    for array in &both.new.arrays {
        // Icechunk leaves a node whose `zarr.json` bytes are unchanged as it is.
        let doc = icechunk_array_json(array.metadata.to_json(), &array.metadata.chunk_grid);
        set_json(store, &array.path, &doc).await.map_err(|e| failed(&array.path, e.to_string()))?;
        match both.old.array(&array.path) {
            Some(old) => update_chunks(store, old, array, both, repo).await?,
            None => write_new_array(store, array, both.new_sources, repo).await?,
        }
    }
    Ok(())
}

/// Records every chunk of an array the stored dataset did not have: its references in bulk, its
/// store-owned chunks as Icechunk chunks.
async fn write_new_array(
    store: &Store,
    array: &VirtualArray,
    sources: &Sources,
    repo: &str,
) -> Result<(), IcechunkError> {
    let failed = |reason: String| IcechunkError::Node { repo: repo.to_string(), node: array.path.clone(), reason };
    let path = IcPath::try_from(format!("/{}", array.path).as_str()).map_err(|e| failed(e.to_string()))?;
    let grid = &array.metadata.chunk_grid;
    let mut refs = Vec::new();
    for (linear, entry) in array.chunks.iter().enumerate() {
        if let ChunkEntry::Source { source, offset, length } = entry {
            let location = sources.urls.get(source as usize).cloned();
            let location = location.ok_or_else(|| failed(format!("chunk {linear}: no source {source}")))?;
            let checksum = sources.checksums[source as usize].clone();
            let coords = indices(&grid.chunk_coords(linear as u64)).map_err(|e| failed(e.to_string()))?;
            refs.push((coords, VirtualChunkRef { location, offset, length, checksum }));
            if refs.len() == REFS_PER_CALL {
                set_refs(store, &path, std::mem::take(&mut refs)).await.map_err(failed)?;
            }
        }
    }
    if !refs.is_empty() {
        set_refs(store, &path, refs).await.map_err(failed)?;
    }
    write_owned(store, array, repo).await
}

/// Sets the chunks of `new` whose entry differs from `old`'s at the same grid coordinates.
async fn update_chunks(
    store: &Store,
    old: &VirtualArray,
    new: &VirtualArray,
    both: &Both<'_>,
    repo: &str,
) -> Result<(), IcechunkError> {
    let failed = |reason: String| IcechunkError::Node { repo: repo.into(), node: new.path.clone(), reason };
    let path = IcPath::try_from(format!("/{}", new.path).as_str()).map_err(|e| failed(e.to_string()))?;
    let (old_grid, grid) = (&old.metadata.chunk_grid, &new.metadata.chunk_grid);
    let old_shape = old_grid.grid_shape();
    let mut refs = Vec::new();
    for linear in 0..new.chunks.len() as u64 {
        let coords = grid.chunk_coords(linear);
        let inside = coords.len() == old_shape.len() && coords.iter().zip(&old_shape).all(|(c, n)| c < n);
        let before = if inside { old.chunks.get(old_grid.linear_index(&coords) as usize) } else { None };
        let before = before.unwrap_or(ChunkEntry::Missing);
        let entry = new.chunks.entry(linear as usize);
        if same_entry(old, before, new, entry, both) {
            continue;
        }
        match entry {
            ChunkEntry::Missing => {
                let key = chunk_key(&new.path, &coords);
                store.delete(&key).await.map_err(|e| failed(format!("{key}: {e}")))?;
            }
            ChunkEntry::Source { source, offset, length } => {
                let location = both.new_sources.urls.get(source as usize).cloned();
                let location = location.ok_or_else(|| failed(format!("chunk {linear}: no source {source}")))?;
                let checksum = both.new_sources.checksums[source as usize].clone();
                refs.push((
                    indices(&coords).map_err(|e| failed(e.to_string()))?,
                    VirtualChunkRef { location, offset, length, checksum },
                ));
                if refs.len() == REFS_PER_CALL {
                    set_refs(store, &path, std::mem::take(&mut refs)).await.map_err(failed)?;
                }
            }
            ChunkEntry::Owned { offset, length } => {
                let bytes = owned_bytes(new, offset, length).map_err(|e| failed(format!("chunk {linear}: {e}")))?;
                let key = chunk_key(&new.path, &coords);
                store.set(&key, Bytes::from(bytes.into_owned())).await.map_err(|e| failed(format!("{key}: {e}")))?;
            }
        }
    }
    if !refs.is_empty() {
        set_refs(store, &path, refs).await.map_err(failed)?;
    }
    delete_outside(store, old, new, repo).await
}

/// Deletes the chunks of `old` that lie outside `new`'s grid (a grid with fewer chunks along a
/// dimension: `vzarr compact`).
async fn delete_outside(
    store: &Store,
    old: &VirtualArray,
    new: &VirtualArray,
    repo: &str,
) -> Result<(), IcechunkError> {
    let failed = |reason: String| IcechunkError::Node { repo: repo.into(), node: new.path.clone(), reason };
    let shape = new.metadata.chunk_grid.grid_shape();
    let old_shape = old.metadata.chunk_grid.grid_shape();
    if old_shape.len() == shape.len() && old_shape.iter().zip(&shape).all(|(o, n)| o <= n) {
        return Ok(()); // the grid did not shrink (an append): nothing lies outside
    }
    for (linear, entry) in old.chunks.iter().enumerate() {
        if matches!(entry, ChunkEntry::Missing) {
            continue;
        }
        let coords = old.metadata.chunk_grid.chunk_coords(linear as u64);
        if coords.len() != shape.len() || coords.iter().zip(&shape).any(|(c, n)| c >= n) {
            let key = chunk_key(&new.path, &coords);
            store.delete(&key).await.map_err(|e| failed(format!("{key}: {e}")))?;
        }
    }
    Ok(())
}

/// Whether two chunk entries give the same chunk in Icechunk: the same source URL, checksum and
/// byte range, or the same store-owned bytes, or both missing.
fn same_entry(old: &VirtualArray, before: ChunkEntry, new: &VirtualArray, entry: ChunkEntry, both: &Both<'_>) -> bool {
    match (before, entry) {
        (ChunkEntry::Missing, ChunkEntry::Missing) => true,
        (
            ChunkEntry::Source { source: a, offset: o1, length: l1 },
            ChunkEntry::Source { source: b, offset: o2, length: l2 },
        ) => {
            let (a, b) = (a as usize, b as usize);
            o1 == o2
                && l1 == l2
                && both.old_sources.urls.get(a).map(|u| u.url()) == both.new_sources.urls.get(b).map(|u| u.url())
                && both.old_sources.checksums.get(a) == both.new_sources.checksums.get(b)
        }
        (ChunkEntry::Owned { offset: o1, length: l1 }, ChunkEntry::Owned { offset: o2, length: l2 }) => {
            matches!((owned_bytes(old, o1, l1), owned_bytes(new, o2, l2)), (Ok(a), Ok(b)) if a == b)
        }
        _ => false,
    }
}
