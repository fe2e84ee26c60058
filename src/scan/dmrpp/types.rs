//! DAP4 atomic types (the DAP4 specification, volume 1, "Atomic types") as vzarr data types, and
//! their values written as DMR++ text (`fillValue`, attribute `<Value>`s) as element bytes.
//!
//! `Byte` is unsigned (DAP4's `Byte` is `UInt8`), `Char` one byte of text (a netCDF `char`, as the
//! HDF5 scanner's `FixedBytes(1)`). `String`, `URL`, `Opaque`, `Enum`, `Structure` and `Sequence`
//! are not atomic numbers and are handled by the callers.

use crate::metadata::DataType;

/// The data type of a DAP4 numeric (or `Char`) type name; `None` for any other name.
pub(super) fn atomic(name: &str) -> Option<DataType> {
    Some(match name {
        "Byte" | "UInt8" => DataType::UInt8,
        "Int8" => DataType::Int8,
        "Char" => DataType::FixedBytes(1),
        "Int16" => DataType::Int16,
        "UInt16" => DataType::UInt16,
        "Int32" => DataType::Int32,
        "UInt32" => DataType::UInt32,
        "Int64" => DataType::Int64,
        "UInt64" => DataType::UInt64,
        "Float32" => DataType::Float32,
        "Float64" => DataType::Float64,
        _ => return None,
    })
}

/// Whether `name` is an element naming a variable (of any DAP4 type).
pub(super) fn is_variable(name: &str) -> bool {
    atomic(name).is_some() || matches!(name, "String" | "URL" | "Opaque" | "Enum" | "Structure" | "Sequence")
}

/// Elements of a group or structure that name something other than a variable.
const NOT_VARIABLES: [&str; 6] = ["Dimension", "Enumeration", "Group", "Attribute", "Dim", "Map"];

/// Whether `element` (a child of a group or structure) declares a variable: one of DAP4's types, or
/// an element of an unknown name that is named (`<Float128 name="x">`) and not one of DAP4's other
/// elements nor namespaced (`dmrpp:chunks`). A variable of a type vzarr does not know is then
/// refused by name (an error, or a warning under `skip_unsupported`), never silently left out.
pub(super) fn names_a_variable(element: &super::xml::Element) -> bool {
    let name = element.name.as_str();
    is_variable(name) || (element.attr("name").is_some() && !name.contains(':') && !NOT_VARIABLES.contains(&name))
}

/// Why a value's text gives no value of its type.
#[derive(Debug, Clone, thiserror::Error)]
pub(super) enum ValueError {
    /// Text that is no value of the type.
    #[error("{text:?} is not a {data_type} value")]
    NotA {
        /// The text (trimmed).
        text: String,
        /// The type.
        data_type: DataType,
    },
    /// A type whose values have no text form.
    #[error("no text form for a {0} value")]
    NoTextForm(DataType),
}

/// One value of `data_type` written as text, as native-endian bytes. Floats accept what BES
/// writes (`-9999.000000`, `9.96921e+36`, `nan`, `inf`); integers must fit the type.
///
/// # Errors
/// [`ValueError`] when the text is not a value of the type.
pub(super) fn value_bytes(data_type: DataType, text: &str) -> Result<Vec<u8>, ValueError> {
    let text = text.trim();
    let bad = || ValueError::NotA { text: text.to_string(), data_type };
    macro_rules! int {
        ($t:ty) => {
            parse_int::<$t>(text).ok_or_else(bad)?.to_ne_bytes().to_vec()
        };
    }
    Ok(match data_type {
        DataType::UInt8 => int!(u8),
        DataType::Int8 => int!(i8),
        DataType::Int16 => int!(i16),
        DataType::UInt16 => int!(u16),
        DataType::Int32 => int!(i32),
        DataType::UInt32 => int!(u32),
        DataType::Int64 => int!(i64),
        DataType::UInt64 => int!(u64),
        DataType::Float32 => (parse_float(text).ok_or_else(bad)? as f32).to_ne_bytes().to_vec(),
        DataType::Float64 => parse_float(text).ok_or_else(bad)?.to_ne_bytes().to_vec(),
        DataType::FixedBytes(n) => {
            let mut bytes = text.as_bytes().to_vec();
            bytes.resize(n as usize, 0);
            bytes
        }
        other => return Err(ValueError::NoTextForm(other)),
    })
}

/// An integer, also when written as a float with no fraction (`-99.0`).
fn parse_int<T: TryFrom<i128> + std::str::FromStr>(text: &str) -> Option<T> {
    if let Ok(v) = text.parse::<T>() {
        return Some(v);
    }
    let wide = text.parse::<i128>().ok().or_else(|| {
        let f = text.parse::<f64>().ok().filter(|f| f.fract() == 0.0 && f.abs() < 1e30)?;
        Some(f as i128)
    })?;
    T::try_from(wide).ok()
}

/// A float, with the spellings C's `printf` gives non-finite values.
pub(super) fn parse_float(text: &str) -> Option<f64> {
    match text.to_ascii_lowercase().as_str() {
        "nan" | "-nan" | "+nan" => Some(f64::NAN),
        "inf" | "+inf" | "infinity" => Some(f64::INFINITY),
        "-inf" | "-infinity" => Some(f64::NEG_INFINITY),
        t => t.parse().ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_parse_as_bes_writes_them() {
        assert_eq!(value_bytes(DataType::Int8, "-99").unwrap(), (-99i8).to_ne_bytes());
        assert_eq!(value_bytes(DataType::UInt16, "65535").unwrap(), 65535u16.to_ne_bytes());
        assert_eq!(value_bytes(DataType::Float32, "-9999.000000").unwrap(), (-9999f32).to_ne_bytes());
        assert_eq!(value_bytes(DataType::Float32, "9.96921e+36").unwrap(), 9.96921e36f32.to_ne_bytes());
        assert_eq!(value_bytes(DataType::UInt64, "18446744073709551615").unwrap(), u64::MAX.to_ne_bytes());
        assert_eq!(value_bytes(DataType::Int32, "-99.0").unwrap(), (-99i32).to_ne_bytes());
        assert!(value_bytes(DataType::Int8, "300").is_err());
        assert!(value_bytes(DataType::Int32, "x").is_err());
        assert!(f32::from_ne_bytes(value_bytes(DataType::Float32, "nan").unwrap().try_into().unwrap()).is_nan());
    }

    #[test]
    fn type_names_map() {
        assert_eq!(atomic("Byte"), Some(DataType::UInt8));
        assert_eq!(atomic("Float64"), Some(DataType::Float64));
        assert!(atomic("String").is_none());
        assert!(is_variable("Structure") && !is_variable("Attribute"));
    }
}
