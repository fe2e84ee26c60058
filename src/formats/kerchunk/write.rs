//! kerchunk-style reference JSON (version 1) with Zarr v3 keys, for the Python stack (fsspec's
//! `ReferenceFileSystem`, zarr-python 3, xarray).
//!
//! ```text
//! {"version":1,"vzarr":{"source_containers":["file:///data/"],"provenance":{...},"warnings":[]},"refs":{
//! "zarr.json":"{\"zarr_format\":3,\"node_type\":\"group\",...}",
//! "tas/zarr.json":"{\"zarr_format\":3,\"node_type\":\"array\",...}",
//! "tas/c/0/0/0":["file:///data/tas_202401.nc",20480,1048576],
//! "time/c/0":"base64:AAAA..."
//! }}
//! ```
//!
//! Metadata documents are inline JSON text; a chunk in a source file is `[url, offset, length]`; a
//! store-owned chunk (rewritten, or a compact dataset) is inline `base64:` bytes; a missing chunk has
//! no key (readers return the fill value). URLs are absolute `file://` URLs (not percent-encoded, as
//! fsspec expects) unless a [`UrlPrefix`] rule rewrites the location.
//!
//! Metadata comes first (root group, groups, arrays, in store order), then every array's chunks in
//! row-major chunk order. Two entry points write the same document, byte for byte: [`KerchunkWriter`]
//! (a [`Writer`] of an in-memory [`VirtualDataset`], used by `vzarr scan --format kerchunk-json`) and
//! `formats/kerchunk/export` (from an opened store, a round of manifest entries at a time). Both stream: one entry at a time through a
//! buffered writer, never the whole document in memory. Both are atomic: the JSON is written to a
//! hidden sibling file and published by `store/publish` when complete.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::dataset::{OwnedBytesError, VirtualArray, VirtualDataset};
use crate::formats::urls::{written_source_urls, UrlPrefix};
use crate::manifest::ChunkEntry;
use crate::metadata::{chunk_key, group_json, node_key, noted_group_json, Attributes};
use crate::store::io_error;
use crate::store::{ArrayInfo, StoreInfo, WriteError, WriteOptions, Writer};
use crate::store::{OutputKind, Staged};

/// Version of the reference JSON written (kerchunk's `"version"` field).
pub const KERCHUNK_VERSION: u32 = 1;

/// What an export wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KerchunkReport {
    /// `zarr.json` documents (groups and arrays).
    pub metadata: u64,
    /// `[url, offset, length]` references.
    pub references: u64,
    /// Chunks inlined as `base64:` (store-owned bytes).
    pub inline: u64,
    /// Bytes of the JSON file.
    pub bytes: u64,
}

/// Writes a [`VirtualDataset`] as kerchunk reference JSON instead of a native store.
#[derive(Debug, Clone, Default)]
pub struct KerchunkWriter {
    /// Location rewrites, tried in order; the first match applies. Default: none (absolute `file://`
    /// URLs for local paths, URLs as stored).
    pub url_prefixes: Vec<UrlPrefix>,
    /// An array whose grid is rectilinear and whose decoded values take at most this many bytes is
    /// written as one inline `base64:` chunk of those values, readable by Zarr readers without the
    /// rectilinear grid (`formats/inline`); a larger one keeps its rectilinear grid (Zarr v3 keys can
    /// say it). Default: 0, nothing inlined: Zarr v3 keys say a rectilinear grid, and a reference
    /// document holds references, not copies of data; [`DEFAULT_INLINE_THRESHOLD`](crate::formats::DEFAULT_INLINE_THRESHOLD)
    /// is the Parquet writer's default.
    pub inline_threshold: u64,
}

impl Writer for KerchunkWriter {
    fn write(
        &self,
        dataset: &VirtualDataset,
        destination: &Path,
        options: &WriteOptions,
    ) -> Result<StoreInfo, WriteError> {
        let (dataset, _) = crate::formats::inline_rectilinear(dataset, self.inline_threshold, destination)?;
        let dataset = dataset.as_ref();
        let urls = written_source_urls(&dataset.sources, &self.url_prefixes, destination)?;
        let inputs = crate::store::local_sources(&dataset.sources);
        let staged = Staged::begin(destination, OutputKind::KerchunkJson, options.overwrite, &inputs)?;
        write_dataset_refs(dataset, &urls, staged.path())?;
        staged.publish()?;
        Ok(summary(dataset))
    }
}

/// Writes a whole in-memory dataset's references to `path`.
fn write_dataset_refs(dataset: &VirtualDataset, urls: &[String], path: &Path) -> Result<KerchunkReport, WriteError> {
    let mut refs = RefsWriter::create(path, urls, &dataset.provenance, &dataset.warnings)?;
    if !dataset.groups.iter().any(|g| g.path.is_empty()) {
        refs.text("zarr.json", &group_json(&Attributes::new()))?;
    }
    for group in &dataset.groups {
        refs.text(&node_key(&group.path), &noted_group_json(&group.attributes, &group.attribute_encodings))?;
    }
    for array in &dataset.arrays {
        refs.text(&node_key(&array.path), &array.metadata.to_json())?;
    }
    for array in &dataset.arrays {
        dataset_array_refs(&mut refs, array, urls)?;
    }
    refs.finish()
}

