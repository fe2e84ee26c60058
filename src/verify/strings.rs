//! Verifying `string` arrays (netCDF-4 variable-length strings the store holds itself): every file's
//! strings, read by libnetcdf, against the store's strings for that file's box.

use super::{box_selection, oracle_error, ArrayVerdict, Layout, Oracle};
use crate::grid::Selection;
use crate::read::{ArrayReader, ReadError, Store};

/// Compares every string of `array` with its source files' strings (only source `only`'s, when given).
pub(super) async fn verify_strings(
    store: &Store,
    array: &ArrayReader,
    layout: &Layout,
    (files, only): (&mut Oracle, Option<u32>),
    verdict: &mut ArrayVerdict,
) -> Result<(), ReadError> {
    let path = array.path().to_string();
    let shape = array.shape();
    let names = array.metadata().dimension_names.clone().unwrap_or_default();
    let dims = &layout.dims;
    let lead = names.iter().take_while(|n| dims.iter().any(|d| d.name == **n && d.key != "coordinate")).count();
    let concatenated = names.iter().any(|n| dims.iter().any(|d| d.name == *n));
    for b in layout.holders(&path, concatenated, only) {
        let location = store.sources().get(b.source).map(|f| f.location.clone()).unwrap_or_default();
        let (select, _) = box_selection(&shape, &names, dims, b, lead);
        let ours = array.read_strings(&Selection(select)).await?;
        let theirs = files.read_strings(&location, &path).map_err(|e| oracle_error(&location, &path, e))?;
        if ours.len() != theirs.len() {
            verdict.error = Some(format!("store gave {} strings, source {}", ours.len(), theirs.len()));
            return Ok(());
        }
        for (i, (a, b)) in ours.iter().zip(&theirs).enumerate() {
            if a != b {
                verdict.mismatches += 1;
                verdict.first_mismatch.get_or_insert_with(|| format!("string {i} of {location}: {a:?} != {b:?}"));
            }
        }
        verdict.elements += ours.len() as u64;
    }
    Ok(())
}
