//! Planning a compaction along one dimension (pure): which chunks are kept as they are and which runs
//! of small chunks are folded into target-size chunks.
//!
//! Input: the array's [`ChunkDim`] along the compacted dimension, the target edge and whether only
//! the tail is folded. Output: one [`Piece`] per chunk of the new grid along the dimension.
//!
//! Every chunk is judged by the elements it HOLDS ([`ChunkDim::valid`]), never by its encoded edge:
//! the last chunk of a file's unlimited `time` (512 long, holding 31) holds 31, so 24 monthly files
//! of daily `tas` in chunks of one day fold, with target 30, into `[30 x 24, 11]` (731 days). The
//! last stored file is folded like the others: `vzarr append` continues a store whose last chunk
//! holds its whole edge after that chunk (`append/splice`).
//!
//! Rule: a chunk is *small* when it holds fewer than `target` elements. Every maximal run of
//! consecutive small chunks (of those eligible) holding `L` elements becomes `floor(L / target)`
//! chunks of `target` elements and one of the remainder (`[365, 365, 1 x 40]`, target 30:
//! `[365, 365, 30, 10]`), but only when that lowers the run's number of chunks: the plan of an
//! already compacted dimension keeps everything (idempotent).

use crate::grid::{ChunkDim, GridError};

/// One chunk of the new grid along the compacted dimension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Piece {
    /// Old chunk number `.0`, kept with its reference (and its edge).
    Keep(u64),
    /// A new chunk of `length` elements from array index `start`, folded from old chunks
    /// `first..last` (exclusive) of the dimension.
    Fold {
        /// First array index along the dimension.
        start: u64,
        /// Elements along the dimension.
        length: u64,
        /// First old chunk it overlaps.
        first: u64,
        /// One past the last old chunk it overlaps.
        last: u64,
    },
}

/// Which chunks a compaction may fold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct FoldRule {
    /// The target edge (elements along the dimension), >= 1.
    pub target: u64,
    /// Fold only the chunks after the last chunk of at least `target` elements.
    pub tail: bool,
}

/// The pieces of the new dimension; `None` when nothing is folded.
pub(super) fn plan_dim(dim: &ChunkDim, rule: &FoldRule) -> Option<Vec<Piece>> {
    let n = dim.num_chunks();
    let target = rule.target.max(1);
    let keep_from = n;
    let small = |c: u64| dim.valid(c) < target;
    let first_eligible = if rule.tail { (0..keep_from).rev().find(|&c| !small(c)).map_or(0, |c| c + 1) } else { 0 };
    let mut pieces = Vec::with_capacity(usize::try_from(n).unwrap_or(0));
    let mut folded = false;
    let mut c = 0;
    while c < n {
        if c < first_eligible || c >= keep_from || !small(c) {
            pieces.push(Piece::Keep(c));
            c += 1;
            continue;
        }
        let end = (c..keep_from).find(|&k| !small(k)).unwrap_or(keep_from);
        let total: u64 = (c..end).map(|k| dim.valid(k)).sum();
        if total.div_ceil(target) < end - c {
            fold_run(dim, c, end, total, target, &mut pieces);
            folded = true;
        } else {
            pieces.extend((c..end).map(Piece::Keep));
        }
        c = end;
    }
    folded.then_some(pieces)
}

/// The pieces giving the dimension the chunk edges `edges` (calendar months, a variable's groups):
/// an old chunk that already starts and ends where a new one does is kept, every other new chunk is
/// folded from the old chunks it overlaps; with `tail`, the old chunks up to the last kept one stay
/// as they are. `None` when nothing changes, or when `edges` do not cover the dimension.
pub(super) fn plan_edges(dim: &ChunkDim, edges: &[u64], tail: bool) -> Option<Vec<Piece>> {
    if edges.iter().sum::<u64>() != dim.extent() || edges.contains(&0) {
        return None;
    }
    let mut pieces = Vec::with_capacity(edges.len());
    let mut start = 0;
    for &length in edges {
        let (first, offset) = dim.locate(start)?;
        let (last, _) = dim.locate(start + length - 1)?;
        pieces.push(match offset == 0 && last == first && dim.valid(first) == length {
            true => Piece::Keep(first),
            false => Piece::Fold { start, length, first, last: last + 1 },
        });
        start += length;
    }
    if tail {
        if let Some(k) = pieces.iter().rposition(|p| matches!(p, Piece::Keep(_))) {
            let Piece::Keep(c) = pieces[k] else { return None };
            pieces.splice(..=k, (0..=c).map(Piece::Keep));
        }
    }
    pieces.iter().any(|p| matches!(p, Piece::Fold { .. })).then_some(pieces)
}

