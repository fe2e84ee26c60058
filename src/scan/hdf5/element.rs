//! HDF5 datatypes as Zarr data types: the element type of a dataset or attribute as stored
//! ([`ElementType`]), numbers, strings, references, enums, bitfields, opaque bytes, complex numbers,
//! and compounds as structs (`element/compound`, `element/text_struct`), whose members are element
//! types in turn.

mod compound;
mod text_struct;

use hdf5_reader::{ByteOrder, Datatype, ReferenceType};

pub(crate) use compound::{compound_note, Repack};
pub(crate) use text_struct::{text, MemberKind, TextCompound};

use crate::codec::Endian;
use crate::metadata::DataType;
use crate::metadata::MAX_LENGTH_BYTES;

/// The element type as stored in the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ElementType {
    /// A supported numeric type in this byte order (None for one-byte types).
    Numeric(DataType, Option<Endian>),
    /// Fixed-length strings of this many bytes (netCDF-4 `char` when 1).
    FixedString(u32),
    /// Variable-length strings (netCDF-4 `string`): their bytes live in the global heap, so they are
    /// read at scan time into a store-owned array.
    VlenString,
    /// Object references of this many bytes: the path of each referenced object is read at scan
    /// time into a store-owned `string` array (`references`).
    ObjectReference(u8),
    /// A compound whose members leave bytes unused (padding): the packed struct (its type and byte
    /// order, as for `Numeric`) is made of the bytes of each stored element that the [`Repack`] names,
    /// so the scanner stores the variable's chunks repacked (`hdf5::repacked`).
    PaddedStruct(DataType, Option<Endian>, Repack),
    /// A compound with variable-length string or object reference members: its values are read at
    /// scan time into a store-owned struct whose text fields are UTF-32 (`element/text_struct`).
    TextStruct(TextCompound),
    /// Anything else, described for the warning.
    Unsupported(String),
}

fn endian(order: ByteOrder) -> Endian {
    match order {
        ByteOrder::LittleEndian => Endian::Little,
        ByteOrder::BigEndian => Endian::Big,
    }
}

/// The tag `hdf5-reader` gives the opaque type it reads an HDF5 time-class datatype (class 2) as (an
/// opaque type a writer tagged so is taken for one too).
const TIME_TAG: &str = "HDF5_TIME";
/// Why a dataset region reference is refused.
const REGION_REFERENCE: &str =
    "dataset region references (a selection of another dataset, which no Zarr data type holds)";
/// Why a time-class element is refused.
const TIME_CLASS: &str = "the HDF5 time type (datatype class 2, which libhdf5 converts to no other type)";

/// Maps an HDF5 datatype to a Zarr data type, or names why it cannot be referenced.
pub(crate) fn element_type(datatype: &Datatype) -> ElementType {
    let numeric = |t: DataType, size: u8, order: ByteOrder| ElementType::Numeric(t, (size > 1).then(|| endian(order)));
    match datatype {
        Datatype::FixedPoint { size, signed, byte_order } => match (size, signed) {
            (1, true) => numeric(DataType::Int8, 1, *byte_order),
            (2, true) => numeric(DataType::Int16, 2, *byte_order),
            (4, true) => numeric(DataType::Int32, 4, *byte_order),
            (8, true) => numeric(DataType::Int64, 8, *byte_order),
            (1, false) => numeric(DataType::UInt8, 1, *byte_order),
            (2, false) => numeric(DataType::UInt16, 2, *byte_order),
            (4, false) => numeric(DataType::UInt32, 4, *byte_order),
            (8, false) => numeric(DataType::UInt64, 8, *byte_order),
            _ => ElementType::Unsupported(format!("{size}-byte integer type")),
        },
        // Two-byte floats are taken as IEEE binary16; the scanner checks the layout in the raw
        // datatype message (`raw_header::is_ieee_half`) and refuses others (bfloat16).
        Datatype::FloatingPoint { size: 2, byte_order } => numeric(DataType::Float16, 2, *byte_order),
        Datatype::FloatingPoint { size: 4, byte_order } => numeric(DataType::Float32, 4, *byte_order),
        Datatype::FloatingPoint { size: 8, byte_order } => numeric(DataType::Float64, 8, *byte_order),
        Datatype::FloatingPoint { size, .. } => ElementType::Unsupported(format!("{size}-byte floating point type")),
        Datatype::String { size: hdf5_reader::StringSize::Fixed(n), .. } if *n > MAX_LENGTH_BYTES => {
            ElementType::Unsupported(too_long("fixed-length strings", *n))
        }
        Datatype::String { size: hdf5_reader::StringSize::Fixed(n), .. } if *n > 0 => ElementType::FixedString(*n),
        Datatype::String { size: hdf5_reader::StringSize::Variable, .. } => ElementType::VlenString,
        Datatype::String { .. } => ElementType::Unsupported("zero-length string type".into()),
        Datatype::VarLen { kind: hdf5_reader::VarLenKind::String, .. } => ElementType::VlenString,
        Datatype::VarLen { .. } => ElementType::Unsupported("variable-length type".into()),
        // Complex numbers, else a Zarr struct when the layout allows (`compound`).
        Datatype::Compound { size, fields } => {
            complex(datatype).unwrap_or_else(|| match TextCompound::of(*size, fields) {
                Some(Ok(compound)) => ElementType::TextStruct(compound),
                Some(Err(why)) => ElementType::Unsupported(format!("compound type ({why})")),
                None => compound::struct_element(*size, fields, 0),
            })
        }
        // h5py's booleans (a 1-byte enum of exactly FALSE = 0 and TRUE = 1) are Zarr `bool`, whose
        // byte is the enum's: NumPy, h5py and h5netcdf show them as booleans.
        Datatype::Enum { base, members }
            if matches!(**base, Datatype::FixedPoint { size: 1, .. })
                && super::attributes::is_h5py_bool(base, members) =>
        {
            ElementType::Numeric(DataType::Bool, None)
        }
        // Other enums are their integer base type; the scanner adds the names as attributes.
        Datatype::Enum { base, .. } => match element_type(base) {
            ElementType::Numeric(t, e) if is_integer(t) => ElementType::Numeric(t, e),
            _ => ElementType::Unsupported("enum type over a non-integer base".into()),
        },
        // The HDF5 time class (2; PyTables' time columns), which `hdf5-reader` reads as an opaque type
        // tagged `HDF5_TIME`: libhdf5 converts it to nothing and h5py has no NumPy form of it, so no
        // reader could check or decode raw bytes referenced in its place.
        Datatype::Opaque { tag, .. } if tag == TIME_TAG => ElementType::Unsupported(TIME_CLASS.into()),
        // Raw bytes: no byte order, no meaning vzarr could know (the tag is not kept).
        Datatype::Opaque { size, .. } if *size > MAX_LENGTH_BYTES => {
            ElementType::Unsupported(too_long("an opaque type", *size))
        }
        Datatype::Opaque { size, .. } if *size > 0 => ElementType::Numeric(DataType::RawBytes(*size), None),
        Datatype::Opaque { .. } => ElementType::Unsupported("zero-length opaque type".into()),
        Datatype::Reference { ref_type: ReferenceType::Object, size } => ElementType::ObjectReference(*size),
        Datatype::Reference { .. } => ElementType::Unsupported(REGION_REFERENCE.into()),
        Datatype::Array { .. } => ElementType::Unsupported("array type".into()),
        // A bitfield (PyTables' booleans are 8-bit bitfields) is the unsigned integer of its size and
        // byte order, as h5py reads it: the bytes are the same. (Its bit offset and precision, which
        // `hdf5-reader` does not keep, only say which bits are meaningful; h5py ignores them too.)
        Datatype::Bitfield { size, byte_order } => {
            match element_type(&Datatype::FixedPoint { size: *size, signed: false, byte_order: *byte_order }) {
                ElementType::Unsupported(_) => ElementType::Unsupported(format!("{size}-byte bitfield type")),
                unsigned => unsigned,
            }
        }
    }
}

