//! The `fill_value` of a Zarr v3 array (zarr-specs v3 core, "fill_value"): one element, kept as its
//! native-endian bytes so that odd NaN payloads survive exactly.
//!
//! JSON out: integers and booleans as numbers; floats as numbers when finite, `"NaN"` for the
//! canonical quiet NaN, `"Infinity"` / `"-Infinity"`, and a `"0x..."` hex bit pattern for any other NaN
//! (or a `-0.0`), which is how the spec keeps exact bits.

use serde_json::Value;

use super::{DataType, MetadataError};

/// One element's bytes in native byte order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FillValue {
    bytes: Vec<u8>,
}

impl FillValue {
    /// A fill value from native-endian element bytes.
    ///
    /// # Errors
    /// [`MetadataError::Invalid`] when `bytes` is not exactly one element of `data_type`.
    pub fn from_bytes(data_type: DataType, bytes: Vec<u8>) -> Result<Self, MetadataError> {
        if bytes.len() != data_type.size() {
            return Err(MetadataError::Invalid {
                field: "fill_value",
                reason: format!("{} bytes given for a {data_type} element of {} bytes", bytes.len(), data_type.size()),
            });
        }
        Ok(FillValue { bytes })
    }

    /// All-zero bytes: the HDF5 default fill and Zarr's usual default.
    pub fn zero(data_type: DataType) -> Self {
        FillValue { bytes: vec![0; data_type.size()] }
    }

    /// The element bytes, native order.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The `fill_value` JSON for `data_type`.
    pub fn to_json(&self, data_type: DataType) -> Value {
        let b = &self.bytes;
        match data_type {
            DataType::Bool => Value::Bool(b[0] != 0),
            DataType::Int8 => Value::from(b[0] as i8),
            DataType::UInt8 => Value::from(b[0]),
            DataType::Int16 => Value::from(i16::from_ne_bytes([b[0], b[1]])),
            DataType::UInt16 => Value::from(u16::from_ne_bytes([b[0], b[1]])),
            DataType::Int32 => Value::from(i32::from_ne_bytes(arr(b))),
            DataType::UInt32 => Value::from(u32::from_ne_bytes(arr(b))),
            DataType::Int64 => Value::from(i64::from_ne_bytes(arr(b))),
            DataType::UInt64 => Value::from(u64::from_ne_bytes(arr(b))),
            DataType::Float16 => {
                let bits = u16::from_ne_bytes(arr(b));
                let value = super::data_type::f16_to_f64(bits);
                float_json(value, bits == 0x7e00, || format!("0x{bits:04x}"))
            }
            DataType::Float32 => {
                let bits = u32::from_ne_bytes(arr(b));
                float_json(f64::from(f32::from_bits(bits)), bits == 0x7fc0_0000, || format!("0x{bits:08x}"))
            }
            DataType::Float64 => {
                let bits = u64::from_ne_bytes(arr(b));
                float_json(f64::from_bits(bits), bits == 0x7ff8_0000_0000_0000, || format!("0x{bits:016x}"))
            }
            DataType::Complex64 | DataType::Complex128 => {
                // `[real, imaginary]`, each as its float type writes it.
                let part = if data_type == DataType::Complex64 { DataType::Float32 } else { DataType::Float64 };
                let half = part.size();
                let value = |bytes: &[u8]| FillValue { bytes: bytes.to_vec() }.to_json(part);
                Value::Array(vec![value(&b[..half]), value(&b[half..2 * half])])
            }
            DataType::FixedBytes(_) => {
                // zarr-python writes the value without its trailing NULs.
                let end = b.iter().rposition(|&c| c != 0).map_or(0, |i| i + 1);
                Value::from(crate::base64::encode(&b[..end]))
            }
            // Strings have no fixed-size element: the fill value is the empty string.
            DataType::String => Value::from(""),
            // All bytes, base64, as zarr-python writes `raw_bytes`.
            DataType::RawBytes(_) => Value::from(crate::base64::encode(b)),
            // The text without its trailing NULs, as zarr-python writes `fixed_length_utf32`; a code
            // unit that is no Unicode scalar value becomes U+FFFD.
            DataType::FixedUtf32(_) => {
                let text: String = b
                    .chunks_exact(4)
                    .map(|c| u32::from_ne_bytes(arr(c)))
                    .map(|u| char::from_u32(u).unwrap_or(char::REPLACEMENT_CHARACTER))
                    .collect();
                Value::from(text.trim_end_matches('\0'))
            }
            // Field name -> the field's own fill value, as zarr-python writes `struct`.
            DataType::Struct(s) => Value::Object(
                s.offsets()
                    .map(|(at, f)| {
                        let bytes = b[at..at + f.data_type.size()].to_vec();
                        (f.name.clone(), FillValue { bytes }.to_json(f.data_type))
                    })
                    .collect(),
            ),
        }
    }

