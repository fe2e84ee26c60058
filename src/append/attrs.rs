//! Root attributes and warnings of the result, as a fresh scan of every file gives them: global
//! attributes equal in every file (the stored root holds those of the stored files), or the first
//! file's with `--first-global-attributes`; the `history` line replaced; warnings of the new files
//! after the stored ones.

use super::{AppendOptions, Recorded, Scanned};
use crate::dataset::{GroupNode, ScanWarning, VirtualDataset};
use crate::metadata::Attributes;

/// The stored groups with the root's attributes recomputed over the new files.
pub(crate) fn groups(
    stored: &VirtualDataset,
    scanned: &Scanned,
    recorded: &Recorded,
    options: &AppendOptions,
) -> Vec<GroupNode> {
    let history_line = stored.provenance.recipe.as_ref().is_some_and(|r| r.history_line);
    let mut groups = stored.groups.clone();
    let Some(root) = groups.iter_mut().find(|g| g.path.is_empty()) else { return groups };
    let (stored_line, base) = split_history(&root.attributes, history_line);
    let mut kept = Attributes::new();
    for (name, value) in base {
        let everywhere = scanned.roots.iter().all(|(_, r)| r.as_ref().and_then(|r| r.get(&name)) == Some(&value));
        if recorded.combine.first_global_attributes || everywhere {
            kept.insert(name, value);
        }
    }
    if let Some(line) = options.history.clone().filter(|_| history_line).or(stored_line) {
        let history = match kept.get("history").and_then(|h| h.as_str()) {
            Some(old) if !old.is_empty() => format!("{line}\n{old}"),
            _ => line,
        };
        kept.insert("history".into(), history.into());
    }
    root.attributes = kept;
    groups
}

/// The stored line vzarr prepended to `history` (when it did) and the attributes without it.
fn split_history(attributes: &Attributes, history_line: bool) -> (Option<String>, Attributes) {
    if !history_line {
        return (None, attributes.clone());
    }
    let mut line = None;
    let mut base = Attributes::new();
    for (name, value) in attributes {
        match (name.as_str(), value.as_str()) {
            ("history", Some(text)) => {
                let (first, rest) = text.split_once('\n').map_or((text, None), |(a, b)| (a, Some(b)));
                line = Some(first.to_string());
                if let Some(rest) = rest {
                    base.insert(name.clone(), rest.into());
                }
            }
            _ => {
                base.insert(name.clone(), value.clone());
            }
        }
    }
    (line, base)
}

/// The stored warnings, then those of the new files, then the tail's own (variables left out).
pub(crate) fn warnings(stored: &VirtualDataset, tail: &VirtualDataset, scanned: &Scanned) -> Vec<ScanWarning> {
    let mut out = stored.warnings.clone();
    for w in scanned.warnings.iter().chain(&tail.warnings) {
        if !scanned.last.contains(&w.file) && !out.contains(w) {
            out.push(w.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attrs(pairs: &[(&str, &str)]) -> Attributes {
        pairs.iter().map(|(k, v)| ((*k).to_string(), serde_json::Value::from(*v))).collect()
    }

    #[test]
    fn the_stored_history_line_is_split_off_in_place() {
        let stored = attrs(&[("title", "t"), ("history", "123: vzarr\nmade by model"), ("source", "s")]);
        let (line, base) = split_history(&stored, true);
        assert_eq!(line.as_deref(), Some("123: vzarr"));
        assert_eq!(base, attrs(&[("title", "t"), ("history", "made by model"), ("source", "s")]));
        let (line, base) = split_history(&attrs(&[("history", "123: vzarr"), ("a", "b")]), true);
        assert_eq!((line.as_deref(), base), (Some("123: vzarr"), attrs(&[("a", "b")])));
        let (line, base) = split_history(&stored, false);
        assert_eq!((line, base), (None, stored));
    }
}
