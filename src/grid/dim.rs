//! One dimension of a chunk grid: the array extent plus the chunk edges along it.
//!
//! Stage: pure data model, shared by scan, combine and read. Input: an extent and a chunk size (Zarr v3
//! core `regular` grid) or a list of edges (zarr-extensions `rectilinear` grid, the Zarr v3 core specification's chunk grids and the zarr-extensions `rectilinear` grid).
//! Output: a validated [`ChunkDim`] answering "which chunk holds index i" and "where does chunk k start".
//!
//! Varying edges are stored run-length encoded (`edge` repeated `count` times, with the prefix sums of
//! chunk counts and element counts at the start of each run), not as one prefix sum per chunk. Lookups
//! are a binary search over runs (`partition_point`), and a hostile `[[1, 1000000000000]]` entry costs
//! one run instead of a trillion-element allocation. Runs are kept maximal, so equal grids compare
//! equal, and a dimension whose edges are all equal is always stored as `Regular`.

use super::GridError;

/// One maximal run of equal chunk edges.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Run {
    /// Edge length of every chunk in the run (>= 1).
    pub(super) edge: u64,
    /// Number of chunks in the run (>= 1).
    pub(super) count: u64,
    /// Index of the first chunk of the run along the dimension.
    first_chunk: u64,
    /// Array index where the first chunk of the run starts.
    first_index: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Repr {
    /// Every chunk has edge `size`; the last one may extend past the extent.
    Regular { size: u64 },
    /// Maximal runs of varying edges: at least two runs, or none when the extent is 0.
    Runs(Vec<Run>),
}

/// One dimension of a chunk grid: array extent + chunk edges.
///
/// Either regular (one chunk size) or rectilinear (explicit edges). Only the last chunk may extend past
/// the extent; every chunk decodes to its full edge length.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkDim {
    extent: u64,
    repr: Repr,
}

/// Incremental, validating construction of a run list (used by [`ChunkDim::from_edges`] and JSON).
#[derive(Debug)]
pub(super) struct RunsBuilder {
    extent: u64,
    runs: Vec<Run>,
    chunks: u64,
    /// Start of the next chunk; `None` once the sum of edges overflowed u64 (so it exceeds the extent).
    next_index: Option<u64>,
}

impl RunsBuilder {
    /// Starts an empty run list for a dimension of `extent` elements.
    pub(super) fn new(extent: u64) -> Self {
        Self { extent, runs: Vec::new(), chunks: 0, next_index: Some(0) }
    }

    /// How many chunks of `edge` can still start inside the extent (0 once full).
    pub(super) fn room(&self, edge: u64) -> u64 {
        match self.next_index {
            Some(next) if next < self.extent && edge > 0 => (self.extent - next).div_ceil(edge),
            _ => 0,
        }
    }

    /// Appends `count` chunks of length `edge`.
    ///
    /// # Errors
    /// [`GridError::ZeroEdge`] when `edge` is 0, [`GridError::ChunkPastExtent`] when one of the new chunks
    /// would start at or beyond the extent.
    pub(super) fn push(&mut self, edge: u64, count: u64) -> Result<(), GridError> {
        if count == 0 {
            return Ok(());
        }
        if edge == 0 {
            return Err(GridError::ZeroEdge { chunk: self.chunks });
        }
        let room = self.room(edge);
        if count > room {
            return Err(GridError::ChunkPastExtent { chunk: self.chunks + room, extent: self.extent });
        }
        // `room > 0` here, so `next_index` is `Some` and below the extent.
        let first_index = self.next_index.unwrap_or(self.extent);
        match self.runs.last_mut() {
            Some(last) if last.edge == edge => last.count += count,
            _ => self.runs.push(Run { edge, count, first_chunk: self.chunks, first_index }),
        }
        self.chunks += count;
        self.next_index = edge.checked_mul(count).and_then(|len| first_index.checked_add(len));
        Ok(())
    }

    /// Finishes the dimension, collapsing a single run to a regular dimension.
    ///
    /// # Errors
    /// [`GridError::EdgesTooShort`] when the edges do not cover the extent.
    pub(super) fn finish(self) -> Result<ChunkDim, GridError> {
        if let Some(sum) = self.next_index.filter(|&sum| sum < self.extent) {
            return Err(GridError::EdgesTooShort { sum, extent: self.extent });
        }
        let repr = match self.runs.as_slice() {
            [only] => Repr::Regular { size: only.edge },
            _ => Repr::Runs(self.runs),
        };
        Ok(ChunkDim { extent: self.extent, repr })
    }
}

