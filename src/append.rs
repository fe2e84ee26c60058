//! Appending new files to a combined dataset without rescanning the old ones: the planning step,
//! independent of where the result is written.
//!
//! ```text
//! stored dataset ──┐                      (load_native: the store's own files only)
//! last stored files ──rescan──┐
//! new files ──scan────────────┴─combine─▶ tail ─┐
//!                                                ├─splice─▶ VirtualDataset == combine(every file)
//! stored references, owned bytes ────────────────┘
//! ```
//!
//! The store records how it was combined ([`Provenance::concat_dims`], [`Recipe`]). An append
//! combines, with exactly those options, the *tail*: the last stored file of every row (every member,
//! every group of variables) plus the new files. That one combine does every check a fresh scan would
//! do between the new files and the stored ones: variables, data types, codecs, fill values, shapes and
//! chunking of the other dimensions, attributes that change the meaning of the numbers, calendars,
//! member keys, a complete hypercube, and no overlap; and it trims the last stored file's partial last
//! chunk, now interior. The planning step (`plan_append`) then splices the tail onto the stored
//! references along the appended dimension and rebuilds what a fresh scan of every file would give:
//! the same source order, grids, chunk entries, store-owned bytes (in the same order), re-encoded
//! times, provenance and attributes. Nothing is written: the caller writes the result atomically
//! (native stores: `NativeWriter` with overwrite, which exchanges the new store with the old one).
//!
//! Limits: one existing concatenation dimension (any number of new ones, such as members); the
//! tail must start strictly after the stored end; gap notes between new files are computed from the
//! tail's values alone (a fresh scan takes the median step over every file, which for an archive
//! of regular steps is the same).
//!
//! [`Provenance::concat_dims`]: crate::dataset::Provenance::concat_dims

mod attrs;
mod load;
mod order;
mod splice;
mod times;

pub use load::load_native;

use std::collections::BTreeMap;

use crate::combine::{combine, CombineError, CombineOptions, ConcatDim};
use crate::dataset::{ConcatCoordinate, Recipe, VirtualArray, VirtualDataset};
use crate::scan::ScanOptions;

/// An append that cannot be done. The store is left as it was.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AppendError {
    /// A file of the store is missing or invalid.
    #[error("{store}: {file}: {reason}")]
    Store {
        /// The store.
        store: String,
        /// The file of the store.
        file: String,
        /// What is wrong.
        reason: String,
    },
    /// The store cannot be appended to (how it was made is not recorded, or not supported).
    #[error("{store}: cannot append: {reason}")]
    NotAppendable {
        /// The store.
        store: String,
        /// Why.
        reason: String,
    },
    /// No new file was given.
    #[error("no new files to append")]
    NoFiles,
    /// A new file is already one of the store's sources.
    #[error("{file}: already in the store")]
    AlreadyStored {
        /// The file.
        file: String,
    },
    /// A stored file that must be read again has changed since the store was written.
    #[error("{file}: changed since the store was written ({reason}); rescan the archive with vzarr scan")]
    Changed {
        /// The file.
        file: String,
        /// What changed.
        reason: String,
    },
    /// The new files do not combine with the stored ones (the combine error names file and variable).
    #[error(transparent)]
    Combine(#[from] CombineError),
    /// A new file does not start after the store's end along the appended dimension.
    #[error("{file}: {dim}: starts at {first}, not after the store's end ({last} in {stored}): append only adds files after the stored ones")]
    NotAfter {
        /// The new file.
        file: String,
        /// The dimension.
        dim: String,
        /// Its first value.
        first: String,
        /// The store's last value.
        last: String,
        /// The last stored file.
        stored: String,
    },
    /// The new files would open a gap in a store that has none.
    #[error("{detail} (the store has no gaps)")]
    Gap {
        /// The gap, described.
        detail: String,
    },
    /// A variable of the new files does not match the store.
    #[error("{file}: {variable}: {problem}")]
    Mismatch {
        /// A new file.
        file: String,
        /// The variable.
        variable: String,
        /// What differs.
        problem: String,
    },
    /// Building the combined array failed.
    #[error("{variable}: {problem}")]
    Build {
        /// The variable.
        variable: String,
        /// What failed.
        problem: String,
    },
    /// The store-owned chunk bytes of a variable could not be read or spilled.
    #[error("{variable}: {source}")]
    Owned {
        /// The variable.
        variable: String,
        /// What failed.
        source: Box<crate::dataset::OwnedBytesError>,
    },
}

