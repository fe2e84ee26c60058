//! HDF5 fletcher32 (filter 3) = `numcodecs.fletcher32`: a 4-byte checksum appended to the data.
//!
//! Stage: inside [`crate::codec`]. Encode appends 4 bytes; decode verifies and strips them.
//!
//! The checksum is exactly HDF5's `H5_checksum_fletcher32` (`src/H5checksum.c`): 16-bit words
//! formed BIG-endian from byte pairs (`b[0] << 8 | b[1]`), an odd trailing byte taken as the
//! high byte of a last word, sums folded (`(s & 0xffff) + (s >> 16)`) after every block of 360
//! words and once more at the end, result `sum2 << 16 | sum1`. Sums start at 0, not 0xffff, so
//! this differs from the textbook Fletcher-32.
//!
//! Storage (`src/H5Zfletcher32.c`): the checksum is written after the data with `UINT32ENCODE`,
//! i.e. little-endian, which is also what `numcodecs.fletcher32` writes (`struct.pack("<I")`).
//! Like HDF5's reader (and unlike numcodecs), decode also accepts the checksum with the bytes of
//! each 16-bit half swapped: HDF5 before 1.6.3 wrote that on little-endian machines.

use std::borrow::Cow;

use super::CodecError;

/// Number of bytes the checksum adds.
pub(super) const CHECKSUM_LEN: usize = 4;

/// HDF5's fletcher32 checksum of `data` (`H5_checksum_fletcher32`).
#[must_use]
pub(crate) fn checksum(data: &[u8]) -> u32 {
    fn fold(s: u32) -> u32 {
        (s & 0xffff) + (s >> 16)
    }
    let (mut sum1, mut sum2) = (0u32, 0u32);
    let (words, rest) = data.split_at(data.len() & !1);
    // 360 words per block: the most HDF5 sums before folding (no u32 overflow).
    for block in words.chunks(2 * 360) {
        for word in block.chunks_exact(2) {
            let w = u32::from(word[0]) << 8 | u32::from(word[1]);
            sum1 = sum1.wrapping_add(w);
            sum2 = sum2.wrapping_add(sum1);
        }
        sum1 = fold(sum1);
        sum2 = fold(sum2);
    }
    if let [last] = rest {
        sum1 = sum1.wrapping_add(u32::from(*last) << 8);
        sum2 = sum2.wrapping_add(sum1);
        sum1 = fold(sum1);
        sum2 = fold(sum2);
    }
    (fold(sum2) << 16) | fold(sum1)
}

/// Appends the checksum of `data` to it, little-endian.
pub(super) fn append(data: &mut Vec<u8>) {
    let sum = checksum(data);
    data.extend_from_slice(&sum.to_le_bytes());
}

/// The checksum HDF5 < 1.6.3 stored on little-endian machines: bytes swapped within each 16-bit
/// half (`H5Z_filter_fletcher32` accepts it too).
fn legacy_reversed(sum: u32) -> u32 {
    ((sum & 0x00ff_00ff) << 8) | ((sum >> 8) & 0x00ff_00ff)
}

