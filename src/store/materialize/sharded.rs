//! Writing one array as shards: the source chunks' stored bytes concatenated verbatim plus the
//! `sharding_indexed` index (`codec/sharding`), one object per shard.
//!
//! Input: an opened array and its [`ShardLayout`] (`plan`). Output: shard objects put to an
//! [`ObjectSink`] under `<array>/c/<shard coords>`; a shard without any present chunk is not written
//! (readers return the fill value).
//!
//! Streaming: shards are visited in C order, slab by slab along the first outer dimension; each slab's
//! manifest entries are fetched when the first of its shards is needed, and at most
//! `max_concurrent_shards` shards are fetched, assembled and written at once, so memory holds one
//! slab's entries plus that many shards.

use std::sync::Arc;

use futures::{StreamExt, TryStreamExt};

use super::plan::ShardLayout;
use super::sink::{put, ObjectSink};
use crate::codec::sharding::ShardBuilder;
use crate::manifest::ChunkEntry;
use crate::read::{ArrayReader, ReadError};
use crate::store::export::{chunk_key, ExportError};

/// What was written for one array.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Written {
    /// Objects (shards) written.
    pub(super) objects: u64,
    /// Chunks copied into them.
    pub(super) chunks: u64,
    /// Bytes of the objects.
    pub(super) bytes: u64,
}

/// One shard to write: its key and its inner chunks' entries in C order.
#[derive(Debug)]
struct ShardJob {
    key: String,
    entries: Vec<ChunkEntry>,
}

/// Writes every shard of `array`; `progress(n)` after each shard with its chunks copied.
pub(super) async fn write_shards(
    array: &ArrayReader,
    layout: &ShardLayout,
    sink: &Arc<dyn ObjectSink>,
    max_concurrent_shards: usize,
    progress: &(dyn Fn(u64) + Send + Sync),
) -> Result<Written, ExportError> {
    let slabs = layout.grid.dim(0).num_chunks();
    let jobs = futures::stream::iter(0..slabs)
        .then(|slab| slab_jobs(array, layout, slab))
        .map_ok(|jobs| futures::stream::iter(jobs).map(Ok::<_, ReadError>))
        .try_flatten()
        .map_err(ExportError::from);
    let writes = jobs.map_ok(|job| write_shard(array, job, sink)).try_buffer_unordered(max_concurrent_shards.max(1));
    let mut writes = std::pin::pin!(writes);
    let mut total = Written::default();
    while let Some(written) = writes.try_next().await? {
        total.objects += written.objects;
        total.chunks += written.chunks;
        total.bytes += written.bytes;
        progress(written.chunks);
    }
    Ok(total)
}

/// The shards whose first outer coordinate is `slab`, with their entries (one manifest fetch).
async fn slab_jobs(array: &ArrayReader, layout: &ShardLayout, slab: u64) -> Result<Vec<ShardJob>, ReadError> {
    let source = &array.metadata().chunk_grid;
    let counts = source.grid_shape();
    let outer = &layout.grid;
    let c0 = layout.chunk_shape[0];
    let first = outer.dim(0).start(slab) / c0;
    let end = (first + outer.dim(0).edge(slab) / c0).min(counts[0]);
    let rest: u64 = counts[1..].iter().product();
    let entries = array.entries(first * rest..end * rest).await?;
    let mut slab_counts = counts.clone();
    slab_counts[0] = end - first;
    let shards_in_slab: u64 = outer.grid_shape()[1..].iter().product();
    let jobs = (0..shards_in_slab)
        .map(|i| {
            let coords = outer.chunk_coords(slab * shards_in_slab + i);
            let key = chunk_key(array.path(), &coords);
            ShardJob { key, entries: shard_entries(layout, &coords, first, &slab_counts, &entries) }
        })
        .collect();
    Ok(jobs)
}

