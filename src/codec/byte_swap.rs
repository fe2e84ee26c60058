//! How elements change between their stored byte order and the native one: every `unit` bytes
//! reversed (numbers; each part of a complex number), or field by field (the Zarr `struct` data type,
//! whose multi-byte fields all take the `bytes` codec's byte order; zarr-extensions `struct`).

use super::swap_bytes;

/// A run of bytes inside an element that reverses in groups of `unit` bytes (a multi-byte field of a
/// struct, or one part of a complex field).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SwapSpan {
    /// Where the run starts in the element.
    pub offset: usize,
    /// Bytes in the run (a multiple of `unit`).
    pub len: usize,
    /// Bytes reversed together (at least 2).
    pub unit: usize,
}

/// The byte-swapping rule of one data type (`DataType::byte_swap`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ByteSwap {
    /// Reverse every group of this many bytes (1: bytes, never swapped).
    Unit(usize),
    /// Reverse each multi-byte run of every element of `size` bytes (a struct's fields).
    Fields {
        /// Bytes per element.
        size: usize,
        /// The runs that reverse, in element order.
        spans: &'static [SwapSpan],
    },
}

impl From<usize> for ByteSwap {
    fn from(unit: usize) -> Self {
        ByteSwap::Unit(unit)
    }
}

impl ByteSwap {
    /// The byte length every buffer must be a multiple of: the unit, or the struct's size.
    pub fn granule(self) -> usize {
        match self {
            ByteSwap::Unit(unit) => unit,
            ByteSwap::Fields { size, .. } => size,
        }
    }

    /// Whether any byte moves when the order changes.
    pub fn reorders(self) -> bool {
        match self {
            ByteSwap::Unit(unit) => unit > 1,
            ByteSwap::Fields { spans, .. } => !spans.is_empty(),
        }
    }

    /// Reverses the byte order of every element of `buf` in place (stored <-> native); trailing bytes
    /// short of a whole element are left as they are.
    pub fn apply(self, buf: &mut [u8]) {
        match self {
            ByteSwap::Unit(unit) => swap_bytes(buf, unit),
            ByteSwap::Fields { size, spans } => {
                for element in buf.chunks_exact_mut(size.max(1)) {
                    for span in spans {
                        swap_bytes(&mut element[span.offset..span.offset + span.len], span.unit);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_span_swaps_by_its_own_unit() {
        const SPANS: [SwapSpan; 3] = [
            SwapSpan { offset: 0, len: 2, unit: 2 },
            SwapSpan { offset: 3, len: 8, unit: 4 },
            SwapSpan { offset: 13, len: 2, unit: 2 },
        ];
        let swap = ByteSwap::Fields { size: 15, spans: &SPANS };
        let mut elements: Vec<u8> = (0..30).collect();
        swap.apply(&mut elements);
        let first = [1, 0, 2, 6, 5, 4, 3, 10, 9, 8, 7, 11, 12, 14, 13];
        let second: Vec<u8> = first.iter().map(|b| b + 15).collect();
        assert_eq!(elements[..15], first);
        assert_eq!(elements[15..], second[..]);
        assert_eq!((swap.granule(), swap.reorders()), (15, true));
        assert!(!ByteSwap::Fields { size: 4, spans: &[] }.reorders());
    }
}
