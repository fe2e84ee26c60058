//! LEB128 varints, zigzag mapping and a bounds-checked byte cursor.
//!
//! Stage: pure helpers for the `manifest.bin` and `sources.bin` encoders and decoders
//! (`docs/design/001-manifest-format.md`, "Varints").
//!
//! - Unsigned LEB128: 7 bits per byte, least significant group first, high bit set on every byte
//!   but the last. A `u64` takes 1 to 10 bytes. Decoding accepts only the canonical (shortest)
//!   encoding, so every value has exactly one byte representation.
//! - Zigzag maps `i64` to `u64` so that small magnitudes of either sign stay short:
//!   0, -1, 1, -2, 2 ... become 0, 1, 2, 3, 4 ...

use super::DecodeError;

/// Largest number of bytes in the LEB128 encoding of a `u64`.
pub(crate) const MAX_VARINT_LEN: usize = 10;

/// Appends the LEB128 encoding of `value` to `out`.
#[allow(clippy::cast_possible_truncation)] // keeping the low 7 bits is the point
pub(crate) fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value & 0x7f) as u8 | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// Maps a signed value to an unsigned one, small magnitudes to small values.
#[allow(clippy::cast_sign_loss)] // a bit-level reinterpretation
pub(crate) fn zigzag(value: i64) -> u64 {
    ((value << 1) ^ (value >> 63)) as u64
}

/// Inverse of [`zigzag`].
#[allow(clippy::cast_possible_wrap)] // a bit-level reinterpretation
pub(crate) fn unzigzag(value: u64) -> i64 {
    ((value >> 1) as i64) ^ -((value & 1) as i64)
}

/// Zigzag code of the step from `prev` to `next`, taken modulo 2^64: any `next` is reachable
/// from any `prev`, and steps of small magnitude in either direction get small codes.
#[allow(clippy::cast_possible_wrap)] // modular arithmetic: the bits are the value
pub(crate) fn delta_code(prev: u64, next: u64) -> u64 {
    zigzag(next.wrapping_sub(prev) as i64)
}

/// Inverse of [`delta_code`]: the value reached from `prev` by the step `code` encodes.
#[allow(clippy::cast_sign_loss)] // modular arithmetic: the bits are the value
pub(crate) fn apply_delta(prev: u64, code: u64) -> u64 {
    prev.wrapping_add(unzigzag(code) as u64)
}