    /// Parses `fill_value` JSON for `data_type`.
    ///
    /// # Errors
    /// [`MetadataError::Invalid`] when the value does not fit the type.
    pub fn from_json(data_type: DataType, value: &Value) -> Result<Self, MetadataError> {
        let bad = || MetadataError::Invalid {
            field: "fill_value",
            reason: format!("{value} is not a valid {data_type} fill value"),
        };
        let bytes = match (data_type, value) {
            (DataType::Bool, Value::Bool(v)) => vec![u8::from(*v)],
            (DataType::String, Value::String(_)) => Vec::new(),
            (DataType::Complex64 | DataType::Complex128, Value::Array(parts)) if parts.len() == 2 => {
                let part = if data_type == DataType::Complex64 { DataType::Float32 } else { DataType::Float64 };
                let mut bytes = FillValue::from_json(part, &parts[0])?.bytes;
                bytes.extend(FillValue::from_json(part, &parts[1])?.bytes);
                bytes
            }
            (DataType::FixedUtf32(n), Value::String(s)) => {
                let units: Vec<u32> = s.chars().map(u32::from).collect();
                if units.len() * 4 > n as usize {
                    return Err(bad());
                }
                let mut bytes: Vec<u8> = units.iter().flat_map(|u| u.to_ne_bytes()).collect();
                bytes.resize(n as usize, 0);
                bytes
            }
            (DataType::RawBytes(n), Value::String(s)) => {
                crate::base64::decode(s).filter(|b| b.len() == n as usize).ok_or_else(bad)?
            }
            // Base64 of the little-endian element (zarr-python's older form): vzarr keeps structs
            // in their stored little-endian order.
            (DataType::Struct(t), Value::String(s)) => {
                crate::base64::decode(s).filter(|b| b.len() == t.size()).ok_or_else(bad)?
            }
            (DataType::Struct(t), Value::Object(values)) => {
                let mut bytes = Vec::new();
                for f in t.fields() {
                    match values.get(&f.name) {
                        Some(v) => bytes.extend(FillValue::from_json(f.data_type, v)?.bytes),
                        None => bytes.extend(FillValue::zero(f.data_type).bytes),
                    }
                }
                bytes
            }
            (DataType::FixedBytes(n), Value::String(s)) => {
                let mut bytes = crate::base64::decode(s).filter(|b| b.len() <= n as usize).ok_or_else(bad)?;
                bytes.resize(n as usize, 0);
                bytes
            }
            (t, Value::String(s)) if t.is_float() => parse_float_string(t, s).ok_or_else(bad)?,
            (DataType::Float16, v) => super::data_type::f64_to_f16(v.as_f64().ok_or_else(bad)?).to_ne_bytes().to_vec(),
            (DataType::Float32, v) => (v.as_f64().ok_or_else(bad)? as f32).to_ne_bytes().to_vec(),
            (DataType::Float64, v) => v.as_f64().ok_or_else(bad)?.to_ne_bytes().to_vec(),
            (t, v) => int_bytes(t, v).ok_or_else(bad)?,
        };
        FillValue::from_bytes(data_type, bytes)
    }
}

fn arr<const N: usize>(b: &[u8]) -> [u8; N] {
    let mut out = [0u8; N];
    out.copy_from_slice(&b[..N]);
    out
}

fn float_json(v: f64, canonical_nan: bool, hex: impl Fn() -> String) -> Value {
    if v.is_nan() {
        return Value::from(if canonical_nan { "NaN".to_string() } else { hex() });
    }
    if v.is_infinite() {
        return Value::from(if v > 0.0 { "Infinity" } else { "-Infinity" });
    }
    if v == 0.0 && v.is_sign_negative() {
        return Value::from(hex());
    }
    Value::from(v)
}

fn parse_float_string(t: DataType, s: &str) -> Option<Vec<u8>> {
    let f32_or_f64 = |v: f64| match t {
        DataType::Float16 => super::data_type::f64_to_f16(v).to_ne_bytes().to_vec(),
        DataType::Float32 => (v as f32).to_ne_bytes().to_vec(),
        _ => v.to_ne_bytes().to_vec(),
    };
    match s {
        "NaN" => Some(f32_or_f64(f64::NAN)),
        "Infinity" => Some(f32_or_f64(f64::INFINITY)),
        "-Infinity" => Some(f32_or_f64(f64::NEG_INFINITY)),
        hex => {
            let digits = hex.strip_prefix("0x")?;
            match t {
                DataType::Float16 if digits.len() == 4 => {
                    Some(u16::from_str_radix(digits, 16).ok()?.to_ne_bytes().to_vec())
                }
                DataType::Float32 if digits.len() == 8 => {
                    Some(u32::from_str_radix(digits, 16).ok()?.to_ne_bytes().to_vec())
                }
                DataType::Float64 if digits.len() == 16 => {
                    Some(u64::from_str_radix(digits, 16).ok()?.to_ne_bytes().to_vec())
                }
                _ => None,
            }
        }
    }
}

