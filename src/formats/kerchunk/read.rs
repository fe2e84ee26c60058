//! kerchunk reference JSON opened as a store (the kerchunk [`StoreBackend`]): version 1 with Zarr v3 keys, as `vzarr export
//! --kerchunk` and `vzarr scan --format kerchunk-json` write it (`formats/kerchunk`), or with Zarr v2
//! keys, as Python kerchunk writes it (translated by `formats/kerchunk/zarr_v2`). URL templates
//! (`"templates": {"u": "s3://bucket/long/prefix"}`, references naming `{{u}}`) are expanded.
//!
//! The document is read into a compact form as it is parsed (`formats/kerchunk/read/parse`: no JSON tree of the
//! whole document), then into every node's `zarr.json` (inline JSON text), and per array a dense
//! table of its chunks, `[url, offset, length]` a reference into a source file, inline `base64:`
//! (or raw text) bytes a store-owned chunk, no key a missing chunk. Sources are numbered in the order
//! the references name them. The `vzarr` header vzarr writes gives the sources' containers, the
//! provenance (which file holds which part of each array: what `verify` compares) and the scan's
//! warnings; documents other tools wrote have none. kerchunk records no fingerprint of its sources (size, time, ETag), so
//! reads cannot check that a source is the file that was scanned: they read it as it is now.
//!
//! Templates are expanded once per distinct URL, never recursively (a template whose text names a
//! template is refused), each URL to at most [`MAX_URL_BYTES`] and all of them together to a bound
//! set by the document's size: a document of a few hundred kB can no longer ask for gigabytes.

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use serde_json::Value;

pub(super) mod parse;

use super::zarr_v2::decode as zarr_v2;
use crate::read::StoreFormat;
use crate::read::StoreInner;
use crate::read::{ChunkIndex, Opened, StoreBackend};
pub(crate) use parse::KeyError;
use parse::RawRef;

use crate::dataset::ChunkStats;
use crate::formats::{Address, Detect};
use crate::manifest::{ChunkEntry, SourceFile};
use crate::metadata::{group_from_json, to_text, ArrayMetadata};
use crate::read::objects::fetch_all;
use crate::read::sources::SourceRegistry;
use crate::read::{ArrayInfo, StoreInfo};
use crate::read::{OpenOptions, ReadError};
use crate::source::{resolve_with, Location};

/// A grid may have at most this many times more chunks than the document references (plus 2^20):
/// no table is sized by a shape alone.
const MAX_SPARSE_FACTOR: u64 = 64;

/// Longest URL a reference may expand to (bytes).
const MAX_URL_BYTES: usize = 64 << 10;

/// Bytes all of a document's distinct URLs may expand to beyond twice its size.
const MAX_EXPANDED_BASE: usize = 64 << 20;

/// One array's chunks, as the document lists them.
#[derive(Debug, Default)]
pub(crate) struct ReferenceTable {
    /// One entry per chunk of the grid, row-major.
    pub(crate) entries: Vec<ChunkEntry>,
    /// Store-owned chunks' bytes; an [`ChunkEntry::Owned`] offset is an index here.
    pub(crate) owned: Vec<Bytes>,
}

/// The nodes and chunk tables of a reference document.
#[derive(Debug, Default)]
pub(crate) struct ReferenceView {
    nodes: HashMap<String, Bytes>,
    arrays: HashMap<String, (ArrayMetadata, Arc<ReferenceTable>)>,
    /// Whether the references came from a kerchunk Parquet set (`formats/parquet/read`) rather than a
    /// JSON document.
    parquet: bool,
}

impl ReferenceView {
    /// An empty view of a kerchunk Parquet reference set (`formats/parquet/read`).
    #[cfg(feature = "kerchunk-parquet")]
    pub(crate) fn parquet() -> Self {
        ReferenceView { parquet: true, ..ReferenceView::default() }
    }

