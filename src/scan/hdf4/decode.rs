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

/// Decodes `input`, encoded by `coder`, into exactly `length` bytes.
///
/// # Errors
/// A message when the coder is not implemented or the input is corrupt.
pub(crate) fn decode(coder: Coder, input: &[u8], length: usize) -> Result<Vec<u8>, String> {
    let mut out = match coder {
        Coder::None => input.get(..length).ok_or("fewer stored bytes than the element's length")?.to_vec(),
        Coder::Rle => rle(input, length)?,
        Coder::Deflate => inflate(input, length)?,
        Coder::SkipHuffman { skip } => skip_huffman::decode(input, skip, length)?,
        Coder::Nbit(nbit) => nbit::decode(input, nbit, length)?,
        Coder::Szip(params) => szip::decode(input, params, length)?,
        other => return Err(format!("{other} decoding is not implemented")),
    };
    if out.len() < length {
        return Err(format!("{coder} data decodes to {} bytes, fewer than the element's {length}", out.len()));
    }
    out.truncate(length);
    Ok(out)
}

/// HDF4 run-length decoding: a control byte `c`; with its high bit set, the next byte repeated
/// `(c & 0x7f) + 3` times; otherwise the next `c + 1` bytes as they are.
fn rle(input: &[u8], length: usize) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(length);
    let mut at = 0;
    while out.len() < length {
        let c = *input.get(at).ok_or("RLE data ends early")?;
        at += 1;
        if c & 0x80 != 0 {
            let b = *input.get(at).ok_or("RLE data ends inside a run")?;
            at += 1;
            out.resize(out.len() + usize::from(c & 0x7f) + 3, b);
        } else {
            let n = usize::from(c) + 1;
            out.extend_from_slice(input.get(at..at + n).ok_or("RLE data ends inside a literal")?);
            at += n;
        }
    }
    Ok(out)
}

fn inflate(input: &[u8], length: usize) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(length);
    let mut decoder = flate2::read::ZlibDecoder::new(input).take(length as u64);
    decoder.read_to_end(&mut out).map_err(|e| format!("deflate data: {e}"))?;
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
        assert!(decode(Coder::Other(7), &[], 4).unwrap_err().contains("method 7"));
    }
}
