//! What a NetCDF-3 header is made of: versions, types, attribute values, dimensions, variables, the
//! header itself and its errors, plus the resource limits a hostile header is held to.

use thiserror::Error;

/// Largest header vzarr parses (bytes). Real headers are far smaller: 20,000 variables with a few
/// attributes each take a few MiB.
pub(crate) const MAX_HEADER_BYTES: u64 = 128 << 20;
/// Largest attribute value vzarr reads (bytes).
pub(crate) const MAX_ATTRIBUTE_BYTES: u64 = 32 << 20;
/// Most dimensions a variable may have (libnetcdf's `NC_MAX_VAR_DIMS`).
pub(crate) const MAX_RANK: u64 = 1024;

/// Tag of a list of dimensions.
pub(super) const NC_DIMENSION: u32 = 0x0A;
/// Tag of a list of variables.
pub(super) const NC_VARIABLE: u32 = 0x0B;
/// Tag of a list of attributes.
pub(super) const NC_ATTRIBUTE: u32 = 0x0C;

/// Which NetCDF-3 variant a file is (the byte after `CDF` in the magic number).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cdf3Version {
    /// CDF-1 (`CDF\x01`): 32-bit counts and offsets.
    Classic,
    /// CDF-2 (`CDF\x02`): 32-bit counts, 64-bit `begin` offsets.
    Offset64,
    /// CDF-5 (`CDF\x05`): 64-bit counts and offsets, plus unsigned and 64-bit integer types.
    Data64,
}

impl Cdf3Version {
    /// The version byte that follows `CDF` in the magic number: 1, 2 or 5.
    #[must_use]
    #[cfg(test)]
    pub(crate) fn magic_byte(self) -> u8 {
        match self {
            Self::Classic => 1,
            Self::Offset64 => 2,
            Self::Data64 => 5,
        }
    }

    /// The version for a magic version byte, if it is 1, 2 or 5.
    pub(super) fn from_magic_byte(byte: u8) -> Option<Self> {
        match byte {
            1 => Some(Self::Classic),
            2 => Some(Self::Offset64),
            5 => Some(Self::Data64),
            _ => None,
        }
    }

    /// Width in bytes of counts, dimension lengths, dimension ids, `numrecs` and `vsize`.
    pub(super) fn count_width(self) -> u64 {
        if self == Self::Data64 {
            8
        } else {
            4
        }
    }

    /// Width in bytes of a variable's `begin` offset.
    pub(super) fn offset_width(self) -> u64 {
        if self == Self::Classic {
            4
        } else {
            8
        }
    }
}

/// External type of a variable or attribute (`nc_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NcType {
    /// `NC_BYTE` (1): signed 8-bit integer.
    Byte,
    /// `NC_CHAR` (2): 8-bit character.
    Char,
    /// `NC_SHORT` (3): signed 16-bit integer.
    Short,
    /// `NC_INT` (4): signed 32-bit integer.
    Int,
    /// `NC_FLOAT` (5): IEEE 754 single precision.
    Float,
    /// `NC_DOUBLE` (6): IEEE 754 double precision.
    Double,
    /// `NC_UBYTE` (7, CDF-5 only): unsigned 8-bit integer.
    UByte,
    /// `NC_USHORT` (8, CDF-5 only): unsigned 16-bit integer.
    UShort,
    /// `NC_UINT` (9, CDF-5 only): unsigned 32-bit integer.
    UInt,
    /// `NC_INT64` (10, CDF-5 only): signed 64-bit integer.
    Int64,
    /// `NC_UINT64` (11, CDF-5 only): unsigned 64-bit integer.
    UInt64,
}

impl NcType {
    /// Size in bytes of one value in the file.
    #[must_use]
    pub(crate) fn size(self) -> u64 {
        match self {
            Self::Byte | Self::Char | Self::UByte => 1,
            Self::Short | Self::UShort => 2,
            Self::Int | Self::Float | Self::UInt => 4,
            Self::Double | Self::Int64 | Self::UInt64 => 8,
        }
    }

    /// The `nc_type` code stored in the header (`NC_BYTE` = 1 ... `NC_UINT64` = 11).
    #[must_use]
    pub(crate) fn code(self) -> u32 {
        match self {
            Self::Byte => 1,
            Self::Char => 2,
            Self::Short => 3,
            Self::Int => 4,
            Self::Float => 5,
            Self::Double => 6,
            Self::UByte => 7,
            Self::UShort => 8,
            Self::UInt => 9,
            Self::Int64 => 10,
            Self::UInt64 => 11,
        }
    }

