//! Splicing one array along the appended dimension: the stored chunks before the last stored file's
//! segment, then the tail's (the last stored file again, its partial last chunk now trimmed, and the
//! new files). Store-owned bytes are laid out in the order a fresh combine appends them: file by file
//! in placement order (every concatenation dimension, outermost first), each file's chunks in
//! row-major order.

use super::order::Layout;
use super::{AppendError, Scanned};
use std::borrow::Cow;

use crate::dataset::{ChunkTable, OwnedBytes, OwnedBytesError, VirtualArray};
use crate::grid::{ChunkDim, ChunkGrid};
use crate::manifest::ChunkEntry;

/// The stored array `old` extended by the tail's `new` along array axis `axis`.
pub(crate) fn splice(
    old: &VirtualArray,
    new: &VirtualArray,
    axis: usize,
    layout: &Layout,
    scanned: &Scanned,
) -> Result<VirtualArray, AppendError> {
    let build = |problem: String| AppendError::Build { variable: old.path.clone(), problem };
    let (og, ng) = (&old.metadata.chunk_grid, &new.metadata.chunk_grid);
    check_other_dims(old, new, axis, scanned)?;
    if old.metadata.data_type != new.metadata.data_type {
        // Only text fields wider in the new files get here (the tail's combine checks the rest):
        // the stored files' chunks would need rewriting, which a fresh scan does.
        let file = scanned.roots.first().map(|r| r.0.clone()).unwrap_or_default();
        let problem = format!(
            "data type {} is wider than the store's {} (longer text): scan the whole archive again",
            new.metadata.data_type, old.metadata.data_type
        );
        return Err(AppendError::Mismatch { file, variable: old.path.clone(), problem });
    }
    let (od, nd) = (og.dim(axis), ng.dim(axis));
    let kept_len = layout.stored_len - layout.last_start;
    let (first, skip) = splice_point(od, nd, layout.last_start, kept_len)
        .ok_or_else(|| build(format!("the last stored file does not start at a chunk of {}", layout.dim)))?;
    let rechunked = od.num_chunks() - first;
    if nd.extent() <= kept_len
        || rechunked + skip > nd.num_chunks()
        || nd.start((rechunked + skip).min(nd.num_chunks() - 1)) != kept_len
    {
        return Err(build(format!("the new chunks along {} do not follow the stored ones", layout.dim)));
    }
    let edges: Vec<u64> = (0..first).map(|c| od.edge(c)).chain((skip..nd.num_chunks()).map(|c| nd.edge(c))).collect();
    let dim = ChunkDim::from_edges(layout.last_start + nd.extent(), &edges).map_err(|e| build(e.to_string()))?;
    let mut dims = og.dims().to_vec();
    dims[axis] = dim;
    let grid = ChunkGrid::new(dims);
    let entries = spliced_entries(&grid, old, new, axis, (first, skip), layout);
    let owned = OwnedBlobs { variable: &old.path, old: &old.chunks.owned, new: &new.chunks.owned };
    // A compacted store (`vzarr compact`) has files starting inside chunks: its owned bytes are laid
    // out in row-major order instead (a fresh combine's order is per file).
    let parts = part_ranges(&grid, old, axis, layout).unwrap_or_else(|_| vec![None; layout.dims.len()]);
    let chunks = owned.reorder(&grid, entries, &parts)?;
    let mut metadata = old.metadata.clone();
    metadata.chunk_grid = grid;
    let own: u64 = layout
        .last_boxes
        .iter()
        .filter(|(_, arrays)| arrays.contains(&old.path))
        .filter_map(|(location, _)| scanned.own_rewritten.get(&(location.clone(), old.path.clone())))
        .sum();
    Ok(VirtualArray {
        path: old.path.clone(),
        metadata,
        chunks,
        rewritten_chunks: (old.rewritten_chunks + new.rewritten_chunks).saturating_sub(own),
        digest: None,
        tails: Vec::new(),
    })
}

