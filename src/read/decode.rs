//! Read step 3 (CPU, rayon): decode each fetched chunk and copy its selected part straight into the
//! output buffer. Chunks are decoded in parallel; each writes a disjoint box of the output.

use rayon::prelude::*;

use super::fetch::Fetched;
use super::plan::ChunkRead;
use super::ReadError;
use crate::codec::scratch;
use crate::manifest::ChunkEntry;
use crate::metadata::ArrayMetadata;
use crate::ndcopy::{copy_box_raw, DimCopy};

/// The output buffer, shared by the decoding threads.
struct SharedOut {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: threads only write through `ptr`, each to the elements of its own chunk's box; the plan
// gives every output element to exactly one chunk, so writes never overlap, and the buffer outlives
// the parallel loop (it is borrowed mutably for the whole call).
unsafe impl Send for SharedOut {}
unsafe impl Sync for SharedOut {}

impl SharedOut {
    /// The pointer, through a method so closures capture the whole (Sync) struct, not the field.
    fn ptr(&self) -> *mut u8 {
        self.ptr
    }
}

/// Names for error messages.
pub(crate) struct DecodeContext<'a> {
    pub(crate) array: &'a str,
    pub(crate) store: &'a str,
    pub(crate) source_name: &'a (dyn Fn(u32) -> String + Sync),
}

/// Decodes every read of `fetched` into `out`, whose shape is `out_shape` (one entry per array
/// dimension, integer-indexed dimensions counted as 1).
pub(crate) fn decode_batch(
    fetched: &Fetched,
    meta: &ArrayMetadata,
    out: &mut [u8],
    out_shape: &[u64],
    ctx: &DecodeContext<'_>,
) -> Result<(), ReadError> {
    let mut stored: Vec<Option<&[u8]>> = vec![None; fetched.batch.reads.len()];
    for (request, data) in fetched.batch.requests.iter().zip(&fetched.data) {
        for (readers, bytes) in request.readers.iter().zip(data) {
            for &i in readers {
                stored[i] = Some(bytes.as_ref());
            }
        }
    }
    let shared = SharedOut { ptr: out.as_mut_ptr(), len: out.len() };
    let decode_one = |(read, bytes): (&ChunkRead, &Option<&[u8]>)| {
        let element_size = meta.element_size();
        let chunk_shape = meta.chunk_grid.chunk_shape(&read.coords);
        let dims: Vec<DimCopy> = read
            .pieces
            .iter()
            .map(|p| DimCopy { src_start: p.first, src_step: p.step, dst_start: p.out_start, count: p.count })
            .collect();
        let mut decoded = scratch::zeroed(chunk_shape.iter().product::<u64>() as usize * element_size);
        decode_chunk_into(meta, &read.coords, read.entry, *bytes, &mut decoded, ctx)?;
        // SAFETY: see SharedOut; copy_box_raw checks the box fits both shapes.
        unsafe { copy_box_raw(&decoded, &chunk_shape, shared.ptr(), shared.len, out_shape, &dims, element_size) };
        scratch::give_back(decoded);
        Ok(())
    };
    // One chunk (a dask task's read) is decoded here: handing it to rayon's pool costs more than it.
    match fetched.batch.reads.len() {
        1 => fetched.batch.reads.iter().zip(&stored).try_for_each(decode_one),
        _ => fetched.batch.reads.par_iter().zip(stored.par_iter()).try_for_each(decode_one),
    }
}

/// Decodes the chunk at `coords`, whose entry is `entry` and stored bytes `stored` (`None` for a
/// missing chunk, which holds the fill value), into `out`: exactly its decoded elements, in native
/// byte order. What every read and every compaction does with one chunk.
pub(crate) fn decode_chunk_into(
    meta: &ArrayMetadata,
    coords: &[u64],
    entry: ChunkEntry,
    stored: Option<&[u8]>,
    out: &mut [u8],
    ctx: &DecodeContext<'_>,
) -> Result<(), ReadError> {
    match (entry, stored) {
        (ChunkEntry::Missing, _) => {
            match meta.fill_value.as_bytes() {
                [] => out.fill(0),
                fill => out.chunks_exact_mut(fill.len()).for_each(|element| element.copy_from_slice(fill)),
            }
            Ok(())
        }
        (_, None) => Err(ReadError::Output {
            array: ctx.array.to_string(),
            reason: format!("chunk {coords:?} was planned but not fetched"),
        }),
        (entry, Some(bytes)) => {
            meta.codecs.decode_into(bytes, meta.data_type.byte_swap(), out).map_err(|source| ReadError::Decode {
                location: match entry {
                    ChunkEntry::Source { source, .. } => (ctx.source_name)(source),
                    _ => format!("{}/{}", ctx.store, ctx.array),
                },
                array: ctx.array.to_string(),
                chunk: coords.to_vec(),
                source,
            })
        }
    }
}
