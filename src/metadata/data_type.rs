//! Zarr v3 core data types (zarr-specs v3 core, "Data types") that vzarr emits.
//!
//! Pure model: maps names to element sizes. The scanners decide which source types map here.
//! Beyond the core types: `null_terminated_bytes`, `raw_bytes`, `fixed_length_utf32` and `struct` (zarr-extensions), in the
//! spelling zarr-python 3 reads.

use serde_json::Value;

use super::struct_type::StructType;
use super::MetadataError;

/// The largest `length_bytes` (and `r<bits>` size) read from `zarr.json`: 16 MiB per element. Stores
/// are untrusted input and an element's bytes are allocated (its fill value) as soon as the metadata is
/// parsed; no source format vzarr scans has fixed-size elements anywhere near this.
pub(crate) const MAX_LENGTH_BYTES: u32 = 1 << 24;

/// Most elements of a `string` array vzarr stores or reads: the string arrays it writes (coordinates
/// of keys, string variables) have far fewer, and each element is its own allocation.
pub(crate) const MAX_STRING_ELEMENTS: u64 = 1 << 24;

/// A Zarr v3 data type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DataType {
    /// `bool`, one byte, 0 or 1.
    Bool,
    /// `int8`.
    Int8,
    /// `int16`.
    Int16,
    /// `int32`.
    Int32,
    /// `int64`.
    Int64,
    /// `uint8`.
    UInt8,
    /// `uint16`.
    UInt16,
    /// `uint32`.
    UInt32,
    /// `uint64`.
    UInt64,
    /// `float16`: IEEE 754 binary16 (HDF5's `H5T_IEEE_F16*`, NumPy `float16`).
    Float16,
    /// `float32`.
    Float32,
    /// `float64`.
    Float64,
    /// `complex64`: two `float32`, real then imaginary (HDF5 compounds of `r` and `i`, as h5py
    /// writes NumPy complex numbers).
    Complex64,
    /// `complex128`: two `float64`, real then imaginary.
    Complex128,
    /// Fixed-width byte strings of this many bytes (`null_terminated_bytes`, NumPy `S<n>`): netCDF
    /// character arrays with their last dimension folded into the element.
    FixedBytes(u32),
    /// `string`: variable-length UTF-8 strings (stored with the `vlen-utf8` codec). vzarr writes it
    /// only for store-owned coordinates of new dimensions; it has no fixed element size ([`size`] is
    /// 0) and the reader returns it as fixed-width bytes.
    ///
    /// [`size`]: DataType::size
    String,
    /// Raw bytes of this many bytes, no byte order (HDF5 opaque types): `raw_bytes` with
    /// `length_bytes`, which zarr-python 3 reads as NumPy `V<n>` (it does not read the core spec's
    /// `r<bits>`, which vzarr also accepts when reading).
    RawBytes(u32),
    /// Fixed-width Unicode strings of this many bytes (`fixed_length_utf32` with `length_bytes`, NumPy
    /// `U<n/4>`): UTF-32 code points, NUL-padded, in the `bytes` codec's byte order. vzarr writes it
    /// for the text fields of HDF5 compounds whose variable-length strings or object references it
    /// stores itself (the widest value's code points).
    FixedUtf32(u32),
    /// `struct`: packed named fields (HDF5 compound types), read by zarr-python 3 as a NumPy
    /// structured dtype. Its multi-byte fields take the `bytes` codec's byte order, and swap one by
    /// one ([`DataType::byte_swap`]).
    Struct(&'static StructType),
}

impl DataType {
    /// Every data type, for tests and lookups.
    pub const ALL: [DataType; 14] = [
        DataType::Bool,
        DataType::Int8,
        DataType::Int16,
        DataType::Int32,
        DataType::Int64,
        DataType::UInt8,
        DataType::UInt16,
        DataType::UInt32,
        DataType::UInt64,
        DataType::Float16,
        DataType::Float32,
        DataType::Float64,
        DataType::Complex64,
        DataType::Complex128,
    ];

