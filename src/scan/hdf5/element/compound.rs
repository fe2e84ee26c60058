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
//! one, and the scanner stores the variable's chunks repacked (`hdf5::repacked`).
//!
//! A member of HDF5 array type (class 10; h5py's subarray fields, PyTables' multidimensional columns)
//! becomes nested structs whose fields are named by index, one struct level per array dimension:
//! a member `c` of dimensions `[2, 3]` over `float64` is
//! `c: struct{"0": struct{"0": float64, "1": float64, "2": float64}, "1": struct{...}}`, because
//! zarr-python 3.4's struct has no subarray fields but nests structs. An array member's bytes are its
//! base elements in C order, which is exactly the packed layout of those structs, so a compound with
//! array members and no padding is still referenced in place; an array of compounds with padding
//! repeats the base's runs once per element. Where h5py reads `x["c"][:, 1, 2]`, zarr-python reads
//! `x["c"]["1"]["2"]`. The base's byte order is the member's.
//!
//! What the struct cannot say, the members' declared order (when it is not their offset order) and
//! which fields are array members (of which dimensions), goes to the array's notes
//! ([`compound_note`], `metadata::CompoundNote`), so that vzarr's Python package can show the NumPy
//! dtype h5py shows: declared order, subarray fields.
//!
//! A compound with variable-length string or object reference members is read and stored by the
//! scanner instead (`element/text_struct`). Refused with their reason, naming the member: overlapping
//! members, variable-length or reference members in nested compounds or arrays, members of both byte orders, 2-byte floats, and array members that
//! would nest structs deeper than [`MAX_STRUCT_DEPTH`] (each array dimension is one level), have a
//! dimension of more than [`MAX_STRUCT_FIELDS`] elements (fields of one struct), or bring the
//! compound past [`MAX_STRUCT_LEAVES`] leaf fields.

use hdf5_reader::{CompoundField, Datatype};

use super::{complex, element_type, ElementType};
use crate::codec::Endian;
use crate::metadata::{CompoundNote, DataType, StructField, StructType, MAX_STRUCT_DEPTH, MAX_STRUCT_FIELDS};

/// Most leaf fields (numbers, strings, raw bytes; every element of an array member counts) of one
/// compound vzarr maps to a struct. The `zarr.json` data type and fill value list every leaf (tens
/// of bytes each), so an array member of millions of elements would make metadata of hundreds of
/// megabytes; 65536 leaves (a 256 x 256 image column) make a few megabytes.
pub(crate) const MAX_STRUCT_LEAVES: u64 = 1 << 16;

