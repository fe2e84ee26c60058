//! HDF5 attributes as JSON attribute values, as netCDF users see them (netCDF4-python, xarray):
//! one-element attributes become scalars, lists stay lists, strings are text, non-finite floats are
//! the markers written as the bare tokens `NaN`, `Infinity`, `-Infinity` (`metadata::json_text`),
//! enum values their integers, bitfields unsigned integers (as h5py reads them), compound values JSON
//! objects of member name -> value (members in the file's order; array members as lists,
//! fixed-length strings as text), array types as nested lists of their dimensions' lengths, and
//! variable-length sequences as one list per element (as h5py reads them: an array per element).
//! Bytes JSON text cannot hold, opaque values and strings that are not valid UTF-8, are the
//! base64 text of their bytes ([`BASE64`]), which the caller notes in the `vzarr` field, so that a
//! reader knows to decode them (h5py gives `numpy.void` and `bytes` there). Types with no JSON form
//! (references other than object references, sequences of variable-size values) are reported so
//! the caller can warn, never guessed.
//!
//! h5py's booleans, an enum of exactly the members `FALSE` = 0 and `TRUE` = 1 over any integer (the
//! rule of h5py's `TypeEnumID.py_dtype`, whatever the base type and member order), are JSON `true`
//! and `false`, as h5py and h5netcdf read them (`numpy.bool_`), not their integers. A complex
//! attribute (h5py's compound of two floats, `element::complex`) is a JSON object of its two parts,
//! and its type (`complex64`, `complex128`) is noted ([`attribute_type`]).

use hdf5_reader::{Attribute, ByteOrder, Datatype};
use serde_json::Value;

use crate::metadata::{float_attribute, DataType};

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

/// How an attribute's bytes are written when JSON text cannot hold them: standard base64.
pub(crate) const BASE64: &str = "base64";

/// Resolves a global heap reference to the bytes of its values of the given size.
pub(crate) type ResolveHeap<'a> = &'a dyn Fn(&[u8], usize) -> Result<Vec<u8>, hdf5_reader::error::Error>;

