//! Selections and the chunk pieces they touch.
//!
//! Stage: pure planning for the reader. Input: a NumPy-like selection string (or a [`Selection`] built
//! in code) and a [`ChunkGrid`]. Output: per dimension, the [`DimPiece`]s of every chunk the selection
//! touches, and their cartesian product as [`ChunkSpan`]s in row-major chunk order.
//!
//! Cost is O(chunks touched x log runs) per dimension, never O(selected elements): a step longer than a
//! chunk jumps straight to the next touched chunk. Only the valid part of a chunk (inside the
//! array's extent; an edge chunk's padding is never read) is ever selected.

use super::{ChunkDim, ChunkGrid, GridError};

/// A resolved selection along one dimension: in bounds, step >= 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DimSelection {
    /// One index; the dimension is dropped from the output shape (as in NumPy).
    Index(u64),
    /// Indices `start, start + step, ...` below `stop`.
    Range {
        /// First selected index.
        start: u64,
        /// Exclusive upper bound.
        stop: u64,
        /// Stride, at least 1.
        step: u64,
    },
}

impl DimSelection {
    /// Number of selected elements (1 for an index; 0 for an empty range or a step of 0).
    pub fn count(&self) -> u64 {
        match *self {
            Self::Index(_) => 1,
            Self::Range { start, stop, step } if stop > start && step > 0 => (stop - start - 1) / step + 1,
            Self::Range { .. } => 0,
        }
    }
}

impl From<u64> for DimSelection {
    /// One index (the dimension is dropped from the output shape).
    fn from(index: u64) -> Self {
        DimSelection::Index(index)
    }
}

impl From<std::ops::Range<u64>> for DimSelection {
    /// `start..stop` with step 1.
    fn from(range: std::ops::Range<u64>) -> Self {
        DimSelection::Range { start: range.start, stop: range.end, step: 1 }
    }
}

impl From<std::ops::RangeInclusive<u64>> for DimSelection {
    /// `start..=last` with step 1.
    fn from(range: std::ops::RangeInclusive<u64>) -> Self {
        DimSelection::Range { start: *range.start(), stop: range.end().saturating_add(1), step: 1 }
    }
}

/// A selection over every dimension of an array.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection(pub Vec<DimSelection>);

impl Selection {
    /// Everything: `0..n` with step 1 along every dimension of `shape`.
    pub fn all(shape: &[u64]) -> Self {
        Self(shape.iter().map(|&n| full(n)).collect())
    }

    /// NumPy-like: comma-separated per dimension; each is `i`, `-i`, `a:b`, `a:b:c`, `:`, `::c`, with
    /// empty parts allowed as in Python slices. Negative indices and bounds count from the end; slice
    /// bounds clamp like Python; the step must be >= 1; an integer index must be in range. Fewer entries
    /// than dimensions select all of the remaining ones; an empty spec selects everything. Whitespace
    /// around entries and parts is ignored.
    ///
    /// # Errors
    /// [`GridError::RankMismatch`] for more entries than dimensions, [`GridError::BadSelection`] for an
    /// unparsable entry or a step below 1, [`GridError::IndexOutOfRange`] for an index outside its
    /// dimension (e.g. `index 40 out of range for dimension 0 of length 31`).
    pub fn parse(spec: &str, shape: &[u64]) -> Result<Self, GridError> {
        let mut dims = Vec::with_capacity(shape.len());
        if !spec.trim().is_empty() {
            let parts: Vec<&str> = spec.split(',').collect();
            if parts.len() > shape.len() {
                return Err(GridError::RankMismatch { what: "selection", expected: shape.len(), got: parts.len() });
            }
            for (dim, (part, &len)) in parts.iter().zip(shape).enumerate() {
                dims.push(parse_entry(part.trim(), dim, len)?);
            }
        }
        dims.extend(shape.iter().skip(dims.len()).map(|&n| full(n)));
        Ok(Self(dims))
    }

