//! kerchunk Parquet references (kerchunk's `docs/source/spec.rst`, "Parquet references";
//! `kerchunk.df.refs_to_dataframe`): the layout fsspec's `LazyReferenceMapper` reads.
//!
//! ```text
//! out.parq/.zmetadata            {"metadata": {".zgroup": {...}, "tas/.zarray": {...}, "tas/.zattrs": {...}},
//!                                 "record_size": 100000, "vzarr": {"source_urls": [...], "provenance": ...}}
//! out.parq/tas/refs.0.parq       rows 0..100000 of tas's chunks (C order of chunk indices)
//! out.parq/tas/refs.1.parq       rows 100000..200000 (the last file padded with missing rows)
//! out.parq/grp/x/refs.0.parq     an array in a group
//! ```
//!
//! Zarr v2 metadata (`formats/kerchunk/zarr_v2/encode`): fsspec finds a chunk's row from its `.zarray`'s
//! `shape` and `chunks` and the key `i.j`, so an array whose grid is rectilinear has no Parquet form;
//! such an array is inlined when it is small (`formats/inline`: one `raw` chunk of its decoded values,
//! up to [`KerchunkParquetWriter::inline_threshold`]), else refused by name with the threshold
//! ([`WriteError::BadName`]), or left out with a warning when
//! [`KerchunkParquetWriter::skip_unsupported`] is set. Rows are `path`/`offset`/`size` for a chunk
//! in a source file, `raw` bytes for a store-owned chunk, all null for a missing one
//! (`formats/parquet/records`). The `vzarr` key of `.zmetadata` (ignored by fsspec) records
//! the sources by id, their containers, the provenance and warnings, as the kerchunk JSON header does.
//!
//! Streaming: one array at a time, one record of rows in memory. Atomic: the directory is staged
//! in a hidden sibling and published by `store/publish`; `.zmetadata` is written last.

use std::path::Path;

use parquet::data_type::ByteArray;
use serde_json::{json, Map, Value};

pub(crate) use super::records::{RecordFiles, Row};
use crate::formats::kerchunk::zarr_v2::encode as zarr_v2;

use crate::dataset::{Provenance, ScanWarning, VirtualArray, VirtualDataset};
use crate::formats::UrlPrefix;
use crate::manifest::ChunkEntry;
use crate::metadata::{ArrayMetadata, Attributes};
use crate::store::{io_error, ArrayInfo, StoreInfo, WriteError, WriteOptions, Writer};
use crate::store::{OutputKind, Staged};

/// Rows per reference file by default: 100,000, the default of kerchunk's `refs_to_dataframe` and
/// of VirtualiZarr's `to_kerchunk(format="parquet")` (fewer, larger files: 10^7 references are 100
/// files, not 1,000).
pub const DEFAULT_RECORD_SIZE: usize = 100_000;

/// The consolidated metadata file of a Parquet reference set.
pub const ZMETADATA: &str = ".zmetadata";

/// Writes a [`VirtualDataset`] as a kerchunk Parquet reference set (a directory).
#[derive(Debug, Clone)]
pub struct KerchunkParquetWriter {
    /// Location rewrites, as [`KerchunkWriter`](crate::formats::KerchunkWriter)'s. Default: none.
    pub url_prefixes: Vec<UrlPrefix>,
    /// Rows per reference file. Default: [`DEFAULT_RECORD_SIZE`].
    pub record_size: usize,
    /// Leave out, with a warning, arrays Zarr v2 cannot express (rectilinear grids larger than
    /// `inline_threshold`, structs) instead of refusing the whole output. Default: false.
    pub skip_unsupported: bool,
    /// An array whose grid is rectilinear and whose decoded values take at most this many bytes is
    /// written as one inline chunk (`raw`) of those values (`formats/inline`). Default:
    /// [`DEFAULT_INLINE_THRESHOLD`](crate::formats::DEFAULT_INLINE_THRESHOLD) (1 MiB); 0 inlines nothing.
    pub inline_threshold: u64,
}

impl Default for KerchunkParquetWriter {
    fn default() -> Self {
        KerchunkParquetWriter {
            url_prefixes: Vec::new(),
            record_size: DEFAULT_RECORD_SIZE,
            skip_unsupported: false,
            inline_threshold: crate::formats::DEFAULT_INLINE_THRESHOLD,
        }
    }
}