/// How to append.
#[derive(Debug, Clone, Default)]
pub(crate) struct AppendOptions {
    /// Accept new files that open a gap along the appended dimension in a store without gaps.
    /// Default: false (refused: a daily job that skipped a day should not go unnoticed).
    pub(crate) allow_gaps: bool,
    /// The line prepended to the root `history` attribute when the store was made with one (a fresh
    /// scan's line). Default: none (the stored line is kept).
    pub(crate) history: Option<String>,
}

/// Reads the stored values of a coordinate array (`path`, its first `count` rows): needed only when
/// new files bring time units that force re-encoding a coordinate the store holds as references.
pub(crate) type CoordinateReader<'a> = dyn Fn(&str, u64) -> Result<Vec<f64>, String> + 'a;

/// What the store records about how it was made, turned into options.
#[derive(Debug, Clone)]
pub(crate) struct Recorded {
    /// The combine options (without a history line).
    pub(crate) combine: CombineOptions,
    /// The scan options for new files (`concat_dims`, `skip_unsupported`, `max_slab_bytes`; the
    /// caller adds runtime and remote settings).
    pub(crate) scan: ScanOptions,
    /// Index in `combine.dims` of the dimension appended along (the one existing dimension).
    pub(crate) dim: usize,
}

/// The options `stored` was combined and scanned with.
///
/// # Errors
/// [`AppendError::NotAppendable`] for a store written before appending was supported, one made from
/// a single file without `--concat`, or one concatenated along several existing dimensions.
pub(crate) fn recorded_options(stored: &VirtualDataset, store: &str) -> Result<Recorded, AppendError> {
    let not = |reason: &str| AppendError::NotAppendable { store: store.to_string(), reason: reason.to_string() };
    let provenance = &stored.provenance;
    let recipe: &Recipe = provenance.recipe.as_ref().ok_or_else(|| {
        not("it does not record how it was combined (written by a vzarr older than `append`, or from one file without a concatenation dimension); rescan every file")
    })?;
    let dims = provenance
        .concat_dims
        .iter()
        .map(|d| if d.key == "coordinate" { d.name.parse() } else { format!("{}={}", d.name, d.key).parse() })
        .collect::<Result<Vec<ConcatDim>, _>>()
        .map_err(|e| not(&format!("recorded concatenation dimension: {e}")))?;
    let existing: Vec<usize> = (0..dims.len()).filter(|&k| !dims[k].is_new()).collect();
    let [dim] = existing[..] else {
        return Err(not(
            "append extends along exactly one existing dimension (such as time); this store has none or several",
        ));
    };
    let combine = CombineOptions {
        dims,
        take_first: recipe.take_first.clone(),
        drop_missing: recipe.drop_missing,
        history: None,
        first_global_attributes: recipe.first_global_attributes,
    };
    let defaults = ScanOptions::default();
    let scan = ScanOptions {
        skip_unsupported: recipe.skip_unsupported,
        max_slab_bytes: recipe.max_slab_bytes.unwrap_or(defaults.max_slab_bytes),
        concat_dims: combine.dim_names(),
        ..defaults
    };
    Ok(Recorded { combine, scan, dim })
}

