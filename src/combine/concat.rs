//! Concatenating one array along several dimensions (existing ones, and new ones prepended), and
//! taking an array from the first file.

use super::{text_widths, CombineError};
use crate::dataset::{ChunkTable, VirtualArray};
use crate::grid::{ChunkDim, ChunkGrid};
use crate::manifest::ChunkEntry;
use crate::metadata::DataType;

/// One concatenation dimension of an array.
#[derive(Debug, Clone)]
pub(crate) enum Axis {
    /// A new dimension, prepended (in the order given) to the array's own: its name and length.
    New { name: String, count: u64 },
    /// An existing dimension: the array axis and the number of positions (segments) along it.
    Existing { axis: usize, segments: usize },
}

/// One file's array and its position along each [`Axis`].
pub(crate) struct Part<'a> {
    /// The array (its chunk table moved out into `table`).
    pub(crate) array: &'a VirtualArray,
    /// The array's chunk table, moved into the combined one.
    pub(crate) table: ChunkTable,
    /// The file's location, for messages.
    pub(crate) location: &'a str,
    /// Its id in the combined source table (its external files, if any, follow it).
    pub(crate) source: u32,
    /// Index along each axis.
    pub(crate) pos: Vec<usize>,
}

fn mismatch(part: &Part<'_>, first: &Part<'_>, what: String) -> CombineError {
    CombineError::Mismatch {
        file: part.location.to_string(),
        variable: part.array.path.clone(),
        what,
        first: first.location.to_string(),
        take_first_possible: false,
    }
}

/// The first file's array, after checking the others agree (shape, type, and values when digested).
pub(crate) fn take_first(parts: Vec<Part<'_>>, allow_differ: bool) -> Result<VirtualArray, CombineError> {
    let first = &parts[0];
    for part in &parts[1..] {
        let (a, b) = (&first.array.metadata, &part.array.metadata);
        if a.shape() != b.shape() {
            return Err(mismatch(part, first, format!("shape {:?} (first file: {:?})", b.shape(), a.shape())));
        }
        // Text fields of different widths (`text_widths`) hold different text: values that differ.
        let wider_text = text_widths::widest([a.data_type, b.data_type]).is_some();
        if a.data_type != b.data_type && !wider_text {
            return Err(mismatch(part, first, format!("data type {} (first file: {})", b.data_type, a.data_type)));
        }
        let values_differ =
            wider_text || matches!((first.array.digest, part.array.digest), (Some(x), Some(y)) if x != y);
        if values_differ && !allow_differ {
            return Err(CombineError::Mismatch {
                file: part.location.to_string(),
                variable: part.array.path.clone(),
                what: "its data".into(),
                first: first.location.to_string(),
                take_first_possible: true,
            });
        }
    }
    let Some(Part { array: first, mut table, source, .. }) = parts.into_iter().next() else {
        return Err(CombineError::NoFiles);
    };
    table.shift_sources(source);
    Ok(VirtualArray {
        path: first.path.clone(),
        metadata: first.metadata.clone(),
        chunks: table,
        rewritten_chunks: first.rewritten_chunks,
        digest: first.digest,
        tails: Vec::new(),
    })
}

/// Checks that `part` can be concatenated to `first` along the axes in `concat`; with `widened`, their
/// data types (and so fill values) may differ in the widths of text fields (`text_widths`).
fn check_compatible(first: &Part<'_>, part: &Part<'_>, concat: &[usize], widened: bool) -> Result<(), CombineError> {
    let (a, b) = (&first.array.metadata, &part.array.metadata);
    if a.data_type != b.data_type && !widened {
        return Err(mismatch(part, first, format!("data type {} (first file: {})", b.data_type, a.data_type)));
    }
    if a.dimension_names != b.dimension_names {
        let what = format!("dimensions {:?} (first file: {:?})", b.dimension_names, a.dimension_names);
        return Err(mismatch(part, first, what));
    }
    let name = |d: usize| a.dimension_names.as_ref().and_then(|n| n.get(d).cloned()).unwrap_or_default();
    for d in (0..a.chunk_grid.ndim()).filter(|d| !concat.contains(d)) {
        let (x, y) = (&a.chunk_grid.dims()[d], &b.chunk_grid.dims()[d]);
        if x.extent() != y.extent() {
            let what = format!("length of dimension {} {} (first file: {})", name(d), y.extent(), x.extent());
            return Err(mismatch(part, first, what));
        }
        if x != y {
            return Err(mismatch(part, first, format!("chunking along dimension {}", name(d))));
        }
    }
    if a.codecs != b.codecs {
        let what = format!("codecs {} (first file: {})", b.codecs.to_json(), a.codecs.to_json());
        return Err(mismatch(part, first, what));
    }
    if a.fill_value != b.fill_value && !widened {
        let (x, y) = (a.fill_value.to_json(a.data_type), b.fill_value.to_json(b.data_type));
        return Err(mismatch(part, first, format!("fill value {y} (first file: {x})")));
    }
    Ok(())
}

