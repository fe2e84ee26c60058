//! How an array's data type is written in DMR++, as BES's `get_dmrpp` writes it:
//! - numbers: their DAP4 atomic type (`Int32`, `Float64`, `Byte` for uint8, ...);
//! - enums (members noted by the scan, or booleans): `<Enum enum="/g/name">` after an
//!   `<Enumeration name basetype>` of `<EnumConst>`s declared just before it in the same group;
//! - fixed-length strings: `<String>` over the file's chunks, followed (for arrays) by
//!   `<dmrpp:FixedLengthStringArray string_length pad>`;
//! - variable-length strings: `<String>` with the values inline, `<dmrpp:vlsa>` of `<v>` (a run of
//!   equal values as one `<v c="n">`) for arrays, `<dmrpp:compact>` (base64 of the text) for a scalar;
//! - packed structures: `<Structure>` whose members are variable elements (an array member with its
//!   `<Dim size>`s), over the file's chunks, the fill value as the leaf values in order.
//!
//! Structures with string members are written with their elements (`dmrpp/special_struct`, BES's
//! `dmrpp:specialstructuredata`); those with nested structure members are refused.

use std::fmt::Write as _;

use super::attributes::escape;
use crate::dataset::VirtualArray;
use crate::manifest::ChunkEntry;
use crate::metadata::{DataType, StructType};

