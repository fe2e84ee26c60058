//! Compacting a store in place: load it, plan every array, read and fold, write through the store's
//! own writer (native: one atomic exchange under the append lock; Icechunk: one commit on the branch,
//! refused when the branch moved).

use std::path::Path;

use super::fold::{fold_array, Folding};
use super::plan::{plan_dim, plan_edges, FoldRule, Piece};
use super::{ArrayFold, CompactError, CompactOptions, CompactReport};
use crate::chunking::ChunkLength;
use crate::dataset::{VirtualArray, VirtualDataset};
use crate::formats::NativeWriter;
use crate::read::Store;
use crate::store::{OutputKind, WriteOptions, Writer, STORE_INFO_FILE};

/// One array to fold: its index in the dataset, the axis, and the new pieces along it.
struct ArrayPlan {
    index: usize,
    axis: usize,
    pieces: Vec<Piece>,
}

/// Compacts the store at `location` (a native `*.vzarr` directory, or an Icechunk repository: a
/// directory holding one or an object-store URL) as `options` say, running reads on `runtime`.
///
/// # Errors
/// [`CompactError::Usage`] for a dimension no array has or a target that is 0 or larger than the
/// dimension; [`CompactError::Store`] for a missing or busy store; [`CompactError::Read`] for a
/// source that changed since the scan (named); the write and commit errors. Nothing is written on
/// error.
pub fn compact_store(
    location: &str,
    options: &CompactOptions,
    runtime: &tokio::runtime::Handle,
) -> Result<CompactReport, CompactError> {
    if options.target == ChunkLength::Elements(0) {
        let reason = format!("the target length for {} must be at least 1", options.dim);
        return Err(CompactError::Usage { store: location.to_string(), reason });
    }
    #[cfg(feature = "icechunk")]
    {
        let at = crate::source::Location::parse(location);
        if at.is_url() || at.local_path().is_some_and(crate::formats::looks_like_repository) {
            return compact_repository(&at, location, options, runtime);
        }
    }
    compact_native(location, options, runtime)
}

fn compact_native(
    location: &str,
    options: &CompactOptions,
    runtime: &tokio::runtime::Handle,
) -> Result<CompactReport, CompactError> {
    let path = Path::new(location);
    let refuse = |reason: &str| CompactError::Store { store: location.to_string(), reason: reason.to_string() };
    if path.symlink_metadata().is_err() {
        return Err(refuse("no such store"));
    }
    if !OutputKind::VzarrStore.owns(path) {
        return Err(refuse("not a native vzarr store or an Icechunk repository"));
    }
    let _lock = lock(path, location)?;
    let info_before = std::fs::read(path.join(STORE_INFO_FILE)).map_err(|e| refuse(&format!("reading: {e}")))?;
    let stored = crate::append::load_native(path, &options.owned_budget)?;
    // A calendar or `by:VAR` target reads the store before planning; a length needs it for folds only.
    let open = || runtime.block_on(Store::open_with(location, &options.open));
    let early = match options.target.elements() {
        Some(_) => None,
        None => Some(open()?),
    };
    let edges = match &early {
        Some(store) => Some(target_edges(&stored, store, options, location, runtime)?),
        None => None,
    };
    let plans = plan_dataset(&stored, options, edges.as_deref(), location)?;
    let mut report = planned(&stored, &plans);
    if plans.is_empty() || options.dry_run {
        return Ok(report);
    }
    let store = match early {
        Some(store) => store,
        None => open()?,
    };
    let (dataset, written) = fold_dataset(stored, &plans, &store, options, runtime)?;
    if std::fs::read(path.join(STORE_INFO_FILE)).ok().as_deref() != Some(&info_before[..]) {
        return Err(refuse("changed while compacting (another writer?); nothing was written, run it again"));
    }
    NativeWriter
        .write(&dataset, path, &WriteOptions { overwrite: true })
        .map_err(|source| CompactError::Write { store: location.to_string(), source })?;
    report.arrays.iter_mut().zip(written).for_each(|(a, n)| a.chunks_written = n);
    report.written = true;
    Ok(report)
}

#[cfg(feature = "icechunk")]
fn compact_repository(
    at: &crate::source::Location,
    repo: &str,
    options: &CompactOptions,
    runtime: &tokio::runtime::Handle,
) -> Result<CompactReport, CompactError> {
    use crate::formats::read_branch_in;
    use crate::formats::{update_icechunk, IcechunkOptions};
    // Local repositories are locked as append locks them (a local branch update is not atomic).
    let _lock = match at.local_path() {
        Some(path) => Some(lock(path, repo)?),
        None => None,
    };
    let branch = options.open.branch.clone().unwrap_or_else(|| "main".into());
    let stored = runtime.block_on(read_branch_in(repo, &branch, &options.open.remote, &options.owned_budget))?;
    let open = options.open.clone().with_branch(branch.clone());
    let store = runtime.block_on(Store::open_with(repo, &open))?;
    let edges = match options.target.elements() {
        Some(_) => None,
        None => Some(target_edges(&stored.dataset, &store, options, repo, runtime)?),
    };
    let plans = plan_dataset(&stored.dataset, options, edges.as_deref(), repo)?;
    let mut report = planned(&stored.dataset, &plans);
    if plans.is_empty() || options.dry_run {
        return Ok(report);
    }
    let (dataset, written) = fold_dataset(stored.dataset.clone(), &plans, &store, options, runtime)?;
    let message = options.message.clone().unwrap_or_else(|| {
        format!("vzarr compact: {} to chunks of {} ({} arrays)", options.dim, options.target, plans.len())
    });
    let commit = IcechunkOptions {
        branch,
        message: Some(message),
        commit_to_existing: true,
        remote: options.open.remote.clone(),
        ..IcechunkOptions::default()
    };
    let info = runtime.block_on(update_icechunk(&stored, &dataset, repo, &commit))?;
    report.arrays.iter_mut().zip(written).for_each(|(a, n)| a.chunks_written = n);
    report.written = true;
    report.snapshot = Some((info.snapshot, info.branch));
    Ok(report)
}

