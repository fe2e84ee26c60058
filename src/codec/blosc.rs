//! Blosc 1 frames: Zarr v3 `blosc` (what the hdf5-blosc filter, HDF5 filter 32001, writes into every
//! chunk), decoded in pure Rust.
//!
//! Stage: inside [`crate::codec`]; a bytes -> bytes codec run by `pipeline` like the compressors.
//!
//! A frame (c-blosc 1.x, format version 2) is a 16-byte header (version, compressor version, flags,
//! type size, then little-endian u32 uncompressed size, block size and frame size), then, unless the
//! frame is a plain copy (flag 0x02: the data follows the header as it is), one u32 offset per block
//! and the blocks. A block is one stream, or, when the type size is at most 16, the block holds at
//! least 128 elements, is not the short last block and the "don't split" flag (0x10) is clear, one
//! stream per byte of the type. A stream is a u32 compressed length and that many bytes: raw when the
//! length equals the stream's decoded length, else compressed with the frame's compressor (bits 5-7
//! of the flags: blosclz, lz4 (lz4 and lz4hc), snappy, zlib, zstd). Each decoded block is then
//! unshuffled: bytes (flag 0x01, for type sizes above 1) or bits (flag 0x04; in format version 2 only
//! blocks of a multiple of 8 elements are bit-shuffled, later versions bit-shuffle the leading
//! multiple of 8 elements); trailing bytes are stored as they are.
//!
//! Encoding writes plain-copy frames (every Blosc decoder reads them): vzarr only encodes the few
//! chunks it rewrites, where correctness matters and size does not. Snappy streams are refused
//! (c-blosc builds without it are common, and no pure-Rust decoder is in the tree).

pub(super) mod block;

use super::CodecError;

/// The frame header's length.
const HEADER: usize = 16;
/// Flag: bytes shuffled.
const BYTE_SHUFFLE: u8 = 0x01;
/// Flag: the data is a plain copy after the header.
const MEMCPYED: u8 = 0x02;
/// Flag: bits shuffled.
const BIT_SHUFFLE: u8 = 0x04;
/// Flag: blocks are never split into one stream per byte of the type.
const DONT_SPLIT: u8 = 0x10;
/// The largest type size a block is split for.
const MAX_SPLITS: usize = 16;
/// The fewest elements a block must have to be split.
const MIN_BUFFERSIZE: usize = 128;
/// The name errors carry.
const NAME: &str = "blosc";

/// Blosc's compressors, as Zarr's `blosc` codec names them (`cname`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BloscCompressor {
    /// `blosclz`, Blosc's own LZ77 variant.
    BloscLz,
    /// `lz4`.
    Lz4,
    /// `lz4hc` (LZ4's high-compression encoder; the same stream format).
    Lz4Hc,
    /// `snappy`.
    Snappy,
    /// `zlib`.
    Zlib,
    /// `zstd`.
    Zstd,
}

impl BloscCompressor {
    /// The name in `zarr.json`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            BloscCompressor::BloscLz => "blosclz",
            BloscCompressor::Lz4 => "lz4",
            BloscCompressor::Lz4Hc => "lz4hc",
            BloscCompressor::Snappy => "snappy",
            BloscCompressor::Zlib => "zlib",
            BloscCompressor::Zstd => "zstd",
        }
    }

    /// The compressor of a name in `zarr.json`.
    #[must_use]
    pub fn parse(name: &str) -> Option<Self> {
        [Self::BloscLz, Self::Lz4, Self::Lz4Hc, Self::Snappy, Self::Zlib, Self::Zstd]
            .into_iter()
            .find(|c| c.as_str() == name)
    }

    /// The compressor of c-blosc's compressor code (the hdf5-blosc filter's `cd_values[6]`).
    #[must_use]
    pub fn from_code(code: u32) -> Option<Self> {
        match code {
            0 => Some(Self::BloscLz),
            1 => Some(Self::Lz4),
            2 => Some(Self::Lz4Hc),
            3 => Some(Self::Snappy),
            4 => Some(Self::Zlib),
            5 => Some(Self::Zstd),
            _ => None,
        }
    }

    /// The stream format bits (5-7 of the flags) of frames this compressor writes.
    fn format(self) -> u8 {
        match self {
            BloscCompressor::BloscLz => 0,
            BloscCompressor::Lz4 | BloscCompressor::Lz4Hc => 1,
            BloscCompressor::Snappy => 2,
            BloscCompressor::Zlib => 3,
            BloscCompressor::Zstd => 4,
        }
    }
}

/// Blosc's shuffle modes, as Zarr's `blosc` codec names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BloscShuffle {
    /// `noshuffle`.
    NoShuffle,
    /// `shuffle`: bytes.
    Shuffle,
    /// `bitshuffle`: bits.
    BitShuffle,
}