/// Why a compound (or one of its members) maps to no struct.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CompoundError {
    /// Compounds nested deeper than a struct may be.
    #[error("compounds nested more than {MAX_STRUCT_DEPTH} deep")]
    TooDeep,
    /// A member maps to no struct field.
    #[error("member {name}: {problem}")]
    Member {
        /// The member's name.
        name: String,
        /// Why.
        #[source]
        problem: Box<CompoundError>,
    },
    /// Multi-byte members of both byte orders.
    #[error("members {first} and {second} have different byte orders")]
    ByteOrders {
        /// The first member of one order.
        first: String,
        /// A member of the other.
        second: String,
    },
    /// A member starting inside the one before it.
    #[error("overlapping bytes at member {name} at offset {offset}")]
    Overlap {
        /// The member's name.
        name: String,
        /// Its offset in the compound.
        offset: u64,
    },
    /// A member ending past the compound.
    #[error("member {name} ends past the compound's {size} bytes")]
    PastEnd {
        /// The member's name.
        name: String,
        /// The compound's size.
        size: u32,
    },
    /// More leaf fields than vzarr maps.
    #[error("more than {MAX_STRUCT_LEAVES} leaf fields, array elements included (at member {0})")]
    TooManyLeaves(String),
    /// The struct type is refused.
    #[error("{0}")]
    Struct(#[source] crate::metadata::MetadataError),
    /// A nested compound maps to no struct.
    #[error("compound type ({0})")]
    Compound(#[source] Box<CompoundError>),
    /// A 2-byte float member (IEEE half and bfloat16 look alike here).
    #[error("2-byte floats (IEEE half or bfloat16?)")]
    Half,
    /// A padded compound where only packed ones are mapped.
    #[error("a compound type with padding")]
    Padded,
    /// A variable-length string member of a nested compound or array.
    #[error("variable-length strings")]
    VlenStrings,
    /// An object reference member of a nested compound or array.
    #[error("object references")]
    References,
    /// A nested compound with variable-length string or object reference members.
    #[error("a compound type with variable-length strings or object references")]
    TextStruct,
    /// A member of a type vzarr does not map (its description, [`ElementType::Unsupported`]).
    #[error("{0}")]
    Unsupported(String),
    /// An array member nesting structs too deep.
    #[error("an array of {0} dimensions nests structs more than {MAX_STRUCT_DEPTH} deep (one level per dimension)")]
    ArrayDepth(usize),
    /// An array dimension of no or too many elements.
    #[error("an array dimension of {0} elements (a struct has 1 to {MAX_STRUCT_FIELDS} fields)")]
    ArrayDimension(u64),
    /// An array member whose base maps to no struct field.
    #[error("an array of {0}")]
    ArrayOf(#[source] Box<CompoundError>),
    /// An array member of too many leaf fields.
    #[error("an array of dimensions {0:?}: more than {MAX_STRUCT_LEAVES} leaf fields")]
    ArrayLeaves(Vec<u64>),
}

impl CompoundError {
    /// The error of member `name`.
    pub(crate) fn member(name: &str) -> impl FnOnce(CompoundError) -> CompoundError + '_ {
        move |problem| CompoundError::Member { name: name.to_string(), problem: Box::new(problem) }
    }
}

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
        push_run(&mut self.runs, offset, len);
    }
}

/// Appends the run (offset, len) to `runs`, merged with the last one when they are adjacent.
fn push_run(runs: &mut Vec<(usize, usize)>, offset: usize, len: usize) {
    match runs.last_mut() {
        Some((start, run)) if *start + *run == offset => *run += len,
        _ => runs.push((offset, len)),
    }
}

/// The element type of a compound of `size` bytes with `fields` (not a complex number: the caller
/// checks that first), `depth` compounds deep.
pub(super) fn struct_element(size: u32, fields: &[CompoundField], depth: usize) -> ElementType {
    match struct_type(size, fields, depth) {
        Ok(m) if m.repack.is_identity() => ElementType::Numeric(DataType::Struct(m.struct_type), m.endian),
        Ok(m) => ElementType::PaddedStruct(DataType::Struct(m.struct_type), m.endian, m.repack),
        Err(why) => ElementType::Unsupported(format!("compound type ({why})")),
    }
}

/// A compound mapped to a packed struct.
struct MappedStruct {
    struct_type: &'static StructType,
    /// The byte order of its multi-byte members (None: it has none).
    endian: Option<Endian>,
    /// Where its fields lie in a stored element.
    repack: Repack,
    /// Its leaf fields, nested structs' included.
    leaves: u64,
}