/// The entries of shard `coords`' inner chunks in C order; `slab_entries` are the entries of source
/// chunks `first..` along dimension 0 (all of the others), in row-major order of `slab_counts`.
fn shard_entries(
    layout: &ShardLayout,
    coords: &[u64],
    first: u64,
    slab_counts: &[u64],
    slab_entries: &[ChunkEntry],
) -> Vec<ChunkEntry> {
    let outer = &layout.grid;
    let chunk = &layout.chunk_shape;
    let origin: Vec<u64> = outer.chunk_origin(coords).iter().zip(chunk).map(|(o, c)| o / c).collect();
    let inner: Vec<u64> = outer.chunk_shape(coords).iter().zip(chunk).map(|(e, c)| e / c).collect();
    let total: u64 = inner.iter().product();
    let mut out = Vec::with_capacity(usize::try_from(total).unwrap_or(0));
    let mut at = vec![0u64; inner.len()];
    for _ in 0..total {
        out.push(inner_entry(&origin, &at, first, slab_counts, slab_entries));
        // Odometer over the inner chunks, last dimension fastest.
        for d in (0..at.len()).rev() {
            at[d] += 1;
            if at[d] < inner[d] {
                break;
            }
            at[d] = 0;
        }
    }
    out
}

/// The entry of the inner chunk at `at` of a shard whose first chunk is `origin` (chunk coordinates).
fn inner_entry(origin: &[u64], at: &[u64], first: u64, counts: &[u64], entries: &[ChunkEntry]) -> ChunkEntry {
    let mut linear = 0u64;
    for (d, ((&o, &a), &n)) in origin.iter().zip(at).zip(counts).enumerate() {
        let global = o + a;
        let local = if d == 0 { global.wrapping_sub(first) } else { global };
        if local >= n {
            return ChunkEntry::Missing; // past the array's last chunk (the shard extends beyond it)
        }
        linear = linear * n + local;
    }
    usize::try_from(linear).ok().and_then(|l| entries.get(l)).copied().unwrap_or(ChunkEntry::Missing)
}

/// Fetches a shard's chunks, assembles the shard and puts it (nothing when every chunk is missing).
async fn write_shard(array: &ArrayReader, job: ShardJob, sink: &Arc<dyn ObjectSink>) -> Result<Written, ExportError> {
    let chunks = job.entries.iter().filter(|e| !matches!(e, ChunkEntry::Missing)).count() as u64;
    if chunks == 0 {
        return Ok(Written::default());
    }
    let fetched = array.stored_chunks(&job.entries).await?;
    let mut shard = ShardBuilder::new(job.entries.len() as u64);
    shard.reserve(fetched.iter().flatten().map(|b| b.len()).sum());
    for bytes in &fetched {
        shard.push(bytes.as_deref());
    }
    drop(fetched);
    let bytes = put(sink, job.key, shard.finish()).await?;
    Ok(Written { objects: 1, chunks, bytes })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grid::{ChunkDim, ChunkGrid};

    fn source(i: u32) -> ChunkEntry {
        ChunkEntry::Source { source: i, offset: 0, length: 1 }
    }

    #[test]
    fn shard_entries_follow_the_source_grid() {
        // Source: time 7 chunks of 1, x 3 chunks of 2 (extent 5). Shards: time 3 + 4 (last one
        // rounded up to whole chunks is already whole), x one shard of 6 (3 chunks).
        let layout = ShardLayout {
            grid: ChunkGrid::new(vec![ChunkDim::from_edges(7, &[3, 4]).unwrap(), ChunkDim::regular(5, 6).unwrap()]),
            chunk_shape: vec![1, 2],
        };
        let counts = [7u64, 3];
        let all: Vec<ChunkEntry> = (0..21).map(source).collect();
        let second = shard_entries(&layout, &[1, 0], 0, &counts, &all);
        assert_eq!(second, (9..21).map(source).collect::<Vec<_>>());
        // The same shard from a slab that starts at time chunk 3.
        let slab: Vec<ChunkEntry> = all[9..].to_vec();
        let slab_counts = [4u64, 3];
        assert_eq!(shard_entries(&layout, &[1, 0], 3, &slab_counts, &slab), second);
    }

    #[test]
    fn inner_chunks_past_the_array_are_empty() {
        // x: extent 5 in chunks of 2 (3 chunks), fixed shards of 4 (2 chunks): the second shard's
        // second inner chunk is past the array.
        let layout = ShardLayout { grid: ChunkGrid::regular(&[2, 5], &[1, 4]).unwrap(), chunk_shape: vec![1, 2] };
        let all: Vec<ChunkEntry> = (0..6).map(source).collect();
        let got = shard_entries(&layout, &[1, 1], 0, &[2, 3], &all);
        assert_eq!(got, vec![source(5), ChunkEntry::Missing]);
    }
}