impl ChunkDim {
    /// A regular dimension: `ceil(extent / size)` chunks of `size` elements.
    ///
    /// # Errors
    /// [`GridError::ZeroChunkSize`] when `size` is 0.
    pub fn regular(extent: u64, size: u64) -> Result<Self, GridError> {
        if size == 0 {
            return Err(GridError::ZeroChunkSize);
        }
        Ok(Self { extent, repr: Repr::Regular { size } })
    }

    /// Varying edges. Collapses to a regular dimension when all edges equal some `c` (then there are
    /// necessarily `ceil(extent / c)` of them).
    ///
    /// Valid: every edge >= 1; when `extent > 0`, `sum(edges) >= extent` and
    /// `sum(edges[..n-1]) < extent` (only the LAST chunk may extend past the extent); when
    /// `extent == 0`, `edges` must be empty.
    ///
    /// # Errors
    /// [`GridError::ZeroEdge`] for an edge of 0, [`GridError::ChunkPastExtent`] for a chunk other than
    /// the last one reaching the extent (or any chunk when the extent is 0), [`GridError::EdgesTooShort`]
    /// when the edges sum to less than the extent.
    pub fn from_edges(extent: u64, edges: &[u64]) -> Result<Self, GridError> {
        let mut builder = RunsBuilder::new(extent);
        let mut rest = edges;
        while let Some(&edge) = rest.first() {
            let run = rest.iter().take_while(|&&e| e == edge).count();
            builder.push(edge, run as u64)?;
            rest = rest.get(run..).unwrap_or_default();
        }
        builder.finish()
    }

    /// Varying edges given as `(edge, count)` runs (adjacent equal edges are merged), checked as
    /// [`ChunkDim::from_edges`] checks the edges they expand to, without expanding them: a grid of
    /// 10^7 chunks built from a few runs per file costs the runs, not a list of 10^7 edges.
    ///
    /// # Errors
    /// As [`ChunkDim::from_edges`].
    pub fn from_runs(extent: u64, runs: impl IntoIterator<Item = (u64, u64)>) -> Result<Self, GridError> {
        let mut builder = RunsBuilder::new(extent);
        for (edge, count) in runs {
            builder.push(edge, count)?;
        }
        builder.finish()
    }

    /// Number of array elements along this dimension.
    pub fn extent(&self) -> u64 {
        self.extent
    }

    /// Number of chunks: `ceil(extent / size)` when regular (0 when the extent is 0).
    pub fn num_chunks(&self) -> u64 {
        match &self.repr {
            Repr::Regular { size } => self.extent.div_ceil(*size),
            Repr::Runs(runs) => runs.last().map_or(0, |r| r.first_chunk + r.count),
        }
    }

    /// Run holding `chunk` (the last run for out-of-range chunks), `None` when there are no runs.
    fn run_of_chunk(runs: &[Run], chunk: u64) -> Option<&Run> {
        let after = runs.partition_point(|r| r.first_chunk <= chunk);
        runs.get(after.saturating_sub(1))
    }

    /// Decoded length of `chunk`: its full edge, even when it extends past the extent.
    ///
    /// `chunk` must be `< num_chunks()` (checked in debug builds); out-of-range chunks give an
    /// unspecified value, never a panic in release builds.
    pub fn edge(&self, chunk: u64) -> u64 {
        debug_assert!(chunk < self.num_chunks(), "chunk {chunk} out of range");
        match &self.repr {
            Repr::Regular { size } => *size,
            Repr::Runs(runs) => Self::run_of_chunk(runs, chunk).map_or(0, |r| r.edge),
        }
    }

    /// First array index of `chunk`.
    ///
    /// `chunk` must be `< num_chunks()` (checked in debug builds); out-of-range chunks give an
    /// unspecified value, never a panic in release builds.
    pub fn start(&self, chunk: u64) -> u64 {
        debug_assert!(chunk < self.num_chunks(), "chunk {chunk} out of range");
        match &self.repr {
            Repr::Regular { size } => chunk.saturating_mul(*size),
            Repr::Runs(runs) => Self::run_of_chunk(runs, chunk).map_or(0, |r| {
                let within = chunk.saturating_sub(r.first_chunk);
                r.first_index.saturating_add(within.saturating_mul(r.edge))
            }),
        }
    }