    /// A selection from Rust values per leading dimension (`3`, `0..31`, `0..=6`, or a
    /// [`DimSelection`] with a step); dimensions not given select everything.
    ///
    /// ```
    /// use vzarr::grid::{DimSelection, Selection};
    /// let week = Selection::new([DimSelection::from(59..66)], &[365, 10, 20])?;
    /// assert_eq!(week.out_shape(), vec![7, 10, 20]);
    /// let point = Selection::new([5u64, 3, 7], &[365, 10, 20])?;
    /// assert_eq!(point.out_shape(), Vec::<u64>::new());
    /// # Ok::<(), vzarr::grid::GridError>(())
    /// ```
    ///
    /// # Errors
    /// [`GridError::RankMismatch`] for more entries than dimensions, [`GridError::IndexOutOfRange`] for
    /// an index outside its dimension, [`GridError::SelectionOutOfBounds`] for a range past the extent,
    /// decreasing, or with a step of 0.
    pub fn new<I, D>(dims: I, shape: &[u64]) -> Result<Self, GridError>
    where
        I: IntoIterator<Item = D>,
        D: Into<DimSelection>,
    {
        let mut resolved: Vec<DimSelection> = dims.into_iter().map(Into::into).collect();
        if resolved.len() > shape.len() {
            return Err(GridError::RankMismatch { what: "selection", expected: shape.len(), got: resolved.len() });
        }
        for (dim, (selection, &len)) in resolved.iter().zip(shape).enumerate() {
            let out = |reason| GridError::SelectionOutOfBounds { dim, len, reason };
            match *selection {
                DimSelection::Index(i) if i >= len => {
                    return Err(GridError::IndexOutOfRange { index: i128::from(i), dim, len })
                }
                DimSelection::Range { step: 0, .. } => return Err(out("the step is 0")),
                DimSelection::Range { start, stop, .. } if start > stop => return Err(out("the range decreases")),
                DimSelection::Range { stop, .. } if stop > len => return Err(out("the range ends past the extent")),
                _ => {}
            }
        }
        resolved.extend(shape.iter().skip(resolved.len()).map(|&n| full(n)));
        Ok(Self(resolved))
    }

    /// Elements selected along every dimension (1 for an index).
    pub fn counts(&self) -> Vec<u64> {
        self.0.iter().map(DimSelection::count).collect()
    }

    /// NumPy result shape: the counts with index dimensions removed.
    pub fn out_shape(&self) -> Vec<u64> {
        self.0.iter().filter(|s| matches!(s, DimSelection::Range { .. })).map(DimSelection::count).collect()
    }

    /// Total number of selected elements (saturating at `u64::MAX`).
    pub fn len(&self) -> u64 {
        self.0.iter().fold(1u64, |acc, s| acc.saturating_mul(s.count()))
    }

    /// True when nothing is selected.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

fn full(n: u64) -> DimSelection {
    DimSelection::Range { start: 0, stop: n, step: 1 }
}

/// One comma-separated entry of a selection string, for dimension `dim` of length `len`.
fn parse_entry(part: &str, dim: usize, len: u64) -> Result<DimSelection, GridError> {
    let bad = |reason| GridError::BadSelection { part: part.to_owned(), dim, reason };
    if part.is_empty() {
        return Err(bad("empty entry"));
    }
    if !part.contains(':') {
        let (negative, magnitude) = parse_int(part).ok_or_else(|| bad("not an integer"))?;
        return resolve_index(negative, magnitude, dim, len);
    }
    let pieces: Vec<&str> = part.split(':').map(str::trim).collect();
    let (start, stop, step) = match pieces.as_slice() {
        [start, stop] => (*start, *stop, ""),
        [start, stop, step] => (*start, *stop, *step),
        _ => return Err(bad("a slice has at most two ':'")),
    };
    let bound = |text: &str, default| match text {
        "" => Ok(default),
        _ => parse_int(text)
            .map(|(negative, magnitude)| clamp_bound(negative, magnitude, len))
            .ok_or_else(|| bad("slice bounds must be integers")),
    };
    let step = match step {
        "" => 1,
        _ => match parse_int(step) {
            Some((false, s)) if s >= 1 => s,
            Some(_) => return Err(bad("step must be at least 1")),
            None => return Err(bad("step must be an integer")),
        },
    };
    let start = bound(start, 0)?;
    let stop = bound(stop, len)?.max(start);
    Ok(DimSelection::Range { start, stop, step })
}

/// An optionally negative decimal integer as `(negative, magnitude)`; magnitudes beyond u64 saturate.
fn parse_int(text: &str) -> Option<(bool, u64)> {
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((negative, digits.parse().unwrap_or(u64::MAX)))
}

/// A Python slice bound for a positive step: negative counts from the end, then clamp to `0..=len`.
fn clamp_bound(negative: bool, magnitude: u64, len: u64) -> u64 {
    if negative {
        len.saturating_sub(magnitude)
    } else {
        magnitude.min(len)
    }
}

fn resolve_index(negative: bool, magnitude: u64, dim: usize, len: u64) -> Result<DimSelection, GridError> {
    let index = match (negative, magnitude) {
        (true, 0) | (false, _) => Some(magnitude),
        (true, _) => len.checked_sub(magnitude),
    };
    match index {
        Some(i) if i < len => Ok(DimSelection::Index(i)),
        _ => Err(GridError::IndexOutOfRange {
            index: if negative { -i128::from(magnitude) } else { i128::from(magnitude) },
            dim,
            len,
        }),
    }
}

/// The part of one chunk that a selection touches along one dimension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DimPiece {
    /// Chunk index along this dimension.
    pub chunk: u64,
    /// First selected index, relative to the chunk start.
    pub first: u64,
    /// Stride inside the chunk (the selection step).
    pub step: u64,
    /// Number of selected elements in this chunk (>= 1).
    pub count: u64,
    /// Position of the first of them in the output along this dimension.
    pub out_start: u64,
}

