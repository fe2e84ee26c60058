//! b2nd arrays (c-blosc2's `README_B2ND_METALAYER.rst` and `b2nd.c`'s `get_set_slice`): a frame
//! whose `b2nd` (or older `caterva`) metalayer gives an n-dimensional shape, chunk shape and block
//! shape, decoded into the array's elements in C order.
//!
//! The hdf5-blosc2 filter writes one for every HDF5 chunk of rank 2 to 8 (its `cd_values` then hold
//! the rank and the chunk's shape): the array is the HDF5 chunk, in one b2nd chunk, and the blocks'
//! shape is the filter's choice. The chunks of an array cover its shape rounded up to whole chunks,
//! in C order; a chunk holds its shape rounded up to whole blocks (the extended chunk shape), as
//! blocks in C order, each block its elements in C order. Padding (past the chunk's or the array's
//! end) is stored but never read: blocks wholly in padding are not decoded.
//!
//! The metalayer (msgpack): a fixarray of the format version, the rank, then three fixarrays: the
//! shape (int64), the chunk shape (int32) and the block shape (int32), then the dtype, which decoding
//! does not need (the frame's type size is the element size).
//!
//! Hostile input: the output is at most the caller's limit; blocks are decoded one at a time into a
//! block-sized buffer (a block may not be larger than the limit), and the bytes of all blocks
//! decoded may not pass the limit times 2 to the rank (what padding costs at most in arrays of one
//! chunk, as the filter writes them).

use super::frame::Frame;
use super::{chunk::Scratch, corrupt, unsupported, Blosc2Params, NAME};
use crate::codec::CodecError;

/// The most dimensions b2nd arrays have.
const MAX_DIM: usize = 8;

/// An array's shape, chunk shape and block shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Layout {
    shape: Vec<usize>,
    chunk: Vec<usize>,
    block: Vec<usize>,
}

/// Reads msgpack from a metalayer's content.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn byte(&mut self) -> Result<u8, CodecError> {
        let b = *self.bytes.get(self.at).ok_or(CodecError::Truncated { codec: NAME, len: self.bytes.len() })?;
        self.at += 1;
        Ok(b)
    }

    /// A fixarray of `len` elements.
    fn fixarray(&mut self, len: usize, what: &str) -> Result<(), CodecError> {
        match self.byte()? {
            b if usize::from(b) == 0x90 + len => Ok(()),
            b => Err(corrupt(format!("b2nd {what}: msgpack {b:#04x}, not an array of {len}"))),
        }
    }

    /// One integer of `N` bytes after the marker `marker`, as a size (which must be >= `min`).
    fn int<const N: usize>(&mut self, marker: u8, min: i64, what: &str) -> Result<usize, CodecError> {
        let tag = self.byte()?;
        let end = self.at + N;
        let field = self.bytes.get(self.at..end).ok_or(CodecError::Truncated { codec: NAME, len: self.bytes.len() })?;
        self.at = end;
        let mut wide = [0u8; 8];
        wide[8 - N..].copy_from_slice(field);
        // Sign-extend the 4-byte fields.
        if N < 8 && field[0] & 0x80 != 0 {
            wide[..8 - N].fill(0xff);
        }
        let value = i64::from_be_bytes(wide);
        if tag != marker || value < min {
            return Err(corrupt(format!("b2nd {what}: {value} (msgpack {tag:#04x})")));
        }
        usize::try_from(value).map_err(|_| corrupt(format!("b2nd {what}: {value}")))
    }
}

