//! The native `*.vzarr` writer: Zarr v3 metadata plus a binary chunk manifest per array.
//!
//! Atomic by construction: everything is written into a hidden sibling directory and published in
//! one step by `store/publish` (flushed once with `syncfs`, then `renameat2`). An error or a crash
//! leaves at most that hidden directory (removed by the next writer), never a store that looks
//! complete; `--overwrite` exchanges the new store with the old one atomically.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;

use super::layout::check_node_path;
use super::layout::{MANIFEST_FILE, OWNED_FILE, SOURCES_FILE};
use crate::dataset::{OwnedBytesError, VirtualArray, VirtualDataset};
use crate::manifest::binding::{metadata_digest, sha256, Binding, OwnedSum};
use crate::manifest::{ChunkEntry, ManifestHeader, ManifestWriter};
use crate::metadata::{group_json, noted_group_json, Attributes};
use crate::store::{io_error, WriteError, WriteOptions, Writer, STORE_INFO_FILE};
use crate::store::{ArrayInfo, StoreInfo};
use crate::store::{OutputKind, Staged};

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
        for node in dataset.groups.iter().map(|g| &g.path).chain(dataset.arrays.iter().map(|a| &a.path)) {
            if !node.is_empty() {
                check_node_path(node).map_err(|reason| WriteError::BadName {
                    path: destination.to_path_buf(),
                    node: node.clone(),
                    reason,
                })?;
            }
        }
        let inputs = crate::store::local_sources(&dataset.sources);
        let staged = Staged::begin(destination, OutputKind::VzarrStore, options.overwrite, &inputs)?;
        let info = write_tree(dataset, staged.path())?;
        staged.publish()?;
        Ok(info)
    }
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
        write_json(&dir.join("zarr.json"), &noted_group_json(&group.attributes, &group.attribute_encodings))?;
    }
    let sources = dataset.sources.encode();
    let sources_digest = sha256(&sources);
    let mut arrays = Vec::with_capacity(dataset.arrays.len());
    for array in &dataset.arrays {
        arrays.push(write_array(array, &root.join(&array.path), root, sources_digest)?);
    }
    write_file(&root.join(SOURCES_FILE), &sources)?;
    let info = StoreInfo::of(dataset, "vzarr", arrays);
    let doc = serde_json::to_value(&info).map_err(|e| io_error(root, "encoding vzarr.json")(e.into()))?;
    write_json(&root.join(STORE_INFO_FILE), &doc)?;
    Ok(info)
}

fn write_array(
    array: &VirtualArray,
    dir: &Path,
    root: &Path,
    sources_digest: [u8; 32],
) -> Result<ArrayInfo, WriteError> {
    std::fs::create_dir_all(dir).map_err(io_error(dir, "creating directory"))?;
    let doc = array.metadata.to_json();
    write_json(&dir.join("zarr.json"), &doc)?;
    let binding = Binding::with_sums(metadata_digest(&doc), sources_digest, owned_sums(array, root)?);
    write_manifest(array, &dir.join(MANIFEST_FILE), root, &binding)?;
    if !array.chunks.owned.is_empty() {
        write_owned(array, &dir.join(OWNED_FILE), root)?;
    }
    Ok(ArrayInfo::of(array))
}

/// The CRC-32C of every owned chunk inside the owned bytes (ranges outside are left out, as
/// [`Binding::new`] leaves them), read one chunk at a time.
fn owned_sums(array: &VirtualArray, root: &Path) -> Result<Vec<OwnedSum>, WriteError> {
    let mut sums = Vec::new();
    for entry in &array.chunks {
        let ChunkEntry::Owned { offset, length } = entry else { continue };
        let bytes = match array.chunks.owned_chunk(offset, length) {
            Ok(bytes) => bytes,
            Err(OwnedBytesError::OutOfRange { .. }) => continue,
            Err(source) => return Err(owned_error(array, root)(source)),
        };
        sums.push(OwnedSum { offset, length, crc32c: crc32c::crc32c(&bytes) });
    }
    Ok(sums)
}

/// Writes `owned.bin`, streaming the owned bytes (spilled ones through a small buffer).
fn write_owned(array: &VirtualArray, path: &Path, root: &Path) -> Result<(), WriteError> {
    let file = File::create(path).map_err(io_error(path, "creating file"))?;
    let mut out = BufWriter::new(file);
    array.chunks.owned.copy_to(&mut out).map_err(|e| match e {
        OwnedBytesError::Write { source } => io_error(path, "writing file")(source),
        other => owned_error(array, root)(other),
    })?;
    out.flush().map_err(io_error(path, "writing file"))
}

fn owned_error<'a>(array: &'a VirtualArray, root: &'a Path) -> impl Fn(OwnedBytesError) -> WriteError + 'a {
    move |source| WriteError::Owned { path: root.to_path_buf(), array: array.path.clone(), source: Box::new(source) }
}

/// Writes `manifest.bin`: header, blocks, index, then the binding trailer (store format 2).
fn write_manifest(
    array: &VirtualArray,
    path: &Path,
    root: &Path,
    binding: &Binding,
) -> Result<ManifestHeader, WriteError> {
    let manifest_error = |source| WriteError::Manifest { path: root.to_path_buf(), array: array.path.clone(), source };
    let file = File::create(path).map_err(io_error(path, "creating manifest"))?;
    let mut writer = ManifestWriter::new(BufWriter::new(file), array.chunks.len() as u64).map_err(manifest_error)?;
    for entry in &array.chunks {
        writer.push(entry).map_err(manifest_error)?;
    }
    let (out, header) = writer.finish().map_err(manifest_error)?;
    let mut file = out.into_inner().map_err(|e| io_error(path, "writing manifest")(e.into_error()))?;
    file.write_all(&binding.encode()).map_err(io_error(path, "writing manifest binding"))?;
    file.write_all_at(&header.to_bytes(), 0).map_err(io_error(path, "writing manifest header"))?;
    Ok(header)
}

fn write_json(path: &Path, doc: &serde_json::Value) -> Result<(), WriteError> {
    write_file(path, crate::metadata::to_text(doc).as_bytes())
}

/// Writes a file of the staging tree (made durable once, when the tree is published).
pub(crate) fn write_file(path: &Path, bytes: &[u8]) -> Result<(), WriteError> {
    let mut file = File::create(path).map_err(io_error(path, "creating file"))?;
    file.write_all(bytes).map_err(io_error(path, "writing file"))
}