/// One chunk touched by a selection: its grid coordinates and per-dimension pieces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkSpan {
    /// Grid coordinates of the chunk.
    pub coords: Vec<u64>,
    /// The piece of the chunk selected along every dimension.
    pub pieces: Vec<DimPiece>,
}

impl ChunkGrid {
    /// For every dimension, the pieces of the chunks `selection` touches, in increasing chunk order,
    /// covering the selection exactly once. A dimension with nothing selected has no pieces.
    ///
    /// # Errors
    /// [`GridError::RankMismatch`] when the selection does not have one entry per dimension,
    /// [`GridError::SelectionOutOfBounds`] when it has a step of 0 or selects an index at or beyond
    /// the extent.
    pub fn pieces(&self, selection: &Selection) -> Result<Vec<Vec<DimPiece>>, GridError> {
        if selection.0.len() != self.ndim() {
            return Err(GridError::RankMismatch { what: "selection", expected: self.ndim(), got: selection.0.len() });
        }
        self.dims.iter().zip(&selection.0).enumerate().map(|(d, (dim, sel))| dim_pieces(dim, *sel, d)).collect()
    }

    /// `selection` cut along the first dimension into slabs that each span at most `chunks` chunks
    /// of it, first to last: their outputs, one after the other, are the selection's output in C
    /// order. A read holds a piece (40 bytes) for every chunk it spans along each dimension, and a
    /// selection along a time axis of 10^7 one-step chunks would hold them all; read slab by slab,
    /// it holds a slab's. A selection of no dimension, or one index along the first, is one slab.
    ///
    /// # Errors
    /// As [`ChunkGrid::pieces`] (the selection is checked whole first).
    pub fn slabs(&self, selection: &Selection, chunks: u64) -> Result<Vec<Selection>, GridError> {
        let (Some(dim), Some(&first_sel @ DimSelection::Range { step, .. })) = (self.dims.first(), selection.0.first())
        else {
            return Ok(vec![selection.clone()]);
        };
        let (first, _, count) = resolve(dim, first_sel, 0)?;
        let mut slabs = Vec::new();
        let (mut next, mut left) = (first, count);
        while left > 0 {
            let Some((chunk, _)) = dim.locate(next) else { break };
            let last = (chunk + chunks.max(1) - 1).min(dim.num_chunks() - 1);
            let end = dim.start(last) + dim.valid(last);
            let rows = (end - next).div_ceil(step).min(left);
            let mut slab = selection.clone();
            slab.0[0] = DimSelection::Range { start: next, stop: next + (rows - 1) * step + 1, step };
            slabs.push(slab);
            next += rows * step;
            left -= rows;
        }
        if slabs.is_empty() {
            slabs.push(selection.clone()); // nothing selected along the first dimension
        }
        Ok(slabs)
    }

