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
//! Zarr v2 metadata (`store/kerchunk_parquet/zarr_v2`): fsspec finds a chunk's row from its `.zarray`'s
//! `shape` and `chunks` and the key `i.j`, so an array whose grid is rectilinear has no Parquet form;
//! it is refused by name ([`WriteError::BadName`]), or left out with a warning when
//! [`KerchunkParquetWriter::skip_unsupported`] is set. Rows are `path`/`offset`/`size` for a chunk
//! in a source file, `raw` bytes for a store-owned chunk, all null for a missing one
//! (`store/kerchunk_parquet/records`). The `vzarr` key of `.zmetadata` (ignored by fsspec) records
//! the sources by id, their containers, the provenance and warnings, as the kerchunk JSON header does.
//!
//! Streaming: one array at a time, one record of rows in memory. Atomic: the directory is staged
//! in a hidden sibling and published by `store/publish`; `.zmetadata` is written last.

mod records;
mod zarr_v2;

use std::path::Path;

use parquet::data_type::ByteArray;
use serde_json::{json, Map, Value};

pub(crate) use records::{RecordFiles, Row};

use super::publish::{OutputKind, Staged};
use super::{io_error, ArrayInfo, StoreInfo, UrlPrefix, WriteError, WriteOptions, Writer};
use crate::dataset::{ScanWarning, VirtualArray, VirtualDataset};
use crate::manifest::ChunkEntry;

/// Rows per reference file by default: 100,000, the default of kerchunk's `refs_to_dataframe` and
/// of VirtualiZarr's `to_kerchunk(format="parquet")` (fewer, larger files: 10^7 references are 100
/// files, not 1,000).
pub const DEFAULT_RECORD_SIZE: usize = 100_000;

/// The consolidated metadata file of a Parquet reference set.
pub const ZMETADATA: &str = ".zmetadata";

/// Writes a [`VirtualDataset`] as a kerchunk Parquet reference set (a directory).
#[derive(Debug, Clone)]
pub struct KerchunkParquetWriter {
    /// Location rewrites, as [`super::KerchunkWriter`]'s. Default: none.
    pub url_prefixes: Vec<UrlPrefix>,
    /// Rows per reference file. Default: [`DEFAULT_RECORD_SIZE`].
    pub record_size: usize,
    /// Leave out, with a warning, arrays Zarr v2 cannot express (rectilinear grids, structs) instead
    /// of refusing the whole output. Default: false.
    pub skip_unsupported: bool,
}

impl Default for KerchunkParquetWriter {
    fn default() -> Self {
        KerchunkParquetWriter { url_prefixes: Vec::new(), record_size: DEFAULT_RECORD_SIZE, skip_unsupported: false }
    }
}

impl Writer for KerchunkParquetWriter {
    fn write(
        &self,
        dataset: &VirtualDataset,
        destination: &Path,
        options: &WriteOptions,
    ) -> Result<StoreInfo, WriteError> {
        let urls = super::kerchunk::written_source_urls(&dataset.sources, &self.url_prefixes, destination)?;
        let (documents, left_out) = self.documents(dataset, destination)?;
        let inputs = super::local_sources(&dataset.sources);
        let staged = Staged::begin(destination, OutputKind::KerchunkParquet, options.overwrite, &inputs)?;
        let mut info = StoreInfo::of(dataset, "kerchunk-parquet", Vec::new());
        info.warnings.extend(left_out);
        let url_bytes: Vec<ByteArray> = urls.iter().map(|u| ByteArray::from(u.as_str())).collect();
        for array in &dataset.arrays {
            if documents.contains_key(&zarr_v2::key(&array.path, ".zarray")) {
                write_array(array, &url_bytes, staged.path(), self.record_size)?;
                info.arrays.push(ArrayInfo::of(array));
            }
        }
        let header = json!({
            "source_containers": crate::trust::containers_of_locations(urls.iter().map(String::as_str)),
            "source_urls": urls,
            "provenance": dataset.provenance,
            "warnings": info.warnings,
        });
        let zmetadata = json!({"metadata": documents, "record_size": self.record_size.max(1), "vzarr": header});
        let path = staged.path().join(ZMETADATA);
        std::fs::write(&path, crate::metadata::to_text(&zmetadata)).map_err(io_error(&path, "writing"))?;
        staged.publish()?;
        Ok(info)
    }
}

impl KerchunkParquetWriter {
    /// The consolidated Zarr v2 documents of every node written, and the warnings of arrays left out.
    fn documents(
        &self,
        dataset: &VirtualDataset,
        destination: &Path,
    ) -> Result<(Map<String, Value>, Vec<ScanWarning>), WriteError> {
        let mut map = Map::new();
        map.insert(".zgroup".into(), zarr_v2::zgroup());
        let root = dataset.groups.iter().find(|g| g.path.is_empty());
        map.insert(
            ".zattrs".into(),
            zarr_v2::group_attributes(&root.map(|g| g.attributes.clone()).unwrap_or_default()),
        );
        for group in dataset.groups.iter().filter(|g| !g.path.is_empty()) {
            check_name(destination, &group.path)?;
            zarr_v2::insert(&mut map, &group.path, ".zgroup", zarr_v2::zgroup());
            zarr_v2::insert(&mut map, &group.path, ".zattrs", zarr_v2::group_attributes(&group.attributes));
        }
        let mut left_out = Vec::new();
        for array in &dataset.arrays {
            check_name(destination, &array.path)?;
            match zarr_v2::array_documents(&array.metadata) {
                Ok((zarray, zattrs)) => {
                    zarr_v2::insert(&mut map, &array.path, ".zarray", zarray);
                    zarr_v2::insert(&mut map, &array.path, ".zattrs", zattrs);
                }
                Err(reason) if self.skip_unsupported => left_out.push(ScanWarning {
                    file: destination.display().to_string(),
                    variable: array.path.clone(),
                    message: format!("left out of the kerchunk Parquet output: {reason}"),
                }),
                Err(reason) => {
                    return Err(WriteError::BadName {
                        path: destination.to_path_buf(),
                        node: array.path.clone(),
                        reason: format!("{reason} (--skip-unsupported writes the other arrays without it)"),
                    })
                }
            }
        }
        Ok((map, left_out))
    }
}

/// A node path that cannot be a folder of the reference set, refused.
fn check_name(destination: &Path, path: &str) -> Result<(), WriteError> {
    let bad = |reason: String| WriteError::BadName { path: destination.to_path_buf(), node: path.to_string(), reason };
    super::check_node_path(path).map_err(bad)?;
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
