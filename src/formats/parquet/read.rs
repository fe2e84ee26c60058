//! kerchunk Parquet reference sets opened as a store (kerchunk's `docs/source/spec.rst`, "Parquet
//! references"): what `vzarr scan --format kerchunk-parquet`, kerchunk's `refs_to_dataframe` and
//! VirtualiZarr's `.vz.to_kerchunk(format="parquet")` write.
//!
//! ```text
//! set/.zmetadata          {"metadata": {".zgroup": {...}, "tas/.zarray": {...}, ...}, "record_size": N}
//! set/tas/refs.<k>.parq   rows k*N .. (k+1)*N of tas's chunks, C order; columns path/offset/size/raw
//! ```
//!
//! The result is the same reference view a kerchunk JSON document gives (`formats/kerchunk/read`): the
//! Zarr v2 metadata translated to `zarr.json` documents by `formats/kerchunk/zarr_v2`, and per array a dense
//! table of its chunks. A row with `raw` is a store-owned chunk; with `path`, `size` bytes at `offset`
//! of that file (`size` 0 at offset 0, "the whole file", is refused as the JSON reader refuses it);
//! with neither, a missing chunk; a record file that does not exist is all missing chunks, as fsspec
//! reads it.
//!
//! Untrusted input: `.zmetadata` must be consolidated v2 metadata with a positive `record_size`; a
//! record file must be Parquet with the kerchunk columns and hold between the rows its array needs
//! from it and `record_size` (at most [`MAX_RECORD_SIZE`]) rows; no dense table is allocated before the
//! record files show that the grid is at most [`MAX_SPARSE_FACTOR`] times larger than the chunks they
//! reference. Every error is one line naming the file and the array.

mod pages;
mod record_file;

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use futures::TryStreamExt;
use object_store::ObjectStoreExt;
use serde_json::{Map, Value};

use crate::dataset::ChunkStats;
use crate::formats::kerchunk::read::{location as url_location, ReferenceTable, ReferenceView};
use crate::formats::kerchunk::zarr_v2::decode as zarr_v2;
use crate::formats::ZMETADATA;
use crate::formats::{Address, Detect};
use crate::manifest::{ChunkEntry, SourceFile};
use crate::metadata::{group_from_json, ArrayMetadata};
use crate::read::objects::fetch_all;
use crate::read::sources::SourceRegistry;
use crate::read::Opened;
use crate::read::{ArrayInfo, StoreInfo};
use crate::read::{OpenOptions, ReadError};
use crate::source::{resolve_with, Location, ObjectLocation};

/// A grid may have at most this many times more chunks than its record files reference (plus 2^20).
const MAX_SPARSE_FACTOR: u64 = 64;

/// Most rows per record file (`record_size`) read: kerchunk writes 10^4 by default, VirtualiZarr 10^5;
/// a file's rows are decoded whole, so this bounds what one small, highly compressed file can cost.
const MAX_RECORD_SIZE: u64 = 1 << 22;

/// Whether `location` names a kerchunk Parquet reference set: a local directory holding `.zmetadata`,
/// or a URL whose last segment ends in `.parq` or `.parquet` (kerchunk's naming).
pub(crate) fn detect(location: &Location) -> Detect {
    let set = match location {
        Location::Url(url) => {
            let name = url.trim_end_matches('/');
            name.ends_with(".parq") || name.ends_with(".parquet")
        }
        Location::Local(path) => path.join(ZMETADATA).is_file(),
    };
    Detect::yes_if(set)
}

