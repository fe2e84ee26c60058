//! The chunk grid: array shape plus chunk edges along every dimension.
//!
//! Stage: pure data model, shared by scan (building `zarr.json`), combine (concatenating files into a
//! rectilinear grid) and read (resolving a selection to chunks). Depends on nothing else in the crate.
//!
//! Follows the Zarr v3 core `regular` grid and the zarr-extensions `rectilinear` grid
//! (Zarr v3 core specification, chunk grids; zarr-extensions `rectilinear`):
//! - [`ChunkDim`] (in `grid/dim.rs`): one dimension, regular or varying edges, index <-> chunk lookup.
//! - [`ChunkGrid`] (here): N dimensions, chunk coordinates, row-major linear chunk indices.
//! - JSON in/out with run-length encoding (`grid/json.rs`).
//! - [`Selection`] parsing and the per-chunk pieces a selection touches (`grid/selection.rs`).
//!
//! A 0-d (scalar) grid has no dimensions and exactly one chunk whose shape is `[]`.

mod dim;
mod json;
mod selection;
#[cfg(test)]
pub(crate) mod strategies;

pub use dim::ChunkDim;
pub use selection::{ChunkSpan, DimPiece, DimSelection, Selection};

/// Errors building, parsing or querying a chunk grid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum GridError {
    /// A regular chunk size of 0.
    #[error("chunk size must be at least 1, got 0")]
    ZeroChunkSize,
    /// An explicit chunk edge of 0.
    #[error("chunk {chunk} has edge length 0; every edge must be at least 1")]
    ZeroEdge {
        /// Index of the chunk along the dimension.
        chunk: u64,
    },
    /// A chunk that is not the last one starts at or beyond the extent.
    #[error("chunk {chunk} starts at or beyond the extent {extent}; only the last chunk may extend past the array")]
    ChunkPastExtent {
        /// Index of the offending chunk along the dimension.
        chunk: u64,
        /// Extent of the dimension.
        extent: u64,
    },
    /// The chunk edges do not cover the extent.
    #[error("chunk edges sum to {sum}, less than the extent {extent}")]
    EdgesTooShort {
        /// Sum of all edges.
        sum: u64,
        /// Extent of the dimension.
        extent: u64,
    },
    /// A per-dimension list whose length differs from the number of dimensions.
    #[error("{what} has {got} entries, expected {expected} (one per dimension)")]
    RankMismatch {
        /// What was being matched against the dimensions (`"chunk_shape"`, `"selection"`, ...).
        what: &'static str,
        /// Number of dimensions.
        expected: usize,
        /// Number of entries given.
        got: usize,
    },
    /// An error confined to one dimension of a grid.
    #[error("invalid chunk grid in dimension {dim}")]
    InDimension {
        /// Dimension index.
        dim: usize,
        /// What is wrong with it.
        #[source]
        source: Box<GridError>,
    },
    /// Malformed chunk grid JSON.
    #[error("{at}: expected {expected}, found {found}")]
    InvalidJson {
        /// JSON path of the offending value, e.g. `chunk_grid.configuration.chunk_shapes[1][0]`.
        at: String,
        /// What was expected there.
        expected: &'static str,
        /// The value found (compact JSON, truncated).
        found: String,
    },
    /// A chunk grid `name` other than `regular` or `rectilinear`.
    #[error("unsupported chunk grid {name:?}; expected \"regular\" or \"rectilinear\"")]
    UnknownGridName {
        /// The name found.
        name: String,
    },
    /// A rectilinear grid whose `kind` is not `inline`.
    #[error("unsupported rectilinear chunk grid kind {kind:?}; only \"inline\" is supported")]
    UnsupportedKind {
        /// The kind found.
        kind: String,
    },
    /// An entry of a selection string that cannot be parsed.
    #[error("selection entry {part:?} for dimension {dim}: {reason}")]
    BadSelection {
        /// The entry as written.
        part: String,
        /// Dimension it applies to.
        dim: usize,
        /// Why it is rejected.
        reason: &'static str,
    },
    /// An integer index outside the dimension.
    #[error("index {index} out of range for dimension {dim} of length {len}")]
    IndexOutOfRange {
        /// The index as written (negative counts from the end).
        index: i128,
        /// Dimension index.
        dim: usize,
        /// Extent of the dimension.
        len: u64,
    },
    /// A resolved selection that reaches beyond the extent or has a step of 0.
    #[error("selection in dimension {dim} is invalid for length {len}: {reason}")]
    SelectionOutOfBounds {
        /// Dimension index.
        dim: usize,
        /// Extent of the dimension.
        len: u64,
        /// What is wrong.
        reason: &'static str,
    },
}

