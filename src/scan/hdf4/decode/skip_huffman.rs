//! HDF4's "skipping" Huffman coding (`cskphuff.c`): adaptive semi-splay-tree coding of bytes, with one
//! tree per byte position of `skip`-byte elements (byte `i` of the stream uses tree `i % skip`).
//!
//! Each tree has internal nodes `0..256` (the root is 0) and leaves `256 + byte`. Initially node `j`
//! has children `2j` and `2j + 1` and node `i`'s parent is `i / 2`, kept in a byte, as the library
//! keeps it. A byte is decoded by walking from the root, a bit at a time (most significant bit of
//! each stream byte first; 0 left, 1 right), to a leaf; the tree is then semi-splayed around that
//! leaf. Every step mirrors the library's arithmetic, so trees evolve exactly as they did when
//! encoding.

use super::DecodeError;

/// Internal nodes (and the first leaf's index): libhdf4's `SUCCMAX`.
const SUCCMAX: usize = 256;
/// Nodes of a tree (parent pointers): libhdf4's `TWICEMAX`.
const TWICEMAX: usize = 2 * SUCCMAX + 1;
/// The root.
const ROOT: usize = 0;
/// Most trees (bytes per element) accepted: each costs about 2.5 KiB.
pub(crate) const MAX_SKIP: u32 = 1 << 12;

/// One tree: children of internal nodes and parents (as bytes) of every node.
struct Tree {
    left: [u16; SUCCMAX],
    right: [u16; SUCCMAX],
    up: [u8; TWICEMAX],
}

impl Tree {
    fn new() -> Self {
        let mut tree = Tree { left: [0; SUCCMAX], right: [0; SUCCMAX], up: [0; TWICEMAX] };
        for (i, up) in tree.up.iter_mut().enumerate() {
            *up = (i >> 1) as u8;
        }
        for j in 0..SUCCMAX {
            tree.left[j] = (j << 1) as u16;
            tree.right[j] = ((j << 1) + 1) as u16;
        }
        tree
    }

    /// Semi-splays the tree around the leaf of `plain` (`HCIcskphuff_splay`).
    fn splay(&mut self, plain: u8) {
        let mut a = usize::from(plain) + SUCCMAX;
        loop {
            let c = usize::from(self.up[a]);
            if c != ROOT {
                let d = usize::from(self.up[c]);
                let mut b = usize::from(self.left[d]);
                if c == b {
                    b = usize::from(self.right[d]);
                    self.right[d] = a as u16;
                } else {
                    self.left[d] = a as u16;
                }
                if a == usize::from(self.left[c]) {
                    self.left[c] = b as u16;
                } else {
                    self.right[c] = b as u16;
                }
                self.up[a] = d as u8;
                self.up[b] = c as u8;
                a = d;
            } else {
                a = c;
            }
            if a == ROOT {
                break;
            }
        }
    }
}

/// Decodes `length` bytes of skipping Huffman data with `skip` trees.
///
/// # Errors
/// [`DecodeError`] when `skip` is 0 or too large, or the data ends before `length` bytes are decoded.
pub(crate) fn decode(input: &[u8], skip: u32, length: usize) -> Result<Vec<u8>, DecodeError> {
    if skip == 0 || skip > MAX_SKIP {
        return Err(DecodeError::HuffmanTrees(skip));
    }
    let mut trees: Vec<Tree> = (0..skip).map(|_| Tree::new()).collect();
    let mut out = Vec::with_capacity(length);
    let mut bit = 0usize;
    let total_bits = input.len() * 8;
    let mut position = 0usize;
    while out.len() < length {
        let tree = &mut trees[position];
        let mut a = ROOT;
        loop {
            if bit >= total_bits {
                return Err(DecodeError::HuffmanShort { decoded: out.len(), length });
            }
            let set = input[bit / 8] & (0x80 >> (bit % 8)) != 0;
            bit += 1;
            a = usize::from(if set { tree.right[a] } else { tree.left[a] });
            if a >= SUCCMAX {
                break;
            }
        }
        let plain = (a - SUCCMAX) as u8;
        tree.splay(plain);
        out.push(plain);
        position = (position + 1) % skip as usize;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The encoder of `cskphuff.c`, for round trips: the path from leaf to root, written root first.
    fn encode(data: &[u8], skip: u32) -> Vec<u8> {
        let mut trees: Vec<Tree> = (0..skip).map(|_| Tree::new()).collect();
        let mut bits: Vec<bool> = Vec::new();
        for (i, &plain) in data.iter().enumerate() {
            let tree = &mut trees[i % skip as usize];
            let mut path: Vec<bool> = Vec::new();
            let mut a = usize::from(plain) + SUCCMAX;
            loop {
                let last = a;
                a = usize::from(tree.up[a]);
                path.push(usize::from(tree.right[a]) == last);
                if a == ROOT {
                    break;
                }
            }
            bits.extend(path.iter().rev().copied());
            tree.splay(plain);
        }
        bits.chunks(8).map(|b| b.iter().enumerate().fold(0u8, |acc, (k, &x)| acc | (u8::from(x) << (7 - k)))).collect()
    }

    #[test]
    fn round_trips_with_the_library_encoder() {
        let data: Vec<u8> = (0..2000u32).map(|i| ((i * 7) % 23 + (i / 100) * 3) as u8).collect();
        for skip in [1, 2, 4, 8] {
            let encoded = encode(&data, skip);
            assert_eq!(decode(&encoded, skip, data.len()).unwrap(), data, "skip {skip}");
        }
    }

    #[test]
    fn short_input_and_bad_skip_are_errors() {
        assert!(decode(&[0xff], 1, 10).is_err());
        assert!(decode(&[], 0, 1).is_err());
    }
}
