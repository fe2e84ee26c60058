//! NetCDF-3 header parser (scan stage, pure: no I/O, no libnetcdf).
//!
//! Input: a prefix of a NetCDF-3 file (CDF-1 classic, CDF-2 64-bit offset or CDF-5 64-bit data)
//! and the file's total length. Output: a [`Header`] with the dimensions, the global and variable
//! attributes, and for every variable its type, shape, `begin` offset and unpadded data size, plus
//! the record stride [`Header::record_size`]: record `r` of a record variable starts at
//! `begin + r * record_size`. The scanner turns these into chunk references to the raw big-endian
//! bytes.
//!
//! Follows the NetCDF classic format specification (Unidata, "File Format Specifications", the
//! BNF grammar and its notes), its 64-bit offset variant, the CDF-5 specification (PnetCDF) and
//! REFERENCE.md section 5:
//! - All integers are big-endian. List tags (`NC_DIMENSION` 0x0A, `NC_VARIABLE` 0x0B,
//!   `NC_ATTRIBUTE` 0x0C) and `nc_type` are 32-bit. Counts (`nelems`, dimension lengths,
//!   dimension ids, `numrecs`, `vsize`) are 32-bit in CDF-1/2 and 64-bit in CDF-5. `begin` is
//!   32-bit in CDF-1 and 64-bit in CDF-2/5.
//! - Names and attribute values are padded to 4 bytes (the padding bytes are not checked,
//!   as in libnetcdf).
//! - An absent list is `ABSENT = ZERO ZERO`: a 32-bit zero tag and a zero count of the version's
//!   count width (so 12 bytes in CDF-5). As in libnetcdf, a zero count under the list's own tag
//!   is accepted too.
//! - A dimension of length 0 is the record (unlimited) dimension; at most one exists and it may
//!   only be a variable's first dimension. Its length in the returned header is `numrecs`.
//! - `vsize` is kept as stored but never trusted (it saturates at 2^32-1 for large variables).
//!   Sizes are computed from the shape. The record stride is the sum of the record variables'
//!   sizes, each padded to 4 bytes, or the unpadded size when the file has exactly one record
//!   variable (libnetcdf's rule, which only differs from padding for byte, char and short).
//! - `numrecs` of all ones (`STREAMING`) is replaced by the number of whole records that fit
//!   between the first record variable's `begin` and the end of the file.
//!
//! Robustness: any byte sequence gives `Ok` or an error, never a panic. Every count is checked
//! against the bytes left in the file (and in the prefix) before anything is allocated from it,
//! and all size arithmetic is overflow-checked. Stricter than libnetcdf on purpose: dimension and
//! variable names must be non-empty and free of `/` (they become Zarr paths), all names must be
//! UTF-8, no variable's data may overlap the header, and every variable's data (all `numrecs`
//! records of a record variable) must lie inside the file.

use thiserror::Error;

/// Tag of a list of dimensions.
const NC_DIMENSION: u32 = 0x0A;
/// Tag of a list of variables.
const NC_VARIABLE: u32 = 0x0B;
/// Tag of a list of attributes.
const NC_ATTRIBUTE: u32 = 0x0C;

/// Which NetCDF-3 variant a file is (the byte after `CDF` in the magic number).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cdf3Version {
    /// CDF-1 (`CDF\x01`): 32-bit counts and offsets.
    Classic,
    /// CDF-2 (`CDF\x02`): 32-bit counts, 64-bit `begin` offsets.
    Offset64,
    /// CDF-5 (`CDF\x05`): 64-bit counts and offsets, plus unsigned and 64-bit integer types.
    Data64,
}

impl Cdf3Version {
    /// The version byte that follows `CDF` in the magic number: 1, 2 or 5.
    pub fn magic_byte(self) -> u8 {
        match self {
            Self::Classic => 1,
            Self::Offset64 => 2,
            Self::Data64 => 5,
        }
    }

    /// The version for a magic version byte, if it is 1, 2 or 5.
    fn from_magic_byte(byte: u8) -> Option<Self> {
        match byte {
            1 => Some(Self::Classic),
            2 => Some(Self::Offset64),
            5 => Some(Self::Data64),
            _ => None,
        }
    }

