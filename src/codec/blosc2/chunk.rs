//! One Blosc2 chunk, decoded block by block (c-blosc2's `README_CHUNK_FORMAT.rst`; `blosc2.c`'s
//! `read_chunk_header`, `blosc_d` and `pipeline_backward`).
//!
//! A chunk is a 32-byte header (the 16 bytes of Blosc 1: version, codec version, flags, type size,
//! little-endian i32 uncompressed size, block size and chunk size; then, when flags has both shuffle
//! bits set, six filter ids, the user-defined codec id, its metadata, six filter metadata bytes and two
//! flag bytes), then, unless the chunk is a plain copy (flag 0x02: the blocks follow the header as they
//! are) or special (all zeros, NaNs, one repeated value or uninitialized: no data at all), one i32
//! offset per block and the blocks' streams. A block is one stream or, unless flag 0x10 says "don't
//! split" or it is the short last block, one stream per byte of the type. A stream is an i32 length
//! and that many bytes: raw when the length is the stream's decoded size, else compressed (the codec
//! of bits 5-7 of the flags); length 0 is a run of zeros, a negative length with token bit 0 a run of
//! the byte -length. The decoded block then goes back through the filters, slot 5 to slot 0: byte
//! shuffle (by the type size, or by the filter's metadata when not 0), bit shuffle, delta (XOR with
//! block 0, in place; within block 0 with the previous element), truncated precision (nothing to undo).
//!
//! Refused, with [`CodecError::Unsupported`]: dictionaries, lazy chunks (their blocks are elsewhere),
//! variable-length blocks, instrumented output, user-defined codecs and filters, and a delta filter
//! that another filter follows in decode order (c-blosc2 itself decodes that combination wrongly).
//!
//! Hostile input: every offset and length is checked against the chunk's own size; the caller checks
//! the uncompressed size against its limit before allocating, and blocks are never longer than it.

use super::{corrupt, unsupported, NAME};
use crate::codec::blosc::block;
use crate::codec::shuffle::unshuffle_into;
use crate::codec::CodecError;

/// The Blosc 1 header's length.
const MIN_HEADER: usize = 16;
/// The extended (Blosc2) header's length.
pub(super) const EXTENDED_HEADER: usize = 32;
/// Filter slots in the extended header.
const MAX_FILTERS: usize = 6;
/// Flags: byte shuffle (with [`BIT_SHUFFLE`]: an extended header).
const BYTE_SHUFFLE: u8 = 0x01;
/// Flags: the blocks are a plain copy.
const MEMCPYED: u8 = 0x02;
/// Flags: bit shuffle.
const BIT_SHUFFLE: u8 = 0x04;
/// Flags: delta (headers without the extension).
const DELTA_FLAG: u8 = 0x08;
/// Flags: blocks are one stream each.
const DONT_SPLIT: u8 = 0x10;
/// Blosc2 flags: a dictionary precedes the streams.
const USE_DICT: u8 = 0x01;
/// Blosc2 flags: a lazy chunk (blocks not loaded).
const LAZY: u8 = 0x08;
/// Blosc2 flags: the output of an instrumented codec, not data.
const INSTRUMENTED: u8 = 0x80;
/// Blosc2 flags2: variable-length blocks.
const VL_BLOCKS: u8 = 0x01;
/// Filter ids.
const NO_FILTER: u8 = 0;
const SHUFFLE: u8 = 1;
const BITSHUFFLE: u8 = 2;
const DELTA: u8 = 3;
const TRUNC_PREC: u8 = 4;
/// The codec format of user-defined codecs.
const USER_CODEC: u8 = 6;
/// Chunk format version 3 (the alpha series) left the sixth filter slot uninitialised.
const VERSION_ALPHA: u8 = 3;

/// What a special chunk holds (bits 4-6 of the Blosc2 flags; the frame's offsets use the same codes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Special {
    /// Not special: the chunk has data.
    None,
    /// Every byte 0.
    Zeros,
    /// Every element a quiet NaN (4- or 8-byte floats).
    Nans,
    /// Every element the value stored after the header.
    Value,
    /// Never written (decoded as zeros, as the b2nd reader's zeroed buffer reads it).
    Uninit,
}

