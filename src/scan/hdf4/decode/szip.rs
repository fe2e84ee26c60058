//! szip elements (libhdf4's `cszip.c`): an AEC stream decoded by szlib's `SZ_BufftoBuffDecompress`
//! with the element's parameters ([`Szip`]), through vzarr's own AEC decoder
//! ([`crate::codec::SzipParams::decode_stream`], shared with HDF5's szip filter).
//!
//! Framing (`HCIcszip_decode`, `HCIcszip_term`): elements written since HDF 4.2r1 have bit
//! `SZ_H4_REV_2` (`0x10000`) set in their options mask and start with a 5-byte preamble: a flag byte
//! (1: the values are stored as they are, because the coded stream came out larger) and a big-endian
//! `i32`, the number of bytes that follow (the stream, or the values). Elements of HDF 4.2r0 have no
//! preamble: the whole element is the stream. The decoded size is `pixels` times the bytes of a pixel
//! (`(bits + 7) / 8`, 3 counted as 4); the options mask without `SZ_H4_REV_2` goes to szlib as is.
//!
//! Hostile input: the parameters are checked as libaec checks them, the decoded size must be the
//! element's (so nothing larger than the caller's bound is allocated), and the preamble's length must
//! lie inside the element.

use super::super::special::Szip;
use super::DecodeError;
use crate::codec::SzipParams;

/// The options-mask bit of elements with a preamble.
const SZ_H4_REV_2: u32 = 0x10000;
/// The preamble's flag for values stored uncompressed.
const STORED_AS_IS: u8 = 1;

/// Decodes the szip element `input` into exactly `length` bytes.
///
/// # Errors
/// [`DecodeError`] when the parameters are invalid or disagree with `length`, or the stream is corrupt.
pub(super) fn decode(input: &[u8], szip: Szip, length: usize) -> Result<Vec<u8>, DecodeError> {
    let pixel_bytes = match u64::from(szip.bits_per_pixel).div_ceil(8) {
        3 => 4,
        n => n,
    };
    let decoded = u64::from(szip.pixels) * pixel_bytes;
    if decoded != length as u64 {
        return Err(DecodeError::SzipSize { pixels: szip.pixels, pixel_bytes, length });
    }
    let stream = if szip.options_mask & SZ_H4_REV_2 != 0 {
        let (flag, stored) = preamble(input)?;
        if flag == STORED_AS_IS {
            return Ok(stored.to_vec());
        }
        stored
    } else {
        input
    };
    let cd = [
        szip.options_mask & !SZ_H4_REV_2,
        u32::from(szip.pixels_per_block),
        u32::from(szip.bits_per_pixel),
        szip.pixels_per_scanline,
    ];
    let params = SzipParams::from_cd_values(&cd).map_err(DecodeError::SzipParameters)?;
    params.decode_stream(stream, length).map_err(DecodeError::SzipStream)
}

/// The preamble's flag and the bytes it says follow.
fn preamble(input: &[u8]) -> Result<(u8, &[u8]), DecodeError> {
    let Some(([flag, count @ ..], rest)) = input.split_first_chunk::<5>() else {
        return Err(DecodeError::SzipPreamble(input.len()));
    };
    let count = i32::from_be_bytes(*count);
    usize::try_from(count)
        .ok()
        .and_then(|n| rest.get(..n))
        .map(|stored| (*flag, stored))
        .ok_or(DecodeError::SzipClaims { claimed: count, held: rest.len() })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(mask: u32, pixels: u32) -> Szip {
        Szip { pixels, pixels_per_scanline: 4, options_mask: mask, bits_per_pixel: 8, pixels_per_block: 2 }
    }

    #[test]
    fn stored_as_is_and_bad_preambles() {
        let stored = [1, 0, 0, 0, 4, 9, 8, 7, 6];
        assert_eq!(decode(&stored, params(SZ_H4_REV_2 | 4, 4), 4).unwrap(), [9, 8, 7, 6]);
        let err = decode(&[0, 0, 0, 1, 0, 1, 2], params(SZ_H4_REV_2 | 4, 4), 4).unwrap_err().to_string();
        assert!(err.contains("claims 256 bytes"), "{err}");
        assert!(decode(&[0, 0xff, 0xff, 0xff, 0xff], params(SZ_H4_REV_2 | 4, 4), 4)
            .unwrap_err()
            .to_string()
            .contains("-1"));
        assert!(decode(&[0, 0], params(SZ_H4_REV_2 | 4, 4), 4).unwrap_err().to_string().contains("preamble"));
    }

    #[test]
    fn parameters_must_match_the_element() {
        assert!(decode(&[], params(4, 5), 4).unwrap_err().to_string().contains("5 pixels"));
        let odd_block = Szip { pixels_per_block: 3, ..params(4, 4) };
        assert!(decode(&[0; 8], odd_block, 4).unwrap_err().to_string().contains("pixels per block"));
    }

    #[test]
    fn a_stream_without_preamble() {
        // 8-bit samples, blocks of 2, 4 per scanline: two uncompressed blocks (id 7).
        let stream = [0xe0, 0x20, 0x5c, 0x0c, 0x10];
        let out = decode(&stream, params(4, 4), 4).unwrap();
        assert_eq!(out, [1, 2, 3, 4]);
    }
}