    /// Adds group `path` (other readers of references: `formats/parquet/read`).
    #[cfg(feature = "kerchunk-parquet")]
    pub(crate) fn insert_group(&mut self, path: &str, attributes: &crate::metadata::Attributes) {
        self.nodes.insert(path.to_string(), to_text(&crate::metadata::group_json(attributes)).into_bytes().into());
    }

    /// Adds array `path` with its chunks.
    pub(crate) fn insert_array(&mut self, path: &str, metadata: ArrayMetadata, table: ReferenceTable) {
        self.nodes.insert(path.to_string(), metadata.to_text().into_bytes().into());
        self.arrays.insert(path.to_string(), (metadata, Arc::new(table)));
    }
}

/// Whether `location` names a reference document rather than a store: a local regular file, or a
/// URL ending in `.json`.
pub(crate) fn detect(location: &Location) -> Detect {
    let document = match location {
        Location::Url(url) => url.ends_with(".json"),
        Location::Local(path) => std::fs::metadata(path).is_ok_and(|m| m.is_file()),
    };
    Detect::yes_if(document)
}

/// The reference document at `address` (a path or URL).
///
/// # Errors
/// [`ReadError::Store`] when it cannot be read, is not a version 1 document, or a reference in it is
/// malformed or describes an array vzarr cannot read (naming the key).
pub(crate) async fn open(address: &Address, options: &OpenOptions) -> Result<Opened, ReadError> {
    let name = address.name.as_str();
    let object = resolve_with(&address.absolute()?, &options.remote)?;
    let bytes = fetch_all(&object, name, "the reference document").await?;
    let bad =
        |what: String, reason: String| ReadError::Store { location: name.to_string(), what, source: reason.into() };
    let mut doc = parse::parse(&bytes).map_err(|e| bad("parsing it".into(), format!("not JSON: {e}")))?;
    let size = bytes.len();
    drop(bytes);
    if doc.version.as_ref().and_then(Value::as_u64) != Some(1) {
        return Err(bad("reading it".into(), "not a kerchunk reference document of version 1".into()));
    }
    if !doc.has_refs {
        return Err(bad("reading it".into(), "it has no \"refs\" object".into()));
    }
    if doc.generated {
        return Err(bad("reading it".into(), "generated references (\"gen\") are not read".into()));
    }
    let key_error = |(key, reason): KeyError| bad(format!("reference {key:?}"), reason);
    if zarr_v2::is_v2(&doc.meta) {
        doc.meta = zarr_v2::to_v3(std::mem::take(&mut doc.meta), &mut doc.chunks).map_err(key_error)?;
    }
    let templates = Templates::of(doc.templates.as_ref()).map_err(key_error)?;
    let mut budget = Budget::new(size);
    // vzarr's header lists the sources by id (its provenance's ids); other documents' sources are
    // numbered as their references are met.
    let header = |key: &str| doc.vzarr.as_ref().and_then(|v| v.get(key));
    let mut urls = Vec::new();
    for url in header("source_urls").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str) {
        let url =
            templates.expand(url, &mut budget).map_err(|e| key_error(("vzarr/source_urls".into(), e.to_string())))?;
        urls.push(url);
    }
    let expanded: Vec<Result<String, String>> =
        doc.urls.iter().map(|u| templates.expand(u, &mut budget).map_err(|e| e.to_string())).collect();
    let sources = SourceRegistry::seeded(&urls, |url| SourceFile::new(self::location(url), 0, None));
    let (view, info) = build(doc, &sources, &expanded).map_err(key_error)?;
    Ok(Opened { info, sources, backend: Arc::new(view) })
}

#[async_trait::async_trait]
impl StoreBackend for ReferenceView {
    fn kind(&self) -> StoreFormat {
        match self.parquet {
            true => StoreFormat::KerchunkParquet,
            false => StoreFormat::KerchunkJson,
        }
    }

    async fn node_metadata(&self, store: &StoreInner, path: &str) -> Result<Bytes, ReadError> {
        self.nodes.get(path).cloned().ok_or_else(|| crate::read::no_node(store, path, "the reference document"))
    }

