//! Planning a regular copy (pure): the blocks read at once, and whether to go through an intermediate
//! copy, as rechunker plans it (its `rechunking_plan`: consolidated writes, consolidated reads, and
//! intermediate chunks that fit both).
//!
//! Input: the source chunk grid (regular or rectilinear), the target chunk shape, the element size and
//! the bytes one block may hold. Output: a [`Plan`].
//!
//! - **Write blocks** `W`: the target chunk grown by whole multiples, the last dimension first (the
//!   contiguous one), while the block fits the budget. A block is read through the store, then cut
//!   into its target chunks.
//! - **Read amplification** of reading blocks of `b` along a dimension: the length of the source chunks
//!   each block overlaps, summed over the blocks, over the extent (1.0: every source chunk decoded once;
//!   blocks narrower than the source chunks decode each chunk once per block). The array's is the
//!   product over its dimensions.
//! - **Direct** when the write blocks' amplification is at most [`INTERMEDIATE_ABOVE`].
//! - **Intermediate** otherwise (when it reads less): read blocks `R` are the source chunk grown the
//!   same way, along each dimension up to the write block where that is longer (else not at all);
//!   the intermediate chunks are `min(R, W)` per dimension, and `R` is cut to whole intermediate
//!   chunks, so that each read block writes whole intermediate chunks. Pass 1 reads `R` blocks from
//!   the store and writes the intermediate chunks; pass 2 reads `W` blocks from the intermediate
//!   chunks and writes the target chunks. Each pass holds one block, within the budget.

use crate::grid::{ChunkDim, ChunkGrid};

/// Read amplification of the direct plan above which the copy goes through an intermediate pass
/// (when that reads less): the intermediate pass writes and reads the array once more, about what
/// 2-3 extra reads of the source cost, so below 4x the direct copy is as fast.
pub(crate) const INTERMEDIATE_ABOVE: f64 = 4.0;

/// Blocks per dimension above which the amplification is estimated rather than summed.
const EXACT_BLOCKS: u64 = 1 << 20;

/// How one array is copied.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Plan {
    /// The write block (elements per dimension): whole target chunks, at most the extent.
    pub(crate) write: Vec<u64>,
    /// Read amplification of reading write blocks from the store.
    pub(crate) direct: f64,
    /// The intermediate pass, when the plan takes one.
    pub(crate) intermediate: Option<Intermediate>,
}

/// The two passes of a copy through an intermediate array.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Intermediate {
    /// Pass 1's read block: whole intermediate chunks.
    pub(crate) read: Vec<u64>,
    /// The intermediate chunk shape.
    pub(crate) chunks: Vec<u64>,
    /// Read amplification of pass 1 (store) plus pass 2 (intermediate chunks).
    pub(crate) amplification: f64,
}

/// The plan of copying an array on `source` into regular `target` chunks of `element_size`-byte
/// elements, a block holding at most `budget` bytes.
pub(crate) fn plan(source: &ChunkGrid, target: &[u64], element_size: u64, budget: u64) -> Plan {
    let shape = source.shape();
    let write = consolidate(&shape, target, element_size, budget, &shape);
    let direct = amplification(source, &write);
    let mut plan = Plan { write, direct, intermediate: None };
    if direct <= INTERMEDIATE_ABOVE || shape.contains(&0) {
        return plan;
    }
    let source_chunk: Vec<u64> = source
        .dims()
        .iter()
        .zip(&shape)
        .map(|(d, &n)| d.held_range().map_or(1, |(_, max)| max).clamp(1, n.max(1)))
        .collect();
    let limits: Vec<u64> = plan.write.iter().zip(&source_chunk).map(|(&w, &s)| w.max(s)).collect();
    let mut read = consolidate(&shape, &source_chunk, element_size, budget, &limits);
    let chunks: Vec<u64> = read.iter().zip(&plan.write).map(|(&r, &w)| r.min(w)).collect();
    for ((r, &c), &n) in read.iter_mut().zip(&chunks).zip(&shape) {
        if *r < n {
            *r = (*r / c) * c; // whole intermediate chunks (a block of the whole extent holds them all)
        }
    }
    let pass1 = amplification(source, &read);
    let pass2 = ChunkGrid::regular(&shape, &chunks).map_or(f64::INFINITY, |grid| amplification(&grid, &plan.write));
    // The intermediate array is written once and read `pass2` times: worth it when that costs less.
    if pass1 + pass2 + 1.0 < direct {
        plan.intermediate = Some(Intermediate { read, chunks, amplification: pass1 + pass2 });
    }
    plan
}

