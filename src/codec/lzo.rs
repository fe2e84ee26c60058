//! PyTables' LZO filter (HDF5 filter 305, `H5Zlzo.c`): one LZO1X stream per chunk, decoded in pure
//! Rust.
//!
//! Stage: inside [`crate::codec`]; a [`super::SourceFilter`], decoded only (no Zarr codec names it:
//! vzarr stores such chunks re-encoded, see `scan/rewrite`).
//!
//! Framing: none. The filter writes `lzo1x_1_compress`'s output as it is and reads it back with
//! `lzo1x_decompress_safe`; its `cd_values` (level, table version, object type) change nothing, and
//! the checksum PyTables 0.5-0.7 appended is compiled out since PyTables 0.8, so a stream must end
//! exactly at its end-of-stream marker (liblzo's "input not consumed" is an error the filter fails
//! on).
//!
//! The stream (liblzo's `lzo1x_d.ch`): instructions, each a byte `t` and its operands. A first byte
//! above 17 is a literal run of t - 17 bytes. Then, in a loop: t < 16 after a match that ended with
//! no literals is a literal run of t + 3 bytes (t = 0: 15 + the following length bytes, 255 for each
//! zero byte); t < 16 right after a literal run of 4 or more is a 3-byte match at distance
//! 2049 + (t >> 2) + (next << 2); t < 16 after 1-3 literals a 2-byte match at distance
//! 1 + (t >> 2) + (next << 2); t >= 64 a match of 3-8 bytes within 2 KiB; 32 <= t < 64 a match of
//! t & 31 + 2 bytes (extended as literals are) within 16 KiB; 16 <= t < 32 a match within 48 KiB,
//! whose distance 0 marks the end of the stream. The low two bits of a match's last distance byte
//! are the number of literals (0-3) that follow it.
//!
//! Hostile input: every read and copy is checked; the output never exceeds the caller's limit, which
//! is bounded by the chunk's shape, and a match may not reach before the start of the output.

use super::CodecError;

/// The name errors carry.
const NAME: &str = "lzo";

/// Decodes one chunk's LZO1X stream into at most `limit` bytes.
///
/// # Errors
/// [`CodecError::Truncated`] for a stream that ends before its end marker,
/// [`CodecError::DecodedTooLong`] when the output would pass `limit`, [`CodecError::Corrupt`] for a
/// match before the start of the output or bytes after the end marker.
pub(super) fn decompress(input: &[u8], limit: usize) -> Result<Vec<u8>, CodecError> {
    let mut d = Decoder { input, ip: 0, out: Vec::with_capacity(limit.min(input.len().saturating_mul(4))), limit };
    d.run()?;
    if d.ip != input.len() {
        return Err(corrupt(format!("{} bytes after the end of the stream", input.len() - d.ip)));
    }
    Ok(d.out)
}

fn corrupt(what: String) -> CodecError {
    CodecError::Corrupt { codec: NAME, source: std::io::Error::other(what) }
}

struct Decoder<'a> {
    input: &'a [u8],
    ip: usize,
    out: Vec<u8>,
    limit: usize,
}

/// What the decoder expects next.
enum Next {
    /// An instruction after a match with no trailing literals (t < 16: a literal run).
    Instruction,
    /// An instruction right after a literal run of 4 or more (t < 16: a 3-byte match).
    AfterLongRun,
    /// An instruction after 1-3 literals (t < 16: a 2-byte match).
    AfterShortRun,
}

