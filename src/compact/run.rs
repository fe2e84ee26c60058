//! Compacting a store in place: load it, plan every array, read and fold, write through the store's
//! own writer (native: one atomic exchange under the append lock; Icechunk: one commit on the branch,
//! refused when the branch moved).

use std::path::Path;

use super::fold::{fold_array, Folding};
use super::plan::{plan_dim, FoldRule, Piece};
use super::{ArrayFold, CompactError, CompactOptions, CompactReport};
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
    if options.target == 0 {
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
    let plans = plan_dataset(&stored, options, location)?;
    let mut report = planned(&stored, &plans);
    if plans.is_empty() || options.dry_run {
        return Ok(report);
    }
    let store = runtime.block_on(Store::open_with(location, &options.open))?;
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
    let plans = plan_dataset(&stored.dataset, options, repo)?;
    let mut report = planned(&stored.dataset, &plans);
    if plans.is_empty() || options.dry_run {
        return Ok(report);
    }
    let open = options.open.clone().with_branch(branch.clone());
    let store = runtime.block_on(Store::open_with(repo, &open))?;
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

/// The arrays to fold and how; checks the options against the store.
fn plan_dataset(
    dataset: &VirtualDataset,
    options: &CompactOptions,
    store: &str,
) -> Result<Vec<ArrayPlan>, CompactError> {
    let usage = |reason: String| CompactError::Usage { store: store.to_string(), reason };
    let dim = options.dim.as_str();
    let extent = dataset.arrays.iter().filter_map(|a| axis_of(a, dim).map(|k| a.metadata.shape()[k])).max();
    let Some(extent) = extent else {
        return Err(usage(format!(
            "no array has a dimension named {dim:?} (dimensions: {})",
            dimension_names(dataset)
        )));
    };
    if options.target > extent {
        return Err(usage(format!("target length {} is larger than dimension {dim} ({extent})", options.target)));
    }
    let mut plans = Vec::new();
    for (index, array) in dataset.arrays.iter().enumerate() {
        let Some(axis) = axis_of(array, dim) else { continue };
        if array.metadata.codecs.is_strings() {
            continue;
        }
        let along = array.metadata.chunk_grid.dim(axis);
        let rule = FoldRule { target: options.target, tail: options.tail };
        if let Some(pieces) = plan_dim(along, &rule) {
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
