//! Chunk edges that follow a variable's groups (input: the decoded elements of a 1-D variable along
//! the dimension and their size; output: the edges): one chunk per run of consecutive equal values,
//! as `np.unique(ids, return_counts=True)` gives the counts of sorted ids. Values compare by their
//! bytes (a NaN equals a NaN of the same bits).

/// The lengths of the runs of equal `size`-byte elements of `values`.
pub(crate) fn group_edges(values: &[u8], size: usize) -> Vec<u64> {
    let mut edges: Vec<u64> = Vec::new();
    let mut last: Option<&[u8]> = None;
    for element in values.chunks_exact(size.max(1)) {
        match edges.last_mut() {
            Some(edge) if last == Some(element) => *edge += 1,
            _ => edges.push(1),
        }
        last = Some(element);
    }
    edges
}

#[cfg(test)]
mod tests {
    use super::group_edges;

    #[test]
    fn runs_of_equal_values_are_chunks() {
        let ids: Vec<u8> = [3i32, 3, 3, 7, 7, 1, 3].iter().flat_map(|v| v.to_ne_bytes()).collect();
        assert_eq!(group_edges(&ids, 4), vec![3, 2, 1, 1]);
        assert_eq!(group_edges(&[], 4), Vec::<u64>::new());
        assert_eq!(group_edges(b"aab", 1), vec![2, 1]);
    }
}