/// The Parquet reference set at `location` (a path or URL), served as a references' view.
///
/// # Errors
/// [`ReadError::Store`] naming the file (and the array) that cannot be read or does not match
/// `.zmetadata`.
pub(crate) async fn open(address: &Address, options: &OpenOptions) -> Result<Opened, ReadError> {
    let absolute = address.absolute()?.trim_end_matches('/').to_string();
    let root = resolve_with(&absolute, &options.remote)?;
    let zmetadata_path = format!("{}/{ZMETADATA}", absolute);
    let child = |path: &str| ObjectLocation { store: root.store.clone(), path: object_path(&root, path) };
    let bytes = fetch_all(&child(ZMETADATA), &zmetadata_path, ZMETADATA).await?;
    let bad = |file: &str, what: String, reason: String| ReadError::Store {
        location: file.to_string(),
        what,
        source: reason.into(),
    };
    let ZMetadata { metadata, record_size, header } =
        parse_zmetadata(&bytes).map_err(|reason| bad(&zmetadata_path, "parsing it".into(), reason.to_string()))?;
    let v3 = zarr_v2::to_v3(metadata.into_iter().collect(), &mut [])
        .map_err(|(key, reason)| bad(&zmetadata_path, format!("{key:?}"), reason))?;
    let urls: Vec<String> = header
        .get("source_urls")
        .and_then(Value::as_array)
        .map(|list| list.iter().filter_map(Value::as_str).map(str::to_string).collect())
        .unwrap_or_default();
    let sources = SourceRegistry::seeded(&urls, |url| SourceFile::new(url_location(url), 0, None));
    let mut view = ReferenceView::parquet();
    let (mut groups, mut infos) = (Vec::new(), Vec::new());
    // `to_v3` gives each node's `zarr.json` as a JSON object.
    for (key, node) in v3 {
        let path = key.strip_suffix("zarr.json").map(|p| p.trim_end_matches('/')).unwrap_or_default();
        if !node.is_object() {
            return Err(bad(&zmetadata_path, format!("{key:?}"), "not a JSON object".into()));
        }
        let invalid = |e: crate::metadata::MetadataError| bad(&zmetadata_path, format!("{path:?}"), e.to_string());
        if crate::metadata::node_type(&node).map_err(invalid)? != "array" {
            view.insert_group(path, &group_from_json(&node).map_err(invalid)?);
            groups.push(path.to_string());
            continue;
        }
        let metadata = ArrayMetadata::from_json(&node).map_err(invalid)?;
        let folder = format!("{absolute}/{path}");
        let local = crate::source::local_path(&folder);
        let table = array_table(&root, (path, local.as_deref()), &metadata, record_size, &sources).await.map_err(
            |(file, reason)| {
                let file = if file.is_empty() { folder.clone() } else { format!("{folder}/{file}") };
                bad(&file, format!("array {path}"), reason)
            },
        )?;
        infos.push(ArrayInfo {
            stats: ChunkStats::of(table.entries.iter().copied()),
            ..ArrayInfo::of_grid(path, table.entries.len() as u64)
        });
        view.insert_array(path, metadata, table);
    }
    groups.sort();
    let info = store_info(&header, &sources, groups, infos)
        .map_err(|reason| bad(&zmetadata_path, "its vzarr header".into(), reason))?;
    Ok(Opened { info, sources, backend: Arc::new(view) })
}

/// What `.zmetadata` holds.
struct ZMetadata {
    /// Every node's Zarr v2 documents, by key (`tas/.zarray`).
    metadata: Map<String, Value>,
    /// Rows per record file (> 0).
    record_size: u64,
    /// vzarr's header (empty when another tool wrote the set).
    header: Map<String, Value>,
}

