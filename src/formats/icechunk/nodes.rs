//! What every way of committing writes besides the references themselves: the nodes' `zarr.json`
//! (strict JSON, regular grid dimensions as runs), each source's location and checksum, Icechunk's
//! chunk indices and virtual references.

use bytes::Bytes;
use icechunk::format::manifest::{VirtualChunkLocation, VirtualChunkRef};
use icechunk::format::{ChunkIndices, Path as IcPath};
use icechunk::store::SetVirtualRefsResult;
use icechunk::Store;
use serde_json::Value;

use super::location::{checksum, container_prefixes, source_url};
use super::IcechunkError;
use crate::dataset::{VirtualArray, VirtualDataset};
use crate::formats::check_node_path;
use crate::metadata::{group_json, node_key, noted_group_json, Attributes};

/// The per-source facts every reference needs.
pub(super) struct Sources {
    pub(super) urls: Vec<VirtualChunkLocation>,
    pub(super) checksums: Vec<Option<icechunk::format::manifest::Checksum>>,
}

/// Checks that every node path of `dataset` can be a node of the repository.
pub(super) fn check_nodes(dataset: &VirtualDataset, repo: &str) -> Result<(), IcechunkError> {
    let nodes = dataset.groups.iter().map(|g| &g.path).chain(dataset.arrays.iter().map(|a| &a.path));
    for node in nodes.filter(|n| !n.is_empty()) {
        check_node_path(node).map_err(|reason| IcechunkError::Node {
            repo: repo.to_string(),
            node: node.clone(),
            reason,
        })?;
    }
    Ok(())
}

/// Every source's location and checksum, and the container prefixes covering them.
pub(super) fn sources(dataset: &VirtualDataset) -> Result<(Sources, Vec<String>), IcechunkError> {
    let mut urls = Vec::with_capacity(dataset.sources.len());
    let mut checksums = Vec::with_capacity(dataset.sources.len());
    let mut texts = Vec::with_capacity(dataset.sources.len());
    for file in dataset.sources.iter() {
        let url = source_url(&file.location)?;
        let location = VirtualChunkLocation::from_url(&url)
            .map_err(|e| IcechunkError::Location { location: file.location.clone(), reason: e.to_string() })?;
        texts.push(location.url().to_string());
        urls.push(location);
        checksums.push(checksum(file));
    }
    let prefixes = container_prefixes(texts.iter().map(String::as_str));
    Ok((Sources { urls, checksums }, prefixes))
}

/// Replaces the branch's content by the dataset's groups and arrays (metadata only).
pub(super) async fn write_nodes(store: &Store, dataset: &VirtualDataset, repo: &str) -> Result<(), IcechunkError> {
    let failed =
        |node: &str, e: String| IcechunkError::Node { repo: repo.to_string(), node: node.to_string(), reason: e };
    store.clear().await.map_err(|e| failed("/", format!("clearing the previous content: {e}")))?;
    if !dataset.groups.iter().any(|g| g.path.is_empty()) {
        set_json(store, "", &group_json(&Attributes::new())).await.map_err(|e| failed("/", e.to_string()))?;
    }
    for group in &dataset.groups {
        set_json(store, &group.path, &noted_group_json(&group.attributes, &group.attribute_encodings))
            .await
            .map_err(|e| failed(&group.path, e.to_string()))?;
    }
    for array in &dataset.arrays {
        let doc = icechunk_array_json(array.metadata.to_json(), &array.metadata.chunk_grid);
        set_json(store, &array.path, &doc).await.map_err(|e| failed(&array.path, e.to_string()))?;
    }
    Ok(())
}

/// `doc` with every non-finite attribute marker replaced by its token as a string.
fn strict(doc: Value) -> Value {
    match doc {
        Value::Array(items) => Value::Array(items.into_iter().map(strict).collect()),
        Value::Object(map) => match crate::metadata::attribute_f64(&Value::Object(map.clone())) {
            Some(v) if !v.is_finite() => {
                let token = if v.is_nan() {
                    "NaN"
                } else if v > 0.0 {
                    "Infinity"
                } else {
                    "-Infinity"
                };
                Value::from(token)
            }
            _ => Value::Object(map.into_iter().map(|(k, v)| (k, strict(v))).collect()),
        },
        other => other,
    }
}