fn int_bytes(t: DataType, v: &Value) -> Option<Vec<u8>> {
    macro_rules! conv {
        ($ty:ty, $get:ident) => {
            <$ty>::try_from(v.$get()?).ok()?.to_ne_bytes().to_vec()
        };
    }
    Some(match t {
        DataType::Int8 => conv!(i8, as_i64),
        DataType::Int16 => conv!(i16, as_i64),
        DataType::Int32 => conv!(i32, as_i64),
        DataType::Int64 => conv!(i64, as_i64),
        DataType::UInt8 => conv!(u8, as_u64),
        DataType::UInt16 => conv!(u16, as_u64),
        DataType::UInt32 => conv!(u32, as_u64),
        DataType::UInt64 => conv!(u64, as_u64),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(t: DataType, bytes: Vec<u8>) -> Value {
        let fv = FillValue::from_bytes(t, bytes).unwrap();
        let json = fv.to_json(t);
        assert_eq!(FillValue::from_json(t, &json).unwrap(), fv, "{t} {json}");
        json
    }

    #[test]
    fn floats_keep_exact_bits() {
        assert_eq!(round_trip(DataType::Float32, f32::NAN.to_ne_bytes().to_vec()), "NaN");
        let odd_nan = 0x7fc0_0001u32.to_ne_bytes().to_vec();
        assert_eq!(round_trip(DataType::Float32, odd_nan), "0x7fc00001");
        assert_eq!(round_trip(DataType::Float64, (-0.0f64).to_ne_bytes().to_vec()), "0x8000000000000000");
        assert_eq!(round_trip(DataType::Float64, f64::NEG_INFINITY.to_ne_bytes().to_vec()), "-Infinity");
        assert_eq!(
            round_trip(DataType::Float32, 9.96921e36f32.to_ne_bytes().to_vec()).as_f64().unwrap() as f32,
            9.96921e36f32
        );
        assert_eq!(round_trip(DataType::Float64, 1e300f64.to_ne_bytes().to_vec()), 1e300);
    }

    #[test]
    fn fixed_bytes_are_base64() {
        let t = DataType::FixedBytes(4);
        assert_eq!(round_trip(t, b"ab\0\0".to_vec()), "YWI=");
        assert_eq!(round_trip(t, vec![0; 4]), "");
        assert!(FillValue::from_json(t, &Value::from("YWJjZGVm")).is_err(), "6 bytes do not fit 4");
    }

    #[test]
    fn utf32_strings_are_their_text_without_trailing_nuls() {
        let t = DataType::FixedUtf32(12);
        let bytes: Vec<u8> = ['é', 'a', '\0'].iter().flat_map(|&c| u32::from(c).to_ne_bytes()).collect();
        assert_eq!(round_trip(t, bytes), "éa");
        assert_eq!(round_trip(t, vec![0; 12]), "");
        assert!(FillValue::from_json(t, &Value::from("abcd")).is_err(), "4 code points do not fit 3");
    }

    #[test]
    fn integers_at_their_limits() {
        assert_eq!(round_trip(DataType::Int64, i64::MIN.to_ne_bytes().to_vec()), i64::MIN);
        assert_eq!(round_trip(DataType::UInt64, u64::MAX.to_ne_bytes().to_vec()), u64::MAX);
        assert_eq!(round_trip(DataType::Int8, vec![0x80]), -128);
        assert_eq!(round_trip(DataType::Bool, vec![1]), true);
        assert!(FillValue::from_json(DataType::UInt8, &Value::from(256)).is_err());
        assert!(FillValue::from_json(DataType::Int16, &Value::from("NaN")).is_err());
    }
}

#[cfg(test)]
mod struct_tests {
    use super::*;
    use crate::metadata::{StructField, StructType};

    #[test]
    fn structs_are_objects_of_their_fields_and_raw_bytes_base64() {
        let field = |name: &str, data_type| StructField { name: name.into(), data_type };
        let s = StructType::intern(vec![field("a", DataType::Int16), field("s", DataType::FixedBytes(3))]).unwrap();
        let t = DataType::Struct(s);
        let mut bytes = (-2i16).to_ne_bytes().to_vec();
        bytes.extend(b"x\0\0");
        let fv = FillValue::from_bytes(t, bytes).unwrap();
        assert_eq!(fv.to_json(t), serde_json::json!({"a": -2, "s": "eA=="}));
        assert_eq!(FillValue::from_json(t, &fv.to_json(t)).unwrap(), fv);
        let partial = FillValue::from_json(t, &serde_json::json!({"s": "eA=="})).unwrap();
        assert_eq!(partial.as_bytes(), b"\0\0x\0\0", "a missing field is zero");
        let base64 = FillValue::from_json(t, &Value::from(crate::base64::encode(fv.as_bytes()))).unwrap();
        assert_eq!(base64, fv);

        let raw = DataType::RawBytes(2);
        let fv = FillValue::from_bytes(raw, vec![0, 7]).unwrap();
        assert_eq!(fv.to_json(raw), "AAc=");
        assert_eq!(FillValue::from_json(raw, &fv.to_json(raw)).unwrap(), fv);
        assert!(FillValue::from_json(raw, &Value::from("AA==")).is_err(), "1 byte for 2");
    }
}