/// Why `.zmetadata` is refused ([`parse_zmetadata`]).
#[derive(Debug, thiserror::Error)]
enum ZMetadataError {
    /// Not JSON.
    #[error("not JSON: {0}")]
    NotJson(#[source] serde_json::Error),
    /// No `metadata` object.
    #[error("no \"metadata\" object")]
    NoMetadata,
    /// No usable `record_size`.
    #[error("no positive integer \"record_size\"")]
    NoRecordSize,
    /// A record size larger than vzarr reads.
    #[error("record_size {record_size} is more than the {} rows per file vzarr reads", MAX_RECORD_SIZE)]
    RecordSize {
        /// The record size.
        record_size: u64,
    },
}

/// Parses `.zmetadata`.
fn parse_zmetadata(bytes: &[u8]) -> Result<ZMetadata, ZMetadataError> {
    let doc = crate::metadata::from_text(bytes).map_err(ZMetadataError::NotJson)?;
    let metadata = doc.get("metadata").and_then(Value::as_object).ok_or(ZMetadataError::NoMetadata)?;
    let record_size = doc.get("record_size").and_then(Value::as_u64).filter(|&n| n > 0);
    let record_size = record_size.ok_or(ZMetadataError::NoRecordSize)?;
    if record_size > MAX_RECORD_SIZE {
        return Err(ZMetadataError::RecordSize { record_size });
    }
    let header = doc.get("vzarr").and_then(Value::as_object).cloned().unwrap_or_default();
    Ok(ZMetadata { metadata: metadata.clone(), record_size, header })
}

/// The object path of `relative` below the set's root.
fn object_path(root: &ObjectLocation, relative: &str) -> object_store::path::Path {
    relative.split('/').filter(|s| !s.is_empty()).fold(root.path.clone(), |path, part| path.join(part))
}

/// A record file and what is wrong with it.
type FileError = (String, String);

/// Record files fetched at once.
const CONCURRENT_FILES: usize = 16;

/// Record files decoded together (in parallel), their bytes then dropped.
const DECODE_WINDOW: usize = 64;

/// The dense chunk table of array `path` from its record files. The files are fetched a few at a
/// time and decoded in parallel, each kept dense only when at least half its rows reference a chunk
/// (else as its referenced rows alone); the dense table is allocated only once they show the grid is
/// at most [`MAX_SPARSE_FACTOR`] times larger than what they reference (plus 2^20).
async fn array_table(
    root: &ObjectLocation,
    (path, local): (&str, Option<&std::path::Path>),
    metadata: &ArrayMetadata,
    record_size: u64,
    sources: &SourceRegistry,
) -> Result<ReferenceTable, FileError> {
    let whole = |reason: String| (String::new(), reason);
    let n = metadata.chunk_grid.checked_num_chunks().ok_or_else(|| whole("its grid has too many chunks".into()))?;
    let files = record_files(root, path, n.div_ceil(record_size)).await.map_err(whole)?;
    if let Some(local) = local {
        check_local_record_files(local, n.div_ceil(record_size))?;
    }
    let decoded = decode_files(root, files, n, record_size, max_cell(metadata)).await?;
    let present: u64 = decoded.iter().map(|(_, t)| t.present as u64).sum();
    let most = present.saturating_mul(MAX_SPARSE_FACTOR).saturating_add(1 << 20);
    if n > most {
        return Err(whole(format!("{n} chunks in its grid but {present} referenced: too sparse to open")));
    }
    let mut table = ReferenceTable { entries: Vec::with_capacity(n as usize), owned: Vec::new() };
    for (record, decoded) in decoded {
        let first = (record * record_size) as usize;
        table.entries.resize(first, ChunkEntry::Missing);
        decoded.append_to(&mut table, sources).map_err(|reason| (record_name(record), reason.to_string()))?;
    }
    table.entries.resize(n as usize, ChunkEntry::Missing);
    Ok(table)
}

/// The longest inline (`raw`) chunk an array's metadata allows: its largest chunk's bytes, plus a
/// sixteenth and 4 KiB (what a codec may add to bytes it cannot compress); [`MAX_UNSIZED_CELL`] for
/// a type of no fixed size (strings).
fn max_cell(metadata: &ArrayMetadata) -> u64 {
    let element = metadata.element_size() as u64;
    if element == 0 {
        return MAX_UNSIZED_CELL;
    }
    let largest = metadata.chunk_grid.dims().iter().map(|d| d.edge_range().map_or(0, |(_, hi)| hi));
    let bytes = largest.fold(element, u64::saturating_mul);
    bytes.saturating_add(bytes / 16).saturating_add(4 << 10)
}

/// The longest inline chunk of an array of strings (no fixed size to bound it by).
const MAX_UNSIZED_CELL: u64 = 64 << 20;

/// The record files `files` of an array of `n` chunks, fetched [`CONCURRENT_FILES`] at a time and
/// decoded in parallel a window of files at a time (so only a window's bytes are held), in record
/// order.
async fn decode_files(
    root: &ObjectLocation,
    files: BTreeMap<u64, object_store::path::Path>,
    n: u64,
    record_size: u64,
    max_cell: u64,
) -> Result<Vec<(u64, RecordTable)>, FileError> {
    use futures::StreamExt;
    use rayon::prelude::*;
    let mut windows = futures::stream::iter(files)
        .map(|(record, object)| async move {
            let fail = |e: object_store::Error| (record_name(record), e.to_string());
            let bytes = root.store.get(&object).await.map_err(fail)?.bytes().await.map_err(fail)?;
            Ok::<_, FileError>((record, bytes))
        })
        .buffered(CONCURRENT_FILES)
        .chunks(DECODE_WINDOW);
    let mut decoded = Vec::new();
    while let Some(window) = windows.next().await {
        let window = window.into_iter().collect::<Result<Vec<(u64, Bytes)>, FileError>>()?;
        let decode = || {
            window
                .into_par_iter()
                .map(|(record, bytes)| {
                    let needed = (n - record * record_size).min(record_size) as usize;
                    let limits = record_file::Limits { max_rows: record_size as usize, needed, max_cell };
                    let table = RecordTable::decode(bytes, limits);
                    table.map(|table| (record, table)).map_err(|reason| (record_name(record), reason.to_string()))
                })
                .collect::<Result<Vec<_>, FileError>>()
        };
        // Decoding is CPU work on rayon: on a multi-threaded runtime this worker tells tokio it blocks.
        decoded.extend(match tokio::runtime::Handle::try_current().map(|h| h.runtime_flavor()) {
            Ok(tokio::runtime::RuntimeFlavor::MultiThread) => tokio::task::block_in_place(decode),
            _ => decode(),
        }?);
    }
    Ok(decoded)
}

/// The name of record file `record`.
fn record_name(record: u64) -> String {
    format!("refs.{record}.parq")
}

/// One record file's chunks, numbered within the file (`record_file::RecordRows`).
struct RecordTable {
    rows: Rows,
    /// Rows needed from the file.
    needed: usize,
    /// Rows that are not missing.
    present: usize,
    urls: Vec<String>,
    inline: Vec<Bytes>,
}

/// A record file's entries: all of them, or only those not missing (row, entry).
enum Rows {
    Dense(Vec<ChunkEntry>),
    Sparse(Vec<(usize, ChunkEntry)>),
}

/// Why a record file's rows are not taken ([`RecordTable::decode`], [`RecordTable::append_to`]).
#[derive(Debug, thiserror::Error)]
enum RecordTableError {
    /// Its rows do not read.
    #[error(transparent)]
    Rows(#[from] record_file::RowsError),
    /// Fewer rows than the array's chunks in it.
    #[error("{rows} rows, but .zmetadata gives the array {needed} chunks here")]
    Short {
        /// Rows in the file.
        rows: usize,
        /// Chunks it must hold.
        needed: usize,
    },
    /// A path the store's source registry refuses.
    #[error("path {url:?}: {why}")]
    Path {
        /// The path.
        url: String,
        /// Why.
        why: String,
    },
}

impl RecordTable {
    /// The first `limits.needed` rows of the record file `bytes` (at most `limits.max_rows` rows).
    fn decode(bytes: Bytes, limits: record_file::Limits) -> Result<Self, RecordTableError> {
        let needed = limits.needed;
        let mut rows = record_file::rows(bytes, limits)?;
        if rows.entries.len() < needed {
            return Err(RecordTableError::Short { rows: rows.entries.len(), needed });
        }
        rows.entries.truncate(needed);
        let present = rows.entries.iter().filter(|e| **e != ChunkEntry::Missing).count();
        let rows_kept = match present * 2 >= needed {
            true => Rows::Dense(rows.entries),
            false => {
                Rows::Sparse(rows.entries.into_iter().enumerate().filter(|(_, e)| *e != ChunkEntry::Missing).collect())
            }
        };
        Ok(RecordTable { rows: rows_kept, needed, present, urls: rows.urls, inline: rows.inline })
    }