/// The packed struct of a compound, or why it has none.
fn struct_type(size: u32, fields: &[CompoundField], depth: usize) -> Result<MappedStruct, CompoundError> {
    if depth >= MAX_STRUCT_DEPTH {
        return Err(CompoundError::TooDeep);
    }
    let mut members: Vec<&CompoundField> = fields.iter().collect();
    members.sort_by_key(|m| m.byte_offset);
    let mut at = 0u64;
    let mut out = Vec::with_capacity(members.len());
    let mut order: Option<(Endian, &str)> = None;
    let mut repack = Repack { source_size: size as usize, runs: Vec::new() };
    let mut leaves = 0u64;
    for m in members {
        let member = member_type(&m.datatype, depth).map_err(CompoundError::member(&m.name))?;
        match (order, member.endian) {
            (Some((first, name)), Some(e)) if e != first => {
                return Err(CompoundError::ByteOrders { first: name.to_string(), second: m.name.clone() });
            }
            (None, Some(e)) => order = Some((e, &m.name)),
            _ => {}
        }
        let offset = u64::from(m.byte_offset);
        if offset < at {
            return Err(CompoundError::Overlap { name: m.name.clone(), offset });
        }
        at = offset + member.stored_size;
        if at > u64::from(size) {
            return Err(CompoundError::PastEnd { name: m.name.clone(), size });
        }
        leaves += member.leaves;
        if leaves > MAX_STRUCT_LEAVES {
            return Err(CompoundError::TooManyLeaves(m.name.clone()));
        }
        for &(start, len) in &member.runs {
            repack.push(offset as usize + start, len);
        }
        out.push(StructField { name: m.name.clone(), data_type: member.data_type });
    }
    let struct_type = StructType::intern(out).map_err(CompoundError::Struct)?;
    Ok(MappedStruct { struct_type, endian: order.map(|(e, _)| e), repack, leaves })
}

/// The Zarr type of one compound member.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Member {
    /// The struct field's type.
    pub(crate) data_type: DataType,
    /// Its byte order, when it has one.
    pub(crate) endian: Option<Endian>,
    /// Its bytes in a stored compound (a nested compound's padding included).
    pub(crate) stored_size: u64,
    /// Where its packed bytes lie within those, as [`Repack::runs`].
    pub(crate) runs: Vec<(usize, usize)>,
    /// Its leaf fields: 1 but for structs (nested compounds, array members).
    leaves: u64,
}

/// The Zarr type of one member of a compound `depth` compounds deep, or why it has none.
pub(super) fn member_type(datatype: &Datatype, depth: usize) -> Result<Member, CompoundError> {
    let element = match datatype {
        // A complex number; any other compound is a nested struct.
        Datatype::Compound { size, fields } => match complex(datatype) {
            Some(number) => number,
            None => {
                let nested =
                    struct_type(*size, fields, depth + 1).map_err(|why| CompoundError::Compound(Box::new(why)))?;
                return Ok(Member {
                    data_type: DataType::Struct(nested.struct_type),
                    endian: nested.endian,
                    stored_size: nested.repack.source_size as u64,
                    runs: nested.repack.runs,
                    leaves: nested.leaves,
                });
            }
        },
        Datatype::Array { base, dims } => return array_member(base, dims, depth),
        other => element_type(other),
    };
    let whole = |data_type: DataType, endian| {
        let n = data_type.size();
        Ok(Member { data_type, endian, stored_size: n as u64, runs: vec![(0, n)], leaves: 1 })
    };
    match element {
        // The datatype message's bit layout, which tells IEEE binary16 from bfloat16, is not at hand
        // for a member (`raw_header::is_ieee_half` reads a dataset's).
        ElementType::Numeric(DataType::Float16, _) => Err(CompoundError::Half),
        ElementType::Numeric(t, e) => whole(t, e.filter(|_| t.swap_unit() > 1)),
        ElementType::FixedString(n) => whole(DataType::FixedBytes(n), None),
        // `element_type` maps compounds, the only padded type, through `struct_element`; not here.
        ElementType::PaddedStruct(..) => Err(CompoundError::Padded),
        ElementType::VlenString => Err(CompoundError::VlenStrings),
        ElementType::ObjectReference(_) => Err(CompoundError::References),
        ElementType::TextStruct(_) => Err(CompoundError::TextStruct),
        ElementType::Unsupported(what) => Err(CompoundError::Unsupported(what)),
    }
}