    /// Every chunk touched by the per-dimension `pieces` (from [`ChunkGrid::pieces`]): their cartesian
    /// product in row-major order (last dimension fastest), i.e. increasing linear chunk index. Yields
    /// nothing when any dimension has no pieces, and one span with empty coordinates for a 0-d grid.
    pub fn spans<'a>(&'a self, pieces: &'a [Vec<DimPiece>]) -> impl Iterator<Item = ChunkSpan> + 'a {
        let next = if pieces.iter().any(Vec::is_empty) { None } else { Some(vec![0; pieces.len()]) };
        Spans { pieces, next }
    }
}

/// `(first index, step, count)` of a selection, checked against the extent of `dim`.
fn resolve(dim: &ChunkDim, sel: DimSelection, d: usize) -> Result<(u64, u64, u64), GridError> {
    let out_of_bounds = |reason| GridError::SelectionOutOfBounds { dim: d, len: dim.extent(), reason };
    let (first, step) = match sel {
        DimSelection::Index(i) => (i, 1),
        DimSelection::Range { step: 0, .. } => return Err(out_of_bounds("step is 0")),
        DimSelection::Range { start, step, .. } => (start, step),
    };
    let count = sel.count();
    if count > 0 {
        let last = (count - 1).checked_mul(step).and_then(|span| span.checked_add(first));
        if last.is_none_or(|last| last >= dim.extent()) {
            return Err(out_of_bounds("it selects an index at or beyond the end"));
        }
    }
    Ok((first, step, count))
}

/// The pieces of one dimension; one iteration (two binary searches) per touched chunk.
fn dim_pieces(dim: &ChunkDim, sel: DimSelection, d: usize) -> Result<Vec<DimPiece>, GridError> {
    let (mut index, step, count) = resolve(dim, sel, d)?;
    let mut pieces = Vec::new();
    let mut out = 0;
    while out < count {
        let (chunk, first) = dim.locate(index).ok_or(GridError::SelectionOutOfBounds {
            dim: d,
            len: dim.extent(),
            reason: "it selects an index at or beyond the end",
        })?;
        // Selected indices left in this chunk's valid part: index, index + step, ... <= last_valid.
        let last_valid = dim.start(chunk) + dim.valid(chunk) - 1;
        let n = ((last_valid - index) / step + 1).min(count - out);
        pieces.push(DimPiece { chunk, first, step, count: n, out_start: out });
        out += n;
        if out < count {
            index += n * step;
        }
    }
    Ok(pieces)
}

/// Odometer over the per-dimension pieces; `next` is `None` once exhausted.
struct Spans<'a> {
    pieces: &'a [Vec<DimPiece>],
    next: Option<Vec<usize>>,
}

impl Iterator for Spans<'_> {
    type Item = ChunkSpan;

    fn next(&mut self) -> Option<ChunkSpan> {
        let positions = self.next.as_mut()?;
        let pieces: Vec<DimPiece> =
            positions.iter().zip(self.pieces).filter_map(|(&p, dim)| dim.get(p).copied()).collect();
        let span = ChunkSpan { coords: pieces.iter().map(|p| p.chunk).collect(), pieces };
        let mut exhausted = true;
        for (p, dim) in positions.iter_mut().zip(self.pieces).rev() {
            *p += 1;
            if *p < dim.len() {
                exhausted = false;
                break;
            }
            *p = 0;
        }
        if exhausted {
            self.next = None;
        }
        Some(span)
    }
}

#[cfg(test)]
mod tests {
    use super::super::strategies::dim;

