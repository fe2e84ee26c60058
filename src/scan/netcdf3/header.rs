//! NetCDF-3 header parser (scan stage, pure: no I/O, no libnetcdf).
//!
//! Input: a prefix of a NetCDF-3 file (CDF-1 classic, CDF-2 64-bit offset or CDF-5 64-bit data)
//! and the file's total length. Output: a [`Header`] with the dimensions, the global and variable
//! attributes, and for every variable its type, shape, `begin` offset and unpadded data size, plus
//! the record stride [`Header::record_size`]: record `r` of a record variable starts at
//! `begin + r * record_size`. The scanner turns these into chunk references to the raw big-endian
//! bytes.
//!
//! Follows the `NetCDF` classic format specification (Unidata, "File Format Specifications", the
//! BNF grammar and its notes), its 64-bit offset variant, the CDF-5 specification (`PnetCDF`) and
//! the NetCDF classic and 64-bit offset format specification:
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
//! records of a record variable) must lie inside the file. Names must be unique: two dimensions,
//! two variables or two attributes of one owner with the same name are refused (libnetcdf refuses to
//! write them; vzarr would otherwise let one silently replace the other).
//!
//! Resource limits (a sparse file makes every length check against the file size pass, so these
//! bound what a hostile header can make vzarr allocate): the header is at most [`MAX_HEADER_BYTES`],
//! one attribute's values at most [`MAX_ATTRIBUTE_BYTES`], and a variable has at most
//! [`MAX_RANK`] dimensions (libnetcdf's `NC_MAX_VAR_DIMS`).

use std::collections::HashSet;

use thiserror::Error;