/// Why an attribute has no JSON value (the text of the warning that leaves it out).
#[derive(Debug, thiserror::Error)]
pub(crate) enum AttributeError {
    /// The reader could not read a string attribute as text, and its bytes are valid UTF-8.
    #[error("{0}")]
    Text(#[source] hdf5_reader::error::Error),
    /// The reader could not read a string attribute as text, nor its bytes.
    #[error("{text}; its bytes: {bytes}")]
    StringBytes {
        /// Why the strings could not be read as text.
        text: hdf5_reader::error::Error,
        /// Why their bytes could not be read.
        #[source]
        bytes: Box<AttributeError>,
    },
    /// A global heap reference could not be resolved.
    #[error("{0}")]
    Heap(#[source] hdf5_reader::error::Error),
    /// A variable-length sequence's global heap reference could not be resolved.
    #[error("variable-length sequence: {0}")]
    Sequence(#[source] hdf5_reader::error::Error),
    /// The stored bytes are fewer than the values need.
    #[error("{count} values of {size} bytes do not fit in {stored} stored bytes")]
    Short {
        /// Values the attribute's shape gives.
        count: u64,
        /// Bytes of one value.
        size: usize,
        /// Bytes stored.
        stored: usize,
    },
    /// Sequences whose values have no fixed size.
    #[error("variable-length sequences of values of no fixed size")]
    UnsizedSequence,
    /// A compound type with a member of no fixed size.
    #[error("compound type with members of no fixed size")]
    UnsizedCompound,
    /// A compound member of no fixed size.
    #[error("member {0}: no fixed size")]
    UnsizedMember(String),
    /// A compound member whose bytes lie outside its compound.
    #[error("member {0} lies outside its compound")]
    MemberOutside(String),
    /// An array member of no fixed size.
    #[error("array member of no fixed size")]
    UnsizedArray,
    /// A type where numbers were expected (`nested compound type`, `opaque type`, ...).
    #[error("{0}")]
    NotNumeric(&'static str),
    /// A number of a size no JSON number holds.
    #[error("{0}-byte number")]
    NumberSize(usize),
    /// An integer of 9 to 16 bytes whose value lies beyond 64 bits.
    #[error("{size}-byte integer {value} beyond 64 bits")]
    WideInteger {
        /// Its bytes.
        size: usize,
        /// Its value, in decimal.
        value: String,
    },
    /// A value that decoded to nothing.
    #[error("empty value")]
    Empty,
}

/// The variable-length data of an attribute's object: its global heap references (`count`, heap
/// address of `offset_size` bytes, index) resolved to bytes.
pub(crate) struct Heap<'a> {
    /// Bytes of a file address.
    pub(crate) offset_size: usize,
    /// The bytes a reference names, for values of the given size (its count times that size).
    pub(crate) resolve: ResolveHeap<'a>,
}

/// The JSON value of an attribute and how its bytes are encoded (None: plain JSON; [`BASE64`]), or
/// why it has none.
pub(crate) fn attribute_json(
    attr: &Attribute,
    heap: &Heap<'_>,
) -> Result<(Value, Option<&'static str>), AttributeError> {
    let count = attr.shape.iter().product::<u64>();
    let values = match &attr.datatype {
        Datatype::String { .. } | Datatype::VarLen { kind: hdf5_reader::VarLenKind::String, .. } => {
            return strings(attr, heap);
        }
        Datatype::VarLen { base, .. } => sequences(base, attr, count, heap)?,
        Datatype::Opaque { size, .. } => {
            let values = fixed_values(*size as usize, &attr.raw_data, count)?;
            let encoded = values.map(|bytes| Value::from(crate::base64::encode(bytes))).collect();
            return Ok((one_or_list(encoded, &attr.shape), Some(BASE64)));
        }
        Datatype::Enum { base, members } if is_h5py_bool(base, members) => {
            booleans(numbers(base, &attr.raw_data, count)?)
        }
        Datatype::Enum { base, .. } => numbers(base, &attr.raw_data, count)?,
        Datatype::Compound { .. } | Datatype::Array { .. } => records(&attr.datatype, &attr.raw_data, count)?,
        other => numbers(other, &attr.raw_data, count)?,
    };
    Ok((one_or_list(values, &attr.shape), None))
}

/// A string attribute as text, or as the base64 of each string's bytes when one of them is not
/// valid UTF-8 (each string ends at its first NUL, as netCDF text does).
fn strings(attr: &Attribute, heap: &Heap<'_>) -> Result<(Value, Option<&'static str>), AttributeError> {
    let text_error = match attr.read_strings() {
        Ok(strings) if strings.is_empty() => {
            // An empty netCDF text attribute (a null dataspace): netCDF reports "".
            return Ok((Value::from(""), None));
        }
        Ok(strings) => {
            let values = strings.into_iter().map(|s| Value::from(trim_nul(&s))).collect();
            return Ok((one_or_list(values, &attr.shape), None));
        }
        Err(e) => e,
    };
    let bytes = match string_bytes(attr, heap) {
        Ok(bytes) => bytes,
        Err(why) => return Err(AttributeError::StringBytes { text: text_error, bytes: Box::new(why) }),
    };
    if bytes.iter().all(|b| std::str::from_utf8(b).is_ok()) {
        return Err(AttributeError::Text(text_error));
    }
    let encoded = bytes.iter().map(|b| Value::from(crate::base64::encode(b))).collect();
    Ok((one_or_list(encoded, &attr.shape), Some(BASE64)))
}

/// The bytes of each string of a string attribute, up to its first NUL.
fn string_bytes(attr: &Attribute, heap: &Heap<'_>) -> Result<Vec<Vec<u8>>, AttributeError> {
    let count = attr.shape.iter().product::<u64>();
    let until_nul = |b: &[u8]| b.split(|&c| c == 0).next().unwrap_or_default().to_vec();
    match &attr.datatype {
        Datatype::String { size: hdf5_reader::StringSize::Fixed(n), .. } => {
            Ok(fixed_values(*n as usize, &attr.raw_data, count)?.map(until_nul).collect())
        }
        // One variable-length string: the reader has already put its bytes in place of its reference.
        _ if count == 1 => Ok(vec![until_nul(&attr.raw_data)]),
        _ => {
            let entry = 4 + heap.offset_size + 4;
            let references = fixed_values(entry, &attr.raw_data, count)?;
            references.map(|r| (heap.resolve)(r, 1).map(|b| until_nul(&b)).map_err(AttributeError::Heap)).collect()
        }
    }
}

/// The `count` values of `size` bytes at the start of `raw`, or why they are not there.
fn fixed_values(size: usize, raw: &[u8], count: u64) -> Result<std::slice::ChunksExact<'_, u8>, AttributeError> {
    let needed = count.checked_mul(size as u64).filter(|&n| n <= raw.len() as u64 && size > 0);
    let Some(needed) = needed else {
        return Err(AttributeError::Short { count, size, stored: raw.len() });
    };
    Ok(raw[..needed as usize].chunks_exact(size))
}

/// The `count` variable-length sequences of `base` values (one list each, as h5py gives an array
/// per element) whose heap references are `attr`'s data.
fn sequences(base: &Datatype, attr: &Attribute, count: u64, heap: &Heap<'_>) -> Result<Vec<Value>, AttributeError> {
    let size = value_size(base, 0).ok_or(AttributeError::UnsizedSequence)?;
    let entry = 4 + heap.offset_size + 4;
    let mut out = Vec::new();
    for reference in fixed_values(entry, &attr.raw_data, count)? {
        let bytes = (heap.resolve)(reference, size).map_err(AttributeError::Sequence)?;
        let values: Result<Vec<Value>, AttributeError> =
            bytes.chunks_exact(size.max(1)).map(|b| value(base, b, 0)).collect();
        out.push(Value::Array(values?));
    }
    Ok(out)
}

/// Whether an enum of `members` over `base` is h5py's boolean: exactly `FALSE` = 0 and `TRUE` = 1.
pub(crate) fn is_h5py_bool(base: &Datatype, members: &[hdf5_reader::EnumMember]) -> bool {
    let value = |bytes: &[u8]| numbers(base, bytes, 1).ok().and_then(|mut v| v.pop()).and_then(|v| v.as_i64());
    are_bool_members(members.iter().map(|m| (m.name.as_str(), value(&m.value))))
}

/// Whether an enum's members (name, integer value) are exactly h5py's booleans: FALSE = 0, TRUE = 1.
pub(crate) fn are_bool_members<'a>(members: impl IntoIterator<Item = (&'a str, Option<i64>)>) -> bool {
    let mut found: Vec<(&str, Option<i64>)> = members.into_iter().collect();
    found.sort_unstable();
    found == [("FALSE", Some(0)), ("TRUE", Some(1))]
}

