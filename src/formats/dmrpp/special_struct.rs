//! Structures with string members out, as BES's `get_dmrpp` writes them: the members as variable
//! elements (strings as `<String>`), then `<dmrpp:chunks fillValue="0"/>` and the elements
//! themselves in `<dmrpp:specialstructuredata>` (input: the struct type and the array's decoded
//! elements; output: the XML).
//!
//! The data is the base64 of, element after element and member after member: a number (or an array
//! of numbers) as its little-endian bytes, a string as the base64 of its bytes followed by `;`. A
//! fixed-length string member (`FixedBytes`, an HDF5 fixed-length string) is written with its whole
//! width, padding included; a text member vzarr stored as UTF-32 (an HDF5 variable-length string) as
//! its UTF-8 text, as BES writes each. Members that are arrays of strings or structures are refused
//! (the scan refuses them too).

use std::fmt::Write as _;

use super::attributes::escape;
use super::types::{dap_type, TypeError};
use crate::metadata::{CompoundNote, DataType, StructType};

/// Whether `fields` hold a string member, so the structure is written with its data.
pub(super) fn has_text(fields: &StructType) -> bool {
    fields.fields().iter().any(|f| matches!(f.data_type, DataType::FixedBytes(_) | DataType::FixedUtf32(_)))
}

/// The members, `<dmrpp:chunks>` and `<dmrpp:specialstructuredata>` of a struct array of `fields`
/// (array members as the scan's `compound` note lists them), whose decoded elements (native byte
/// order) are `values`; the members and the storage are returned apart, as the caller places the
/// dimensions and attributes between them.
///
/// # Errors
/// [`TypeError::Member`] for a member with no form here.
pub(super) fn special_xml(
    compound: Option<&CompoundNote>,
    fields: &StructType,
    values: &[u8],
    indent: &str,
) -> Result<(String, String), TypeError> {
    let mut members = String::new();
    for field in fields.fields() {
        let name = escape(&field.name);
        let dims = compound.and_then(|c| c.array_members.get(&field.name));
        let refused = |what| TypeError::Member { member: field.name.clone(), what };
        match (field.data_type, dims) {
            (DataType::FixedBytes(_) | DataType::FixedUtf32(_), None) => {
                writeln!(members, "{indent}<String name=\"{name}\"/>").ok();
            }
            (data_type, None) => {
                let dap = dap_type(data_type).ok_or_else(|| refused("of no DAP4 atomic type"))?;
                writeln!(members, "{indent}<{dap} name=\"{name}\"/>").ok();
            }
            (DataType::Struct(inner), Some(dims)) => {
                let leaf = leaf_type(inner).ok_or_else(|| refused("an array of strings or structures"))?;
                let dap = dap_type(leaf).ok_or_else(|| refused("an array of strings or structures"))?;
                writeln!(members, "{indent}<{dap} name=\"{name}\">").ok();
                for d in dims {
                    writeln!(members, "{indent}    <Dim size=\"{d}\"/>").ok();
                }
                writeln!(members, "{indent}</{dap}>").ok();
            }
            _ => return Err(refused("a structure")),
        }
    }
    let mut data = Vec::with_capacity(values.len());
    for element in values.chunks_exact(fields.size().max(1)) {
        for (at, field) in fields.offsets() {
            let bytes = &element[at..at + field.data_type.size()];
            match field.data_type {
                DataType::FixedBytes(_) => {
                    data.extend(crate::base64::encode(bytes).bytes());
                    data.push(b';');
                }
                DataType::FixedUtf32(_) => {
                    let text: String = bytes
                        .chunks_exact(4)
                        .map(|u| u32::from_ne_bytes([u[0], u[1], u[2], u[3]]))
                        .take_while(|&u| u != 0)
                        .filter_map(char::from_u32)
                        .collect();
                    data.extend(crate::base64::encode(text.as_bytes()).bytes());
                    data.push(b';');
                }
                data_type => little_endian(data_type, bytes, &mut data),
            }
        }
    }
    let storage = format!(
        "{indent}<dmrpp:chunks fillValue=\"0\"/>\n{indent}<dmrpp:specialstructuredata>{}</dmrpp:specialstructuredata>\n",
        crate::base64::encode(&data)
    );
    Ok((members, storage))
}

/// The one numeric leaf type of an array member's nested struct, when all its leaves share it.
fn leaf_type(fields: &StructType) -> Option<DataType> {
    let mut leaf = None;
    for f in fields.fields() {
        let t = match f.data_type {
            DataType::Struct(inner) => leaf_type(inner)?,
            t => dap_type(t).map(|_| t)?,
        };
        if leaf.is_some_and(|l| l != t) {
            return None;
        }
        leaf = Some(t);
    }
    leaf
}

/// The native-endian values `bytes` of `data_type` (a number or a struct of numbers) appended
/// little-endian.
fn little_endian(data_type: DataType, bytes: &[u8], out: &mut Vec<u8>) {
    let start = out.len();
    out.extend_from_slice(bytes);
    if cfg!(target_endian = "big") {
        data_type.byte_swap().apply(&mut out[start..]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata::StructField;

    #[test]
    fn elements_are_written_as_bes_writes_them() {
        let fields = StructType::intern(vec![
            StructField { name: "a".into(), data_type: DataType::Int32 },
            StructField { name: "fixed".into(), data_type: DataType::FixedBytes(4) },
            StructField { name: "text".into(), data_type: DataType::FixedUtf32(8) },
        ])
        .unwrap();
        let mut values = Vec::new();
        values.extend(1153i32.to_ne_bytes());
        values.extend(b"20\0\0");
        for c in ['é', '\0'] {
            values.extend(u32::from(c).to_ne_bytes());
        }
        assert!(has_text(fields));
        let (members, storage) = special_xml(None, fields, &values, "  ").unwrap();
        assert_eq!(members, "  <Int32 name=\"a\"/>\n  <String name=\"fixed\"/>\n  <String name=\"text\"/>\n");
        let text = storage.split("specialstructuredata>").nth(1).unwrap().trim_end_matches("</dmrpp:");
        let data = crate::base64::decode(text).unwrap();
        let expected = [
            1153i32.to_le_bytes().to_vec(),
            format!("{};", crate::base64::encode(b"20\0\0")).into_bytes(),
            format!("{};", crate::base64::encode("é".as_bytes())).into_bytes(),
        ]
        .concat();
        assert_eq!(data, expected);
    }
}