impl Special {
    /// The special kind of code `code` (0-7).
    pub(super) fn from_code(code: u8) -> Result<Self, CodecError> {
        match code {
            0 => Ok(Special::None),
            1 => Ok(Special::Zeros),
            2 => Ok(Special::Nans),
            3 => Ok(Special::Value),
            4 => Ok(Special::Uninit),
            other => Err(corrupt(format!("special value code {other}"))),
        }
    }

    fn code(self) -> u8 {
        match self {
            Special::None => 0,
            Special::Zeros => 1,
            Special::Nans => 2,
            Special::Value => 3,
            Special::Uninit => 4,
        }
    }
}

/// The 32-byte header of a special chunk (no data) of `nbytes` bytes in blocks of `blocksize`, as
/// `blosc2_chunk_zeros` and its siblings write it.
/// Sizes past `i32::MAX` are written as they are and refused when the header is parsed.
pub(super) fn special_header(special: Special, nbytes: u32, typesize: u8, blocksize: u32) -> [u8; EXTENDED_HEADER] {
    let blocksize = blocksize.min(i32::MAX as u32);
    let mut header = [0u8; EXTENDED_HEADER];
    header[..4].copy_from_slice(&[5, 1, BYTE_SHUFFLE | BIT_SHUFFLE, typesize]);
    header[4..8].copy_from_slice(&nbytes.to_le_bytes());
    header[8..12].copy_from_slice(&blocksize.max(1).to_le_bytes());
    header[12..16].copy_from_slice(&(EXTENDED_HEADER as u32).to_le_bytes());
    header[31] = special.code() << 4;
    header
}

/// A parsed chunk header, borrowing the chunk's bytes (exactly its compressed size).
#[derive(Debug)]
pub(super) struct Chunk<'a> {
    bytes: &'a [u8],
    version: u8,
    flags: u8,
    typesize: usize,
    nbytes: usize,
    blocksize: usize,
    header_len: usize,
    filters: [u8; MAX_FILTERS],
    filters_meta: [u8; MAX_FILTERS],
    user_codec: u8,
    special: Special,
}

/// The two block-sized buffers filters ping-pong between, reused across blocks.
#[derive(Debug, Default)]
pub(super) struct Scratch {
    a: Vec<u8>,
    b: Vec<u8>,
}

fn i32_at(bytes: &[u8], at: usize) -> Result<i32, CodecError> {
    let word = at.checked_add(4).and_then(|end| bytes.get(at..end));
    let word = word.ok_or(CodecError::Truncated { codec: NAME, len: bytes.len() })?;
    Ok(i32::from_le_bytes([word[0], word[1], word[2], word[3]]))
}

/// A header size field, which must not be negative.
fn size_at(bytes: &[u8], at: usize, what: &str) -> Result<usize, CodecError> {
    let value = i32_at(bytes, at)?;
    usize::try_from(value).map_err(|_| corrupt(format!("negative {what} {value}")))
}

impl<'a> Chunk<'a> {
    /// Parses the chunk at the start of `input` (which may run past its end).
    ///
    /// # Errors
    /// [`CodecError::Truncated`] when `input` is shorter than the chunk says it is,
    /// [`CodecError::Corrupt`] for inconsistent sizes, [`CodecError::Unsupported`] for the features
    /// the module docs list.
    pub(super) fn parse(input: &'a [u8]) -> Result<Self, CodecError> {
        if input.len() < MIN_HEADER {
            return Err(CodecError::Truncated { codec: NAME, len: input.len() });
        }
        let (nbytes, blocksize) = (size_at(input, 4, "size")?, size_at(input, 8, "block size")?);
        let cbytes = size_at(input, 12, "compressed size")?;
        let bytes = input.get(..cbytes).ok_or(CodecError::Truncated { codec: NAME, len: input.len() })?;
        let mut chunk = Chunk {
            bytes,
            version: input[0],
            flags: input[2],
            typesize: usize::from(input[3]),
            nbytes,
            blocksize,
            header_len: MIN_HEADER,
            filters: [NO_FILTER; MAX_FILTERS],
            filters_meta: [0; MAX_FILTERS],
            user_codec: 0,
            special: Special::None,
        };
        if cbytes < MIN_HEADER || blocksize == 0 || chunk.typesize == 0 {
            return Err(corrupt(format!("a chunk header of {cbytes} bytes, block size {blocksize}, type size 0")));
        }
        if chunk.flags & BYTE_SHUFFLE != 0 && chunk.flags & BIT_SHUFFLE != 0 {
            chunk.read_extended_header()?;
        } else {
            chunk.filters[MAX_FILTERS - 1] = match chunk.flags {
                f if f & BIT_SHUFFLE != 0 => BITSHUFFLE,
                f if f & BYTE_SHUFFLE != 0 => SHUFFLE,
                _ => NO_FILTER,
            };
            if chunk.flags & DELTA_FLAG != 0 {
                chunk.filters[MAX_FILTERS - 2] = DELTA;
            }
        }
        chunk.blocksize = chunk.blocksize.min(chunk.nbytes.max(1));
        chunk.check_layout()?;
        Ok(chunk)
    }