    /// Elements of `chunk` inside the array: `min(edge, extent - start)`.
    ///
    /// `chunk` must be `< num_chunks()` (checked in debug builds).
    pub fn valid(&self, chunk: u64) -> u64 {
        self.edge(chunk).min(self.extent.saturating_sub(self.start(chunk)))
    }

    /// `(chunk, offset in chunk)` of array index `index`; `None` if `index >= extent`.
    ///
    /// O(1) for a regular dimension, O(log runs) otherwise.
    pub fn locate(&self, index: u64) -> Option<(u64, u64)> {
        if index >= self.extent {
            return None;
        }
        match &self.repr {
            Repr::Regular { size } => Some((index / size, index % size)),
            Repr::Runs(runs) => {
                let after = runs.partition_point(|r| r.first_index <= index);
                let run = runs.get(after.checked_sub(1)?)?;
                let within = index - run.first_index;
                Some((run.first_chunk + within / run.edge, within % run.edge))
            }
        }
    }

    /// True when every chunk has the same edge (the Zarr `regular` grid can describe it).
    pub fn is_regular(&self) -> bool {
        matches!(self.repr, Repr::Regular { .. })
    }

    /// The chunk size of a regular dimension, `None` for varying edges.
    pub fn regular_size(&self) -> Option<u64> {
        match self.repr {
            Repr::Regular { size } => Some(size),
            Repr::Runs(_) => None,
        }
    }

