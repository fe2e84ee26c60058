//! HDF5 compound types (PyTables tables, h5py record arrays, netCDF-4 compound variables) as the
//! Zarr `struct` data type, referenced in place: the bytes in the file are the struct's elements.
//!
//! That holds only when the file's layout is the one zarr-python 3 reads: zarr-python packs a
//! struct's fields one after another (`Struct.to_native_dtype` builds a NumPy dtype without
//! offsets), and the `bytes` codec gives every multi-byte field one byte order. So a compound is
//! referenced when its members, in offset order, leave no byte unused, every member maps to a Zarr
//! type of the same size (numbers, complex numbers, enums as their integers, bitfields as unsigned
//! integers, fixed-length strings as `null_terminated_bytes`, opaque members as `raw_bytes`, nested
//! compounds as structs), and its multi-byte members share one byte order, which becomes the `bytes` codec's `endian` (zarr-python
//! applies it to every field; vzarr's reader swaps field by field, `codec::ByteSwap`). Anything else
//! is refused with its reason: padding or overlapping members, array members (zarr-python 3.4 does
//! not represent NumPy subarray fields), variable-length or reference members, members of both byte
//! orders.

use hdf5_reader::{CompoundField, Datatype};

use super::layout::{element_type, ElementType};
use crate::codec::Endian;
use crate::metadata::{DataType, StructField, StructType, MAX_STRUCT_DEPTH};

/// The element type of a compound of `size` bytes with `fields` (not a complex number: the caller
/// checks that first), `depth` compounds deep.
pub(super) fn struct_element(size: u32, fields: &[CompoundField], depth: usize) -> ElementType {
    match struct_type(size, fields, depth) {
        Ok((s, endian)) => ElementType::Numeric(DataType::Struct(s), endian),
        Err(why) => ElementType::Unsupported(format!("compound type ({why})")),
    }
}

/// The struct of a compound and the byte order of its multi-byte members (None: it has none).
fn struct_type(
    size: u32,
    fields: &[CompoundField],
    depth: usize,
) -> Result<(&'static StructType, Option<Endian>), String> {
    if depth >= MAX_STRUCT_DEPTH {
        return Err(format!("compounds nested more than {MAX_STRUCT_DEPTH} deep"));
    }
    let mut members: Vec<&CompoundField> = fields.iter().collect();
    members.sort_by_key(|m| m.byte_offset);
    let mut at = 0u64;
    let mut out = Vec::with_capacity(members.len());
    let mut order: Option<(Endian, &str)> = None;
    for m in members {
        let (data_type, endian) = member_type(&m.datatype, depth).map_err(|why| format!("member {}: {why}", m.name))?;
        match (order, endian) {
            (Some((first, name)), Some(e)) if e != first => {
                return Err(format!("members {name} and {} have different byte orders", m.name));
            }
            (None, Some(e)) => order = Some((e, &m.name)),
            _ => {}
        }
        let offset = u64::from(m.byte_offset);
        if offset != at {
            let what = if offset > at { "unused bytes before" } else { "overlapping bytes at" };
            return Err(format!("{what} member {} at offset {offset}: Zarr's struct is packed", m.name));
        }
        at += data_type.size() as u64;
        out.push(StructField { name: m.name.clone(), data_type });
    }
    if at != u64::from(size) {
        return Err(format!("{} unused bytes after the last member: Zarr's struct is packed", u64::from(size) - at));
    }
    let s = StructType::intern(out).map_err(|e| e.to_string())?;
    Ok((s, order.map(|(e, _)| e)))
}

