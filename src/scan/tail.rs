//! Trimmed copies of a file's partial last chunks along the concatenation dimension (issue: interior
//! partial chunks, REFERENCE.md section 4).
//!
//! vzarr never references a chunk as if it had a shape it does not decode to. For each chunk of the
//! last slab along the dimension: an uncompressed chunk partial along the leading dimension is
//! referenced by its valid byte prefix; any other chunk is decoded, cropped to its valid rows and
//! re-encoded with the array's codecs into store-owned bytes.

use crate::dataset::{TailChunks, VirtualArray};
use crate::manifest::ChunkEntry;
use crate::ndcopy::{copy_box, DimCopy};

/// Why a tail chunk could not be prepared.
#[derive(Debug)]
pub(crate) enum TailError {
    /// Reading the stored bytes failed.
    Read(super::ScanError),
    /// Decoding or encoding failed.
    Codec(crate::codec::CodecError),
}

/// Sets `array.tail` when the last chunk along `dim` is partial. `read(offset, length)` returns stored
/// bytes of source 0.
pub(crate) fn prepare_tail(
    array: &mut VirtualArray,
    dim: usize,
    read: &mut dyn FnMut(u64, u64) -> Result<Vec<u8>, super::ScanError>,
) -> Result<(), TailError> {
    let grid = array.metadata.chunk_grid.clone();
    let Some(gd) = grid.dims().get(dim) else { return Ok(()) };
    let chunks = gd.num_chunks();
    if chunks == 0 || gd.valid(chunks - 1) == gd.edge(chunks - 1) {
        return Ok(());
    }
    let (last, valid) = (chunks - 1, gd.valid(chunks - 1));
    let element_size = array.metadata.element_size();
    let codecs = array.metadata.codecs.clone();
    let mut tail = TailChunks { dim, valid, entries: Vec::new(), rewritten: 0 };
    for linear in 0..grid.num_chunks() {
        let coords = grid.chunk_coords(linear);
        if coords[dim] != last {
            continue;
        }
        let shape = grid.chunk_shape(&coords);
        let mut cropped = shape.clone();
        cropped[dim] = valid;
        let entry = array.chunks.entries[linear as usize];
        let trimmed = match entry {
            ChunkEntry::Missing => ChunkEntry::Missing,
            ChunkEntry::Source { source, offset, .. } if codecs.is_raw() && dim == 0 => {
                let length = cropped.iter().product::<u64>() * element_size as u64;
                ChunkEntry::Source { source, offset, length }
            }
            ChunkEntry::Source { offset, length, .. } => {
                let stored = read(offset, length).map_err(TailError::Read)?;
                tail.rewritten += 1;
                crop_owned(array, &stored, &shape, &cropped)?
            }
            ChunkEntry::Owned { offset, length } => {
                let stored = array.chunks.owned[offset as usize..(offset + length) as usize].to_vec();
                tail.rewritten += 1;
                crop_owned(array, &stored, &shape, &cropped)?
            }
        };
        tail.entries.push((linear, trimmed));
    }
    array.tail = Some(tail);
    Ok(())
}

/// Decodes `stored` (shape `shape`), keeps the first `cropped[dim]` rows, re-encodes, stores the bytes.
fn crop_owned(
    array: &mut VirtualArray,
    stored: &[u8],
    shape: &[u64],
    cropped: &[u64],
) -> Result<ChunkEntry, TailError> {
    let es = array.metadata.element_size();
    let codecs = &array.metadata.codecs;
    let unit = array.metadata.data_type.swap_unit();
    let full = codecs.decode(stored, unit, shape.iter().product::<u64>() as usize * es).map_err(TailError::Codec)?;
    let mut out = vec![0u8; cropped.iter().product::<u64>() as usize * es];
    let dims: Vec<DimCopy> =
        (0..shape.len()).map(|d| DimCopy { src_start: 0, src_step: 1, dst_start: 0, count: cropped[d] }).collect();
    copy_box(&full, shape, &mut out, cropped, &dims, es);
    let encoded = codecs.encode(&out, unit).map_err(TailError::Codec)?;
    Ok(array.chunks.push_owned(&encoded))
}
