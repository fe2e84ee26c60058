//! Stage 2, scan -> combine: concatenate single-file datasets along one dimension into one virtual
//! dataset whose chunk grid along that dimension is rectilinear, with the files' own chunk edges.
//!
//! Rules (docs/design/002-combine-rules.md):
//! - files are ordered by the values of the dimension's coordinate (decoded CF times when the units
//!   differ), else by path in natural order; overlapping or duplicated coordinate values are an error,
//!   gaps are recorded;
//! - every variable with the dimension is concatenated; the other dimensions must agree in length and
//!   chunking, and type, codecs and fill value must agree;
//! - a file's partial last chunk along the dimension is replaced, in every file but the last, by its
//!   trimmed form ([`TailChunks`]): an interior chunk always decodes to exactly its edge;
//! - variables without the dimension are taken from the first file and checked identical in the others
//!   (shape, type, and values for small arrays) unless listed in `take_first`;
//! - a coordinate whose CF time units differ between files is re-encoded to the first file's units and
//!   stored in the store; different calendars are an error.
//!
//! Pure: works on [`VirtualDataset`]s, reads no file.
//!
//! [`TailChunks`]: crate::dataset::TailChunks

mod concat;
mod order;
mod reencode;

use crate::dataset::{Provenance, ScanWarning, SourcePart, VirtualArray, VirtualDataset};
use crate::manifest::SourceTable;

pub use order::natural_cmp;

/// Files that cannot be combined. Every variant names the variable and the first file that differs.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CombineError {
    /// Nothing to combine.
    #[error("no input files")]
    NoFiles,
    /// A file lacks the concatenation dimension entirely.
    #[error("{file}: has no dimension {dim:?} to concatenate along")]
    NoDimension {
        /// The file.
        file: String,
        /// The dimension.
        dim: String,
    },
    /// A variable is missing from a file.
    #[error("{file}: {variable}: missing from this file but present in {other} (pass --drop-missing to leave such variables out)")]
    MissingVariable {
        /// The file lacking it.
        file: String,
        /// The variable.
        variable: String,
        /// A file that has it.
        other: String,
    },
    /// A variable differs where it must agree.
    #[error("{file}: {variable}: {what} differs from {first}{hint}")]
    Mismatch {
        /// The first differing file.
        file: String,
        /// The variable.
        variable: String,
        /// What differs (with both values).
        what: String,
        /// The first file.
        first: String,
        /// How to accept the difference, when there is a way (` (pass ...)`), else empty.
        hint: String,
    },

    /// Coordinate values of two files overlap or repeat.
    #[error("{file}: {dim}: coordinate values overlap with {previous} ({detail})")]
    Overlap {
        /// The later file.
        file: String,
        /// The earlier file.
        previous: String,
        /// The dimension.
        dim: String,
        /// Values involved.
        detail: String,
    },
    /// The coordinate's units or calendar cannot be reconciled.
    #[error("{file}: {dim}: {problem}")]
    Coordinate {
        /// The file.
        file: String,
        /// The dimension.
        dim: String,
        /// What is wrong.
        problem: String,
    },
    /// Building the combined grid or re-encoding failed.
    #[error("{variable}: {problem}")]
    Build {
        /// The variable.
        variable: String,
        /// What failed.
        problem: String,
    },
}

/// How to combine.
#[derive(Debug, Clone, Default)]
pub struct CombineOptions {
    /// The dimension to concatenate along.
    pub dim: String,
    /// Variables without the dimension to take from the first file even when they differ in others.
    pub take_first: Vec<String>,
    /// Leave out (with a warning) variables missing from some files instead of failing.
    pub drop_missing: bool,
    /// A line appended to the root `history` attribute. Default: none.
    pub history: Option<String>,
}

/// Concatenates single-source datasets along `options.dim`.
///
/// # Errors
/// [`CombineError`] naming the variable and the first file that does not fit.
pub fn combine(files: Vec<VirtualDataset>, options: &CombineOptions) -> Result<VirtualDataset, CombineError> {
    if files.is_empty() {
        return Err(CombineError::NoFiles);
    }
    let ordered = order::order_files(files, &options.dim)?;
    let files = ordered.files;
    let mut warnings: Vec<ScanWarning> = files.iter().flat_map(|f| f.warnings.clone()).collect();
    let paths = variable_paths(&files, options, &mut warnings)?;
    let mut sources = SourceTable::new();
    for file in &files {
        let source = file.sources.get(0).cloned().ok_or(CombineError::NoFiles)?;
        sources.push(source);
    }
    let mut arrays = Vec::with_capacity(paths.len());
    for path in &paths {
        let parts: Vec<&VirtualArray> = files.iter().filter_map(|f| f.array(path)).collect();
        let names = parts[0].metadata.dimension_names.clone().unwrap_or_default();
        let array = match names.iter().position(|n| *n == options.dim) {
            Some(axis) => concat::concat_array(&parts, axis, &files)?,
            None => concat::take_first(&parts, &files, options.take_first.contains(path))?,
        };
        arrays.push(array);
    }
    let mut parts = Vec::with_capacity(files.len());
    let mut start = 0;
    for (i, length) in ordered.lengths.iter().enumerate() {
        parts.push(SourcePart { source: i as u32, start, length: *length });
        start += length;
    }
    let mut provenance =
        Provenance { concat_dim: Some(options.dim.clone()), parts, gaps: ordered.gaps, ..Provenance::default() };
    if let Some(plan) = ordered.reencode {
        reencode::apply(&mut arrays, &files, &plan, &mut provenance)?;
    }
    let mut groups = files[0].groups.clone();
    if let (Some(line), Some(root)) = (&options.history, groups.iter_mut().find(|g| g.path.is_empty())) {
        let history = match root.attributes.get("history").and_then(|h| h.as_str()) {
            Some(old) if !old.is_empty() => format!("{line}\n{old}"),
            _ => line.clone(),
        };
        root.attributes.insert("history".into(), history.into());
    }
    Ok(VirtualDataset { sources, groups, arrays, warnings, provenance, concat: None })
}

/// The variables of the result, in the first file's order; missing ones are an error or dropped.
fn variable_paths(
    files: &[VirtualDataset],
    options: &CombineOptions,
    warnings: &mut Vec<ScanWarning>,
) -> Result<Vec<String>, CombineError> {
    let location = |f: &VirtualDataset| f.sources.get(0).map(|s| s.location.clone()).unwrap_or_default();
    let mut all: Vec<String> = files[0].arrays.iter().map(|a| a.path.clone()).collect();
    for file in &files[1..] {
        for a in &file.arrays {
            if !all.contains(&a.path) {
                all.push(a.path.clone());
            }
        }
    }
    let mut kept = Vec::with_capacity(all.len());
    for path in all {
        let holder = files.iter().find(|f| f.array(&path).is_some()).map(location).unwrap_or_default();
        match files.iter().find(|f| f.array(&path).is_none()) {
            None => kept.push(path),
            Some(lacking) if options.drop_missing => warnings.push(ScanWarning {
                file: location(lacking),
                variable: path,
                message: format!("left out: missing from this file but present in {holder}"),
            }),
            Some(lacking) => {
                return Err(CombineError::MissingVariable { file: location(lacking), variable: path, other: holder })
            }
        }
    }
    Ok(kept)
}