impl Decoder<'_> {
    fn byte(&mut self) -> Result<usize, CodecError> {
        let b = *self.input.get(self.ip).ok_or(CodecError::Truncated { codec: NAME, len: self.input.len() })?;
        self.ip += 1;
        Ok(usize::from(b))
    }

    /// A length of `base` + the extension bytes (each 0 adds 255, the first non-zero ends it).
    fn extended(&mut self, base: usize) -> Result<usize, CodecError> {
        let mut length = base;
        loop {
            match self.byte()? {
                0 => length = length.saturating_add(255),
                b => return Ok(length.saturating_add(b)),
            }
        }
    }

    fn literals(&mut self, n: usize) -> Result<(), CodecError> {
        let end = self.ip.checked_add(n).filter(|&e| e <= self.input.len());
        let Some(end) = end else { return Err(CodecError::Truncated { codec: NAME, len: self.input.len() }) };
        self.reserve(n)?;
        self.out.extend_from_slice(&self.input[self.ip..end]);
        self.ip = end;
        Ok(())
    }

    fn reserve(&self, n: usize) -> Result<(), CodecError> {
        match self.out.len().checked_add(n) {
            Some(end) if end <= self.limit => Ok(()),
            _ => Err(CodecError::DecodedTooLong { codec: NAME, limit: self.limit }),
        }
    }

    /// Copies `n` bytes from `distance` bytes back (overlapping copies repeat the pattern).
    fn copy_match(&mut self, distance: usize, n: usize) -> Result<(), CodecError> {
        let Some(start) = self.out.len().checked_sub(distance) else {
            return Err(corrupt(format!("a match {distance} bytes back, {} bytes into the output", self.out.len())));
        };
        self.reserve(n)?;
        if distance >= n {
            self.out.extend_from_within(start..start + n);
        } else {
            for i in 0..n {
                let b = self.out[start + i];
                self.out.push(b);
            }
        }
        Ok(())
    }

    /// The low two bits of the byte before the last read: the literals that follow a match.
    fn trailing_literals(&self) -> usize {
        usize::from(self.input[self.ip - 2] & 3)
    }

    fn run(&mut self) -> Result<(), CodecError> {
        let mut next = Next::Instruction;
        if self.input.first().is_some_and(|&b| b > 17) {
            let n = self.byte()? - 17;
            self.literals(n)?;
            next = if n < 4 { Next::AfterShortRun } else { Next::AfterLongRun };
        }
        loop {
            let t = self.byte()?;
            if t < 16 {
                match next {
                    Next::Instruction => {
                        let n = if t == 0 { self.extended(15)? } else { t };
                        self.literals(n.saturating_add(3))?;
                        next = Next::AfterLongRun;
                        continue;
                    }
                    Next::AfterLongRun => {
                        let distance = 1 + 0x800 + (t >> 2) + (self.byte()? << 2);
                        self.copy_match(distance, 3)?;
                    }
                    Next::AfterShortRun => {
                        let distance = 1 + (t >> 2) + (self.byte()? << 2);
                        self.copy_match(distance, 2)?;
                    }
                }
            } else if t >= 64 {
                let distance = 1 + ((t >> 2) & 7) + (self.byte()? << 3);
                self.copy_match(distance, (t >> 5) + 1)?;
            } else if t >= 32 {
                let n = if t & 31 == 0 { self.extended(31)? } else { t & 31 };
                let distance = 1 + ((self.byte()? | (self.byte()? << 8)) >> 2);
                self.copy_match(distance, n.saturating_add(2))?;
            } else {
                let high = (t & 8) << 11;
                let n = if t & 7 == 0 { self.extended(7)? } else { t & 7 };
                let distance = high + ((self.byte()? | (self.byte()? << 8)) >> 2);
                if distance == 0 {
                    return Ok(());
                }
                self.copy_match(distance + 0x4000, n.saturating_add(2))?;
            }
            let n = self.trailing_literals();
            if n == 0 {
                next = Next::Instruction;
            } else {
                self.literals(n)?;
                next = Next::AfterShortRun;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_a_known_stream() {
        // A first literal run of 4 (byte 21), an M2 match (t = 0b100_010_00: (t >> 5) + 1 = 5 bytes at
        // distance 1 + 2 = 3, no literals after it), the end marker (M4 at distance 0).
        let stream = [21, b'a', b'b', b'c', b'd', 0b1000_1000, 0, 0x11, 0, 0];
        assert_eq!(decompress(&stream, 100).unwrap(), b"abcdbcdbc");
        // A first run of 2 literals, then a 2-byte M1 match at distance 1 + (4 >> 2) = 2 followed by
        // one literal (the low bits of its byte t = 0b0101), then the end marker.
        let stream = [19, b'x', b'y', 0b0101, 0, b'z', 0x11, 0, 0];
        assert_eq!(decompress(&stream, 100).unwrap(), b"xyxyz");
    }

    #[test]
    fn long_literal_run_and_end_marker() {
        // Instruction 0 with one extension byte 0 and then 10: 15 + 255 + 10 + 3 = 283 literals.
        let data: Vec<u8> = (0..283u32).map(|i| (i * 7) as u8).collect();
        // A first byte of 17 is an instruction: the end marker of an empty stream.
        assert_eq!(decompress(&[0x11, 0, 0], 0).unwrap(), b"");
        let mut stream = vec![0, 0, 10];
        stream.extend(&data);
        stream.extend([0x11, 0, 0]);
        assert_eq!(decompress(&stream, 283).unwrap(), data);
        assert!(matches!(decompress(&stream, 282), Err(CodecError::DecodedTooLong { .. })));
    }

    #[test]
    fn hostile_streams_fail_cleanly() {
        // A match before the start of the output.
        assert!(decompress(&[21, b'a', b'b', b'c', b'd', 0xff, 0xff, 0x11, 0, 0], 100).is_err());
        // Bytes after the end marker.
        assert!(matches!(decompress(&[0x11, 0, 0, 0], 100), Err(CodecError::Corrupt { .. })));
        // Truncations of a valid stream.
        let stream = [21, b'a', b'b', b'c', b'd', 0b1000_1000, 0, 0x11, 0, 0];
        for len in 0..stream.len() {
            assert!(decompress(&stream[..len], 100).is_err(), "{len}");
        }
        // Long zero runs cannot allocate past the limit.
        let mut zeros = vec![0u8; 10_000];
        zeros.push(1);
        assert!(decompress(&zeros, 1000).is_err());
        let mut state = 1u32;
        for len in 0..200 {
            let noise: Vec<u8> = (0..len)
                .map(|_| {
                    state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                    (state >> 24) as u8
                })
                .collect();
            let _ = decompress(&noise, 4096);
        }
    }
}