    /// Reads the Blosc2 extension of the header and refuses what the module docs list.
    fn read_extended_header(&mut self) -> Result<(), CodecError> {
        if self.bytes.len() < EXTENDED_HEADER {
            return Err(corrupt(format!("an extended header in a chunk of {} bytes", self.bytes.len())));
        }
        self.header_len = EXTENDED_HEADER;
        let h = &self.bytes[..EXTENDED_HEADER];
        self.filters.copy_from_slice(&h[16..22]);
        self.user_codec = h[22];
        self.filters_meta.copy_from_slice(&h[24..30]);
        if self.version == VERSION_ALPHA {
            self.filters[5] = NO_FILTER;
            self.filters_meta[5] = 0;
        }
        let (flags2, flags) = (h[30], h[31]);
        let refused = [
            (flags & USE_DICT != 0, "dictionaries"),
            (flags & LAZY != 0, "lazy chunks (blocks stored elsewhere)"),
            (flags & INSTRUMENTED != 0, "instrumented codec output"),
            (flags2 & VL_BLOCKS != 0, "variable-length blocks"),
        ];
        if let Some((_, what)) = refused.iter().find(|(set, _)| *set) {
            return Err(unsupported(*what));
        }
        self.special = Special::from_code((flags >> 4) & 0x07)?;
        Ok(())
    }

    /// Checks that the data the header describes fits in the chunk.
    fn check_layout(&self) -> Result<(), CodecError> {
        match self.special {
            Special::Value => {
                let size = self.value_size();
                if size == 0 || size > self.nbytes || !self.nbytes.is_multiple_of(size) {
                    return Err(corrupt(format!("a repeated value of {size} bytes for {} bytes", self.nbytes)));
                }
                return Ok(());
            }
            Special::Nans if self.typesize != 4 && self.typesize != 8 => {
                return Err(corrupt(format!("NaNs of {} bytes", self.typesize)));
            }
            Special::None => {}
            _ => return Ok(()),
        }
        if self.flags & MEMCPYED != 0 {
            if self.header_len.checked_add(self.nbytes) != Some(self.bytes.len()) {
                return Err(corrupt(format!("a plain copy of {} bytes in {} bytes", self.nbytes, self.bytes.len())));
            }
            return Ok(());
        }
        let starts = self.nblocks().checked_mul(4).and_then(|n| n.checked_add(self.header_len));
        if starts.is_none_or(|end| end > self.bytes.len()) {
            return Err(CodecError::Truncated { codec: NAME, len: self.bytes.len() });
        }
        self.check_filters()
    }

    /// Refuses unknown filters and a delta filter another filter follows in decode order.
    fn check_filters(&self) -> Result<(), CodecError> {
        if let Some(&id) = self.filters.iter().find(|&&id| id > TRUNC_PREC) {
            return Err(unsupported(format!("filter {id} (user-defined or registered)")));
        }
        if let Some(at) = self.filters.iter().position(|&id| id == DELTA) {
            if self.filters[..at].iter().any(|&id| id == SHUFFLE || id == BITSHUFFLE || id == DELTA) {
                return Err(unsupported("a delta filter followed by another filter"));
            }
        }
        Ok(())
    }

