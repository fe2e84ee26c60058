//! Stage 2, scan -> combine: turn single-file datasets into one virtual dataset, whose chunk grids
//! are rectilinear along the concatenated dimensions, with the files' own chunk edges.
//!
//! The model is **group -> concatenate -> merge** (docs/design/002-combine-rules.md):
//!
//! 1. **Group.** Files are grouped by their *data variables*: the variables that carry an existing
//!    concatenation dimension (every non-scalar variable when all concatenation dimensions are new),
//!    except coordinate variables (1-D, named like their dimension) and the bounds they name. A CMIP
//!    archive's `tas_*` and `pr_*` files form two groups.
//! 2. **Concatenate** each group along every dimension in [`CombineOptions::dims`] (outermost
//!    first), building a hypercube:
//!    - an *existing* dimension (`time`, or spatial tiles along `y` and `x`) orders files by the values
//!      of its coordinate (CF times decoded when the units differ); values must be strictly monotonic
//!      and free of NaN inside every file, and files must not overlap; gaps are recorded;
//!    - a *new* dimension (`member`) takes each file's key from a global attribute (`attr:NAME`) or
//!      from the first capture group of a regular expression over the file name (`path:REGEX`); keys
//!      are sorted (numerically when every key is a number, else in natural order) and the data
//!      variables gain the dimension in front, with a store-owned coordinate array (strings as Zarr v3
//!      `string` with the `vlen-utf8` codec, or numbers);
//!    - every combination of keys must be present exactly once, and files at the same position along
//!      an existing dimension must have identical coordinate values (members share one time axis);
//!      anything else is an error naming what is missing, and nothing is written;
//!    - a file's partial last chunk along an existing dimension is replaced, wherever the file is not
//!      the last along it, by its trimmed form ([`TailChunks`]), along every such dimension at once:
//!      an interior chunk always decodes to exactly its edge.
//! 3. **Merge** the groups: shared coordinates and variables without the concatenation dimensions
//!    must agree (shape, type, and values; `take_first` accepts differing values); a data variable
//!    present in two groups is an error naming both files.
//!
//! Throughout, attributes that change the meaning of the numbers (`scale_factor`, `add_offset`,
//! `units`, `calendar`, `_FillValue`, `missing_value`) must be equal in every file, except the units
//! of a time coordinate that is re-encoded. Global attributes that differ between files are dropped
//! (or, with [`CombineOptions::first_global_attributes`], taken from the first file).
//!
//! CMIP example: `tas_day_M_r1i1p1f1_gn_2000.nc` ... with `dims = [member=attr:variant_label, time]`
//! gives `tas(member, time, lat, lon)` and `pr(member, time, lat, lon)` side by side, `member` a
//! coordinate of strings, `time` a rectilinear grid of the yearly files' chunks.
//!
//! Pure: works on [`VirtualDataset`]s, reads no file.
//!
//! [`TailChunks`]: crate::dataset::TailChunks

mod attrs;
mod concat;
mod cube;
mod keys;
mod merge;
mod newdim;
mod order;
pub(crate) mod reencode;
mod text_widths;

use crate::dataset::VirtualDataset;

#[cfg(feature = "verify")]
pub(crate) use keys::derive_key;
pub(crate) use order::natural_cmp;

