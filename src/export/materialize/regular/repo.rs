//! Regular copies as Icechunk repositories: the target chunks as ordinary (store-owned) Icechunk
//! chunks, committed as one snapshot (`formats/icechunk`'s writer: the branch moves from its old tip to
//! the complete new snapshot or not at all), and `--update`: after `vzarr append` grew the store,
//! only the target chunks the new region touches are rewritten, in one commit on top of the
//! repository's tip (`update_icechunk` records only the chunks whose bytes differ).
//!
//! Input: the opened store, its arrays' readers and the options; output: one commit. The encoded
//! chunks are gathered in each array's chunk table (store-owned bytes, spilled to a temporary file
//! past the process's memory budget: `dataset/owned_bytes`) and handed to the writer whole. Not
//! resumable: a killed copy commits nothing (the repository keeps its previous snapshot).

use std::path::Path;
use std::sync::Mutex;

use super::target::Target;
use super::{copy_array, Objects, RegularOptions};
use crate::dataset::{ChunkTable, VirtualArray, VirtualDataset};
use crate::export::materialize::MaterializeReport;
use crate::export::ExportError;
use crate::grid::ChunkGrid;
use crate::read::{ArrayReader, Store};

/// Whether a target chunk (its grid coordinates) is rewritten by an update.
type Touched = dyn Fn(&[u64]) -> bool + Sync;

/// The chunks of one array gathered in a chunk table; `touched` limits them (an update).
struct TableObjects<'a> {
    store: &'a str,
    grid: &'a ChunkGrid,
    table: Mutex<ChunkTable>,
    touched: Option<&'a Touched>,
}

impl Objects for TableObjects<'_> {
    fn wanted(&self, _array: &str, coords: &[u64]) -> bool {
        self.touched.is_none_or(|touched| touched(coords))
    }

    fn put(&self, array: &str, coords: &[u64], bytes: Vec<u8>) -> Result<(), ExportError> {
        let mut table = self.table.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let entry = table.push_owned(&bytes).map_err(|e| ExportError::Node {
            store: self.store.to_string(),
            node: array.to_string(),
            reason: format!("chunk {coords:?}: keeping the encoded chunk: {e}"),
        })?;
        table.set(self.grid.linear_index(coords) as usize, entry);
        Ok(())
    }
}

/// The array copied into a chunk table as `target` lays it out; `touched` limits the chunks written
/// and `base` gives the others (an update).
async fn array_of(
    store: &Store,
    reader: &ArrayReader,
    target: &Target,
    base: ChunkTable,
    touched: Option<&Touched>,
    options: &RegularOptions,
    progress: &(dyn Fn(u64) + Send + Sync),
) -> Result<(VirtualArray, super::ArrayLayout), ExportError> {
    // The intermediate array of a badly crossing copy, if any: a private temporary directory.
    let scratch = tempfile::tempdir().map_err(|e| ExportError::Node {
        store: store.location().into(),
        node: reader.path().into(),
        reason: format!("creating a temporary directory for the intermediate array: {e}"),
    })?;
    let grid = &target.metadata.chunk_grid;
    let objects = TableObjects { store: store.location(), grid, table: Mutex::new(base), touched };
    let layout = copy_array(store, reader, target, &objects, options, scratch.path(), progress).await?;
    let chunks = objects.table.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner);
    let array = VirtualArray {
        path: reader.path().to_string(),
        metadata: target.metadata.clone(),
        chunks,
        rewritten_chunks: 0,
        digest: None,
        tails: Vec::new(),
    };
    Ok((array, layout))
}

/// Icechunk options of a regular copy.
fn commit_options(options: &RegularOptions, existing: bool, message: String) -> crate::formats::IcechunkOptions {
    crate::formats::IcechunkOptions {
        branch: options.branch.clone(),
        message: Some(options.message.clone().unwrap_or(message)),
        commit_to_existing: existing,
        remote: options.remote.clone(),
        ..crate::formats::IcechunkOptions::default()
    }
}

/// Writes the regular copy as one commit to the Icechunk repository at `destination`.
pub(super) async fn write_repository(
    store: &Store,
    groups: &[String],
    readers: &[ArrayReader],
    targets: &[Target],
    destination: &Path,
    options: &RegularOptions,
    progress: &(dyn Fn(u64) + Send + Sync),
) -> Result<MaterializeReport, ExportError> {
    let repo = destination.to_string_lossy().into_owned();
    if options.shards.is_some() {
        let reason = "--shards: an Icechunk repository is written unsharded (Icechunk stores each chunk as an \
                      object of its own); leave out --shards or write a Zarr store"
            .into();
        return Err(ExportError::Node { store: repo, node: "/".into(), reason });
    }
    let mut dataset =
        VirtualDataset { groups: crate::formats::groups_of(store, groups).await?, ..VirtualDataset::default() };
    let mut report = MaterializeReport::default();
    for (reader, target) in readers.iter().zip(targets) {
        let n = target.metadata.chunk_grid.num_chunks() as usize;
        let (array, layout) = array_of(store, reader, target, ChunkTable::missing(n), None, options, progress).await?;
        dataset.arrays.push(array);
        report.add(layout);
    }
    let message = format!("vzarr materialize {} --chunks {}", store.location(), options.spec());
    let commit = commit_options(options, options.overwrite, message);
    crate::formats::write_icechunk(&dataset, &repo, &commit)
        .await
        .map_err(|e| ExportError::Write(crate::store::WriteError::Icechunk(Box::new(e))))?;
    Ok(report)
}