/// Largest header vzarr parses (bytes). Real headers are far smaller: 20,000 variables with a few
/// attributes each take a few MiB.
pub const MAX_HEADER_BYTES: u64 = 128 << 20;
/// Largest attribute value vzarr reads (bytes).
pub const MAX_ATTRIBUTE_BYTES: u64 = 32 << 20;
/// Most dimensions a variable may have (libnetcdf's `NC_MAX_VAR_DIMS`).
pub const MAX_RANK: u64 = 1024;

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
    #[must_use]
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
    #[must_use]
    pub fn size(self) -> u64 {
        match self {
            Self::Byte | Self::Char | Self::UByte => 1,
            Self::Short | Self::UShort => 2,
            Self::Int | Self::Float | Self::UInt => 4,
            Self::Double | Self::Int64 | Self::UInt64 => 8,
        }
    }

    /// The `nc_type` code stored in the header (`NC_BYTE` = 1 ... `NC_UINT64` = 11).
    #[must_use]
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
    #[must_use]
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
    #[must_use]
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
    #[must_use]
    pub fn is_cdf5_only(self) -> bool {
        self.code() >= 7
    }

    /// netCDF's default fill value for this type (`NC_FILL_BYTE` ... `NC_FILL_UINT64`), as a
    /// one-element value. Used where a variable has no `_FillValue` attribute.
    #[must_use]
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
    #[must_use]
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
    #[must_use]
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
    #[must_use]
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
    #[must_use]
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
pub enum HeaderError {
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

/// Shorthand for [`HeaderError::Invalid`].
fn invalid(at: u64, reason: String) -> HeaderError {
    HeaderError::Invalid { at, reason }
}

/// Refuses a header field ending past [`MAX_HEADER_BYTES`].
fn check_header_limit(at: u64, end: u64, what: &str) -> Result<(), HeaderError> {
    if end > MAX_HEADER_BYTES {
        let reason = format!("{what} would make the header longer than vzarr's limit of {MAX_HEADER_BYTES} bytes");
        return Err(invalid(at, reason));
    }
    Ok(())
}

/// Refuses a second name equal to one already in `seen`.
fn check_unique(seen: &mut HashSet<String>, name: &str, at: u64, what: &str) -> Result<(), HeaderError> {
    if !seen.insert(name.to_string()) {
        return Err(invalid(at, format!("a second {what} named `{name}` (names must be unique)")));
    }
    Ok(())
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
        let end = start.checked_add(n).filter(|&end| end <= self.file_len).ok_or_else(|| {
            let file_len = self.file_len;
            invalid(start, format!("{what} needs {n} bytes but the {file_len}-byte file ends first"))
        })?;
        check_header_limit(start, end, what)?;
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
        check_header_limit(self.pos, end, what)?;
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

    /// A `name`: count, UTF-8 bytes, padding to 4 bytes. A name stops at its first NUL, as libnetcdf
    /// reads it (old writers counted a terminating NUL in the length: `yy\0` is `yy`).
    fn name(&mut self, what: &str) -> Result<String, HeaderError> {
        let at = self.pos;
        let len = self.count(what)?;
        let padded = pad4(len).ok_or_else(|| invalid(at, format!("{what}: length {len} overflows")))?;
        let raw = self.take(padded, what)?;
        let raw = raw.get(..capacity(len)).unwrap_or(raw);
        let raw = raw.split(|&b| b == 0).next().unwrap_or_default();
        String::from_utf8(raw.to_vec()).map_err(|e| invalid(at, format!("{what} is not valid UTF-8 ({e})")))
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
        let ty = NcType::from_code(code).ok_or_else(|| invalid(at, format!("{what}: unknown nc_type {code}")))?;
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
            return Err(invalid(
                at,
                format!("{what}: expected tag {tag:#04x} or ABSENT, found tag {found:#x} with {count} entries"),
            ));
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

    let sizes = raw.iter().map(|v| record_or_variable_size(v, &dimensions)).collect::<Result<Vec<_>, _>>()?;
    let record_size = record_stride(&sizes)
        .ok_or_else(|| invalid(header_len, "the record size (sum of the record variables' sizes) overflows".into()))?;
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
    let mut seen = HashSet::new();
    for _ in 0..count {
        let at = reader.pos;
        let name = reader.path_name("dimension name")?;
        check_unique(&mut seen, &name, at, "dimension")?;
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
    let mut seen = HashSet::new();
    for _ in 0..count {
        let name_at = reader.pos;
        let name = reader.name(&format!("{owner} name"))?;
        check_unique(&mut seen, &name, name_at, owner)?;
        let what = format!("{owner} `{name}`");
        let nc_type = reader.nc_type(&what)?;
        let at = reader.pos;
        let nelems = reader.count(&what)?;
        let len = nelems
            .checked_mul(nc_type.size())
            .filter(|&n| pad4(n).is_some())
            .ok_or_else(|| invalid(at, format!("{what}: {nelems} values overflow")))?;
        if len > MAX_ATTRIBUTE_BYTES {
            let reason = format!("{what}: {len} bytes of values exceed vzarr's limit of {MAX_ATTRIBUTE_BYTES}");
            return Err(invalid(at, reason));
        }
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
    raw.chunks_exact(N).filter_map(|chunk| <[u8; N]>::try_from(chunk).ok()).map(decode).collect()
}

/// Reads `var_list`.
fn read_variables(reader: &mut Reader<'_>, dimensions: &[Dimension]) -> Result<Vec<RawVariable>, HeaderError> {
    let width = reader.version.count_width();
    let min_each = 4 * width + 8 + reader.version.offset_width();
    let count = reader.list_len(NC_VARIABLE, min_each, "variable list")?;
    let mut variables: Vec<RawVariable> = Vec::with_capacity(capacity(count));
    let mut seen = HashSet::new();
    for _ in 0..count {
        let variable = read_variable(reader, dimensions)?;
        if !seen.insert(variable.name.clone()) {
            return Err(variable.error("a second variable with this name (names must be unique)".into()));
        }
        variables.push(variable);
    }
    Ok(variables)
}

/// Reads one `var`: name, dimension ids, attributes, type, `vsize`, `begin`.
fn read_variable(reader: &mut Reader<'_>, dimensions: &[Dimension]) -> Result<RawVariable, HeaderError> {
    let at = reader.pos;
    let name = reader.path_name("variable name")?;
    let what = format!("dimension ids of variable `{name}`");
    let rank = reader.count(&what)?;
    if rank > MAX_RANK {
        let reason = format!("{rank} dimensions; NetCDF allows at most {MAX_RANK}");
        return Err(HeaderError::Variable { variable: name, at, reason });
    }
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
fn record_or_variable_size(variable: &RawVariable, dimensions: &[Dimension]) -> Result<(bool, u64), HeaderError> {
    let is_record = variable.dim_ids.first().and_then(|&i| dimensions.get(i)).is_some_and(|d| d.is_record);
    let size = variable
        .dim_ids
        .iter()
        .skip(usize::from(is_record))
        .try_fold(variable.nc_type.size(), |acc, &i| acc.checked_mul(dimensions.get(i).map_or(0, |d| d.length)))
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
        // A record variable with no records has no data; its `begin` may even lie past the end
        // of the file (libnetcdf writes such files when the last fixed variable ends the file).
        let end = if !is_record {
            raw.begin.checked_add(data_size)
        } else if let Some(last) = self.numrecs.checked_sub(1) {
            last.checked_mul(self.record_size)
                .and_then(|n| n.checked_add(raw.begin))
                .and_then(|n| n.checked_add(data_size))
        } else {
            Some(0)
        };
        let end = end.ok_or_else(|| raw.error("the end of the data overflows 64 bits".into()))?;
        if end > self.file_len {
            let (start, file_len) = (raw.begin, self.file_len);
            return Err(HeaderError::DataOutOfBounds { variable: raw.name, start, end, file_len });
        }
        let shape = raw.dim_ids.iter().map(|&i| dimensions.get(i).map_or(0, |d| d.length)).collect();
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

#[cfg(test)]
mod tests {
    use super::*;
    use netcdf::types::{FloatType, IntType, NcTypeDescriptor, NcVariableType};
    use netcdf::AttributeValue as NcValue;
    use proptest::prelude::*;
    use proptest::test_runner::{TestCaseResult, TestRunner};
    use std::path::{Path, PathBuf};
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::OnceLock;

    /// One `NC_CHAR` element, for writing char variables through the netcdf crate.
    #[repr(transparent)]
    #[derive(Clone, Copy)]
    struct NcChar(u8);

    // SAFETY: `NcChar` is a transparent `u8`, the in-memory layout of `NC_CHAR`.
    unsafe impl NcTypeDescriptor for NcChar {
        fn type_descriptor() -> NcVariableType {
            NcVariableType::Char
        }
    }

    const NREC: usize = 4;

    // ----- test-only header encoder (for hand-built and generated headers) -----

    /// Writes header fields in a given version's widths.
    struct Enc {
        version: Cdf3Version,
        out: Vec<u8>,
    }

    impl Enc {
        fn new(version: Cdf3Version, numrecs: u64) -> Self {
            let mut e = Enc { version, out: b"CDF".to_vec() };
            e.out.push(version.magic_byte());
            e.count(numrecs);
            e
        }
        fn u32(&mut self, v: u32) -> &mut Self {
            self.out.extend_from_slice(&v.to_be_bytes());
            self
        }
        fn count(&mut self, v: u64) -> &mut Self {
            if self.version == Cdf3Version::Data64 {
                self.out.extend_from_slice(&v.to_be_bytes());
            } else {
                self.u32(v as u32);
            }
            self
        }
        fn offset(&mut self, v: u64) -> &mut Self {
            if self.version == Cdf3Version::Classic {
                self.u32(v as u32);
            } else {
                self.out.extend_from_slice(&v.to_be_bytes());
            }
            self
        }
        fn raw_name(&mut self, name: &[u8]) -> &mut Self {
            self.count(name.len() as u64);
            self.out.extend_from_slice(name);
            self.pad()
        }
        fn name(&mut self, name: &str) -> &mut Self {
            self.raw_name(name.as_bytes())
        }
        fn pad(&mut self) -> &mut Self {
            while !self.out.len().is_multiple_of(4) {
                self.out.push(0);
            }
            self
        }
        fn list(&mut self, tag: u32, n: u64) -> &mut Self {
            self.u32(if n == 0 { 0 } else { tag }).count(n)
        }
        fn attr(&mut self, name: &str, value: &AttrValue) -> &mut Self {
            self.name(name).u32(value.nc_type().code());
            self.count(value.len() as u64);
            let bytes = be_encode(value);
            self.out.extend_from_slice(&bytes);
            self.pad()
        }
        fn len(&self) -> u64 {
            self.out.len() as u64
        }
    }

    /// Big-endian bytes of all values.
    fn be_encode(value: &AttrValue) -> Vec<u8> {
        fn all<T: Copy, const N: usize>(v: &[T], f: fn(T) -> [u8; N]) -> Vec<u8> {
            v.iter().flat_map(|&x| f(x)).collect()
        }
        match value {
            AttrValue::Bytes(v) => all(v, i8::to_be_bytes),
            AttrValue::Text(v) | AttrValue::UBytes(v) => v.clone(),
            AttrValue::Shorts(v) => all(v, i16::to_be_bytes),
            AttrValue::Ints(v) => all(v, i32::to_be_bytes),
            AttrValue::Floats(v) => all(v, f32::to_be_bytes),
            AttrValue::Doubles(v) => all(v, f64::to_be_bytes),
            AttrValue::UShorts(v) => all(v, u16::to_be_bytes),
            AttrValue::UInts(v) => all(v, u32::to_be_bytes),
            AttrValue::Int64s(v) => all(v, i64::to_be_bytes),
            AttrValue::UInt64s(v) => all(v, u64::to_be_bytes),
        }
    }

    // ----- spec examples -----

    #[test]
    fn spec_example_empty_file_is_32_bytes() {
        let mut bytes = b"CDF\x01".to_vec();
        bytes.resize(32, 0);
        let h = parse_header(&bytes, 32).unwrap();
        assert_eq!(h.version, Cdf3Version::Classic);
        assert_eq!(h.header_len, 32);
        assert!(h.dimensions.is_empty() && h.attributes.is_empty() && h.variables.is_empty());
        assert_eq!((h.numrecs, h.record_size, h.streaming), (0, 0, false));
    }

    /// The 92-byte `tiny` file of the spec (`short vx(dim)`, dim = 5, values 3 1 4 1 5).
    fn spec_tiny_file() -> Vec<u8> {
        let mut e = Enc::new(Cdf3Version::Classic, 0);
        e.list(NC_DIMENSION, 1).name("dim").count(5);
        e.list(NC_ATTRIBUTE, 0).list(NC_VARIABLE, 1).name("vx").count(1).count(0);
        e.list(NC_ATTRIBUTE, 0).u32(3).count(12).offset(80);
        for v in [3i16, 1, 4, 1, 5, -32767] {
            e.out.extend_from_slice(&v.to_be_bytes());
        }
        e.out
    }

    #[test]
    fn spec_example_tiny_file() {
        let bytes = spec_tiny_file();
        assert_eq!(bytes.len(), 92);
        let h = parse_header(&bytes, 92).unwrap();
        assert_eq!(h.header_len, 80);
        let dim = Dimension { name: "dim".into(), length: 5, is_record: false };
        assert_eq!(h.dimensions, vec![dim]);
        let v = &h.variables[0];
        assert_eq!((v.name.as_str(), v.nc_type, v.vsize, v.begin), ("vx", NcType::Short, 12, 80));
        assert_eq!((v.shape.clone(), v.data_size, v.is_record), (vec![5], 10, false));
        let data = &bytes[80..90];
        let values: Vec<i16> = data.chunks(2).map(|c| i16::from_be_bytes([c[0], c[1]])).collect();
        assert_eq!(values, [3, 1, 4, 1, 5]);
        assert_eq!(v.fill_value(), AttrValue::Shorts(vec![-32767]));
    }

    // ----- real files written by libnetcdf -----

    fn nc_type_of(t: &NcVariableType) -> NcType {
        match t {
            NcVariableType::Char => NcType::Char,
            NcVariableType::Int(IntType::I8) => NcType::Byte,
            NcVariableType::Int(IntType::I16) => NcType::Short,
            NcVariableType::Int(IntType::I32) => NcType::Int,
            NcVariableType::Float(FloatType::F32) => NcType::Float,
            NcVariableType::Float(FloatType::F64) => NcType::Double,
            NcVariableType::Int(IntType::U8) => NcType::UByte,
            NcVariableType::Int(IntType::U16) => NcType::UShort,
            NcVariableType::Int(IntType::U32) => NcType::UInt,
            NcVariableType::Int(IntType::I64) => NcType::Int64,
            NcVariableType::Int(IntType::U64) => NcType::UInt64,
            other => panic!("unexpected netCDF-3 type {other:?}"),
        }
    }

    /// Our attribute value as the netcdf crate reports it (scalar when one value; text up to NUL).
    fn as_nc(value: &AttrValue) -> NcValue {
        fn pick<T: Copy>(v: &[T], one: fn(T) -> NcValue, many: fn(Vec<T>) -> NcValue) -> NcValue {
            if v.len() == 1 {
                one(v[0])
            } else {
                many(v.to_vec())
            }
        }
        match value {
            AttrValue::Bytes(v) => pick(v, NcValue::Schar, NcValue::Schars),
            AttrValue::Text(v) => {
                let end = v.iter().position(|&b| b == 0).unwrap_or(v.len());
                NcValue::Str(String::from_utf8_lossy(&v[..end]).into_owned())
            }
            AttrValue::Shorts(v) => pick(v, NcValue::Short, NcValue::Shorts),
            AttrValue::Ints(v) => pick(v, NcValue::Int, NcValue::Ints),
            AttrValue::Floats(v) => pick(v, NcValue::Float, NcValue::Floats),
            AttrValue::Doubles(v) => pick(v, NcValue::Double, NcValue::Doubles),
            AttrValue::UBytes(v) => pick(v, NcValue::Uchar, NcValue::Uchars),
            AttrValue::UShorts(v) => pick(v, NcValue::Ushort, NcValue::Ushorts),
            AttrValue::UInts(v) => pick(v, NcValue::Uint, NcValue::Uints),
            AttrValue::Int64s(v) => pick(v, NcValue::Longlong, NcValue::Longlongs),
            AttrValue::UInt64s(v) => pick(v, NcValue::Ulonglong, NcValue::Ulonglongs),
        }
    }

    fn assert_attributes<'a>(ours: &[Attribute], theirs: impl Iterator<Item = netcdf::Attribute<'a>>) {
        let theirs: Vec<(String, NcValue)> = theirs.map(|a| (a.name().to_owned(), a.value().unwrap())).collect();
        let ours: Vec<(String, NcValue)> = ours.iter().map(|a| (a.name.clone(), as_nc(&a.value))).collect();
        assert_eq!(ours, theirs);
    }

    /// The variable's values read straight from the file at `begin (+ r * record_size)`,
    /// converted from big-endian to native order.
    fn values_from_file(header: &Header, bytes: &[u8], v: &Variable) -> Vec<u8> {
        let records = if v.is_record { header.numrecs } else { 1 };
        let mut out = Vec::new();
        for r in 0..records {
            let start = (v.begin + r * header.record_size) as usize;
            out.extend_from_slice(&bytes[start..start + v.data_size as usize]);
        }
        if cfg!(target_endian = "little") {
            out.chunks_exact_mut(v.nc_type.size() as usize).for_each(<[u8]>::reverse);
        }
        out
    }

    /// Parses `path` and compares every field and every variable's bytes with libnetcdf.
    fn check_against_libnetcdf(path: &Path) -> (Header, Vec<u8>) {
        let bytes = std::fs::read(path).unwrap();
        let header = parse_header(&bytes, bytes.len() as u64).unwrap();
        let file = netcdf::open(path).unwrap();
        let dims: Vec<Dimension> = file
            .dimensions()
            .map(|d| Dimension { name: d.name(), length: d.len() as u64, is_record: d.is_unlimited() })
            .collect();
        assert_eq!(header.dimensions, dims);
        assert_attributes(&header.attributes, file.attributes());
        let theirs: Vec<netcdf::Variable<'_>> = file.variables().collect();
        assert_eq!(header.variables.len(), theirs.len());
        for (ours, theirs) in header.variables.iter().zip(&theirs) {
            assert_eq!(ours.name, theirs.name());
            let their_dims: Vec<String> = theirs.dimensions().iter().map(|d| d.name()).collect();
            let our_dims: Vec<String> = ours.dim_ids.iter().map(|&i| header.dimensions[i].name.clone()).collect();
            assert_eq!(our_dims, their_dims, "{}", ours.name);
            let their_shape: Vec<u64> = theirs.dimensions().iter().map(|d| d.len() as u64).collect();
            assert_eq!(ours.shape, their_shape, "{}", ours.name);
            assert_eq!(ours.nc_type, nc_type_of(&theirs.vartype()), "{}", ours.name);
            assert_eq!(ours.vsize, pad4(ours.data_size).unwrap(), "{}", ours.name);
            assert!(ours.begin >= header.header_len);
            assert_attributes(&ours.attributes, theirs.attributes());
            let expected = theirs.get_raw_values(..).unwrap();
            assert_eq!(values_from_file(&header, &bytes, ours), expected, "{}", ours.name);
        }
        (header, bytes)
    }

    /// Asserts that record `record` (or all of a non-record variable) holds the fill value.
    fn assert_filled(header: &Header, bytes: &[u8], name: &str, record: Option<u64>) {
        let v = header.variables.iter().find(|v| v.name == name).unwrap();
        let start = (v.begin + record.unwrap_or(0) * header.record_size) as usize;
        let fill = be_encode(&v.fill_value());
        let data = &bytes[start..start + v.data_size as usize];
        assert!(data.chunks(fill.len()).all(|c| c == fill), "{name} record {record:?}");
    }

    fn put<T: NcTypeDescriptor, E>(f: &mut netcdf::FileMut, name: &str, values: &[T], e: E)
    where
        E: TryInto<netcdf::Extents>,
        E::Error: Into<netcdf::Error>,
    {
        f.variable_mut(name).unwrap().put_values(values, e).unwrap();
    }

    /// Writes a file with record and non-record variables of every type the format allows,
    /// attributes of every type, and some records left unwritten (fill values).
    fn write_mixed(path: &Path, options: netcdf::Options, cdf5: bool) -> netcdf::Result<()> {
        let mut f = netcdf::create_with(path, options)?;
        f.add_unlimited_dimension("time")?;
        f.add_dimension("lat", 3)?;
        f.add_dimension("lon", 5)?;
        f.add_dimension("strlen", 7)?;
        f.add_attribute("title", "mixed test file")?;
        f.add_attribute("empty", "")?;
        f.add_attribute("bytes", vec![-1i8, 2, 3])?;
        f.add_attribute("short", 7i16)?;
        f.add_attribute("ints", vec![1i32, -2])?;
        f.add_attribute("float", 1.5f32)?;
        f.add_attribute("doubles", vec![0.25f64, -1e300, 7.0])?;
        if cdf5 {
            f.add_attribute("ubytes", vec![250u8, 1, 2, 3, 4])?;
            f.add_attribute("ushort", 65000u16)?;
            f.add_attribute("uints", vec![4_000_000_000u32, 5])?;
            f.add_attribute("int64s", vec![i64::MIN, 9])?;
            f.add_attribute("uint64", u64::MAX)?;
        }
        f.add_variable::<f64>("lat", &["lat"])?;
        f.add_variable::<f32>("lon", &["lon"])?.put_attribute("units", "degrees_east")?;
        f.add_variable::<i32>("scalar", &[])?;
        f.add_variable::<i32>("unwritten", &["lat"])?;
        f.add_variable::<NcChar>("names", &["lat", "strlen"])?;
        let mut tas = f.add_variable::<f32>("tas", &["time", "lat", "lon"])?;
        tas.put_attribute("_FillValue", -999f32)?;
        tas.put_attribute("scale", vec![0.5f64, 2.0])?;
        f.add_variable::<i8>("flags", &["time", "lon"])?;
        f.add_variable::<i16>("counts", &["time", "lat"])?;
        f.add_variable::<NcChar>("label", &["time", "strlen"])?;
        f.add_variable::<f64>("total", &["time"])?;
        if cdf5 {
            f.add_variable::<u8>("ub", &["time", "lon"])?;
            f.add_variable::<u16>("us", &["lat"])?;
            f.add_variable::<u32>("ui", &["time"])?;
            f.add_variable::<i64>("i64v", &["time", "lat"])?;
            f.add_variable::<u64>("u64v", &["lon"])?;
        }
        f.enddef()?;
        put(&mut f, "lat", &[10.0f64, 20.0, 30.0], ..);
        put(&mut f, "lon", &[1.0f32, 2.0, 3.0, 4.0, 5.0], ..);
        put(&mut f, "scalar", &[42i32], ..);
        let names: Vec<NcChar> = b"alpha\0\0beta\0\0\0gamma!!".iter().map(|&b| NcChar(b)).collect();
        put(&mut f, "names", &names, ..);
        for r in 0..NREC {
            let x = r as f32;
            if r != 2 {
                let tas: Vec<f32> = (0..15).map(|i| x * 100.0 + i as f32).collect();
                put(&mut f, "tas", &tas, (r, .., ..));
            }
            if r != 3 {
                put(&mut f, "flags", &[r as i8, -1, 2, -3, 4], (r, ..));
            }
            if r != 1 {
                put(&mut f, "counts", &[r as i16, -300, 300], (r, ..));
            }
            if r != 2 {
                let label: Vec<NcChar> = format!("rec{r}xyz").bytes().map(NcChar).collect();
                put(&mut f, "label", &label, (r, ..));
            }
            if r != 0 {
                put(&mut f, "total", &[f64::from(x) * 1.5], [r]);
            }
            if cdf5 {
                if r != 1 {
                    put(&mut f, "ub", &[200u8, 1, 2, 3, r as u8], (r, ..));
                }
                if r != 3 {
                    put(&mut f, "ui", &[3_000_000_000u32 + r as u32], [r]);
                }
                if r != 0 {
                    put(&mut f, "i64v", &[i64::MIN + 1, r as i64, i64::MAX], (r, ..));
                }
            }
        }
        f.close()
    }

    fn check_mixed(options: netcdf::Options, cdf5: bool, version: Cdf3Version) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mixed.nc");
        write_mixed(&path, options, cdf5).unwrap();
        let (h, bytes) = check_against_libnetcdf(&path);
        assert_eq!((h.version, h.numrecs, h.streaming), (version, NREC as u64, false));
        // tas 60 + flags 5->8 + counts 6->8 + label 7->8 + total 8 (+ ub 5->8, ui 4, i64v 24).
        assert_eq!(h.record_size, if cdf5 { 92 + 36 } else { 92 });
        let f = h.variables.iter().find(|v| v.name == "tas").unwrap();
        assert_eq!(f.fill_value(), AttrValue::Floats(vec![-999.0]));
        assert_filled(&h, &bytes, "tas", Some(2));
        assert_filled(&h, &bytes, "flags", Some(3));
        assert_filled(&h, &bytes, "counts", Some(1));
        assert_filled(&h, &bytes, "label", Some(2));
        assert_filled(&h, &bytes, "total", Some(0));
        assert_filled(&h, &bytes, "unwritten", None);
        if cdf5 {
            assert_filled(&h, &bytes, "ub", Some(1));
            assert_filled(&h, &bytes, "ui", Some(3));
            assert_filled(&h, &bytes, "i64v", Some(0));
            assert_filled(&h, &bytes, "us", None);
            assert_filled(&h, &bytes, "u64v", None);
        }
        let scalar = h.variables.iter().find(|v| v.name == "scalar").unwrap();
        assert_eq!((scalar.shape.len(), scalar.data_size), (0, 4));
    }

    #[test]
    fn classic_cdf1_matches_libnetcdf() {
        check_mixed(netcdf::Options::CLASSIC, false, Cdf3Version::Classic);
    }

    #[test]
    fn offset64_cdf2_matches_libnetcdf() {
        check_mixed(netcdf::Options::_64BIT_OFFSET, false, Cdf3Version::Offset64);
    }

    #[test]
    fn data64_cdf5_matches_libnetcdf() {
        check_mixed(netcdf::Options::_64BIT_DATA, true, Cdf3Version::Data64);
    }

    /// A file whose only record variable is `T` over (time, x): records are packed.
    fn check_single_record_var<T: NcTypeDescriptor + Copy>(
        options: netcdf::Options,
        x: usize,
        value: fn(usize) -> T,
    ) -> Header {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("single.nc");
        let mut f = netcdf::create_with(&path, options).unwrap();
        f.add_unlimited_dimension("time").unwrap();
        f.add_dimension("x", x).unwrap();
        f.add_variable::<f64>("fixed", &["x"]).unwrap();
        f.add_variable::<T>("v", &["time", "x"]).unwrap();
        f.enddef().unwrap();
        for r in 0..5 {
            let values: Vec<T> = (0..x).map(|i| value(r * x + i)).collect();
            put(&mut f, "v", &values, (r, ..));
        }
        f.close().unwrap();
        check_against_libnetcdf(&path).0
    }

    #[test]
    fn single_short_record_variable_is_packed() {
        let h = check_single_record_var(netcdf::Options::CLASSIC, 3, |i| i as i16 * 7 - 20);
        assert_eq!((h.numrecs, h.record_size, h.variables[1].vsize), (5, 6, 8));
    }

    #[test]
    fn single_byte_and_char_record_variables_are_packed() {
        let h = check_single_record_var(netcdf::Options::CLASSIC, 1, |i| i as i8 - 3);
        assert_eq!((h.record_size, h.variables[1].vsize), (1, 4));
        let h = check_single_record_var(netcdf::Options::_64BIT_OFFSET, 3, |i| NcChar(b'a' + i as u8));
        assert_eq!((h.record_size, h.version), (3, Cdf3Version::Offset64));
        let h = check_single_record_var(netcdf::Options::_64BIT_DATA, 5, |i| i as u16);
        assert_eq!((h.record_size, h.version), (10, Cdf3Version::Data64));
    }

    #[test]
    fn zero_records() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("empty.nc");
        let mut f = netcdf::create_with(&path, netcdf::Options::CLASSIC).unwrap();
        f.add_unlimited_dimension("time").unwrap();
        f.add_dimension("x", 2).unwrap();
        f.add_variable::<i16>("a", &["time", "x"]).unwrap();
        f.add_variable::<f64>("b", &["time"]).unwrap();
        f.add_variable::<f32>("c", &["x"]).unwrap();
        f.enddef().unwrap();
        put(&mut f, "c", &[1.0f32, 2.0], ..);
        f.close().unwrap();
        let (h, _) = check_against_libnetcdf(&path);
        assert_eq!((h.numrecs, h.record_size), (0, 12));
        assert_eq!(h.variables[0].shape, vec![0, 2]);
        assert_eq!(h.dimensions[0], Dimension { name: "time".into(), length: 0, is_record: true });
    }

    /// Real files shared by the fuzz tests: (CDF-1 mixed, CDF-5 mixed), written once.
    fn fixtures() -> &'static [Vec<u8>; 2] {
        static FIXTURES: OnceLock<[Vec<u8>; 2]> = OnceLock::new();
        FIXTURES.get_or_init(|| {
            let dir = tempfile::tempdir().unwrap();
            let read = |name: &str, options, cdf5| {
                let path: PathBuf = dir.path().join(name);
                write_mixed(&path, options, cdf5).unwrap();
                std::fs::read(path).unwrap()
            };
            [read("c1.nc", netcdf::Options::CLASSIC, false), read("c5.nc", netcdf::Options::_64BIT_DATA, true)]
        })
    }

    #[test]
    fn streaming_numrecs_is_computed_from_file_length() {
        for (bytes, width) in fixtures().iter().zip([4, 8]) {
            let full = parse_header(bytes, bytes.len() as u64).unwrap();
            let mut streamed = bytes.clone();
            streamed[4..4 + width].fill(0xFF);
            let h = parse_header(&streamed, streamed.len() as u64).unwrap();
            assert!(h.streaming);
            assert_eq!(Header { streaming: false, ..h.clone() }, full);
            // A partial last record is not counted; a longer file has more records.
            let short = streamed.len() as u64 - 1;
            let h = parse_header(&streamed[..short as usize], short).unwrap();
            assert_eq!(h.numrecs, NREC as u64 - 1);
            streamed.resize(streamed.len() + 2 * h.record_size as usize, 0);
            let h = parse_header(&streamed, streamed.len() as u64).unwrap();
            assert_eq!(h.numrecs, NREC as u64 + 2);
        }
    }

    #[test]
    fn every_prefix_asks_for_more_then_parses() {
        let mut inputs = 0;
        for bytes in fixtures() {
            let len = bytes.len() as u64;
            let full = parse_header(bytes, len).unwrap();
            for k in 0..full.header_len as usize {
                match parse_header(&bytes[..k], len) {
                    Err(HeaderError::NeedMore { at_least }) => {
                        assert!(at_least > k as u64 && at_least <= full.header_len, "{k}");
                    }
                    other => panic!("prefix {k}: {other:?}"),
                }
            }
            // The caller's loop: read what is asked for until it parses.
            let mut k = 0;
            let header = loop {
                match parse_header(&bytes[..k], len) {
                    Err(HeaderError::NeedMore { at_least }) => k = at_least as usize,
                    other => break other.unwrap(),
                }
            };
            assert_eq!(header, full);
            inputs += full.header_len;
        }
        eprintln!("fuzz: prefixes parsed: {inputs}");
    }

    #[test]
    fn every_truncated_file_is_an_error_not_a_panic() {
        let mut inputs = 0;
        for bytes in fixtures() {
            let full = parse_header(bytes, bytes.len() as u64).unwrap();
            let data_end = full
                .variables
                .iter()
                .map(|v| v.begin + if v.is_record { (full.numrecs - 1) * full.record_size } else { 0 } + v.data_size)
                .max()
                .unwrap();
            for k in 0..bytes.len() {
                let result = parse_header(&bytes[..k], k as u64);
                match result {
                    Err(HeaderError::Invalid { .. } | HeaderError::BadMagic { .. }) => {
                        assert!((k as u64) < full.header_len, "{k}");
                    }
                    Err(HeaderError::DataOutOfBounds { file_len, end, .. }) => {
                        assert!(k as u64 >= full.header_len && end > file_len && (k as u64) < data_end);
                    }
                    Ok(h) => assert!(k as u64 >= data_end && h == full, "{k}"),
                    Err(e) => panic!("truncated at {k}: {e}"),
                }
            }
            inputs += bytes.len();
        }
        eprintln!("fuzz: truncated files parsed: {inputs}");
    }

    // ----- hostile hand-built headers -----

    fn err(bytes: &[u8]) -> HeaderError {
        parse_header(bytes, bytes.len() as u64).unwrap_err()
    }

    fn padded(mut e: Enc, len: usize) -> Vec<u8> {
        e.out.resize(len, 0);
        e.out
    }

    #[test]
    fn huge_counts_fail_before_allocating() {
        let mut e = Enc::new(Cdf3Version::Classic, 0);
        e.list(NC_DIMENSION, 1 << 30);
        let e = err(&padded(e, 100));
        assert!(matches!(e, HeaderError::Invalid { at: 16, .. }), "{e}");
        assert!(e.to_string().contains("1073741824 entries cannot fit in the 84 bytes"), "{e}");
        for n in [1u64 << 40, 1 << 62, u64::MAX] {
            let mut e = Enc::new(Cdf3Version::Data64, 0);
            e.list(NC_DIMENSION, n);
            assert!(matches!(err(&padded(e, 100)), HeaderError::Invalid { at: 24, .. }));
            let mut e = Enc::new(Cdf3Version::Data64, 0);
            e.list(NC_DIMENSION, 1).count(n);
            assert!(matches!(err(&padded(e, 100)), HeaderError::Invalid { at: 24 | 32, .. }));
            let mut e = Enc::new(Cdf3Version::Data64, 0);
            e.list(NC_DIMENSION, 0).list(NC_ATTRIBUTE, 1).name("a").u32(6).count(n);
            assert!(matches!(err(&padded(e, 200)), HeaderError::Invalid { .. }));
        }
        let mut e = Enc::new(Cdf3Version::Classic, 0);
        e.list(NC_DIMENSION, 0).list(NC_ATTRIBUTE, 0).list(NC_VARIABLE, 1).name("v").count(u32::MAX.into());
        let message = err(&padded(e, 100)).to_string();
        assert!(message.contains("variable `v`") && message.contains("at most 1024"), "{message}");
    }

    /// A CDF-1 header with dims (name, length) and one int variable over `dim_ids` at `begin`.
    fn one_var(version: Cdf3Version, dims: &[(&str, u64)], dim_ids: &[u64], ty: u32, begin: u64) -> Vec<u8> {
        let mut e = Enc::new(version, 1);
        e.list(NC_DIMENSION, dims.len() as u64);
        for (name, len) in dims {
            e.name(name).count(*len);
        }
        e.list(NC_ATTRIBUTE, 0).list(NC_VARIABLE, 1).name("v").count(dim_ids.len() as u64);
        for &id in dim_ids {
            e.count(id);
        }
        e.list(NC_ATTRIBUTE, 0).u32(ty).count(4).offset(begin);
        padded(e, 400)
    }

    /// Old writers (netcdf-c's `nctest` files) counted a terminating NUL in a name's length: the name
    /// stops there, as libnetcdf reads it.
    #[test]
    fn names_stop_at_a_nul_as_libnetcdf_reads_them() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nul.nc");
        std::fs::write(&path, one_var(Cdf3Version::Classic, &[("yy\0", 1)], &[0], 4, 200)).unwrap();
        let (header, _) = check_against_libnetcdf(&path);
        assert_eq!(header.dimensions[0].name, "yy");
    }

    #[test]
    fn inconsistent_variables_are_rejected() {
        let c1 = Cdf3Version::Classic;
        let e = err(&one_var(c1, &[("x", 2)], &[1], 4, 200));
        assert!(e.to_string().contains("dimension id 1 is out of range"), "{e}");
        let e = err(&one_var(c1, &[("t", 0), ("x", 2)], &[1, 0], 4, 200));
        assert!(e.to_string().contains("record dimension `t` is at position 1"), "{e}");
        let e = err(&one_var(c1, &[("t", 0), ("u", 0)], &[0], 4, 200));
        assert!(e.to_string().contains("second record dimension"), "{e}");
        let e = err(&one_var(c1, &[("x", 2)], &[0], 7, 200));
        assert!(e.to_string().contains("only allowed in CDF-5"), "{e}");
        let e = err(&one_var(c1, &[("x", 2)], &[0], 12, 200));
        assert!(e.to_string().contains("unknown nc_type 12"), "{e}");
        let e = err(&one_var(c1, &[("x", 2)], &[0], 4, 8));
        assert!(e.to_string().contains("overlaps the"), "{e}");
        let e = err(&one_var(c1, &[("x", 2)], &[0], 4, 396));
        assert_eq!(e.to_string(), "variable `v`: data at 396..404 lies past the end of the 400-byte file");
        let e = err(&one_var(c1, &[("x/y", 2)], &[0], 4, 200));
        assert!(e.to_string().contains("contains `/`"), "{e}");
        let big = 1u64 << 40;
        let e = err(&one_var(Cdf3Version::Data64, &[("a", big), ("b", big)], &[0, 1], 4, 200));
        assert!(e.to_string().contains("overflows 64 bits"), "{e}");
        // A record variable whose records run past the end (numrecs = 1 here, so 200..1200).
        let e = err(&one_var(c1, &[("t", 0), ("x", 250)], &[0, 1], 4, 200));
        assert!(matches!(e, HeaderError::DataOutOfBounds { start: 200, end: 1200, file_len: 400, .. }), "{e}");
        let ok = parse_header(&one_var(c1, &[("t", 0), ("x", 2)], &[0, 1], 4, 200), 400).unwrap();
        assert_eq!((ok.numrecs, ok.record_size, ok.variables[0].shape.clone()), (1, 8, vec![1, 2]));
    }

    #[test]
    fn bad_magic_names_and_lengths() {
        assert!(matches!(err(b"\x89HDF\r\n\x1a\n"), HeaderError::BadMagic { .. }));
        assert!(matches!(err(b"CDF\x03\0\0\0\0"), HeaderError::BadMagic { .. }));
        assert!(matches!(err(b"CD"), HeaderError::BadMagic { .. }));
        assert!(matches!(parse_header(b"", 100), Err(HeaderError::NeedMore { at_least: 4 })));
        assert!(matches!(parse_header(&[0; 8], 4), Err(HeaderError::Invalid { at: 0, .. })));
        let mut e = Enc::new(Cdf3Version::Classic, 0);
        e.list(NC_DIMENSION, 1).raw_name(b"\xff\xfe").count(3);
        assert!(err(&padded(e, 64)).to_string().contains("not valid UTF-8"));
        let mut e = Enc::new(Cdf3Version::Classic, 0);
        e.list(NC_DIMENSION, 1).raw_name(b"").count(3);
        assert!(err(&padded(e, 64)).to_string().contains("is empty"));
        let mut e = Enc::new(Cdf3Version::Classic, 0);
        e.u32(NC_VARIABLE).count(1);
        assert!(err(&padded(e, 64)).to_string().contains("expected tag 0x0a"));
        // ABSENT written as a tag with a zero count is accepted, as libnetcdf does.
        let mut e = Enc::new(Cdf3Version::Data64, 0);
        e.u32(NC_DIMENSION).count(0).u32(NC_ATTRIBUTE).count(0).u32(NC_VARIABLE).count(0);
        assert_eq!(parse_header(&e.out, e.len()).unwrap().header_len, 48);
    }

    #[test]
    fn default_fill_values_match_the_spec_bit_patterns() {
        assert_eq!(be_encode(&NcType::Byte.default_fill()), [0x81]);
        assert_eq!(be_encode(&NcType::Short.default_fill()), [0x80, 0x01]);
        assert_eq!(be_encode(&NcType::Int.default_fill()), [0x80, 0, 0, 1]);
        assert_eq!(be_encode(&NcType::Float.default_fill()), [0x7C, 0xF0, 0, 0]);
        assert_eq!(be_encode(&NcType::Double.default_fill()), [0x47, 0x9E, 0, 0, 0, 0, 0, 0]);
        for code in 1..=11 {
            let t = NcType::from_code(code).unwrap();
            assert_eq!((t.code(), t.default_fill().nc_type()), (code, t));
            assert_eq!(be_encode(&t.default_fill()).len() as u64, t.size());
        }
        assert_eq!((NcType::from_code(0), NcType::from_code(12)), (None, None));
    }

    // ----- property tests -----

    /// Whatever the result, `NeedMore` must ask for more than was given, within the file.
    fn check_contract(bytes: &[u8], file_len: u64) -> Option<Header> {
        match parse_header(bytes, file_len) {
            Err(HeaderError::NeedMore { at_least }) => {
                assert!(at_least > bytes.len() as u64 && at_least <= file_len);
                None
            }
            Err(_) => None,
            Ok(h) => {
                for v in h.variables.iter().filter(|v| !v.is_record || h.numrecs > 0) {
                    let records = if v.is_record { h.numrecs - 1 } else { 0 };
                    let end = v.begin + records * h.record_size + v.data_size;
                    assert!(v.begin >= h.header_len && end <= file_len);
                }
                Some(h)
            }
        }
    }

    fn attr_value(cdf5: bool) -> impl Strategy<Value = AttrValue> {
        let classic = prop_oneof![
            prop::collection::vec(any::<i8>(), 0..6).prop_map(AttrValue::Bytes),
            prop::collection::vec(any::<u8>(), 0..9).prop_map(AttrValue::Text),
            prop::collection::vec(any::<i16>(), 0..6).prop_map(AttrValue::Shorts),
            prop::collection::vec(any::<i32>(), 0..6).prop_map(AttrValue::Ints),
            prop::collection::vec(any::<i16>().prop_map(f32::from), 0..6).prop_map(AttrValue::Floats),
            prop::collection::vec(any::<i32>().prop_map(f64::from), 0..6).prop_map(AttrValue::Doubles),
        ];
        let extended = prop_oneof![
            prop::collection::vec(any::<u8>(), 0..6).prop_map(AttrValue::UBytes),
            prop::collection::vec(any::<u16>(), 0..6).prop_map(AttrValue::UShorts),
            prop::collection::vec(any::<u32>(), 0..6).prop_map(AttrValue::UInts),
            prop::collection::vec(any::<i64>(), 0..6).prop_map(AttrValue::Int64s),
            prop::collection::vec(any::<u64>(), 0..6).prop_map(AttrValue::UInt64s),
        ];
        if cdf5 {
            prop_oneof![classic, extended].boxed()
        } else {
            classic.boxed()
        }
    }

    /// A generated header: dims, global attrs, and vars as (name, is_record, other dim
    /// indices, type code, attrs, stored vsize).
    type VarModel = (String, bool, Vec<usize>, u32, Vec<(String, AttrValue)>, u32);

    #[derive(Debug, Clone)]
    struct Model {
        version: Cdf3Version,
        numrecs: u64,
        record_dim: Option<usize>,
        dims: Vec<(String, u64)>,
        attrs: Vec<(String, AttrValue)>,
        vars: Vec<VarModel>,
    }

    fn model() -> impl Strategy<Value = Model> {
        let name = "[a-zA-Z_][a-zA-Z0-9_é.-]{0,7}";
        prop_oneof![Just(Cdf3Version::Classic), Just(Cdf3Version::Offset64), Just(Cdf3Version::Data64)]
            .prop_flat_map(move |version| {
                let cdf5 = version == Cdf3Version::Data64;
                let types = if cdf5 { 1u32..=11 } else { 1u32..=6 };
                let attrs = move || prop::collection::vec((name, attr_value(cdf5)), 0..4);
                let var = (name, any::<bool>(), prop::collection::vec(0usize..4, 0..3), types, attrs(), any::<u32>());
                (
                    Just(version),
                    0u64..4,
                    prop::option::of(0usize..4),
                    prop::collection::vec((name, 1u64..5), 1..4),
                    attrs(),
                    prop::collection::vec(var, 0..5),
                )
            })
            .prop_map(|(version, numrecs, record_dim, mut dims, mut attrs, mut vars)| {
                // Names are unique (the parser refuses duplicates): keep the first of each.
                let mut seen = HashSet::from(["rec".to_string()]);
                dims.retain(|d| seen.insert(d.0.clone()));
                if dims.is_empty() {
                    dims.push(("x".into(), 1));
                }
                let mut seen = HashSet::new();
                attrs.retain(|a| seen.insert(a.0.clone()));
                let mut seen = HashSet::new();
                vars.retain(|v| seen.insert(v.0.clone()));
                for v in &mut vars {
                    let mut seen = HashSet::new();
                    v.4.retain(|a| seen.insert(a.0.clone()));
                }
                let record_dim = record_dim.map(|i| i.min(dims.len()));
                if let Some(i) = record_dim {
                    dims.insert(i, ("rec".into(), 0));
                }
                let fixed: Vec<usize> = (0..dims.len()).filter(|&i| Some(i) != record_dim).collect();
                for v in &mut vars {
                    v.1 &= record_dim.is_some();
                    v.2 = v.2.iter().map(|&k| fixed[k % fixed.len()]).collect();
                }
                Model { version, numrecs, record_dim, dims, attrs, vars }
            })
    }

    /// Encodes `m` with non-record data first and interleaved records after; returns the file
    /// and, per variable, the expected (begin, data size), plus the expected record size.
    fn encode(m: &Model) -> (Vec<u8>, Vec<(u64, u64)>, u64) {
        let size = |v: &VarModel| {
            let ty = NcType::from_code(v.3).unwrap();
            v.2.iter().map(|&d| m.dims[d].1).product::<u64>() * ty.size()
        };
        let n_record = m.vars.iter().filter(|v| v.1).count();
        let record_size: u64 =
            m.vars.iter().filter(|v| v.1).map(|v| if n_record == 1 { size(v) } else { pad4(size(v)).unwrap() }).sum();
        let write = |begins: &[u64]| {
            let mut e = Enc::new(m.version, m.numrecs);
            e.list(NC_DIMENSION, m.dims.len() as u64);
            for (name, len) in &m.dims {
                e.name(name).count(*len);
            }
            e.list(NC_ATTRIBUTE, m.attrs.len() as u64);
            for (name, value) in &m.attrs {
                e.attr(name, value);
            }
            e.list(NC_VARIABLE, m.vars.len() as u64);
            for (v, begin) in m.vars.iter().zip(begins) {
                let ids: Vec<usize> = m.record_dim.filter(|_| v.1).into_iter().chain(v.2.iter().copied()).collect();
                e.name(&v.0).count(ids.len() as u64);
                for &i in &ids {
                    e.count(i as u64);
                }
                e.list(NC_ATTRIBUTE, v.4.len() as u64);
                for (name, value) in &v.4 {
                    e.attr(name, value);
                }
                e.u32(v.3).count(u64::from(v.5)).offset(*begin);
            }
            e.out
        };
        let header_len = write(&vec![0; m.vars.len()]).len() as u64;
        let mut next = header_len;
        let mut layout = vec![(0, 0); m.vars.len()];
        for pass_record in [false, true] {
            for (i, v) in m.vars.iter().enumerate().filter(|(_, v)| v.1 == pass_record) {
                layout[i] = (next, size(v));
                next += pad4(size(v)).unwrap();
            }
        }
        let first_record = layout.iter().zip(&m.vars).find(|(_, v)| v.1).map(|(l, _)| l.0);
        let file_len = first_record.map_or(next, |b| b + m.numrecs * record_size);
        let mut bytes = write(&layout.iter().map(|l| l.0).collect::<Vec<_>>());
        bytes.resize(file_len.max(header_len) as usize, 0);
        (bytes, layout, record_size)
    }

    /// `cases` cases, without writing regression files into the source tree.
    fn config(cases: u32) -> ProptestConfig {
        ProptestConfig { cases, failure_persistence: None, ..ProptestConfig::default() }
    }

    /// Runs `test` on `cases` inputs from `strategy`; returns how many inputs ran.
    fn run_cases<S: Strategy>(cases: u32, strategy: S, test: impl Fn(S::Value) -> TestCaseResult) -> u64 {
        let ran = AtomicU64::new(0);
        let mut runner = TestRunner::new(config(cases));
        let result = runner.run(&strategy, |value| {
            ran.fetch_add(1, Ordering::Relaxed);
            test(value)
        });
        if let Err(e) = result {
            panic!("{e}");
        }
        ran.load(Ordering::Relaxed)
    }

    #[test]
    fn random_bytes_never_panic() {
        let version = prop::sample::select(vec![1u8, 2, 5, 0x44]);
        let body = prop::collection::vec(any::<u8>(), 0..300);
        let ran = run_cases(2000, (version, body, 0u64..1000, 0usize..300), |(version, body, extra, cut)| {
            let mut bytes = b"CDF".to_vec();
            bytes.push(version);
            bytes.extend(body);
            let file_len = bytes.len() as u64 + extra;
            check_contract(&bytes, file_len);
            check_contract(&bytes[..cut.min(bytes.len())], file_len);
            Ok(())
        });
        eprintln!("fuzz: random headers: {} inputs", 2 * ran);
    }

    #[test]
    fn flipped_real_headers_never_panic() {
        let flips = prop::collection::vec((any::<prop::sample::Index>(), 1u8..=255), 1..6);
        let ran = run_cases(2000, (0usize..2, flips), |(which, flips)| {
            let mut bytes = fixtures()[which].clone();
            let header_len = parse_header(&bytes, bytes.len() as u64).unwrap().header_len as usize;
            for (index, mask) in flips {
                bytes[index.index(header_len)] ^= mask;
            }
            check_contract(&bytes, bytes.len() as u64);
            Ok(())
        });
        eprintln!("fuzz: flipped real headers: {ran} inputs");
    }

    /// Name, value pairs of attributes.
    fn pairs(attributes: &[Attribute]) -> Vec<(String, AttrValue)> {
        attributes.iter().map(|a| (a.name.clone(), a.value.clone())).collect()
    }

    #[test]
    fn generated_headers_round_trip() {
        let ran = run_cases(1000, model(), |m| {
            let (bytes, layout, record_size) = encode(&m);
            let h = check_contract(&bytes, bytes.len() as u64).unwrap();
            prop_assert_eq!((h.version, h.numrecs, h.record_size), (m.version, m.numrecs, record_size));
            let length = |l: u64| if l == 0 { m.numrecs } else { l };
            let dims: Vec<_> = m.dims.iter().map(|(n, l)| (n.clone(), length(*l), *l == 0)).collect();
            let got: Vec<_> = h.dimensions.iter().map(|d| (d.name.clone(), d.length, d.is_record)).collect();
            prop_assert_eq!(got, dims);
            prop_assert_eq!(pairs(&h.attributes), m.attrs.clone());
            prop_assert_eq!(h.variables.len(), m.vars.len());
            for ((v, want), (begin, data_size)) in h.variables.iter().zip(&m.vars).zip(&layout) {
                prop_assert_eq!((&v.name, v.is_record, v.nc_type.code()), (&want.0, want.1, want.3));
                prop_assert_eq!((v.vsize, v.begin, v.data_size), (u64::from(want.5), *begin, *data_size));
                let record = want.1.then_some(m.numrecs);
                let shape: Vec<u64> = record.into_iter().chain(want.2.iter().map(|&d| m.dims[d].1)).collect();
                prop_assert_eq!(&v.shape, &shape);
                prop_assert_eq!(pairs(&v.attributes), want.4.clone());
            }
            Ok(())
        });
        eprintln!("fuzz: generated headers round-tripped: {ran} inputs");
    }
}