    /// Appends the file's rows to `table`, its URLs numbered in `sources`, its inline chunks after
    /// the table's.
    fn append_to(self, table: &mut ReferenceTable, sources: &SourceRegistry) -> Result<(), RecordTableError> {
        let record = |url: &str, _: Option<u32>, _: Option<&str>| SourceFile::new(url_location(url), 0, None);
        let ids: Vec<u32> = self
            .urls
            .iter()
            .map(|url| {
                sources.id_of(url, None, None, record).map_err(|why| RecordTableError::Path { url: url.clone(), why })
            })
            .collect::<Result<_, _>>()?;
        let base = table.owned.len() as u64;
        table.owned.extend(self.inline);
        let renumber = |entry: ChunkEntry| match entry {
            ChunkEntry::Source { source, offset, length } => {
                ChunkEntry::Source { source: ids[source as usize], offset, length }
            }
            ChunkEntry::Owned { offset, length } => ChunkEntry::Owned { offset: base + offset, length },
            ChunkEntry::Missing => ChunkEntry::Missing,
        };
        match self.rows {
            Rows::Dense(entries) => table.entries.extend(entries.into_iter().map(renumber)),
            Rows::Sparse(list) => {
                let start = table.entries.len();
                table.entries.resize(start + self.needed, ChunkEntry::Missing);
                for (i, entry) in list {
                    table.entries[start + i] = renumber(entry);
                }
            }
        }
        Ok(())
    }
}

/// Every entry of the local array folder `folder` named as a record file (`refs.<k>.parq`,
/// `k < records`) is a regular file (or a link to one). A listing of the folder skips FIFOs,
/// sockets and directories: such a record file would be read as missing chunks, fill values.
fn check_local_record_files(folder: &std::path::Path, records: u64) -> Result<(), FileError> {
    let Ok(entries) = std::fs::read_dir(folder) else { return Ok(()) };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let record =
            name.strip_prefix("refs.").and_then(|r| r.strip_suffix(".parq")).and_then(|r| r.parse::<u64>().ok());
        if record.is_none_or(|k| k >= records) {
            continue;
        }
        let kind = match std::fs::metadata(entry.path()) {
            Ok(meta) if meta.is_file() => continue,
            Ok(meta) => crate::source::file_kind(&meta).to_string(),
            Err(e) => e.to_string(),
        };
        return Err((name, format!("not a regular file ({kind}): a record file must be one")));
    }
    Ok(())
}

/// The record files of array `path` that exist (`refs.<k>.parq`, `k < records`), by record number.
async fn record_files(
    root: &ObjectLocation,
    path: &str,
    records: u64,
) -> Result<BTreeMap<u64, object_store::path::Path>, String> {
    let prefix = object_path(root, path);
    let listed: Vec<object_store::ObjectMeta> =
        root.store.list(Some(&prefix)).try_collect().await.map_err(|e| format!("listing its record files: {e}"))?;
    let mut files = BTreeMap::new();
    for meta in listed {
        let Some(name) = meta.location.prefix_match(&prefix).and_then(|mut parts| parts.next()) else { continue };
        if meta.location.parts().count() != prefix.parts().count() + 1 {
            continue;
        }
        let record = name.as_ref().strip_prefix("refs.").and_then(|r| r.strip_suffix(".parq"));
        if let Some(record) = record.and_then(|r| r.parse::<u64>().ok()).filter(|&k| k < records) {
            files.insert(record, meta.location);
        }
    }
    Ok(files)
}

/// The store summary: vzarr's header where the set has one (provenance, warnings, containers).
fn store_info(
    header: &Map<String, Value>,
    sources: &SourceRegistry,
    groups: Vec<String>,
    arrays: Vec<ArrayInfo>,
) -> Result<StoreInfo, String> {
    let field = |key: &str| header.get(key).cloned();
    let damaged = |e: serde_json::Error| format!("damaged: {e}");
    let provenance = field("provenance").map(serde_json::from_value).transpose().map_err(damaged)?;
    let warnings = field("warnings").map(serde_json::from_value).transpose().map_err(damaged)?;
    let containers = header
        .get("source_containers")
        .and_then(Value::as_array)
        .map(|list| list.iter().filter_map(Value::as_str).map(url_location).collect())
        .unwrap_or_else(|| crate::trust::containers_of(&sources.table()));
    Ok(StoreInfo {
        format: "kerchunk-parquet".into(),
        format_version: crate::read::STORE_FORMAT_VERSION,
        generator: String::new(),
        sources: sources.len() as u64,
        groups,
        arrays,
        provenance: provenance.unwrap_or_default(),
        warnings: warnings.unwrap_or_default(),
        source_containers: containers,
        source_urls: Vec::new(),
    })
}