/// Brings the regular copy in the Icechunk repository at `repo` up to date with `store` after the
/// store grew (`vzarr append`): every array keeps the repository's chunk shape, the target chunks
/// that overlap the new region are rewritten from the store, every other chunk is kept, all in one
/// commit on `options.branch` (refused, writing nothing, when the branch moved meanwhile). Returns
/// the report and whether anything was committed (nothing grew: nothing is).
///
/// # Errors
/// [`ExportError::Node`] for an array the repository lacks, whose grid is not regular, whose rank
/// differs or which shrank; read, encode and commit errors.
///
/// Needs feature `icechunk`.
pub async fn materialize_update(
    store: &Store,
    repo: &str,
    options: &RegularOptions,
    progress: &(dyn Fn(u64) + Send + Sync),
) -> Result<(MaterializeReport, bool), ExportError> {
    let icechunk = |e| ExportError::Write(crate::store::WriteError::Icechunk(Box::new(e)));
    store.all_sources().await?;
    let (groups, arrays) = crate::formats::checked_nodes(store)?;
    // The copy's chunks are all the repository's own: past --max-memory they wait in a spill file.
    let budget = crate::source::owned_bytes_budget(options.max_memory);
    let stored =
        crate::formats::read_branch_in(repo, &options.branch, &options.remote, &budget).await.map_err(icechunk)?;
    let mut dataset =
        VirtualDataset { groups: crate::formats::groups_of(store, &groups).await?, ..VirtualDataset::default() };
    let mut report = MaterializeReport::default();
    for path in &arrays {
        let reader = store.array(path).await?;
        let bad = |reason: String| ExportError::Node { store: repo.into(), node: path.clone(), reason };
        let old = stored.dataset.array(path).ok_or_else(|| {
            bad("not in the repository (an array added since the copy): copy it again whole, not as an update".into())
        })?;
        let (target, old_shape) = update_target(&reader, old).map_err(bad)?;
        let grid = target.metadata.chunk_grid.clone();
        let old_grid = old.metadata.chunk_grid.clone();
        let chunk_shape = grid.chunk_shape(&vec![0; grid.ndim()]);
        let new_shape = reader.shape();
        let touched = move |coords: &[u64]| -> bool {
            (0..coords.len()).any(|d| {
                let end = (coords[d] + 1) * chunk_shape[d];
                new_shape[d] > old_shape[d] && end > old_shape[d]
            })
        };
        let mut base = ChunkTable::missing(grid.num_chunks() as usize);
        base.owned = old.chunks.owned.clone();
        for linear in 0..grid.num_chunks() {
            let coords = grid.chunk_coords(linear);
            if !touched(&coords) {
                base.set(linear as usize, old.chunks.entry(old_grid.linear_index(&coords) as usize));
            }
        }
        let (array, layout) = array_of(store, &reader, &target, base, Some(&touched), options, progress).await?;
        dataset.arrays.push(array);
        report.add(layout);
    }
    if report.chunks == 0 {
        return Ok((report, false));
    }
    let message = format!("vzarr materialize --update from {}: {} chunks rewritten", store.location(), report.chunks);
    let commit = commit_options(options, true, message);
    crate::formats::update_icechunk(&stored, &dataset, repo, &commit).await.map_err(icechunk)?;
    Ok((report, true))
}

/// The target of an update (the repository's chunk shape over the store's new shape) and the
/// array's shape in the repository.
fn update_target(reader: &ArrayReader, old: &VirtualArray) -> Result<(Target, Vec<u64>), String> {
    let old_grid = &old.metadata.chunk_grid;
    let old_shape = old_grid.shape();
    let shape = reader.shape();
    if shape.len() != old_shape.len() {
        return Err(format!("{} dimensions in the store, {} in the repository", shape.len(), old_shape.len()));
    }
    if shape.iter().zip(&old_shape).any(|(n, o)| n < o) {
        return Err(format!("shape {shape:?} in the store is smaller than {old_shape:?} in the repository"));
    }
    let chunk_shape: Option<Vec<u64>> = old_grid.dims().iter().map(|d| d.regular_size()).collect();
    let chunk_shape = chunk_shape.ok_or("the repository's chunk grid is not regular (not a regular copy)")?;
    let mut metadata = reader.metadata().clone();
    metadata.chunk_grid = ChunkGrid::regular(&shape, &chunk_shape).map_err(|e| e.to_string())?;
    // The repository's codecs (a copy written with --codec keeps them).
    metadata.codecs = old.metadata.codecs.clone();
    Ok((Target { metadata, inner: None, recoded: true }, old_shape))
}
