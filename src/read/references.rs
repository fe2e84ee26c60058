//! kerchunk reference JSON opened as a store: version 1 with Zarr v3 keys, as `vzarr export
//! --kerchunk` and `vzarr scan --format kerchunk-json` write it (`store/kerchunk`), or with Zarr v2
//! keys, as Python kerchunk writes it (translated by `references/zarr_v2`). URL templates
//! (`"templates": {"u": "s3://bucket/long/prefix"}`, references naming `{{u}}`) are expanded.
//!
//! The document is read whole: every node's `zarr.json` (inline JSON text), and per array a dense
//! table of its chunks, `[url, offset, length]` a reference into a source file, inline `base64:`
//! (or raw text) bytes a store-owned chunk, no key a missing chunk. Sources are numbered in the order
//! the references name them. The `vzarr` header vzarr writes gives the sources' containers, the
//! provenance (which file holds which part of each array: what `verify` compares) and the scan's
//! warnings; documents other tools wrote have none. kerchunk records no fingerprint of its sources (size, time, ETag), so
//! reads cannot check that a source is the file that was scanned: they read it as it is now.

use std::collections::HashMap;
use std::sync::Arc;

use base64::Engine;
use bytes::Bytes;
use serde_json::Value;

pub(super) mod zarr_v2;

use super::objects::fetch_all;
use super::sources::SourceRegistry;
use super::{OpenOptions, ReadError, Store};
use crate::dataset::ChunkStats;
use crate::manifest::{ChunkEntry, SourceFile};
use crate::metadata::{group_from_json, group_json, to_text, ArrayMetadata};
use crate::source::resolve_with;
use crate::store::{ArrayInfo, StoreInfo};

/// A grid may have at most this many times more chunks than the document references (plus 2^20):
/// no table is sized by a shape alone.
const MAX_SPARSE_FACTOR: u64 = 64;

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
}

impl ReferenceView {
    /// The `zarr.json` of node `path`.
    pub(crate) fn node_metadata(&self, path: &str) -> Option<Bytes> {
        self.nodes.get(path).cloned()
    }

    /// Array `path`'s metadata and chunks.
    pub(crate) fn array(&self, path: &str) -> Option<(ArrayMetadata, Arc<ReferenceTable>)> {
        self.arrays.get(path).map(|(m, t)| (m.clone(), t.clone()))
    }

    /// Adds group `path` (other readers of references: `read/parquet_refs`).
    #[cfg(feature = "kerchunk-parquet")]
    pub(crate) fn insert_group(&mut self, path: &str, attributes: &crate::metadata::Attributes) {
        self.nodes.insert(path.to_string(), to_text(&group_json(attributes)).into_bytes().into());
    }

    /// Adds array `path` with its chunks.
    #[cfg(feature = "kerchunk-parquet")]
    pub(crate) fn insert_array(&mut self, path: &str, metadata: ArrayMetadata, table: ReferenceTable) {
        self.nodes.insert(path.to_string(), metadata.to_text().into_bytes().into());
        self.arrays.insert(path.to_string(), (metadata, Arc::new(table)));
    }
}

/// Whether `location` names a reference document rather than a store: a local regular file, or a
/// URL ending in `.json`.
pub(crate) fn looks_like_references(location: &str) -> bool {
    if crate::source::is_url(location) {
        return location.ends_with(".json");
    }
    std::fs::metadata(location).is_ok_and(|m| m.is_file())
}

