//! Trimmed copies of a file's partial last chunks along the concatenation dimensions (issue: interior
//! partial chunks, files whose length is not a multiple of their chunk).
//!
//! vzarr never references a chunk as if it had a shape it does not decode to. A file's last chunk
//! along a concatenation dimension is interior in the combined array unless the file comes last along
//! that dimension, which only combining knows. So for every non-empty set S of the array's partial
//! concatenation axes (one set with one dimension; {y}, {x} and {y, x} for tiles), every chunk that is
//! the last along all of S gets a copy cropped to its valid extent along exactly S: an uncompressed
//! chunk cropped along the leading axis only is referenced by its valid byte prefix; any other is
//! decoded, cropped and re-encoded with the array's codecs into store-owned bytes.

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
    /// The stored chunk's owned bytes could not be read, or the trimmed ones kept.
    Owned(crate::dataset::OwnedBytesError),
}

/// Sets `array.tails` for the axes in `axes` (the array's concatenation axes) whose last chunk is
/// partial. `read(source, offset, length)` returns stored bytes of the dataset's source `source` (0,
/// the scanned file, for every scanner but HDF4's, whose data sets may lie in external files).
pub(crate) fn prepare_tails(
    array: &mut VirtualArray,
    axes: &[usize],
    read: &mut dyn FnMut(u32, u64, u64) -> Result<Vec<u8>, super::ScanError>,
) -> Result<(), TailError> {
    let grid = array.metadata.chunk_grid.clone();
    let mut partial: Vec<usize> = axes
        .iter()
        .copied()
        .filter(|&d| {
            grid.dims().get(d).is_some_and(|gd| {
                let n = gd.num_chunks();
                n > 0 && gd.valid(n - 1) < gd.edge(n - 1)
            })
        })
        .collect();
    partial.sort_unstable();
    partial.dedup();
    // Every non-empty subset of the partial axes (at most a handful of concatenation dimensions).
    for mask in 1u32..(1 << partial.len().min(16)) {
        let dims: Vec<usize> = (0..partial.len()).filter(|i| mask & (1 << i) != 0).map(|i| partial[i]).collect();
        let tail = trim_corner(array, &dims, read)?;
        array.tails.push(tail);
    }
    Ok(())
}

/// The chunks that are the last along every axis of `dims`, cropped along exactly those axes.
fn trim_corner(
    array: &mut VirtualArray,
    dims: &[usize],
    read: &mut dyn FnMut(u32, u64, u64) -> Result<Vec<u8>, super::ScanError>,
) -> Result<TailChunks, TailError> {
    let grid = array.metadata.chunk_grid.clone();
    let last: Vec<u64> = dims.iter().map(|&d| grid.dims()[d].num_chunks() - 1).collect();
    let element_size = array.metadata.element_size();
    let prefix_ok = array.metadata.codecs.is_raw() && dims == [0];
    let mut tail = TailChunks { dims: dims.to_vec(), entries: Vec::new(), rewritten: 0 };
    for linear in 0..grid.num_chunks() {
        let coords = grid.chunk_coords(linear);
        if dims.iter().zip(&last).any(|(&d, &l)| coords[d] != l) {
            continue;
        }
        let shape = grid.chunk_shape(&coords);
        let mut cropped = shape.clone();
        for &d in dims {
            cropped[d] = grid.dims()[d].valid(coords[d]);
        }
        let trimmed = match array.chunks.entry(linear as usize) {
            ChunkEntry::Missing => ChunkEntry::Missing,
            ChunkEntry::Source { source, offset, .. } if prefix_ok => {
                let length = cropped.iter().product::<u64>() * element_size as u64;
                ChunkEntry::Source { source, offset, length }
            }
            ChunkEntry::Source { source, offset, length } => {
                let stored = read(source, offset, length).map_err(TailError::Read)?;
                tail.rewritten += 1;
                crop_owned(array, &stored, &shape, &cropped)?
            }
            ChunkEntry::Owned { offset, length } => {
                let stored = array.chunks.owned_chunk(offset, length).map_err(TailError::Owned)?.into_owned();
                tail.rewritten += 1;
                crop_owned(array, &stored, &shape, &cropped)?
            }
        };
        tail.entries.push((linear, trimmed));
    }
    Ok(tail)
}

/// Decodes `stored` (shape `shape`), keeps the leading `cropped` box, re-encodes, stores the bytes.
fn crop_owned(
    array: &mut VirtualArray,
    stored: &[u8],
    shape: &[u64],
    cropped: &[u64],
) -> Result<ChunkEntry, TailError> {
    let es = array.metadata.element_size();
    let codecs = &array.metadata.codecs;
    let unit = array.metadata.data_type.byte_swap();
    let full = codecs.decode(stored, unit, shape.iter().product::<u64>() as usize * es).map_err(TailError::Codec)?;
    let mut out = vec![0u8; cropped.iter().product::<u64>() as usize * es];
    let dims: Vec<DimCopy> =
        (0..shape.len()).map(|d| DimCopy { src_start: 0, src_step: 1, dst_start: 0, count: cropped[d] }).collect();
    copy_box(&full, shape, &mut out, cropped, &dims, es);
    let encoded = codecs.encode(&out, unit).map_err(TailError::Codec)?;
    array.chunks.push_owned(&encoded).map_err(TailError::Owned)
}