impl BloscShuffle {
    /// The name in `zarr.json`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            BloscShuffle::NoShuffle => "noshuffle",
            BloscShuffle::Shuffle => "shuffle",
            BloscShuffle::BitShuffle => "bitshuffle",
        }
    }

    /// The mode of a name in `zarr.json`.
    #[must_use]
    pub fn parse(name: &str) -> Option<Self> {
        [Self::NoShuffle, Self::Shuffle, Self::BitShuffle].into_iter().find(|s| s.as_str() == name)
    }

    /// The mode of c-blosc's shuffle code (the hdf5-blosc filter's `cd_values[5]`).
    #[must_use]
    pub fn from_code(code: u32) -> Option<Self> {
        match code {
            0 => Some(Self::NoShuffle),
            1 => Some(Self::Shuffle),
            2 => Some(Self::BitShuffle),
            _ => None,
        }
    }
}

fn corrupt(reason: impl Into<String>) -> CodecError {
    CodecError::Corrupt { codec: NAME, source: std::io::Error::new(std::io::ErrorKind::InvalidData, reason.into()) }
}

fn u32_at(bytes: &[u8], at: usize) -> Result<usize, CodecError> {
    let word = bytes.get(at..at + 4).ok_or(CodecError::Truncated { codec: NAME, len: bytes.len() })?;
    Ok(u32::from_le_bytes([word[0], word[1], word[2], word[3]]) as usize)
}

/// The header fields decoding needs.
struct Header {
    version: u8,
    flags: u8,
    typesize: usize,
    nbytes: usize,
    blocksize: usize,
    cbytes: usize,
}

fn header(input: &[u8]) -> Result<Header, CodecError> {
    if input.len() < HEADER {
        return Err(CodecError::Truncated { codec: NAME, len: input.len() });
    }
    let header = Header {
        version: input[0],
        flags: input[2],
        typesize: usize::from(input[3]),
        nbytes: u32_at(input, 4)?,
        blocksize: u32_at(input, 8)?,
        cbytes: u32_at(input, 12)?,
    };
    if header.version == 0 || header.version > 4 {
        return Err(corrupt(format!("Blosc format version {} (Blosc 1 frames are 1-4)", header.version)));
    }
    if header.cbytes > input.len() {
        return Err(CodecError::Truncated { codec: NAME, len: input.len() });
    }
    if header.nbytes > 0 && (header.blocksize == 0 || header.typesize == 0) {
        return Err(corrupt("a frame with data but no block size or type size"));
    }
    Ok(header)
}

/// Decodes the Blosc 1 frame `input` into `dst` and returns the number of bytes written.
///
/// # Errors
/// [`CodecError::DecodedTooLong`] when the frame holds more than `dst`, [`CodecError::Truncated`]
/// when it is cut short, [`CodecError::Corrupt`] for an invalid frame or stream (or a snappy one).
pub(super) fn decompress_into(input: &[u8], dst: &mut [u8]) -> Result<usize, CodecError> {
    let h = header(input)?;
    if h.nbytes > dst.len() {
        return Err(CodecError::DecodedTooLong { codec: NAME, limit: dst.len() });
    }
    let dst = &mut dst[..h.nbytes];
    if h.nbytes == 0 {
        return Ok(0);
    }
    if h.flags & MEMCPYED != 0 {
        let data =
            input.get(HEADER..HEADER + h.nbytes).ok_or(CodecError::Truncated { codec: NAME, len: input.len() })?;
        dst.copy_from_slice(data);
        return Ok(h.nbytes);
    }
    let frame = &input[..h.cbytes];
    let nblocks = h.nbytes.div_ceil(h.blocksize);
    let mut scratch = vec![0u8; h.blocksize.min(h.nbytes)];
    for (b, block) in dst.chunks_mut(h.blocksize).enumerate() {
        let start = u32_at(frame, HEADER + 4 * b)?;
        let leftover = b + 1 == nblocks && h.nbytes % h.blocksize != 0;
        let shuffled = (h.flags & BYTE_SHUFFLE != 0 && h.typesize > 1) || h.flags & BIT_SHUFFLE != 0;
        let target = if shuffled { &mut scratch[..block.len()] } else { &mut *block };
        decode_block(frame, start, &h, leftover, target)?;
        if h.flags & BYTE_SHUFFLE != 0 && h.typesize > 1 {
            super::shuffle::unshuffle_into(&scratch[..block.len()], block, h.typesize);
        } else if h.flags & BIT_SHUFFLE != 0 {
            block::bit_unshuffle(&scratch[..block.len()], block, h.typesize, h.version);
        }
    }
    Ok(h.nbytes)
}

