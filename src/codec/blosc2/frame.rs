//! Blosc2 contiguous frames (c-blosc2's `README_CFRAME_FORMAT.rst`; `frame.c`'s `get_header_info`,
//! `get_coffsets`, `get_coffset`, `frame_get_chunk` and `get_meta_from_header`): the bytes
//! `blosc2_schunk_to_buffer` and `b2nd_to_cframe` write, which the hdf5-blosc2 filter stores as one
//! HDF5 chunk.
//!
//! A frame is a msgpack header (magic `b2frame`, header and frame lengths, flags, uncompressed and
//! compressed sizes, type, block and chunk sizes, the default filters, then the metalayers: a map of
//! names to offsets of `bin32` contents within the header), the chunks, an index chunk and a trailer
//! (variable-length metalayers and a fingerprint, which decoding does not need). Integers in the
//! header are big-endian msgpack; the index is a Blosc2 chunk of little-endian i64 offsets, relative to
//! the end of the header, one per chunk; a negative offset marks a special chunk (its top byte's low
//! bits: 1 zeros, 2 NaNs, 4 uninitialized).
//!
//! Refused: sparse frames (type 1: chunks in files of a directory), frame formats newer than c-blosc2
//! defines (version above 3) and frames of variable-length blocks.
//!
//! Hostile input: every length is checked against the frame's bytes; the index is decoded only when
//! its chunk count is at most `max_chunks`, which the caller bounds by the HDF5 chunk's size.

use super::chunk::{special_header, Chunk, Special, EXTENDED_HEADER};
use super::{corrupt, unsupported, NAME};
use crate::codec::CodecError;

/// The magic string after the first two msgpack bytes.
const MAGIC: &[u8; 8] = b"b2frame\0";
/// The shortest header: up to the filter pipeline's end.
const HEADER_MINLEN: usize = 87;
/// The newest frame format c-blosc2 defines.
const MAX_VERSION: u8 = 3;
/// General flags: every chunk uses variable-length blocks.
const VL_BLOCKS: u8 = 0x80;
/// Frame types (low nibble of the type byte).
const CONTIGUOUS: u8 = 0;
const SPARSE: u8 = 1;
/// The most metalayers c-blosc2 reads.
const MAX_METALAYERS: usize = 16;

/// A parsed frame, borrowing its bytes.
#[derive(Debug)]
pub(super) struct Frame<'a> {
    bytes: &'a [u8],
    header_len: usize,
    nbytes: u64,
    cbytes: usize,
    typesize: u8,
    chunksize: u64,
    offsets: Vec<i64>,
}

/// The bytes of one chunk of a frame: stored in the frame, or the header of a special chunk.
#[derive(Debug)]
pub(super) enum ChunkBytes<'a> {
    /// From the chunk's start to the end of the frame's chunks section.
    Stored(&'a [u8]),
    /// A special chunk's header, built as c-blosc2 builds it.
    Special([u8; EXTENDED_HEADER]),
}

impl ChunkBytes<'_> {
    /// The chunk, parsed.
    ///
    /// # Errors
    /// As [`Chunk::parse`].
    pub(super) fn parse(&self) -> Result<Chunk<'_>, CodecError> {
        match self {
            ChunkBytes::Stored(bytes) => Chunk::parse(bytes),
            ChunkBytes::Special(header) => Chunk::parse(header),
        }
    }
}

/// Checks the msgpack marker `marker` at `at`.
fn marker(bytes: &[u8], at: usize, marker: u8, what: &str) -> Result<(), CodecError> {
    match bytes.get(at) {
        Some(&m) if m == marker => Ok(()),
        Some(&m) => Err(corrupt(format!("{what}: msgpack marker {m:#04x} at {at}, expected {marker:#04x}"))),
        None => Err(CodecError::Truncated { codec: NAME, len: bytes.len() }),
    }
}

/// The big-endian integer of `N` bytes after the msgpack marker `m` at `at`.
fn be<const N: usize>(bytes: &[u8], at: usize, m: u8, what: &str) -> Result<[u8; N], CodecError> {
    marker(bytes, at, m, what)?;
    let field = bytes.get(at + 1..at + 1 + N).ok_or(CodecError::Truncated { codec: NAME, len: bytes.len() })?;
    Ok(field.try_into().unwrap_or([0; N]))
}

/// A non-negative header size that fits in `usize`.
fn size(value: i64, what: &str) -> Result<usize, CodecError> {
    usize::try_from(value).map_err(|_| corrupt(format!("frame {what} {value}")))
}