/// The chunk references of one in-memory array.
fn dataset_array_refs(refs: &mut RefsWriter, array: &VirtualArray, urls: &[String]) -> Result<(), WriteError> {
    let grid = &array.metadata.chunk_grid;
    let inconsistent = |path: &Path, reason: String| WriteError::BadName {
        path: path.to_path_buf(),
        node: array.path.clone(),
        reason,
    };
    for (linear, entry) in (0u64..).zip(&array.chunks) {
        let key = || chunk_key(&array.path, &grid.chunk_coords(linear));
        match entry {
            ChunkEntry::Missing => {}
            ChunkEntry::Source { source, offset, length } => {
                let url = urls
                    .get(source as usize)
                    .ok_or_else(|| inconsistent(&refs.path, format!("chunk {linear}: no source {source}")))?;
                refs.reference(&key(), url, offset, length)?;
            }
            ChunkEntry::Owned { offset, length } => {
                let bytes = array.chunks.owned_chunk(offset, length).map_err(|e| match e {
                    OwnedBytesError::OutOfRange { .. } => {
                        inconsistent(&refs.path, format!("chunk {linear}: owned bytes {offset}+{length} out of range"))
                    }
                    source => WriteError::Owned {
                        path: refs.path.clone(),
                        array: array.path.clone(),
                        source: Box::new(source),
                    },
                })?;
                refs.inline(&key(), &bytes)?;
            }
        }
    }
    Ok(())
}

fn summary(dataset: &VirtualDataset) -> StoreInfo {
    StoreInfo::of(dataset, "kerchunk-json", dataset.arrays.iter().map(ArrayInfo::of).collect())
}

/// The streaming JSON writer: `{"version":1,"refs":{` + one `key: value` per call + `}}`.
pub(crate) struct RefsWriter {
    out: BufWriter<File>,
    path: PathBuf,
    first: bool,
    report: KerchunkReport,
}

impl RefsWriter {
    /// Starts the document; `urls` (the source URLs, by source id) are recorded under
    /// `"vzarr": {"source_urls": [...]}` with the containers holding them (`source_containers`, for
    /// readers that authorize sources), beside the dataset's `provenance` and `warnings` (what
    /// `vzarr verify` and `info` read back; fsspec ignores the key).
    pub(crate) fn create(
        path: &Path,
        urls: &[String],
        provenance: &crate::dataset::Provenance,
        warnings: &[crate::dataset::ScanWarning],
    ) -> Result<Self, WriteError> {
        let file = File::create(path).map_err(io_error(path, "creating reference file"))?;
        let mut refs = RefsWriter {
            out: BufWriter::new(file),
            path: path.to_path_buf(),
            first: true,
            report: KerchunkReport::default(),
        };
        let containers = crate::trust::containers_of_locations(urls.iter().map(String::as_str));
        let header = serde_json::json!({
            "source_containers": containers,
            // The sources by id (the ids of `provenance`): the reader numbers them as met otherwise.
            "source_urls": urls,
            "provenance": provenance,
            "warnings": warnings,
        });
        let header = serde_json::to_string(&header).map_err(|e| io_error(path, "encoding JSON")(e.into()))?;
        let head = format!("{{\"version\":{KERCHUNK_VERSION},\"vzarr\":{header},\"refs\":{{");
        refs.out.write_all(head.as_bytes()).map_err(io_error(path, "writing reference file"))?;
        Ok(refs)
    }

    /// Writes `,\n"key":` (no comma before the first entry).
    fn key(&mut self, key: &str) -> std::io::Result<()> {
        self.out.write_all(if self.first { b"\n" } else { b",\n" })?;
        self.first = false;
        serde_json::to_writer(&mut self.out, key)?;
        self.out.write_all(b":")
    }

    /// A metadata document as inline JSON text, formatted as the native writer formats `zarr.json`
    /// (so a scan straight to JSON and an export of the native store write the same bytes).
    pub(crate) fn text(&mut self, key: &str, doc: &serde_json::Value) -> Result<(), WriteError> {
        self.raw_text(key, crate::metadata::to_text(doc).as_bytes())
    }

    /// A stored metadata document (UTF-8 JSON bytes), inline verbatim as JSON text.
    pub(crate) fn raw_text(&mut self, key: &str, doc: &[u8]) -> Result<(), WriteError> {
        let text = std::str::from_utf8(doc)
            .map_err(|e| io_error(&self.path, &format!("{key} is not UTF-8"))(std::io::Error::other(e)))?;
        self.report.metadata += 1;
        self.key(key).and_then(|()| Ok(serde_json::to_writer(&mut self.out, text)?)).map_err(self.error())
    }

    /// A chunk in a file: `[url, offset, length]`.
    pub(crate) fn reference(&mut self, key: &str, url: &str, offset: u64, length: u64) -> Result<(), WriteError> {
        self.report.references += 1;
        self.key(key)
            .and_then(|()| Ok(serde_json::to_writer(&mut self.out, &(url, offset, length))?))
            .map_err(self.error())
    }

    /// A chunk's bytes inline: `"base64:..."`.
    pub(crate) fn inline(&mut self, key: &str, bytes: &[u8]) -> Result<(), WriteError> {
        self.report.inline += 1;
        let text = format!("\"base64:{}\"", crate::base64::encode(bytes));
        self.key(key).and_then(|()| self.out.write_all(text.as_bytes())).map_err(self.error())
    }

    /// Closes the document, flushes and syncs the file.
    pub(crate) fn finish(mut self) -> Result<KerchunkReport, WriteError> {
        let path = self.path.clone();
        self.out.write_all(b"\n}}\n").map_err(io_error(&path, "writing reference file"))?;
        let file = self.out.into_inner().map_err(|e| io_error(&path, "writing reference file")(e.into_error()))?;
        self.report.bytes = file.metadata().map_or(0, |m| m.len());
        Ok(self.report)
    }

    fn error(&self) -> impl FnOnce(std::io::Error) -> WriteError {
        io_error(&self.path, "writing reference file")
    }
}