/// The DMR++ form of an array's type.
pub(super) enum Kind {
    /// A DAP4 atomic numeric type.
    Atomic(&'static str),
    /// An enumeration over a base type: base type name, `(name, value)` members, declared name.
    Enum { base: &'static str, members: Vec<(String, String)>, name: String },
    /// Fixed-length strings of this many bytes.
    FixedString(u32),
    /// Variable-length strings.
    VlenString,
    /// A packed structure.
    Struct(&'static StructType),
}

/// Why a type has no DMR++ form here.
#[derive(Debug, thiserror::Error)]
pub(super) enum TypeError {
    /// A data type with no DAP4 form.
    #[error("its data type {0} has no DAP4 type here")]
    NoDapType(&'static str),
    /// A structure member vzarr does not write.
    #[error("its structure member {member:?} is {what}, which vzarr does not write in DMR++ (BES: dmrpp:specialstructuredata)")]
    Member {
        /// The member's name.
        member: String,
        /// What it is.
        what: &'static str,
    },
    /// Strings vzarr cannot gather.
    #[error("its variable-length strings: {0}")]
    Strings(String),
}

/// The DAP4 atomic type name of a numeric data type.
pub(super) fn dap_type(data_type: DataType) -> Option<&'static str> {
    Some(match data_type {
        DataType::Int8 => "Int8",
        DataType::UInt8 => "Byte",
        DataType::Int16 => "Int16",
        DataType::UInt16 => "UInt16",
        DataType::Int32 => "Int32",
        DataType::UInt32 => "UInt32",
        DataType::Int64 => "Int64",
        DataType::UInt64 => "UInt64",
        DataType::Float32 => "Float32",
        DataType::Float64 => "Float64",
        _ => return None,
    })
}

impl Kind {
    /// The kind of `array`.
    ///
    /// # Errors
    /// [`TypeError`]: a type with no DMR++ form here.
    pub(super) fn of(array: &VirtualArray) -> Result<Kind, TypeError> {
        let metadata = &array.metadata;
        let leaf = array.path.rsplit('/').next().unwrap_or(&array.path);
        let name = || metadata.notes.enum_name.clone().unwrap_or_else(|| format!("{leaf}_enum"));
        match metadata.data_type {
            DataType::Bool => {
                let members = vec![("FALSE".to_string(), "0".to_string()), ("TRUE".to_string(), "1".to_string())];
                Ok(Kind::Enum { base: "Int8", members, name: name() })
            }
            DataType::FixedBytes(n) => Ok(Kind::FixedString(n)),
            DataType::String => Ok(Kind::VlenString),
            DataType::Struct(fields) => Ok(Kind::Struct(fields)),
            data_type => {
                let dap = dap_type(data_type).ok_or(TypeError::NoDapType(data_type.name()))?;
                match &metadata.notes.enum_members {
                    Some(members) => {
                        let members = members.iter().map(|(k, v)| (k.clone(), v.to_string())).collect();
                        Ok(Kind::Enum { base: dap, members, name: name() })
                    }
                    None => Ok(Kind::Atomic(dap)),
                }
            }
        }
    }

    /// The variable element's tag.
    pub(super) fn tag(&self) -> &'static str {
        match self {
            Kind::Atomic(dap) => dap,
            Kind::Enum { .. } => "Enum",
            Kind::FixedString(_) | Kind::VlenString => "String",
            Kind::Struct(_) => "Structure",
        }
    }

    /// The `<Enumeration>` to declare before the variable (in group `group`), and the variable's
    /// ` enum="/fqn"` attribute; empty for other kinds.
    pub(super) fn enumeration(&self, group: &str, indent: &str) -> (String, String) {
        let Kind::Enum { base, members, name } = self else { return (String::new(), String::new()) };
        let mut out = format!("{indent}<Enumeration name=\"{}\" basetype=\"{base}\">\n", escape(name));
        for (member, value) in members {
            writeln!(out, "{indent}    <EnumConst name=\"{}\" value=\"{value}\"/>", escape(member)).ok();
        }
        writeln!(out, "{indent}</Enumeration>").ok();
        let fqn = if group.is_empty() { format!("/{name}") } else { format!("/{group}/{name}") };
        (out, format!(" enum=\"{}\"", escape(&fqn)))
    }
}

/// A structure's members as variable elements.
///
/// # Errors
/// [`TypeError::Member`] for string and nested structure members.
pub(super) fn members_xml(array: &VirtualArray, fields: &StructType, indent: &str) -> Result<String, TypeError> {
    let compound = array.metadata.notes.compound.as_ref();
    let mut out = String::new();
    for field in fields.fields() {
        let dims = compound.and_then(|c| c.array_members.get(&field.name));
        let base = match (field.data_type, dims) {
            (DataType::Struct(inner), Some(_)) => inner.fields().first().map(|f| f.data_type),
            (data_type, None) => Some(data_type),
            _ => None,
        };
        let what = match base {
            Some(DataType::FixedBytes(_) | DataType::FixedUtf32(_) | DataType::String) => "a string",
            Some(DataType::Struct(_)) => "a structure",
            _ => "of no DAP4 atomic type",
        };
        let dap = base.and_then(dap_type).ok_or_else(|| TypeError::Member { member: field.name.clone(), what })?;
        let name = escape(&field.name);
        match dims {
            None => writeln!(out, "{indent}<{dap} name=\"{name}\"/>").ok(),
            Some(dims) => {
                writeln!(out, "{indent}<{dap} name=\"{name}\">").ok();
                for d in dims {
                    writeln!(out, "{indent}    <Dim size=\"{d}\"/>").ok();
                }
                writeln!(out, "{indent}</{dap}>").ok()
            }
        };
    }
    Ok(out)
}

/// A structure's fill value as BES writes it: `0` for the default (all bytes zero), else its leaf
/// values in order, space-separated.
pub(super) fn struct_fill_text(fields: &StructType, bytes: &[u8]) -> String {
    if bytes.iter().all(|&b| b == 0) {
        return "0".into();
    }
    let mut values = Vec::new();
    leaf_values(fields, bytes, &mut values);
    values.join(" ")
}

fn leaf_values(fields: &StructType, bytes: &[u8], out: &mut Vec<String>) {
    for (offset, field) in fields.offsets() {
        let Some(slice) = bytes.get(offset..offset + field.data_type.size()) else { return };
        match field.data_type {
            DataType::Struct(inner) => leaf_values(inner, slice, out),
            data_type => out.push(number_text(data_type, slice)),
        }
    }
}

/// One native-order element as `get_dmrpp` prints a number.
pub(super) fn number_text(data_type: DataType, bytes: &[u8]) -> String {
    let value = data_type.values_to_f64(bytes).first().copied().unwrap_or(0.0);
    match data_type {
        DataType::Float32 | DataType::Float64 if value.is_nan() => "nan".into(),
        DataType::Float32 | DataType::Float64 if value.is_infinite() => if value > 0.0 { "inf" } else { "-inf" }.into(),
        DataType::Float32 => format!("{}", value as f32),
        DataType::Float64 => format!("{value}"),
        DataType::Int64 if bytes.len() == 8 => i64::from_ne_bytes(bytes.try_into().unwrap_or([0; 8])).to_string(),
        DataType::UInt64 if bytes.len() == 8 => u64::from_ne_bytes(bytes.try_into().unwrap_or([0; 8])).to_string(),
        _ => format!("{}", value as i64),
    }
}

/// A fixed-length string's fill value as text: its bytes up to the first NUL.
pub(super) fn fixed_fill_text(bytes: &[u8]) -> String {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}

/// The values of a variable-length string array: `<dmrpp:compact>` for a scalar, `<dmrpp:vlsa>`
/// otherwise.
///
/// # Errors
/// [`TypeError::Strings`]: strings not held as one store-owned chunk, or that do not decode.
pub(super) fn strings_xml(array: &VirtualArray, indent: &str) -> Result<String, TypeError> {
    let metadata = &array.metadata;
    let entries: Vec<ChunkEntry> = array.chunks.iter().collect();
    let [ChunkEntry::Owned { offset, length }] = entries.as_slice() else {
        return Err(TypeError::Strings(format!("held in {} chunks, not one", entries.len())));
    };
    let count = metadata.shape().iter().product::<u64>() as usize;
    let bytes = array.chunks.owned_chunk(*offset, *length).map_err(|e| TypeError::Strings(e.to_string()))?;
    let values = metadata.codecs.decode_strings(&bytes, count).map_err(|e| TypeError::Strings(e.to_string()))?;
    if metadata.shape().is_empty() {
        let text = values.first().map(String::as_bytes).unwrap_or_default();
        return Ok(format!("{indent}<dmrpp:compact>{}</dmrpp:compact>\n", crate::base64::encode(text)));
    }
    let mut out = format!("{indent}<dmrpp:vlsa>\n");
    let mut k = 0;
    while k < values.len() {
        let run = values[k..].iter().take_while(|v| **v == values[k]).count();
        let repeat = if run > 1 { format!(" c=\"{run}\"") } else { String::new() };
        writeln!(out, "{indent}    <v{repeat}>{}</v>", escape(&values[k])).ok();
        k += run;
    }
    writeln!(out, "{indent}</dmrpp:vlsa>").ok();
    Ok(out)
}