impl<'a> Frame<'a> {
    /// Parses the frame at the start of `input` (trailing bytes are ignored, as c-blosc2 ignores
    /// them) and decodes its index, refusing more than `max_chunks` chunks.
    ///
    /// # Errors
    /// [`CodecError::Truncated`] or [`CodecError::Corrupt`] for a frame that does not hold together,
    /// [`CodecError::Unsupported`] for the frames the module docs list.
    pub(super) fn parse(input: &'a [u8], max_chunks: usize) -> Result<Self, CodecError> {
        if input.len() < HEADER_MINLEN {
            return Err(CodecError::Truncated { codec: NAME, len: input.len() });
        }
        if input[0] & 0xf0 != 0x90 || input[1] != 0xa8 || &input[2..10] != MAGIC {
            return Err(corrupt("no Blosc2 frame (magic \"b2frame\" missing)"));
        }
        let header_len = size(i32::from_be_bytes(be(input, 10, 0xd2, "header length")?).into(), "header length")?;
        let frame_len = u64::from_be_bytes(be(input, 15, 0xcf, "frame length")?);
        if header_len < HEADER_MINLEN || header_len as u64 > frame_len || frame_len > input.len() as u64 {
            let msg = format!("header of {header_len} bytes, frame of {frame_len}, in {} bytes", input.len());
            return Err(if frame_len > input.len() as u64 {
                CodecError::Truncated { codec: NAME, len: input.len() }
            } else {
                corrupt(msg)
            });
        }
        let bytes = &input[..frame_len as usize];
        check_flags(bytes)?;
        let nbytes = size(i64::from_be_bytes(be(bytes, 29, 0xd3, "uncompressed size")?), "size")? as u64;
        let cbytes = size(i64::from_be_bytes(be(bytes, 38, 0xd3, "compressed size")?), "compressed size")?;
        let typesize = i32::from_be_bytes(be(bytes, 47, 0xd2, "type size")?);
        let typesize = u8::try_from(typesize).ok().filter(|&t| t > 0);
        let typesize = typesize.ok_or_else(|| corrupt("a frame type size outside 1..=255"))?;
        let chunksize = i32::from_be_bytes(be(bytes, 57, 0xd2, "chunk size")?);
        let chunksize = size(chunksize.into(), "chunk size")? as u64;
        if header_len.checked_add(cbytes).is_none_or(|end| end > bytes.len()) {
            return Err(corrupt(format!("{cbytes} bytes of chunks past the end of the frame")));
        }
        let mut frame = Frame { bytes, header_len, nbytes, cbytes, typesize, chunksize, offsets: Vec::new() };
        frame.offsets = frame.read_offsets(max_chunks)?;
        Ok(frame)
    }

    /// The number of chunks the header implies (`None`: as many as the index holds).
    fn header_chunks(&self) -> Option<u64> {
        match (self.nbytes, self.chunksize) {
            (0, _) => Some(0),
            (_, 0) => None,
            (n, c) => Some(n.div_ceil(c)),
        }
    }

    /// Decodes the index chunk after the chunks: one i64 offset per chunk.
    fn read_offsets(&self, max_chunks: usize) -> Result<Vec<i64>, CodecError> {
        let nchunks = self.header_chunks();
        if nchunks == Some(0) {
            return Ok(Vec::new());
        }
        let index = Chunk::parse(&self.bytes[self.header_len + self.cbytes..])?;
        let expected = nchunks.map_or(index.nbytes() as u64, |n| n.saturating_mul(8));
        if index.nbytes() as u64 != expected || !index.nbytes().is_multiple_of(8) {
            return Err(corrupt(format!("an index of {} bytes for {expected} bytes of offsets", index.nbytes())));
        }
        if index.nbytes() / 8 > max_chunks {
            let msg =
                format!("a frame of {} chunks, more than the {max_chunks} its HDF5 chunk can hold", index.nbytes() / 8);
            return Err(corrupt(msg));
        }
        let mut raw = vec![0u8; index.nbytes()];
        index.decode_into(&mut raw)?;
        Ok(raw.chunks_exact(8).map(|w| i64::from_le_bytes(w.try_into().unwrap_or([0; 8]))).collect())
    }

    /// The number of chunks.
    pub(super) fn nchunks(&self) -> usize {
        self.offsets.len()
    }

    /// The type size of the frame's items.
    pub(super) fn typesize(&self) -> usize {
        usize::from(self.typesize)
    }