    /// The size of a [`Special::Value`] chunk's value: what follows the header.
    fn value_size(&self) -> usize {
        self.bytes.len().saturating_sub(EXTENDED_HEADER)
    }

    /// The uncompressed size.
    pub(super) fn nbytes(&self) -> usize {
        self.nbytes
    }

    /// The size of every block but maybe the last.
    pub(super) fn blocksize(&self) -> usize {
        self.blocksize
    }

    /// The number of blocks.
    pub(super) fn nblocks(&self) -> usize {
        self.nbytes.div_ceil(self.blocksize)
    }

    /// The uncompressed size of block `k`.
    pub(super) fn block_len(&self, k: usize) -> usize {
        self.blocksize.min(self.nbytes.saturating_sub(k * self.blocksize))
    }

    /// Whether blocks after the first need block 0 (decoded) as the delta reference.
    pub(super) fn has_delta(&self) -> bool {
        self.special == Special::None && self.flags & MEMCPYED == 0 && self.filters.contains(&DELTA)
    }

    /// Decodes the whole chunk into `out` (exactly [`Chunk::nbytes`] long).
    ///
    /// # Errors
    /// As [`Chunk::decode_block`]; [`CodecError::DecodedLength`] when `out` has another length.
    pub(super) fn decode_into(&self, out: &mut [u8]) -> Result<(), CodecError> {
        if out.len() != self.nbytes {
            return Err(CodecError::DecodedLength { codec: NAME, expected: out.len(), actual: self.nbytes });
        }
        let mut scratch = Scratch::default();
        let (first, rest) = out.split_at_mut(self.block_len(0));
        self.decode_block(0, first, &mut scratch, None)?;
        for (k, block) in rest.chunks_mut(self.blocksize).enumerate() {
            self.decode_block(k + 1, block, &mut scratch, Some(first))?;
        }
        Ok(())
    }

    /// Decodes block `k` into `dst` (exactly [`Chunk::block_len`] long); `reference` is the decoded
    /// block 0 for the blocks after it (the delta filter's reference), None for block 0.
    ///
    /// # Errors
    /// [`CodecError::Truncated`] or [`CodecError::Corrupt`] for streams outside the chunk or that
    /// their codec refuses, [`CodecError::Unsupported`] for a user-defined codec or an unknown stream
    /// token.
    pub(super) fn decode_block(
        &self,
        k: usize,
        dst: &mut [u8],
        scratch: &mut Scratch,
        reference: Option<&[u8]>,
    ) -> Result<(), CodecError> {
        let bsize = self.block_len(k);
        if dst.len() != bsize || bsize == 0 {
            return Err(corrupt(format!("block {k} of {bsize} bytes into {} bytes", dst.len())));
        }
        match self.special {
            Special::Zeros | Special::Uninit => dst.fill(0),
            Special::Nans if self.typesize == 4 => fill_with(dst, &f32::NAN.to_le_bytes())?,
            Special::Nans => fill_with(dst, &f64::NAN.to_le_bytes())?,
            Special::Value => fill_with(dst, &self.bytes[EXTENDED_HEADER..])?,
            Special::None if self.flags & MEMCPYED != 0 => {
                let at = self.header_len + k * self.blocksize;
                dst.copy_from_slice(&self.bytes[at..at + bsize]);
            }
            Special::None => {
                scratch.a.resize(bsize, 0);
                self.decode_streams(k, &mut scratch.a[..bsize])?;
                self.unfilter(scratch, bsize, reference)?;
                dst.copy_from_slice(&scratch.a[..bsize]);
            }
        }
        Ok(())
    }

    /// Decodes the streams of block `k` into `out`.
    fn decode_streams(&self, k: usize, out: &mut [u8]) -> Result<(), CodecError> {
        let start = i32_at(self.bytes, self.header_len + 4 * k)?;
        let mut at = usize::try_from(start).ok().filter(|&s| s > 0 && s < self.bytes.len()).ok_or_else(|| {
            corrupt(format!("block {k} starts at {start}, outside the chunk of {} bytes", self.bytes.len()))
        })?;
        let leftover = k + 1 == self.nblocks() && !self.nbytes.is_multiple_of(self.blocksize);
        let streams = if self.flags & DONT_SPLIT == 0 && !leftover { self.typesize } else { 1 };
        if out.len() < streams || !out.len().is_multiple_of(streams) {
            return Err(corrupt(format!("a block of {} bytes split into {streams} streams", out.len())));
        }
        for part in out.chunks_mut(out.len() / streams) {
            at = self.decode_stream(at, part)?;
        }
        Ok(())
    }

