//! How elements change between their stored byte order and the native one: every `unit` bytes
//! reversed (numbers; each part of a complex number), or field by field (the Zarr `struct` data type,
//! whose multi-byte fields all take the `bytes` codec's byte order; zarr-extensions `struct`).

use super::swap_bytes;
use crate::metadata::{DataType, StructType};

/// The byte-swapping rule of one data type (`DataType::byte_swap`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ByteSwap {
    /// Reverse every group of this many bytes (1: bytes, never swapped).
    Unit(usize),
    /// Reverse each multi-byte field of every struct element.
    Fields(&'static StructType),
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
            ByteSwap::Fields(s) => s.size(),
        }
    }

    /// Whether any byte moves when the order changes.
    pub fn reorders(self) -> bool {
        match self {
            ByteSwap::Unit(unit) => unit > 1,
            ByteSwap::Fields(s) => s.has_multi_byte_fields(),
        }
    }

    /// Reverses the byte order of every element of `buf` in place (stored <-> native); trailing bytes
    /// short of a whole element are left as they are.
    pub fn apply(self, buf: &mut [u8]) {
        match self {
            ByteSwap::Unit(unit) => swap_bytes(buf, unit),
            ByteSwap::Fields(s) => buf.chunks_exact_mut(s.size().max(1)).for_each(|element| swap_fields(s, element)),
        }
    }
}

/// Swaps the fields of one struct element.
fn swap_fields(s: &StructType, element: &mut [u8]) {
    for (offset, field) in s.offsets() {
        let bytes = &mut element[offset..offset + field.data_type.size()];
        match field.data_type {
            DataType::Struct(inner) => swap_fields(inner, bytes),
            t => swap_bytes(bytes, t.swap_unit()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata::StructField;

    #[test]
    fn struct_fields_swap_each_by_its_own_unit() {
        let field = |name: &str, data_type| StructField { name: name.into(), data_type };
        let inner = StructType::intern(vec![field("c", DataType::Complex64), field("t", DataType::FixedBytes(2))]);
        let s = StructType::intern(vec![
            field("a", DataType::Int16),
            field("b", DataType::UInt8),
            field("p", DataType::Struct(inner.unwrap())),
        ])
        .unwrap();
        let mut element: Vec<u8> = (0..13).collect();
        ByteSwap::Fields(s).apply(&mut element);
        assert_eq!(element, [1, 0, 2, 6, 5, 4, 3, 10, 9, 8, 7, 11, 12]);
        assert_eq!((ByteSwap::Fields(s).granule(), ByteSwap::Fields(s).reorders()), (13, true));
    }
}