/// `chunks` grown by whole multiples, the last dimension first, each at most `limits` (or the whole
/// extent, when the limit reaches it), while the block holds at most `budget` bytes (at least one
/// chunk, whatever the budget).
fn consolidate(shape: &[u64], chunks: &[u64], element_size: u64, budget: u64, limits: &[u64]) -> Vec<u64> {
    let mut block: Vec<u64> = chunks.iter().zip(shape).map(|(&c, &n)| c.clamp(1, n.max(1))).collect();
    let bytes = block.iter().fold(element_size, |a, &c| a.saturating_mul(c));
    let mut headroom = (budget / bytes.max(1)).max(1);
    for d in (0..block.len()).rev() {
        let (c, n) = (block[d], shape[d].max(1));
        let limit = limits[d].min(n);
        let most = if limit >= n { n.div_ceil(c) } else { (limit / c).max(1) };
        let factor = most.min(headroom).max(1);
        block[d] = (c * factor).min(n);
        headroom /= factor;
    }
    block
}

/// Read amplification of reading blocks of `block` (elements per dimension) from `grid`.
pub(crate) fn amplification(grid: &ChunkGrid, block: &[u64]) -> f64 {
    grid.dims().iter().zip(block).map(|(dim, &b)| dim_amplification(dim, b)).product()
}

/// Along one dimension: the source chunk length the blocks overlap, over the extent.
fn dim_amplification(dim: &ChunkDim, block: u64) -> f64 {
    let n = dim.extent();
    if n == 0 || block == 0 {
        return 1.0;
    }
    let blocks = n.div_ceil(block);
    if blocks > EXACT_BLOCKS {
        // Each block overlaps at most its own length plus one chunk less one element.
        let edge = dim.held_range().map_or(1, |(_, max)| max);
        return (block + edge - 1) as f64 / block as f64;
    }
    let mut covered = 0u64;
    for k in 0..blocks {
        let (start, end) = (k * block, ((k + 1) * block).min(n));
        let (Some((first, _)), Some((last, _))) = (dim.locate(start), dim.locate(end - 1)) else { continue };
        covered += dim.start(last) + dim.valid(last) - dim.start(first);
    }
    covered as f64 / n as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_grow_from_the_last_dimension_within_the_budget() {
        let shape = [731, 180, 360];
        // A row of target chunks fits: the block is that row, then grown along time.
        let w = consolidate(&shape, &[90, 45, 90], 4, 64 << 20, &shape);
        assert_eq!(w, vec![180, 180, 360]);
        // Not even two chunks fit: one chunk.
        assert_eq!(consolidate(&shape, &[90, 45, 90], 4, 1 << 20, &shape), vec![90, 45, 90]);
        // Limits stop the growth.
        assert_eq!(consolidate(&shape, &[1, 180, 360], 4, 64 << 20, &[10, 180, 360]), vec![10, 180, 360]);
    }

    #[test]
    fn amplification_counts_the_source_chunks_each_block_decodes() {
        let grid = ChunkGrid::regular(&[100, 60], &[1, 60]).unwrap();
        assert_eq!(amplification(&grid, &[10, 60]), 1.0);
        assert_eq!(amplification(&grid, &[10, 10]), 6.0);
        // Months along time, blocks of 90 days: the months crossing a block edge are read twice.
        let months = [31u64, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
        let time = ChunkGrid::new(vec![ChunkDim::from_edges(365, &months).unwrap()]);
        let a = amplification(&time, &[90]);
        assert!(a > 1.0 && a < 2.0, "{a}");
        assert_eq!(amplification(&time, &[365]), 1.0);
    }

    #[test]
    fn badly_crossing_grids_take_the_intermediate_pass() {
        // Daily whole-globe chunks into long time series of small tiles, 8 MiB a block.
        let source = ChunkGrid::regular(&[731, 180, 360], &[1, 180, 360]).unwrap();
        let plan = plan(&source, &[365, 10, 10], 4, 8 << 20);
        let pass = plan.intermediate.clone().expect("an intermediate pass");
        assert!(plan.direct > 10.0, "{}", plan.direct);
        assert!(pass.amplification < 3.0, "{pass:?}");
        let shape = [731u64, 180, 360];
        for (d, t) in [365u64, 10, 10].into_iter().enumerate() {
            let (r, c, w) = (pass.read[d], pass.chunks[d], plan.write[d]);
            assert!(r % c == 0 || r == shape[d], "read blocks hold whole intermediate chunks");
            assert!(c <= r && c <= w && (c == r || c == w), "{pass:?}");
            assert!(w % t == 0 || w == shape[d], "write blocks hold whole target chunks");
        }
        let bytes = |b: &[u64]| b.iter().product::<u64>() * 4;
        assert!(bytes(&pass.read) <= 8 << 20 && bytes(&plan.write) <= 8 << 20);
        // The same copy with room for a whole row: direct.
        let plan2 = super::plan(&source, &[365, 10, 10], 4, 1 << 30);
        assert!(plan2.intermediate.is_none() && plan2.direct <= INTERMEDIATE_ABOVE, "{plan2:?}");
        // Monthly slabs into 90-day chunks: direct.
        let monthly = ChunkGrid::regular(&[731, 180, 360], &[31, 90, 180]).unwrap();
        assert!(super::plan(&monthly, &[90, 45, 90], 4, 512 << 20).intermediate.is_none());
    }
}