    /// Native-order elements of this type converted to f64 (exact for all but 64-bit integers
    /// beyond 2^53; NaN for byte strings and complex numbers). A trailing partial element is ignored.
    pub fn values_to_f64(self, bytes: &[u8]) -> Vec<f64> {
        fn ne<const N: usize>(b: &[u8]) -> [u8; N] {
            let mut out = [0u8; N];
            out.copy_from_slice(&b[..N]);
            out
        }
        bytes
            .chunks_exact(self.size().max(1))
            .map(|b| match self {
                DataType::Bool | DataType::UInt8 => f64::from(b[0]),
                DataType::Int8 => f64::from(b[0] as i8),
                DataType::Int16 => f64::from(i16::from_ne_bytes(ne(b))),
                DataType::Int32 => f64::from(i32::from_ne_bytes(ne(b))),
                DataType::Int64 => i64::from_ne_bytes(ne(b)) as f64,
                DataType::UInt16 => f64::from(u16::from_ne_bytes(ne(b))),
                DataType::UInt32 => f64::from(u32::from_ne_bytes(ne(b))),
                DataType::UInt64 => u64::from_ne_bytes(ne(b)) as f64,
                DataType::Float16 => f16_to_f64(u16::from_ne_bytes(ne(b))),
                DataType::Float32 => f64::from(f32::from_ne_bytes(ne(b))),
                DataType::Float64 => f64::from_ne_bytes(ne(b)),
                DataType::Complex64
                | DataType::Complex128
                | DataType::FixedBytes(_)
                | DataType::String
                | DataType::RawBytes(_)
                | DataType::FixedUtf32(_)
                | DataType::Struct(_) => f64::NAN,
            })
            .collect()
    }

