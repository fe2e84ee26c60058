//! What a sidecar leaves out of a `String` variable and only the data file's datatype says (input:
//! the data file's source id and the dataset's HDF5 path; output: the string's kind):
//! - BES writes fixed-length and variable-length scalars alike (`<dmrpp:chunks
//!   fillValue="unsupported-string"/>` and `<dmrpp:compact>` with the text);
//! - older sidecars give no length for a fixed-length string never written (no chunk listed).

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

/// The string kind of the dataset at `path` of source `source`; None when the data file is not an
/// HDF5 file (HDF4 has no such strings), has no such dataset, or it holds no strings.
pub(super) fn string_kind(files: &Files<'_>, source: u32, path: &str) -> Result<Option<StringKind>, FilesError> {
    let bytes = files.byte_source(source)?;
    let options = OpenOptions::default().with_max_read_bytes(MAX_READ_BYTES);
    let Ok(file) = Hdf5File::from_storage_with_options(Arc::new(RangeStorage(bytes)), options) else {
        return Ok(None);
    };
    let Ok(dataset) = file.dataset(path) else { return Ok(None) };
    Ok(match dataset.dtype() {
        Datatype::VarLen { kind: VarLenKind::String, .. } => Some(StringKind::Variable),
        Datatype::String { size: StringSize::Fixed(n), .. } => {
            u32::try_from(*n).ok().filter(|&n| n > 0).map(StringKind::Fixed)
        }
        Datatype::String { .. } => Some(StringKind::Variable),
        _ => None,
    })
}