/// The stored files to scan again: the last one of every row along the appended dimension (for a
/// member x time store, every member's last year; with several groups of variables, each group's).
///
/// # Errors
/// [`AppendError::NotAppendable`] when the provenance does not say which files hold the end.
pub(crate) fn files_to_rescan(
    stored: &VirtualDataset,
    recorded: &Recorded,
    store: &str,
) -> Result<Vec<String>, AppendError> {
    let k = recorded.dim;
    let boxes = &stored.provenance.boxes;
    let end = boxes.iter().filter_map(|b| b.ranges.get(k).map(|r| r.0 + r.1)).max();
    let Some(end) = end else {
        return Err(AppendError::NotAppendable { store: store.into(), reason: "no source file is recorded".into() });
    };
    let mut out = Vec::new();
    for b in boxes.iter().filter(|b| b.ranges.get(k).is_some_and(|r| r.0 + r.1 == end)) {
        let file = stored.sources.get(b.source).ok_or_else(|| AppendError::Store {
            store: store.into(),
            file: crate::store::STORE_INFO_FILE.into(),
            reason: format!("source id {} is not in the source table", b.source),
        })?;
        out.push(file.location.clone());
    }
    Ok(out)
}

/// Plans the append of `new` (scanned files) to `stored` (a loaded store), given `last` (the
/// [`files_to_rescan`], scanned again): returns the dataset a fresh scan of every file would give.
/// `old_coordinate` is called only when time values must be re-encoded and the store holds them as
/// references.
///
/// # Errors
/// [`AppendError`] naming the file and variable that does not fit; nothing is written.
pub(crate) fn plan_append(
    stored: &VirtualDataset,
    last: Vec<VirtualDataset>,
    new: Vec<VirtualDataset>,
    options: &AppendOptions,
    store: &str,
    old_coordinate: &CoordinateReader<'_>,
) -> Result<VirtualDataset, AppendError> {
    if new.is_empty() {
        return Err(AppendError::NoFiles);
    }
    let recorded = recorded_options(stored, store)?;
    check_inputs(stored, &last, &new)?;
    let scanned = Scanned::of(&last, &new, &recorded);
    let tail = combine(last.into_iter().chain(new).collect(), &recorded.combine)?;
    let layout = order::Layout::new(stored, &tail, &scanned, &recorded, options)?;
    let reencoding = times::Reencoding::new(stored, &tail, &layout, &scanned, old_coordinate)?;
    let len =
        layout.last_start + tail.array(&layout.dim).map_or(0, |a| a.metadata.shape().first().copied().unwrap_or(0));
    let mut arrays = Vec::with_capacity(stored.arrays.len());
    for old in &stored.arrays {
        match reencoding.as_ref().map(|r| r.array(old, len)).transpose()?.flatten() {
            Some(array) => arrays.push(array),
            None => arrays.push(combined_array(old, &tail, &layout, &scanned)?),
        }
    }
    check_no_extra(stored, &tail, &scanned)?;
    let mut dataset = VirtualDataset {
        sources: layout.sources.clone(),
        groups: attrs::groups(stored, &scanned, &recorded, options),
        arrays,
        warnings: attrs::warnings(stored, &tail, &scanned),
        provenance: layout.provenance(stored, &tail),
        concat: Vec::new(),
        hdf5_links: Default::default(),
    };
    if let Some(reencoding) = &reencoding {
        reencoding.record(&mut dataset);
    }
    Ok(dataset)
}

/// What the rescanned and new files say, kept before they are consumed by the combine.
pub(crate) struct Scanned {
    /// Locations of the rescanned last files.
    pub(crate) last: Vec<String>,
    /// Per rescanned file and array path: the file's own rewritten chunks.
    pub(crate) own_rewritten: BTreeMap<(String, String), u64>,
    /// Per file (rescanned and new): its coordinate along the appended dimension.
    pub(crate) coordinates: BTreeMap<String, ConcatCoordinate>,
    /// Per new file: its root attributes (None when it has no root group).
    pub(crate) roots: Vec<(String, Option<crate::metadata::Attributes>)>,
    /// Per new file, in input order: its warnings.
    pub(crate) warnings: Vec<crate::dataset::ScanWarning>,
}

