//! Verifying the coordinate of a new dimension: each key in the store against the key taken again
//! from a source file at that position (its global attribute, read by the oracle, or its file name).

use super::{ArrayVerdict, Layout, Oracle};
use crate::combine::{derive_key, DimKey};
use crate::dataset::{ConcatDimInfo, SourceBox};
use crate::grid::{DimSelection, Selection};
use crate::read::{ArrayReader, ReadError, ReadOptions, Store};

/// Compares the keys of dimension `dim` (number `k` of the concatenation dimensions); with `only`, the
/// keys of that source's positions alone. Global attributes are read from the file `files` opens for
/// the source (its local copy for a remote one).
pub(crate) async fn verify_keys(
    store: &Store,
    array: &ArrayReader,
    (dim, k): (&ConcatDimInfo, usize),
    layout: &Layout,
    (files, only): (&mut Oracle, Option<u32>),
    verdict: &mut ArrayVerdict,
) -> Result<(), ReadError> {
    let key = match (dim.key.strip_prefix("attr:"), dim.key.strip_prefix("path:")) {
        (Some(a), _) => DimKey::Attribute(a.to_string()),
        (_, Some(r)) => DimKey::Path(r.to_string()),
        _ => DimKey::Coordinate,
    };
    let at = |b: &SourceBox| b.ranges.get(k).map(|r| r.0);
    // The keys compared, each with its position and its source's box: every key, or only source
    // `only`'s (read one by one: a remote verify visits each source once).
    let mut keys: Vec<(u64, String, Option<&SourceBox>)> = Vec::new();
    match only {
        None => {
            let mut by_position = std::collections::HashMap::new();
            for b in &layout.boxes {
                if let Some(i) = at(b) {
                    by_position.entry(i).or_insert(b);
                }
            }
            let ours = read_keys(array, &Selection::all(&array.shape())).await?;
            keys.extend((0u64..).zip(ours).map(|(i, value)| (i, value, by_position.get(&i).copied())));
        }
        Some(id) => {
            let len = array.shape().first().copied().unwrap_or(0);
            for b in layout.by_source.get(&id).into_iter().flatten().map(|&i| &layout.boxes[i]) {
                let Some(i) = at(b).filter(|&i| i < len) else { continue };
                let one = Selection(vec![DimSelection::Range { start: i, stop: i + 1, step: 1 }]);
                keys.extend(read_keys(array, &one).await?.into_iter().map(|value| (i, value, Some(b))));
            }
        }
    }
    for (i, value, b) in keys {
        let Some(b) = b else {
            verdict.error.get_or_insert(format!("{} index {i}: no source file at this position", dim.name));
            continue;
        };
        let location = store.sources().get(b.source).map(|f| f.location.clone()).unwrap_or_default();
        let oracle = std::cell::RefCell::new(&mut *files);
        let attribute = |name: &str| oracle.borrow_mut().global_attribute(&location, name);
        let theirs = derive_key(&key, &location, &attribute);
        verdict.elements += 1;
        let same = match &theirs {
            Ok(t) => *t == value || matches!((t.parse::<f64>(), value.parse::<f64>()), (Ok(x), Ok(y)) if x == y),
            Err(_) => false,
        };
        if !same {
            verdict.mismatches += 1;
            if verdict.first_mismatch.is_none() {
                let theirs = theirs.unwrap_or_else(|e| format!("error: {e}"));
                verdict.first_mismatch =
                    Some(format!("{} index {i}: store {value:?}, {location}: {theirs:?}", dim.name));
            }
        }
    }
    Ok(())
}

/// The keys of `selection` of a one-dimensional key array, as text.
async fn read_keys(array: &ArrayReader, selection: &Selection) -> Result<Vec<String>, ReadError> {
    if array.metadata().data_type == crate::metadata::DataType::String {
        return array.read_strings(selection).await;
    }
    Ok(array.read(selection, &ReadOptions::default()).await?.to_f64_vec().iter().map(f64::to_string).collect())
}