/// A read position in a byte slice; every read is bounds-checked and never panics.
#[derive(Debug, Clone)]
pub(crate) struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    /// A cursor at the start of `bytes`.
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Self { bytes, pos: 0 }
    }

    /// Current position in bytes from the start.
    pub(crate) fn position(&self) -> u64 {
        self.pos as u64
    }

    /// Number of bytes not read yet.
    pub(crate) fn remaining(&self) -> usize {
        self.bytes.len().saturating_sub(self.pos)
    }

    /// Reads one byte.
    pub(crate) fn read_u8(&mut self) -> Result<u8, DecodeError> {
        let byte = *self.bytes.get(self.pos).ok_or(DecodeError::UnexpectedEnd)?;
        self.pos += 1;
        Ok(byte)
    }

    /// Reads `len` bytes.
    pub(crate) fn read_bytes(&mut self, len: u64) -> Result<&'a [u8], DecodeError> {
        let len = usize::try_from(len).map_err(|_| DecodeError::UnexpectedEnd)?;
        if len > self.remaining() {
            return Err(DecodeError::UnexpectedEnd);
        }
        let start = self.pos;
        self.pos += len;
        self.bytes.get(start..self.pos).ok_or(DecodeError::UnexpectedEnd)
    }

    /// Reads a canonical LEB128 varint.
    pub(crate) fn read_varint(&mut self) -> Result<u64, DecodeError> {
        let mut value = 0u64;
        for i in 0..MAX_VARINT_LEN {
            let byte = self.read_u8()?;
            let group = u64::from(byte & 0x7f);
            // The tenth byte may only carry the single remaining bit of a u64.
            if i == MAX_VARINT_LEN - 1 && byte > 1 {
                return Err(DecodeError::VarintOverflow);
            }
            value |= group << (7 * i);
            if byte & 0x80 == 0 {
                if byte == 0 && i > 0 {
                    return Err(DecodeError::VarintNotMinimal);
                }
                return Ok(value);
            }
        }
        Err(DecodeError::VarintOverflow)
    }

    /// Reads a zigzag-encoded signed varint.
    pub(crate) fn read_zigzag(&mut self) -> Result<i64, DecodeError> {
        self.read_varint().map(unzigzag)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn encode(value: u64) -> Vec<u8> {
        let mut out = Vec::new();
        put_varint(&mut out, value);
        out
    }

    #[test]
    fn known_leb128_encodings() {
        assert_eq!(encode(0), [0x00]);
        assert_eq!(encode(1), [0x01]);
        assert_eq!(encode(127), [0x7f]);
        assert_eq!(encode(128), [0x80, 0x01]);
        assert_eq!(encode(300), [0xac, 0x02]);
        assert_eq!(encode(624_485), [0xe5, 0x8e, 0x26]);
        let max = encode(u64::MAX);
        assert_eq!(max.len(), 10);
        assert_eq!(max[9], 0x01);
        assert!(max[..9].iter().all(|&b| b == 0xff));
    }

    #[test]
    fn known_zigzag_values() {
        let table = [(0i64, 0u64), (-1, 1), (1, 2), (-2, 3), (2, 4), (i64::MAX, u64::MAX - 1), (i64::MIN, u64::MAX)];
        for (signed, unsigned) in table {
            assert_eq!(zigzag(signed), unsigned, "zigzag({signed})");
            assert_eq!(unzigzag(unsigned), signed, "unzigzag({unsigned})");
        }
    }

    #[test]
    fn rejects_overflow_and_non_minimal() {
        let mut eleven = vec![0xff; 10];
        eleven.push(0x01);
        assert_eq!(Cursor::new(&eleven).read_varint(), Err(DecodeError::VarintOverflow));
        let mut big_tenth = vec![0xff; 9];
        big_tenth.push(0x02);
        assert_eq!(Cursor::new(&big_tenth).read_varint(), Err(DecodeError::VarintOverflow));
        assert_eq!(Cursor::new(&[0x80, 0x00]).read_varint(), Err(DecodeError::VarintNotMinimal));
        assert_eq!(Cursor::new(&[0x80]).read_varint(), Err(DecodeError::UnexpectedEnd));
        assert_eq!(Cursor::new(&[]).read_varint(), Err(DecodeError::UnexpectedEnd));
    }

    #[test]
    fn cursor_bounds() {
        let mut c = Cursor::new(&[1, 2, 3]);
        assert_eq!(c.read_bytes(2), Ok(&[1u8, 2][..]));
        assert_eq!(c.remaining(), 1);
        assert_eq!(c.read_bytes(2), Err(DecodeError::UnexpectedEnd));
        assert_eq!(c.read_bytes(u64::MAX), Err(DecodeError::UnexpectedEnd));
        assert_eq!(c.read_u8(), Ok(3));
        assert_eq!(c.position(), 3);
        assert_eq!(c.read_u8(), Err(DecodeError::UnexpectedEnd));
    }

    proptest! {
        #[test]
        fn varint_round_trip(value in any::<u64>()) {
            let bytes = encode(value);
            let mut cursor = Cursor::new(&bytes);
            prop_assert_eq!(cursor.read_varint(), Ok(value));
            prop_assert_eq!(cursor.remaining(), 0);
            // Length is the number of 7-bit groups needed.
            let bits = 64 - value.leading_zeros() as usize;
            prop_assert_eq!(bytes.len(), bits.div_ceil(7).max(1));
        }

        #[test]
        fn zigzag_round_trip(value in any::<i64>()) {
            prop_assert_eq!(unzigzag(zigzag(value)), value);
            // Small magnitudes map to small codes: |v| <= zigzag(v) <= 2|v|.
            let magnitude = value.unsigned_abs();
            prop_assert!(zigzag(value) <= magnitude.saturating_mul(2));
            prop_assert!(zigzag(value) >= magnitude);
        }

        #[test]
        fn delta_round_trip(prev in any::<u64>(), next in any::<u64>(), step in -1000i64..1000) {
            prop_assert_eq!(apply_delta(prev, delta_code(prev, next)), next);
            // Short steps in either direction give short codes, even across u64::MAX.
            let near = prev.wrapping_add_signed(step);
            prop_assert_eq!(delta_code(prev, near), zigzag(step));
        }

        #[test]
        fn decoding_any_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..16)) {
            let mut cursor = Cursor::new(&bytes);
            if let Ok(value) = cursor.read_varint() {
                // Canonical: re-encoding gives back exactly the bytes consumed.
                let consumed = usize::try_from(cursor.position()).unwrap_or(usize::MAX);
                prop_assert_eq!(&encode(value)[..], &bytes[..consumed]);
            }
        }
    }
}
