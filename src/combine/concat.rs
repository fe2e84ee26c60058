//! Concatenating one array along the dimension, and taking an array from the first file.

use super::CombineError;
use crate::dataset::{ChunkTable, VirtualArray, VirtualDataset};
use crate::grid::{ChunkDim, ChunkGrid};
use crate::manifest::ChunkEntry;

fn location(files: &[VirtualDataset], i: usize) -> String {
    files[i].sources.get(0).map(|s| s.location.clone()).unwrap_or_default()
}

fn mismatch(files: &[VirtualDataset], i: usize, array: &VirtualArray, what: String) -> CombineError {
    let (file, first, hint) = (location(files, i), location(files, 0), String::new());
    CombineError::Mismatch { file, variable: array.path.clone(), what, first, hint }
}

/// The first file's array, after checking the others agree (shape, type, and values when digested).
pub(crate) fn take_first(
    parts: &[&VirtualArray],
    files: &[VirtualDataset],
    allow_differ: bool,
) -> Result<VirtualArray, CombineError> {
    let first = parts[0];
    for (i, part) in parts.iter().enumerate().skip(1) {
        let (a, b) = (&first.metadata, &part.metadata);
        if a.shape() != b.shape() {
            return Err(mismatch(files, i, part, format!("shape {:?} (first file: {:?})", b.shape(), a.shape())));
        }
        if a.data_type != b.data_type {
            return Err(mismatch(files, i, part, format!("data type {} (first file: {})", b.data_type, a.data_type)));
        }
        let values_differ = matches!((first.digest, part.digest), (Some(x), Some(y)) if x != y);
        if values_differ && !allow_differ {
            return Err(CombineError::Mismatch {
                file: location(files, i),
                variable: part.path.clone(),
                what: "its data".into(),
                first: location(files, 0),
                hint: format!(" (pass --take-first {} to take the first file's)", part.path),
            });
        }
    }
    Ok(VirtualArray { tail: None, ..first.clone() })
}

/// Checks that `part` can be concatenated to `first` along `axis`.
fn check_compatible(
    first: &VirtualArray,
    part: &VirtualArray,
    axis: usize,
    files: &[VirtualDataset],
    i: usize,
) -> Result<(), CombineError> {
    let (a, b) = (&first.metadata, &part.metadata);
    if a.data_type != b.data_type {
        return Err(mismatch(files, i, part, format!("data type {} (first file: {})", b.data_type, a.data_type)));
    }
    if a.dimension_names != b.dimension_names {
        return Err(mismatch(
            files,
            i,
            part,
            format!("dimensions {:?} (first file: {:?})", b.dimension_names, a.dimension_names),
        ));
    }
    for d in (0..a.chunk_grid.ndim()).filter(|&d| d != axis) {
        let (x, y) = (&a.chunk_grid.dims()[d], &b.chunk_grid.dims()[d]);
        if x.extent() != y.extent() {
            let name = a.dimension_names.as_ref().and_then(|n| n.get(d).cloned()).unwrap_or_default();
            return Err(mismatch(
                files,
                i,
                part,
                format!("length of dimension {name} {} (first file: {})", y.extent(), x.extent()),
            ));
        }
        if x != y {
            let name = a.dimension_names.as_ref().and_then(|n| n.get(d).cloned()).unwrap_or_default();
            return Err(mismatch(files, i, part, format!("chunking along dimension {name}")));
        }
    }
    if a.codecs != b.codecs {
        return Err(mismatch(
            files,
            i,
            part,
            format!("codecs {} (first file: {})", b.codecs.to_json(), a.codecs.to_json()),
        ));
    }
    if a.fill_value != b.fill_value {
        let (x, y) = (a.fill_value.to_json(a.data_type), b.fill_value.to_json(b.data_type));
        return Err(mismatch(files, i, part, format!("fill value {y} (first file: {x})")));
    }
    Ok(())
}