/// A chunk index Icechunk cannot hold (its indices are 32-bit).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("a chunk index exceeds Icechunk's 32-bit limit")]
pub(super) struct IndexLimit;

/// Why a node's `zarr.json` was not written ([`set_json`]).
#[derive(Debug, thiserror::Error)]
pub(super) enum SetJsonError {
    /// The document does not encode.
    #[error("{0}")]
    Json(#[source] serde_json::Error),
    /// Icechunk's store refused it.
    #[error("{0}")]
    Store(#[source] icechunk::store::StoreError),
}

/// Writes a node's `zarr.json`. Icechunk parses it as strict JSON, which has no `NaN` / `Infinity`
/// tokens, so non-finite float attributes are the strings `"NaN"`, `"Infinity"`, `"-Infinity"` here
/// (the other outputs write the bare tokens, see `metadata::json_text`).
pub(super) async fn set_json(store: &Store, node: &str, doc: &Value) -> Result<(), SetJsonError> {
    let bytes = serde_json::to_vec(&strict(doc.clone())).map_err(SetJsonError::Json)?;
    store.set(&node_key(node), Bytes::from(bytes)).await.map_err(SetJsonError::Store)
}

/// An array's `zarr.json` with every bare-integer (regular) dimension of a rectilinear grid written
/// as the equivalent run `[[size, count]]`.
pub(crate) fn icechunk_array_json(mut doc: Value, grid: &crate::grid::ChunkGrid) -> Value {
    let shapes = doc.pointer_mut("/chunk_grid/configuration/chunk_shapes").and_then(Value::as_array_mut);
    if let Some(shapes) = shapes {
        for (entry, dim) in shapes.iter_mut().zip(grid.dims()) {
            if let Some(size) = entry.as_u64() {
                let count = dim.num_chunks();
                *entry = if count == 0 { Value::Array(Vec::new()) } else { serde_json::json!([[size, count]]) };
            }
        }
    }
    doc
}

/// The store-owned bytes `offset..offset + length` of `array`.
pub(super) fn owned_bytes(
    array: &VirtualArray,
    offset: u64,
    length: u64,
) -> Result<std::borrow::Cow<'_, [u8]>, crate::dataset::OwnedBytesError> {
    array.chunks.owned_chunk(offset, length)
}

/// Icechunk's chunk indices of grid coordinates (32-bit each).
pub(super) fn indices(coords: &[u64]) -> Result<ChunkIndices, IndexLimit> {
    let coords: Option<Vec<u32>> = coords.iter().map(|&c| u32::try_from(c).ok()).collect();
    coords.map(ChunkIndices).ok_or(IndexLimit)
}

/// Sets the virtual references `refs` of array `path` in the session behind `store`.
pub(super) async fn set_refs(
    store: &Store,
    path: &IcPath,
    refs: Vec<(ChunkIndices, VirtualChunkRef)>,
) -> Result<(), String> {
    match store.set_virtual_refs(path, true, refs).await.map_err(|e| e.to_string())? {
        SetVirtualRefsResult::Done => Ok(()),
        SetVirtualRefsResult::FailedRefs(failed) => Err(format!(
            "{} references outside every virtual chunk container (first: {:?})",
            failed.len(),
            failed.first()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grid::ChunkGrid;

    #[test]
    fn regular_dimensions_of_rectilinear_grids_become_runs() {
        let grid = ChunkGrid::new(vec![
            crate::grid::ChunkDim::from_edges(90, &[31, 28, 31]).unwrap(),
            crate::grid::ChunkDim::regular(10, 4).unwrap(),
        ]);
        let doc = serde_json::json!({"chunk_grid": grid.to_json()});
        let out = icechunk_array_json(doc, &grid);
        assert_eq!(out["chunk_grid"]["configuration"]["chunk_shapes"][1], serde_json::json!([[4, 3]]));
        assert_eq!(
            out["chunk_grid"]["configuration"]["chunk_shapes"][0],
            grid.to_json()["configuration"]["chunk_shapes"][0]
        );
    }
}