/// The store the reference document at `location` describes.
///
/// # Errors
/// [`ReadError::Store`] when it cannot be read, is not a version 1 document, or a reference in it is
/// malformed or describes an array vzarr cannot read (naming the key).
pub(crate) async fn open_references(location: &str, options: &OpenOptions) -> Result<Store, ReadError> {
    let absolute = match crate::source::is_url(location) {
        true => location.to_string(),
        false => std::path::absolute(location).map_or_else(|_| location.to_string(), |p| p.display().to_string()),
    };
    let object = resolve_with(&absolute, &options.remote)?;
    let bytes = fetch_all(&object, location, "the reference document").await?;
    let bad =
        |what: String, reason: String| ReadError::Store { location: location.to_string(), what, source: reason.into() };
    let doc: Value = serde_json::from_slice(&bytes).map_err(|e| bad("parsing it".into(), format!("not JSON: {e}")))?;
    if doc.get("version").and_then(Value::as_u64) != Some(1) {
        return Err(bad("reading it".into(), "not a kerchunk reference document of version 1".into()));
    }
    let Some(refs) = doc.get("refs").and_then(Value::as_object) else {
        return Err(bad("reading it".into(), "it has no \"refs\" object".into()));
    };
    if doc.get("gen").is_some_and(|g| !g.is_null()) {
        return Err(bad("reading it".into(), "generated references (\"gen\") are not read".into()));
    }
    let key_error = |(key, reason): KeyError| bad(format!("reference {key:?}"), reason);
    let translated;
    let refs = if zarr_v2::is_v2(refs) {
        translated = zarr_v2::to_v3(refs).map_err(key_error)?;
        &translated
    } else {
        refs
    };
    let templates = templates(&doc).map_err(key_error)?;
    // vzarr's header lists the sources by id (its provenance's ids); other documents' sources are
    // numbered as their references are met.
    let urls: Vec<String> = doc
        .pointer("/vzarr/source_urls")
        .and_then(Value::as_array)
        .map(|list| list.iter().filter_map(Value::as_str).map(|url| expand(url, &templates)).collect())
        .unwrap_or_default();
    let sources = SourceRegistry::seeded(&urls, |url| SourceFile::new(self::location(url), 0, None));
    let (view, info) = build(refs, &sources, &doc, &templates).map_err(key_error)?;
    Ok(Store::open_references_view(location, object, info, sources, Arc::new(view), options))
}

/// A key of the document and what is wrong with it.
pub(crate) type KeyError = (String, String);

/// The document's URL templates: `{{name}}` in a reference's URL stands for `templates[name]`.
fn templates(doc: &Value) -> Result<Vec<(String, String)>, KeyError> {
    let Some(map) = doc.get("templates").filter(|t| !t.is_null()) else { return Ok(Vec::new()) };
    let map = map.as_object().ok_or_else(|| ("templates".to_string(), "not an object".to_string()))?;
    map.iter()
        .map(|(name, value)| match value.as_str() {
            Some(text) => Ok((format!("{{{{{name}}}}}"), text.to_string())),
            None => Err((format!("templates/{name}"), "not a string".to_string())),
        })
        .collect()
}

/// `url` with every template it names expanded.
fn expand(url: &str, templates: &[(String, String)]) -> String {
    if !url.contains("{{") {
        return url.to_string();
    }
    templates.iter().fold(url.to_string(), |url, (pattern, text)| url.replace(pattern.as_str(), text))
}