/// Verifies the trailing checksum of `input` and returns the data without it (no copy: a
/// borrowed input stays borrowed, an owned one is truncated).
pub(super) fn strip(input: Cow<'_, [u8]>) -> Result<Cow<'_, [u8]>, CodecError> {
    let len = input.len();
    let Some(data_len) = len.checked_sub(CHECKSUM_LEN) else {
        return Err(CodecError::Truncated { codec: "numcodecs.fletcher32", len });
    };
    let (data, tail) = input.split_at(data_len);
    let mut stored = [0u8; CHECKSUM_LEN];
    stored.copy_from_slice(tail);
    let stored = u32::from_le_bytes(stored);
    let computed = checksum(data);
    if stored != computed && stored != legacy_reversed(computed) {
        return Err(CodecError::ChecksumMismatch { stored, computed });
    }
    Ok(match input {
        Cow::Borrowed(bytes) => Cow::Borrowed(&bytes[..data_len]),
        Cow::Owned(mut bytes) => {
            bytes.truncate(data_len);
            Cow::Owned(bytes)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Ten little-endian int64 values followed by their checksum, from numcodecs'
    /// `numcodecs/tests/test_fletcher32.py::test_known` (the same bytes appear in imagecodecs'
    /// tests of its `h5checksum_fletcher32`, a wrapper of HDF5's C function, with checksum
    /// 1686513149).
    const NUMCODECS_KNOWN: &[u8] = b"w\x07\x00\x00\x00\x00\x00\x00\x85\xf6\xff\xff\xff\xff\xff\xff\
i\x07\x00\x00\x00\x00\x00\x00\x94\xf6\xff\xff\xff\xff\xff\xff\
\x88\t\x00\x00\x00\x00\x00\x00i\x03\x00\x00\x00\x00\x00\x00\
\x93\xfd\xff\xff\xff\xff\xff\xff\xc3\xfc\xff\xff\xff\xff\xff\xff\
'\x02\x00\x00\x00\x00\x00\x00\xba\xf7\xff\xff\xff\xff\xff\xff\
\xfd%\x86d";

    /// Fletcher sums without block folding, computed with u64 and reduced by `% 65535` at the
    /// end. HDF5's folding is an end-around-carry reduction, congruent mod 65535, so the two
    /// agree mod 65535 (HDF5 may leave 0xffff where the modulus gives 0).
    fn oracle_mod(data: &[u8]) -> (u64, u64) {
        let (mut s1, mut s2) = (0u64, 0u64);
        for pair in data.chunks(2) {
            let w = u64::from(pair[0]) << 8 | pair.get(1).map_or(0, |&b| u64::from(b));
            s1 += w;
            s2 += s1;
        }
        (s1 % 65535, s2 % 65535)
    }

    #[test]
    fn known_vector_from_numcodecs() {
        let (data, tail) = NUMCODECS_KNOWN.split_at(NUMCODECS_KNOWN.len() - 4);
        assert_eq!(data.len(), 80);
        assert_eq!(checksum(data), 1_686_513_149);
        assert_eq!(tail, 1_686_513_149u32.to_le_bytes());
        let values: Vec<i64> = data.chunks_exact(8).map(|c| i64::from_le_bytes(c.try_into().unwrap())).collect();
        assert_eq!(values, [1911, -2427, 1897, -2412, 2440, 873, -621, -829, 551, -2118]);
        let stripped = strip(Cow::Borrowed(NUMCODECS_KNOWN)).unwrap();
        assert_eq!(&*stripped, data);
        let mut encoded = data.to_vec();
        append(&mut encoded);
        assert_eq!(encoded, NUMCODECS_KNOWN);
    }

    #[test]
    fn small_hand_computed_values() {
        // "ab" is one word 0x6162: sum1 = 0x6162, sum2 = 0x6162.
        assert_eq!(checksum(b"ab"), 0x6162_6162);
        // "abc": words 0x6162 and 0x6300 (odd byte is the high byte).
        // sum1 = 0x6162 + 0x6300 = 0xC462; sum2 = 0x6162 + 0xC462 = 0x125C4 -> 0x25C5.
        assert_eq!(checksum(b"abc"), 0x25C5_C462);
        assert_eq!(checksum(b""), 0);
    }

    #[test]
    fn legacy_byte_order_is_accepted() {
        let data = b"hello, fletcher".to_vec();
        let legacy = legacy_reversed(checksum(&data));
        assert_ne!(legacy, checksum(&data));
        let mut encoded = data.clone();
        encoded.extend_from_slice(&legacy.to_le_bytes());
        assert_eq!(&*strip(Cow::Owned(encoded)).unwrap(), &data[..]);
    }

    #[test]
    fn corruption_and_truncation_fail() {
        let mut encoded = b"some chunk bytes".to_vec();
        append(&mut encoded);
        for i in 0..encoded.len() {
            let mut bad = encoded.clone();
            bad[i] ^= 0x01;
            assert!(matches!(strip(Cow::Owned(bad)), Err(CodecError::ChecksumMismatch { .. })), "flipped byte {i}");
        }
        assert!(matches!(strip(Cow::Borrowed(&encoded[..3])), Err(CodecError::Truncated { len: 3, .. })));
    }

    #[test]
    fn worst_case_sums_do_not_overflow() {
        // All-0xff words make every sum as large as possible; HDF5's 360-word blocks must keep
        // the u32 sums exact, so the result stays congruent to the plain sums.
        for len in [719, 720, 721, 1440, 100_001] {
            let data = vec![0xff; len];
            let sum = checksum(&data);
            let (s1, s2) = oracle_mod(&data);
            assert_eq!(u64::from(sum & 0xffff) % 65535, s1, "len {len}");
            assert_eq!(u64::from(sum >> 16) % 65535, s2, "len {len}");
        }
    }

    proptest! {
        #[test]
        fn congruent_to_plain_fletcher(data in proptest::collection::vec(any::<u8>(), 0..3000)) {
            let sum = checksum(&data);
            let (s1, s2) = oracle_mod(&data);
            prop_assert_eq!(u64::from(sum & 0xffff) % 65535, s1);
            prop_assert_eq!(u64::from(sum >> 16) % 65535, s2);
        }

        #[test]
        fn round_trip(data in proptest::collection::vec(any::<u8>(), 0..1000)) {
            let mut encoded = data.clone();
            append(&mut encoded);
            prop_assert_eq!(encoded.len(), data.len() + CHECKSUM_LEN);
            let stripped = strip(Cow::Borrowed(&encoded)).unwrap();
            prop_assert_eq!(&*stripped, &data[..]);
        }
    }
}