/// Where the tail's chunks replace the stored ones along the axis: `(first, skip)`, the stored chunks
/// `0..first` are kept and the tail's from `skip` on follow them.
///
/// The last stored file starts a chunk (a scanned store): the tail (that file again, then the new
/// ones) replaces the stored chunks from that one, `(chunk, 0)`. It starts inside a chunk (a
/// compacted store folded it with the files before): when the stored chunks end where the stored
/// array does (the last one holds its whole edge, as every folded chunk does), every stored chunk is
/// kept and the tail's chunks after that file's `kept_len` elements follow; a last stored chunk
/// encoded past the array's end (a file's unlimited `time` chunk of 512 holding 31) cannot be
/// followed, so `None`.
fn splice_point(od: &ChunkDim, nd: &ChunkDim, last_start: u64, kept_len: u64) -> Option<(u64, u64)> {
    if let Some((chunk, 0)) = od.locate(last_start) {
        return Some((chunk, 0));
    }
    let last = od.num_chunks().checked_sub(1)?;
    if od.valid(last) != od.edge(last) {
        return None;
    }
    match nd.locate(kept_len)? {
        (chunk, 0) => Some((od.num_chunks(), chunk)),
        _ => None,
    }
}

/// Every dimension but the appended one has the same length and chunking as stored.
fn check_other_dims(old: &VirtualArray, new: &VirtualArray, axis: usize, scanned: &Scanned) -> Result<(), AppendError> {
    let (og, ng) = (&old.metadata.chunk_grid, &new.metadata.chunk_grid);
    let file = scanned.roots.first().map(|r| r.0.clone()).unwrap_or_default();
    if og.ndim() != ng.ndim() {
        let problem = format!("{} dimensions, the store's {}", ng.ndim(), og.ndim());
        return Err(AppendError::Mismatch { file, variable: old.path.clone(), problem });
    }
    let names = old.metadata.dimension_names.clone().unwrap_or_default();
    for d in (0..og.ndim()).filter(|&d| d != axis) {
        if og.dim(d) != ng.dim(d) {
            let name = names.get(d).cloned().unwrap_or_else(|| d.to_string());
            let problem = format!(
                "length or chunking along {name} ({} of {:?}) differs from the store's ({} of {:?})",
                ng.dim(d).extent(),
                ng.dim(d).regular_size(),
                og.dim(d).extent(),
                og.dim(d).regular_size()
            );
            return Err(AppendError::Mismatch { file, variable: old.path.clone(), problem });
        }
    }
    Ok(())
}

/// Owned entries of the spliced table address the stored blob, then the tail's after it; stored
/// chunks `0..first` along `axis`, then the tail's from `skip` ([`splice_point`]).
fn spliced_entries(
    grid: &ChunkGrid,
    old: &VirtualArray,
    new: &VirtualArray,
    axis: usize,
    (first, skip): (u64, u64),
    layout: &Layout,
) -> Vec<ChunkEntry> {
    let (og, ng) = (&old.metadata.chunk_grid, &new.metadata.chunk_grid);
    let shape = grid.grid_shape();
    let shift = old.chunks.owned.len();
    let mut coords = vec![0u64; shape.len()];
    let mut out = Vec::with_capacity(grid.num_chunks() as usize);
    for _ in 0..grid.num_chunks() {
        let entry = if coords[axis] < first {
            match old.chunks.entry(og.linear_index(&coords) as usize) {
                ChunkEntry::Source { source, offset, length } => {
                    ChunkEntry::Source { source: layout.stored_ids[source as usize], offset, length }
                }
                other => other,
            }
        } else {
            let mut c = coords.clone();
            c[axis] = c[axis] - first + skip;
            match new.chunks.entry(ng.linear_index(&c) as usize) {
                ChunkEntry::Source { source, offset, length } => {
                    ChunkEntry::Source { source: layout.tail_ids[source as usize], offset, length }
                }
                ChunkEntry::Owned { offset, length } => ChunkEntry::Owned { offset: offset + shift, length },
                ChunkEntry::Missing => ChunkEntry::Missing,
            }
        };
        out.push(entry);
        advance(&mut coords, &shape);
    }
    out
}

/// Per concatenation dimension (outermost first): the chunk ranges of its positions along the array
/// axis it maps to, or `None` when the array lacks it (one position, every chunk).
type PartRanges = Vec<Option<(usize, Vec<(u64, u64)>)>>;