/// An array member of dimensions `dims` over `base`, in a compound `depth` compounds deep: nested
/// structs whose fields are named by index, one level per dimension (see the module docs), its
/// runs the base's repeated once per element in C order.
fn array_member(base: &Datatype, dims: &[u64], depth: usize) -> Result<Member, CompoundError> {
    let rank = dims.len();
    if depth + rank >= MAX_STRUCT_DEPTH {
        return Err(CompoundError::ArrayDepth(rank));
    }
    if let Some(&d) = dims.iter().find(|&&d| d == 0 || d > MAX_STRUCT_FIELDS as u64) {
        return Err(CompoundError::ArrayDimension(d));
    }
    let base = member_type(base, depth + rank).map_err(|why| CompoundError::ArrayOf(Box::new(why)))?;
    let count = dims.iter().try_fold(1u64, |n, &d| n.checked_mul(d));
    let count = count
        .filter(|n| n.saturating_mul(base.leaves) <= MAX_STRUCT_LEAVES)
        .ok_or_else(|| CompoundError::ArrayLeaves(dims.to_vec()))?;
    let mut data_type = base.data_type;
    for &d in dims.iter().rev() {
        let fields = (0..d).map(|i| StructField { name: i.to_string(), data_type }).collect();
        data_type = DataType::Struct(StructType::intern(fields).map_err(CompoundError::Struct)?);
    }
    let mut runs = Vec::with_capacity(base.runs.len());
    let stride = base.stored_size as usize;
    for i in 0..count as usize {
        for &(offset, len) in &base.runs {
            push_run(&mut runs, i * stride + offset, len);
        }
    }
    Ok(Member {
        data_type,
        endian: base.endian,
        stored_size: count * base.stored_size,
        runs,
        leaves: count * base.leaves,
    })
}

/// The note on the struct a dataset of compound `datatype` maps to (a dataset's array type is its
/// base's), or None when the struct says it all (see the module docs).
pub(crate) fn compound_note(datatype: &Datatype) -> Option<CompoundNote> {
    let note = note_of(array_base(datatype).1, 0);
    (!note.is_empty()).then_some(note)
}

/// The note on compound `datatype`, `depth` compounds deep (empty for other types).
fn note_of(datatype: &Datatype, depth: usize) -> CompoundNote {
    let mut note = CompoundNote::default();
    let Datatype::Compound { fields, .. } = datatype else { return note };
    if depth >= MAX_STRUCT_DEPTH || complex(datatype).is_some() {
        return note;
    }
    let declared: Vec<&str> = fields.iter().map(|f| f.name.as_str()).collect();
    // The struct's order: `struct_type` sorts the members by offset the same way (a stable sort).
    let mut by_offset: Vec<&CompoundField> = fields.iter().collect();
    by_offset.sort_by_key(|m| m.byte_offset);
    if by_offset.iter().map(|f| f.name.as_str()).ne(declared.iter().copied()) {
        note.member_order = Some(declared.iter().map(|n| n.to_string()).collect());
    }
    for f in fields {
        let (dims, base) = array_base(&f.datatype);
        if !dims.is_empty() {
            note.array_members.insert(f.name.clone(), dims);
        }
        let nested = note_of(base, depth + 1);
        if !nested.is_empty() {
            note.members.insert(f.name.clone(), nested);
        }
    }
    note
}