    async fn array(&self, store: &StoreInner, path: &str) -> Result<(ArrayMetadata, Arc<dyn ChunkIndex>), ReadError> {
        match self.arrays.get(path) {
            Some((metadata, table)) => Ok((metadata.clone(), table.clone())),
            None => Err(crate::read::no_node(store, path, "the reference document")),
        }
    }

    /// A reference document records no fingerprint of its sources: nothing to compare.
    async fn check_source(
        &self,
        _store: &StoreInner,
        _id: u32,
        _file: SourceFile,
        _location: &crate::source::ObjectLocation,
    ) -> Result<(), ReadError> {
        Ok(())
    }
}

#[async_trait::async_trait]
impl ChunkIndex for ReferenceTable {
    async fn entries(
        &self,
        _store: &StoreInner,
        _array: &str,
        range: std::ops::Range<u64>,
    ) -> Result<Vec<ChunkEntry>, ReadError> {
        let n = self.entries.len() as u64;
        let (start, end) = (range.start.min(n) as usize, range.end.min(n) as usize);
        Ok(self.entries[start..end.max(start)].to_vec())
    }

    async fn entries_at(
        &self,
        _store: &StoreInner,
        _array: &str,
        linear: &[u64],
    ) -> Result<Vec<ChunkEntry>, ReadError> {
        Ok(linear.iter().map(|&l| self.entries.get(l as usize).copied().unwrap_or(ChunkEntry::Missing)).collect())
    }

    async fn owned_chunks(
        &self,
        store: &StoreInner,
        array: &str,
        ranges: &[std::ops::Range<u64>],
        _concurrent: usize,
    ) -> Result<Vec<Bytes>, ReadError> {
        ranges
            .iter()
            .map(|range| {
                let bytes = self.owned.get(range.start as usize).filter(|b| b.len() as u64 == range.end - range.start);
                bytes.cloned().ok_or_else(|| ReadError::Store {
                    location: store.location.clone(),
                    what: array.to_string(),
                    source: format!("no inline chunk {} of {} bytes", range.start, range.end - range.start).into(),
                })
            })
            .collect()
    }
}

/// The document's URL templates: `{{name}}` in a reference's URL stands for the text of template
/// `name`.
#[derive(Debug, Default)]
struct Templates(HashMap<String, String>);

/// Bytes the document's URLs may still expand to.
struct Budget(usize);

impl Budget {
    /// The budget of a document of `size` bytes.
    fn new(size: usize) -> Self {
        Budget(MAX_EXPANDED_BASE.saturating_add(size.saturating_mul(2)))
    }
}

impl Templates {
    /// The `templates` object of a document.
    ///
    /// # Errors
    /// The key and why: not an object, a template that is not a string, names another template or
    /// is longer than a URL may be.
    fn of(value: Option<&Value>) -> Result<Self, KeyError> {
        let Some(map) = value.filter(|t| !t.is_null()) else { return Ok(Templates::default()) };
        let map = map.as_object().ok_or_else(|| ("templates".to_string(), "not an object".to_string()))?;
        let mut templates = HashMap::new();
        for (name, value) in map {
            let key = || format!("templates/{name}");
            let text = value.as_str().ok_or_else(|| (key(), "not a string".to_string()))?;
            if text.contains("{{") {
                return Err((key(), "names another template: templates are not expanded recursively".into()));
            }
            if text.len() > MAX_URL_BYTES {
                return Err((key(), format!("{} bytes, more than a URL may have ({MAX_URL_BYTES})", text.len())));
            }
            templates.insert(name.clone(), text.to_string());
        }
        Ok(Templates(templates))
    }

