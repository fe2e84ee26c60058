//! What a sidecar leaves out of a `String` variable and only the data file's datatype says (input:
//! the data file's source id and the dataset's HDF5 path; output: the string's kind):
//! - BES writes fixed-length and variable-length scalars alike (`<dmrpp:chunks
//!   fillValue="unsupported-string"/>` and `<dmrpp:compact>` with the text);
//! - older sidecars give no length for a fixed-length string never written (no chunk listed);
//! - `dmrpp:specialstructuredata` holds a structure's string members as text, fixed-length or not.

use std::sync::Arc;

use hdf5_reader::{Datatype, Hdf5File, OpenOptions, StringSize, VarLenKind};

use super::files::{Files, FilesError};
use crate::scan::hdf5::{RangeStorage, MAX_READ_BYTES};

/// The kind of an HDF5 string dataset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum StringKind {
    /// Fixed-length strings of this many bytes.
    Fixed(u32),
    /// Variable-length strings.
    Variable,
}

/// The datatype of the dataset at `path` of source `source`; None when the data file is not an
/// HDF5 file or has no such dataset.
fn datatype(files: &Files<'_>, source: u32, path: &str) -> Result<Option<Datatype>, FilesError> {
    let bytes = files.byte_source(source)?;
    let options = OpenOptions::default().with_max_read_bytes(MAX_READ_BYTES);
    let Ok(file) = Hdf5File::from_storage_with_options(Arc::new(RangeStorage(bytes)), options) else {
        return Ok(None);
    };
    Ok(file.dataset(path).ok().map(|dataset| dataset.dtype().clone()))
}

/// The string kind of the dataset at `path` of source `source`; None when the data file is not an
/// HDF5 file (HDF4 has no such strings), has no such dataset, or it holds no strings.
pub(super) fn string_kind(files: &Files<'_>, source: u32, path: &str) -> Result<Option<StringKind>, FilesError> {
    Ok(datatype(files, source, path)?.as_ref().and_then(kind_of))
}

/// The names of the members of the compound dataset at `path` of source `source` that hold
/// variable-length strings (none when the data file does not say).
pub(super) fn variable_length_members(files: &Files<'_>, source: u32, path: &str) -> Result<Vec<String>, FilesError> {
    let Some(Datatype::Compound { fields, .. }) = datatype(files, source, path)? else { return Ok(Vec::new()) };
    let variable = fields.iter().filter(|f| kind_of(&f.datatype) == Some(StringKind::Variable));
    Ok(variable.map(|f| f.name.clone()).collect())
}

/// The string kind of `datatype`, if it is a string.
fn kind_of(datatype: &Datatype) -> Option<StringKind> {
    match datatype {
        Datatype::VarLen { kind: VarLenKind::String, .. } => Some(StringKind::Variable),
        Datatype::String { size: StringSize::Fixed(n), .. } => Some(*n).filter(|&n| n > 0).map(StringKind::Fixed),
        Datatype::String { .. } => Some(StringKind::Variable),
        _ => None,
    }
}