    /// The name used in `zarr.json` (for [`DataType::FixedBytes`] its configuration is in
    /// [`DataType::to_json`]).
    pub fn name(self) -> &'static str {
        match self {
            DataType::Bool => "bool",
            DataType::Int8 => "int8",
            DataType::Int16 => "int16",
            DataType::Int32 => "int32",
            DataType::Int64 => "int64",
            DataType::UInt8 => "uint8",
            DataType::UInt16 => "uint16",
            DataType::UInt32 => "uint32",
            DataType::UInt64 => "uint64",
            DataType::Float16 => "float16",
            DataType::Float32 => "float32",
            DataType::Float64 => "float64",
            DataType::Complex64 => "complex64",
            DataType::Complex128 => "complex128",
            DataType::FixedBytes(_) => "null_terminated_bytes",
            DataType::String => "string",
            DataType::RawBytes(_) => "raw_bytes",
            DataType::FixedUtf32(_) => "fixed_length_utf32",
            DataType::Struct(_) => "struct",
        }
    }

    /// The `data_type` JSON.
    pub fn to_json(self) -> Value {
        match self {
            DataType::FixedBytes(n) | DataType::RawBytes(n) | DataType::FixedUtf32(n) => {
                serde_json::json!({"name": self.name(), "configuration": {"length_bytes": n}})
            }
            DataType::Struct(s) => s.to_json(),
            t => Value::from(t.name()),
        }
    }

    /// How elements change between stored and native byte order: by [`DataType::swap_unit`], or
    /// field by field for structs.
    pub fn byte_swap(self) -> crate::codec::ByteSwap {
        match self {
            DataType::Struct(s) => crate::codec::ByteSwap::Fields { size: s.size(), spans: s.swap_spans() },
            t => crate::codec::ByteSwap::Unit(t.swap_unit()),
        }
    }

    /// The byte-swapping unit: the element size for numbers, each part's for complex numbers, a code
    /// point's for UTF-32 strings, 1 for bytes and for structs (whose fields swap one by one:
    /// [`DataType::byte_swap`]).
    pub fn swap_unit(self) -> usize {
        match self {
            DataType::FixedBytes(_) | DataType::String | DataType::RawBytes(_) | DataType::Struct(_) => 1,
            DataType::Complex64 | DataType::FixedUtf32(_) => 4,
            DataType::Complex128 => 8,
            t => t.size(),
        }
    }

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            DataType::Bool | DataType::Int8 | DataType::UInt8 => 1,
            DataType::Int16 | DataType::UInt16 | DataType::Float16 => 2,
            DataType::Int32 | DataType::UInt32 | DataType::Float32 => 4,
            DataType::Int64 | DataType::UInt64 | DataType::Float64 | DataType::Complex64 => 8,
            DataType::Complex128 => 16,
            DataType::FixedBytes(n) | DataType::RawBytes(n) | DataType::FixedUtf32(n) => n as usize,
            DataType::Struct(s) => s.size(),
            DataType::String => 0,
        }
    }

    /// The NumPy type string (`<i4`, `|u1`, `|S8`, `|V4`, ...) for native (little-endian) data; a
    /// struct's is its list of fields (`[('a', '<i4'), ...]`).
    pub fn numpy_descr(self) -> String {
        let descr = match self {
            DataType::Bool => "|b1",
            DataType::Int8 => "|i1",
            DataType::Int16 => "<i2",
            DataType::Int32 => "<i4",
            DataType::Int64 => "<i8",
            DataType::UInt8 => "|u1",
            DataType::UInt16 => "<u2",
            DataType::UInt32 => "<u4",
            DataType::UInt64 => "<u8",
            DataType::Float16 => "<f2",
            DataType::Float32 => "<f4",
            DataType::Float64 => "<f8",
            DataType::Complex64 => "<c8",
            DataType::Complex128 => "<c16",
            DataType::FixedBytes(n) => return format!("|S{n}"),
            DataType::RawBytes(n) => return format!("|V{n}"),
            DataType::FixedUtf32(n) => return format!("<U{}", n / 4),
            DataType::Struct(s) => return s.numpy_descr(),
            DataType::String => "|O",
        };
        descr.to_string()
    }

    /// True for the signed and unsigned integers of 8 to 64 bits.
    pub fn is_integer(self) -> bool {
        matches!(
            self,
            DataType::Int8
                | DataType::UInt8
                | DataType::Int16
                | DataType::UInt16
                | DataType::Int32
                | DataType::UInt32
                | DataType::Int64
                | DataType::UInt64
        )
    }

    /// True for `float16`, `float32` and `float64`.
    pub fn is_float(self) -> bool {
        matches!(self, DataType::Float16 | DataType::Float32 | DataType::Float64)
    }

    /// Parses the `data_type` field of `zarr.json`.
    ///
    /// # Errors
    /// [`MetadataError::Invalid`] when the value is not one of the supported names.
    pub fn from_json(value: &Value) -> Result<Self, MetadataError> {
        Self::from_json_at(value, 0)
    }

    /// [`DataType::from_json`] for a type nested `depth` structs deep.
    pub(super) fn from_json_at(value: &Value, depth: usize) -> Result<Self, MetadataError> {
        let length = || {
            let n = value.pointer("/configuration/length_bytes").and_then(Value::as_u64);
            let valid = |n: &u32| *n > 0 && *n <= MAX_LENGTH_BYTES;
            n.and_then(|n| u32::try_from(n).ok()).filter(valid).ok_or_else(|| MetadataError::Invalid {
                field: "data_type",
                reason: format!("{value}: length_bytes must be a positive integer of at most {MAX_LENGTH_BYTES}"),
            })
        };
        match value.get("name").and_then(Value::as_str) {
            Some("null_terminated_bytes") => return length().map(DataType::FixedBytes),
            Some("raw_bytes") => return length().map(DataType::RawBytes),
            Some("fixed_length_utf32") => {
                let n = length()?;
                return match n % 4 {
                    0 => Ok(DataType::FixedUtf32(n)),
                    _ => Err(MetadataError::Invalid {
                        field: "data_type",
                        reason: format!("{value}: length_bytes must be a multiple of 4 (UTF-32 code points)"),
                    }),
                };
            }
            Some("struct" | "structured") => return StructType::from_json(value, depth).map(DataType::Struct),
            _ => {}
        }
        let name = value.as_str().unwrap_or_default();
        if name == "string" {
            return Ok(DataType::String);
        }
        // The core spec's raw bits `r<bits>`, whole bytes only.
        let bits = name.strip_prefix('r').and_then(|b| b.parse::<u32>().ok());
        if let Some(bytes) = bits.filter(|b| b % 8 == 0 && *b > 0 && b / 8 <= MAX_LENGTH_BYTES).map(|b| b / 8) {
            return Ok(DataType::RawBytes(bytes));
        }
        DataType::ALL.into_iter().find(|t| t.name() == name).ok_or_else(|| MetadataError::Invalid {
            field: "data_type",
            reason: format!("unsupported data type {value}"),
        })
    }
}