    /// The type with `nc_type` code `code`, if the code is one of 1..=11.
    #[must_use]
    pub(crate) fn from_code(code: u32) -> Option<Self> {
        const ALL: [NcType; 11] = [
            NcType::Byte,
            NcType::Char,
            NcType::Short,
            NcType::Int,
            NcType::Float,
            NcType::Double,
            NcType::UByte,
            NcType::UShort,
            NcType::UInt,
            NcType::Int64,
            NcType::UInt64,
        ];
        let index = usize::try_from(code.checked_sub(1)?).ok()?;
        ALL.get(index).copied()
    }

    /// The type's name in netCDF's CDL (`byte`, `char`, ..., `uint64`).
    #[must_use]
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Byte => "byte",
            Self::Char => "char",
            Self::Short => "short",
            Self::Int => "int",
            Self::Float => "float",
            Self::Double => "double",
            Self::UByte => "ubyte",
            Self::UShort => "ushort",
            Self::UInt => "uint",
            Self::Int64 => "int64",
            Self::UInt64 => "uint64",
        }
    }

    /// Whether only CDF-5 files may use this type (ubyte, ushort, uint, int64, uint64).
    #[must_use]
    pub(crate) fn is_cdf5_only(self) -> bool {
        self.code() >= 7
    }

    /// netCDF's default fill value for this type (`NC_FILL_BYTE` ... `NC_FILL_UINT64`), as a
    /// one-element value. Used where a variable has no `_FillValue` attribute.
    #[must_use]
    pub(crate) fn default_fill(self) -> AttrValue {
        match self {
            Self::Byte => AttrValue::Bytes(vec![-127]),
            Self::Char => AttrValue::Text(vec![0]),
            Self::Short => AttrValue::Shorts(vec![-32767]),
            Self::Int => AttrValue::Ints(vec![-2_147_483_647]),
            // The spec gives the fill bit patterns: 7C F0 00 00 and 47 9E 00 .. 00.
            Self::Float => AttrValue::Floats(vec![f32::from_bits(0x7CF0_0000)]),
            Self::Double => AttrValue::Doubles(vec![f64::from_bits(0x479E_0000_0000_0000)]),
            Self::UByte => AttrValue::UBytes(vec![255]),
            Self::UShort => AttrValue::UShorts(vec![65535]),
            Self::UInt => AttrValue::UInts(vec![4_294_967_295]),
            Self::Int64 => AttrValue::Int64s(vec![-9_223_372_036_854_775_806]),
            Self::UInt64 => AttrValue::UInt64s(vec![18_446_744_073_709_551_614]),
        }
    }
}

/// The values of an attribute, decoded from big-endian. `Text` keeps the raw bytes of a char
/// attribute (no trimming of trailing NULs, no assumed encoding).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum AttrValue {
    /// `NC_BYTE` values.
    Bytes(Vec<i8>),
    /// `NC_CHAR` values (raw bytes).
    Text(Vec<u8>),
    /// `NC_SHORT` values.
    Shorts(Vec<i16>),
    /// `NC_INT` values.
    Ints(Vec<i32>),
    /// `NC_FLOAT` values.
    Floats(Vec<f32>),
    /// `NC_DOUBLE` values.
    Doubles(Vec<f64>),
    /// `NC_UBYTE` values.
    UBytes(Vec<u8>),
    /// `NC_USHORT` values.
    UShorts(Vec<u16>),
    /// `NC_UINT` values.
    UInts(Vec<u32>),
    /// `NC_INT64` values.
    Int64s(Vec<i64>),
    /// `NC_UINT64` values.
    UInt64s(Vec<u64>),
}

impl AttrValue {
    /// The external type of these values.
    #[must_use]
    pub(crate) fn nc_type(&self) -> NcType {
        match self {
            Self::Bytes(_) => NcType::Byte,
            Self::Text(_) => NcType::Char,
            Self::Shorts(_) => NcType::Short,
            Self::Ints(_) => NcType::Int,
            Self::Floats(_) => NcType::Float,
            Self::Doubles(_) => NcType::Double,
            Self::UBytes(_) => NcType::UByte,
            Self::UShorts(_) => NcType::UShort,
            Self::UInts(_) => NcType::UInt,
            Self::Int64s(_) => NcType::Int64,
            Self::UInt64s(_) => NcType::UInt64,
        }
    }

    /// Number of values (`nelems`).
    #[must_use]
    pub(crate) fn len(&self) -> usize {
        match self {
            Self::Bytes(v) => v.len(),
            Self::Text(v) | Self::UBytes(v) => v.len(),
            Self::Shorts(v) => v.len(),
            Self::Ints(v) => v.len(),
            Self::Floats(v) => v.len(),
            Self::Doubles(v) => v.len(),
            Self::UShorts(v) => v.len(),
            Self::UInts(v) => v.len(),
            Self::Int64s(v) => v.len(),
            Self::UInt64s(v) => v.len(),
        }
    }
}