/// Per existing axis: each segment's grid along it (equal for every file at that position).
fn segment_dims<'a>(
    parts: &'a [Part<'a>],
    k: usize,
    axis: usize,
    segments: usize,
) -> Result<Vec<&'a ChunkDim>, CombineError> {
    let mut dims: Vec<Option<(&ChunkDim, &Part<'_>)>> = vec![None; segments];
    for part in parts {
        let gd = &part.array.metadata.chunk_grid.dims()[axis];
        match dims[part.pos[k]] {
            None => dims[part.pos[k]] = Some((gd, part)),
            Some((other, first)) if other != gd => {
                let name = part.array.metadata.dimension_names.as_ref().and_then(|n| n.get(axis).cloned());
                let what = format!(
                    "length or chunking along {} at the same position ({} of {}, first file: {} of {})",
                    name.unwrap_or_default(),
                    gd.extent(),
                    gd.regular_size().unwrap_or(0),
                    other.extent(),
                    other.regular_size().unwrap_or(0)
                );
                return Err(mismatch(part, first, what));
            }
            Some(_) => {}
        }
    }
    dims.into_iter().map(|d| d.map(|(d, _)| d)).collect::<Option<Vec<_>>>().ok_or_else(|| CombineError::Build {
        variable: parts[0].array.path.clone(),
        problem: "a position has no file".into(),
    })
}

/// The combined grid along one existing axis: the segments' edges in order, a partial last chunk of
/// every segment but the last given its valid length. Returns it with each segment's first chunk.
/// Built from each segment's runs of equal edges: a few per file however many chunks it has.
fn combined_dim(segs: &[&ChunkDim], path: &str) -> Result<(ChunkDim, Vec<u64>), CombineError> {
    let (mut runs, mut offsets, mut total, mut chunks) = (Vec::new(), Vec::with_capacity(segs.len()), 0u64, 0u64);
    for (s, gd) in segs.iter().enumerate() {
        offsets.push(chunks);
        total += gd.extent();
        let n = gd.num_chunks();
        chunks += n;
        let mut own = gd.runs();
        if s + 1 < segs.len() && n > 0 && gd.valid(n - 1) < gd.edge(n - 1) {
            // An interior segment's partial last chunk becomes a chunk of its valid length.
            if let Some(last) = own.last_mut() {
                last.1 -= 1;
            }
            own.push((gd.valid(n - 1), 1));
        }
        runs.extend(own.into_iter().filter(|&(_, count)| count > 0));
    }
    let dim = ChunkDim::from_runs(total, runs)
        .map_err(|e| CombineError::Build { variable: path.to_string(), problem: format!("combined grid: {e}") })?;
    Ok((dim, offsets))
}

