//! Writing one array as shards: the source chunks' stored bytes concatenated verbatim plus the
//! `sharding_indexed` index (`codec/sharding`), one object per shard.
//!
//! Input: an opened array and its [`ShardLayout`] (`plan`). Output: shard objects put to an
//! [`ObjectSink`] under `<array>/c/<shard coords>`; a shard without any present chunk is not written
//! (readers return the fill value). The one exception to the verbatim copy: a source chunk shorter than
//! the inner chunk at the array's end ([`ShardLayout::short_last`]) is decoded, padded with the fill
//! value and re-encoded with the array's codecs, since an inner chunk must decode to the full shape.
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
use crate::codec::CodecError;
use crate::export::ExportError;
use crate::manifest::ChunkEntry;
use crate::metadata::chunk_key;
use crate::metadata::ArrayMetadata;
use crate::ndcopy::{copy_box, fill_outside, DimCopy};
use crate::read::{ArrayReader, ReadError};

/// What was written for one array.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Written {
    /// Objects (shards) written.
    pub(super) objects: u64,
    /// Chunks copied into them.
    pub(super) chunks: u64,
    /// Bytes of the objects.
    pub(super) bytes: u64,
    /// Chunks padded to the inner chunk shape and re-encoded.
    pub(super) padded: u64,
}

/// One shard to write: its key, its inner chunks' entries in C order, and the inner chunks to pad
/// (index, source chunk coordinates).
#[derive(Debug)]
struct ShardJob {
    key: String,
    entries: Vec<ChunkEntry>,
    pads: Vec<(usize, Vec<u64>)>,
}

/// A slab's manifest entries: source chunks `first..` along dimension 0 and all of the others, in
/// row-major order of `counts`; `global` is the source grid's chunk counts.
struct Slab<'a> {
    first: u64,
    counts: &'a [u64],
    global: &'a [u64],
    entries: &'a [ChunkEntry],
}