impl Layout {
    /// Parses a `b2nd` or `caterva` metalayer.
    ///
    /// # Errors
    /// [`CodecError::Corrupt`] or [`CodecError::Truncated`] for a malformed metalayer, or a chunk or
    /// block shape with a zero or a block larger than its chunk; [`CodecError::Unsupported`] for
    /// rank 0 or a rank above 8.
    pub(super) fn parse(meta: &[u8]) -> Result<Self, CodecError> {
        let mut r = Reader { bytes: meta, at: 0 };
        if r.byte()? & 0xf0 != 0x90 || r.byte()? >= 0x80 {
            return Err(corrupt("b2nd metalayer: no array of a version"));
        }
        let rank = usize::from(r.byte()?);
        if rank == 0 || rank > MAX_DIM {
            return Err(unsupported(format!("b2nd arrays of rank {rank}")));
        }
        let mut read = |marker, min, what: &str| -> Result<Vec<usize>, CodecError> {
            r.fixarray(rank, what)?;
            (0..rank)
                .map(|_| if marker == 0xd3 { r.int::<8>(marker, min, what) } else { r.int::<4>(marker, min, what) })
                .collect()
        };
        let shape = read(0xd3, 0, "shape")?;
        let chunk = read(0xd2, 1, "chunk shape")?;
        let block = read(0xd2, 1, "block shape")?;
        if block.iter().zip(&chunk).any(|(b, c)| b > c) {
            return Err(corrupt(format!("b2nd blocks {block:?} larger than chunks {chunk:?}")));
        }
        Ok(Layout { shape, chunk, block })
    }

    /// The rank.
    fn rank(&self) -> usize {
        self.shape.len()
    }

    /// Chunks per dimension.
    fn chunks(&self) -> Vec<usize> {
        self.shape.iter().zip(&self.chunk).map(|(s, c)| s.div_ceil(*c)).collect()
    }

    /// Blocks per dimension of a chunk (its shape rounded up to whole blocks).
    fn blocks(&self) -> Vec<usize> {
        self.chunk.iter().zip(&self.block).map(|(c, b)| c.div_ceil(*b)).collect()
    }

    /// The elements of a chunk rounded up to whole blocks (None when that overflows).
    fn extended_chunk(&self) -> Option<usize> {
        let blocks = self.blocks();
        blocks.iter().zip(&self.block).try_fold(1usize, |n, (k, b)| n.checked_mul(k.checked_mul(*b)?))
    }

    /// The elements of every block that holds data along one dimension, summed over all the chunks
    /// along it: the decoding work per dimension.
    fn work(&self, dim: usize) -> usize {
        let (s, c, b) = (self.shape[dim], self.chunk[dim], self.block[dim]);
        (0..s.div_ceil(c)).map(|k| (s - k * c).min(c).div_ceil(b) * b).sum()
    }
}

/// Checks the array against the filter's `cd_values` (rank and chunk shape, when they have them), as
/// the filter does.
fn check_params(layout: &Layout, params: &Blosc2Params) -> Result<(), CodecError> {
    let Some(shape) = params.chunk_shape() else { return Ok(()) };
    let matches = shape.len() == layout.rank() && shape.iter().zip(&layout.shape).all(|(&a, &b)| a as usize == b);
    if matches {
        Ok(())
    } else {
        Err(corrupt(format!("a b2nd array of shape {:?} in an HDF5 chunk of shape {shape:?}", layout.shape)))
    }
}

/// Decodes the b2nd array of `frame` into its elements in C order (at most `limit` bytes).
///
/// # Errors
/// [`CodecError::DecodedTooLong`] when the array is larger than `limit`; [`CodecError::Corrupt`] for
/// a frame whose chunks do not match the layout, or padding beyond the bound of the module docs; the
/// chunk decoder's errors.
pub(super) fn decode(
    frame: &Frame<'_>,
    layout: &Layout,
    params: &Blosc2Params,
    limit: usize,
) -> Result<Vec<u8>, CodecError> {
    check_params(layout, params)?;
    let typesize = frame.typesize();
    let elements = layout.shape.iter().try_fold(1usize, |n, &s| n.checked_mul(s));
    let len = elements.and_then(|n| n.checked_mul(typesize)).filter(|&n| n <= limit);
    let len = len.ok_or(CodecError::DecodedTooLong { codec: NAME, limit })?;
    let mut out = vec![0u8; len];
    if len == 0 {
        return Ok(out);
    }
    let chunks = layout.chunks();
    if chunks.iter().product::<usize>() != frame.nchunks() {
        return Err(corrupt(format!("{} chunks for a b2nd array of {chunks:?} chunks", frame.nchunks())));
    }
    let block_len = layout.block.iter().try_fold(typesize, |n, &b| n.checked_mul(b)).filter(|&n| n <= limit);
    let work = (0..layout.rank()).try_fold(typesize, |n, d| n.checked_mul(layout.work(d)));
    let extended = layout.extended_chunk().and_then(|n| n.checked_mul(typesize));
    let bound = limit.saturating_mul(1 << layout.rank());
    let (Some(block_len), Some(extended), Some(_)) = (block_len, extended, work.filter(|&w| w <= bound)) else {
        return Err(corrupt(format!(
            "b2nd blocks {:?} of chunks {:?} pad the array too much",
            layout.block, layout.chunk
        )));
    };
    let scratch = Scratch::default();
    let mut decoder = Decoder { layout, typesize, block_len, extended, scratch, block: vec![0; block_len] };
    for n in 0..frame.nchunks() {
        decoder.chunk(frame, n, &unravel(n, &chunks), &mut out)?;
    }
    Ok(out)
}

