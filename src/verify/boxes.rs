//! The pieces verify reads a variable in: boxes of about [`SLAB_BYTES`] that cover its shape, cut
//! where they straddle the extent of the HDF5 dataset behind a netCDF variable.

use crate::ndcopy::unravel;

/// Target bytes compared per step (bounds memory for large arrays).
const SLAB_BYTES: u64 = 32 << 20;

/// The boxes (first index and count per dimension, C order) that cover `shape` in pieces of about
/// [`SLAB_BYTES`] at most (one element at least): whole rows grouped along the first dimension, and
/// where one index of a dimension already holds more, that dimension is cut too, the ones before it
/// taken one index at a time. Verify's memory is bounded by the box, whatever the variable's shape.
/// A scalar is one box with no dimensions (read whole).
pub(super) fn comparison_boxes(shape: &[u64], element_size: u64) -> impl Iterator<Item = (Vec<u64>, Vec<u64>)> + '_ {
    // The first dimension along which several indices may be grouped within the budget.
    let inner = |d: usize| shape[d + 1..].iter().product::<u64>().saturating_mul(element_size);
    let cut = (0..shape.len()).find(|&d| inner(d) <= SLAB_BYTES).unwrap_or(shape.len().saturating_sub(1));
    let step = if shape.is_empty() { 1 } else { (SLAB_BYTES / inner(cut).max(1)).max(1) };
    let outer: u64 = shape[..cut.min(shape.len())].iter().product();
    let along = shape.get(cut).copied().unwrap_or(1);
    let per_outer = along.div_ceil(step);
    let total = if shape.contains(&0) {
        0
    } else if shape.is_empty() {
        1
    } else {
        outer * per_outer
    };
    (0..total).map(move |i| {
        if shape.is_empty() {
            return (Vec::new(), Vec::new());
        }
        let (o, k) = (i / per_outer, i % per_outer);
        let mut starts: Vec<u64> = unravel(o, &shape[..cut]);
        let mut counts = vec![1; cut];
        let start = k * step;
        starts.push(start);
        counts.push(step.min(along - start));
        starts.extend(std::iter::repeat_n(0, shape.len() - cut - 1));
        counts.extend_from_slice(&shape[cut + 1..]);
        (starts, counts)
    })
}

/// The box `counts` from `starts` cut where it straddles `extent` (the HDF5 dataset's extent, along
/// the box's leading axes): pieces wholly inside or wholly past the extent along every axis, in C order.
pub(super) fn split_at_extent(starts: Vec<u64>, counts: Vec<u64>, extent: Option<&[u64]>) -> Vec<(Vec<u64>, Vec<u64>)> {
    let mut pieces = vec![(starts, counts)];
    let Some(extent) = extent else { return pieces };
    for (axis, &end) in extent.iter().enumerate() {
        pieces = pieces
            .into_iter()
            .flat_map(|(starts, counts)| match (starts.get(axis), counts.get(axis)) {
                (Some(&s), Some(&c)) if s < end && end < s + c => {
                    let (mut before, mut after) = ((starts.clone(), counts.clone()), (starts, counts));
                    before.1[axis] = end - s;
                    after.0[axis] = end;
                    after.1[axis] = s + c - end;
                    vec![before, after]
                }
                _ => vec![(starts, counts)],
            })
            .collect();
    }
    pieces
}

#[cfg(test)]
mod tests {
    use super::{comparison_boxes, split_at_extent, SLAB_BYTES};

    /// Every element of `shape` in exactly one box, each box within the budget (or one element).
    fn assert_covers(shape: &[u64], element_size: u64) {
        let total: u64 = shape.iter().product();
        let mut seen = 0u64;
        let mut last_end: Option<Vec<u64>> = None;
        for (starts, counts) in comparison_boxes(shape, element_size) {
            let n: u64 = counts.iter().product();
            assert!(n * element_size <= SLAB_BYTES || n == 1, "{shape:?}: box {counts:?} over the budget");
            for ((&s, &c), &extent) in starts.iter().zip(&counts).zip(shape) {
                assert!(c >= 1 && s + c <= extent, "{shape:?}: box {starts:?}+{counts:?} outside");
            }
            // Boxes come in C order without overlap: each starts after the previous one.
            if let Some(previous) = &last_end {
                assert!(starts > *previous || starts.is_empty(), "{shape:?}: {starts:?} after {previous:?}");
            }
            last_end = Some(starts.clone());
            seen += n;
        }
        assert_eq!(seen, total, "{shape:?}: every element once");
    }

    #[test]
    fn boxes_are_cut_at_the_hdf5_extent() {
        // A (time, time) variable of netCDF shape [3, 3] whose HDF5 dataset holds [2, 3].
        let pieces = split_at_extent(vec![0, 0], vec![3, 3], Some(&[2, 3]));
        assert_eq!(pieces, vec![(vec![0, 0], vec![2, 3]), (vec![2, 0], vec![1, 3])]);
        // Cut along both axes; a box wholly inside or past the extent is left whole.
        let pieces = split_at_extent(vec![1, 0], vec![4, 5], Some(&[3, 2]));
        assert_eq!(
            pieces,
            vec![
                (vec![1, 0], vec![2, 2]),
                (vec![1, 2], vec![2, 3]),
                (vec![3, 0], vec![2, 2]),
                (vec![3, 2], vec![2, 3])
            ]
        );
        assert_eq!(split_at_extent(vec![3, 0], vec![1, 5], Some(&[3, 2])).len(), 2);
        assert_eq!(split_at_extent(vec![4, 3], vec![1, 2], Some(&[3, 2])).len(), 1);
        assert_eq!(split_at_extent(vec![0], vec![9], None).len(), 1);
    }

    #[test]
    fn boxes_cover_every_shape_within_the_budget() {
        assert_covers(&[], 8);
        assert_covers(&[10], 4);
        assert_covers(&[0, 5], 4);
        assert_covers(&[3, 1 << 24], 4); // 64 MiB rows: each row cut in two
        assert_covers(&[2, 3, 1 << 23], 8); // rows of 3 x 64 MiB: cut along the last dimension
        assert_covers(&[5, 1 << 30], 4); // 4 GiB rows
        assert_covers(&[1000, 7, 11], 4); // small: rows grouped
        let boxes: Vec<_> = comparison_boxes(&[3, 1 << 24], 4).collect();
        assert_eq!(boxes.len(), 6);
        assert_eq!(boxes[1], (vec![0, 1 << 23], vec![1, 1 << 23]));
    }
}
