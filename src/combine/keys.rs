//! Keys of new dimensions: each file's position along a dimension it does not have, taken from a
//! global attribute or from its file name, and the sorted list of distinct keys.

use std::cmp::Ordering;

use serde_json::Value;

use super::{location, order::natural_cmp, CombineError, ConcatDim, DimKey};
use crate::dataset::VirtualDataset;

/// One new dimension: its sorted distinct keys and each file's index among them.
#[derive(Debug, Clone)]
pub(crate) struct NewAxis {
    /// Sorted distinct keys (as text).
    pub(crate) keys: Vec<String>,
    /// True when every key parses as a finite number (the coordinate is then numeric).
    pub(crate) numeric: bool,
    /// Per file (in the order given): index into `keys`.
    pub(crate) index: Vec<usize>,
}

/// The key of one file along a new dimension. `attribute(name)` returns a global attribute of the
/// file. Numbers in attributes become their decimal text; a one-element array is its element.
///
/// # Errors
/// A message when the attribute is absent or not a string or number, when the regular expression is
/// invalid, or when it does not match the file name.
pub(crate) fn derive_key(
    key: &DimKey,
    location: &str,
    attribute: &dyn Fn(&str) -> Option<Value>,
) -> Result<String, String> {
    match key {
        DimKey::Coordinate => Err("an existing dimension has no key".into()),
        DimKey::Attribute(name) => match attribute(name) {
            None => Err(format!("no global attribute {name:?}")),
            Some(value) => attribute_text(&value)
                .ok_or_else(|| format!("global attribute {name:?} is {value}, not a string or number")),
        },
        DimKey::Path(re) => {
            let re = regex::Regex::new(re).map_err(|e| format!("invalid regular expression: {e}"))?;
            let name =
                std::path::Path::new(location).file_name().map_or_else(|| location.into(), |n| n.to_string_lossy());
            let captures =
                re.captures(&name).ok_or_else(|| format!("file name {name:?} does not match {:?}", re.as_str()))?;
            captures
                .get(1)
                .map(|m| m.as_str().to_string())
                .ok_or_else(|| format!("the first capture group of {:?} matched nothing in {name:?}", re.as_str()))
        }
    }
}

fn attribute_text(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.trim_end_matches('\0').to_string()),
        Value::Number(n) => Some(n.to_string()),
        Value::Array(items) if items.len() == 1 => attribute_text(&items[0]),
        _ => None,
    }
}

/// The keys of every file along `dim` (a new dimension), sorted.
pub(crate) fn new_axis(files: &[VirtualDataset], dim: &ConcatDim) -> Result<NewAxis, CombineError> {
    let mut per_file = Vec::with_capacity(files.len());
    for f in files {
        let root = f.groups.iter().find(|g| g.path.is_empty());
        let attribute = |name: &str| root.and_then(|g| g.attributes.get(name).cloned());
        let key = derive_key(&dim.key, &location(f), &attribute).map_err(|problem| CombineError::Key {
            file: location(f),
            dim: dim.name.clone(),
            problem,
        })?;
        per_file.push(key);
    }
    let numeric = per_file.iter().all(|k| parse_number(k).is_some());
    let mut keys = per_file.clone();
    keys.sort_by(|a, b| compare_keys(a, b, numeric));
    keys.dedup_by(|a, b| compare_keys(a, b, numeric) == Ordering::Equal);
    let index = per_file.iter().map(|k| keys.binary_search_by(|x| compare_keys(x, k, numeric)).unwrap_or(0)).collect();
    Ok(NewAxis { keys, numeric, index })
}

/// A finite number, when the key is one.
pub(crate) fn parse_number(key: &str) -> Option<f64> {
    key.trim().parse::<f64>().ok().filter(|v| v.is_finite())
}

fn compare_keys(a: &str, b: &str, numeric: bool) -> Ordering {
    match (numeric, parse_number(a), parse_number(b)) {
        (true, Some(x), Some(y)) => x.total_cmp(&y),
        _ => natural_cmp(a, b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_from_attributes_and_paths() {
        let attrs = |name: &str| (name == "variant_label").then(|| Value::from("r2i1p1f1"));
        let attr = DimKey::Attribute("variant_label".into());
        assert_eq!(derive_key(&attr, "/a/x.nc", &attrs).unwrap(), "r2i1p1f1");
        assert!(derive_key(&DimKey::Attribute("other".into()), "/a/x.nc", &attrs).unwrap_err().contains("other"));
        let path = DimKey::Path(r"_(r\d+i\d+p\d+f\d+)_".into());
        let none = |_: &str| None;
        assert_eq!(derive_key(&path, "/r9i9p9f9_/tas_day_M_r10i1p1f1_gn.nc", &none).unwrap(), "r10i1p1f1");
        assert!(derive_key(&path, "/a/tas.nc", &none).unwrap_err().contains("does not match"));
        let number = |_: &str| Some(serde_json::json!([3]));
        assert_eq!(derive_key(&attr, "x.nc", &number).unwrap(), "3");
    }

    #[test]
    fn keys_sort_naturally_or_numerically() {
        let mut v = vec!["r10i1p1f1", "r2i1p1f1", "r1i1p1f1"];
        v.sort_by(|a, b| compare_keys(a, b, false));
        assert_eq!(v, ["r1i1p1f1", "r2i1p1f1", "r10i1p1f1"]);
        let mut n = vec!["10", "9.5", "-1"];
        n.sort_by(|a, b| compare_keys(a, b, true));
        assert_eq!(n, ["-1", "9.5", "10"]);
    }
}