    #[test]
    fn slabs_span_at_most_the_chunks_asked_and_tile_the_selection() {
        // Months along time, then a 5-day step: each slab spans at most 3 months.
        let months = [31u64, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
        let grid = ChunkGrid::new(vec![ChunkDim::from_edges(365, &months).unwrap(), ChunkDim::regular(4, 2).unwrap()]);
        for (sel, step) in [(DimSelection::from(10..365), 1), (DimSelection::Range { start: 3, stop: 360, step: 5 }, 5)]
        {
            let selection = Selection(vec![sel, DimSelection::from(1..4)]);
            let slabs = grid.slabs(&selection, 3).unwrap();
            let mut rows = Vec::new();
            for slab in &slabs {
                let pieces = grid.pieces(slab).unwrap();
                assert!(pieces[0].len() <= 3, "{slab:?}");
                let DimSelection::Range { start, stop, step: s } = slab.0[0] else { panic!("{slab:?}") };
                assert_eq!(s, step);
                rows.extend((start..stop).step_by(step as usize));
                assert_eq!(slab.0[1], selection.0[1]);
            }
            let DimSelection::Range { start, stop, .. } = sel else { unreachable!() };
            assert_eq!(rows, (start..stop).step_by(step as usize).collect::<Vec<_>>());
        }
        // One index, no dimension, an empty range: one slab, the selection itself.
        let index = Selection(vec![DimSelection::Index(40), DimSelection::from(0..4)]);
        assert_eq!(grid.slabs(&index, 1).unwrap(), vec![index.clone()]);
        let empty = Selection(vec![DimSelection::from(5..5), DimSelection::from(0..4)]);
        assert_eq!(grid.slabs(&empty, 1).unwrap(), vec![empty.clone()]);
        assert!(grid.slabs(&Selection(vec![DimSelection::from(0..366), DimSelection::from(0..4)]), 1).is_err());
    }
    use super::*;
    use proptest::prelude::*;

    fn range(start: u64, stop: u64, step: u64) -> DimSelection {
        DimSelection::Range { start, stop, step }
    }

    fn parse1(spec: &str, len: u64) -> Result<DimSelection, GridError> {
        Selection::parse(spec, &[len]).map(|s| s.0[0])
    }

    #[test]
    fn parse_indices() {
        assert_eq!(parse1("3", 31), Ok(DimSelection::Index(3)));
        assert_eq!(parse1("-1", 31), Ok(DimSelection::Index(30)));
        assert_eq!(parse1("-31", 31), Ok(DimSelection::Index(0)));
        assert_eq!(parse1("-0", 31), Ok(DimSelection::Index(0)));
        let err = parse1("40", 31).unwrap_err();
        assert_eq!(err.to_string(), "index 40 out of range for dimension 0 of length 31");
        let err = parse1("-32", 31).unwrap_err();
        assert_eq!(err.to_string(), "index -32 out of range for dimension 0 of length 31");
        assert!(parse1("0", 0).is_err());
        assert!(parse1("99999999999999999999999", 5).is_err());
    }

    #[test]
    fn parse_slices_clamp_like_python() {
        assert_eq!(parse1(":", 31), Ok(range(0, 31, 1)));
        assert_eq!(parse1("1:5", 31), Ok(range(1, 5, 1)));
        assert_eq!(parse1("-5:", 31), Ok(range(26, 31, 1)));
        assert_eq!(parse1(":-1", 31), Ok(range(0, 30, 1)));
        assert_eq!(parse1(":100", 31), Ok(range(0, 31, 1)));
        assert_eq!(parse1("-100:3", 31), Ok(range(0, 3, 1)));
        assert_eq!(parse1("::7", 31), Ok(range(0, 31, 7)));
        assert_eq!(parse1("2::", 31), Ok(range(2, 31, 1)));
        assert_eq!(parse1(" 1 : 9 : 2 ", 31), Ok(range(1, 9, 2)));
        // Empty when stop <= start, as in Python.
        assert_eq!(parse1("5:2", 31), Ok(range(5, 5, 1)));
        assert_eq!(parse1("40:", 31), Ok(range(31, 31, 1)));
        assert_eq!(parse1("0:99999999999999999999999", 3), Ok(range(0, 3, 1)));
    }

    #[test]
    fn parse_errors() {
        for spec in ["::0", "::-1", "a", "1:2:3:4", "1.5", "--1", "1:x", "::y", "+-1"] {
            assert!(matches!(parse1(spec, 31), Err(GridError::BadSelection { .. })), "{spec}");
        }
        let err = parse1("::0", 31).unwrap_err();
        assert_eq!(err.to_string(), "selection entry \"::0\" for dimension 0: step must be at least 1");
        assert_eq!(
            Selection::parse("1,2", &[4]),
            Err(GridError::RankMismatch { what: "selection", expected: 1, got: 2 })
        );
        assert!(Selection::parse("1,", &[4, 4]).is_err());
        assert!(Selection::parse("0", &[]).is_err());
    }

    #[test]
    fn parse_fills_and_shapes() {
        let s = Selection::parse(" 2 , 1:5 ", &[4, 6, 3]).unwrap();
        assert_eq!(s.0, vec![DimSelection::Index(2), range(1, 5, 1), range(0, 3, 1)]);
        assert_eq!(s.counts(), vec![1, 4, 3]);
        assert_eq!(s.out_shape(), vec![4, 3]);
        assert_eq!(s.len(), 12);
        assert_eq!(Selection::parse("", &[4, 6]), Ok(Selection::all(&[4, 6])));
        assert_eq!(Selection::parse("  ", &[]), Ok(Selection(vec![])));
        assert_eq!(Selection::all(&[]).len(), 1);
        assert!(Selection::parse("3:3", &[5]).unwrap().is_empty());
    }

    #[test]
    fn big_step_skips_chunks() {
        let g = ChunkGrid::regular(&[1000], &[10]).unwrap();
        let pieces = g.pieces(&Selection(vec![range(5, 1000, 100)])).unwrap();
        let chunks: Vec<u64> = pieces[0].iter().map(|p| p.chunk).collect();
        assert_eq!(chunks, (0..10).map(|c| c * 10).collect::<Vec<_>>());
        assert!(pieces[0].iter().all(|p| p.first == 5 && p.count == 1));
        // Cost does not depend on the number of elements: 2^64 - 1 elements, 16 chunks touched.
        let huge = ChunkGrid::regular(&[u64::MAX], &[1]).unwrap();
        let pieces = huge.pieces(&Selection(vec![range(0, u64::MAX, 1 << 60)])).unwrap();
        assert_eq!(pieces[0].len(), 16);
    }

    #[test]
    fn pieces_in_rectilinear_grid() {
        let dim = ChunkDim::from_edges(10, &[3, 3, 6]).unwrap();
        let g = ChunkGrid::new(vec![dim]);
        let pieces = g.pieces(&Selection(vec![range(2, 10, 2)])).unwrap();
        let piece = |chunk, first, count, out_start| DimPiece { chunk, first, step: 2, count, out_start };
        assert_eq!(pieces[0], vec![piece(0, 2, 1, 0), piece(1, 1, 1, 1), piece(2, 0, 2, 2)]);
        let single = g.pieces(&Selection(vec![DimSelection::Index(9)])).unwrap();
        assert_eq!(single[0], vec![DimPiece { chunk: 2, first: 3, step: 1, count: 1, out_start: 0 }]);
    }

    #[test]
    fn pieces_reject_bad_selections() {
        let g = ChunkGrid::regular(&[10, 4], &[3, 2]).unwrap();
        let pieces = |sel| g.pieces(&Selection(sel));
        assert!(matches!(pieces(vec![range(0, 10, 1)]), Err(GridError::RankMismatch { .. })));
        for bad in [range(0, 11, 1), range(0, 3, 0), DimSelection::Index(10), range(9, u64::MAX, 1)] {
            assert!(
                matches!(pieces(vec![bad, range(0, 4, 1)]), Err(GridError::SelectionOutOfBounds { .. })),
                "{bad:?}"
            );
        }
        // The stop may lie past the extent as long as no selected index does.
        assert!(pieces(vec![range(0, 11, 6), range(0, 4, 1)]).is_ok());
    }

    #[test]
    fn spans_cartesian_product() {
        let g = ChunkGrid::regular(&[10, 4, 6], &[3, 2, 6]).unwrap();
        let sel = Selection::parse("1:8, :, 2", &g.shape()).unwrap();
        let pieces = g.pieces(&sel).unwrap();
        let spans: Vec<ChunkSpan> = g.spans(&pieces).collect();
        assert_eq!(spans.len(), 3 * 2);
        let coords: Vec<Vec<u64>> = spans.iter().map(|s| s.coords.clone()).collect();
        assert_eq!(
            coords,
            vec![vec![0, 0, 0], vec![0, 1, 0], vec![1, 0, 0], vec![1, 1, 0], vec![2, 0, 0], vec![2, 1, 0],]
        );
        let linear: Vec<u64> = coords.iter().map(|c| g.linear_index(c)).collect();
        assert!(linear.windows(2).all(|w| w[0] < w[1]));
        let total: u64 = spans.iter().map(|s| s.pieces.iter().map(|p| p.count).product::<u64>()).sum();
        assert_eq!(total, sel.len());
    }

    #[test]
    fn spans_edge_cases() {
        let scalar = ChunkGrid::new(vec![]);
        let pieces = scalar.pieces(&Selection::all(&[])).unwrap();
        let spans: Vec<ChunkSpan> = scalar.spans(&pieces).collect();
        assert_eq!(spans, vec![ChunkSpan { coords: vec![], pieces: vec![] }]);
        let g = ChunkGrid::regular(&[10, 0], &[3, 2]).unwrap();
        let pieces = g.pieces(&Selection::all(&g.shape())).unwrap();
        assert!(pieces[1].is_empty());
        assert_eq!(g.spans(&pieces).count(), 0);
        let g = ChunkGrid::regular(&[10], &[3]).unwrap();
        let pieces = g.pieces(&Selection(vec![range(4, 4, 1)])).unwrap();
        assert_eq!(g.spans(&pieces).count(), 0);
    }

    /// A dimension plus a valid selection along it.
    fn dim_and_selection() -> impl Strategy<Value = (ChunkDim, DimSelection)> {
        dim().prop_flat_map(|d| {
            let n = d.extent();
            let ranged =
                (0..=n, 0..=n + 2, 1u64..=9).prop_map(move |(start, stop, step)| range(start, stop.min(n), step));
            let sel =
                if n == 0 { ranged.boxed() } else { prop_oneof![(0..n).prop_map(DimSelection::Index), ranged].boxed() };
            (Just(d), sel)
        })
    }

    /// Brute force: enumerate every selected index, locate it, group by chunk.
    fn brute_pieces(d: &ChunkDim, sel: DimSelection) -> Vec<DimPiece> {
        let (indices, step): (Vec<u64>, u64) = match sel {
            DimSelection::Index(i) => (vec![i], 1),
            DimSelection::Range { start, stop, step } => ((start..stop).step_by(step as usize).collect(), step),
        };
        let mut pieces: Vec<DimPiece> = Vec::new();
        for (out, &i) in indices.iter().enumerate() {
            let (chunk, offset) = d.locate(i).unwrap();
            match pieces.last_mut() {
                Some(p) if p.chunk == chunk => {
                    assert_eq!(offset, p.first + p.count * step);
                    p.count += 1;
                }
                _ => pieces.push(DimPiece { chunk, first: offset, step, count: 1, out_start: out as u64 }),
            }
        }
        pieces
    }

    proptest! {
        #[test]
        fn pieces_match_brute_force(dims in prop::collection::vec(dim_and_selection(), 0..=3)) {
            let (dims, sels): (Vec<ChunkDim>, Vec<DimSelection>) = dims.into_iter().unzip();
            let g = ChunkGrid::new(dims);
            let sel = Selection(sels);
            let pieces = g.pieces(&sel).unwrap();
            for ((d, &s), got) in g.dims().iter().zip(&sel.0).zip(&pieces) {
                prop_assert_eq!(got, &brute_pieces(d, s));
                prop_assert_eq!(got.iter().map(|p| p.count).sum::<u64>(), s.count());
            }
            let spans: Vec<ChunkSpan> = g.spans(&pieces).collect();
            let expected = pieces.iter().map(|p| p.len() as u64).product::<u64>();
            prop_assert_eq!(spans.len() as u64, expected);
            let total: u64 = spans.iter().map(|s| s.pieces.iter().map(|p| p.count).product::<u64>()).sum();
            prop_assert_eq!(total, if spans.is_empty() { 0 } else { sel.len() });
            let linear: Vec<u64> = spans.iter().map(|s| g.linear_index(&s.coords)).collect();
            prop_assert!(linear.windows(2).all(|w| w[0] < w[1]));
        }

        #[test]
        fn parse_never_panics(spec in "[-0-9:, ]{0,12}", shape in prop::collection::vec(0u64..20, 0..3)) {
            if let Ok(sel) = Selection::parse(&spec, &shape) {
                let g = ChunkGrid::regular(&shape, &vec![3; shape.len()]).unwrap();
                prop_assert!(g.pieces(&sel).is_ok());
            }
        }
    }
}
