//! Structures with string members whose values BES writes into the sidecar itself
//! (`<dmrpp:specialstructuredata>`; input: the structure's element, the decoded data and its element
//! count; output: [`SpecialStruct`]), stored as the HDF5 scanner stores the same compound.
//!
//! BES's `get_dmrpp` reads such a compound with libhdf5 and writes, element after element, member
//! after member: a number (or an array of numbers) as its little-endian bytes, a string as the
//! base64 of its bytes followed by `;`. A fixed-length HDF5 string member is written with its whole
//! width (padding included), a variable-length one as its text. So a string member whose values all
//! have the same byte length n is the file's fixed-length string of n bytes, and becomes a field of
//! `n` bytes as the HDF5 scanner's `element/compound` gives it; one whose values differ in length
//! is a variable-length string, and becomes NUL-padded UTF-32 as wide as its longest value, as the
//! HDF5 scanner's `text_struct` gives it. A member that is an array of strings or a structure is
//! refused, as the HDF5 scanner refuses it.

use super::types::{atomic, names_a_variable};
use super::xml::Element;
use crate::metadata::{DataType, StructField, StructType};

/// Most bytes the stored elements may take (UTF-32 text is four bytes a code point).
const MAX_BYTES: usize = 256 << 20;
/// Most fields an array member's nested struct may have.
const MAX_FIELDS: u64 = 4096;

/// A structure's elements as the store holds them.
pub(super) struct SpecialStruct {
    /// The packed struct type.
    pub(super) data_type: DataType,
    /// Every element, in C order, little-endian.
    pub(super) bytes: Vec<u8>,
}

