//! The Zarr element type of a DMR++ variable (input: its element, its storage, the DMR's
//! enumerations; output: [`ElementInfo`]), as the HDF5 scanner types the same dataset: DAP4
//! numbers as their types, an `Enum` as its base integer with its members, a fixed-length
//! `String` as fixed-width bytes, a variable-length one as `string`, a `Structure` whose members
//! leave no padding as a packed `struct` (array members as nested structs named by index, as
//! `scan/hdf5/compound` maps them), and `Char` as one byte of text.

use std::collections::HashMap;

use super::chunks::{ChunksInfo, Storage};
use super::types::{atomic, value_bytes};
use super::xml::Element;
use crate::metadata::{DataType, StructField, StructType};

/// Most fields one nested struct of an array member may have, and most leaves in all.
const MAX_FIELDS: u64 = 4096;

/// A variable's element type and what goes with it.
pub(super) struct ElementInfo {
    pub(super) data_type: DataType,
    /// An `Enum`'s members (name, value), in document order.
    pub(super) enum_members: Option<Vec<(String, serde_json::Value)>>,
    /// The leaves of a struct (their types, in byte order), for its fill value.
    pub(super) leaves: Vec<DataType>,
    /// A structure whose members leave padding (BES's `structOffset`): how a stored element
    /// becomes the packed struct's.
    pub(super) padding: Option<Padding>,
}

impl ElementInfo {
    /// The element of an atomic `data_type`: no enum, no struct leaves, no padding.
    pub(super) fn plain(data_type: DataType) -> Self {
        ElementInfo { data_type, enum_members: None, leaves: Vec::new(), padding: None }
    }
}

/// Which bytes of a stored structure element make the packed struct element.
#[derive(Debug, Clone)]
pub(super) struct Padding {
    /// Bytes of one stored element, padding included.
    pub(super) stored_size: usize,
    /// (offset in the stored element, length) of each member, in order.
    pub(super) runs: Vec<(usize, usize)>,
}

impl Padding {
    /// The packed form of every whole stored element of `stored`.
    pub(super) fn pack(&self, stored: &[u8]) -> Vec<u8> {
        let packed: usize = self.runs.iter().map(|r| r.1).sum();
        let mut out = Vec::with_capacity(stored.len() / self.stored_size.max(1) * packed);
        for element in stored.chunks_exact(self.stored_size.max(1)) {
            for &(offset, len) in &self.runs {
                out.extend_from_slice(&element[offset..offset + len]);
            }
        }
        out
    }
}

/// Why a variable's elements have no Zarr type vzarr references (an unsupported variable).
#[derive(Debug, thiserror::Error)]
pub(super) enum ElementError {
    /// A DAP4 type with no Zarr form.
    #[error("cannot reference elements of DAP4 type {0}")]
    DapType(String),
    /// An enumeration the document does not declare.
    #[error("enumeration {0:?} is not declared")]
    Undeclared(String),
    /// An enumeration over a base type with no Zarr integer form.
    #[error("enumeration {name} has base type {base:?}")]
    EnumBase {
        /// The enumeration.
        name: String,
        /// Its base type.
        base: String,
    },
    /// A value that does not parse.
    #[error("{0}")]
    Value(#[from] super::types::ValueError),
    /// A `string_length` that is not valid.
    #[error("a string_length that is not valid")]
    StringLength,
    /// A string variable whose length the sidecar does not give.
    #[error("a String variable whose string length the sidecar does not give")]
    NoLength,
    /// A string of no bytes.
    #[error("an empty string")]
    Empty,
    /// Structures nested too deep.
    #[error("structures nested deeper than 8")]
    TooDeep,
    /// A member with no struct field form.
    #[error("member {name} of type {kind} has no Zarr struct field form")]
    MemberType {
        /// The member.
        name: String,
        /// Its DAP4 type.
        kind: String,
    },
    /// A member dimension without a size.
    #[error("member {0} has a dimension without a size")]
    MemberDim(String),
    /// A structure without members.
    #[error("a structure without members")]
    NoMembers,
    /// The struct type is refused.
    #[error("{0}")]
    Struct(#[source] crate::metadata::MetadataError),
    /// An array member of too many (or no) elements.
    #[error("an array member of {0} elements per dimension (at most {MAX_FIELDS})")]
    ArrayMember(u64),
    /// A structure whose members leave padding.
    #[error(
        "a structure with padding (members at {offsets:?}, packed they would end at {packed:?}): its stored elements are not a packed Zarr struct's"
    )]
    Padding {
        /// The members' offsets.
        offsets: Vec<u64>,
        /// Where they would end packed.
        packed: Vec<u64>,
    },
}

