//! The `vlen-utf8` codec (zarr-specs v3 core codec; numcodecs `VLenUTF8`): a little-endian u32 item
//! count, then for every item a little-endian u32 byte length followed by its UTF-8 bytes.
//!
//! Stage: inside [`crate::codec`]; used for store-owned string coordinates (new concatenation
//! dimensions) and by the reader to decode them.

use super::CodecError;

const NAME: &str = "vlen-utf8";

fn corrupt(reason: String) -> CodecError {
    CodecError::Corrupt { codec: NAME, source: std::io::Error::new(std::io::ErrorKind::InvalidData, reason) }
}

/// Reads a little-endian u32 at `at`.
fn u32_at(bytes: &[u8], at: usize) -> Result<u32, CodecError> {
    let raw = bytes.get(at..at + 4).ok_or(CodecError::Truncated { codec: NAME, len: bytes.len() })?;
    Ok(u32::from_le_bytes([raw[0], raw[1], raw[2], raw[3]]))
}

/// Decodes exactly `count` strings. Lengths are checked against the input before any allocation.
pub(super) fn decode(bytes: &[u8], count: usize) -> Result<Vec<String>, CodecError> {
    let n = u32_at(bytes, 0)? as usize;
    if n != count {
        return Err(corrupt(format!("chunk holds {n} items, expected {count}")));
    }
    // Every item takes at least its 4-byte length: bound the count by the input before allocating.
    if n > bytes.len().saturating_sub(4) / 4 {
        return Err(CodecError::Truncated { codec: NAME, len: bytes.len() });
    }
    let mut out = Vec::with_capacity(n);
    let mut at = 4usize;
    for i in 0..n {
        let len = u32_at(bytes, at)? as usize;
        at += 4;
        let raw =
            bytes.get(at..at.saturating_add(len)).ok_or(CodecError::Truncated { codec: NAME, len: bytes.len() })?;
        let text = std::str::from_utf8(raw).map_err(|e| corrupt(format!("item {i} is not UTF-8: {e}")))?;
        out.push(text.to_string());
        at += len;
    }
    if at != bytes.len() {
        return Err(corrupt(format!("{} bytes after the last item", bytes.len() - at)));
    }
    Ok(out)
}

/// Encodes `items`.
pub(super) fn encode(items: &[String]) -> Result<Vec<u8>, CodecError> {
    let too_long = || CodecError::Encode {
        codec: NAME,
        source: std::io::Error::new(std::io::ErrorKind::InvalidInput, "more than 4 GiB in one item or count"),
    };
    let mut out = Vec::with_capacity(4 + items.iter().map(|s| 4 + s.len()).sum::<usize>());
    out.extend(u32::try_from(items.len()).map_err(|_| too_long())?.to_le_bytes());
    for item in items {
        out.extend(u32::try_from(item.len()).map_err(|_| too_long())?.to_le_bytes());
        out.extend(item.as_bytes());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_zarr_python_layout() {
        // zarr-python 3.4 writes ['r1', 'r2', 'r10'] as this (before its zstd stage).
        let expected = b"\x03\x00\x00\x00\x02\x00\x00\x00r1\x02\x00\x00\x00r2\x03\x00\x00\x00r10";
        let items: Vec<String> = ["r1", "r2", "r10"].map(String::from).to_vec();
        assert_eq!(encode(&items).unwrap(), expected);
        assert_eq!(decode(expected, 3).unwrap(), items);
    }

    #[test]
    fn bad_input_is_an_error_not_a_panic() {
        let good = encode(&["é".to_string(), String::new()]).unwrap();
        assert!(decode(&good, 3).is_err());
        for cut in 0..good.len() {
            assert!(decode(&good[..cut], 2).is_err(), "cut at {cut}");
        }
        assert!(decode(b"\xff\xff\xff\xff", 0xffff_ffff).is_err());
        assert!(decode(b"\x01\x00\x00\x00\x01\x00\x00\x00\xff", 1).is_err());
    }
}
