//! A native store, Icechunk repository or kerchunk document exported as a kerchunk Parquet reference
//! set: the directory `formats/parquet`'s writer produces for a scanned dataset (the same
//! `.zmetadata` and record files), written from an opened [`Store`] one record of rows at a time. A
//! small rectilinear array is inlined as the scan's writer inlines it (`formats/inline`), its values
//! read through the store.

use std::path::Path;

use parquet::data_type::ByteArray;

use super::records::{RecordFiles, Row};
use super::write::{url_bytes, Zmetadata};
use crate::dataset::ScanWarning;
use crate::formats::exports::{
    checked_nodes, groups_of, reference_urls, source_url, staged, store_inputs, ExportError,
};
use crate::formats::{UrlPrefix, DEFAULT_RECORD_SIZE};
use crate::manifest::ChunkEntry;
use crate::metadata::Attributes;
use crate::read::{ArrayReader, Store};
use crate::store::{OutputKind, WriteError};

/// Options of [`export_kerchunk_parquet`].
#[derive(Debug, Clone)]
pub struct KerchunkParquetOptions {
    /// Location rewrites, tried in order; the first match applies. Default: none (absolute
    /// `file://` URLs for local paths, URLs as stored).
    pub url_prefixes: Vec<UrlPrefix>,
    /// Rows per reference file. Default: [`DEFAULT_RECORD_SIZE`].
    pub record_size: usize,
    /// Leave out, with a warning in `.zmetadata`, the arrays Zarr v2 cannot express (rectilinear
    /// grids, structs) instead of refusing the export. Default: false.
    pub skip_unsupported: bool,
    /// Replace an existing reference set (atomically; never anything else). Default: false.
    pub overwrite: bool,
    /// An array whose grid is rectilinear and whose decoded values take at most this many bytes is
    /// written as one inline (`raw`) chunk of those values, read through the store; a larger one is
    /// refused by name (or left out with `skip_unsupported`). Default:
    /// [`DEFAULT_INLINE_THRESHOLD`](crate::formats::DEFAULT_INLINE_THRESHOLD) (1 MiB).
    pub inline_threshold: u64,
}

impl Default for KerchunkParquetOptions {
    fn default() -> Self {
        KerchunkParquetOptions {
            url_prefixes: Vec::new(),
            record_size: DEFAULT_RECORD_SIZE,
            skip_unsupported: false,
            overwrite: false,
            inline_threshold: crate::formats::DEFAULT_INLINE_THRESHOLD,
        }
    }
}

/// What [`export_kerchunk_parquet`] wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct KerchunkParquetReport {
    /// Arrays written.
    pub arrays: u64,
    /// Reference files (`refs.<n>.parq`) written.
    pub record_files: u64,
    /// Rows naming a range of a source file.
    pub references: u64,
    /// Rows holding a store-owned chunk's bytes.
    pub inline: u64,
    /// The arrays left out, each with the reason (with [`KerchunkParquetOptions::skip_unsupported`];
    /// also in `.zmetadata`'s warnings).
    pub left_out: Vec<ScanWarning>,
}