/// The integers of an h5py boolean as JSON booleans (any value but 0 is true).
fn booleans(values: Vec<Value>) -> Vec<Value> {
    values.into_iter().map(|v| Value::Bool(v.as_i64() != Some(0))).collect()
}

/// The numeric type of a number-valued attribute as libnetcdf gives it (an enum's base type; a
/// bitfield as an unsigned integer; 9- to 16-byte integers as 64-bit ones), the complex type of a
/// complex attribute (as h5py gives it), None for other kinds (h5py's booleans included: JSON keeps
/// their type).
pub(crate) fn attribute_type(datatype: &Datatype) -> Option<DataType> {
    match datatype {
        Datatype::Enum { base, members } if is_h5py_bool(base, members) => None,
        Datatype::Enum { base, .. } => attribute_type(base),
        Datatype::Compound { .. } => match super::element::complex(datatype) {
            Some(super::element::ElementType::Numeric(t, _)) => Some(t),
            _ => None,
        },
        Datatype::FixedPoint { size, signed, .. } => Some(match (size, signed) {
            (1, true) => DataType::Int8,
            (1, false) => DataType::UInt8,
            (2, true) => DataType::Int16,
            (2, false) => DataType::UInt16,
            (4, true) => DataType::Int32,
            (4, false) => DataType::UInt32,
            (_, true) => DataType::Int64,
            (_, false) => DataType::UInt64,
        }),
        Datatype::Bitfield { size, .. } => Some(match size {
            1 => DataType::UInt8,
            2 => DataType::UInt16,
            4 => DataType::UInt32,
            _ => DataType::UInt64,
        }),
        Datatype::FloatingPoint { size: 2, .. } => Some(DataType::Float16),
        Datatype::FloatingPoint { size: 4, .. } => Some(DataType::Float32),
        Datatype::FloatingPoint { .. } => Some(DataType::Float64),
        _ => None,
    }
}