/// An IEEE 754 binary16 value (its bits) as f64, exactly.
pub(crate) fn f16_to_f64(bits: u16) -> f64 {
    let sign = if bits & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exponent = i32::from((bits >> 10) & 0x1f);
    let mantissa = f64::from(bits & 0x3ff);
    match exponent {
        0 => sign * mantissa * 2f64.powi(-24),
        31 if mantissa == 0.0 => sign * f64::INFINITY,
        31 => f64::NAN,
        e => sign * (1.0 + mantissa / 1024.0) * 2f64.powi(e - 15),
    }
}

/// The IEEE 754 binary16 bits nearest to `value` (ties to even; NaN stays NaN, overflow is
/// infinite).
pub(crate) fn f64_to_f16(value: f64) -> u16 {
    if value.is_nan() {
        return 0x7e00;
    }
    let sign: u16 = if value.is_sign_negative() { 0x8000 } else { 0 };
    let magnitude = value.abs();
    if magnitude >= 65520.0 {
        return sign | 0x7c00;
    }
    // Units of the smallest subnormal (2^-24) for subnormals, else of the value's ulp.
    let exponent = if magnitude < 2f64.powi(-14) { -14 } else { magnitude.log2().floor() as i32 };
    let ulp = 2f64.powi(exponent.max(-14) - 10);
    let units = (magnitude / ulp).round_ties_even();
    if exponent < -14 || (exponent == -14 && units < 1024.0) {
        // Subnormal (or rounded up into the smallest normal: 1024 units of 2^-24 is 2^-14).
        return sign | units as u16;
    }
    let (mut e, mut m) = (exponent, units - 1024.0);
    if m >= 1024.0 {
        e += 1;
        m -= 1024.0;
    }
    if e > 15 {
        return sign | 0x7c00;
    }
    sign | (((e + 15) as u16) << 10) | m as u16
}