    /// `url` with every `{{name}}` replaced by its template's text, once (the text is not looked at
    /// again), taken from `budget`.
    ///
    /// # Errors
    /// Why not: a template the document does not define, a URL longer than [`MAX_URL_BYTES`], the
    /// document's URLs together past its budget.
    fn expand(&self, url: &str, budget: &mut Budget) -> Result<String, ExpandError> {
        let too_long = || ExpandError::TooLong;
        let mut out = String::new();
        let mut rest = url;
        while let Some(start) = rest.find("{{") {
            let Some(end) = rest[start + 2..].find("}}") else { break };
            let name = &rest[start + 2..start + 2 + end];
            let text = self.0.get(name).ok_or_else(|| {
                let shown: String = url.chars().take(200).collect();
                ExpandError::Undefined { shown, name: name.to_string() }
            })?;
            if out.len() + start + text.len() > MAX_URL_BYTES {
                return Err(too_long());
            }
            out.push_str(&rest[..start]);
            out.push_str(text);
            rest = &rest[start + 2 + end + 2..];
        }
        if out.len() + rest.len() > MAX_URL_BYTES {
            return Err(too_long());
        }
        out.push_str(rest);
        budget.0 = budget.0.checked_sub(out.len()).ok_or(ExpandError::Budget)?;
        Ok(out)
    }
}

/// Why a URL's templates do not expand ([`Templates::expand`]).
#[derive(Debug, thiserror::Error)]
enum ExpandError {
    /// A template the document does not define.
    #[error("{shown}: names template {name:?}, which the document does not define")]
    Undefined {
        /// The URL (its first 200 characters).
        shown: String,
        /// The template's name.
        name: String,
    },
    /// A URL longer than [`MAX_URL_BYTES`].
    #[error("its URL expands to more than {} bytes", MAX_URL_BYTES)]
    TooLong,
    /// The document's URLs together past its budget.
    #[error("the document's URLs expand to more bytes than twice its size allows (templates too long)")]
    Budget,
}

/// The nodes and chunk tables of `doc`, whose references' URLs expand to `urls` (by index).
fn build(
    doc: parse::Parsed,
    sources: &SourceRegistry,
    urls: &[Result<String, String>],
) -> Result<(ReferenceView, StoreInfo), KeyError> {
    let mut view = ReferenceView::default();
    let mut groups = Vec::new();
    let mut arrays: Vec<String> = Vec::new();
    for (key, value) in doc.meta {
        let Some(path) = node_path(&key) else { continue };
        let (array, text) = node_text(&key, value, &mut view, path)?;
        view.nodes.insert(path.to_string(), text.into_bytes().into());
        match array {
            true => arrays.push(path.to_string()),
            false => groups.push(path.to_string()),
        }
    }
    let mut keys: HashMap<String, Vec<(Box<str>, RawRef)>> = HashMap::new();
    for (key, value) in doc.chunks {
        let array = array_of(&key, &view).ok_or_else(|| (key.to_string(), "not a chunk of any array".into()))?;
        keys.entry(array.to_string()).or_default().push((key, value));
    }
    let mut infos = Vec::new();
    for path in &arrays {
        let chunks = keys.remove(path).unwrap_or_default();
        let Some((metadata, table)) = view.arrays.get_mut(path) else { continue };
        *table = Arc::new(chunk_table(path, metadata, chunks, sources, urls)?);
        infos.push(ArrayInfo {
            stats: ChunkStats::of(table.entries.iter().copied()),
            ..ArrayInfo::of_grid(path, table.entries.len() as u64)
        });
    }
    groups.sort();
    let header = |key: &str| doc.vzarr.as_ref().and_then(|v| v.get(key)).cloned();
    let containers = header("source_containers")
        .as_ref()
        .and_then(Value::as_array)
        .map(|list| list.iter().filter_map(Value::as_str).map(location).collect())
        .unwrap_or_else(|| crate::trust::containers_of(&sources.table()));
    let damaged = |e: serde_json::Error| ("vzarr".to_string(), format!("its vzarr header is damaged: {e}"));
    let provenance = header("provenance").map(serde_json::from_value).transpose().map_err(damaged)?;
    let warnings = header("warnings").map(serde_json::from_value).transpose().map_err(damaged)?;
    let info = StoreInfo {
        format: "kerchunk".into(),
        format_version: crate::read::STORE_FORMAT_VERSION,
        generator: String::new(),
        sources: sources.len() as u64,
        groups,
        arrays: infos,
        provenance: provenance.unwrap_or_default(),
        warnings: warnings.unwrap_or_default(),
        source_containers: containers,
        source_urls: Vec::new(),
    };
    Ok((view, info))
}

