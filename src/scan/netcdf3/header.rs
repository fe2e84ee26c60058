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
//!
//! Layout: `header/types` holds what a header is made of ([`Header`], [`Variable`], [`AttrValue`],
//! [`HeaderError`], ...), `header/reader` the bounds-checked big-endian reader, `header/lists` the
//! grammar's lists (magic, dimensions, attributes, variables), `header/placement` the sizes, record
//! stride and placement checks; `header/tests` checks everything against libnetcdf and fuzzes it.

mod lists;
mod placement;
mod reader;
#[cfg(test)]
mod tests;
mod types;

use lists::{read_attributes, read_dimensions, read_magic, read_numrecs, read_variables};
use placement::{record_or_variable_size, record_stride, streamed_numrecs, Placement};
use reader::{invalid, Reader};
pub(crate) use types::{AttrValue, Attribute, Header, HeaderError, NcType, Variable, MAX_HEADER_BYTES};

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
pub(crate) fn parse_header(bytes: &[u8], file_len: u64) -> Result<Header, HeaderError> {
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