impl GridError {
    /// Wraps `self` as an error of dimension `dim`.
    fn in_dim(self, dim: usize) -> Self {
        Self::InDimension { dim, source: Box::new(self) }
    }
}

/// N-d chunk grid. A 0-d (scalar) grid has ndim 0, exactly 1 chunk and chunk shape `[]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkGrid {
    dims: Vec<ChunkDim>,
}

impl ChunkGrid {
    /// A grid from its dimensions (an empty vector gives the 0-d grid).
    pub fn new(dims: Vec<ChunkDim>) -> Self {
        Self { dims }
    }

    /// A regular grid: `shape[d]` elements in chunks of `chunk_shape[d]`.
    ///
    /// # Errors
    /// [`GridError::RankMismatch`] when the lengths differ, [`GridError::InDimension`] wrapping
    /// [`GridError::ZeroChunkSize`] when a chunk size is 0.
    pub fn regular(shape: &[u64], chunk_shape: &[u64]) -> Result<Self, GridError> {
        if shape.len() != chunk_shape.len() {
            return Err(GridError::RankMismatch { what: "chunk_shape", expected: shape.len(), got: chunk_shape.len() });
        }
        let dims = shape
            .iter()
            .zip(chunk_shape)
            .enumerate()
            .map(|(d, (&extent, &size))| ChunkDim::regular(extent, size).map_err(|e| e.in_dim(d)))
            .collect::<Result<_, _>>()?;
        Ok(Self { dims })
    }

    /// Number of dimensions.
    pub fn ndim(&self) -> usize {
        self.dims.len()
    }

    /// All dimensions, in order.
    pub fn dims(&self) -> &[ChunkDim] {
        &self.dims
    }

    /// Dimension `d`.
    ///
    /// # Panics
    /// When `d >= ndim()`, like slice indexing; use `dims().get(d)` for a checked lookup.
    pub fn dim(&self, d: usize) -> &ChunkDim {
        &self.dims[d]
    }

    /// Array shape (the extent of every dimension).
    pub fn shape(&self) -> Vec<u64> {
        self.dims.iter().map(ChunkDim::extent).collect()
    }

    /// Number of chunks along every dimension.
    pub fn grid_shape(&self) -> Vec<u64> {
        self.dims.iter().map(ChunkDim::num_chunks).collect()
    }

    /// Total number of chunks: 1 for a 0-d grid, 0 when any dimension has none, saturating at
    /// `u64::MAX` (see [`ChunkGrid::checked_num_chunks`]).
    pub fn num_chunks(&self) -> u64 {
        self.checked_num_chunks().unwrap_or(u64::MAX)
    }

    /// Total number of chunks, `None` when it does not fit in u64.
    pub fn checked_num_chunks(&self) -> Option<u64> {
        let counts = self.grid_shape();
        if counts.contains(&0) {
            return Some(0);
        }
        counts.iter().try_fold(1u64, |acc, &n| acc.checked_mul(n))
    }

    /// True when every dimension is regular (the Zarr core `regular` grid can describe it).
    pub fn is_regular(&self) -> bool {
        self.dims.iter().all(ChunkDim::is_regular)
    }

    /// Decoded shape (full edges) of the chunk at grid coordinates `coords`.
    ///
    /// `coords` must have `ndim()` entries, each below that dimension's chunk count (checked in debug
    /// builds; otherwise the result is unspecified but nothing panics).
    pub fn chunk_shape(&self, coords: &[u64]) -> Vec<u64> {
        debug_assert_eq!(coords.len(), self.ndim());
        self.dims.iter().zip(coords).map(|(d, &c)| d.edge(c)).collect()
    }

    /// First array index of the chunk at `coords` along every dimension.
    ///
    /// Same preconditions as [`ChunkGrid::chunk_shape`].
    pub fn chunk_origin(&self, coords: &[u64]) -> Vec<u64> {
        debug_assert_eq!(coords.len(), self.ndim());
        self.dims.iter().zip(coords).map(|(d, &c)| d.start(c)).collect()
    }

    /// Row-major (C order, last dimension fastest) linear index of the chunk at `coords`.
    ///
    /// Same preconditions as [`ChunkGrid::chunk_shape`]; saturates when the chunk count overflows u64.
    pub fn linear_index(&self, coords: &[u64]) -> u64 {
        debug_assert_eq!(coords.len(), self.ndim());
        self.dims.iter().zip(coords).fold(0u64, |acc, (d, &c)| {
            debug_assert!(c < d.num_chunks(), "chunk coordinate {c} out of range");
            acc.saturating_mul(d.num_chunks()).saturating_add(c)
        })
    }

