//! Shared proptest strategies for the grid tests: edge lists (with runs, one-element chunks and a
//! ragged last chunk), zero-length dimensions, and small N-d grids.

use super::{ChunkDim, ChunkGrid};
use proptest::prelude::*;

/// Edges with repeated runs, plus an extent the edges validly describe: the last chunk may extend past
/// the extent, no other chunk does. Includes the empty edge list with extent 0.
pub(crate) fn edges_and_extent() -> impl Strategy<Value = (Vec<u64>, u64)> {
    let run = (1u64..=6, 1usize..=4).prop_map(|(edge, count)| vec![edge; count]);
    prop_oneof![
        1 => Just((Vec::new(), 0)),
        12 => prop::collection::vec(run, 1..=5).prop_flat_map(|runs| {
            let edges: Vec<u64> = runs.into_iter().flatten().collect();
            let total: u64 = edges.iter().sum();
            let before_last = total - edges[edges.len() - 1];
            (Just(edges), before_last + 1..=total)
        }),
    ]
}

/// One dimension: regular (possibly with extent 0) or from an edge list.
pub(crate) fn dim() -> impl Strategy<Value = ChunkDim> {
    prop_oneof![
        (0u64..=20, 1u64..=7)
            .prop_map(|(extent, size)| { ChunkDim::regular(extent, size).unwrap_or_else(|e| panic!("{e}")) }),
        edges_and_extent()
            .prop_map(|(edges, extent)| { ChunkDim::from_edges(extent, &edges).unwrap_or_else(|e| panic!("{e}")) }),
    ]
}

/// A grid of 0 to 3 dimensions.
pub(crate) fn grid() -> impl Strategy<Value = ChunkGrid> {
    prop::collection::vec(dim(), 0..=3).prop_map(ChunkGrid::new)
}