fn build(
    refs: &serde_json::Map<String, Value>,
    sources: &SourceRegistry,
    doc: &Value,
    templates: &[(String, String)],
) -> Result<(ReferenceView, StoreInfo), KeyError> {
    let mut view = ReferenceView::default();
    let mut groups = Vec::new();
    let mut arrays: Vec<String> = Vec::new();
    for (key, value) in refs {
        let Some(path) = node_path(key) else { continue };
        let text = match value {
            Value::String(text) => text.clone(),
            Value::Object(_) => value.to_string(),
            _ => return Err((key.clone(), "a metadata document that is not JSON text".into())),
        };
        let node: Value =
            crate::metadata::from_text(text.as_bytes()).map_err(|e| (key.clone(), format!("not JSON: {e}")))?;
        let invalid = |e: crate::metadata::MetadataError| (key.clone(), e.to_string());
        if crate::metadata::node_type(&node).map_err(invalid)? == "array" {
            let metadata = ArrayMetadata::from_json(&node).map_err(invalid)?;
            view.nodes.insert(path.to_string(), metadata.to_text().into_bytes().into());
            view.arrays.insert(path.to_string(), (metadata, Arc::default()));
            arrays.push(path.to_string());
        } else {
            let attributes = group_from_json(&node).map_err(invalid)?;
            view.nodes.insert(path.to_string(), to_text(&group_json(&attributes)).into_bytes().into());
            groups.push(path.to_string());
        }
    }
    let mut keys: HashMap<String, Vec<(&str, &Value)>> = HashMap::new();
    for (key, value) in refs {
        if node_path(key).is_some() {
            continue;
        }
        let array = array_of(key, &view).ok_or_else(|| (key.clone(), "not a chunk of any array".into()))?;
        keys.entry(array.to_string()).or_default().push((key.as_str(), value));
    }
    let mut infos = Vec::new();
    for path in &arrays {
        let chunks = keys.remove(path).unwrap_or_default();
        let Some((metadata, table)) = view.arrays.get_mut(path) else { continue };
        *table = Arc::new(chunk_table(path, metadata, &chunks, sources, templates)?);
        infos.push(ArrayInfo {
            stats: ChunkStats::of(table.entries.iter().copied()),
            ..ArrayInfo::of_grid(path, table.entries.len() as u64)
        });
    }
    groups.sort();
    let containers = doc
        .pointer("/vzarr/source_containers")
        .and_then(Value::as_array)
        .map(|list| list.iter().filter_map(Value::as_str).map(location).collect())
        .unwrap_or_else(|| crate::trust::containers_of(&sources.table()));
    let header = |key: &str| doc.pointer(&format!("/vzarr/{key}")).cloned();
    let damaged = |e: serde_json::Error| ("vzarr".to_string(), format!("its vzarr header is damaged: {e}"));
    let provenance = header("provenance").map(serde_json::from_value).transpose().map_err(damaged)?;
    let warnings = header("warnings").map(serde_json::from_value).transpose().map_err(damaged)?;
    let info = StoreInfo {
        format: "kerchunk".into(),
        format_version: crate::store::STORE_FORMAT_VERSION,
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

/// The dense chunk table of array `path` from its chunk keys.
fn chunk_table(
    path: &str,
    metadata: &ArrayMetadata,
    chunks: &[(&str, &Value)],
    sources: &SourceRegistry,
    templates: &[(String, String)],
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
    for &(key, value) in chunks {
        let fail = |reason: String| (key.to_string(), reason);
        let coords = chunk_coords(&key[path.len() + 1..], &shape)
            .ok_or_else(|| fail(format!("not a chunk key of the default encoding for a grid of {shape:?} chunks")))?;
        let linear = grid.linear_index(&coords) as usize;
        table.entries[linear] = match value {
            Value::Array(parts) => match parts.as_slice() {
                [Value::String(url), offset, length] => {
                    let (Some(offset), Some(length)) = (offset.as_u64(), length.as_u64()) else {
                        return Err(fail("offset and length must be non-negative integers".into()));
                    };
                    let record = |url: &str, _: Option<u32>, _: Option<&str>| SourceFile::new(location(url), 0, None);
                    let url = expand(url, templates);
                    if url.contains("{{") {
                        return Err(fail(format!("{url}: names a template the document does not define")));
                    }
                    let source = sources.id_of(&url, None, None, record).map_err(fail)?;
                    ChunkEntry::Source { source, offset, length }
                }
                [Value::String(_)] => return Err(fail("a reference to a whole file, with no byte range".into())),
                _ => return Err(fail("not [url, offset, length]".into())),
            },
            Value::String(text) => {
                let bytes = match text.strip_prefix("base64:") {
                    Some(encoded) => base64::engine::general_purpose::STANDARD
                        .decode(encoded)
                        .map_err(|e| fail(format!("invalid base64: {e}")))?,
                    None => text.as_bytes().to_vec(),
                };
                let entry = ChunkEntry::Owned { offset: table.owned.len() as u64, length: bytes.len() as u64 };
                table.owned.push(bytes.into());
                entry
            }
            _ => return Err(fail("neither a reference nor inline bytes".into())),
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
pub(super) fn location(url: &str) -> String {
    let path = url.strip_prefix("file://").filter(|p| p.starts_with('/'));
    path.map_or_else(|| url.to_string(), str::to_string)
}
