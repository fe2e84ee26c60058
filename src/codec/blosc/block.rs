//! The block codecs Blosc 1 and Blosc2 share: the compressed streams a block is stored as
//! (blosclz, lz4 and lz4hc, zlib, zstd) and the bit shuffle (c-blosc2's `blosc_d`, `blosclz.c`,
//! `bitshuffle-generic.c`).
//!
//! Stage: inside [`crate::codec`], used by the Blosc 1 frame decoder (`blosc.rs`) and the Blosc2
//! chunk decoder (`blosc2/chunk.rs`). Pure: every decoder writes into the caller's buffer and fails
//! as soon as the output would pass its end, so no untrusted length sizes an allocation.

use crate::codec::{compress, Codec, CodecError};

fn corrupt(codec: &'static str, reason: impl Into<String>) -> CodecError {
    CodecError::Corrupt { codec, source: std::io::Error::new(std::io::ErrorKind::InvalidData, reason.into()) }
}

/// Decodes one compressed stream of a block, written by the compressor of Blosc's format code
/// `format` (bits 5-7 of a chunk's flags: 0 blosclz, 1 lz4 or lz4hc, 2 snappy, 3 zlib, 4 zstd), into
/// `part`; returns the number of bytes written. `codec` names the caller in errors.
///
/// # Errors
/// [`CodecError::Unsupported`] for snappy and for formats Blosc does not define (user-defined codecs
/// among them), [`CodecError::Corrupt`] (naming `codec`), [`CodecError::Truncated`] or
/// [`CodecError::DecodedTooLong`] for a stream its decoder refuses.
pub(in crate::codec) fn decompress_stream(
    format: u8,
    data: &[u8],
    part: &mut [u8],
    codec: &'static str,
) -> Result<usize, CodecError> {
    match format {
        0 => blosclz_decompress(data, part, codec),
        1 => lz4_flex::block::decompress_into(data, part).map_err(|e| corrupt(codec, format!("lz4: {e}"))),
        3 => compress::decompress_into(&Codec::Zlib { level: 0 }, data, part)
            .map_err(|e| corrupt(codec, format!("zlib stream: {e}"))),
        4 => compress::decompress_into(&Codec::Zstd { level: 0, checksum: false }, data, part)
            .map_err(|e| corrupt(codec, format!("zstd stream: {e}"))),
        2 => Err(CodecError::Unsupported { codec, feature: "snappy streams".into() }),
        other => Err(CodecError::Unsupported { codec, feature: format!("compressor format {other}") }),
    }
}

/// Decodes one blosclz stream into `out`; returns the bytes written. A stream is a series of
/// literal runs (a control byte below 32: that many plus one bytes follow) and matches (length in the
/// top 3 bits, 7 meaning more length bytes follow until one below 255; distance from the low 5 bits
/// and the next byte, or, when those are all ones, 8191 plus a 16-bit distance), the first control
/// byte's top bits being a format marker.
pub(in crate::codec) fn blosclz_decompress(
    input: &[u8],
    out: &mut [u8],
    codec: &'static str,
) -> Result<usize, CodecError> {
    const MAX_DISTANCE: usize = 8191;
    let truncated = || CodecError::Truncated { codec, len: input.len() };
    let limit = out.len();
    let too_long = || CodecError::DecodedTooLong { codec, limit };
    let (mut ip, mut op) = (1usize, 0usize);
    let mut ctrl = usize::from(*input.first().ok_or_else(truncated)? & 31);
    loop {
        if ctrl >= 32 {
            let mut len = (ctrl >> 5) - 1;
            let ofs = (ctrl & 31) << 8;
            if len == 6 {
                loop {
                    let code = *input.get(ip).ok_or_else(truncated)?;
                    ip += 1;
                    len += usize::from(code);
                    if code != 255 {
                        break;
                    }
                }
            }
            let code = usize::from(*input.get(ip).ok_or_else(truncated)?);
            ip += 1;
            let mut distance = ofs + code + 1;
            if code == 255 && ofs == 31 << 8 {
                let far = input.get(ip..ip + 2).ok_or_else(truncated)?;
                ip += 2;
                distance = (usize::from(far[0]) << 8) + usize::from(far[1]) + MAX_DISTANCE + 1;
            }
            let len = len + 3;
            if op + len > out.len() {
                return Err(too_long());
            }
            let from = op.checked_sub(distance).ok_or_else(|| corrupt(codec, "blosclz: a match before the start"))?;
            // Byte by byte: a match may overlap the bytes it writes (a run).
            for i in 0..len {
                out[op + i] = out[from + i];
            }
            op += len;
        } else {
            let len = ctrl + 1;
            let literal = input.get(ip..ip + len).ok_or_else(truncated)?;
            let dst = out.get_mut(op..op + len).ok_or_else(too_long)?;
            dst.copy_from_slice(literal);
            ip += len;
            op += len;
        }
        match input.get(ip) {
            Some(&next) => {
                ctrl = usize::from(next);
                ip += 1;
            }
            None => return Ok(op),
        }
    }
}