fn part_ranges(grid: &ChunkGrid, old: &VirtualArray, axis: usize, layout: &Layout) -> Result<PartRanges, String> {
    let names = old.metadata.dimension_names.clone().unwrap_or_default();
    let mut out = Vec::with_capacity(layout.dims.len());
    for (k, d) in layout.dims.iter().enumerate() {
        if k == layout.k {
            let dim = grid.dim(axis);
            let mut chunks = Vec::with_capacity(layout.segment_starts.len() + 1);
            for &start in &layout.segment_starts {
                match dim.locate(start) {
                    Some((chunk, 0)) => chunks.push(chunk),
                    _ => return Err(format!("a file along {} does not start at a chunk", layout.dim)),
                }
            }
            chunks.push(dim.num_chunks());
            out.push(Some((axis, chunks.windows(2).map(|w| (w[0], w[1])).collect())));
        } else {
            let leading = names.iter().position(|n| *n == d.name).filter(|&j| d.is_new() && j < axis);
            out.push(leading.map(|j| (j, (0..grid.dim(j).num_chunks()).map(|p| (p, p + 1)).collect())));
        }
    }
    Ok(out)
}

/// The stored and the tail's owned bytes, addressed as one blob (each in memory or spilled).
struct OwnedBlobs<'a> {
    /// The array, for messages.
    variable: &'a str,
    old: &'a OwnedBytes,
    new: &'a OwnedBytes,
}

impl OwnedBlobs<'_> {
    fn bytes(&self, offset: u64, length: u64) -> Result<Cow<'_, [u8]>, OwnedBytesError> {
        match offset.checked_sub(self.old.len()) {
            None => self.old.read(offset, length),
            Some(o) => self.new.read(o, length),
        }
    }

    /// A table whose owned bytes are appended part by part (placement order), each part's chunks
    /// in row-major order: what `combine` gives.
    fn reorder(
        &self,
        grid: &ChunkGrid,
        entries: Vec<ChunkEntry>,
        parts: &PartRanges,
    ) -> Result<ChunkTable, AppendError> {
        let mut table = ChunkTable::from_entries(entries, OwnedBytes::with_budget(self.old.budget()));
        if !table.iter().any(|e| matches!(e, ChunkEntry::Owned { .. })) {
            return Ok(table);
        }
        let shape = grid.grid_shape();
        let counts: Vec<usize> = parts.iter().map(|p| p.as_ref().map_or(1, |(_, r)| r.len())).collect();
        let mut pos = vec![0usize; parts.len()];
        loop {
            let mut lo = vec![0u64; shape.len()];
            let mut hi = shape.clone();
            for (k, part) in parts.iter().enumerate() {
                if let Some((axis, ranges)) = part {
                    (lo[*axis], hi[*axis]) = ranges[pos[k]];
                }
            }
            self.copy_box(grid, &mut table, &lo, &hi)?;
            if !step(&mut pos, &counts) {
                return Ok(table);
            }
        }
    }

    /// Appends the owned bytes of the chunks in box `lo..hi` (row-major) and repoints their entries.
    fn copy_box(&self, grid: &ChunkGrid, table: &mut ChunkTable, lo: &[u64], hi: &[u64]) -> Result<(), AppendError> {
        if lo.iter().zip(hi).any(|(a, b)| a >= b) {
            return Ok(());
        }
        let mut c = lo.to_vec();
        loop {
            let slot = grid.linear_index(&c) as usize;
            if let ChunkEntry::Owned { offset, length } = table.entry(slot) {
                let owned =
                    |source| AppendError::Owned { variable: self.variable.to_string(), source: Box::new(source) };
                let bytes = self.bytes(offset, length).map_err(owned)?;
                let entry = table.push_owned(&bytes).map_err(owned)?;
                table.set(slot, entry);
            }
            let mut d = c.len();
            loop {
                if d == 0 {
                    return Ok(());
                }
                d -= 1;
                c[d] += 1;
                if c[d] < hi[d] {
                    break;
                }
                c[d] = lo[d];
            }
        }
    }
}

/// Row-major odometer step over `shape`.
fn advance(coords: &mut [u64], shape: &[u64]) {
    for d in (0..coords.len()).rev() {
        coords[d] += 1;
        if coords[d] < shape[d] {
            return;
        }
        coords[d] = 0;
    }
}

/// Row-major step over positions; false after the last.
fn step(pos: &mut [usize], counts: &[usize]) -> bool {
    for d in (0..pos.len()).rev() {
        pos[d] += 1;
        if pos[d] < counts[d] {
            return true;
        }
        pos[d] = 0;
    }
    false
}