/// The C-order coordinates of index `n` in a grid of `dims`.
fn unravel(mut n: usize, dims: &[usize]) -> Vec<usize> {
    let mut coords = vec![0; dims.len()];
    for (c, &d) in coords.iter_mut().zip(dims).rev() {
        *c = n % d;
        n /= d;
    }
    coords
}

/// Decodes chunks one block at a time into the array.
struct Decoder<'l> {
    layout: &'l Layout,
    typesize: usize,
    block_len: usize,
    /// The bytes of a chunk: its shape rounded up to whole blocks.
    extended: usize,
    scratch: Scratch,
    block: Vec<u8>,
}

impl Decoder<'_> {
    /// Decodes chunk `n` (at chunk coordinates `coords`) of `frame` into `out`.
    fn chunk(&mut self, frame: &Frame<'_>, n: usize, coords: &[usize], out: &mut [u8]) -> Result<(), CodecError> {
        let layout = self.layout;
        let bytes = frame.chunk(n, self.block_len)?;
        let chunk = bytes.parse()?;
        if chunk.nbytes() != self.extended || chunk.blocksize() != self.block_len {
            let msg = format!("chunk {n} of {} bytes in blocks of {}", chunk.nbytes(), chunk.blocksize());
            return Err(corrupt(format!("{msg}, not {} in blocks of {}", self.extended, self.block_len)));
        }
        let origin: Vec<usize> = coords.iter().zip(&layout.chunk).map(|(c, s)| c * s).collect();
        // The chunk's data ends at the chunk's or the array's end, whichever comes first.
        let end: Vec<usize> = (0..layout.rank()).map(|d| (origin[d] + layout.chunk[d]).min(layout.shape[d])).collect();
        let blocks = layout.blocks();
        let mut reference = None;
        for k in 0..chunk.nblocks() {
            let at = unravel(k, &blocks);
            let start: Vec<usize> = (0..layout.rank()).map(|d| origin[d] + at[d] * layout.block[d]).collect();
            if k > 0 && start.iter().zip(&end).any(|(s, e)| s >= e) {
                continue;
            }
            chunk.decode_block(k, &mut self.block, &mut self.scratch, reference.as_deref())?;
            self.copy_block(&start, &end, out);
            if k == 0 && chunk.has_delta() {
                reference = Some(self.block.clone());
            }
        }
        Ok(())
    }

    /// Copies the part of the decoded block at `start` before `end` into the array `out`.
    fn copy_block(&self, start: &[usize], end: &[usize], out: &mut [u8]) {
        let (layout, ts) = (self.layout, self.typesize);
        let rank = layout.rank();
        let extent: Vec<usize> = (0..rank).map(|d| layout.block[d].min(end[d] - start[d])).collect();
        let row = extent[rank - 1] * ts;
        let rows: Vec<usize> = extent[..rank - 1].to_vec();
        let mut index = vec![0usize; rank - 1];
        loop {
            let (mut src, mut dst) = (0usize, 0usize);
            for d in 0..rank {
                let i = if d + 1 < rank { index[d] } else { 0 };
                src = src * layout.block[d] + i;
                dst = dst * layout.shape[d] + start[d] + i;
            }
            out[dst * ts..dst * ts + row].copy_from_slice(&self.block[src * ts..src * ts + row]);
            // The next row, odometer style over the leading dimensions.
            let mut d = rows.len();
            loop {
                if d == 0 {
                    return;
                }
                d -= 1;
                index[d] += 1;
                if index[d] < rows[d] {
                    break;
                }
                index[d] = 0;
            }
        }
    }
}

#[cfg(test)]
mod tests;