/// The element type of variable `element` stored as `storage`, or why it has none vzarr can use.
pub(super) fn element_info(
    element: &Element,
    storage: &Storage,
    enumerations: &HashMap<String, &Element>,
) -> Result<ElementInfo, ElementError> {
    let plain = |data_type| ElementInfo { data_type, enum_members: None, leaves: Vec::new(), padding: None };
    if let Some(t) = atomic(&element.name) {
        return Ok(plain(t));
    }
    match element.name.as_str() {
        "Enum" => enum_info(element, enumerations),
        "String" => string_type(element, storage).map(plain),
        "Structure" => {
            let mut leaves = Vec::new();
            let data_type = struct_type(element, 0, &mut leaves)?;
            let padding = match storage {
                Storage::Chunks(info) | Storage::Inline(info, _) => check_packed(element, info, &leaves)?,
                _ => None,
            };
            Ok(ElementInfo { data_type, enum_members: None, leaves, padding })
        }
        other => Err(ElementError::DapType(other.to_string())),
    }
}

/// An `Enum`: its base type and members from the `Enumeration` it names.
fn enum_info(element: &Element, enumerations: &HashMap<String, &Element>) -> Result<ElementInfo, ElementError> {
    let name = element.attr("enum").unwrap_or_default();
    let definition = enumerations.get(name).ok_or_else(|| ElementError::Undeclared(name.to_string()))?;
    let base = definition.attr("basetype").unwrap_or_default();
    let data_type = atomic(base)
        .filter(|t| !t.is_float() && *t != DataType::FixedBytes(1))
        .ok_or_else(|| ElementError::EnumBase { name: name.to_string(), base: base.to_string() })?;
    let mut members = Vec::new();
    for constant in definition.children_named("EnumConst") {
        let value = constant.attr("value").unwrap_or_default();
        let bytes = value_bytes(data_type, value)?;
        let number = match data_type {
            DataType::UInt64 => serde_json::Value::from(u64::from_ne_bytes(bytes.try_into().unwrap_or_default())),
            DataType::Int64 => serde_json::Value::from(i64::from_ne_bytes(bytes.try_into().unwrap_or_default())),
            t => serde_json::Value::from(t.values_to_f64(&bytes).first().copied().unwrap_or(0.0) as i64),
        };
        members.push((constant.attr("name").unwrap_or_default().to_string(), number));
    }
    if data_type.size() == 1
        && crate::scan::hdf5::are_bool_members(members.iter().map(|(n, v)| (n.as_str(), v.as_i64())))
    {
        // h5py's booleans (a 1-byte enum of exactly FALSE = 0 and TRUE = 1) are Zarr `bool`, as the
        // HDF5 scanner gives them: the byte is the enum's.
        return Ok(ElementInfo { data_type: DataType::Bool, enum_members: None, leaves: Vec::new(), padding: None });
    }
    Ok(ElementInfo { data_type, enum_members: Some(members), leaves: Vec::new(), padding: None })
}

/// A `String`'s element: fixed-width bytes of `dmrpp:FixedLengthStringArray`'s length, `string`
/// for `dmrpp:vlsa`; a scalar stored in one piece is a fixed string of that piece's length.
fn string_type(element: &Element, storage: &Storage) -> Result<DataType, ElementError> {
    if let Some(fixed) = element.child("dmrpp:FixedLengthStringArray") {
        let length = fixed.attr("string_length").and_then(|l| l.trim().parse::<u32>().ok());
        return length.filter(|&l| l > 0).map(DataType::FixedBytes).ok_or(ElementError::StringLength);
    }
    let scalar = element.child("Dim").is_none();
    let length = match storage {
        Storage::Strings(_) => return Ok(DataType::String),
        // BES writes a variable-length scalar's text as compact data without `dmrpp:chunks`.
        Storage::Inline(_, _) if scalar && element.child("dmrpp:chunks").is_none() => return Ok(DataType::String),
        Storage::Inline(_, bytes) if scalar => bytes.len() as u64,
        // A scalar never written (no storage allocated, no chunk listed) holds its fill value, and
        // BES writes a fixed-length string's fill as its text: the text's length is the string's.
        Storage::Chunks(ChunksInfo { chunks, chunk_shape: None, fill: Some(fill), .. })
            if scalar && chunks.is_empty() && !fill.trim().is_empty() && !fill.starts_with("unsupported") =>
        {
            fill.trim().len() as u64
        }
        Storage::Chunks(ChunksInfo { chunks, chunk_shape: None, filters, .. })
            if scalar && chunks.len() == 1 && filters.is_empty() =>
        {
            chunks.first().map_or(0, |c| c.length)
        }
        // An array whose length older BES versions leave out: unfiltered chunks of the chunk shape
        // (or one block of the whole shape), every one holding the same whole number of bytes per
        // element, give it.
        Storage::Chunks(ChunksInfo { chunks, chunk_shape, filters, .. }) if !scalar && filters.is_empty() => {
            let dims: Vec<u64> = element
                .children_named("Dim")
                .filter_map(|d| d.attr("size").and_then(|s| s.trim().parse::<u64>().ok()))
                .collect();
            let elements: u64 = chunk_shape.as_deref().unwrap_or(&dims).iter().product();
            let lengths: Vec<u64> = chunks.iter().map(|c| c.length).collect();
            match lengths.first() {
                Some(&first) if elements > 0 && first % elements == 0 && lengths.iter().all(|&l| l == first) => {
                    first / elements
                }
                _ => return Err(ElementError::NoLength),
            }
        }
        _ => return Err(ElementError::NoLength),
    };
    u32::try_from(length).ok().filter(|&l| l > 0).map(DataType::FixedBytes).ok_or(ElementError::Empty)
}