/// Concatenates `parts` along `axes`. Every position must have exactly one part (checked by the
/// caller).
pub(crate) fn concat_array(mut parts: Vec<Part<'_>>, axes: &[Axis]) -> Result<VirtualArray, CombineError> {
    let first = &parts[0];
    let concat: Vec<usize> =
        axes.iter().filter_map(|a| if let Axis::Existing { axis, .. } = a { Some(*axis) } else { None }).collect();
    let widened = text_widths::widest(parts.iter().map(|p| p.array.metadata.data_type));
    for part in &parts {
        check_compatible(first, part, &concat, widened.is_some())?;
    }
    let meta = &first.array.metadata;
    let mut new_dims = Vec::new();
    let mut new_names = Vec::new();
    let mut file_dims = meta.chunk_grid.dims().to_vec();
    // Per axis: chunk offset of every segment (existing), or nothing (new).
    let mut offsets: Vec<Vec<u64>> = Vec::with_capacity(axes.len());
    for (k, axis) in axes.iter().enumerate() {
        match axis {
            Axis::New { name, count } => {
                let dim = ChunkDim::regular(*count, 1)
                    .map_err(|e| CombineError::Build { variable: first.array.path.clone(), problem: e.to_string() })?;
                new_dims.push(dim);
                new_names.push(name.clone());
                offsets.push(Vec::new());
            }
            Axis::Existing { axis, segments } => {
                let segs = segment_dims(&parts, k, *axis, *segments)?;
                let (dim, segment_offsets) = combined_dim(&segs, &first.array.path)?;
                file_dims[*axis] = dim;
                offsets.push(segment_offsets);
            }
        }
    }
    let lead = new_dims.len();
    let grid = ChunkGrid::new(new_dims.into_iter().chain(file_dims).collect());
    let (path, meta, mut rewritten) = (first.array.path.clone(), meta.clone(), 0);
    let mut starts = Vec::with_capacity(parts.len());
    for part in &mut parts {
        let placement = Placement::of(part, axes, &offsets, lead);
        rewritten += part.array.rewritten_chunks + trim_interior(part, &placement.interior)?;
        if let (Some(wide), DataType::Struct(narrow)) = (widened, part.array.metadata.data_type) {
            if !std::ptr::eq(wide, narrow) {
                let widen = |problem| CombineError::Build { variable: path.clone(), problem };
                text_widths::widen(&mut part.table, narrow, wide).map_err(widen)?;
            }
        }
        // Drops the bytes of chunks replaced by trimmed forms, and of trimmed forms not used here.
        part.table
            .compact_owned()
            .map_err(|source| CombineError::Owned { variable: path.clone(), source: Box::new(source) })?;
        part.table.shift_sources(part.source);
        starts.push(placement.start(&grid));
    }
    let table = match contiguous(&grid, &parts, &starts) {
        // Each file's chunks are one run of the combined table: its columns move there.
        Some(order) => {
            let mut slots: Vec<Option<ChunkTable>> =
                parts.iter_mut().map(|p| Some(std::mem::take(&mut p.table))).collect();
            ChunkTable::concatenated(order.into_iter().filter_map(|k| slots[k].take()))
        }
        None => {
            let mut table = ChunkTable::missing(grid.num_chunks() as usize);
            for part in parts {
                let placement = Placement::of(&part, axes, &offsets, lead);
                place_entries(&grid, part, &placement, &mut table)?;
            }
            table
        }
    };
    let mut metadata = meta.clone();
    metadata.chunk_grid = grid;
    if let Some(wide) = widened {
        metadata.data_type = DataType::Struct(wide);
        metadata.fill_value = crate::metadata::FillValue::zero(metadata.data_type);
    }
    if let Some(names) = &meta.dimension_names {
        metadata.dimension_names = Some(new_names.into_iter().chain(names.iter().cloned()).collect());
    }
    Ok(VirtualArray { path, metadata, chunks: table, rewritten_chunks: rewritten, digest: None, tails: Vec::new() })
}

/// Where one file's chunks go in the combined grid.
struct Placement {
    /// Chunk coordinates along the new axes (leading).
    prefix: Vec<u64>,
    /// Per file axis: the chunk offset of the file's segment.
    shift: Vec<u64>,
    /// File axes along which this file is not the last and its last chunk is partial (ascending).
    interior: Vec<usize>,
}

impl Placement {
    fn of(part: &Part<'_>, axes: &[Axis], offsets: &[Vec<u64>], lead: usize) -> Placement {
        let file_grid = &part.array.metadata.chunk_grid;
        let mut prefix = Vec::with_capacity(lead);
        let mut shift = vec![0u64; file_grid.ndim()];
        let mut interior = Vec::new();
        for (k, axis) in axes.iter().enumerate() {
            match axis {
                Axis::New { .. } => prefix.push(part.pos[k] as u64),
                Axis::Existing { axis, segments } => {
                    shift[*axis] = offsets[k][part.pos[k]];
                    let gd = &file_grid.dims()[*axis];
                    let n = gd.num_chunks();
                    if part.pos[k] + 1 < *segments && n > 0 && gd.valid(n - 1) < gd.edge(n - 1) {
                        interior.push(*axis);
                    }
                }
            }
        }
        interior.sort_unstable();
        Placement { prefix, shift, interior }
    }

    /// The combined grid's coordinates of the file's chunk `coords`, into `target`.
    fn target(&self, coords: &[u64], target: &mut Vec<u64>) {
        target.clear();
        target.extend_from_slice(&self.prefix);
        target.extend(coords.iter().zip(&self.shift).map(|(c, s)| c + s));
    }