/// Concatenates `parts` (one per file, in order) along `axis`.
pub(crate) fn concat_array(
    parts: &[&VirtualArray],
    axis: usize,
    files: &[VirtualDataset],
) -> Result<VirtualArray, CombineError> {
    let first = parts[0];
    let last = parts.len() - 1;
    let mut edges = Vec::new();
    let mut total = 0u64;
    let mut rewritten = 0u64;
    for (i, part) in parts.iter().enumerate() {
        check_compatible(first, part, axis, files, i)?;
        let gd = &part.metadata.chunk_grid.dims()[axis];
        total += gd.extent();
        rewritten += part.rewritten_chunks;
        for k in 0..gd.num_chunks() {
            let (edge, valid) = (gd.edge(k), gd.valid(k));
            if i < last && valid < edge {
                if part.tail.is_none() {
                    let what = "partial last chunk has no trimmed form (scan with the concatenation dimension set)";
                    return Err(CombineError::Build { variable: part.path.clone(), problem: what.into() });
                }
                edges.push(valid);
            } else {
                edges.push(edge);
            }
        }
        if i < last {
            rewritten += part.tail.as_ref().map_or(0, |t| t.rewritten);
        }
    }
    let build = |problem: String| CombineError::Build { variable: first.path.clone(), problem };
    let mut dims = first.metadata.chunk_grid.dims().to_vec();
    dims[axis] = ChunkDim::from_edges(total, &edges).map_err(|e| build(format!("combined grid: {e}")))?;
    let grid = ChunkGrid::new(dims);
    let mut table = ChunkTable::missing(grid.num_chunks() as usize);
    let mut offset = 0u64;
    for (i, part) in parts.iter().enumerate() {
        let use_tail = if i < last { part.tail.as_ref() } else { None };
        place_entries(&grid, part, axis, offset, i as u32, use_tail.map(|t| t.entries.as_slice()), &mut table);
        offset += part.metadata.chunk_grid.dims()[axis].num_chunks();
    }
    let mut metadata = first.metadata.clone();
    metadata.chunk_grid = grid;
    Ok(VirtualArray {
        path: first.path.clone(),
        metadata,
        chunks: table,
        rewritten_chunks: rewritten,
        digest: None,
        tail: None,
    })
}

/// Copies one file's entries into the combined table: chunk index along `axis` shifted by `offset`,
/// source 0 renamed `source`, owned bytes appended, trimmed tail entries replacing the originals.
fn place_entries(
    grid: &ChunkGrid,
    part: &VirtualArray,
    axis: usize,
    offset: u64,
    source: u32,
    tail: Option<&[(u64, ChunkEntry)]>,
    table: &mut ChunkTable,
) {
    let file_shape = part.metadata.chunk_grid.grid_shape();
    let combined = grid.grid_shape();
    let mut strides = vec![1u64; combined.len()];
    for d in (0..combined.len().saturating_sub(1)).rev() {
        strides[d] = strides[d + 1] * combined[d + 1];
    }
    let mut tail = tail.unwrap_or_default().iter().peekable();
    let mut coords = vec![0u64; file_shape.len()];
    for (linear, entry) in part.chunks.entries.iter().enumerate() {
        let mut entry = *entry;
        if let Some((_, trimmed)) = tail.next_if(|(l, _)| *l == linear as u64) {
            entry = *trimmed;
        }
        let target: u64 =
            (0..coords.len()).map(|d| (coords[d] + if d == axis { offset } else { 0 }) * strides[d]).sum();
        table.entries[target as usize] = match entry {
            ChunkEntry::Missing => ChunkEntry::Missing,
            ChunkEntry::Source { offset, length, .. } => ChunkEntry::Source { source, offset, length },
            ChunkEntry::Owned { offset, length } => {
                let bytes = &part.chunks.owned[offset as usize..(offset + length) as usize];
                table.push_owned(bytes)
            }
        };
        advance(&mut coords, &file_shape);
    }
}

/// Row-major odometer step.
fn advance(coords: &mut [u64], shape: &[u64]) {
    for d in (0..coords.len()).rev() {
        coords[d] += 1;
        if coords[d] < shape[d] {
            return;
        }
        coords[d] = 0;
    }
}
