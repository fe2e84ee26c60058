//! h5py's LZF filter (HDF5 filter 32000, `lzf_filter.c`): one LibLZF stream per chunk, decoded in
//! pure Rust.
//!
//! Stage: inside [`crate::codec`]; a [`super::SourceFilter`], decoded only (no Zarr codec names it:
//! vzarr stores such chunks re-encoded, see `scan/rewrite`).
//!
//! Framing: none. The filter writes `lzf_compress`'s output as it is and reads it back with
//! `lzf_decompress` into a buffer of the chunk's size (its `cd_values` are the filter revision, the
//! LZF version and that size, which change nothing in the stream). The filter is optional (h5py
//! sets `H5Z_FLAG_OPTIONAL`): a chunk LZF cannot shrink is stored without it, its filter mask says so.
//!
//! The stream (LibLZF's `lzf_d.c`): instructions until the input ends, each a control byte `c`.
//! `c < 32` is a literal run of `c + 1` bytes. Otherwise a back-reference: its length is `c >> 5`
//! (7: plus the next byte) + 2 bytes, its distance `((c & 31) << 8) + next byte + 1` (at most 8 KiB);
//! a reference may overlap the bytes it produces (a repeated pattern).
//!
//! Hostile input: every read and copy is checked; the output never exceeds the caller's limit, which
//! is bounded by the chunk's shape (never by a number in the file), and a reference may not reach
//! before the start of the output.

use super::CodecError;

/// The name errors carry.
const NAME: &str = "lzf";

/// Decodes one chunk's LZF stream into at most `limit` bytes.
///
/// # Errors
/// [`CodecError::Truncated`] for a stream that ends inside an instruction,
/// [`CodecError::DecodedTooLong`] when the output would pass `limit`, [`CodecError::Corrupt`] for a
/// reference before the start of the output.
pub(super) fn decompress(input: &[u8], limit: usize) -> Result<Vec<u8>, CodecError> {
    // LZF expands at most ~1 + 264/3 times (a reference of 3 bytes making 264): bounded by both.
    let mut out = Vec::with_capacity(limit.min(input.len().saturating_mul(88)));
    let truncated = || CodecError::Truncated { codec: NAME, len: input.len() };
    let mut ip = 0;
    while ip < input.len() {
        let control = usize::from(input[ip]);
        ip += 1;
        if control < 32 {
            let n = control + 1;
            let run = input.get(ip..ip + n).ok_or_else(truncated)?;
            reserve(&out, n, limit)?;
            out.extend_from_slice(run);
            ip += n;
            continue;
        }
        let mut length = control >> 5;
        if length == 7 {
            length += usize::from(*input.get(ip).ok_or_else(truncated)?);
            ip += 1;
        }
        let low = usize::from(*input.get(ip).ok_or_else(truncated)?);
        ip += 1;
        copy_back(&mut out, ((control & 31) << 8) + low + 1, length + 2, limit)?;
    }
    Ok(out)
}

fn reserve(out: &[u8], n: usize, limit: usize) -> Result<(), CodecError> {
    match out.len().checked_add(n) {
        Some(end) if end <= limit => Ok(()),
        _ => Err(CodecError::DecodedTooLong { codec: NAME, limit }),
    }
}

/// Appends `n` bytes copied from `distance` bytes back (an overlapping copy repeats the pattern).
fn copy_back(out: &mut Vec<u8>, distance: usize, n: usize, limit: usize) -> Result<(), CodecError> {
    let Some(start) = out.len().checked_sub(distance) else {
        let what = format!("a reference {distance} bytes back, {} bytes into the output", out.len());
        return Err(CodecError::Corrupt { codec: NAME, source: std::io::Error::other(what) });
    };
    reserve(out, n, limit)?;
    if distance >= n {
        out.extend_from_within(start..start + n);
    } else {
        for i in 0..n {
            let b = out[start + i];
            out.push(b);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A chunk h5py 3.16 wrote with `compression="lzf"` (`Dataset.id.read_direct_chunk`): 128 bytes,
    /// `i % 7` for i < 48, 40 zeros, then 100..140: literals, overlapping references with a length
    /// byte, and literal runs of the longest length (32 bytes).
    const STREAM: &[u8] = &[
        7, 0, 1, 2, 3, 4, 5, 6, 0, 224, 31, 6, 0, 0, 224, 30, 0, 31, 100, 101, 102, 103, 104, 105, 106, 107, 108, 109,
        110, 111, 112, 113, 114, 115, 116, 117, 118, 119, 120, 121, 122, 123, 124, 125, 126, 127, 128, 129, 130, 131,
        7, 132, 133, 134, 135, 136, 137, 138, 139,
    ];

    fn expected() -> Vec<u8> {
        let mut v: Vec<u8> = (0..48).map(|i| i % 7).collect();
        v.extend([0u8; 40]);
        v.extend(100..140);
        v
    }

    #[test]
    fn decodes_literals_and_overlapping_references() {
        assert_eq!(decompress(STREAM, 1 << 20).unwrap(), expected());
        assert_eq!(decompress(&[], 10).unwrap(), Vec::<u8>::new());
    }

    #[test]
    fn the_limit_bounds_the_output() {
        let n = expected().len();
        assert_eq!(decompress(STREAM, n).unwrap().len(), n);
        assert!(matches!(decompress(STREAM, n - 1), Err(CodecError::DecodedTooLong { limit, .. }) if limit == n - 1));
    }

    #[test]
    fn hostile_streams_fail_cleanly() {
        // A literal run cut short; a reference cut inside it; a reference before the output.
        for (bad, what) in
            [(&[5u8, 1, 2][..], "truncated"), (&[0, 1, 0xe0][..], "truncated"), (&[0, 1, 0x20, 4], "corrupt")]
        {
            let err = decompress(bad, 100).unwrap_err();
            let ok = match what {
                "truncated" => matches!(err, CodecError::Truncated { .. }),
                _ => matches!(err, CodecError::Corrupt { .. }),
            };
            assert!(ok, "{what}: {err}");
        }
    }
}