/// Exports `store` as a kerchunk Parquet reference set (a directory) at `destination`, streaming:
/// each record's manifest entries are fetched, and its store-owned chunks read, when that record is
/// written. The files are written with blocking I/O from this async function.
///
/// # Errors
/// [`ExportError`] naming the store, array or file, among them an array Zarr v2 cannot express
/// (without `skip_unsupported`); nothing is left at `destination`.
pub async fn export_kerchunk_parquet(
    store: &Store,
    destination: &Path,
    options: &KerchunkParquetOptions,
) -> Result<KerchunkParquetReport, ExportError> {
    let urls = reference_urls(store, &options.url_prefixes).await?;
    let (groups, arrays) = checked_nodes(store)?;
    let nodes = groups_of(store, &groups).await?;
    let (root, groups) = match nodes.split_first() {
        Some((root, groups)) => (root.attributes.clone(), groups),
        None => (Attributes::new(), &[][..]),
    };
    // A left-out array is the exported store's: named so in `.zmetadata` whatever the destination
    // (an object-store export writes through a private local directory).
    let mut zmetadata =
        Zmetadata::new(destination, &root, options.skip_unsupported).with_warning_file(store.location());
    for group in groups {
        zmetadata.group(&group.path, &group.attributes)?;
    }
    let (mut kept, mut inlined) = (Vec::new(), Vec::new());
    for path in &arrays {
        let array = store.array(path).await?;
        match crate::formats::inline_candidate(array.metadata()) {
            Some(Some(bytes)) if bytes <= options.inline_threshold => {
                let metadata = crate::formats::inlined_metadata(array.metadata(), path, destination)?;
                zmetadata.array(path, &metadata)?;
                inlined.push((path.clone(), crate::formats::read_whole(&array).await?));
                continue;
            }
            Some(bytes) if !options.skip_unsupported => {
                let threshold = options.inline_threshold;
                let refused =
                    crate::formats::too_large_to_inline(destination, path, bytes, threshold, "kerchunk Parquet");
                return Err(refused.into());
            }
            _ => {}
        }
        if zmetadata.array(path, array.metadata())? {
            kept.push(array);
        }
    }
    let mut report =
        KerchunkParquetReport { left_out: zmetadata.left_out().to_vec(), ..KerchunkParquetReport::default() };
    let build = |staging: std::path::PathBuf| async move {
        let url_bytes = url_bytes(&urls);
        for array in &kept {
            write_array(array, &url_bytes, &staging, options.record_size, &mut report).await?;
        }
        for (path, values) in inlined {
            let files = RecordFiles::create(&staging.join(&path), options.record_size)?;
            files.write(0, std::iter::once(Ok(Row::Inline(values))))?;
            report.arrays += 1;
            report.record_files += 1;
            report.inline += 1;
        }
        let info = store.info();
        let mut warnings = info.warnings.clone();
        warnings.extend(report.left_out.iter().cloned());
        zmetadata.write(&staging, options.record_size, &urls, &info.provenance, &warnings)?;
        Ok(report)
    };
    staged(destination, OutputKind::KerchunkParquet, options.overwrite, &store_inputs(store), build).await
}

/// Writes the record files of one array, one record at a time: its entries, then the bytes of its
/// store-owned chunks (fetched together), then the file.
async fn write_array(
    array: &ArrayReader,
    urls: &[ByteArray],
    root: &Path,
    record_size: usize,
    report: &mut KerchunkParquetReport,
) -> Result<(), ExportError> {
    let files = RecordFiles::create(&root.join(array.path()), record_size)?;
    let (n, size) = (array.metadata().chunk_grid.num_chunks(), record_size.max(1) as u64);
    for record in 0..n.div_ceil(size) {
        let first = record * size;
        let entries = array.entries(first..(first + size).min(n)).await?;
        let owned: Vec<ChunkEntry> =
            entries.iter().copied().filter(|e| matches!(e, ChunkEntry::Owned { .. })).collect();
        let mut owned_bytes = array.stored_chunks(&owned).await?.into_iter();
        let mut rows = Vec::with_capacity(entries.len());
        for (linear, entry) in (first..).zip(&entries) {
            rows.push(match *entry {
                ChunkEntry::Missing => Row::Missing,
                ChunkEntry::Source { source, offset, length } => {
                    report.references += 1;
                    Row::Reference { url: source_url(urls, source, array.path(), linear)?, offset, size: length }
                }
                ChunkEntry::Owned { .. } => {
                    report.inline += 1;
                    Row::Inline(owned_bytes.next().flatten().map(|b| b.to_vec()).unwrap_or_default())
                }
            });
        }
        files.write(record, rows.into_iter().map(Ok::<_, WriteError>))?;
        report.record_files += 1;
    }
    report.arrays += 1;
    Ok(())
}
