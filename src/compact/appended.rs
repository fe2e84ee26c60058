//! Keeping a calendar (or group) grid through an append (input: the dataset an append planned, in
//! memory, the dimension and its [`ChunkLength`]; output: the dataset with the appended steps folded
//! into the grid, and what was folded), so that the caller writes it in its one atomic write (native
//! stores) or commit (Icechunk).
//!
//! The edges come from the appended dataset's own time coordinate (or grouping variable), read
//! through a store over the dataset as it is in memory (`formats::dataset_store`: the stored
//! references, the new files' references, the store-owned bytes). The plan is a tail plan
//! (`compact/plan::plan_edges` with `tail`): everything up to the last chunk that already is one
//! period stays as it is, and only the rest (the last stored month's chunk and the new steps) is
//! read and folded. A store of 1-20 January appended with 21 January - 10 February has edges
//! `[31, 10]`.
//!
//! Only the time coordinate's (or grouping variable's) steps from the first step of the last stored
//! step's period on are read (`chunking::resolve_tail_edges`, moved back to a chunk boundary of
//! every array along the dimension), so an append reads what it adds plus about one period, not the
//! store; before that point every array keeps its chunks.

use std::path::Path;

use super::fold::{fold_array, Folding};
use super::plan::plan_edges;
use super::{ArrayFold, CompactError};
use crate::chunking::ChunkLength;
use crate::dataset::VirtualDataset;
use crate::grid::ChunkDim;

/// `dataset` with every array along `dim` given `length`'s edges after the last chunk already in
/// place, folded chunks read through the dataset itself; `stored_extent` is the dimension's extent
/// before the append (0: the edges are found over the whole dimension); `name` names the store in
/// messages.
///
/// # Errors
/// [`CompactError::Usage`] for a dimension without a CF time coordinate (calendar units) or a
/// grouping variable not along it; [`CompactError::Read`] and the folding errors.
pub(crate) fn fold_appended(
    mut dataset: VirtualDataset,
    dim: &str,
    length: &ChunkLength,
    stored_extent: u64,
    name: &str,
    runtime: &tokio::runtime::Handle,
) -> Result<(VirtualDataset, Vec<ArrayFold>), CompactError> {
    let usage = |reason: String| CompactError::Usage { store: name.to_string(), reason };
    let along: Vec<(usize, usize)> = dataset
        .arrays
        .iter()
        .enumerate()
        .filter(|(_, a)| !a.metadata.codecs.is_strings())
        .filter_map(|(i, a)| a.metadata.dimension_names.as_ref()?.iter().position(|n| n == dim).map(|axis| (i, axis)))
        .collect();
    let Some(extent) = along.iter().map(|&(i, axis)| dataset.arrays[i].metadata.shape()[axis]).max() else {
        return Err(usage(format!("no array has a dimension named {dim:?}")));
    };
    // The reader needs the arrays along `dim` only: the folded ones, the time coordinate, a `by:VAR`.
    let has_dim = |a: &crate::dataset::VirtualArray| {
        a.metadata.dimension_names.iter().flatten().any(|n| n == dim)
            || matches!(length, ChunkLength::By(v) if *v == a.path)
    };
    let readable: Vec<usize> = (0..dataset.arrays.len()).filter(|&i| has_dim(&dataset.arrays[i])).collect();
    let store = crate::formats::dataset_store(&dataset, &readable, Path::new(name))
        .map_err(|(array, reason)| CompactError::Build { store: name.to_string(), array, reason })?;
    let edges_error = |e| match e {
        crate::chunking::EdgesError::Read(e) => CompactError::Read(e),
        e => usage(e.to_string()),
    };
    // The new edges from `from` on; before it every array keeps its chunks.
    let (from, tail) = match length {
        ChunkLength::Elements(n) => (0, crate::chunking::regular_edges(extent, *n)),
        _ if stored_extent == 0 || extent == 0 => {
            (0, runtime.block_on(crate::chunking::resolve_edges(&store, dim, length, extent)).map_err(edges_error)?)
        }
        _ => {
            // The latest index at or before `index` where a chunk of every array along `dim` starts.
            let dims: Vec<&ChunkDim> =
                along.iter().map(|&(i, axis)| dataset.arrays[i].metadata.chunk_grid.dim(axis)).collect();
            let boundary = move |mut index: u64| loop {
                let lower = dims.iter().map(|d| d.locate(index).map_or(index, |(c, _)| d.start(c))).min();
                match lower {
                    Some(lower) if lower < index => index = lower,
                    _ => return index,
                }
            };
            let tail = crate::chunking::resolve_tail_edges(
                &store,
                dim,
                length,
                extent,
                stored_extent.min(extent) - 1,
                &boundary,
            );
            runtime.block_on(tail).map_err(edges_error)?
        }
    };
    let folding = Folding { store: name, max_memory: 1 << 30, runtime };
    let mut folds = Vec::new();
    for (index, axis) in along {
        let old = &dataset.arrays[index];
        let before = old.metadata.chunk_grid.dim(axis);
        let kept = before.locate(from).map_or(before.num_chunks(), |(c, _)| c);
        let edges: Vec<u64> = (0..kept).map(|c| before.valid(c)).chain(tail.iter().copied()).collect();
        let Some(pieces) = plan_edges(before, &edges, true) else { continue };
        let reader = runtime.block_on(store.array(&old.path))?;
        let (array, written) = fold_array(old, axis, &pieces, &reader, &folding)?;
        folds.push(ArrayFold {
            path: old.path.clone(),
            before: before.held_edges().collect(),
            after: array.metadata.chunk_grid.dim(axis).held_edges().collect(),
            chunks_written: written,
        });
        dataset.arrays[index] = array;
    }
    Ok((dataset, folds))
}