/// A `Structure` (or an array member, `depth` > 0 for nesting) as a packed struct; `leaves` gets the
/// leaf types in byte order.
fn struct_type(element: &Element, depth: usize, leaves: &mut Vec<DataType>) -> Result<DataType, ElementError> {
    if depth > 8 {
        return Err(ElementError::TooDeep);
    }
    let mut fields = Vec::new();
    for member in element.children.iter().filter(|c| super::types::names_a_variable(c)) {
        let name = member.attr("name").unwrap_or_default().to_string();
        let base = match atomic(&member.name) {
            Some(DataType::FixedBytes(1)) | None if member.name != "Structure" => {
                return Err(ElementError::MemberType { name, kind: member.name.clone() })
            }
            Some(t) => t,
            None => struct_type(member, depth + 1, &mut Vec::new())?,
        };
        let dims: Vec<u64> = member
            .children_named("Dim")
            .map(|d| d.attr("size").and_then(|s| s.trim().parse::<u64>().ok()))
            .collect::<Option<_>>()
            .ok_or_else(|| ElementError::MemberDim(name.clone()))?;
        let data_type = nest(base, &dims, leaves)?;
        fields.push(StructField { name, data_type });
    }
    if fields.is_empty() {
        return Err(ElementError::NoMembers);
    }
    StructType::intern(fields).map(DataType::Struct).map_err(ElementError::Struct)
}

/// `base` repeated over `dims` as nested structs with fields "0", "1", ...; leaves recorded.
fn nest(base: DataType, dims: &[u64], leaves: &mut Vec<DataType>) -> Result<DataType, ElementError> {
    let Some((&n, rest)) = dims.split_first() else {
        match base {
            DataType::Struct(s) => leaves.extend(flat_leaves(s)),
            t => leaves.push(t),
        }
        return Ok(base);
    };
    if n == 0 || n > MAX_FIELDS || leaves.len() as u64 > MAX_FIELDS {
        return Err(ElementError::ArrayMember(n));
    }
    let mut fields = Vec::with_capacity(n as usize);
    for i in 0..n {
        fields.push(StructField { name: i.to_string(), data_type: nest(base, rest, leaves)? });
    }
    StructType::intern(fields).map(DataType::Struct).map_err(ElementError::Struct)
}

fn flat_leaves(s: &StructType) -> Vec<DataType> {
    s.fields()
        .iter()
        .flat_map(|f| match f.data_type {
            DataType::Struct(inner) => flat_leaves(inner),
            t => vec![t],
        })
        .collect()
}

/// Whether variable `element` holds one-byte strings (a netCDF `char`): `Char`, or a `String` of
/// fixed length 1.
pub(super) fn is_char(element: &Element) -> bool {
    let fixed = element.child("dmrpp:FixedLengthStringArray").and_then(|f| f.attr("string_length"));
    element.name == "Char" || (element.name == "String" && fixed.is_some_and(|l| l.trim() == "1"))
}

/// Refuses a structure whose members leave padding (BES's `structOffset`: the offsets of the
/// members after the first, then the stored size): its stored elements are not the packed struct's.
fn check_packed(element: &Element, info: &ChunksInfo, leaves: &[DataType]) -> Result<Option<Padding>, ElementError> {
    let Some(offsets) = &info.struct_offsets else { return Ok(None) };
    let sizes: Vec<u64> = element
        .children
        .iter()
        .filter(|c| super::types::names_a_variable(c))
        .map(|m| {
            let mut l = Vec::new();
            let base = atomic(&m.name).map_or(0, |t| t.size() as u64);
            let count: u64 = m.children_named("Dim").filter_map(|d| d.attr("size")?.parse::<u64>().ok()).product();
            if base == 0 {
                struct_type(m, 1, &mut l).map_or(0, |t| t.size() as u64)
            } else {
                base * count
            }
        })
        .collect();
    let packed: Vec<u64> = sizes
        .iter()
        .scan(0, |end, s| {
            *end += s;
            Some(*end)
        })
        .collect();
    let stored = offsets.last().copied().unwrap_or(0);
    if *offsets == packed && stored == leaves.iter().map(|t| t.size() as u64).sum::<u64>() {
        return Ok(None);
    }
    // Member k starts at offsets[k - 1] (the first at 0), the element is offsets' last value long.
    let starts: Vec<u64> = std::iter::once(0).chain(offsets.iter().copied()).take(sizes.len()).collect();
    let fits = offsets.len() == sizes.len()
        && starts.windows(2).all(|w| w[0] <= w[1])
        && starts.iter().zip(&sizes).all(|(s, n)| s + n <= stored);
    if !fits || stored > usize::MAX as u64 {
        return Err(ElementError::Padding { offsets: offsets.clone(), packed });
    }
    let runs = starts.iter().zip(&sizes).map(|(&s, &n)| (s as usize, n as usize)).collect();
    Ok(Some(Padding { stored_size: stored as usize, runs }))
}