impl Writer for KerchunkParquetWriter {
    fn write(
        &self,
        dataset: &VirtualDataset,
        destination: &Path,
        options: &WriteOptions,
    ) -> Result<StoreInfo, WriteError> {
        let (dataset, inlined) = crate::formats::inline_rectilinear(dataset, self.inline_threshold, destination)?;
        if !self.skip_unsupported {
            if let Some(refused) = inlined.refusal(destination, self.inline_threshold, "kerchunk Parquet") {
                return Err(refused);
            }
        }
        let dataset = dataset.as_ref();
        let urls = crate::formats::urls::written_source_urls(&dataset.sources, &self.url_prefixes, destination)?;
        let root = dataset.groups.iter().find(|g| g.path.is_empty()).map(|g| g.attributes.clone()).unwrap_or_default();
        let mut zmetadata = Zmetadata::new(destination, &root, self.skip_unsupported);
        for group in dataset.groups.iter().filter(|g| !g.path.is_empty()) {
            zmetadata.group(&group.path, &group.attributes)?;
        }
        let mut kept = Vec::new();
        for array in &dataset.arrays {
            if zmetadata.array(&array.path, &array.metadata)? {
                kept.push(array);
            }
        }
        let inputs = crate::store::local_sources(&dataset.sources);
        let staged = Staged::begin(destination, OutputKind::KerchunkParquet, options.overwrite, &inputs)?;
        let mut info = StoreInfo::of(dataset, "kerchunk-parquet", Vec::new());
        info.warnings.extend(zmetadata.left_out().iter().cloned());
        let url_bytes = url_bytes(&urls);
        for array in kept {
            write_array(array, &url_bytes, staged.path(), self.record_size)?;
            info.arrays.push(ArrayInfo::of(array));
        }
        zmetadata.write(staged.path(), self.record_size, &urls, &dataset.provenance, &info.warnings)?;
        staged.publish()?;
        Ok(info)
    }
}

/// The source URLs as the byte arrays of the `path` column (one copy each, shared between rows).
pub(crate) fn url_bytes(urls: &[String]) -> Vec<ByteArray> {
    urls.iter().map(|u| ByteArray::from(u.as_str())).collect()
}

/// The consolidated metadata of a reference set being written: the Zarr v2 documents of every node
/// added, and a warning for each array left out (with `skip_unsupported`). Written last, into
/// `.zmetadata`, with the `vzarr` header. The scan's writer and `vzarr export` both build it.
pub(crate) struct Zmetadata {
    destination: std::path::PathBuf,
    /// The `file` of the warnings of arrays left out: the destination, or the store exported.
    warning_file: String,
    skip_unsupported: bool,
    documents: Map<String, Value>,
    left_out: Vec<ScanWarning>,
}

impl Zmetadata {
    /// Starts the documents of a reference set at `destination` (for messages) whose root group has
    /// `root` attributes.
    pub(crate) fn new(destination: &Path, root: &Attributes, skip_unsupported: bool) -> Self {
        let mut documents = Map::new();
        documents.insert(".zgroup".into(), zarr_v2::zgroup());
        documents.insert(".zattrs".into(), zarr_v2::group_attributes(root));
        Zmetadata {
            destination: destination.to_path_buf(),
            warning_file: destination.display().to_string(),
            skip_unsupported,
            documents,
            left_out: Vec::new(),
        }
    }

    /// Names `file` in the warnings of arrays left out, in place of the destination.
    pub(crate) fn with_warning_file(mut self, file: &str) -> Self {
        self.warning_file = file.to_string();
        self
    }

    /// Adds the group at `path` (not the root).
    ///
    /// # Errors
    /// [`WriteError::BadName`] for a path that cannot be a folder of the reference set.
    pub(crate) fn group(&mut self, path: &str, attributes: &Attributes) -> Result<(), WriteError> {
        check_name(&self.destination, path)?;
        zarr_v2::insert(&mut self.documents, path, ".zgroup", zarr_v2::zgroup());
        zarr_v2::insert(&mut self.documents, path, ".zattrs", zarr_v2::group_attributes(attributes));
        Ok(())
    }