/// Writes every shard of `array` (of the store at `store`, for messages); `progress(n)` after each
/// shard with its chunks copied.
pub(super) async fn write_shards(
    array: &ArrayReader,
    store: &str,
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
    let writes = jobs
        .map_ok(|job| write_shard(array, layout, job, sink, store))
        .try_buffer_unordered(max_concurrent_shards.max(1));
    let mut writes = std::pin::pin!(writes);
    let mut total = Written::default();
    while let Some(written) = writes.try_next().await? {
        total.objects += written.objects;
        total.chunks += written.chunks;
        total.bytes += written.bytes;
        total.padded += written.padded;
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
    let view = Slab { first, counts: &slab_counts, global: &counts, entries: &entries };
    let jobs = (0..shards_in_slab)
        .map(|i| {
            let coords = outer.chunk_coords(slab * shards_in_slab + i);
            let key = chunk_key(array.path(), &coords);
            let (entries, pads) = shard_entries(layout, &coords, &view);
            ShardJob { key, entries, pads }
        })
        .collect();
    Ok(jobs)
}

/// The entries of shard `coords`' inner chunks in C order, and the inner chunks whose source chunk is
/// short (to pad) with their source chunk coordinates.
fn shard_entries(layout: &ShardLayout, coords: &[u64], slab: &Slab<'_>) -> (Vec<ChunkEntry>, Vec<(usize, Vec<u64>)>) {
    let outer = &layout.grid;
    let chunk = &layout.chunk_shape;
    let origin: Vec<u64> = outer.chunk_origin(coords).iter().zip(chunk).map(|(o, c)| o / c).collect();
    let inner: Vec<u64> = outer.chunk_shape(coords).iter().zip(chunk).map(|(e, c)| e / c).collect();
    let total: u64 = inner.iter().product();
    let mut out = Vec::with_capacity(usize::try_from(total).unwrap_or(0));
    let mut pads = Vec::new();
    let mut at = vec![0u64; inner.len()];
    for i in 0..total as usize {
        let global: Vec<u64> = origin.iter().zip(&at).map(|(o, a)| o + a).collect();
        let entry = inner_entry(&global, slab);
        let short =
            global.iter().zip(slab.global).zip(&layout.short_last).any(|((&g, &n), s)| s.is_some() && g + 1 == n);
        if short && !matches!(entry, ChunkEntry::Missing) {
            pads.push((i, global));
        }
        out.push(entry);
        // Odometer over the inner chunks, last dimension fastest.
        for d in (0..at.len()).rev() {
            at[d] += 1;
            if at[d] < inner[d] {
                break;
            }
            at[d] = 0;
        }
    }
    (out, pads)
}

/// The entry of the source chunk at `global` (chunk coordinates), missing past the array's last
/// chunk (a shard extending beyond it).
fn inner_entry(global: &[u64], slab: &Slab<'_>) -> ChunkEntry {
    let mut linear = 0u64;
    for (d, (&g, &n)) in global.iter().zip(slab.counts).enumerate() {
        let local = if d == 0 { g.wrapping_sub(slab.first) } else { g };
        if local >= n {
            return ChunkEntry::Missing;
        }
        linear = linear * n + local;
    }
    usize::try_from(linear).ok().and_then(|l| slab.entries.get(l)).copied().unwrap_or(ChunkEntry::Missing)
}

/// A stored chunk of the source grid's `shape`, decoded, padded with the fill value to `inner` and
/// re-encoded with the array's codecs.
fn pad_chunk(metadata: &ArrayMetadata, stored: &[u8], shape: &[u64], inner: &[u64]) -> Result<Vec<u8>, CodecError> {
    let size = metadata.element_size();
    let unit = metadata.data_type.byte_swap();
    let elements = |s: &[u64]| s.iter().product::<u64>() as usize;
    let decoded = metadata.codecs.decode(stored, unit, elements(shape) * size)?;
    let mut padded = vec![0u8; elements(inner) * size];
    let dims: Vec<DimCopy> =
        shape.iter().map(|&count| DimCopy { src_start: 0, src_step: 1, dst_start: 0, count }).collect();
    copy_box(&decoded, shape, &mut padded, inner, &dims, size);
    fill_outside(&mut padded, inner, shape, metadata.fill_value.as_bytes());
    metadata.codecs.encode(&padded, unit)
}

/// Fetches a shard's chunks, assembles the shard and puts it (nothing when every chunk is missing).
async fn write_shard(
    array: &ArrayReader,
    layout: &ShardLayout,
    job: ShardJob,
    sink: &Arc<dyn ObjectSink>,
    store: &str,
) -> Result<Written, ExportError> {
    let chunks = job.entries.iter().filter(|e| !matches!(e, ChunkEntry::Missing)).count() as u64;
    if chunks == 0 {
        return Ok(Written::default());
    }
    let mut fetched = array.stored_chunks(&job.entries).await?;
    let metadata = array.metadata();
    for (i, coords) in &job.pads {
        let Some(stored) = fetched.get_mut(*i).and_then(Option::take) else { continue };
        let shape = metadata.chunk_grid.chunk_shape(coords);
        let padded = pad_chunk(metadata, &stored, &shape, &layout.chunk_shape).map_err(|source| ReadError::Decode {
            location: store.to_string(),
            array: array.path().to_string(),
            chunk: coords.clone(),
            source,
        })?;
        fetched[*i] = Some(padded.into());
    }
    let mut shard = ShardBuilder::new(job.entries.len() as u64);
    shard.reserve(fetched.iter().flatten().map(|b| b.len()).sum());
    for bytes in &fetched {
        shard.push(bytes.as_deref());
    }
    drop(fetched);
    let bytes = put(sink, job.key, shard.finish()).await?;
    Ok(Written { objects: 1, chunks, bytes, padded: job.pads.len() as u64 })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::CodecChain;
    use crate::grid::{ChunkDim, ChunkGrid};
    use crate::metadata::{DataType, FillValue};

    #[test]
    fn short_chunks_are_padded_with_the_fill_value() {
        let codecs = CodecChain::new(vec![
            crate::codec::Codec::Bytes { endian: Some(crate::codec::Endian::Little) },
            crate::codec::Codec::Zlib { level: 1 },
        ])
        .unwrap();
        let fill = FillValue::from_bytes(DataType::Int16, (-1i16).to_ne_bytes().to_vec()).unwrap();
        let metadata = ArrayMetadata {
            data_type: DataType::Int16,
            chunk_grid: ChunkGrid::regular(&[3, 2], &[3, 2]).unwrap(),
            fill_value: fill,
            codecs,
            dimension_names: None,
            attributes: Default::default(),
            notes: Default::default(),
        };
        let values: Vec<u8> = [1i16, 2, 3, 4, 5, 6].iter().flat_map(|v| v.to_ne_bytes()).collect();
        let stored = metadata.codecs.encode(&values, 2).unwrap();
        let padded = pad_chunk(&metadata, &stored, &[3, 2], &[4, 3]).unwrap();
        let decoded = metadata.codecs.decode(&padded, 2, 24).unwrap();
        let got: Vec<i16> = decoded.chunks(2).map(|b| i16::from_ne_bytes([b[0], b[1]])).collect();
        assert_eq!(got, vec![1, 2, -1, 3, 4, -1, 5, 6, -1, -1, -1, -1]);
    }

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
            short_last: vec![None, Some(1)],
        };
        let counts = [7u64, 3];
        let all: Vec<ChunkEntry> = (0..21).map(source).collect();
        let whole = Slab { first: 0, counts: &counts, global: &counts, entries: &all };
        let (second, pads) = shard_entries(&layout, &[1, 0], &whole);
        assert_eq!(second, (9..21).map(source).collect::<Vec<_>>());
        assert_eq!(pads, (3..7).map(|t| ((t as usize - 3) * 3 + 2, vec![t, 2])).collect::<Vec<_>>(), "last x chunks");
        // The same shard from a slab that starts at time chunk 3.
        let slab = Slab { first: 3, counts: &[4, 3], global: &counts, entries: &all[9..] };
        assert_eq!(shard_entries(&layout, &[1, 0], &slab), (second, pads));
    }

    #[test]
    fn inner_chunks_past_the_array_are_empty() {
        // x: extent 5 in chunks of 2 (3 chunks), fixed shards of 4 (2 chunks): the second shard's
        // second inner chunk is past the array.
        let layout = ShardLayout {
            grid: ChunkGrid::regular(&[2, 5], &[1, 4]).unwrap(),
            chunk_shape: vec![1, 2],
            short_last: vec![None, None],
        };
        let all: Vec<ChunkEntry> = (0..6).map(source).collect();
        let slab = Slab { first: 0, counts: &[2, 3], global: &[2, 3], entries: &all };
        let (got, pads) = shard_entries(&layout, &[1, 1], &slab);
        assert_eq!(got, vec![source(5), ChunkEntry::Missing]);
        assert!(pads.is_empty());
    }
}