    /// Width in bytes of counts, dimension lengths, dimension ids, `numrecs` and `vsize`.
    fn count_width(self) -> u64 {
        if self == Self::Data64 {
            8
        } else {
            4
        }
    }

    /// Width in bytes of a variable's `begin` offset.
    fn offset_width(self) -> u64 {
        if self == Self::Classic {
            4
        } else {
            8
        }
    }
}

/// External type of a variable or attribute (`nc_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NcType {
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
    pub fn size(self) -> u64 {
        match self {
            Self::Byte | Self::Char | Self::UByte => 1,
            Self::Short | Self::UShort => 2,
            Self::Int | Self::Float | Self::UInt => 4,
            Self::Double | Self::Int64 | Self::UInt64 => 8,
        }
    }

    /// The `nc_type` code stored in the header (`NC_BYTE` = 1 ... `NC_UINT64` = 11).
    pub fn code(self) -> u32 {
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
    pub fn from_code(code: u32) -> Option<Self> {
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
    pub fn name(self) -> &'static str {
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
    pub fn is_cdf5_only(self) -> bool {
        self.code() >= 7
    }

    /// netCDF's default fill value for this type (`NC_FILL_BYTE` ... `NC_FILL_UINT64`), as a
    /// one-element value. Used where a variable has no `_FillValue` attribute.
    pub fn default_fill(self) -> AttrValue {
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
pub enum AttrValue {
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
    pub fn nc_type(&self) -> NcType {
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
    pub fn len(&self) -> usize {
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

    /// Whether there are no values.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A named attribute (global or of a variable), in header order.
#[derive(Debug, Clone, PartialEq)]
pub struct Attribute {
    /// Attribute name (UTF-8).
    pub name: String,
    /// Attribute values.
    pub value: AttrValue,
}

/// A dimension, in header order (its index is its dimension id).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dimension {
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
pub struct Variable {
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
    pub fn fill_value(&self) -> AttrValue {
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
pub struct Header {
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
    /// Distance in bytes between consecutive records of every record variable (REFERENCE.md
    /// section 5): the sum of the padded record sizes, or the unpadded size when there is
    /// exactly one record variable. 0 when there are no record variables.
    pub record_size: u64,
    /// Bytes consumed by the header.
    pub header_len: u64,
}

/// Why a header could not be parsed.
#[non_exhaustive]
#[derive(Debug, Error)]
pub enum HeaderError {
    /// The header continues past the bytes given: read at least `at_least` bytes of the file
    /// (a lower bound; never more than the file length) and parse again.
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

/// Shorthand for [`HeaderError::Invalid`].
fn invalid(at: u64, reason: String) -> HeaderError {
    HeaderError::Invalid { at, reason }
}

/// `n` rounded up to a multiple of 4, or `None` on overflow.
fn pad4(n: u64) -> Option<u64> {
    n.checked_add(3).map(|x| x & !3)
}

/// Capacity for a vector of `count` elements whose bytes were already found in memory.
fn capacity(count: u64) -> usize {
    usize::try_from(count).unwrap_or(0)
}

/// A bounds-checked big-endian cursor over the header prefix.
struct Reader<'a> {
    bytes: &'a [u8],
    pos: u64,
    file_len: u64,
    version: Cdf3Version,
}

impl<'a> Reader<'a> {
    /// The next `n` bytes: `Invalid` if they run past the file, `NeedMore` if past the prefix.
    fn take(&mut self, n: u64, what: &str) -> Result<&'a [u8], HeaderError> {
        let start = self.pos;
        let end = start
            .checked_add(n)
            .filter(|&end| end <= self.file_len)
            .ok_or_else(|| {
                let file_len = self.file_len;
                invalid(start, format!("{what} needs {n} bytes but the {file_len}-byte file ends first"))
            })?;
        let slice = usize::try_from(start)
            .ok()
            .zip(usize::try_from(end).ok())
            .and_then(|(s, e)| self.bytes.get(s..e))
            .ok_or(HeaderError::NeedMore { at_least: end })?;
        self.pos = end;
        Ok(slice)
    }

    /// Checks that `count` entries of at least `min_each` bytes each can still follow.
    fn ensure_room(&self, count: u64, min_each: u64, what: &str) -> Result<(), HeaderError> {
        let end = count
            .checked_mul(min_each)
            .and_then(|n| self.pos.checked_add(n))
            .filter(|&end| end <= self.file_len)
            .ok_or_else(|| {
                let left = self.file_len.saturating_sub(self.pos);
                invalid(self.pos, format!("{what}: {count} entries cannot fit in the {left} bytes left in the file"))
            })?;
        if end > self.bytes.len() as u64 {
            return Err(HeaderError::NeedMore { at_least: end });
        }
        Ok(())
    }

    /// The next `N` bytes as an array.
    fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N], HeaderError> {
        let mut out = [0u8; N];
        for (dst, src) in out.iter_mut().zip(self.take(N as u64, what)?) {
            *dst = *src;
        }
        Ok(out)
    }

    /// A 32-bit big-endian unsigned integer.
    fn u32(&mut self, what: &str) -> Result<u32, HeaderError> {
        self.array(what).map(u32::from_be_bytes)
    }

    /// A 64-bit big-endian unsigned integer.
    fn u64(&mut self, what: &str) -> Result<u64, HeaderError> {
        self.array(what).map(u64::from_be_bytes)
    }

    /// A count of the version's width (`NON_NEG`: 32-bit in CDF-1/2, 64-bit in CDF-5).
    fn count(&mut self, what: &str) -> Result<u64, HeaderError> {
        if self.version.count_width() == 8 {
            self.u64(what)
        } else {
            self.u32(what).map(u64::from)
        }
    }

    /// An `OFFSET` (32-bit in CDF-1, 64-bit in CDF-2/5).
    fn offset(&mut self, what: &str) -> Result<u64, HeaderError> {
        if self.version.offset_width() == 8 {
            self.u64(what)
        } else {
            self.u32(what).map(u64::from)
        }
    }

    /// A `name`: count, UTF-8 bytes, padding to 4 bytes.
    fn name(&mut self, what: &str) -> Result<String, HeaderError> {
        let at = self.pos;
        let len = self.count(what)?;
        let padded = pad4(len).ok_or_else(|| invalid(at, format!("{what}: length {len} overflows")))?;
        let raw = self.take(padded, what)?;
        let raw = raw.get(..capacity(len)).unwrap_or(raw);
        String::from_utf8(raw.to_vec())
            .map_err(|e| invalid(at, format!("{what} is not valid UTF-8 ({e})")))
    }

    /// A name that becomes part of a Zarr path: non-empty and without `/`.
    fn path_name(&mut self, what: &str) -> Result<String, HeaderError> {
        let at = self.pos;
        let name = self.name(what)?;
        if name.is_empty() || name.contains('/') {
            return Err(invalid(at, format!("{what} `{name}` is empty or contains `/`")));
        }
        Ok(name)
    }

    /// An `nc_type` code allowed in this version.
    fn nc_type(&mut self, what: &str) -> Result<NcType, HeaderError> {
        let at = self.pos;
        let code = self.u32(what)?;
        let ty = NcType::from_code(code)
            .ok_or_else(|| invalid(at, format!("{what}: unknown nc_type {code}")))?;
        if ty.is_cdf5_only() && self.version != Cdf3Version::Data64 {
            let name = ty.name();
            return Err(invalid(at, format!("{what}: type {name} ({code}) is only allowed in CDF-5 files")));
        }
        Ok(ty)
    }

    /// A list header (`ABSENT` or `tag nelems`); returns `nelems` after checking that that many
    /// entries of at least `min_each` bytes fit.
    fn list_len(&mut self, tag: u32, min_each: u64, what: &str) -> Result<u64, HeaderError> {
        let at = self.pos;
        let found = self.u32(what)?;
        let count = self.count(what)?;
        if count == 0 && (found == 0 || found == tag) {
            return Ok(0);
        }
        if found != tag {
            return Err(invalid(at, format!("{what}: expected tag {tag:#04x} or ABSENT, found tag {found:#x} with {count} entries")));
        }
        self.ensure_room(count, min_each, what)?;
        Ok(count)
    }
}

/// A variable as read from the header, before its layout is computed.
struct RawVariable {
    at: u64,
    name: String,
    dim_ids: Vec<usize>,
    attributes: Vec<Attribute>,
    nc_type: NcType,
    vsize: u64,
    begin: u64,
}

impl RawVariable {
    /// A [`HeaderError::Variable`] about this variable.
    fn error(&self, reason: String) -> HeaderError {
        HeaderError::Variable { variable: self.name.clone(), at: self.at, reason }
    }
}

/// Parses a NetCDF-3 header from the start of a file of `file_len` bytes. `bytes` may be just a
/// prefix of the file.
///
/// # Errors
///
/// - [`HeaderError::NeedMore`] if the header does not fit in `bytes` (read more and retry; the
///   returned length is always greater than `bytes.len()` and at most `file_len`);
/// - [`HeaderError::BadMagic`] if the file is not CDF-1, CDF-2 or CDF-5;
/// - [`HeaderError::Invalid`] for a malformed or truncated header (unknown tag or type, count
///   that cannot fit in the file, invalid UTF-8 or empty name, a second record dimension, more
///   bytes given than `file_len`);
/// - [`HeaderError::Variable`] for a bad dimension id, a record dimension that is not first, a
///   size that overflows 64 bits, or data overlapping the header;
/// - [`HeaderError::DataOutOfBounds`] if a variable's data (all `numrecs` records of a record
///   variable) does not lie inside the file.
pub fn parse_header(bytes: &[u8], file_len: u64) -> Result<Header, HeaderError> {
    if bytes.len() as u64 > file_len {
        let given = bytes.len();
        return Err(invalid(0, format!("{given} bytes were given for a {file_len}-byte file")));
    }
    let version = read_magic(bytes, file_len)?;
    let mut reader = Reader { bytes, pos: 4, file_len, version };
    let (stored_numrecs, streaming) = read_numrecs(&mut reader)?;
    let mut dimensions = read_dimensions(&mut reader)?;
    let attributes = read_attributes(&mut reader, "global attribute")?;
    let raw = read_variables(&mut reader, &dimensions)?;
    let header_len = reader.pos;

    let sizes = raw
        .iter()
        .map(|v| record_or_variable_size(v, &dimensions))
        .collect::<Result<Vec<_>, _>>()?;
    let record_size = record_stride(&sizes).ok_or_else(|| {
        invalid(header_len, "the record size (sum of the record variables' sizes) overflows".into())
    })?;
    let numrecs = if streaming {
        let first_record = raw.iter().zip(&sizes).find(|(_, s)| s.0).map(|(v, _)| v.begin);
        streamed_numrecs(first_record, record_size, file_len)
    } else {
        stored_numrecs
    };
    for dim in dimensions.iter_mut().filter(|d| d.is_record) {
        dim.length = numrecs;
    }
    let place = Placement { numrecs, record_size, header_len, file_len };
    let variables = raw
        .into_iter()
        .zip(sizes)
        .map(|(v, (is_record, data_size))| place.finish(v, is_record, data_size, &dimensions))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Header { version, numrecs, streaming, dimensions, attributes, variables, record_size, header_len })
}

/// Reads and checks the magic number.
fn read_magic(bytes: &[u8], file_len: u64) -> Result<Cdf3Version, HeaderError> {
    let Some(magic) = bytes.get(..4) else {
        if file_len < 4 {
            return Err(HeaderError::BadMagic { found: bytes.to_vec() });
        }
        return Err(HeaderError::NeedMore { at_least: 4 });
    };
    magic
        .get(3)
        .copied()
        .filter(|_| magic.starts_with(b"CDF"))
        .and_then(Cdf3Version::from_magic_byte)
        .ok_or_else(|| HeaderError::BadMagic { found: magic.to_vec() })
}

/// Reads `numrecs`; returns it and whether it was `STREAMING`.
fn read_numrecs(reader: &mut Reader<'_>) -> Result<(u64, bool), HeaderError> {
    if reader.version == Cdf3Version::Data64 {
        let n = reader.u64("numrecs")?;
        Ok((n, n == u64::MAX))
    } else {
        let n = reader.u32("numrecs")?;
        Ok((u64::from(n), n == u32::MAX))
    }
}

/// Reads `dim_list`.
fn read_dimensions(reader: &mut Reader<'_>) -> Result<Vec<Dimension>, HeaderError> {
    let width = reader.version.count_width();
    let count = reader.list_len(NC_DIMENSION, 2 * width, "dimension list")?;
    let mut dimensions: Vec<Dimension> = Vec::with_capacity(capacity(count));
    for _ in 0..count {
        let at = reader.pos;
        let name = reader.path_name("dimension name")?;
        let length = reader.count("dimension length")?;
        let is_record = length == 0;
        if is_record && dimensions.iter().any(|d| d.is_record) {
            return Err(invalid(at, format!("dimension `{name}` is a second record dimension (length 0)")));
        }
        dimensions.push(Dimension { name, length, is_record });
    }
    Ok(dimensions)
}

/// Reads an `att_list`; `owner` names the attributes in messages ("global attribute", ...).
fn read_attributes(reader: &mut Reader<'_>, owner: &str) -> Result<Vec<Attribute>, HeaderError> {
    let width = reader.version.count_width();
    let count = reader.list_len(NC_ATTRIBUTE, 2 * width + 4, &format!("{owner} list"))?;
    let mut attributes = Vec::with_capacity(capacity(count));
    for _ in 0..count {
        let name = reader.name(&format!("{owner} name"))?;
        let what = format!("{owner} `{name}`");
        let nc_type = reader.nc_type(&what)?;
        let at = reader.pos;
        let nelems = reader.count(&what)?;
        let len = nelems
            .checked_mul(nc_type.size())
            .filter(|&n| pad4(n).is_some())
            .ok_or_else(|| invalid(at, format!("{what}: {nelems} values overflow")))?;
        let raw = reader.take(pad4(len).unwrap_or(len), &format!("values of {what}"))?;
        let value = decode_values(nc_type, raw.get(..capacity(len)).unwrap_or(raw));
        attributes.push(Attribute { name, value });
    }
    Ok(attributes)
}

/// Decodes big-endian attribute values of type `nc_type` (padding already removed).
fn decode_values(nc_type: NcType, raw: &[u8]) -> AttrValue {
    match nc_type {
        NcType::Byte => AttrValue::Bytes(be_values(raw, i8::from_be_bytes)),
        NcType::Char => AttrValue::Text(raw.to_vec()),
        NcType::Short => AttrValue::Shorts(be_values(raw, i16::from_be_bytes)),
        NcType::Int => AttrValue::Ints(be_values(raw, i32::from_be_bytes)),
        NcType::Float => AttrValue::Floats(be_values(raw, f32::from_be_bytes)),
        NcType::Double => AttrValue::Doubles(be_values(raw, f64::from_be_bytes)),
        NcType::UByte => AttrValue::UBytes(raw.to_vec()),
        NcType::UShort => AttrValue::UShorts(be_values(raw, u16::from_be_bytes)),
        NcType::UInt => AttrValue::UInts(be_values(raw, u32::from_be_bytes)),
        NcType::Int64 => AttrValue::Int64s(be_values(raw, i64::from_be_bytes)),
        NcType::UInt64 => AttrValue::UInt64s(be_values(raw, u64::from_be_bytes)),
    }
}

/// Splits `raw` into `N`-byte big-endian values.
fn be_values<const N: usize, T>(raw: &[u8], decode: fn([u8; N]) -> T) -> Vec<T> {
    raw.chunks_exact(N)
        .filter_map(|chunk| <[u8; N]>::try_from(chunk).ok())
        .map(decode)
        .collect()
}

/// Reads `var_list`.
fn read_variables(
    reader: &mut Reader<'_>,
    dimensions: &[Dimension],
) -> Result<Vec<RawVariable>, HeaderError> {
    let width = reader.version.count_width();
    let min_each = 4 * width + 8 + reader.version.offset_width();
    let count = reader.list_len(NC_VARIABLE, min_each, "variable list")?;
    let mut variables = Vec::with_capacity(capacity(count));
    for _ in 0..count {
        variables.push(read_variable(reader, dimensions)?);
    }
    Ok(variables)
}

/// Reads one `var`: name, dimension ids, attributes, type, `vsize`, `begin`.
fn read_variable(
    reader: &mut Reader<'_>,
    dimensions: &[Dimension],
) -> Result<RawVariable, HeaderError> {
    let at = reader.pos;
    let name = reader.path_name("variable name")?;
    let what = format!("dimension ids of variable `{name}`");
    let rank = reader.count(&what)?;
    reader.ensure_room(rank, reader.version.count_width(), &what)?;
    let mut dim_ids = Vec::with_capacity(capacity(rank));
    for position in 0..rank {
        let id = reader.count(&what)?;
        let index = usize::try_from(id).ok().filter(|&i| i < dimensions.len());
        let Some((index, dim)) = index.and_then(|i| Some((i, dimensions.get(i)?))) else {
            let n = dimensions.len();
            let reason = format!("dimension id {id} is out of range (the file has {n} dimensions)");
            return Err(HeaderError::Variable { variable: name, at, reason });
        };
        if dim.is_record && position > 0 {
            let reason = format!("record dimension `{}` is at position {position}, not first", dim.name);
            return Err(HeaderError::Variable { variable: name, at, reason });
        }
        dim_ids.push(index);
    }
    let attributes = read_attributes(reader, &format!("attribute of variable `{name}`"))?;
    let nc_type = reader.nc_type(&format!("type of variable `{name}`"))?;
    let vsize = reader.count(&format!("vsize of variable `{name}`"))?;
    let begin = reader.offset(&format!("begin of variable `{name}`"))?;
    Ok(RawVariable { at, name, dim_ids, attributes, nc_type, vsize, begin })
}

/// Whether `variable` is a record variable, and the unpadded bytes of one record of it (record
/// variables) or of all of it (others).
fn record_or_variable_size(
    variable: &RawVariable,
    dimensions: &[Dimension],
) -> Result<(bool, u64), HeaderError> {
    let is_record = variable
        .dim_ids
        .first()
        .and_then(|&i| dimensions.get(i))
        .is_some_and(|d| d.is_record);
    let size = variable
        .dim_ids
        .iter()
        .skip(usize::from(is_record))
        .try_fold(variable.nc_type.size(), |acc, &i| {
            acc.checked_mul(dimensions.get(i).map_or(0, |d| d.length))
        })
        .ok_or_else(|| variable.error("the data size overflows 64 bits".into()))?;
    Ok((is_record, size))
}

/// The record stride from each variable's `(is_record, size)`, or `None` on overflow.
fn record_stride(sizes: &[(bool, u64)]) -> Option<u64> {
    let records: Vec<u64> = sizes.iter().filter(|s| s.0).map(|s| s.1).collect();
    if let [only] = records[..] {
        return Some(only);
    }
    records.iter().try_fold(0u64, |acc, &size| acc.checked_add(pad4(size)?))
}

/// Number of whole records between the first record variable's `begin` and the end of the file.
fn streamed_numrecs(first_record_begin: Option<u64>, record_size: u64, file_len: u64) -> u64 {
    match first_record_begin {
        Some(begin) if record_size > 0 => file_len.saturating_sub(begin) / record_size,
        _ => 0,
    }
}

/// What is needed to place variables in the file.
struct Placement {
    numrecs: u64,
    record_size: u64,
    header_len: u64,
    file_len: u64,
}

impl Placement {
    /// Builds the final [`Variable`], checking that its data lies between header and file end.
    fn finish(
        &self,
        raw: RawVariable,
        is_record: bool,
        data_size: u64,
        dimensions: &[Dimension],
    ) -> Result<Variable, HeaderError> {
        if raw.begin < self.header_len {
            let (begin, header_len) = (raw.begin, self.header_len);
            return Err(raw.error(format!("data at {begin} overlaps the {header_len}-byte header")));
        }
        let end = if !is_record {
            raw.begin.checked_add(data_size)
        } else if self.numrecs == 0 {
            Some(raw.begin)
        } else {
            (self.numrecs - 1)
                .checked_mul(self.record_size)
                .and_then(|n| n.checked_add(raw.begin))
                .and_then(|n| n.checked_add(data_size))
        };
        let end = end.ok_or_else(|| raw.error("the end of the data overflows 64 bits".into()))?;
        if end > self.file_len {
            let (start, file_len) = (raw.begin, self.file_len);
            return Err(HeaderError::DataOutOfBounds { variable: raw.name, start, end, file_len });
        }
        let shape = raw
            .dim_ids
            .iter()
            .map(|&i| dimensions.get(i).map_or(0, |d| d.length))
            .collect();
        Ok(Variable {
            name: raw.name,
            dim_ids: raw.dim_ids,
            attributes: raw.attributes,
            nc_type: raw.nc_type,
            vsize: raw.vsize,
            begin: raw.begin,
            is_record,
            shape,
            data_size,
        })
    }
}
