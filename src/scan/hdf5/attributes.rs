//! HDF5 attributes as JSON attribute values, as netCDF users see them (netCDF4-python, xarray):
//! one-element attributes become scalars, lists stay lists, strings are text, non-finite floats are
//! the markers written as the bare tokens `NaN`, `Infinity`, `-Infinity` (`metadata::json_text`),
//! enum values their integers. Types with no JSON form (compound, opaque, references, non-string vlen) are reported
//! so the caller can warn, never guessed.

use hdf5_reader::{Attribute, ByteOrder, Datatype};
use serde_json::Value;

use crate::metadata::float_attribute;

/// Bookkeeping attributes of netCDF-4 and HDF5 dimension scales: never user attributes
/// (the HDF5 file format specification).
pub(crate) const BOOKKEEPING: [&str; 10] = [
    "DIMENSION_LIST",
    "REFERENCE_LIST",
    "CLASS",
    "NAME",
    "_Netcdf4Dimid",
    "_Netcdf4Coordinates",
    "_NCProperties",
    "_IsNetcdf4",
    "_SuperblockVersion",
    "_nc3_strict",
];

/// The JSON value of an attribute, or why it has none.
pub(crate) fn attribute_json(attr: &Attribute) -> Result<Value, String> {
    let count = attr.shape.iter().product::<u64>();
    let values = match &attr.datatype {
        Datatype::String { .. } | Datatype::VarLen { kind: hdf5_reader::VarLenKind::String, .. } => {
            let strings = attr.read_strings().map_err(|e| e.to_string())?;
            if strings.is_empty() {
                // An empty netCDF text attribute (a null dataspace): netCDF reports "".
                return Ok(Value::from(""));
            }
            return Ok(one_or_list(strings.into_iter().map(|s| Value::from(trim_nul(&s))).collect(), &attr.shape));
        }
        Datatype::Enum { base, .. } => numbers(base, &attr.raw_data, count)?,
        other => numbers(other, &attr.raw_data, count)?,
    };
    Ok(one_or_list(values, &attr.shape))
}

/// A scalar for scalar and one-element attributes (as netCDF reports them), else a list.
fn one_or_list(mut values: Vec<Value>, shape: &[u64]) -> Value {
    let null_space = shape == [0];
    if values.len() == 1 && !null_space {
        values.pop().unwrap_or(Value::Null)
    } else {
        Value::Array(values)
    }
}

/// Fixed-length strings keep their NUL padding in HDF5; netCDF text stops at the first NUL.
fn trim_nul(s: &str) -> &str {
    s.split('\0').next().unwrap_or("")
}

/// Decodes `count` numbers of type `datatype` from `raw`.
pub(super) fn numbers(datatype: &Datatype, raw: &[u8], count: u64) -> Result<Vec<Value>, String> {
    let (size, order) = match datatype {
        Datatype::FixedPoint { size, byte_order, .. } | Datatype::FloatingPoint { size, byte_order } => {
            (usize::from(*size), *byte_order)
        }
        Datatype::Compound { .. } => return Err("compound type".into()),
        Datatype::Opaque { .. } => return Err("opaque type".into()),
        Datatype::Reference { .. } => return Err("reference type".into()),
        Datatype::VarLen { .. } => return Err("variable-length type".into()),
        Datatype::Array { .. } => return Err("array type".into()),
        Datatype::Bitfield { .. } => return Err("bitfield type".into()),
        Datatype::Enum { .. } | Datatype::String { .. } => return Err("nested type".into()),
    };
    if !matches!(size, 1 | 2 | 4 | 8) || (matches!(datatype, Datatype::FloatingPoint { .. }) && size < 4) {
        return Err(format!("{size}-byte number"));
    }
    let needed = count.checked_mul(size as u64).filter(|&n| n <= raw.len() as u64);
    let Some(needed) = needed else {
        return Err(format!("{count} values of {size} bytes do not fit in {} stored bytes", raw.len()));
    };
    Ok(raw[..needed as usize].chunks_exact(size).map(|bytes| number(datatype, bytes, order)).collect())
}

fn number(datatype: &Datatype, bytes: &[u8], order: ByteOrder) -> Value {
    let mut buf = [0u8; 8];
    match order {
        ByteOrder::LittleEndian => buf[..bytes.len()].copy_from_slice(bytes),
        ByteOrder::BigEndian => {
            for (i, b) in bytes.iter().rev().enumerate() {
                buf[i] = *b;
            }
        }
    }
    let raw = u64::from_le_bytes(buf);
    let bits = bytes.len() * 8;
    match datatype {
        Datatype::FloatingPoint { size: 4, .. } => float_attribute(f64::from(f32::from_bits(raw as u32))),
        Datatype::FloatingPoint { .. } => float_attribute(f64::from_bits(raw)),
        Datatype::FixedPoint { signed: true, .. } => {
            let shift = 64 - bits;
            Value::from(((raw << shift) as i64) >> shift)
        }
        _ => Value::from(raw),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attr(datatype: Datatype, shape: Vec<u64>, raw: Vec<u8>) -> Attribute {
        Attribute { name: "a".into(), datatype, shape, raw_data: raw, decoded_strings: None }
    }

    #[test]
    fn numbers_in_either_byte_order_and_sign() {
        let le = ByteOrder::LittleEndian;
        let be = ByteOrder::BigEndian;
        let short = |byte_order| Datatype::FixedPoint { size: 2, signed: true, byte_order };
        assert_eq!(attribute_json(&attr(short(le), vec![], vec![0xfd, 0xff])).unwrap(), Value::from(-3));
        assert_eq!(
            attribute_json(&attr(short(be), vec![2], vec![0, 1, 0xff, 0xfe])).unwrap(),
            serde_json::json!([1, -2])
        );
        let float = Datatype::FloatingPoint { size: 4, byte_order: le };
        let raw: Vec<u8> = [1.5f32, f32::NAN].iter().flat_map(|v| v.to_le_bytes()).collect();
        assert_eq!(
            attribute_json(&attr(float, vec![2], raw)).unwrap(),
            serde_json::json!([1.5, float_attribute(f64::NAN)])
        );
        let one = Datatype::FloatingPoint { size: 8, byte_order: le };
        let inf = f64::NEG_INFINITY.to_le_bytes().to_vec();
        assert_eq!(attribute_json(&attr(one, vec![1], inf)).unwrap(), float_attribute(f64::NEG_INFINITY));
    }

    #[test]
    fn short_payloads_and_opaque_types_are_reported() {
        let int = Datatype::FixedPoint { size: 4, signed: false, byte_order: ByteOrder::LittleEndian };
        assert!(attribute_json(&attr(int, vec![3], vec![0; 8])).is_err());
        let opaque = Datatype::Opaque { size: 2, tag: String::new() };
        assert_eq!(attribute_json(&attr(opaque, vec![], vec![0; 2])).unwrap_err(), "opaque type");
    }
}