impl Scanned {
    fn of(last: &[VirtualDataset], new: &[VirtualDataset], recorded: &Recorded) -> Self {
        let dim = &recorded.combine.dims[recorded.dim].name;
        let location = |f: &VirtualDataset| f.sources.get(0).map(|s| s.location.clone()).unwrap_or_default();
        let mut own_rewritten = BTreeMap::new();
        for f in last {
            for a in &f.arrays {
                own_rewritten.insert((location(f), a.path.clone()), a.rewritten_chunks);
            }
        }
        let coordinates = last
            .iter()
            .chain(new)
            .filter_map(|f| f.concat.iter().find(|c| c.dim == *dim).map(|c| (location(f), c.clone())))
            .collect();
        let roots = new
            .iter()
            .map(|f| (location(f), f.groups.iter().find(|g| g.path.is_empty()).map(|g| g.attributes.clone())))
            .collect();
        Scanned {
            last: last.iter().map(location).collect(),
            own_rewritten,
            coordinates,
            roots,
            warnings: new.iter().flat_map(|f| f.warnings.clone()).collect(),
        }
    }
}

/// New files not already stored; rescanned files unchanged since the store was written.
fn check_inputs(stored: &VirtualDataset, last: &[VirtualDataset], new: &[VirtualDataset]) -> Result<(), AppendError> {
    let by_location: BTreeMap<&str, &crate::manifest::SourceFile> =
        stored.sources.iter().map(|s| (s.location.as_str(), s)).collect();
    for f in new {
        if let Some(s) = f.sources.get(0).filter(|s| by_location.contains_key(s.location.as_str())) {
            return Err(AppendError::AlreadyStored { file: s.location.clone() });
        }
    }
    for f in last {
        let Some(now) = f.sources.get(0) else { continue };
        let then = by_location.get(now.location.as_str()).copied();
        let reason = match then {
            None => Some("not a source of the store".to_string()),
            // Size, ETag (remote objects) and modification time, as `read` compares them.
            Some(then) if then.mtime_ns.is_some() && now.mtime_ns.is_none() && then.etag.is_none() => {
                Some("modification time unknown".to_string())
            }
            Some(then) => then.changed_since(now),
        };
        if let Some(reason) = reason {
            return Err(AppendError::Changed { file: now.location.clone(), reason });
        }
    }
    Ok(())
}

/// One array of the result: unchanged when it lacks the appended dimension (checked against the
/// tail's), else the stored part spliced with the tail's.
fn combined_array(
    old: &VirtualArray,
    tail: &VirtualDataset,
    layout: &order::Layout,
    scanned: &Scanned,
) -> Result<VirtualArray, AppendError> {
    let file = scanned.roots.first().map(|r| r.0.clone()).unwrap_or_default();
    let Some(new) = tail.array(&old.path) else {
        let problem = "in the store but not in the new files".to_string();
        return Err(AppendError::Mismatch { file, variable: old.path.clone(), problem });
    };
    let names = old.metadata.dimension_names.as_deref().unwrap_or_default();
    let Some(axis) = names.iter().position(|n| *n == layout.dim) else {
        if layout.new_dims.contains(&old.path) && (new.metadata != old.metadata || new.chunks != old.chunks) {
            let problem = "the new files' keys differ from the store's (an append brings files for every stored key, and no other)";
            return Err(AppendError::Mismatch { file, variable: old.path.clone(), problem: problem.into() });
        }
        return Ok(old.clone());
    };
    splice::splice(old, new, axis, layout, scanned)
}

/// Every array of the tail is in the store.
fn check_no_extra(stored: &VirtualDataset, tail: &VirtualDataset, scanned: &Scanned) -> Result<(), AppendError> {
    match tail.arrays.iter().find(|a| stored.array(&a.path).is_none()) {
        None => Ok(()),
        Some(a) => Err(AppendError::Mismatch {
            file: scanned.roots.first().map(|r| r.0.clone()).unwrap_or_default(),
            variable: a.path.clone(),
            problem: "in the new files but not in the store".into(),
        }),
    }
}