/// The dimensions of an array type (an array of arrays: all of them, outer first) and its base;
/// no dimensions for other types.
fn array_base(datatype: &Datatype) -> (Vec<u64>, &Datatype) {
    let (mut dims, mut base) = (Vec::new(), datatype);
    while let Datatype::Array { base: inner, dims: d } = base {
        dims.extend_from_slice(d);
        base = inner;
    }
    (dims, base)
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
    fn overlaps_and_mixed_byte_orders_are_refused() {
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
        // One-byte members have no byte order.
        assert!(matches!(struct_element(1, &[member("c", 0, int(1, be))], 0), ElementType::Numeric(_, None)));
    }

    fn array(base: Datatype, dims: &[u64]) -> Datatype {
        Datatype::Array { base: Box::new(base), dims: dims.to_vec() }
    }

    /// The field names and leaf types of `t`, depth first (`c.1.2: float64`).
    fn flatten(t: DataType, prefix: &str, out: &mut Vec<String>) {
        match t {
            DataType::Struct(s) => {
                for f in s.fields() {
                    let name = if prefix.is_empty() { f.name.clone() } else { format!("{prefix}.{}", f.name) };
                    flatten(f.data_type, &name, out);
                }
            }
            leaf => out.push(format!("{prefix}: {leaf}")),
        }
    }

    #[test]
    fn array_members_are_nested_structs_named_by_index() {
        let be = ByteOrder::BigEndian;
        let f8 = Datatype::FloatingPoint { size: 8, byte_order: be };
        let fields = [member("n", 0, int(1, be)), member("c", 1, array(f8, &[2, 3]))];
        let ElementType::Numeric(t @ DataType::Struct(s), Some(Endian::Big)) = struct_element(49, &fields, 0) else {
            panic!("not a packed big-endian struct")
        };
        assert_eq!(s.size(), 49);
        let mut leaves = Vec::new();
        flatten(t, "", &mut leaves);
        let expected: Vec<String> = std::iter::once("n: int8".to_string())
            .chain((0..2).flat_map(|i| (0..3).map(move |j| format!("c.{i}.{j}: float64"))))
            .collect();
        assert_eq!(leaves, expected);
        // An array of arrays is one level per dimension too; strings keep their width.
        let s4 = Datatype::String {
            size: hdf5_reader::StringSize::Fixed(4),
            encoding: hdf5_reader::StringEncoding::Ascii,
            padding: hdf5_reader::StringPadding::NullPad,
        };
        let ElementType::Numeric(t, None) = struct_element(24, &[member("s", 0, array(array(s4, &[3]), &[2]))], 0)
        else {
            panic!("not a packed struct without byte order")
        };
        let mut leaves = Vec::new();
        flatten(t, "", &mut leaves);
        assert_eq!((leaves.len(), leaves[5].as_str()), (6, "s.1.2: bytes4"));
    }

    #[test]
    fn notes_give_the_declared_order_and_array_members_where_the_struct_cannot() {
        let le = ByteOrder::LittleEndian;
        let f8 = Datatype::FloatingPoint { size: 8, byte_order: le };
        // PyTables' out_of_order_types.h5: declared test_5, test_10, test_15 at offsets 25, 15, 0.
        let out_of_order =
            [member("test_5", 25, int(4, le)), member("test_10", 15, f8.clone()), member("test_15", 0, int(4, le))];
        let note = compound_note(&Datatype::Compound { size: 29, fields: out_of_order.to_vec() }).unwrap();
        assert_eq!(note.member_order, Some(vec!["test_5".into(), "test_10".into(), "test_15".into()]));
        assert!(note.array_members.is_empty() && note.members.is_empty());
        // In offset order with no array member: nothing to say, complex numbers neither.
        let plain =
            Datatype::Compound { size: 6, fields: vec![member("a", 0, int(4, le)), member("b", 4, int(2, le))] };
        assert_eq!(compound_note(&plain), None);
        let complex =
            Datatype::Compound { size: 16, fields: vec![member("r", 0, f8.clone()), member("i", 8, f8.clone())] };
        assert_eq!(compound_note(&complex), None);
        // Array members (an array of arrays is one member of all the dimensions) and a nested
        // compound out of order, in an array member; a dataset's array type is its base's.
        let inner =
            Datatype::Compound { size: 3, fields: vec![member("y", 1, int(2, le)), member("x", 0, int(1, le))] };
        let fields = vec![
            member("id", 0, array(int(1, le), &[8])),
            member("grid", 8, array(array(f8, &[10]), &[5])),
            member("pts", 408, array(inner, &[2])),
        ];
        let dataset = array(Datatype::Compound { size: 414, fields }, &[3]);
        let note = compound_note(&dataset).unwrap();
        assert_eq!(note.member_order, None);
        let arrays: Vec<(&str, &[u64])> = note.array_members.iter().map(|(n, d)| (n.as_str(), d.as_slice())).collect();
        assert_eq!(arrays, [("grid", &[5, 10][..]), ("id", &[8]), ("pts", &[2])]);
        assert_eq!(note.members["pts"].member_order, Some(vec!["y".into(), "x".into()]));
        // The note fits the struct the compound maps to.
        let Datatype::Array { base, .. } = &dataset else { unreachable!() };
        let Datatype::Compound { size, fields } = base.as_ref() else { unreachable!() };
        let ElementType::Numeric(t, _) = struct_element(*size, fields, 0) else { panic!("not a struct") };
        let meta = serde_json::json!({"vzarr": {"compound": note.to_json()}});
        crate::metadata::ArrayNotes::from_json(&meta).unwrap().check(t).unwrap();
    }

    #[test]
    fn arrays_of_padded_compounds_repeat_their_runs() {
        let le = ByteOrder::LittleEndian;
        // Each element: 2 bytes used of 4; three of them, then a byte member after 2 unused bytes.
        let inner = Datatype::Compound { size: 4, fields: vec![member("a", 0, int(2, le))] };
        let fields = [member("v", 0, array(inner, &[3])), member("n", 14, int(1, le))];
        let ElementType::PaddedStruct(DataType::Struct(s), Some(Endian::Little), repack) =
            struct_element(15, &fields, 0)
        else {
            panic!("not a padded struct")
        };
        assert_eq!(s.size(), 7);
        assert_eq!(repack, Repack { source_size: 15, runs: vec![(0, 2), (4, 2), (8, 2), (14, 1)] });
        // An array of packed compounds merges into one run: the compound is referenced in place.
        let packed = Datatype::Compound { size: 2, fields: vec![member("a", 0, int(2, le))] };
        assert!(matches!(struct_element(6, &[member("v", 0, array(packed, &[3]))], 0), ElementType::Numeric(..)));
    }

    #[test]
    fn array_members_past_the_struct_limits_are_refused() {
        let le = ByteOrder::LittleEndian;
        let why = |fields: &[CompoundField]| match struct_element(u32::MAX, fields, 0) {
            ElementType::Unsupported(why) => why,
            other => panic!("{other:?} accepted"),
        };
        let deep = why(&[member("d", 0, array(int(1, le), &[1; MAX_STRUCT_DEPTH]))]);
        assert!(deep.contains("member d: an array of 16 dimensions nests structs more than 16 deep"), "{deep}");
        let mut nested = array(int(1, le), &[1; 8]);
        for _ in 0..8 {
            nested = Datatype::Compound { size: 1, fields: vec![member("x", 0, nested)] };
        }
        // 8 compounds below the top one, then 8 array levels: 17 levels (16 are accepted).
        assert!(why(&[member("d", 0, nested.clone())]).contains("more than 16 deep"));
        let Datatype::Compound { fields, .. } = nested else { unreachable!() };
        assert!(matches!(struct_element(u32::MAX, &fields, 0), ElementType::PaddedStruct(..)));
        let wide = why(&[member("w", 0, array(int(1, le), &[MAX_STRUCT_FIELDS as u64 + 1]))]);
        assert!(wide.contains("member w: an array dimension of 4097 elements"), "{wide}");
        assert!(why(&[member("z", 0, array(int(1, le), &[0]))]).contains("an array dimension of 0 elements"));
        let many = why(&[member("m", 0, array(int(1, le), &[300, 300]))]);
        assert!(many.contains("member m: an array of dimensions [300, 300]: more than 65536 leaf fields"), "{many}");
        let half = why(&[member("h", 0, array(Datatype::FloatingPoint { size: 2, byte_order: le }, &[2]))]);
        assert!(half.contains("member h: an array of 2-byte floats"), "{half}");
        let reference = Datatype::Reference { ref_type: hdf5_reader::ReferenceType::Object, size: 8 };
        assert!(why(&[member("r", 0, array(reference, &[2]))]).contains("member r: an array of object references"));
    }
}