/// The Zarr type of one member with its byte order when it has one, or why it has none.
fn member_type(datatype: &Datatype, depth: usize) -> Result<(DataType, Option<Endian>), String> {
    let element = match datatype {
        Datatype::Compound { size, fields } => match element_type(datatype) {
            // A complex number; any other compound is a nested struct.
            ElementType::Numeric(t @ (DataType::Complex64 | DataType::Complex128), e) => ElementType::Numeric(t, e),
            _ => struct_element(*size, fields, depth + 1),
        },
        Datatype::Array { .. } => return Err("array members are not representable (NumPy subarray fields)".into()),
        other => element_type(other),
    };
    match element {
        // The datatype message's bit layout, which tells IEEE binary16 from bfloat16, is not at hand
        // for a member (`raw_header::is_ieee_half` reads a dataset's).
        ElementType::Numeric(DataType::Float16, _) => Err("2-byte floats (IEEE half or bfloat16?)".into()),
        ElementType::Numeric(t @ DataType::Struct(_), e) => Ok((t, e)),
        ElementType::Numeric(t, e) => Ok((t, e.filter(|_| t.swap_unit() > 1))),
        ElementType::FixedString(n) => Ok((DataType::FixedBytes(n), None)),
        ElementType::VlenString => Err("variable-length strings".into()),
        ElementType::ObjectReference(_) => Err("object references".into()),
        ElementType::Unsupported(what) => Err(what),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hdf5_reader::ByteOrder;

    fn member(name: &str, byte_offset: u32, datatype: Datatype) -> CompoundField {
        CompoundField { name: name.into(), byte_offset, datatype }
    }

    fn int(size: u8, byte_order: ByteOrder) -> Datatype {
        Datatype::FixedPoint { size, signed: true, byte_order }
    }

    #[test]
    fn packed_little_endian_compounds_are_structs_in_offset_order() {
        let le = ByteOrder::LittleEndian;
        let fields = [
            member("b", 4, int(2, le)),
            member("a", 0, int(4, le)),
            member("o", 6, Datatype::Opaque { size: 3, tag: String::new() }),
        ];
        let ElementType::Numeric(DataType::Struct(s), Some(Endian::Little)) = struct_element(9, &fields, 0) else {
            panic!("not a struct")
        };
        let names: Vec<&str> = s.fields().iter().map(|f| f.name.as_str()).collect();
        assert_eq!((names, s.size()), (vec!["a", "b", "o"], 9));
        assert_eq!(s.fields()[2].data_type, DataType::RawBytes(3));
    }

    #[test]
    fn bitfield_members_are_unsigned_integers_of_their_size_and_order() {
        let be = ByteOrder::BigEndian;
        let fields = [
            member("flags", 0, Datatype::Bitfield { size: 2, byte_order: be }),
            member("n", 2, int(4, be)),
            member("b", 6, Datatype::Bitfield { size: 1, byte_order: ByteOrder::LittleEndian }),
        ];
        let ElementType::Numeric(DataType::Struct(s), Some(Endian::Big)) = struct_element(7, &fields, 0) else {
            panic!("not a big-endian struct")
        };
        let types: Vec<DataType> = s.fields().iter().map(|f| f.data_type).collect();
        assert_eq!(types, [DataType::UInt16, DataType::Int32, DataType::UInt8]);
    }

    #[test]
    fn time_and_reference_members_are_refused() {
        let le = ByteOrder::LittleEndian;
        let time = Datatype::Opaque { size: 8, tag: "HDF5_TIME".into() };
        let ElementType::Unsupported(why) = struct_element(12, &[member("a", 0, int(4, le)), member("t", 4, time)], 0)
        else {
            panic!("a time member accepted")
        };
        assert!(why.contains("member t: the HDF5 time type"), "{why}");
        let reference = Datatype::Reference { ref_type: hdf5_reader::ReferenceType::Object, size: 8 };
        let ElementType::Unsupported(why) = struct_element(8, &[member("r", 0, reference)], 0) else {
            panic!("a reference member accepted")
        };
        assert!(why.contains("member r: object references"), "{why}");
    }

    #[test]
    fn padding_mixed_byte_orders_and_array_members_are_refused() {
        let (le, be) = (ByteOrder::LittleEndian, ByteOrder::BigEndian);
        let why = |e: ElementType| match e {
            ElementType::Unsupported(why) => why,
            other => panic!("{other:?} accepted"),
        };
        let gap = why(struct_element(8, &[member("a", 0, int(2, le)), member("b", 4, int(4, le))], 0));
        assert!(gap.contains("unused bytes before member b at offset 4"), "{gap}");
        let tail = why(struct_element(8, &[member("a", 0, int(4, le))], 0));
        assert!(tail.contains("4 unused bytes after"), "{tail}");
        let mixed = why(struct_element(6, &[member("a", 0, int(4, be)), member("b", 4, int(2, le))], 0));
        assert!(mixed.contains("members a and b have different byte orders"), "{mixed}");
        let big = struct_element(5, &[member("c", 0, int(1, le)), member("a", 1, int(4, be))], 0);
        assert!(matches!(big, ElementType::Numeric(DataType::Struct(_), Some(Endian::Big))), "{big:?}");
        let array = Datatype::Array { base: Box::new(int(2, le)), dims: vec![2] };
        assert!(why(struct_element(4, &[member("v", 0, array)], 0)).contains("array members"));
        // One-byte members have no byte order.
        assert!(matches!(struct_element(1, &[member("c", 0, int(1, be))], 0), ElementType::Numeric(_, None)));
    }
}
