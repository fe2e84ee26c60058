//! HDF5 compounds with variable-length string or object reference members (h5py record arrays with
//! `h5py.string_dtype()` or `h5py.ref_dtype` fields, PyTables-style index tables) as a Zarr `struct`
//! whose text fields are `fixed_length_utf32`.
//!
//! No reference can name such a compound's values: a stored element holds, for each string member,
//! a descriptor of bytes in the global heap, and for each reference member a file address. The
//! scanner reads the values and stores them itself (`hdf5::text_struct`): the other members are
//! copied as a packed struct would hold them (`element/compound`'s member types), each string member
//! becomes the text, each reference member the path of the object it names (empty for a null
//! reference), both as NUL-padded UTF-32 as wide as the longest value, as VirtualiZarr's `HDFParser`
//! and NumPy (`U<n>`) give them.
//!
//! Only members directly in the compound are read this way; a nested compound or an array member
//! holding strings or references is refused with its reason, as are members `element/compound`
//! refuses.

use hdf5_reader::{CompoundField, Datatype, StringPadding};

use super::compound::{member_type, CompoundError, Member};
use super::{element_type, ElementType};

/// A compound the scanner reads and stores itself: its members in offset order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TextCompound {
    /// Bytes of one stored element.
    pub(crate) size: usize,
    /// The members, in offset order.
    pub(crate) members: Vec<TextMember>,
}

/// One member of a [`TextCompound`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TextMember {
    /// The member's name, the struct field's.
    pub(crate) name: String,
    /// Its byte offset in a stored element.
    pub(crate) offset: usize,
    /// What it holds.
    pub(crate) kind: MemberKind,
}

/// What a [`TextMember`] holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum MemberKind {
    /// Numbers, fixed strings, opaque bytes or nested compounds: the packed field's bytes are the
    /// runs (offset in the member, length) of the stored member, in the given byte order.
    Copied(Member),
    /// A variable-length string, its padding as the datatype declares it.
    VlenString(StringPadding),
    /// An old-style object reference of this many bytes.
    ObjectReference(u8),
}

impl TextCompound {
    /// The compound of `size` bytes with `fields` when a member is a variable-length string or an
    /// object reference: Some(Ok) when vzarr can store it, Some(Err(why)) when not; None for a
    /// compound with neither (`element/compound` maps it).
    pub(crate) fn of(size: u32, fields: &[CompoundField]) -> Option<Result<TextCompound, CompoundError>> {
        let mut members: Vec<(&CompoundField, ElementType)> =
            fields.iter().map(|f| (f, element_type(&f.datatype))).collect();
        let text = |e: &ElementType| matches!(e, ElementType::VlenString | ElementType::ObjectReference(_));
        members.iter().find(|(_, e)| text(e))?;
        members.sort_by_key(|(m, _)| m.byte_offset);
        Some(Self::mapped(size, members))
    }

    /// The members (in offset order, each with its element type) mapped.
    fn mapped(size: u32, members: Vec<(&CompoundField, ElementType)>) -> Result<TextCompound, CompoundError> {
        let mut out = Vec::with_capacity(members.len());
        let mut at = 0u64;
        for (m, element) in members {
            let (kind, stored) = match element {
                ElementType::VlenString => (MemberKind::VlenString(padding(&m.datatype)), 0),
                ElementType::ObjectReference(n) => (MemberKind::ObjectReference(n), u64::from(n)),
                _ => {
                    let member = member_type(&m.datatype, 0).map_err(CompoundError::member(&m.name))?;
                    let stored = member.stored_size;
                    (MemberKind::Copied(member), stored)
                }
            };
            let offset = u64::from(m.byte_offset);
            if offset < at {
                return Err(CompoundError::Overlap { name: m.name.clone(), offset });
            }
            // A string's descriptor is 4 + address + 4 bytes; its width is checked against the
            // file's address size when the values are read.
            at = offset + stored;
            if at > u64::from(size) {
                return Err(CompoundError::PastEnd { name: m.name.clone(), size });
            }
            out.push(TextMember { name: m.name.clone(), offset: offset as usize, kind });
        }
        Ok(TextCompound { size: size as usize, members: out })
    }
}

