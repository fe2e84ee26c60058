//! Referencing uncompressed contiguous storage (HDF5 contiguous datasets; later also NetCDF-3
//! non-record variables) as slabs along the first dimension.
//!
//! An uncompressed block can be cut at any row, so a large variable becomes several byte ranges of at
//! most `max_slab_bytes` each and a small read fetches little. Slab heights prefer a divisor of the
//! first dimension (a `regular` grid); when none is close, the last slab is shorter (a `rectilinear`
//! grid whose last edge is exact, so no chunk ever decodes past the stored bytes).

use crate::grid::{ChunkDim, ChunkGrid, GridError};
use crate::manifest::ChunkEntry;

/// The grid and entries for a contiguous block of `shape` elements of `element_size` bytes starting at
/// byte `address` of source `source`.
pub(crate) fn slab_layout(
    shape: &[u64],
    element_size: u64,
    address: u64,
    source: u32,
    max_slab_bytes: u64,
) -> Result<(ChunkGrid, Vec<ChunkEntry>), GridError> {
    let Some((&rows, rest)) = shape.split_first() else {
        let entry = ChunkEntry::Source { source, offset: address, length: element_size };
        return Ok((ChunkGrid::new(Vec::new()), vec![entry]));
    };
    let row_bytes = rest.iter().product::<u64>() * element_size;
    // No rows (a record variable of a file without records): a regular step, as zarr-python refuses a
    // rectilinear dimension without edges.
    let first = match rows {
        0 => ChunkDim::regular(0, 1)?,
        _ => ChunkDim::from_edges(rows, &slab_edges(rows, row_bytes, max_slab_bytes))?,
    };
    let mut dims = vec![first];
    for &extent in rest {
        dims.push(ChunkDim::regular(extent, extent.max(1))?);
    }
    let grid = ChunkGrid::new(dims);
    if grid.num_chunks() == 0 {
        return Ok((grid, Vec::new()));
    }
    let first = &grid.dims()[0];
    let entries = (0..first.num_chunks())
        .map(|k| ChunkEntry::Source {
            source,
            offset: address + first.start(k) * row_bytes,
            length: first.edge(k) * row_bytes,
        })
        .collect();
    Ok((grid, entries))
}

/// Slab heights along the first dimension: all equal when a good divisor exists, else equal with a
/// shorter last one. Empty when `rows` is 0.
fn slab_edges(rows: u64, row_bytes: u64, max_slab_bytes: u64) -> Vec<u64> {
    if rows == 0 {
        return Vec::new();
    }
    let height = (max_slab_bytes / row_bytes.max(1)).clamp(1, rows);
    let divisor = (height.div_ceil(2)..=height).rev().find(|d| rows.is_multiple_of(*d));
    match divisor {
        Some(d) => vec![d; (rows / d) as usize],
        None => {
            let mut edges = vec![height; (rows / height) as usize];
            edges.push(rows % height);
            edges
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_rows_is_a_regular_grid_zarr_python_opens() {
        let (grid, entries) = slab_layout(&[0, 3], 4, 100, 0, 1 << 20).unwrap();
        assert!(entries.is_empty());
        assert_eq!(grid.to_json()["name"], "regular", "{}", grid.to_json());
    }

    fn covered(entries: &[ChunkEntry]) -> (u64, u64) {
        let mut next = 100;
        for e in entries {
            let ChunkEntry::Source { offset, length, .. } = *e else { panic!("not a source entry") };
            assert_eq!(offset, next, "slabs must tile the block");
            next = offset + length;
        }
        (100, next)
    }

    #[test]
    fn small_variables_are_one_chunk() {
        let (grid, entries) = slab_layout(&[10, 4], 8, 100, 0, 1 << 20).unwrap();
        assert_eq!(grid.grid_shape(), vec![1, 1]);
        assert_eq!(covered(&entries), (100, 420));
    }

    #[test]
    fn large_variables_split_on_a_divisor_or_with_a_short_last_slab() {
        // 100 rows of 1 KiB, 10 KiB slabs -> 10 rows each, regular.
        let (grid, entries) = slab_layout(&[100, 256], 4, 100, 3, 10 << 10).unwrap();
        assert!(grid.is_regular());
        assert_eq!(entries.len(), 10);
        assert_eq!(covered(&entries), (100, 100 + 100 * 1024));
        // 101 rows (prime): 10-row slabs and a last slab of 1 row.
        let (grid, entries) = slab_layout(&[101, 256], 4, 100, 3, 10 << 10).unwrap();
        assert_eq!(grid.dims()[0].edges().collect::<Vec<_>>(), [vec![10; 10], vec![1]].concat());
        assert_eq!(covered(&entries), (100, 100 + 101 * 1024));
    }

    #[test]
    fn scalars_and_empty_variables() {
        let (grid, entries) = slab_layout(&[], 4, 100, 0, 1 << 20).unwrap();
        assert_eq!((grid.num_chunks(), entries.len()), (1, 1));
        let (grid, entries) = slab_layout(&[0, 5], 4, 100, 0, 1 << 20).unwrap();
        assert_eq!((grid.num_chunks(), entries.len()), (0, 0));
    }
}