/// The `zarr.json` text vzarr serves for metadata key `key` (node `path`) whose value is `value`
/// (JSON text, or an object), and whether the node is an array (its metadata then added to `view`).
/// Each form of the document is dropped as soon as the next is made, and attributes are moved, not
/// copied: a document whose attributes hold a 200 MB string is held at a small multiple of it.
fn node_text(key: &str, value: Value, view: &mut ReferenceView, path: &str) -> Result<(bool, String), KeyError> {
    let fail = |reason: String| (key.to_string(), reason);
    let mut node = match value {
        Value::String(text) => {
            crate::metadata::from_text(text.as_bytes()).map_err(|e| fail(format!("not JSON: {e}")))?
        }
        value @ Value::Object(_) => value,
        _ => return Err(fail("a metadata document that is not JSON text".into())),
    };
    let invalid = |e: crate::metadata::MetadataError| fail(e.to_string());
    let attributes = match node.as_object_mut().and_then(|o| o.remove("attributes")) {
        None | Some(Value::Null) => crate::metadata::Attributes::new(),
        Some(Value::Object(map)) => map,
        Some(_) => return Err(fail("invalid attributes: not an object".into())),
    };
    if crate::metadata::node_type(&node).map_err(invalid)? == "array" {
        let mut metadata = ArrayMetadata::from_json(&node).map_err(invalid)?;
        drop(node);
        metadata.attributes = attributes;
        let text = metadata.to_text();
        view.arrays.insert(path.to_string(), (metadata, Arc::default()));
        Ok((true, text))
    } else {
        group_from_json(&node).map_err(invalid)?;
        // A group's note of its base64 attributes travels with it, as the writers write it.
        let encodings = crate::metadata::group_encodings_from_json(&node).map_err(invalid)?;
        drop(node);
        Ok((false, to_text(&crate::metadata::noted_group_json(&attributes, &encodings))))
    }
}

/// The node path of a metadata key (`zarr.json` -> `""`, `grp/tas/zarr.json` -> `grp/tas`).
fn node_path(key: &str) -> Option<&str> {
    if key == "zarr.json" {
        return Some("");
    }
    key.strip_suffix("/zarr.json")
}

/// The array a chunk key (`<path>/c/<i>/<j>`) belongs to.
fn array_of<'v>(key: &str, view: &'v ReferenceView) -> Option<&'v str> {
    let mut end = key.len();
    while let Some(slash) = key[..end].rfind('/') {
        if let Some((path, _)) = view.arrays.get_key_value(&key[..slash]) {
            return Some(path.as_str());
        }
        end = slash;
    }
    None
}