/// Pieces of `target` elements (the last one shorter) covering old chunks `first..end`.
fn fold_run(dim: &ChunkDim, first: u64, end: u64, total: u64, target: u64, pieces: &mut Vec<Piece>) {
    let origin = dim.start(first);
    let mut done = 0;
    while done < total {
        let start = origin + done;
        let length = target.min(total - done);
        let chunk_of = |index: u64| dim.locate(index).map_or(end - 1, |(chunk, _)| chunk);
        let (a, b) = (chunk_of(start), chunk_of(start + length - 1) + 1);
        pieces.push(Piece::Fold { start, length, first: a, last: b });
        done += length;
    }
}

/// The new dimension: kept chunks keep their edge (a kept last chunk encoded past the array's end
/// stays so: it really decodes to that edge), folded ones have their length.
///
/// # Errors
/// [`GridError`] when the edges do not form a valid dimension (a bug in the plan).
pub(super) fn new_dim(dim: &ChunkDim, pieces: &[Piece]) -> Result<ChunkDim, GridError> {
    let edges: Vec<u64> = pieces
        .iter()
        .map(|p| match *p {
            Piece::Keep(c) => dim.edge(c),
            Piece::Fold { length, .. } => length,
        })
        .collect();
    ChunkDim::from_edges(dim.extent(), &edges)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn dim(edges: &[u64]) -> ChunkDim {
        ChunkDim::from_edges(edges.iter().sum(), edges).unwrap()
    }

    fn edges_after(edges: &[u64], rule: FoldRule) -> Vec<u64> {
        let d = dim(edges);
        match plan_dim(&d, &rule) {
            Some(pieces) => new_dim(&d, &pieces).unwrap().edges().collect(),
            None => edges.to_vec(),
        }
    }

    fn rule(target: u64) -> FoldRule {
        FoldRule { target, tail: false }
    }

    #[test]
    fn the_daily_tail_folds_into_target_chunks() {
        let mut edges = vec![365, 365];
        edges.extend(std::iter::repeat_n(1, 40));
        assert_eq!(edges_after(&edges, rule(30)), vec![365, 365, 30, 10]);
        // 60 daily files: two chunks of 30, the last file's day folded with the others.
        assert_eq!(edges_after(&[1; 60], rule(30)), vec![30, 30]);
    }

    #[test]
    fn tail_folds_only_after_the_last_target_chunk() {
        let edges = [1, 1, 1, 30, 1, 1, 1];
        assert_eq!(edges_after(&edges, rule(30)), vec![3, 30, 3]);
        assert_eq!(edges_after(&edges, FoldRule { tail: true, ..rule(30) }), vec![1, 1, 1, 30, 3]);
    }

    #[test]
    fn nothing_to_fold_gives_no_plan() {
        assert_eq!(plan_dim(&dim(&[30, 30, 10]), &rule(30)), None);
        // Folding [20, 20] would give [30, 10]: no fewer chunks, so nothing is done.
        assert_eq!(plan_dim(&dim(&[20, 20]), &rule(30)), None);
        assert_eq!(plan_dim(&dim(&[365, 1]), &rule(30)), None);
    }

    #[test]
    fn folds_name_the_old_chunks_they_overlap() {
        let pieces = plan_dim(&dim(&[2, 2, 2]), &rule(4)).unwrap();
        assert_eq!(
            pieces,
            vec![
                Piece::Fold { start: 0, length: 4, first: 0, last: 2 },
                Piece::Fold { start: 4, length: 2, first: 2, last: 3 }
            ]
        );
        let pieces = plan_dim(&dim(&[3, 3, 3, 3]), &rule(4)).unwrap();
        assert_eq!(pieces[1], Piece::Fold { start: 4, length: 4, first: 1, last: 3 });
    }

    #[test]
    fn a_last_chunk_past_the_extent_folds_by_its_valid_length() {
        // Extent 7: edges 1, 1, 1, 10 (the last chunk holds 4).
        let d = ChunkDim::from_edges(7, &[1, 1, 1, 10]).unwrap();
        let pieces = plan_dim(&d, &rule(30)).unwrap();
        assert_eq!(new_dim(&d, &pieces).unwrap().edges().collect::<Vec<_>>(), vec![7]);
    }

    #[test]
    fn the_monthly_archive_folds_by_held_elements() {
        // tas of 24 monthly files (2000-2001), one day a chunk: 731 chunks of 1.
        let tas = ChunkDim::regular(731, 1).unwrap();
        let pieces = plan_dim(&tas, &rule(30)).unwrap();
        let mut expected = vec![30; 24];
        expected.push(11);
        assert_eq!(new_dim(&tas, &pieces).unwrap().edges().collect::<Vec<_>>(), expected);
        // time: one chunk per file, the last one encoded as 512 and holding 31. Nothing lowers the
        // number of chunks, so nothing is folded; with a target of 62, every chunk folds, the
        // last by the 31 it holds (731 = 62 x 11 + 49).
        let mut months = vec![31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
        months.extend([31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 512]);
        let time = ChunkDim::from_edges(731, &months).unwrap();
        assert_eq!(plan_dim(&time, &rule(28)), None);
        let folded = new_dim(&time, &plan_dim(&time, &rule(62)).unwrap()).unwrap();
        let mut pairs = vec![62; 11];
        pairs.push(49);
        assert_eq!(folded.edges().collect::<Vec<_>>(), pairs);
    }

    fn edges_to(edges: &[u64], to: &[u64], tail: bool) -> Vec<u64> {
        let d = dim(edges);
        match plan_edges(&d, to, tail) {
            Some(pieces) => new_dim(&d, &pieces).unwrap().edges().collect(),
            None => edges.to_vec(),
        }
    }

    #[test]
    fn edges_plans_fold_to_the_given_edges_and_keep_what_already_fits() {
        // 59 daily chunks to January and February.
        assert_eq!(edges_to(&[1; 59], &[31, 28], false), vec![31, 28]);
        // A year in one chunk cut into months: every month folds from the one chunk.
        let d = dim(&[59]);
        let pieces = plan_edges(&d, &[31, 28], false).unwrap();
        assert_eq!(pieces[1], Piece::Fold { start: 31, length: 28, first: 0, last: 1 });
        // Already months: nothing to do (idempotent).
        assert_eq!(plan_edges(&dim(&[31, 28]), &[31, 28], false), None);
        // A kept month, then days folded.
        assert_eq!(edges_to(&[31, 1, 1, 1], &[31, 3], false), vec![31, 3]);
        // Tail: what lies before the last month already in place stays.
        assert_eq!(edges_to(&[10, 21, 28, 1, 1], &[31, 28, 2], true), vec![10, 21, 28, 2]);
        // Edges that do not cover the dimension give no plan.
        assert_eq!(plan_edges(&dim(&[1; 59]), &[31, 27], false), None);
    }

    proptest! {
        #[test]
        fn edges_plans_give_exactly_the_edges(
            edges in proptest::collection::vec(1u64..8, 1..30),
            cuts in proptest::collection::vec(1u64..12, 1..30),
        ) {
            let d = dim(&edges);
            // Target edges over the same extent: the cuts, the last one trimmed to fit.
            let mut to = Vec::new();
            let mut left = d.extent();
            for c in cuts.iter().chain(std::iter::repeat(&5)) {
                if left == 0 { break; }
                let c = (*c).min(left);
                to.push(c);
                left -= c;
            }
            if let Some(pieces) = plan_edges(&d, &to, false) {
                let after = new_dim(&d, &pieces).unwrap();
                prop_assert_eq!(after.held_edges().collect::<Vec<_>>(), to.clone());
                prop_assert_eq!(plan_edges(&after, &to, false), None);
            } else {
                prop_assert_eq!(d.held_edges().collect::<Vec<_>>(), to);
            }
        }

        #[test]
        fn plans_cover_the_dimension_and_are_idempotent(
            edges in proptest::collection::vec(1u64..8, 1..40),
            target in 1u64..20,
            tail: bool,
        ) {
            let d = dim(&edges);
            let rule = FoldRule { target, tail };
            if let Some(pieces) = plan_dim(&d, &rule) {
                let after = new_dim(&d, &pieces).unwrap();
                prop_assert_eq!(after.extent(), d.extent());
                prop_assert!(after.num_chunks() < d.num_chunks());
                // Kept chunks keep their place; folds tile the rest.
                let mut at = 0;
                for p in &pieces {
                    match *p {
                        Piece::Keep(c) => { prop_assert_eq!(d.start(c), at); at += d.valid(c); }
                        Piece::Fold { start, length, first, last } => {
                            prop_assert_eq!(start, at);
                            prop_assert!(length <= target && first < last);
                            at += length;
                        }
                    }
                }
                prop_assert_eq!(at, d.extent());
                // Folding again changes nothing.
                prop_assert_eq!(plan_dim(&after, &rule), None);
            }
        }
    }
}