    /// Adds the array at `path`; false when Zarr v2 cannot express it and it is left out.
    ///
    /// # Errors
    /// [`WriteError::BadName`] for a bad path, or for an array Zarr v2 cannot express when arrays
    /// are not to be left out.
    pub(crate) fn array(&mut self, path: &str, metadata: &ArrayMetadata) -> Result<bool, WriteError> {
        check_name(&self.destination, path)?;
        match zarr_v2::array_documents(metadata) {
            Ok((zarray, zattrs)) => {
                zarr_v2::insert(&mut self.documents, path, ".zarray", zarray);
                zarr_v2::insert(&mut self.documents, path, ".zattrs", zattrs);
                Ok(true)
            }
            Err(reason) if self.skip_unsupported => {
                self.left_out.push(ScanWarning {
                    file: self.warning_file.clone(),
                    variable: path.to_string(),
                    message: format!("left out of the kerchunk Parquet output: {reason}"),
                });
                Ok(false)
            }
            Err(reason) => Err(WriteError::BadName {
                path: self.destination.clone(),
                node: path.to_string(),
                reason: format!("{reason} (skipping unsupported arrays writes the others without it)"),
            }),
        }
    }

    /// The warnings of the arrays left out.
    pub(crate) fn left_out(&self) -> &[ScanWarning] {
        &self.left_out
    }

    /// Writes `.zmetadata` into the staged reference set `dir`: the documents, the record size, and
    /// the `vzarr` header (the sources and their containers, the provenance, `warnings`).
    ///
    /// # Errors
    /// [`WriteError::Io`] naming the file.
    pub(crate) fn write(
        self,
        dir: &Path,
        record_size: usize,
        urls: &[String],
        provenance: &Provenance,
        warnings: &[ScanWarning],
    ) -> Result<(), WriteError> {
        let header = json!({
            "source_containers": crate::trust::containers_of_locations(urls.iter().map(String::as_str)),
            "source_urls": urls,
            "provenance": provenance,
            "warnings": warnings,
        });
        let zmetadata = json!({"metadata": self.documents, "record_size": record_size.max(1), "vzarr": header});
        let path = dir.join(ZMETADATA);
        std::fs::write(&path, crate::metadata::to_text(&zmetadata)).map_err(io_error(&path, "writing"))
    }
}

/// A node path that cannot be a folder of the reference set, refused.
fn check_name(destination: &Path, path: &str) -> Result<(), WriteError> {
    let bad = |reason: String| WriteError::BadName { path: destination.to_path_buf(), node: path.to_string(), reason };
    crate::formats::check_node_path(path).map_err(bad)?;
    if path.split('/').any(|segment| segment.starts_with(".z") || segment.starts_with("refs.")) {
        return Err(bad("the name collides with a file of a kerchunk Parquet reference set".into()));
    }
    Ok(())
}

/// Writes the reference files of one array, a record at a time.
fn write_array(array: &VirtualArray, urls: &[ByteArray], root: &Path, record_size: usize) -> Result<(), WriteError> {
    use rayon::prelude::*;
    let files = RecordFiles::create(&root.join(&array.path), record_size)?;
    let (n, size) = (array.chunks.len() as u64, record_size.max(1) as u64);
    // Records are independent files: written in parallel, each from its own range of the table.
    (0..n.div_ceil(size)).into_par_iter().try_for_each(|record| {
        let range = (record * size) as usize..((record + 1) * size).min(n) as usize;
        let first = range.start as u64;
        let rows =
            (first..).zip(array.chunks.range(range)).map(|(linear, entry)| row(array, linear, entry, urls, root));
        files.write(record, rows)
    })
}

/// The row of chunk `linear` of `array`, whose entry is `entry`.
fn row<'a>(
    array: &VirtualArray,
    linear: u64,
    entry: ChunkEntry,
    urls: &'a [ByteArray],
    root: &Path,
) -> Result<Row<'a>, WriteError> {
    Ok(match entry {
        ChunkEntry::Missing => Row::Missing,
        ChunkEntry::Source { source, offset, length } => {
            let url = urls.get(source as usize).ok_or_else(|| WriteError::BadName {
                path: root.to_path_buf(),
                node: array.path.clone(),
                reason: format!("chunk {linear}: no source {source}"),
            })?;
            Row::Reference { url, offset, size: length }
        }
        ChunkEntry::Owned { offset, length } => {
            let bytes = array.chunks.owned_chunk(offset, length).map_err(|source| WriteError::Owned {
                path: root.to_path_buf(),
                array: array.path.clone(),
                source: Box::new(source),
            })?;
            Row::Inline(bytes.into_owned())
        }
    })
}
