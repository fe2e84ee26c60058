//! The native `*.vzarr` writer: Zarr v3 metadata plus a binary chunk manifest per array.
//!
//! Atomic by construction: everything is written into a hidden sibling directory
//! (`.NAME.tmp-PID-NANOS`), flushed, and renamed into place in one step. An error or a crash leaves at
//! most that hidden directory, never a store that looks complete. When overwriting, the old store is
//! moved aside only after the new one is complete, then removed.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::layout::{check_node_path, ArrayInfo, StoreInfo};
use super::{
    WriteError, WriteOptions, Writer, MANIFEST_FILE, OWNED_FILE, SOURCES_FILE, STORE_FORMAT_VERSION, STORE_INFO_FILE,
};
use crate::dataset::{VirtualArray, VirtualDataset};
use crate::manifest::{ManifestHeader, ManifestWriter};
use crate::metadata::{group_json, Attributes};

/// Writes the native `*.vzarr` directory store.
#[derive(Debug, Clone, Copy, Default)]
pub struct NativeWriter;

impl Writer for NativeWriter {
    fn write(
        &self,
        dataset: &VirtualDataset,
        destination: &Path,
        options: &WriteOptions,
    ) -> Result<StoreInfo, WriteError> {
        super::export::check_destination(destination, options.overwrite)?;
        for node in dataset.groups.iter().map(|g| &g.path).chain(dataset.arrays.iter().map(|a| &a.path)) {
            if !node.is_empty() {
                check_node_path(node).map_err(|reason| WriteError::BadName {
                    path: destination.to_path_buf(),
                    node: node.clone(),
                    reason,
                })?;
            }
        }
        let staging = sibling(destination, "tmp");
        let result = write_tree(dataset, &staging).and_then(|info| {
            replace(&staging, destination)?;
            Ok(info)
        });
        if result.is_err() {
            let _ = std::fs::remove_dir_all(&staging);
        }
        result
    }
}

/// A hidden sibling of `path` unique to this process and moment.
pub(crate) fn sibling(path: &Path, tag: &str) -> PathBuf {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "store".into());
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    path.with_file_name(format!(".{name}.{tag}-{}-{nanos}", std::process::id()))
}

pub(crate) fn io_error(path: &Path, what: &str) -> impl FnOnce(std::io::Error) -> WriteError {
    let path = path.to_path_buf();
    let what = what.to_string();
    move |source| WriteError::Io { path, what, source }
}

/// Moves the finished `staging` tree to `destination`, replacing an old store only at the end.
pub(crate) fn replace(staging: &Path, destination: &Path) -> Result<(), WriteError> {
    if destination.exists() {
        let old = sibling(destination, "old");
        std::fs::rename(destination, &old).map_err(io_error(destination, "moving the old store aside"))?;
        if let Err(e) = std::fs::rename(staging, destination) {
            let _ = std::fs::rename(&old, destination);
            return Err(io_error(destination, "renaming the new store into place")(e));
        }
        let _ = std::fs::remove_dir_all(&old);
        return Ok(());
    }
    std::fs::rename(staging, destination).map_err(io_error(destination, "renaming the new store into place"))
}

fn write_tree(dataset: &VirtualDataset, root: &Path) -> Result<StoreInfo, WriteError> {
    std::fs::create_dir_all(root).map_err(io_error(root, "creating directory"))?;
    let has_root = dataset.groups.iter().any(|g| g.path.is_empty());
    if !has_root {
        write_json(&root.join("zarr.json"), &group_json(&Attributes::new()))?;
    }
    for group in &dataset.groups {
        let dir = root.join(&group.path);
        std::fs::create_dir_all(&dir).map_err(io_error(&dir, "creating directory"))?;
        write_json(&dir.join("zarr.json"), &group_json(&group.attributes))?;
    }
    let mut arrays = Vec::with_capacity(dataset.arrays.len());
    for array in &dataset.arrays {
        arrays.push(write_array(array, &root.join(&array.path), root)?);
    }
    write_file(&root.join(SOURCES_FILE), &dataset.sources.encode())?;
    let info = StoreInfo {
        format: "vzarr".into(),
        format_version: STORE_FORMAT_VERSION,
        generator: concat!("vzarr ", env!("CARGO_PKG_VERSION")).into(),
        sources: dataset.sources.len() as u64,
        groups: dataset.groups.iter().map(|g| g.path.clone()).collect(),
        arrays,
        provenance: dataset.provenance.clone(),
        warnings: dataset.warnings.clone(),
    };
    let doc = serde_json::to_value(&info).map_err(|e| io_error(root, "encoding vzarr.json")(e.into()))?;
    write_json(&root.join(STORE_INFO_FILE), &doc)?;
    sync_dir(root)?;
    Ok(info)
}

fn write_array(array: &VirtualArray, dir: &Path, root: &Path) -> Result<ArrayInfo, WriteError> {
    std::fs::create_dir_all(dir).map_err(io_error(dir, "creating directory"))?;
    write_json(&dir.join("zarr.json"), &array.metadata.to_json())?;
    write_manifest(array, &dir.join(MANIFEST_FILE), root)?;
    if !array.chunks.owned.is_empty() {
        write_file(&dir.join(OWNED_FILE), &array.chunks.owned)?;
    }
    Ok(ArrayInfo {
        path: array.path.clone(),
        chunks: array.chunks.entries.len() as u64,
        stats: array.chunks.stats(),
        rewritten_chunks: array.rewritten_chunks,
    })
}

fn write_manifest(array: &VirtualArray, path: &Path, root: &Path) -> Result<ManifestHeader, WriteError> {
    let manifest_error = |source| WriteError::Manifest { path: root.to_path_buf(), array: array.path.clone(), source };
    let file = File::create(path).map_err(io_error(path, "creating manifest"))?;
    let mut writer =
        ManifestWriter::new(BufWriter::new(file), array.chunks.entries.len() as u64).map_err(manifest_error)?;
    for entry in &array.chunks.entries {
        writer.push(*entry).map_err(manifest_error)?;
    }
    let (out, header) = writer.finish().map_err(manifest_error)?;
    let file = out.into_inner().map_err(|e| io_error(path, "writing manifest")(e.into_error()))?;
    file.write_all_at(&header.to_bytes(), 0).map_err(io_error(path, "writing manifest header"))?;
    file.sync_all().map_err(io_error(path, "flushing manifest"))?;
    Ok(header)
}

fn write_json(path: &Path, doc: &serde_json::Value) -> Result<(), WriteError> {
    let text = serde_json::to_string_pretty(doc).map_err(|e| io_error(path, "encoding JSON")(e.into()))?;
    write_file(path, text.as_bytes())
}

pub(crate) fn write_file(path: &Path, bytes: &[u8]) -> Result<(), WriteError> {
    let mut file = File::create(path).map_err(io_error(path, "creating file"))?;
    file.write_all(bytes).map_err(io_error(path, "writing file"))?;
    file.sync_all().map_err(io_error(path, "flushing file"))
}

pub(crate) fn sync_dir(dir: &Path) -> Result<(), WriteError> {
    File::open(dir).and_then(|d| d.sync_all()).map_err(io_error(dir, "flushing directory"))
}