    /// Decodes the stream at `at` into `part`; returns where the next stream starts.
    fn decode_stream(&self, at: usize, part: &mut [u8]) -> Result<usize, CodecError> {
        let truncated = || CodecError::Truncated { codec: NAME, len: self.bytes.len() };
        let csize = i32_at(self.bytes, at)?;
        let at = at + 4;
        if csize == 0 {
            part.fill(0);
            return Ok(at);
        }
        if csize < 0 {
            let token = *self.bytes.get(at).ok_or_else(truncated)?;
            if token & 0x01 == 0 || csize < -255 {
                return Err(unsupported(format!("stream token {token:#04x} with length {csize}")));
            }
            part.fill(csize.unsigned_abs() as u8);
            return Ok(at + 1);
        }
        let end = at + csize as usize;
        let data = self.bytes.get(at..end).ok_or_else(truncated)?;
        if data.len() == part.len() {
            part.copy_from_slice(data);
            return Ok(end);
        }
        let format = self.flags >> 5;
        if format == USER_CODEC {
            return Err(unsupported(format!("user-defined codec {}", self.user_codec)));
        }
        let n = block::decompress_stream(format, data, part, NAME)?;
        if n != part.len() {
            return Err(CodecError::DecodedLength { codec: NAME, expected: part.len(), actual: n });
        }
        Ok(end)
    }

    /// Undoes the filters, slot 5 to slot 0, on the block in `scratch.a` (`bsize` bytes), leaving
    /// the result there.
    fn unfilter(&self, scratch: &mut Scratch, bsize: usize, reference: Option<&[u8]>) -> Result<(), CodecError> {
        scratch.b.resize(bsize, 0);
        for slot in (0..MAX_FILTERS).rev() {
            let (a, b) = (&mut scratch.a[..bsize], &mut scratch.b[..bsize]);
            match self.filters[slot] {
                SHUFFLE => {
                    let meta = usize::from(self.filters_meta[slot]);
                    unshuffle_into(a, b, if meta == 0 { self.typesize } else { meta });
                }
                BITSHUFFLE => block::bit_unshuffle(a, b, self.typesize, self.version),
                DELTA => {
                    undelta(a, reference, self.typesize)?;
                    continue;
                }
                _ => continue,
            }
            std::mem::swap(&mut scratch.a, &mut scratch.b);
        }
        Ok(())
    }
}

/// Fills `dst` with copies of `value` (whose length must divide `dst`'s).
fn fill_with(dst: &mut [u8], value: &[u8]) -> Result<(), CodecError> {
    if value.is_empty() || !dst.len().is_multiple_of(value.len()) {
        return Err(corrupt(format!("a block of {} bytes of {}-byte values", dst.len(), value.len())));
    }
    dst.chunks_exact_mut(value.len()).for_each(|d| d.copy_from_slice(value));
    Ok(())
}

/// Undoes Blosc2's delta filter on one block (`delta.c`), by elements of the type size (1, 2, 4 or
/// 8 bytes; other sizes by 8 when a multiple of 8, else by bytes): in block 0 (`reference` None) each
/// element was XORed with the previous one, in the other blocks with block 0's element at the same
/// place. Trailing bytes are left as they are.
fn undelta(block: &mut [u8], reference: Option<&[u8]>, typesize: usize) -> Result<(), CodecError> {
    let width = match typesize {
        1 | 2 | 4 | 8 => typesize,
        t if t.is_multiple_of(8) => 8,
        _ => 1,
    };
    let whole = block.len() / width * width;
    match reference {
        None => (width..whole).for_each(|j| block[j] ^= block[j - width]),
        Some(r) => {
            let r = r.get(..whole).ok_or_else(|| corrupt("a delta reference shorter than the block"))?;
            block[..whole].iter_mut().zip(r).for_each(|(b, r)| *b ^= r);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
