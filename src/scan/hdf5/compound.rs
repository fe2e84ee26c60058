//! HDF5 compound types (PyTables tables, h5py record arrays, netCDF-4 compound variables) as the
//! Zarr `struct` data type.
//!
//! zarr-python 3 reads a struct packed: its fields one after another (`Struct.to_native_dtype` builds
//! a NumPy dtype without offsets), and the `bytes` codec gives every multi-byte field one byte order.
//! A compound maps to a struct when every member maps to a Zarr type (numbers, complex numbers, enums
//! as their integers, bitfields as unsigned integers, fixed-length strings as
//! `null_terminated_bytes`, opaque members as `raw_bytes`, nested compounds as structs) and its
//! multi-byte members share one byte order, which becomes the `bytes` codec's `endian` (zarr-python
//! applies it to every field; vzarr's reader swaps field by field, `codec::ByteSwap`); the struct's
//! fields are the members in offset order.
//!
//! When the members, in offset order, leave no byte unused, the bytes in the file are the struct's
//! elements and are referenced in place ([`ElementType::Numeric`]). When they leave gaps (C alignment
//! padding, unused bytes at the end, a nested compound with gaps), the element is a
//! [`ElementType::PaddedStruct`]: its [`Repack`] says which bytes of a stored element make the packed
//! one, and the scanner stores the variable's chunks repacked (`hdf5::repacked`). Refused with their
//! reason: overlapping members, array members (zarr-python 3.4 does not represent NumPy subarray
//! fields), variable-length or reference members, members of both byte orders.

use hdf5_reader::{CompoundField, Datatype};

use super::layout::{element_type, ElementType};
use crate::codec::Endian;
use crate::metadata::{DataType, StructField, StructType, MAX_STRUCT_DEPTH};

/// Which bytes of a stored compound element make the packed struct element: runs of (offset in the
/// stored element, length), in the struct's field order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Repack {
    /// Bytes of one stored element (the compound's size, padding included).
    pub(crate) source_size: usize,
    /// Runs of the stored element copied one after another (adjacent runs merged).
    pub(crate) runs: Vec<(usize, usize)>,
}

impl Repack {
    /// Appends the packed form of every element of `stored` (whole elements of
    /// [`Repack::source_size`] bytes) to `out`.
    pub(crate) fn pack(&self, stored: &[u8], out: &mut Vec<u8>) {
        for element in stored.chunks_exact(self.source_size.max(1)) {
            for &(offset, len) in &self.runs {
                out.extend_from_slice(&element[offset..offset + len]);
            }
        }
    }

    /// Whether the runs cover the stored element whole (nothing to repack).
    fn is_identity(&self) -> bool {
        matches!(self.runs.as_slice(), [(0, n)] if *n == self.source_size)
    }

    fn push(&mut self, offset: usize, len: usize) {
        match self.runs.last_mut() {
            Some((start, run)) if *start + *run == offset => *run += len,
            _ => self.runs.push((offset, len)),
        }
    }
}

/// The element type of a compound of `size` bytes with `fields` (not a complex number: the caller
/// checks that first), `depth` compounds deep.
pub(super) fn struct_element(size: u32, fields: &[CompoundField], depth: usize) -> ElementType {
    match struct_type(size, fields, depth) {
        Ok((s, endian, repack)) if repack.is_identity() => ElementType::Numeric(DataType::Struct(s), endian),
        Ok((s, endian, repack)) => ElementType::PaddedStruct(DataType::Struct(s), endian, repack),
        Err(why) => ElementType::Unsupported(format!("compound type ({why})")),
    }
}

/// The packed struct of a compound, the byte order of its multi-byte members (None: it has none) and
/// where its fields lie in a stored element.
fn struct_type(
    size: u32,
    fields: &[CompoundField],
    depth: usize,
) -> Result<(&'static StructType, Option<Endian>, Repack), String> {
    if depth >= MAX_STRUCT_DEPTH {
        return Err(format!("compounds nested more than {MAX_STRUCT_DEPTH} deep"));
    }
    let mut members: Vec<&CompoundField> = fields.iter().collect();
    members.sort_by_key(|m| m.byte_offset);
    let mut at = 0u64;
    let mut out = Vec::with_capacity(members.len());
    let mut order: Option<(Endian, &str)> = None;
    let mut repack = Repack { source_size: size as usize, runs: Vec::new() };
    for m in members {
        let member = member_type(&m.datatype, depth).map_err(|why| format!("member {}: {why}", m.name))?;
        match (order, member.endian) {
            (Some((first, name)), Some(e)) if e != first => {
                return Err(format!("members {name} and {} have different byte orders", m.name));
            }
            (None, Some(e)) => order = Some((e, &m.name)),
            _ => {}
        }
        let offset = u64::from(m.byte_offset);
        if offset < at {
            return Err(format!("overlapping bytes at member {} at offset {offset}", m.name));
        }
        at = offset + member.stored_size;
        if at > u64::from(size) {
            return Err(format!("member {} ends past the compound's {size} bytes", m.name));
        }
        for &(start, len) in &member.runs {
            repack.push(offset as usize + start, len);
        }
        out.push(StructField { name: m.name.clone(), data_type: member.data_type });
    }
    let s = StructType::intern(out).map_err(|e| e.to_string())?;
    Ok((s, order.map(|(e, _)| e), repack))
}

