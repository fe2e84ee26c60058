//! The coordinate of a concatenation dimension as every scanner records it: the one-dimensional
//! variable named after the dimension, its values (and its `bounds` variable's) as f64, its `units`
//! and `calendar`, taken from a file's arrays once they are scanned.

use crate::dataset::{ConcatCoordinate, VirtualArray};

/// The coordinate of `dim` among `arrays` (none when no variable `dim` along `dim` alone is there),
/// its values read by `values` (native-endian bytes of an array's elements).
///
/// # Errors
/// What `values` fails with.
pub(crate) fn concat_coordinate<E>(
    arrays: &[VirtualArray],
    dim: &str,
    mut values: impl FnMut(&VirtualArray) -> Result<Vec<u8>, E>,
) -> Result<Option<ConcatCoordinate>, E> {
    let names = |a: &VirtualArray| a.metadata.dimension_names.clone().unwrap_or_default();
    let Some(array) = arrays.iter().find(|a| a.path == dim && names(a) == [dim]) else { return Ok(None) };
    let text =
        |a: &VirtualArray, name: &str| a.metadata.attributes.get(name).and_then(|v| v.as_str()).map(str::to_string);
    let mut as_f64 = |a: &VirtualArray| values(a).map(|v| a.metadata.data_type.values_to_f64(&v));
    let bounds = match text(array, "bounds").and_then(|name| arrays.iter().find(|a| a.path == name)) {
        Some(b) => Some((b.path.clone(), as_f64(b)?.into())),
        None => None,
    };
    Ok(Some(ConcatCoordinate {
        dim: dim.to_string(),
        values: as_f64(array)?.into(),
        units: text(array, "units"),
        calendar: text(array, "calendar"),
        bounds,
    }))
}