/// The paths object references resolve to, as an attribute value: a string for a scalar or
/// one-element attribute, else a list.
pub(crate) fn reference_json(paths: Vec<String>, shape: &[u64]) -> Value {
    one_or_list(paths.into_iter().map(Value::from).collect(), shape)
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
pub(super) fn numbers(datatype: &Datatype, raw: &[u8], count: u64) -> Result<Vec<Value>, AttributeError> {
    let (size, order) = match datatype {
        Datatype::FixedPoint { size, byte_order, .. }
        | Datatype::FloatingPoint { size, byte_order }
        | Datatype::Bitfield { size, byte_order } => (usize::from(*size), *byte_order),
        Datatype::Compound { .. } => return Err(AttributeError::NotNumeric("nested compound type")),
        Datatype::Opaque { .. } => return Err(AttributeError::NotNumeric("opaque type")),
        Datatype::Reference { .. } => return Err(AttributeError::NotNumeric("reference type")),
        Datatype::VarLen { .. } => return Err(AttributeError::NotNumeric("variable-length type")),
        Datatype::Array { .. } => return Err(AttributeError::NotNumeric("array type")),
        Datatype::Enum { .. } | Datatype::String { .. } => return Err(AttributeError::NotNumeric("nested type")),
    };
    let wide = matches!(datatype, Datatype::FixedPoint { .. }) && (9..=16).contains(&size);
    if !wide && (!matches!(size, 1 | 2 | 4 | 8) || (matches!(datatype, Datatype::FloatingPoint { .. }) && size < 4)) {
        return Err(AttributeError::NumberSize(size));
    }
    let needed = count.checked_mul(size as u64).filter(|&n| n <= raw.len() as u64);
    let Some(needed) = needed else {
        return Err(AttributeError::Short { count, size, stored: raw.len() });
    };
    let values = raw[..needed as usize].chunks_exact(size);
    if let Datatype::FixedPoint { signed, .. } = datatype {
        if wide {
            return values.map(|bytes| wide_integer(bytes, order, *signed)).collect();
        }
    }
    Ok(values.map(|bytes| number(datatype, bytes, order)).collect())
}

/// An integer of 9 to 16 bytes (PyTables writes 16-byte ones) as libnetcdf reads it: a 64-bit
/// integer of the same value (libhdf5 converts it); a value beyond 64 bits is refused, where libhdf5
/// would clip it.
fn wide_integer(bytes: &[u8], order: ByteOrder, signed: bool) -> Result<Value, AttributeError> {
    let mut buf = [0u8; 16];
    match order {
        ByteOrder::LittleEndian => buf[..bytes.len()].copy_from_slice(bytes),
        ByteOrder::BigEndian => bytes.iter().rev().zip(buf.iter_mut()).for_each(|(b, out)| *out = *b),
    }
    let shift = 128 - bytes.len() * 8;
    let fits = if signed {
        let value = (i128::from_le_bytes(buf) << shift) >> shift;
        i64::try_from(value).map(Value::from).map_err(|_| value.to_string())
    } else {
        let value = u128::from_le_bytes(buf);
        u64::try_from(value).map(Value::from).map_err(|_| value.to_string())
    };
    fits.map_err(|value| AttributeError::WideInteger { size: bytes.len(), value })
}

/// Deepest nesting of compound and array members decoded in an attribute.
const MAX_NESTING: usize = 16;

/// Decodes `count` compound values from `raw`, each a JSON object.
fn records(datatype: &Datatype, raw: &[u8], count: u64) -> Result<Vec<Value>, AttributeError> {
    let size = value_size(datatype, 0).ok_or(AttributeError::UnsizedCompound)?;
    let needed = count.checked_mul(size as u64).filter(|&n| n <= raw.len() as u64);
    let Some(needed) = needed else {
        return Err(AttributeError::Short { count, size, stored: raw.len() });
    };
    raw[..needed as usize].chunks_exact(size.max(1)).map(|bytes| value(datatype, bytes, 0)).collect()
}

/// Bytes of one value of `datatype` (None for types of no fixed size or nested too deep).
fn value_size(datatype: &Datatype, depth: usize) -> Option<usize> {
    if depth > MAX_NESTING {
        return None;
    }
    match datatype {
        Datatype::FixedPoint { size, .. } | Datatype::FloatingPoint { size, .. } | Datatype::Bitfield { size, .. } => {
            Some(usize::from(*size))
        }
        Datatype::String { size: hdf5_reader::StringSize::Fixed(n), .. } => Some(*n as usize),
        Datatype::Compound { size, .. } => Some(*size as usize),
        Datatype::Enum { base, .. } => value_size(base, depth + 1),
        Datatype::Array { base, dims } => {
            dims.iter().try_fold(value_size(base, depth + 1)?, |n, &d| n.checked_mul(usize::try_from(d).ok()?))
        }
        _ => None,
    }
}

/// One value of `datatype` from its `bytes` (exactly its size).
fn value(datatype: &Datatype, bytes: &[u8], depth: usize) -> Result<Value, AttributeError> {
    match datatype {
        Datatype::String { size: hdf5_reader::StringSize::Fixed(_), .. } => {
            Ok(Value::from(trim_nul(&String::from_utf8_lossy(bytes))))
        }
        Datatype::Enum { base, members } if is_h5py_bool(base, members) => {
            value(base, bytes, depth + 1).map(|v| Value::Bool(v.as_i64() != Some(0)))
        }
        Datatype::Enum { base, .. } => value(base, bytes, depth + 1),
        Datatype::Compound { fields, .. } => {
            let mut object = serde_json::Map::with_capacity(fields.len());
            for f in fields {
                let size =
                    value_size(&f.datatype, depth + 1).ok_or_else(|| AttributeError::UnsizedMember(f.name.clone()))?;
                let start = f.byte_offset as usize;
                let member = start.checked_add(size).and_then(|end| bytes.get(start..end));
                let member = member.ok_or_else(|| AttributeError::MemberOutside(f.name.clone()))?;
                object.insert(f.name.clone(), value(&f.datatype, member, depth + 1)?);
            }
            Ok(Value::Object(object))
        }
        Datatype::Array { base, dims } => {
            let size = value_size(base, depth + 1).ok_or(AttributeError::UnsizedArray)?;
            let flat: Vec<Value> =
                bytes.chunks_exact(size.max(1)).map(|b| value(base, b, depth + 1)).collect::<Result<_, _>>()?;
            Ok(nested(flat, dims))
        }
        other => {
            let mut one = numbers(other, bytes, 1)?;
            one.pop().ok_or(AttributeError::Empty)
        }
    }
}

/// `flat` values (row-major) as nested lists of `dims` (h5py's shape of an array type).
fn nested(flat: Vec<Value>, dims: &[u64]) -> Value {
    match dims {
        [] | [_] => Value::Array(flat),
        [_, rest @ ..] => {
            // Dimensions come from the file: saturate (a zero-length one leaves `flat` empty).
            let inner = rest.iter().fold(1usize, |n, &d| n.saturating_mul(usize::try_from(d).unwrap_or(usize::MAX)));
            let inner = inner.max(1);
            let mut items = flat.into_iter();
            let rows = (0..).map_while(|_| {
                let row: Vec<Value> = items.by_ref().take(inner).collect();
                (!row.is_empty()).then(|| nested(row, rest))
            });
            Value::Array(rows.collect())
        }
    }
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

    /// The JSON value of `a`, which has no variable-length data.
    fn json(a: &Attribute) -> Result<Value, AttributeError> {
        let resolve = |_: &[u8], _: usize| Err(hdf5_reader::error::Error::Other("no heap".into()));
        attribute_json(a, &Heap { offset_size: 8, resolve: &resolve }).map(|(value, _)| value)
    }

    #[test]
    fn numbers_in_either_byte_order_and_sign() {
        let le = ByteOrder::LittleEndian;
        let be = ByteOrder::BigEndian;
        let short = |byte_order| Datatype::FixedPoint { size: 2, signed: true, byte_order };
        assert_eq!(json(&attr(short(le), vec![], vec![0xfd, 0xff])).unwrap(), Value::from(-3));
        assert_eq!(json(&attr(short(be), vec![2], vec![0, 1, 0xff, 0xfe])).unwrap(), serde_json::json!([1, -2]));
        let float = Datatype::FloatingPoint { size: 4, byte_order: le };
        let raw: Vec<u8> = [1.5f32, f32::NAN].iter().flat_map(|v| v.to_le_bytes()).collect();
        assert_eq!(json(&attr(float, vec![2], raw)).unwrap(), serde_json::json!([1.5, float_attribute(f64::NAN)]));
        let one = Datatype::FloatingPoint { size: 8, byte_order: le };
        let inf = f64::NEG_INFINITY.to_le_bytes().to_vec();
        assert_eq!(json(&attr(one, vec![1], inf)).unwrap(), float_attribute(f64::NEG_INFINITY));
    }

    #[test]
    fn sixteen_byte_integers_read_as_64_bit_ones_when_they_fit() {
        let wide = |signed, byte_order| Datatype::FixedPoint { size: 16, signed, byte_order };
        let mut big = vec![0u8; 16];
        big[15] = 7;
        assert_eq!(json(&attr(wide(false, ByteOrder::BigEndian), vec![], big)).unwrap(), Value::from(7));
        let minus_two = (-2i128).to_le_bytes().to_vec();
        let signed = json(&attr(wide(true, ByteOrder::LittleEndian), vec![], minus_two)).unwrap();
        assert_eq!(signed, Value::from(-2));
        let huge = (1u128 << 64).to_le_bytes().to_vec();
        let refused = json(&attr(wide(false, ByteOrder::LittleEndian), vec![], huge)).unwrap_err().to_string();
        assert!(refused.contains("16-byte integer 18446744073709551616 beyond 64 bits"), "{refused}");
    }

    fn enumeration(base: Datatype, members: &[(&str, u8)]) -> Datatype {
        let members =
            members.iter().map(|(name, v)| hdf5_reader::EnumMember { name: (*name).into(), value: vec![0, *v] });
        Datatype::Enum { base: Box::new(base), members: members.collect() }
    }

    #[test]
    fn h5py_booleans_are_json_booleans_of_any_integer_base() {
        let be = ByteOrder::BigEndian;
        let short = Datatype::FixedPoint { size: 2, signed: false, byte_order: be };
        // Member order does not matter; the names and values must be exactly h5py's.
        let boolean = enumeration(short.clone(), &[("TRUE", 1), ("FALSE", 0)]);
        assert_eq!(json(&attr(boolean.clone(), vec![], vec![0, 1])).unwrap(), Value::from(true));
        let list = json(&attr(boolean.clone(), vec![3], vec![0, 1, 0, 0, 0, 1])).unwrap();
        assert_eq!(list, serde_json::json!([true, false, true]));
        assert_eq!(attribute_type(&boolean), None);
        for other in [
            enumeration(short.clone(), &[("false", 0), ("true", 1)]),
            enumeration(short.clone(), &[("FALSE", 0), ("TRUE", 2)]),
            enumeration(short.clone(), &[("FALSE", 0), ("TRUE", 1), ("MAYBE", 2)]),
        ] {
            assert_eq!(json(&attr(other.clone(), vec![], vec![0, 1])).unwrap(), Value::from(1));
            assert_eq!(attribute_type(&other), Some(DataType::UInt16));
        }
    }

    #[test]
    fn complex_attributes_are_objects_of_their_parts_and_note_their_type() {
        use hdf5_reader::CompoundField;
        let le = ByteOrder::LittleEndian;
        let part = |name: &str, byte_offset| CompoundField {
            name: name.into(),
            byte_offset,
            datatype: Datatype::FloatingPoint { size: 4, byte_order: le },
        };
        let complex = Datatype::Compound { size: 8, fields: vec![part("r", 0), part("i", 4)] };
        let raw: Vec<u8> = [1.5f32, -2.0].iter().flat_map(|v| v.to_le_bytes()).collect();
        let json = json(&attr(complex.clone(), vec![], raw)).unwrap();
        assert_eq!(json, serde_json::json!({"r": 1.5, "i": -2.0}));
        assert_eq!(attribute_type(&complex), Some(DataType::Complex64));
        let pair = Datatype::Compound { size: 8, fields: vec![part("x", 0), part("y", 4)] };
        assert_eq!(attribute_type(&pair), None);
    }

    #[test]
    fn bitfields_are_unsigned_integers() {
        let bits = Datatype::Bitfield { size: 2, byte_order: ByteOrder::BigEndian };
        assert_eq!(json(&attr(bits, vec![2], vec![0xff, 0xfe, 0, 1])).unwrap(), serde_json::json!([65534, 1]));
    }

    #[test]
    fn compounds_are_objects_of_their_members() {
        use hdf5_reader::CompoundField;
        let le = ByteOrder::LittleEndian;
        let point = Datatype::Compound {
            size: 4,
            fields: vec![
                CompoundField {
                    name: "x".into(),
                    byte_offset: 0,
                    datatype: Datatype::FixedPoint { size: 1, signed: true, byte_order: le },
                },
                CompoundField {
                    name: "v".into(),
                    byte_offset: 1,
                    datatype: Datatype::Array {
                        base: Box::new(Datatype::FixedPoint { size: 1, signed: false, byte_order: le }),
                        dims: vec![3],
                    },
                },
            ],
        };
        let text = Datatype::String {
            size: hdf5_reader::StringSize::Fixed(3),
            encoding: hdf5_reader::StringEncoding::Ascii,
            padding: hdf5_reader::StringPadding::NullPad,
        };
        let record = Datatype::Compound {
            size: 12,
            fields: vec![
                CompoundField { name: "p".into(), byte_offset: 8, datatype: point },
                CompoundField { name: "s".into(), byte_offset: 0, datatype: text },
                CompoundField {
                    name: "f".into(),
                    byte_offset: 4,
                    datatype: Datatype::FloatingPoint { size: 4, byte_order: le },
                },
            ],
        };
        let mut raw = b"ab\0\0".to_vec();
        raw.extend(2.5f32.to_le_bytes());
        raw.extend([0xff, 1, 2, 3]);
        assert_eq!(
            json(&attr(record.clone(), vec![], raw.clone())).unwrap(),
            serde_json::json!({"p": {"x": -1, "v": [1, 2, 3]}, "s": "ab", "f": 2.5})
        );
        assert!(json(&attr(record, vec![2], raw)).is_err(), "two values in the bytes of one");
    }

    #[test]
    fn short_payloads_are_reported() {
        let int = Datatype::FixedPoint { size: 4, signed: false, byte_order: ByteOrder::LittleEndian };
        assert!(json(&attr(int, vec![3], vec![0; 8])).is_err());
    }

    #[test]
    fn opaque_values_and_non_utf8_strings_are_base64_and_array_types_nested() {
        let resolve = |_: &[u8], _: usize| Err(hdf5_reader::error::Error::Other("no heap".into()));
        let heap = Heap { offset_size: 8, resolve: &resolve };
        let opaque = Datatype::Opaque { size: 2, tag: String::new() };
        let (value, encoding) = attribute_json(&attr(opaque, vec![2], vec![0, 1, 0xff, 0xfe]), &heap).unwrap();
        assert_eq!((value, encoding), (serde_json::json!(["AAE=", "//4="]), Some(BASE64)));
        let text = Datatype::String {
            size: hdf5_reader::StringSize::Fixed(4),
            encoding: hdf5_reader::StringEncoding::Ascii,
            padding: hdf5_reader::StringPadding::NullPad,
        };
        let (value, encoding) = attribute_json(&attr(text.clone(), vec![], b"caf\xe9".to_vec()), &heap).unwrap();
        assert_eq!((value, encoding), (Value::from(crate::base64::encode(b"caf\xe9")), Some(BASE64)));
        assert_eq!(attribute_json(&attr(text, vec![], b"ok\0\0".to_vec()), &heap).unwrap(), (Value::from("ok"), None));
        let byte = Datatype::FixedPoint { size: 1, signed: false, byte_order: ByteOrder::LittleEndian };
        let grid = Datatype::Array { base: Box::new(byte), dims: vec![2, 3] };
        let value = json(&attr(grid, vec![2], (0..12).collect())).unwrap();
        assert_eq!(value, serde_json::json!([[[0, 1, 2], [3, 4, 5]], [[6, 7, 8], [9, 10, 11]]]));
    }
}
