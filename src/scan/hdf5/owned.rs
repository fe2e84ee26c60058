//! Variables a reference cannot name, stored by the store instead: variable-length strings (their
//! bytes live in the global heap, scattered, not in chunks), object references (file addresses,
//! stored as the paths of the objects they point at, as h5py's `f[ref].name` gives them), and the
//! names of enum values.
//!
//! Strings are read at scan time and written as one store-owned chunk per file: Zarr v3 `string`
//! with the `vlen-utf8` codec, which zarr-python and xarray read as strings. Positions past the
//! HDF5 extent (a variable shorter than its unlimited dimension) hold the empty string, the netCDF
//! default fill of `string`.

use hdf5_reader::{Dataset, Datatype};
use serde_json::Value;

use super::attributes::numbers;
use super::structure::H5Variable;
use crate::codec::CodecChain;
use crate::grid::ChunkGrid;
use crate::metadata::{ArrayNotes, Attributes};
use crate::ndcopy::{ravel, unravel};

/// Why a variable's strings cannot be stored.
#[derive(Debug, thiserror::Error)]
pub(super) enum OwnedError {
    /// More strings than one variable may hold.
    #[error("more than {MAX_STRINGS} strings")]
    TooMany,
    /// The HDF5 extent is larger than the netCDF shape.
    #[error("HDF5 extent {stored:?} does not fit netCDF shape {shape:?}")]
    Extent {
        /// The HDF5 extent.
        stored: Vec<u64>,
        /// The netCDF shape.
        shape: Vec<u64>,
    },
    /// No chunk grid for the shape.
    #[error("{0}")]
    Grid(#[source] crate::grid::GridError),
    /// The strings could not be read.
    #[error("{0}")]
    Read(#[from] StringsError),
    /// Another number of strings than the extent holds.
    #[error("{read} strings read for HDF5 extent {stored:?}")]
    Count {
        /// Strings read.
        read: usize,
        /// The HDF5 extent.
        stored: Vec<u64>,
    },
    /// More bytes of text than one variable may hold.
    #[error("{0} bytes of strings, more than {MAX_STRING_BYTES}")]
    TooLarge(usize),
    /// The strings could not be encoded.
    #[error("{0}")]
    Encode(#[source] crate::codec::CodecError),
}

/// Why the strings of a variable could not be read.
#[derive(Debug, thiserror::Error)]
pub(super) enum StringsError {
    /// Its variable-length strings.
    #[error("reading strings: {0}")]
    Strings(#[source] hdf5_reader::error::Error),
    /// Its object references.
    #[error("reading references: {0}")]
    References(#[source] hdf5_reader::error::Error),
    /// Its object references do not name objects.
    #[error("{0}")]
    Resolve(#[from] super::structure::ReferenceError),
}

/// Why an enum's members give no flags.
#[derive(Debug, thiserror::Error)]
pub(super) enum EnumError {
    /// A member's value does not decode.
    #[error("{0}")]
    Value(#[from] super::attributes::AttributeError),
    /// A member decodes to no value.
    #[error("enum member without a value")]
    NoValue,
}

/// Most strings one variable may hold (as the reader's limit for `string` arrays).
pub(super) const MAX_STRINGS: u64 = crate::metadata::MAX_STRING_ELEMENTS;
/// Most bytes of text one variable may hold.
pub(super) const MAX_STRING_BYTES: usize = 256 << 20;

/// The grid, codecs and encoded single chunk (`None` for an empty array, which has no chunk) of a
/// `string` array holding the strings `read` gives for variable `var` of netCDF shape `shape` (its
/// variable-length strings, or the paths its object references name), in the order of its HDF5
/// extent; the error says why it cannot be stored.
pub(super) fn string_array(
    var: &H5Variable,
    shape: &[u64],
    read: impl FnOnce(&Dataset) -> Result<Vec<String>, StringsError>,
) -> Result<(ChunkGrid, CodecChain, Option<Vec<u8>>), OwnedError> {
    let stored = var.dataset.shape().to_vec();
    let count = |s: &[u64]| s.iter().try_fold(1u64, |n, &d| n.checked_mul(d)).filter(|&n| n <= MAX_STRINGS);
    let (Some(total), Some(_)) = (count(shape), count(&stored)) else {
        return Err(OwnedError::TooMany);
    };
    if stored.len() != shape.len() || stored.iter().zip(shape).any(|(s, n)| s > n) {
        return Err(OwnedError::Extent { stored, shape: shape.to_vec() });
    }
    let chunk: Vec<u64> = shape.iter().map(|&n| n.max(1)).collect();
    let grid = ChunkGrid::regular(shape, &chunk).map_err(OwnedError::Grid)?;
    let codecs = CodecChain::vlen_utf8();
    if total == 0 {
        return Ok((grid, codecs, None));
    }
    let read = read(&var.dataset)?;
    if read.len() as u64 != count(&stored).unwrap_or(0) {
        return Err(OwnedError::Count { read: read.len(), stored });
    }
    let bytes: usize = read.iter().map(String::len).sum();
    if bytes > MAX_STRING_BYTES {
        return Err(OwnedError::TooLarge(bytes));
    }
    let strings = if stored == shape {
        read
    } else {
        let mut all = vec![String::new(); total as usize];
        for (i, text) in (0u64..).zip(read) {
            all[ravel(&unravel(i, &stored), shape) as usize] = text;
        }
        all
    };
    let encoded = codecs.encode_strings(&strings).map_err(OwnedError::Encode)?;
    Ok((grid, codecs, Some(encoded)))
}

/// For an enum variable, its members as CF flags: `flag_values` (the integers) and `flag_meanings`
/// (the names, blank-separated, blanks inside a name replaced by `_`), and the members themselves
/// (names as in the file) in `notes`, from which vzarr's xarray engine shows the enum as xarray's
/// netCDF4 engine does instead of the flags. Attributes of those names the variable already has are
/// kept (and no note is made). Nothing for other types, nor for h5py's booleans (Zarr `bool`).
pub(super) fn add_enum_flags(
    datatype: &Datatype,
    attributes: &mut Attributes,
    notes: &mut ArrayNotes,
) -> Result<(), EnumError> {
    let Datatype::Enum { base, members } = datatype else { return Ok(()) };
    if matches!(**base, Datatype::FixedPoint { size: 1, .. }) && super::attributes::is_h5py_bool(base, members) {
        return Ok(()); // a Zarr `bool` (`layout::element_type`): no flags
    }
    if attributes.contains_key("flag_values") || attributes.contains_key("flag_meanings") {
        return Ok(());
    }
    let mut values = Vec::with_capacity(members.len());
    for member in members {
        let mut value = numbers(base, &member.value, 1)?;
        values.push(value.pop().ok_or(EnumError::NoValue)?);
    }
    let names: Vec<String> = members.iter().map(|m| m.name.split_whitespace().collect::<Vec<_>>().join("_")).collect();
    notes.enum_members = Some(members.iter().map(|m| m.name.clone()).zip(values.iter().cloned()).collect());
    attributes.insert("flag_values".into(), Value::Array(values));
    attributes.insert("flag_meanings".into(), Value::from(names.join(" ")));
    Ok(())
}
