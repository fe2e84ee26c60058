//! HDF5 shuffle (filter 2) = `numcodecs.shuffle`: byte transposition by element.
//!
//! Stage: inside [`crate::codec`]. Input and output have the same length.
//!
//! Semantics (HDF5 `H5Zshuffle.c`): for `n = len / s` elements of `s` bytes, byte `j` of element
//! `i` goes to position `j * n + i`; the trailing `len % s` bytes are copied unchanged at the end.
//! `s` = 1 (or fewer than one whole element) is the identity.

/// Shuffles `src` into `dst` (same length): byte `j` of element `i` goes to `dst[j * n + i]`.
///
/// If the lengths differ, only the common prefix is shuffled as if it were the whole buffer
/// (callers always pass equal lengths).
pub(super) fn shuffle_into(src: &[u8], dst: &mut [u8], element_size: usize) {
    let len = src.len().min(dst.len());
    let (src, dst) = (&src[..len], &mut dst[..len]);
    let s = element_size.max(1);
    let n = len / s;
    let whole = n * s;
    if s > 1 && n > 0 {
        for (j, plane) in dst[..whole].chunks_exact_mut(n).enumerate() {
            for (d, element) in plane.iter_mut().zip(src.chunks_exact(s)) {
                *d = element[j];
            }
        }
    } else {
        dst[..whole].copy_from_slice(&src[..whole]);
    }
    dst[whole..].copy_from_slice(&src[whole..]);
}

/// Inverse of [`shuffle_into`]: byte `j * n + i` of `src` becomes byte `j` of element `i`.
pub(super) fn unshuffle_into(src: &[u8], dst: &mut [u8], element_size: usize) {
    let len = src.len().min(dst.len());
    let (src, dst) = (&src[..len], &mut dst[..len]);
    let s = element_size.max(1);
    let n = len / s;
    let whole = n * s;
    if s > 1 && n > 0 {
        for (j, plane) in src[..whole].chunks_exact(n).enumerate() {
            for (&b, element) in plane.iter().zip(dst.chunks_exact_mut(s)) {
                element[j] = b;
            }
        }
    } else {
        dst[..whole].copy_from_slice(&src[..whole]);
    }
    dst[whole..].copy_from_slice(&src[whole..]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The definition, written as plainly as possible.
    fn shuffle_oracle(src: &[u8], s: usize) -> Vec<u8> {
        let n = src.len() / s;
        let mut dst = src.to_vec();
        for i in 0..n {
            for j in 0..s {
                dst[j * n + i] = src[i * s + j];
            }
        }
        dst
    }

    #[test]
    fn known_example() {
        // Three 4-byte elements: all first bytes, then all second bytes, ...; 2 trailing bytes.
        let src = [1, 2, 3, 4, 11, 12, 13, 14, 21, 22, 23, 24, 98, 99];
        let mut dst = [0; 14];
        shuffle_into(&src, &mut dst, 4);
        assert_eq!(dst, [1, 11, 21, 2, 12, 22, 3, 13, 23, 4, 14, 24, 98, 99]);
        let mut back = [0; 14];
        unshuffle_into(&dst, &mut back, 4);
        assert_eq!(back, src);
    }

    #[test]
    fn identity_cases() {
        let src = [5, 6, 7];
        for s in [0, 1, 4, 8] {
            let mut dst = [0; 3];
            shuffle_into(&src, &mut dst, s);
            assert_eq!(dst, src, "element size {s}");
            unshuffle_into(&src, &mut dst, s);
            assert_eq!(dst, src, "element size {s}");
        }
    }

    proptest! {
        #[test]
        fn matches_oracle_and_round_trips(
            src in proptest::collection::vec(any::<u8>(), 0..300),
            s in 1usize..17,
        ) {
            let mut shuffled = vec![0; src.len()];
            shuffle_into(&src, &mut shuffled, s);
            prop_assert_eq!(&shuffled, &shuffle_oracle(&src, s));
            let mut back = vec![0; src.len()];
            unshuffle_into(&shuffled, &mut back, s);
            prop_assert_eq!(back, src);
        }
    }
}