/// How a variable-length string datatype pads its values.
fn padding(datatype: &Datatype) -> StringPadding {
    match datatype {
        Datatype::String { padding, .. } | Datatype::VarLen { padding, .. } => *padding,
        _ => StringPadding::NullTerminate,
    }
}

/// The text of a string's bytes as stored with `padding`: up to the first NUL (null-terminated),
/// without trailing NULs (null-padded) or spaces (space-padded); invalid UTF-8 is an error.
pub(crate) fn text(bytes: &[u8], padding: StringPadding) -> Result<&str, std::str::Utf8Error> {
    let end = match padding {
        StringPadding::NullTerminate => bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len()),
        StringPadding::NullPad => bytes.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1),
        StringPadding::SpacePad => bytes.iter().rposition(|&b| b != b' ').map_or(0, |i| i + 1),
    };
    std::str::from_utf8(&bytes[..end])
}

#[cfg(test)]
mod tests {
    use super::*;
    use hdf5_reader::{ByteOrder, StringEncoding, StringSize};

    fn field(name: &str, byte_offset: u32, datatype: Datatype) -> CompoundField {
        CompoundField { name: name.into(), byte_offset, datatype }
    }

    fn vlen() -> Datatype {
        Datatype::String {
            size: StringSize::Variable,
            encoding: StringEncoding::Utf8,
            padding: StringPadding::NullTerminate,
        }
    }

    #[test]
    fn strings_and_references_are_stored_members_numbers_copied() {
        let int = Datatype::FixedPoint { size: 8, signed: true, byte_order: ByteOrder::LittleEndian };
        let reference = Datatype::Reference { ref_type: hdf5_reader::ReferenceType::Object, size: 8 };
        let fields = [field("ref", 24, reference), field("name", 8, vlen()), field("id", 0, int)];
        let mapped = TextCompound::of(32, &fields).unwrap().unwrap();
        let names: Vec<&str> = mapped.members.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, ["id", "name", "ref"], "offset order");
        assert!(matches!(mapped.members[0].kind, MemberKind::Copied(ref m) if m.stored_size == 8));
        assert_eq!(mapped.members[1].kind, MemberKind::VlenString(StringPadding::NullTerminate));
        assert_eq!(mapped.members[2].kind, MemberKind::ObjectReference(8));
    }

    #[test]
    fn compounds_without_text_members_are_not_theirs_and_bad_members_are_named() {
        let float = Datatype::FloatingPoint { size: 4, byte_order: ByteOrder::LittleEndian };
        assert!(TextCompound::of(4, &[field("x", 0, float.clone())]).is_none());
        let half = Datatype::FloatingPoint { size: 2, byte_order: ByteOrder::LittleEndian };
        let why =
            TextCompound::of(24, &[field("s", 0, vlen()), field("h", 16, half)]).unwrap().unwrap_err().to_string();
        assert!(why.starts_with("member h: 2-byte floats"), "{why}");
        let why = TextCompound::of(8, &[field("s", 0, vlen()), field("x", 6, float)]).unwrap().unwrap_err().to_string();
        assert!(why.contains("ends past"), "{why}");
    }

    #[test]
    fn padding_is_trimmed_as_declared() {
        assert_eq!(text(b"ab\0cd", StringPadding::NullTerminate).unwrap(), "ab");
        assert_eq!(text(b"a\0b\0\0", StringPadding::NullPad).unwrap(), "a\0b");
        assert_eq!(text(b"ab  ", StringPadding::SpacePad).unwrap(), "ab");
        assert!(text(b"\xff", StringPadding::NullTerminate).is_err());
    }
}