    /// Grid coordinates of the chunk with row-major index `linear` (inverse of
    /// [`ChunkGrid::linear_index`]).
    ///
    /// `linear` must be below [`ChunkGrid::num_chunks`] (checked in debug builds).
    pub fn chunk_coords(&self, linear: u64) -> Vec<u64> {
        debug_assert!(linear < self.num_chunks(), "chunk {linear} out of range");
        let mut rest = linear;
        let mut coords = vec![0; self.ndim()];
        for (coord, d) in coords.iter_mut().zip(&self.dims).rev() {
            let n = d.num_chunks().max(1);
            *coord = rest % n;
            rest /= n;
        }
        coords
    }
}

#[cfg(test)]
mod tests {
    use super::strategies::grid;
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn scalar_grid() {
        let g = ChunkGrid::new(vec![]);
        assert_eq!((g.ndim(), g.num_chunks()), (0, 1));
        assert!(g.is_regular());
        assert!(g.shape().is_empty() && g.grid_shape().is_empty());
        assert!(g.chunk_shape(&[]).is_empty());
        assert_eq!(g.linear_index(&[]), 0);
        assert!(g.chunk_coords(0).is_empty());
        assert_eq!(ChunkGrid::regular(&[], &[]), Ok(g));
    }

    #[test]
    fn regular_grid() {
        let g = ChunkGrid::regular(&[10, 7], &[4, 7]).unwrap();
        assert_eq!(g.shape(), vec![10, 7]);
        assert_eq!(g.grid_shape(), vec![3, 1]);
        assert_eq!(g.num_chunks(), 3);
        assert_eq!(g.chunk_shape(&[2, 0]), vec![4, 7]);
        assert_eq!(g.chunk_origin(&[2, 0]), vec![8, 0]);
        assert_eq!(g.dim(0).valid(2), 2);
        assert_eq!(
            ChunkGrid::regular(&[10], &[4, 7]),
            Err(GridError::RankMismatch { what: "chunk_shape", expected: 1, got: 2 })
        );
        let err = ChunkGrid::regular(&[10, 7], &[4, 0]).unwrap_err();
        assert_eq!(err, GridError::ZeroChunkSize.in_dim(1));
        assert_eq!(err.to_string(), "invalid chunk grid in dimension 1");
    }

    #[test]
    fn zero_extent_dim_has_no_chunks() {
        let g = ChunkGrid::regular(&[0, 5], &[3, 2]).unwrap();
        assert_eq!(g.grid_shape(), vec![0, 3]);
        assert_eq!(g.num_chunks(), 0);
        assert_eq!(g.checked_num_chunks(), Some(0));
    }

    #[test]
    fn chunk_count_overflow_saturates() {
        let g = ChunkGrid::regular(&[u64::MAX, u64::MAX], &[1, 1]).unwrap();
        assert_eq!(g.checked_num_chunks(), None);
        assert_eq!(g.num_chunks(), u64::MAX);
    }

    #[test]
    fn linear_index_is_row_major() {
        let g = ChunkGrid::regular(&[6, 6, 6], &[2, 3, 6]).unwrap();
        let mut expected = 0;
        for a in 0..3 {
            for b in 0..2 {
                assert_eq!(g.linear_index(&[a, b, 0]), expected);
                assert_eq!(g.chunk_coords(expected), vec![a, b, 0]);
                expected += 1;
            }
        }
    }

    proptest! {
        #[test]
        fn linear_index_round_trips(g in grid()) {
            let n = g.num_chunks();
            prop_assert_eq!(n, g.grid_shape().iter().product::<u64>());
            for linear in 0..n {
                let coords = g.chunk_coords(linear);
                prop_assert_eq!(g.linear_index(&coords), linear);
                for (d, &c) in g.dims().iter().zip(&coords) {
                    prop_assert!(c < d.num_chunks());
                }
            }
        }

        #[test]
        fn chunks_tile_the_shape(g in grid()) {
            // Every chunk's valid region, summed over the grid, is exactly the array.
            let total: u64 = (0..g.num_chunks())
                .map(|linear| {
                    let coords = g.chunk_coords(linear);
                    g.dims().iter().zip(&coords).map(|(d, &c)| d.valid(c)).product::<u64>()
                })
                .sum();
            prop_assert_eq!(total, g.shape().iter().product::<u64>());
        }
    }
}