    /// The combined linear index of the file's first chunk.
    fn start(&self, grid: &ChunkGrid) -> u64 {
        let mut target = Vec::new();
        self.target(&vec![0; self.shift.len()], &mut target);
        grid.linear_index(&target)
    }
}

/// Replaces, in the part's own table, every chunk that is last along some of `interior` by its
/// trimmed form. Returns the number of chunks rewritten by it.
fn trim_interior(part: &mut Part<'_>, interior: &[usize]) -> Result<u64, CombineError> {
    if interior.is_empty() {
        return Ok(0);
    }
    let file_shape = part.array.metadata.chunk_grid.grid_shape();
    let mut rewritten = 0;
    let mut coords = vec![0u64; file_shape.len()];
    let mut cropped = Vec::with_capacity(interior.len());
    for linear in 0..part.table.len() {
        cropped.clear();
        cropped.extend(interior.iter().copied().filter(|&d| coords[d] + 1 == file_shape[d]));
        if !cropped.is_empty() {
            // A trimmed chunk's bytes are in the table's owned bytes already (the scan put them there).
            let trimmed = trimmed_entry(part, &cropped, linear as u64)?;
            rewritten += u64::from(matches!(trimmed, ChunkEntry::Owned { .. }));
            part.table.set(linear, trimmed);
        }
        advance(&mut coords, &file_shape);
    }
    Ok(rewritten)
}

/// The order of the parts when each one's chunks are one run of the combined table (every axis
/// before the one it is placed along has one chunk per file, every axis after it is whole) and the
/// runs cover the table exactly; `None` otherwise.
fn contiguous(grid: &ChunkGrid, parts: &[Part<'_>], starts: &[u64]) -> Option<Vec<usize>> {
    let shape = grid.grid_shape();
    for part in parts {
        let file_shape = part.array.metadata.chunk_grid.grid_shape();
        let lead = shape.len().checked_sub(file_shape.len())?;
        let widths: Vec<u64> = std::iter::repeat_n(1, lead).chain(file_shape).collect();
        if let Some(j) = (0..shape.len()).rev().find(|&d| widths[d] != shape[d]) {
            if widths[..j].iter().any(|&w| w != 1) {
                return None;
            }
        }
    }
    let mut order: Vec<usize> = (0..parts.len()).collect();
    order.sort_by_key(|&k| starts[k]);
    let mut next = 0u64;
    for &k in &order {
        if starts[k] != next {
            return None;
        }
        next += parts[k].table.len() as u64;
    }
    (next == grid.num_chunks()).then_some(order)
}

/// Copies one file's entries (trimmed and renamed) into the combined table: new axes as leading
/// chunk coordinates, chunk index along existing axes shifted by the segment's offset, owned bytes
/// appended.
fn place_entries(
    grid: &ChunkGrid,
    part: Part<'_>,
    placement: &Placement,
    table: &mut ChunkTable,
) -> Result<(), CombineError> {
    let owned_error = |source| CombineError::Owned { variable: part.array.path.clone(), source: Box::new(source) };
    let file_shape = part.array.metadata.chunk_grid.grid_shape();
    let mut coords = vec![0u64; file_shape.len()];
    let mut target = Vec::with_capacity(grid.ndim());
    for entry in &part.table {
        placement.target(&coords, &mut target);
        let slot = grid.linear_index(&target) as usize;
        let entry = match entry {
            ChunkEntry::Owned { offset, length } => {
                let bytes = part.table.owned_chunk(offset, length).map_err(owned_error)?;
                table.push_owned(&bytes).map_err(owned_error)?
            }
            other => other,
        };
        table.set(slot, entry);
        advance(&mut coords, &file_shape);
    }
    Ok(())
}

/// The entry of chunk `linear` trimmed along exactly `dims`.
fn trimmed_entry(part: &Part<'_>, dims: &[usize], linear: u64) -> Result<ChunkEntry, CombineError> {
    part.array
        .tails
        .iter()
        .find(|t| t.dims == dims)
        .and_then(|t| t.entries.binary_search_by_key(&linear, |(l, _)| *l).ok().map(|i| t.entries[i].1))
        .ok_or_else(|| CombineError::Build {
            variable: part.array.path.clone(),
            problem: format!(
                "{}: partial last chunk has no trimmed form (scan with the concatenation dimensions set)",
                part.location
            ),
        })
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