/// A named attribute (global or of a variable), in header order.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Attribute {
    /// Attribute name (UTF-8).
    pub name: String,
    /// Attribute values.
    pub value: AttrValue,
}

/// A dimension, in header order (its index is its dimension id).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Dimension {
    /// Dimension name.
    pub name: String,
    /// Length in elements; for the record dimension this is the header's `numrecs` (the file
    /// stores 0 there).
    pub length: u64,
    /// Whether this is the record (unlimited) dimension.
    pub is_record: bool,
}

/// A variable, in header order, with its layout computed from the shape (not from `vsize`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Variable {
    /// Variable name.
    pub name: String,
    /// Indices into [`Header::dimensions`], slowest-varying first.
    pub dim_ids: Vec<usize>,
    /// The variable's attributes, in header order.
    pub attributes: Vec<Attribute>,
    /// External type of the values.
    pub nc_type: NcType,
    /// `vsize` as stored in the header (advisory: saturates for large variables).
    pub vsize: u64,
    /// File offset of the data in bytes (of the first record, for record variables).
    pub begin: u64,
    /// Whether the first dimension is the record dimension.
    pub is_record: bool,
    /// Shape in elements; the record dimension's length is `numrecs`.
    pub shape: Vec<u64>,
    /// Bytes of one record (record variables) or of the whole variable (others), unpadded.
    pub data_size: u64,
}

impl Variable {
    /// The fill value: the `_FillValue` attribute when it holds exactly one value of the
    /// variable's type, otherwise [`NcType::default_fill`].
    #[must_use]
    pub(crate) fn fill_value(&self) -> AttrValue {
        self.attributes
            .iter()
            .find(|a| a.name == "_FillValue")
            .map(|a| &a.value)
            .filter(|v| v.nc_type() == self.nc_type && v.len() == 1)
            .cloned()
            .unwrap_or_else(|| self.nc_type.default_fill())
    }
}

/// A parsed NetCDF-3 header.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Header {
    /// CDF-1, CDF-2 or CDF-5.
    pub version: Cdf3Version,
    /// Number of records: as stored, or computed from the file length when `streaming`.
    pub numrecs: u64,
    /// Whether the header stored `STREAMING` (all ones) instead of a record count.
    pub streaming: bool,
    /// Dimensions in id order.
    pub dimensions: Vec<Dimension>,
    /// Global attributes in header order.
    pub attributes: Vec<Attribute>,
    /// Variables in header order.
    pub variables: Vec<Variable>,
    /// Distance in bytes between consecutive records of every record variable (the NetCDF classic
    /// format specification): the sum of the padded record sizes, or the unpadded size when there is
    /// exactly one record variable. 0 when there are no record variables.
    pub record_size: u64,
    /// Bytes consumed by the header.
    pub header_len: u64,
}

/// Why a header could not be parsed.
#[non_exhaustive]
#[derive(Debug, Error)]
pub(crate) enum HeaderError {
    /// The header continues past the bytes given: read at least `at_least` bytes of the file
    /// (a lower bound, always more than was given and never more than the file length) and parse
    /// again. A corrupt count can ask for up to the whole file, so callers should cap the prefix
    /// they are willing to read.
    #[error("header incomplete: read at least {at_least} bytes and parse again")]
    NeedMore {
        /// Minimum prefix length, in bytes, needed to make progress.
        at_least: u64,
    },
    /// The file does not start with `CDF` and version byte 1, 2 or 5.
    #[error("not a NetCDF-3 file: starts with {found:02x?}, expected `CDF` and version 1, 2 or 5")]
    BadMagic {
        /// The first (up to 4) bytes of the file.
        found: Vec<u8>,
    },
    /// The header is malformed at byte offset `at`.
    #[error("netcdf-3 header byte {at}: {reason}")]
    Invalid {
        /// Byte offset in the file of the offending field.
        at: u64,
        /// What is wrong.
        reason: String,
    },
    /// A variable's definition is inconsistent (dimension ids, sizes, offsets).
    #[error("variable `{variable}` (header byte {at}): {reason}")]
    Variable {
        /// Variable name.
        variable: String,
        /// Byte offset in the file of the variable's header entry.
        at: u64,
        /// What is wrong.
        reason: String,
    },
    /// A variable's data does not lie inside the file.
    #[error("variable `{variable}`: data at {start}..{end} lies past the end of the {file_len}-byte file")]
    DataOutOfBounds {
        /// Variable name.
        variable: String,
        /// File offset of the data (`begin`).
        start: u64,
        /// End (exclusive) of the data; for record variables the end of the last record.
        end: u64,
        /// Length of the file in bytes.
        file_len: u64,
    },
}