/// The append lock on a local store or repository directory.
fn lock(path: &Path, name: &str) -> Result<std::fs::File, CompactError> {
    crate::store::lock(path).map_err(|e| CompactError::Store { store: name.to_string(), reason: e.reason })
}

/// The report of a plan: every array's edges before and after.
fn planned(dataset: &VirtualDataset, plans: &[ArrayPlan]) -> CompactReport {
    let arrays = plans
        .iter()
        .map(|plan| {
            let array = &dataset.arrays[plan.index];
            let dim = array.metadata.chunk_grid.dim(plan.axis);
            // As a user reads them: the elements each chunk holds (a last chunk of 512 holding 31 is 31).
            let after = super::plan::new_dim(dim, &plan.pieces).map(|d| d.held_edges().collect()).unwrap_or_default();
            ArrayFold { path: array.path.clone(), before: dim.held_edges().collect(), after, chunks_written: 0 }
        })
        .collect();
    CompactReport { arrays, written: false, snapshot: None }
}

/// The arrays folded, and the store-owned chunks written for each.
fn fold_dataset(
    mut dataset: VirtualDataset,
    plans: &[ArrayPlan],
    store: &Store,
    options: &CompactOptions,
    runtime: &tokio::runtime::Handle,
) -> Result<(VirtualDataset, Vec<u64>), CompactError> {
    let folding = Folding { store: store.location(), max_memory: options.max_memory, runtime };
    let mut written = Vec::with_capacity(plans.len());
    for plan in plans {
        let old = &dataset.arrays[plan.index];
        let reader = runtime.block_on(store.array(&old.path))?;
        let (array, n) = fold_array(old, plan.axis, &plan.pieces, &reader, &folding)?;
        dataset.arrays[plan.index] = array;
        written.push(n);
    }
    Ok((dataset, written))
}

/// The dimension's extent (the longest array along it), or the usage error naming the dimensions
/// there are.
fn extent_of(dataset: &VirtualDataset, options: &CompactOptions, store: &str) -> Result<u64, CompactError> {
    let dim = options.dim.as_str();
    let extent = dataset.arrays.iter().filter_map(|a| axis_of(a, dim).map(|k| a.metadata.shape()[k])).max();
    extent.ok_or_else(|| CompactError::Usage {
        store: store.to_string(),
        reason: format!("no array has a dimension named {dim:?} (dimensions: {})", dimension_names(dataset)),
    })
}

/// The edges a calendar or `by:VAR` target gives the dimension, read through `store`.
fn target_edges(
    dataset: &VirtualDataset,
    store: &Store,
    options: &CompactOptions,
    location: &str,
    runtime: &tokio::runtime::Handle,
) -> Result<Vec<u64>, CompactError> {
    let extent = extent_of(dataset, options, location)?;
    let edges = runtime.block_on(crate::chunking::resolve_edges(store, &options.dim, &options.target, extent));
    edges.map_err(|e| match e {
        crate::chunking::EdgesError::Read(e) => CompactError::Read(e),
        e => CompactError::Usage { store: location.to_string(), reason: e.to_string() },
    })
}

/// The arrays to fold and how (to `edges` when the target gave them); checks the options against
/// the store.
fn plan_dataset(
    dataset: &VirtualDataset,
    options: &CompactOptions,
    edges: Option<&[u64]>,
    store: &str,
) -> Result<Vec<ArrayPlan>, CompactError> {
    let dim = options.dim.as_str();
    let extent = extent_of(dataset, options, store)?;
    if let Some(target) = options.target.elements().filter(|&n| n > extent) {
        let reason = format!("target length {target} is larger than dimension {dim} ({extent})");
        return Err(CompactError::Usage { store: store.to_string(), reason });
    }
    let mut plans = Vec::new();
    for (index, array) in dataset.arrays.iter().enumerate() {
        let Some(axis) = axis_of(array, dim) else { continue };
        if array.metadata.codecs.is_strings() {
            continue;
        }
        let along = array.metadata.chunk_grid.dim(axis);
        let pieces = match (edges, options.target.elements()) {
            (Some(edges), _) => plan_edges(along, edges, options.tail),
            (None, Some(target)) => plan_dim(along, &FoldRule { target, tail: options.tail }),
            (None, None) => None,
        };
        if let Some(pieces) = pieces {
            plans.push(ArrayPlan { index, axis, pieces });
        }
    }
    Ok(plans)
}

/// The array's axis named `dim`.
fn axis_of(array: &VirtualArray, dim: &str) -> Option<usize> {
    array.metadata.dimension_names.as_ref()?.iter().position(|n| n == dim)
}

/// Every dimension name of the dataset, for messages.
fn dimension_names(dataset: &VirtualDataset) -> String {
    let mut names: Vec<&str> =
        dataset.arrays.iter().flat_map(|a| a.metadata.dimension_names.iter().flatten()).map(String::as_str).collect();
    names.sort_unstable();
    names.dedup();
    names.join(", ")
}