/// The dense chunk table of array `path` from its chunk keys; reference URLs expand to `urls`.
fn chunk_table(
    path: &str,
    metadata: &ArrayMetadata,
    chunks: Vec<(Box<str>, RawRef)>,
    sources: &SourceRegistry,
    urls: &[Result<String, String>],
) -> Result<ReferenceTable, KeyError> {
    let grid = &metadata.chunk_grid;
    let shape = grid.grid_shape();
    let n = grid.checked_num_chunks().ok_or_else(|| (path.to_string(), "its grid has too many chunks".into()))?;
    let most = (chunks.len() as u64).saturating_mul(MAX_SPARSE_FACTOR).saturating_add(1 << 20);
    if n > most {
        let reason = format!("{n} chunks in its grid but only {} referenced: too sparse to open", chunks.len());
        return Err((path.to_string(), reason));
    }
    let mut table = ReferenceTable { entries: vec![ChunkEntry::Missing; n as usize], owned: Vec::new() };
    for (key, value) in chunks {
        let fail = |reason: String| (key.to_string(), reason);
        let coords = chunk_coords(&key[path.len() + 1..], &shape)
            .ok_or_else(|| fail(format!("not a chunk key of the default encoding for a grid of {shape:?} chunks")))?;
        let linear = grid.linear_index(&coords) as usize;
        table.entries[linear] = match value {
            RawRef::Range { url, offset, length } => {
                if offset.checked_add(length).is_none() {
                    return Err(fail(format!("{length} bytes at offset {offset} end past 2^64")));
                }
                let url = urls.get(url as usize).cloned().unwrap_or_else(|| Err("no such URL".into()));
                let url = url.map_err(fail)?;
                let record = |url: &str, _: Option<u32>, _: Option<&str>| SourceFile::new(location(url), 0, None);
                let source = sources.id_of(&url, None, None, record).map_err(fail)?;
                ChunkEntry::Source { source, offset, length }
            }
            RawRef::Inline(bytes) => {
                let entry = ChunkEntry::Owned { offset: table.owned.len() as u64, length: bytes.len() as u64 };
                table.owned.push(bytes);
                entry
            }
            RawRef::Bad(reason) => return Err(fail(reason)),
        };
    }
    Ok(table)
}

/// The chunk coordinates of a key `c/<i>/<j>` (just `c` for a 0-d array) inside a grid of `shape`.
fn chunk_coords(key: &str, shape: &[u64]) -> Option<Vec<u64>> {
    let mut parts = key.split('/');
    if parts.next()? != "c" {
        return None;
    }
    let coords: Vec<u64> = parts.map(|p| p.parse().ok()).collect::<Option<_>>()?;
    (coords.len() == shape.len() && coords.iter().zip(shape).all(|(c, n)| c < n)).then_some(coords)
}

/// A reference's URL as a location a reader opens: a local path for `file://` URLs.
pub(crate) fn location(url: &str) -> String {
    let path = url.strip_prefix("file://").filter(|p| p.starts_with('/'));
    path.map_or_else(|| url.to_string(), str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn templates(map: Value) -> Result<Templates, KeyError> {
        Templates::of(Some(&map))
    }

    #[test]
    fn templates_expand_once_and_within_bounds() {
        let t = templates(serde_json::json!({"u": "s3://bucket/prefix", "v": "x"})).unwrap();
        let mut budget = Budget::new(0);
        assert_eq!(t.expand("{{u}}/a/{{v}}.nc", &mut budget).unwrap(), "s3://bucket/prefix/a/x.nc");
        assert_eq!(t.expand("plain/{{ no", &mut budget).unwrap(), "plain/{{ no");
        assert!(t.expand("{{w}}/a", &mut budget).unwrap_err().to_string().contains("names template \"w\""));
        // The fault campaign's bomb: a 50 kB template named 100,000 times (it allocated 5 GB).
        let big = "b".repeat(50_000);
        let bomb = templates(serde_json::json!({ "a": big })).unwrap();
        let url = "{{a}}".repeat(100_000);
        let started = std::time::Instant::now();
        assert!(bomb.expand(&url, &mut budget).unwrap_err().to_string().contains("expands to more than 65536 bytes"));
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
        // A template naming a template is refused, not expanded again.
        let (key, reason) = templates(serde_json::json!({"a": "{{b}}{{b}}", "b": "x"})).unwrap_err();
        assert_eq!(key, "templates/a");
        assert!(reason.contains("not expanded recursively"), "{reason}");
        // All URLs together are bounded by the document's size.
        let mut small = Budget(30);
        assert!(t.expand("{{u}}/1", &mut small).is_ok());
        assert!(t.expand("{{u}}/2", &mut small).unwrap_err().to_string().contains("twice its size"));
    }
}