/// Why a structure's sidecar data cannot be stored.
#[derive(Debug, thiserror::Error)]
pub(super) enum SpecialError {
    /// A member of a type vzarr does not store from such data.
    #[error("member {name} ({kind}{array}) has no struct field form here (the HDF5 scanner refuses it too)", array = if *.array { " array" } else { "" })]
    Member {
        /// The member.
        name: String,
        /// Its DAP4 type.
        kind: String,
        /// Whether it is an array.
        array: bool,
    },
    /// A member dimension without a valid size.
    #[error("member {0} has a dimension without a valid size")]
    MemberDim(String),
    /// A structure without members.
    #[error("a structure without members")]
    NoMembers,
    /// The data ends inside an element.
    #[error("the data ends in element {element}, member {member}")]
    Short {
        /// The element.
        element: u64,
        /// The member.
        member: String,
    },
    /// Bytes left after the last element.
    #[error("{0} bytes left after the last element")]
    Left(usize),
    /// A string value that is not base64.
    #[error("element {element}, member {member}: a string that is not base64")]
    NotBase64 {
        /// The element.
        element: u64,
        /// The member.
        member: String,
    },
    /// A variable-length string that is not UTF-8.
    #[error("member {0}: a variable-length string that is not UTF-8")]
    Utf8(String),
    /// More elements than the data can hold, or more bytes than vzarr stores.
    #[error("more than {MAX_BYTES} bytes of elements")]
    TooLarge,
    /// The struct type is refused.
    #[error("{0}")]
    Struct(#[source] crate::metadata::MetadataError),
}

/// One member as the data holds it.
enum Member {
    /// `count` numbers of `data_type`, the field `field` (the type nested over the member's dims).
    Numbers { data_type: DataType, count: usize, field: DataType },
    /// One string per element.
    Text,
}

/// The `count` elements of structure `element` from its decoded `dmrpp:specialstructuredata`;
/// `variable` names the string members the data file stores as variable-length strings (UTF-32
/// fields, as the HDF5 scanner gives them, even where every value has one length).
pub(super) fn special_struct(
    element: &Element,
    data: &[u8],
    count: u64,
    variable: &[String],
) -> Result<SpecialStruct, SpecialError> {
    let members = members(element)?;
    let per_element_min: u64 = members
        .iter()
        .map(|(_, m)| match m {
            Member::Numbers { data_type, count, .. } => (data_type.size() * count) as u64,
            Member::Text => 1,
        })
        .sum();
    // Every element takes at least one byte of the data: the count is bounded before anything is
    // sized by it.
    if per_element_min == 0 || count.saturating_mul(per_element_min) > data.len() as u64 {
        return Err(SpecialError::Short { element: data.len() as u64 / per_element_min.max(1), member: String::new() });
    }
    let mut at = 0usize;
    let mut numbers: Vec<Vec<&[u8]>> = vec![Vec::with_capacity(count as usize); members.len()];
    let mut texts: Vec<Vec<Vec<u8>>> = vec![Vec::new(); members.len()];
    for e in 0..count {
        for (k, (name, member)) in members.iter().enumerate() {
            let short = || SpecialError::Short { element: e, member: name.clone() };
            match member {
                Member::Numbers { data_type, count, .. } => {
                    let n = data_type.size() * count;
                    let bytes = data.get(at..at + n).ok_or_else(short)?;
                    numbers[k].push(bytes);
                    at += n;
                }
                Member::Text => {
                    let end = data[at..].iter().position(|&b| b == b';').ok_or_else(short)?;
                    let text = std::str::from_utf8(&data[at..at + end]).ok();
                    let value = text.and_then(crate::base64::decode);
                    let value = value.ok_or_else(|| SpecialError::NotBase64 { element: e, member: name.clone() })?;
                    texts[k].push(value);
                    at += end + 1;
                }
            }
        }
    }
    if at != data.len() {
        return Err(SpecialError::Left(data.len() - at));
    }
    let mut fields = Vec::with_capacity(members.len());
    for (k, (name, member)) in members.iter().enumerate() {
        let data_type = match member {
            Member::Numbers { field, .. } => *field,
            Member::Text => text_field(name, &texts[k], variable.contains(name))?,
        };
        fields.push(StructField { name: name.clone(), data_type });
    }
    let struct_type = StructType::intern(fields).map_err(SpecialError::Struct)?;
    let size = struct_type.size();
    let total = (count as usize).checked_mul(size).filter(|&n| n <= MAX_BYTES).ok_or(SpecialError::TooLarge)?;
    let mut bytes = vec![0u8; total];
    for (e, out) in bytes.chunks_exact_mut(size.max(1)).enumerate() {
        for (k, (at, field)) in struct_type.offsets().enumerate() {
            let dst = &mut out[at..at + field.data_type.size()];
            match (&members[k].1, field.data_type) {
                (Member::Numbers { .. }, _) => dst.copy_from_slice(numbers[k][e]),
                (Member::Text, DataType::FixedUtf32(_)) => {
                    // Checked UTF-8 in `text_field`.
                    let text = std::str::from_utf8(&texts[k][e]).unwrap_or_default();
                    for (unit, c) in dst.chunks_exact_mut(4).zip(text.chars()) {
                        unit.copy_from_slice(&u32::from(c).to_le_bytes());
                    }
                }
                (Member::Text, _) => dst[..texts[k][e].len()].copy_from_slice(&texts[k][e]),
            }
        }
    }
    Ok(SpecialStruct { data_type: DataType::Struct(struct_type), bytes })
}

/// The members of structure `element`, in document order (the file's offset order).
fn members(element: &Element) -> Result<Vec<(String, Member)>, SpecialError> {
    let mut out = Vec::new();
    for member in element.children.iter().filter(|c| names_a_variable(c)) {
        let name = member.attr("name").unwrap_or_default().to_string();
        let dims: Vec<u64> = member
            .children_named("Dim")
            .map(|d| d.attr("size").and_then(|s| s.trim().parse::<u64>().ok()).filter(|&n| n > 0 && n <= MAX_FIELDS))
            .collect::<Option<_>>()
            .ok_or_else(|| SpecialError::MemberDim(name.clone()))?;
        let refused =
            || SpecialError::Member { name: name.clone(), kind: member.name.clone(), array: !dims.is_empty() };
        let kind = match (atomic(&member.name), member.name.as_str()) {
            (Some(data_type), _) => {
                let count = dims.iter().product::<u64>();
                if count > MAX_FIELDS {
                    return Err(SpecialError::MemberDim(name));
                }
                let field = nest(data_type, &dims)?;
                Member::Numbers { data_type, count: count as usize, field }
            }
            (None, "String") if dims.is_empty() => Member::Text,
            _ => return Err(refused()),
        };
        out.push((name, kind));
    }
    if out.is_empty() {
        return Err(SpecialError::NoMembers);
    }
    Ok(out)
}

/// `base` repeated over `dims` as nested structs with fields "0", "1", ..., as the HDF5 scanner maps
/// an array member.
fn nest(base: DataType, dims: &[u64]) -> Result<DataType, SpecialError> {
    let Some((&n, rest)) = dims.split_first() else { return Ok(base) };
    let fields = (0..n)
        .map(|i| Ok(StructField { name: i.to_string(), data_type: nest(base, rest)? }))
        .collect::<Result<Vec<_>, SpecialError>>()?;
    StructType::intern(fields).map(DataType::Struct).map_err(SpecialError::Struct)
}

/// The field of a string member with `values`: fixed bytes of their common length (unless
/// `variable`), else UTF-32 as wide as the longest (at least one code point).
fn text_field(name: &str, values: &[Vec<u8>], variable: bool) -> Result<DataType, SpecialError> {
    let first = values.first().map_or(0, Vec::len);
    if !variable && first > 0 && values.iter().all(|v| v.len() == first) {
        return u32::try_from(first).map(DataType::FixedBytes).map_err(|_| SpecialError::TooLarge);
    }
    let mut widest = 1usize;
    for v in values {
        let text = std::str::from_utf8(v).map_err(|_| SpecialError::Utf8(name.to_string()))?;
        widest = widest.max(text.chars().count());
    }
    widest.checked_mul(4).and_then(|w| u32::try_from(w).ok()).map(DataType::FixedUtf32).ok_or(SpecialError::TooLarge)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn structure(xml: &str) -> Element {
        super::super::xml::parse(xml.as_bytes()).expect("xml")
    }

    fn b64(text: &str) -> String {
        crate::base64::encode(text.as_bytes())
    }

    #[test]
    fn fixed_and_variable_length_members() {
        let element = structure(
            r#"<Structure name="s"><Int32 name="a"/><String name="fixed"/><String name="vlen"/><Dim size="2"/></Structure>"#,
        );
        let mut data = Vec::new();
        for (a, fixed, vlen) in [(7i32, "ab", "x"), (-1, "cd", "héé")] {
            data.extend(a.to_le_bytes());
            data.extend(format!("{};{};", b64(fixed), b64(vlen)).bytes());
        }
        let s = special_struct(&element, &data, 2, &[]).expect("stored");
        let DataType::Struct(t) = s.data_type else { panic!("not a struct") };
        let types: Vec<DataType> = t.fields().iter().map(|f| f.data_type).collect();
        assert_eq!(types, [DataType::Int32, DataType::FixedBytes(2), DataType::FixedUtf32(12)]);
        assert_eq!(s.bytes.len(), 2 * (4 + 2 + 12));
        assert_eq!(&s.bytes[4..6], b"ab");
        assert_eq!(&s.bytes[18..22], &(-1i32).to_le_bytes());
        let e: Vec<u32> = s.bytes[24..36].chunks(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect();
        assert_eq!(e, ['h' as u32, 'é' as u32, 'é' as u32]);
        // A member the data file stores as variable-length strings is UTF-32 even where every value
        // has one length.
        let s = special_struct(&element, &data, 2, &["fixed".to_string()]).expect("stored");
        let DataType::Struct(t) = s.data_type else { panic!("not a struct") };
        assert_eq!(t.fields()[1].data_type, DataType::FixedUtf32(8));
    }

    #[test]
    fn short_and_long_data_are_refused() {
        let element = structure(r#"<Structure name="s"><Int32 name="a"/><String name="b"/></Structure>"#);
        let data = [7i32.to_le_bytes().to_vec(), format!("{};", b64("xy")).into_bytes()].concat();
        assert!(special_struct(&element, &data, 1, &[]).is_ok());
        assert!(matches!(special_struct(&element, &data[..6], 1, &[]), Err(SpecialError::Short { .. })));
        assert!(matches!(special_struct(&element, &data, 2, &[]), Err(SpecialError::Short { .. })));
        let longer = [data.clone(), vec![0]].concat();
        assert!(matches!(special_struct(&element, &longer, 1, &[]), Err(SpecialError::Left(1))));
        // A count no data could hold is refused before anything is sized by it.
        assert!(matches!(special_struct(&element, &data, u64::MAX, &[]), Err(SpecialError::Short { .. })));
    }

    #[test]
    fn string_array_members_are_refused_by_name() {
        let element = structure(r#"<Structure name="s"><String name="d"><Dim size="3"/></String></Structure>"#);
        let err = special_struct(&element, b"YQ==;YQ==;YQ==;", 1, &[]).err().expect("refused");
        assert!(err.to_string().contains("member d (String array)"), "{err}");
    }
}
