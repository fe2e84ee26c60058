//! Cutting a decoded region of an array into the chunks of its grid, each padded with the fill value
//! to its edges and encoded with the array's codecs: what compaction (folded chunks) and regular
//! copies (target chunks) both write.

use crate::codec::scratch;
use crate::metadata::ArrayMetadata;
use crate::ndcopy::{copy_box, fill_outside, DimCopy};

/// A decoded region of an array: its first element and its shape, in elements.
#[derive(Debug, Clone)]
pub(crate) struct Region {
    /// The region's first element.
    pub(crate) origin: Vec<u64>,
    /// The region's shape.
    pub(crate) shape: Vec<u64>,
}

/// Chunk `coords` of `metadata`'s grid cut from `data` (the region `region`, which holds the chunk's
/// valid part), padded with the fill value to its edges and encoded.
///
/// # Errors
/// The codec error when the chunk does not encode.
pub(crate) fn encode_chunk(
    metadata: &ArrayMetadata,
    coords: &[u64],
    region: &Region,
    data: &[u8],
) -> Result<Vec<u8>, crate::codec::CodecError> {
    let grid = &metadata.chunk_grid;
    let size = metadata.element_size();
    let edges = grid.chunk_shape(coords);
    let origin = grid.chunk_origin(coords);
    let valid: Vec<u64> = coords.iter().enumerate().map(|(d, &c)| grid.dim(d).valid(c)).collect();
    let dims: Vec<DimCopy> = (0..coords.len())
        .map(|d| DimCopy { src_start: origin[d] - region.origin[d], src_step: 1, dst_start: 0, count: valid[d] })
        .collect();
    let mut chunk = scratch::zeroed(edges.iter().product::<u64>() as usize * size);
    copy_box(data, &region.shape, &mut chunk, &edges, &dims, size);
    fill_outside(&mut chunk, &edges, &valid, metadata.fill_value.as_bytes());
    let encoded = metadata.codecs.encode(&chunk, metadata.data_type.byte_swap());
    scratch::give_back(chunk);
    encoded
}
