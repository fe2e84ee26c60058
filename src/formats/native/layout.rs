//! The native store's layout: the file names below a `*.vzarr` directory, shared by its writer
//! (`formats/native/write`) and its reader (`formats/native/read`); and [`check_node_path`], the
//! rule for node names that every writer applies (a name that is a file of this layout is refused,
//! so that any dataset can be written as a native store too).
//!
//! ```text
//! tas.vzarr/
//! ├── zarr.json            root group (Zarr v3)
//! ├── vzarr.json           StoreInfo: format version, arrays, provenance, warnings
//! ├── sources.bin          SourceTable: every source file once, with its fingerprint
//! ├── tas/zarr.json        array metadata (Zarr v3; rectilinear or regular grid)
//! ├── tas/manifest.bin     chunk manifest (docs/design/001-manifest-format.md)
//! ├── tas/owned.bin        store-owned chunk bytes, when any
//! └── grp/zarr.json        a group; its arrays below it
//! ```

use crate::store::STORE_INFO_FILE;

/// Source table file at the root.
pub(crate) const SOURCES_FILE: &str = "sources.bin";
/// Per-array manifest file.
pub(crate) const MANIFEST_FILE: &str = "manifest.bin";
/// Per-array owned-bytes file.
pub(crate) const OWNED_FILE: &str = "owned.bin";

/// The file `file` of node `path` (`""`: the root) inside a native store: `tas/zarr.json`.
pub(crate) fn node_file(path: &str, file: &str) -> String {
    if path.is_empty() {
        file.to_string()
    } else {
        format!("{path}/{file}")
    }
}

/// Every path segment of a node, checked to be a valid directory name that does not collide with
/// vzarr's own files. Arrays are leaves, so only a group's entries can collide: `zarr.json` in any
/// group, and `vzarr.json` / `sources.bin` at the root. Names such as `c`, `manifest.bin`, ones with
/// a backslash or non-ASCII letters are fine (Zarr v3 allows them, no file of the store shares their
/// place, and the reader names them raw). Control characters cannot be file names here.
pub(crate) fn check_node_path(path: &str) -> Result<(), String> {
    for (depth, segment) in path.split('/').enumerate() {
        if segment.is_empty() || segment == "." || segment == ".." {
            return Err(format!("invalid path segment {segment:?}"));
        }
        if segment.chars().any(|c| c.is_ascii_control()) {
            return Err("name contains a control character, which cannot be a file name".into());
        }
        let root_file = depth == 0 && [STORE_INFO_FILE, SOURCES_FILE].contains(&segment);
        if segment == "zarr.json" || root_file {
            return Err(format!("name {segment:?} collides with a file of the store"));
        }
    }
    Ok(())
}
