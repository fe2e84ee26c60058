//! Attribute rules: attributes that change the meaning of the numbers must agree across files
//! (issue 14, item 9), and global attributes that differ are dropped, never mixed.

use super::CombineError;
use crate::dataset::VirtualDataset;
use crate::metadata::Attributes;

/// Attributes whose difference between files changes what the stored numbers mean.
pub(crate) const MEANING: [&str; 6] =
    ["scale_factor", "add_offset", "units", "calendar", "_FillValue", "missing_value"];

/// Checks that every array of `arrays` (one variable, one per file, with the file's location) has
/// the same [`MEANING`] attributes as the first. `time_like` skips `units` and `calendar` (a
/// concatenation coordinate or its bounds, whose units are re-encoded and calendars checked).
pub(crate) fn check_meaning(
    variable: &str,
    arrays: &[(&Attributes, &str)],
    time_like: bool,
) -> Result<(), CombineError> {
    let Some(((first, first_location), rest)) = arrays.split_first() else { return Ok(()) };
    for (attributes, location) in rest {
        for name in MEANING {
            if time_like && (name == "units" || name == "calendar") {
                continue;
            }
            let (a, b) = (first.get(name), attributes.get(name));
            if a != b {
                let show = |v: Option<&serde_json::Value>| v.map_or_else(|| "absent".to_string(), ToString::to_string);
                return Err(CombineError::Attribute {
                    file: location.to_string(),
                    variable: variable.to_string(),
                    attribute: name.to_string(),
                    detail: format!("is {} here but {} in {first_location}", show(b), show(a)),
                });
            }
        }
    }
    Ok(())
}

/// The root attributes of the combined dataset: those equal in every file (or all of the first file's
/// with `keep_first`), and the names dropped because they differ.
pub(crate) fn global_attributes(files: &[&VirtualDataset], keep_first: bool) -> (Attributes, Vec<String>) {
    let roots: Vec<Option<&Attributes>> =
        files.iter().map(|f| f.groups.iter().find(|g| g.path.is_empty()).map(|g| &g.attributes)).collect();
    let first = roots.first().copied().flatten().cloned().unwrap_or_default();
    if keep_first {
        return (first, Vec::new());
    }
    let mut kept = Attributes::new();
    let mut dropped = Vec::new();
    for (name, value) in first {
        if roots.iter().skip(1).all(|a| a.and_then(|a| a.get(&name)) == Some(&value)) {
            kept.insert(name, value);
        } else {
            dropped.push(name);
        }
    }
    (kept, dropped)
}