/// Decodes the streams of one block starting at `start` of `frame` into `out` (the block's length).
fn decode_block(frame: &[u8], mut start: usize, h: &Header, leftover: bool, out: &mut [u8]) -> Result<(), CodecError> {
    let split = h.flags & DONT_SPLIT == 0
        && h.typesize <= MAX_SPLITS
        && h.blocksize / h.typesize >= MIN_BUFFERSIZE
        && !leftover;
    let streams = if split { h.typesize } else { 1 };
    if !out.len().is_multiple_of(streams) {
        return Err(corrupt(format!("a block of {} bytes split into {streams} streams", out.len())));
    }
    let stream_len = out.len() / streams;
    for part in out.chunks_mut(stream_len.max(1)).take(streams) {
        let cbytes = u32_at(frame, start)?;
        start += 4;
        let data = start
            .checked_add(cbytes)
            .and_then(|end| frame.get(start..end))
            .ok_or(CodecError::Truncated { codec: NAME, len: frame.len() })?;
        start += cbytes;
        if cbytes == part.len() {
            part.copy_from_slice(data);
            continue;
        }
        let n = block::decompress_stream((h.flags >> 5) & 0x07, data, part, NAME)?;
        if n != part.len() {
            return Err(CodecError::DecodedLength { codec: NAME, expected: part.len(), actual: n });
        }
    }
    Ok(())
}

/// A plain-copy Blosc 1 frame of `input` (elements of `typesize` bytes): the header, then the bytes.
///
/// # Errors
/// [`CodecError::Encode`] when `input` is larger than a frame can describe (2 GiB).
pub(super) fn compress_memcpyed(
    input: &[u8],
    typesize: usize,
    compressor: BloscCompressor,
) -> Result<Vec<u8>, CodecError> {
    let too_big = || CodecError::Encode {
        codec: NAME,
        source: std::io::Error::other(format!("{} bytes do not fit in a Blosc frame", input.len())),
    };
    let nbytes =
        u32::try_from(input.len()).ok().filter(|&n| n <= i32::MAX as u32 - HEADER as u32).ok_or_else(too_big)?;
    let typesize = u8::try_from(typesize).ok().filter(|&t| t > 0).unwrap_or(1);
    let flags = MEMCPYED | DONT_SPLIT | (compressor.format() << 5);
    let mut frame = Vec::with_capacity(HEADER + input.len());
    frame.extend_from_slice(&[2, 1, flags, typesize]);
    frame.extend_from_slice(&nbytes.to_le_bytes());
    frame.extend_from_slice(&nbytes.max(1).to_le_bytes());
    frame.extend_from_slice(&(nbytes + HEADER as u32).to_le_bytes());
    frame.extend_from_slice(input);
    Ok(frame)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_copy_frames_round_trip() {
        let data: Vec<u8> = (0..1000u32).flat_map(|i| (i * 7).to_le_bytes()).collect();
        let frame = compress_memcpyed(&data, 4, BloscCompressor::Lz4).unwrap();
        assert_eq!(frame.len(), data.len() + HEADER);
        let mut out = vec![0; data.len()];
        assert_eq!(decompress_into(&frame, &mut out).unwrap(), data.len());
        assert_eq!(out, data);
        let mut short = vec![0; 10];
        assert!(matches!(decompress_into(&frame, &mut short), Err(CodecError::DecodedTooLong { .. })));
        assert!(decompress_into(&frame[..20], &mut out).is_err());
    }

    proptest::proptest! {
        /// Frames with a plausible header (version 2, small sizes, any flags) and random bodies, and
        /// random streams, fail or decode within the buffer; never panic.
        #[test]
        fn random_frames_never_panic(
            flags in 0u8..=255,
            typesize in 1u8..=20,
            nbytes in 0u32..600,
            blocksize in 1u32..700,
            body in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..400),
        ) {
            let cbytes = (HEADER + body.len()) as u32;
            let mut frame = vec![2, 1, flags, typesize];
            for word in [nbytes, blocksize, cbytes] {
                frame.extend_from_slice(&word.to_le_bytes());
            }
            frame.extend_from_slice(&body);
            let mut out = vec![0; 600];
            if let Ok(n) = decompress_into(&frame, &mut out) {
                proptest::prop_assert_eq!(n, nbytes as usize);
            }
        }
    }

    #[test]
    fn names_and_codes() {
        assert_eq!(BloscCompressor::from_code(4), Some(BloscCompressor::Zlib));
        assert_eq!(BloscCompressor::parse("lz4hc"), Some(BloscCompressor::Lz4Hc));
        assert_eq!(BloscShuffle::from_code(2), Some(BloscShuffle::BitShuffle));
        assert_eq!(BloscShuffle::parse("noshuffle"), Some(BloscShuffle::NoShuffle));
        assert_eq!(BloscCompressor::from_code(9), None);
    }
}