/// Files that cannot be combined. Every variant names the variable or dimension and the file(s).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CombineError {
    /// Nothing to combine.
    #[error("no input files")]
    NoFiles,
    /// A file lacks an existing concatenation dimension entirely.
    #[error("{file}: has no dimension {dim:?} to concatenate along")]
    NoDimension {
        /// The file.
        file: String,
        /// The dimension.
        dim: String,
    },
    /// A variable is missing from a file.
    #[error("{file}: {variable}: missing from this file but present in {other} ")]
    MissingVariable {
        /// The file lacking it.
        file: String,
        /// The variable.
        variable: String,
        /// A file that has it.
        other: String,
    },
    /// A variable differs where it must agree.
    #[error("{file}: {variable}: {what} differs from {first}")]
    Mismatch {
        /// The first differing file.
        file: String,
        /// The variable.
        variable: String,
        /// What differs (with both values).
        what: String,
        /// The file it was compared with.
        first: String,
        /// Whether taking the first file's values (`take_first`) would accept the difference.
        take_first_possible: bool,
    },
    /// An attribute that changes the meaning of the values differs between files.
    #[error(
        "{file}: {variable}: attribute {attribute} {detail}; combining would misread the values of one of the files"
    )]
    Attribute {
        /// The differing file.
        file: String,
        /// The variable.
        variable: String,
        /// The attribute.
        attribute: String,
        /// Both values and the other file (`is 0.1 here but 0.01 in FILE`).
        detail: String,
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
    /// The coordinate's values, units or calendar cannot be used.
    #[error("{file}: {dim}: {problem}")]
    Coordinate {
        /// The file.
        file: String,
        /// The dimension.
        dim: String,
        /// What is wrong.
        problem: String,
    },
    /// A new dimension's key cannot be taken from a file.
    #[error("{file}: {dim}: {problem}")]
    Key {
        /// The file.
        file: String,
        /// The dimension.
        dim: String,
        /// What is wrong.
        problem: String,
    },
    /// The files do not fill the hypercube: a position is missing, taken twice, or the files at one
    /// position along a dimension disagree on its coordinate.
    #[error("incomplete hypercube: {detail}")]
    Incomplete {
        /// What is missing or inconsistent, naming the keys, coordinate ranges and files.
        detail: String,
    },
    /// A data variable comes from two groups of files.
    #[error("{file}: {variable}: also a data variable of {other}, whose files hold different variables (a variable may come from one set of files only)")]
    TwoGroups {
        /// A file of the second group.
        file: String,
        /// The variable.
        variable: String,
        /// A file of the first group.
        other: String,
    },
    /// The options are inconsistent.
    #[error("{0}")]
    Options(String),
    /// Building the combined grid or re-encoding failed.
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

/// Where a concatenation dimension's position of each file comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DimKey {
    /// An existing dimension of the files, ordered by its coordinate values.
    Coordinate,
    /// A new dimension keyed by this global attribute.
    Attribute(String),
    /// A new dimension keyed by the first capture group of this regular expression, searched in the
    /// file name (the last path component).
    Path(String),
}

/// One concatenation dimension: `time`, `member=attr:variant_label`, `member=path:_(r\d+i\d+p\d+f\d+)_`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConcatDim {
    /// The dimension name.
    pub name: String,
    /// Where each file's position along it comes from.
    pub key: DimKey,
}

impl ConcatDim {
    /// An existing dimension ordered by its coordinate.
    pub fn existing(name: impl Into<String>) -> Self {
        ConcatDim { name: name.into(), key: DimKey::Coordinate }
    }

    /// True for a dimension the files do not have.
    pub fn is_new(&self) -> bool {
        self.key != DimKey::Coordinate
    }

    /// The key source as recorded in the store: `coordinate`, `attr:NAME` or `path:REGEX`.
    pub fn key_text(&self) -> String {
        match &self.key {
            DimKey::Coordinate => "coordinate".into(),
            DimKey::Attribute(a) => format!("attr:{a}"),
            DimKey::Path(r) => format!("path:{r}"),
        }
    }
}

impl std::str::FromStr for ConcatDim {
    type Err = String;

    /// Parses `DIM`, `DIM=attr:NAME` or `DIM=path:REGEX` (the regex must have a capture group).
    fn from_str(text: &str) -> Result<Self, String> {
        let Some((name, source)) = text.split_once('=') else {
            return check_name(text).map(|()| ConcatDim::existing(text));
        };
        check_name(name)?;
        let key = if let Some(attr) = source.strip_prefix("attr:") {
            if attr.is_empty() {
                return Err(format!("{text:?}: empty attribute name after attr:"));
            }
            DimKey::Attribute(attr.to_string())
        } else if let Some(re) = source.strip_prefix("path:") {
            let compiled = regex::Regex::new(re).map_err(|e| format!("{text:?}: invalid regular expression: {e}"))?;
            if compiled.captures_len() < 2 {
                return Err(format!(
                    "{text:?}: the regular expression needs a capture group, e.g. path:'_(r\\d+i\\d+p\\d+f\\d+)_'"
                ));
            }
            DimKey::Path(re.to_string())
        } else {
            return Err(format!("{text:?}: expected DIM, DIM=attr:NAME or DIM=path:REGEX"));
        };
        Ok(ConcatDim { name: name.to_string(), key })
    }
}

fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.contains(['/', '\0']) {
        return Err(format!("{name:?}: invalid dimension name"));
    }
    Ok(())
}

/// How to combine.
#[derive(Debug, Clone, Default)]
pub struct CombineOptions {
    /// The dimensions to concatenate along, outermost first (new dimensions become the leading
    /// dimensions of the data variables, in this order). Default: none (an error).
    pub dims: Vec<ConcatDim>,
    /// Variables without the concatenation dimensions to take from the first file even when they
    /// differ in others. Default: none.
    pub take_first: Vec<String>,
    /// Leave out (with a warning) variables missing from some files instead of failing.
    /// Default: false.
    pub drop_missing: bool,
    /// A line prepended to the root `history` attribute. Default: none.
    pub history: Option<String>,
    /// Keep the first file's global attributes even where other files differ, instead of dropping
    /// those that differ. Default: false.
    pub first_global_attributes: bool,
}

impl CombineOptions {
    /// Concatenation along one existing dimension, everything else default.
    pub fn along(dim: impl Into<String>) -> Self {
        CombineOptions { dims: vec![ConcatDim::existing(dim)], ..CombineOptions::default() }
    }

    /// The names of the existing dimensions among [`CombineOptions::dims`], which the scan must be told
    /// about ([`ScanOptions::concat_dims`] takes every name).
    ///
    /// [`ScanOptions::concat_dims`]: crate::scan::ScanOptions::concat_dims
    pub fn dim_names(&self) -> Vec<String> {
        self.dims.iter().map(|d| d.name.clone()).collect()
    }
}

/// Combines single-source datasets: group by data variables, concatenate each group along
/// `options.dims`, merge the groups.
///
/// # Errors
/// [`CombineError`] naming the variable and the file(s) that do not fit, or what is missing from the
/// hypercube.
pub fn combine(files: Vec<VirtualDataset>, options: &CombineOptions) -> Result<VirtualDataset, CombineError> {
    if files.is_empty() {
        return Err(CombineError::NoFiles);
    }
    if options.dims.is_empty() {
        return Err(CombineError::Options("no concatenation dimension given".into()));
    }
    for (i, d) in options.dims.iter().enumerate() {
        if options.dims[..i].iter().any(|e| e.name == d.name) {
            return Err(CombineError::Options(format!("dimension {:?} given twice", d.name)));
        }
    }
    merge::combine_all(files, options)
}

/// The source location of a single-file dataset.
pub(crate) fn location(f: &VirtualDataset) -> String {
    f.sources.get(0).map(|s| s.location.clone()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn concat_dimensions_parse() {
        assert_eq!("time".parse::<ConcatDim>().unwrap(), ConcatDim::existing("time"));
        let member: ConcatDim = "member=attr:variant_label".parse().unwrap();
        assert_eq!(member.key, DimKey::Attribute("variant_label".into()));
        assert_eq!(member.key_text(), "attr:variant_label");
        let path: ConcatDim = r"member=path:_(r\d+i\d+p\d+f\d+)_".parse().unwrap();
        assert!(path.is_new() && matches!(path.key, DimKey::Path(_)));
        for bad in ["", "member=", "member=attr:", "member=path:_r\\d+_", "member=path:(", "member=glob:x", "a/b"] {
            assert!(bad.parse::<ConcatDim>().is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn options_are_checked() {
        let twice =
            CombineOptions { dims: vec![ConcatDim::existing("t"), ConcatDim::existing("t")], ..Default::default() };
        let file = VirtualDataset::default();
        assert!(matches!(combine(vec![file.clone()], &twice), Err(CombineError::Options(_))));
        assert!(matches!(combine(vec![file], &CombineOptions::default()), Err(CombineError::Options(_))));
        assert!(matches!(combine(Vec::new(), &CombineOptions::along("t")), Err(CombineError::NoFiles)));
    }
}