impl std::fmt::Display for DataType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DataType::FixedBytes(n) => write!(f, "bytes{n}"),
            DataType::RawBytes(n) => write!(f, "raw_bytes{n}"),
            DataType::FixedUtf32(n) => write!(f, "utf32_{}", n / 4),
            // Each field with its type (`struct{id: int64, name: utf32_5}`), the first 16 of a level.
            DataType::Struct(s) => {
                let shown = s.fields().iter().take(16).map(|field| format!("{}: {}", field.name, field.data_type));
                let more = (s.fields().len() > 16).then(|| "...".to_string());
                write!(f, "struct{{{}}}", shown.chain(more).collect::<Vec<_>>().join(", "))
            }
            t => f.write_str(t.name()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for t in DataType::ALL {
            assert_eq!(DataType::from_json(&Value::from(t.name())).unwrap(), t);
        }
        assert!(DataType::from_json(&Value::from("float128")).is_err());
    }

    #[test]
    fn fixed_bytes_round_trip() {
        let t = DataType::FixedBytes(12);
        assert_eq!(DataType::from_json(&t.to_json()).unwrap(), t);
        assert_eq!((t.size(), t.swap_unit(), t.numpy_descr()), (12, 1, "|S12".to_string()));
        let zero = serde_json::json!({"name": "null_terminated_bytes", "configuration": {"length_bytes": 0}});
        assert!(DataType::from_json(&zero).is_err());
        // Found by the kerchunk-json fuzz target: a 4 GiB element was allocated as its fill value.
        let huge =
            serde_json::json!({"name": "null_terminated_bytes", "configuration": {"length_bytes": 4294967295u32}});
        assert!(DataType::from_json(&huge).is_err());
        let largest = serde_json::json!({"name": "raw_bytes", "configuration": {"length_bytes": MAX_LENGTH_BYTES}});
        assert_eq!(DataType::from_json(&largest).unwrap(), DataType::RawBytes(MAX_LENGTH_BYTES));
        assert!(DataType::from_json(&Value::from(format!("r{}", 8 * (MAX_LENGTH_BYTES + 1)))).is_err());
    }

    #[test]
    fn raw_bytes_round_trip_and_read_core_raw_bits() {
        let t = DataType::RawBytes(3);
        assert_eq!(DataType::from_json(&t.to_json()).unwrap(), t);
        assert_eq!(t.to_json(), serde_json::json!({"name": "raw_bytes", "configuration": {"length_bytes": 3}}));
        assert_eq!((t.size(), t.swap_unit(), t.numpy_descr()), (3, 1, "|V3".to_string()));
        assert_eq!(DataType::from_json(&Value::from("r24")).unwrap(), t);
        assert!(DataType::from_json(&Value::from("r12")).is_err());
    }

    #[test]
    fn utf32_strings_round_trip_as_zarr_python_spells_them() {
        let t = DataType::FixedUtf32(20);
        let json = serde_json::json!({"name": "fixed_length_utf32", "configuration": {"length_bytes": 20}});
        assert_eq!(t.to_json(), json);
        assert_eq!(DataType::from_json(&json).unwrap(), t);
        assert_eq!((t.size(), t.swap_unit(), t.numpy_descr()), (20, 4, "<U5".to_string()));
        let odd = serde_json::json!({"name": "fixed_length_utf32", "configuration": {"length_bytes": 6}});
        assert!(DataType::from_json(&odd).is_err());
    }

    #[test]
    fn half_floats_convert_exactly_and_round_to_nearest_even() {
        for bits in 0..=u16::MAX {
            let value = f16_to_f64(bits);
            if value.is_nan() {
                assert!(f64_to_f16(value) & 0x7c00 == 0x7c00 && f64_to_f16(value) & 0x3ff != 0);
                continue;
            }
            // -0.0 keeps its sign; every other value comes back to its bits.
            assert_eq!(f64_to_f16(value), bits, "{bits:#06x} = {value}");
        }
        assert_eq!(f16_to_f64(0x3c00), 1.0);
        assert_eq!(f16_to_f64(0xc000), -2.0);
        assert_eq!(f16_to_f64(0x7bff), 65504.0);
        assert_eq!(f16_to_f64(0x0001), 2f64.powi(-24));
        assert_eq!(f64_to_f16(1.0 + 2f64.powi(-11)), 0x3c00, "a tie rounds to even");
        assert_eq!(f64_to_f16(1e6), 0x7c00);
        assert_eq!(f64_to_f16(-9.96921e36), 0xfc00);
    }

    #[test]
    fn sizes_match_numpy_descr() {
        for t in DataType::ALL {
            let digits: usize = t.numpy_descr()[2..].parse().unwrap();
            assert_eq!(digits, t.size(), "{t}");
        }
    }
}