    /// Edge of every chunk, in order (one item per chunk).
    pub fn edges(&self) -> impl Iterator<Item = u64> + '_ {
        (0..self.num_chunks()).map(move |chunk| self.edge(chunk))
    }

    /// Maximal runs of equal edges as `(edge, count)`, in order; a regular dimension is one run
    /// (none when it has no chunks). O(runs), unlike [`ChunkDim::edges`].
    pub fn runs(&self) -> Vec<(u64, u64)> {
        match &self.repr {
            Repr::Regular { size } => match self.num_chunks() {
                0 => Vec::new(),
                n => vec![(*size, n)],
            },
            Repr::Runs(runs) => runs.iter().map(|r| (r.edge, r.count)).collect(),
        }
    }

    /// Elements each chunk HOLDS, as maximal `(held, count)` runs: the runs of [`ChunkDim::runs`] with
    /// the last chunk counted by [`ChunkDim::valid`] (`min(edge, extent - start)`), not by its encoded
    /// edge. A monthly file's `time` of 31 values in a chunk of 512 holds 31: its edges are `[512]`,
    /// its held runs `[(31, 1)]`. What a user reads, and what every consumer that plans by elements
    /// (compaction, regular and sharded copies, `info`) works with. O(runs).
    pub fn held_runs(&self) -> Vec<(u64, u64)> {
        let mut runs = self.runs();
        let n = self.num_chunks();
        let Some(last) = n.checked_sub(1) else { return runs };
        let held = self.valid(last);
        if held == self.edge(last) {
            return runs;
        }
        if let Some(tail) = runs.last_mut() {
            tail.1 -= 1;
            if tail.1 == 0 {
                runs.pop();
            }
        }
        match runs.last_mut() {
            Some(tail) if tail.0 == held => tail.1 += 1,
            _ => runs.push((held, 1)),
        }
        runs
    }

    /// Elements each chunk holds, in order (one item per chunk): [`ChunkDim::valid`] of every chunk.
    pub fn held_edges(&self) -> impl Iterator<Item = u64> + '_ {
        (0..self.num_chunks()).map(move |chunk| self.valid(chunk))
    }

    /// `(min, max)` of the elements the chunks hold ([`ChunkDim::held_runs`]), `None` when there
    /// are no chunks: `28..31` for a month-per-file `time`, where [`ChunkDim::edge_range`] says
    /// `28..512`.
    pub fn held_range(&self) -> Option<(u64, u64)> {
        self.held_runs().iter().fold(None, |acc, &(edge, _)| match acc {
            None => Some((edge, edge)),
            Some((lo, hi)) => Some((lo.min(edge), hi.max(edge))),
        })
    }

    /// `(min edge, max edge)` over all chunks, `None` when there are no chunks.
    pub fn edge_range(&self) -> Option<(u64, u64)> {
        self.runs().iter().fold(None, |acc, &(edge, _)| match acc {
            None => Some((edge, edge)),
            Some((lo, hi)) => Some((lo.min(edge), hi.max(edge))),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::strategies::edges_and_extent;
    use super::*;
    use proptest::prelude::*;

    /// Brute force: expand the edges, walk every index.
    fn brute_locate(edges: &[u64], index: u64) -> (u64, u64) {
        let mut start = 0;
        for (chunk, &edge) in edges.iter().enumerate() {
            if index < start + edge {
                return (chunk as u64, index - start);
            }
            start += edge;
        }
        panic!("index {index} past the edges");
    }

    #[test]
    fn regular_basics() {
        let d = ChunkDim::regular(10, 4).unwrap();
        assert_eq!(d.num_chunks(), 3);
        assert_eq!(d.edges().collect::<Vec<_>>(), vec![4, 4, 4]);
        assert_eq!((d.start(2), d.edge(2), d.valid(2)), (8, 4, 2));
        assert_eq!(d.locate(9), Some((2, 1)));
        assert_eq!(d.locate(10), None);
        assert_eq!(d.regular_size(), Some(4));
        assert_eq!(d.edge_range(), Some((4, 4)));
        assert_eq!(ChunkDim::regular(3, 0), Err(GridError::ZeroChunkSize));
    }

    #[test]
    fn zero_extent_and_one_element_chunks() {
        let d = ChunkDim::regular(0, 5).unwrap();
        assert_eq!(d.num_chunks(), 0);
        assert_eq!(d.edges().count(), 0);
        assert_eq!(d.edge_range(), None);
        assert_eq!(d.locate(0), None);
        let e = ChunkDim::from_edges(0, &[]).unwrap();
        assert_eq!((e.num_chunks(), e.is_regular()), (0, false));
        assert_eq!(ChunkDim::from_edges(0, &[1]), Err(GridError::ChunkPastExtent { chunk: 0, extent: 0 }));
        let ones = ChunkDim::from_edges(5, &[1, 1, 1, 1, 1]).unwrap();
        assert_eq!(ones, ChunkDim::regular(5, 1).unwrap());
        assert_eq!(ones.locate(4), Some((4, 0)));
    }

    #[test]
    fn rectilinear_lookup() {
        // Months of a non-leap year: 31, 28, 31, 30.
        let d = ChunkDim::from_edges(120, &[31, 28, 31, 30]).unwrap();
        assert!(!d.is_regular());
        assert_eq!(d.num_chunks(), 4);
        assert_eq!(d.start(3), 90);
        assert_eq!(d.locate(30), Some((0, 30)));
        assert_eq!(d.locate(31), Some((1, 0)));
        assert_eq!(d.locate(119), Some((3, 29)));
        assert_eq!(d.edge_range(), Some((28, 31)));
        assert_eq!(d.runs(), vec![(31, 1), (28, 1), (31, 1), (30, 1)]);
    }

    #[test]
    fn from_edges_validation() {
        assert_eq!(ChunkDim::from_edges(5, &[2, 0, 3]), Err(GridError::ZeroEdge { chunk: 1 }));
        assert_eq!(ChunkDim::from_edges(5, &[2, 2]), Err(GridError::EdgesTooShort { sum: 4, extent: 5 }));
        // Only the last chunk may extend past the extent.
        assert_eq!(ChunkDim::from_edges(5, &[3, 3, 1]), Err(GridError::ChunkPastExtent { chunk: 2, extent: 5 }));
        assert_eq!(ChunkDim::from_edges(5, &[]), Err(GridError::EdgesTooShort { sum: 0, extent: 5 }));
        // A huge last edge is fine (its end overflows u64, but nothing starts there).
        let d = ChunkDim::from_edges(10, &[5, u64::MAX]).unwrap();
        assert_eq!((d.valid(1), d.edge(1)), (5, u64::MAX));
        assert_eq!(
            ChunkDim::from_edges(10, &[5, u64::MAX, 1]),
            Err(GridError::ChunkPastExtent { chunk: 2, extent: 10 })
        );
    }

    #[test]
    fn collapses_to_regular() {
        let d = ChunkDim::from_edges(10, &[4, 4, 4]).unwrap();
        assert_eq!(d, ChunkDim::regular(10, 4).unwrap());
        let last_short = ChunkDim::from_edges(10, &[4, 4, 2]).unwrap();
        assert!(!last_short.is_regular());
        assert_eq!(last_short.runs(), vec![(4, 2), (2, 1)]);
    }

    #[test]
    fn held_runs_count_the_last_chunk_by_what_it_holds() {
        // 24 months, the last file's `time` chunk of 512 holding 31.
        let d = ChunkDim::from_edges(90, &[31, 28, 512]).unwrap();
        assert_eq!(d.edge_range(), Some((28, 512)));
        assert_eq!(d.held_range(), Some((28, 31)));
        assert_eq!(d.held_runs(), vec![(31, 1), (28, 1), (31, 1)]);
        assert_eq!(d.held_edges().collect::<Vec<_>>(), vec![31, 28, 31]);
        // Regular chunks of 8 over 31: the last holds 7.
        let r = ChunkDim::regular(31, 8).unwrap();
        assert_eq!(r.held_runs(), vec![(8, 3), (7, 1)]);
        // The held length merges with the run before it; a full last chunk changes nothing.
        let m = ChunkDim::from_edges(35, &[10, 10, 10, 512]).unwrap();
        assert_eq!(m.held_runs(), vec![(10, 3), (5, 1)]);
        let e = ChunkDim::from_edges(25, &[10, 10, 10]).unwrap();
        assert_eq!(e.held_runs(), vec![(10, 2), (5, 1)]);
        let f = ChunkDim::from_edges(40, &[30, 10]).unwrap();
        assert_eq!(f.held_runs(), f.runs());
        assert_eq!(ChunkDim::regular(0, 4).unwrap().held_runs(), vec![]);
        assert_eq!(ChunkDim::from_edges(6, &[5, 1]).unwrap().held_runs(), vec![(5, 1), (1, 1)]);
    }

    proptest! {
        #[test]
        fn locate_matches_brute_force((edges, extent) in edges_and_extent()) {
            let d = ChunkDim::from_edges(extent, &edges).unwrap();
            prop_assert_eq!(d.extent(), extent);
            prop_assert_eq!(d.edges().collect::<Vec<_>>(), edges.clone());
            prop_assert_eq!(d.num_chunks(), edges.len() as u64);
            for index in 0..extent {
                let (chunk, offset) = brute_locate(&edges, index);
                prop_assert_eq!(d.locate(index), Some((chunk, offset)));
                prop_assert_eq!(d.start(chunk) + offset, index);
                prop_assert!(offset < d.valid(chunk));
            }
            prop_assert_eq!(d.locate(extent), None);
            let valid: u64 = (0..d.num_chunks()).map(|c| d.valid(c)).sum();
            prop_assert_eq!(valid, extent);
            let held: Vec<u64> =
                d.held_runs().iter().flat_map(|&(e, n)| std::iter::repeat_n(e, n as usize)).collect();
            prop_assert_eq!(held, d.held_edges().collect::<Vec<_>>());
            let uniform = edges.windows(2).all(|w| w[0] == w[1]) && !edges.is_empty();
            prop_assert_eq!(d.is_regular(), uniform);
        }

        #[test]
        fn runs_expand_to_edges((edges, extent) in edges_and_extent()) {
            let d = ChunkDim::from_edges(extent, &edges).unwrap();
            let expanded: Vec<u64> = d
                .runs()
                .iter()
                .flat_map(|&(edge, count)| std::iter::repeat_n(edge, count as usize))
                .collect();
            prop_assert_eq!(expanded, edges);
            prop_assert!(d.runs().windows(2).all(|w| w[0].0 != w[1].0));
        }

        #[test]
        fn from_runs_equals_from_edges((edges, extent) in edges_and_extent(), cut in 0usize..8) {
            // Runs as a caller may give them: one per edge (equal neighbours not merged), some empty.
            let runs: Vec<(u64, u64)> = edges
                .iter()
                .enumerate()
                .flat_map(|(i, &e)| if i % 8 == cut { vec![(e, 1), (e, 0)] } else { vec![(e, 1)] })
                .collect();
            prop_assert_eq!(ChunkDim::from_runs(extent, runs).unwrap(), ChunkDim::from_edges(extent, &edges).unwrap());
        }
    }
}
