//! Decoding compressed elements a Zarr reader cannot decode itself, so their values can be stored by
//! the store (HDF4's `crle.c`, `cskphuff.c`, `cnbit.c` and `cszip.c`; deflate through `flate2` for compressed bytes that are
//! not one range).
//!
//! Every decoder produces exactly the element's uncompressed length and refuses input that would
//! produce more or that ends early.

mod nbit;
mod skip_huffman;
mod szip;

use std::io::Read;

use super::special::Coder;

/// Why compressed elements do not decode: a coder vzarr does not implement, or corrupt data.
#[derive(Debug, thiserror::Error)]
pub(crate) enum DecodeError {
    /// A coder vzarr does not decode.
    #[error("{0} decoding is not implemented")]
    NotImplemented(Coder),
    /// Fewer bytes stored than an uncompressed element holds.
    #[error("fewer stored bytes than the element's length")]
    Short,
    /// The data decodes to fewer bytes than the element holds.
    #[error("{coder} data decodes to {decoded} bytes, fewer than the element's {length}")]
    Decoded {
        /// The coder.
        coder: Coder,
        /// Bytes decoded.
        decoded: usize,
        /// The element's bytes.
        length: usize,
    },
    /// Run-length data ends early (`RLE data ends early`, `... inside a run`, `... inside a literal`).
    #[error("RLE data ends {0}")]
    Rle(&'static str),
    /// Deflate data does not inflate.
    #[error("deflate data: {0}")]
    Deflate(#[source] std::io::Error),
    /// Skipping Huffman with a tree count vzarr does not accept.
    #[error("skipping Huffman with {0} trees (vzarr accepts 1 to {max})", max = skip_huffman::MAX_SKIP)]
    HuffmanTrees(u32),
    /// Skipping Huffman data ends early.
    #[error("skipping Huffman data ends after {decoded} of {length} bytes")]
    HuffmanShort {
        /// Bytes decoded.
        decoded: usize,
        /// The element's bytes.
        length: usize,
    },
    /// N-bit data of a number type vzarr does not read.
    #[error("NBIT of number type {0}")]
    NbitType(u32),
    /// N-bit parameters out of range.
    #[error("NBIT of {bits} bits from bit {top} in {size}-byte values")]
    NbitBits {
        /// Bits per value.
        bits: u32,
        /// The top bit.
        top: u32,
        /// Bytes per value.
        size: u32,
    },
    /// N-bit data ends early.
    #[error("NBIT data ends early")]
    NbitShort,
    /// szip parameters that disagree with the element's length.
    #[error("szip parameters give {pixels} pixels of {pixel_bytes} bytes, not the element's {length} bytes")]
    SzipSize {
        /// Pixels.
        pixels: u32,
        /// Bytes per pixel.
        pixel_bytes: u64,
        /// The element's bytes.
        length: usize,
    },
    /// szip parameters the AEC decoder refuses.
    #[error("szip parameters: {0}")]
    SzipParameters(String),
    /// An szip stream that does not decode (its cause after it).
    #[error("{}{}", .0, std::error::Error::source(.0).map(|cause| format!(": {cause}")).unwrap_or_default())]
    SzipStream(#[source] crate::codec::CodecError),
    /// szip data shorter than its preamble.
    #[error("szip data of {0} bytes, shorter than its 5-byte preamble")]
    SzipPreamble(usize),
    /// An szip preamble claiming more bytes than the element holds.
    #[error("szip preamble claims {claimed} bytes, the element holds {held}")]
    SzipClaims {
        /// Bytes claimed (negative in a corrupt file).
        claimed: i32,
        /// Bytes after the preamble.
        held: usize,
    },
}

/// Decodes `input`, encoded by `coder`, into exactly `length` bytes.
///
/// # Errors
/// [`DecodeError`] when the coder is not implemented or the input is corrupt.
pub(crate) fn decode(coder: Coder, input: &[u8], length: usize) -> Result<Vec<u8>, DecodeError> {
    let mut out = match coder {
        Coder::None => input.get(..length).ok_or(DecodeError::Short)?.to_vec(),
        Coder::Rle => rle(input, length)?,
        Coder::Deflate { .. } => inflate(input, length)?,
        Coder::SkipHuffman { skip } => skip_huffman::decode(input, skip, length)?,
        Coder::Nbit(nbit) => nbit::decode(input, nbit, length)?,
        Coder::Szip(params) => szip::decode(input, params, length)?,
        other => return Err(DecodeError::NotImplemented(other)),
    };
    if out.len() < length {
        return Err(DecodeError::Decoded { coder, decoded: out.len(), length });
    }
    out.truncate(length);
    Ok(out)
}

/// HDF4 run-length decoding: a control byte `c`; with its high bit set, the next byte repeated
/// `(c & 0x7f) + 3` times; otherwise the next `c + 1` bytes as they are.
fn rle(input: &[u8], length: usize) -> Result<Vec<u8>, DecodeError> {
    let mut out = Vec::with_capacity(length);
    let mut at = 0;
    while out.len() < length {
        let c = *input.get(at).ok_or(DecodeError::Rle("early"))?;
        at += 1;
        if c & 0x80 != 0 {
            let b = *input.get(at).ok_or(DecodeError::Rle("inside a run"))?;
            at += 1;
            out.resize(out.len() + usize::from(c & 0x7f) + 3, b);
        } else {
            let n = usize::from(c) + 1;
            out.extend_from_slice(input.get(at..at + n).ok_or(DecodeError::Rle("inside a literal"))?);
            at += n;
        }
    }
    Ok(out)
}

fn inflate(input: &[u8], length: usize) -> Result<Vec<u8>, DecodeError> {
    let mut out = Vec::with_capacity(length);
    let mut decoder = flate2::read::ZlibDecoder::new(input).take(length as u64);
    decoder.read_to_end(&mut out).map_err(DecodeError::Deflate)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rle_runs_and_literals() {
        // literal of 2 bytes, then a run of 5 x 7
        assert_eq!(rle(&[1, 9, 8, 0x82, 7], 7).unwrap(), [9, 8, 7, 7, 7, 7, 7]);
        assert!(rle(&[5, 1], 6).is_err());
        assert!(decode(Coder::Rle, &[0x82], 3).is_err());
    }

    #[test]
    fn unknown_coders_are_named() {
        assert!(decode(Coder::Other(7), &[], 4).unwrap_err().to_string().contains("method 7"));
    }
}