/// Why elements of `bytes` bytes of `what` are refused: larger than any Zarr store vzarr reads holds
/// (an element's bytes, its fill value, are allocated when the metadata is read).
fn too_long(what: &str, bytes: u32) -> String {
    format!("{what} of {bytes} bytes an element (at most {MAX_LENGTH_BYTES})")
}

fn is_integer(t: DataType) -> bool {
    use DataType::{Int16, Int32, Int64, Int8, UInt16, UInt32, UInt64, UInt8};
    matches!(t, Int8 | Int16 | Int32 | Int64 | UInt8 | UInt16 | UInt32 | UInt64)
}

/// A compound of two floats of one size and byte order named as real and imaginary parts (`r`, `i`
/// as h5py writes NumPy complex numbers; `real`, `imag`; `re`, `im`), packed: a Zarr complex type.
pub(crate) fn complex(datatype: &Datatype) -> Option<ElementType> {
    let Datatype::Compound { size, fields } = datatype else { return None };
    let [re, im] = fields.as_slice() else { return None };
    let names = (re.name.to_ascii_lowercase(), im.name.to_ascii_lowercase());
    if !matches!((names.0.as_str(), names.1.as_str()), ("r", "i") | ("real", "imag") | ("re", "im")) {
        return None;
    }
    let (
        Datatype::FloatingPoint { size: a, byte_order: order },
        Datatype::FloatingPoint { size: b, byte_order: other },
    ) = (&re.datatype, &im.datatype)
    else {
        return None;
    };
    let t = match a {
        4 => DataType::Complex64,
        8 => DataType::Complex128,
        _ => return None,
    };
    let packed = a == b && order == other && re.byte_offset == 0 && im.byte_offset == u32::from(*a);
    (packed && *size == 2 * u32::from(*a)).then(|| ElementType::Numeric(t, Some(endian(*order))))
}

/// Bytes of one element (0 when the type is not supported).
pub(crate) fn element_bytes(element: &ElementType) -> u32 {
    match element {
        ElementType::Numeric(t, _) => t.size() as u32,
        ElementType::FixedString(n) => *n,
        ElementType::ObjectReference(n) => u32::from(*n),
        ElementType::PaddedStruct(_, _, repack) => repack.source_size as u32,
        ElementType::TextStruct(compound) => compound.size as u32,
        ElementType::VlenString | ElementType::Unsupported(_) => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hdf5_reader::{StringEncoding, StringPadding, StringSize};

    /// An element's bytes are allocated (its fill value) when its metadata is read: types of more
    /// than 16 MiB an element (found by the `hdf5` fuzz target: a 4 GiB fixed string) are refused.
    #[test]
    fn elements_larger_than_a_store_holds_are_refused() {
        let string = |n| Datatype::String {
            size: StringSize::Fixed(n),
            encoding: StringEncoding::Ascii,
            padding: StringPadding::NullTerminate,
        };
        assert_eq!(element_type(&string(MAX_LENGTH_BYTES)), ElementType::FixedString(MAX_LENGTH_BYTES));
        for too_long in [string(MAX_LENGTH_BYTES + 1), Datatype::Opaque { size: u32::MAX - 1, tag: String::new() }] {
            let ElementType::Unsupported(why) = element_type(&too_long) else { panic!("{too_long:?} accepted") };
            assert!(why.contains(&format!("at most {MAX_LENGTH_BYTES}")), "{why}");
        }
    }
}