/// The Zarr type of one compound member.
struct Member {
    data_type: DataType,
    /// Its byte order, when it has one.
    endian: Option<Endian>,
    /// Its bytes in a stored compound (a nested compound's padding included).
    stored_size: u64,
    /// Where its packed bytes lie within those, as [`Repack::runs`].
    runs: Vec<(usize, usize)>,
}

/// The Zarr type of one member, or why it has none.
fn member_type(datatype: &Datatype, depth: usize) -> Result<Member, String> {
    let element = match datatype {
        Datatype::Compound { size, fields } => match element_type(datatype) {
            // A complex number; any other compound is a nested struct.
            ElementType::Numeric(t @ (DataType::Complex64 | DataType::Complex128), e) => ElementType::Numeric(t, e),
            _ => struct_element(*size, fields, depth + 1),
        },
        Datatype::Array { .. } => return Err("array members are not representable (NumPy subarray fields)".into()),
        other => element_type(other),
    };
    let whole = |data_type: DataType, endian| {
        let n = data_type.size();
        Ok(Member { data_type, endian, stored_size: n as u64, runs: vec![(0, n)] })
    };
    match element {
        // The datatype message's bit layout, which tells IEEE binary16 from bfloat16, is not at hand
        // for a member (`raw_header::is_ieee_half` reads a dataset's).
        ElementType::Numeric(DataType::Float16, _) => Err("2-byte floats (IEEE half or bfloat16?)".into()),
        ElementType::Numeric(t @ DataType::Struct(_), e) => whole(t, e),
        ElementType::Numeric(t, e) => whole(t, e.filter(|_| t.swap_unit() > 1)),
        ElementType::PaddedStruct(data_type, endian, repack) => {
            Ok(Member { data_type, endian, stored_size: repack.source_size as u64, runs: repack.runs })
        }
        ElementType::FixedString(n) => whole(DataType::FixedBytes(n), None),
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
    fn padded_compounds_repack_their_members_in_offset_order() {
        let le = ByteOrder::LittleEndian;
        // a: 2 bytes at 0, 2 unused, b: 4 bytes at 4, then a nested compound at 8 of one byte at its
        // offset 1 (3 bytes in all), then 2 unused bytes at the end.
        let inner = Datatype::Compound { size: 3, fields: vec![member("c", 1, int(1, le))] };
        let fields = [member("b", 4, int(4, le)), member("a", 0, int(2, le)), member("n", 8, inner)];
        let ElementType::PaddedStruct(DataType::Struct(s), Some(Endian::Little), repack) =
            struct_element(13, &fields, 0)
        else {
            panic!("not a padded struct")
        };
        let names: Vec<&str> = s.fields().iter().map(|f| f.name.as_str()).collect();
        assert_eq!((names, s.size()), (vec!["a", "b", "n"], 7));
        assert_eq!(repack, Repack { source_size: 13, runs: vec![(0, 2), (4, 4), (9, 1)] });
        let stored: Vec<u8> = (0..26).collect();
        let mut packed = Vec::new();
        repack.pack(&stored, &mut packed);
        assert_eq!(packed, [0, 1, 4, 5, 6, 7, 9, 13, 14, 17, 18, 19, 20, 22]);
        // Unused bytes at the end only.
        assert!(matches!(struct_element(8, &[member("a", 0, int(4, le))], 0), ElementType::PaddedStruct(..)));
    }

    #[test]
    fn overlaps_mixed_byte_orders_and_array_members_are_refused() {
        let (le, be) = (ByteOrder::LittleEndian, ByteOrder::BigEndian);
        let why = |e: ElementType| match e {
            ElementType::Unsupported(why) => why,
            other => panic!("{other:?} accepted"),
        };
        let overlap = why(struct_element(8, &[member("a", 0, int(4, le)), member("b", 2, int(4, le))], 0));
        assert!(overlap.contains("overlapping bytes at member b at offset 2"), "{overlap}");
        let past = why(struct_element(4, &[member("a", 2, int(4, le))], 0));
        assert!(past.contains("member a ends past the compound's 4 bytes"), "{past}");
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
