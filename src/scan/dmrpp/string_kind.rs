//! What a sidecar leaves out of a `String` variable and only the data file's datatype says (input:
//! the dataset's HDF5 datatype; output: the string's kind, or a structure's variable-length members):
//! - BES writes fixed-length and variable-length scalars alike (`<dmrpp:chunks
//!   fillValue="unsupported-string"/>` and `<dmrpp:compact>` with the text);
//! - older sidecars give no length for a fixed-length string never written (no chunk listed);
//! - `dmrpp:specialstructuredata` holds a structure's string members as text, fixed-length or not.

use hdf5_reader::{Datatype, StringSize, VarLenKind};

/// The kind of an HDF5 string datatype.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum StringKind {
    /// Fixed-length strings of this many bytes.
    Fixed(u32),
    /// Variable-length strings.
    Variable,
}

/// The string kind of `datatype`, if it is a string.
pub(super) fn string_kind(datatype: &Datatype) -> Option<StringKind> {
    match datatype {
        Datatype::VarLen { kind: VarLenKind::String, .. } => Some(StringKind::Variable),
        Datatype::String { size: StringSize::Fixed(n), .. } => Some(*n).filter(|&n| n > 0).map(StringKind::Fixed),
        Datatype::String { .. } => Some(StringKind::Variable),
        _ => None,
    }
}

/// The names of the members of compound `datatype` that hold variable-length strings (none for
/// another datatype).
pub(super) fn variable_length_members(datatype: &Datatype) -> Vec<String> {
    let Datatype::Compound { fields, .. } = datatype else { return Vec::new() };
    let variable = fields.iter().filter(|f| string_kind(&f.datatype) == Some(StringKind::Variable));
    variable.map(|f| f.name.clone()).collect()
}