/// Reverses Blosc's bit shuffle of one block: bit `k` of byte `j` of element `i` was stored at bit
/// `i % 8` of byte `(j * 8 + k) * (n / 8) + i / 8`, for the `n` elements bit-shuffled (all when
/// `n` is a multiple of 8 in format version 2, else none; the leading multiple of 8 in later
/// versions); the rest of the block is stored as it is.
pub(in crate::codec) fn bit_unshuffle(src: &[u8], dst: &mut [u8], typesize: usize, version: u8) {
    let elements = src.len() / typesize;
    let shuffled = match version {
        0..=2 if !elements.is_multiple_of(8) => 0,
        _ => elements - elements % 8,
    };
    let rows = shuffled / 8;
    let end = shuffled * typesize;
    dst[end..].copy_from_slice(&src[end..]);
    dst[..end].fill(0);
    for j in 0..typesize {
        for k in 0..8 {
            let row = &src[(j * 8 + k) * rows..(j * 8 + k + 1) * rows];
            for (byte_index, &byte) in row.iter().enumerate() {
                if byte == 0 {
                    continue;
                }
                for bit in 0..8 {
                    if byte >> bit & 1 != 0 {
                        dst[(byte_index * 8 + bit) * typesize + j] |= 1 << k;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NAME: &str = "blosc";

    #[test]
    fn blosclz_literals_matches_and_runs() {
        // A literal "abc", then a match of 6 bytes at distance 3 ("abcabc"), then a run of 5 'c'
        // (distance 1), then a literal "z".
        let stream = [2, b'a', b'b', b'c', (4 << 5), 2, (3 << 5), 0, 0, b'z'];
        let mut out = [0u8; 15];
        let n = blosclz_decompress(&stream, &mut out, NAME).unwrap();
        assert_eq!(&out[..n], b"abcabcabccccccz");
        let mut small = [0u8; 5];
        assert!(blosclz_decompress(&stream, &mut small, NAME).is_err());
        assert!(blosclz_decompress(&[2, b'a'], &mut out, NAME).is_err(), "truncated literal");
        assert!(blosclz_decompress(&[0, b'a', (1 << 5), 5], &mut out, NAME).is_err(), "a match before the start");
    }

    #[test]
    fn bit_shuffle_is_undone() {
        // 16 two-byte elements; shuffle by the definition, then undo.
        let elements: Vec<u16> = (0..16).map(|i| i * 4099 + 1).collect();
        let bytes: Vec<u8> = elements.iter().flat_map(|e| e.to_le_bytes()).collect();
        let (n, size) = (16, 2);
        let mut shuffled = vec![0u8; bytes.len()];
        for i in 0..n {
            for j in 0..size {
                for k in 0..8 {
                    if bytes[i * size + j] >> k & 1 != 0 {
                        shuffled[(j * 8 + k) * (n / 8) + i / 8] |= 1 << (i % 8);
                    }
                }
            }
        }
        let mut out = vec![0u8; bytes.len()];
        bit_unshuffle(&shuffled, &mut out, size, 2);
        assert_eq!(out, bytes);
        // 12 elements in format version 2: not bit-shuffled at all.
        let mut plain = vec![0u8; 24];
        bit_unshuffle(&bytes[..24], &mut plain, 2, 2);
        assert_eq!(plain, &bytes[..24]);
    }

    #[test]
    fn snappy_and_unknown_formats_are_unsupported() {
        let mut out = [0u8; 4];
        for format in [2, 5, 6, 7] {
            let err = decompress_stream(format, &[1, 2], &mut out, NAME).unwrap_err();
            assert!(matches!(err, CodecError::Unsupported { .. }), "{format}: {err}");
        }
    }
}