    /// Chunk `n`; a special one is given blocks of `blocksize` bytes.
    ///
    /// # Errors
    /// [`CodecError::Corrupt`] for an offset outside the chunks section or an unknown special value.
    pub(super) fn chunk(&self, n: usize, blocksize: usize) -> Result<ChunkBytes<'a>, CodecError> {
        let offset = *self.offsets.get(n).ok_or_else(|| corrupt(format!("chunk {n} of {}", self.nchunks())))?;
        if offset < 0 {
            let special = Special::from_code(offset.to_le_bytes()[7] & 0x07)?;
            if matches!(special, Special::None | Special::Value) {
                return Err(corrupt(format!("chunk {n}: special offset {offset:#x}")));
            }
            let last = n + 1 == self.nchunks() && self.chunksize > 0 && !self.nbytes.is_multiple_of(self.chunksize);
            let nbytes = if last { self.nbytes % self.chunksize } else { self.chunksize };
            let nbytes = u32::try_from(nbytes).map_err(|_| corrupt(format!("a chunk of {nbytes} bytes")))?;
            let blocksize = u32::try_from(blocksize).unwrap_or(u32::MAX);
            return Ok(ChunkBytes::Special(special_header(special, nbytes, self.typesize, blocksize)));
        }
        let end = self.header_len + self.cbytes;
        let start = usize::try_from(offset).ok().and_then(|o| o.checked_add(self.header_len));
        match start {
            Some(start) if start.saturating_add(EXTENDED_HEADER) <= end => {
                Ok(ChunkBytes::Stored(&self.bytes[start..end]))
            }
            _ => Err(corrupt(format!("chunk {n} at offset {offset}, outside the {} bytes of chunks", self.cbytes))),
        }
    }

    /// The content of the metalayer `name`, if the frame has one.
    ///
    /// # Errors
    /// [`CodecError::Corrupt`] or [`CodecError::Truncated`] for a malformed metalayer map.
    pub(super) fn metalayer(&self, name: &str) -> Result<Option<&'a [u8]>, CodecError> {
        let header = &self.bytes[..self.header_len];
        marker(header, HEADER_MINLEN, 0x93, "metalayers")?;
        marker(header, HEADER_MINLEN + 1, 0xcd, "metalayers")?;
        let count = u16::from_be_bytes(be(header, HEADER_MINLEN + 4, 0xde, "metalayer map")?) as usize;
        if count > MAX_METALAYERS {
            return Err(corrupt(format!("{count} metalayers")));
        }
        let mut at = HEADER_MINLEN + 7;
        for _ in 0..count {
            let tag = *header.get(at).ok_or(CodecError::Truncated { codec: NAME, len: header.len() })?;
            if tag & 0xe0 != 0xa0 {
                return Err(corrupt(format!("metalayer name marker {tag:#04x}")));
            }
            let len = usize::from(tag & 0x1f);
            let key =
                header.get(at + 1..at + 1 + len).ok_or(CodecError::Truncated { codec: NAME, len: header.len() })?;
            let offset = i32::from_be_bytes(be(header, at + 1 + len, 0xd2, "metalayer offset")?);
            at += len + 6;
            if key == name.as_bytes() {
                return content(header, offset).map(Some);
            }
        }
        Ok(None)
    }
}

/// The `bin32` content at `offset` of the header.
fn content(header: &[u8], offset: i32) -> Result<&[u8], CodecError> {
    let at = usize::try_from(offset).map_err(|_| corrupt(format!("metalayer offset {offset}")))?;
    let len = i32::from_be_bytes(be(header, at, 0xc6, "metalayer content")?);
    let len = usize::try_from(len).map_err(|_| corrupt(format!("metalayer length {len}")))?;
    header.get(at + 5..at + 5 + len).ok_or(CodecError::Truncated { codec: NAME, len: header.len() })
}

/// Refuses the frame formats and types the module docs list.
fn check_flags(bytes: &[u8]) -> Result<(), CodecError> {
    marker(bytes, 24, 0xa4, "flags")?;
    let (general, kind) = (bytes[25], bytes[26] & 0x0f);
    if general & 0x0f > MAX_VERSION {
        return Err(unsupported(format!("frame format version {}", general & 0x0f)));
    }
    if general & VL_BLOCKS != 0 {
        return Err(unsupported("frames of variable-length blocks"));
    }
    match kind {
        CONTIGUOUS => Ok(()),
        SPARSE => Err(unsupported("sparse frames (chunks in other files)")),
        other => Err(unsupported(format!("frame type {other}"))),
    }
}

#[cfg(test)]
mod tests;
