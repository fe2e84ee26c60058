//! Vgroups and vdatas (HDF4 Specification, "Vsets"): the groups and tables the SD model is built of.
//!
//! - A vgroup `(DFTAG_VG, ref)`: `n: u16`, `n` member tags, `n` member refs, then name and class
//!   (`u16` length + bytes each), `extag, exref: u16`; the header ends with `version, more: u16` and
//!   one byte. In version 4 (`VSET_NEW_VERSION`), `flags: u32` follows `exref`, and with
//!   `VG_ATTR_SET` (bit 0) `nattrs: u32` and the `(tag, ref)` of each attribute vdata (`vgp.c`).
//! - A vdata header `(DFTAG_VH, ref)`: `interlace: u16, records: u32, record_size: u16, nfields: u16`,
//!   per field its type, size, offset and order (`u16` each, four arrays), the field names, then
//!   the vdata's name and class. Its records are the element `(DFTAG_VS, ref)`, fields packed in
//!   order, big-endian.

use super::cursor::Cursor;
use super::dd::DdIndex;
use super::errors::Hdf4Error;
use super::read_exact;
use super::special::{read_stored, storage};
use crate::source::ByteSource;

/// The vgroup tag.
pub(crate) const DFTAG_VG: u16 = 1965;
/// The vdata header tag.
pub(crate) const DFTAG_VH: u16 = 1962;
/// The vdata records tag.
pub(crate) const DFTAG_VS: u16 = 1963;

/// Most bytes of a vgroup or vdata header read.
const MAX_HEADER: u64 = 1 << 20;

/// A vgroup: a named, classed list of (tag, ref) members.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Vgroup {
    /// Its ref.
    pub(crate) reference: u16,
    /// Name.
    pub(crate) name: String,
    /// Class (`Var0.0`, `Dim0.0`, `CDF0.0`, ...).
    pub(crate) class: String,
    /// Members, (tag, ref), in order.
    pub(crate) members: Vec<(u16, u16)>,
    /// The refs of its attribute vdatas (`Vsetattr`), in order.
    pub(crate) attributes: Vec<u16>,
}

/// One field of a vdata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Field {
    /// Name.
    pub(crate) name: String,
    /// Number type code (`DFNT_*`, with the little-endian flag when set).
    pub(crate) number_type: u16,
    /// Bytes of the field in one record (all its `order` values).
    pub(crate) size: u16,
    /// Values per record.
    pub(crate) order: u16,
}

/// A vdata header: a named table of records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Vdata {
    /// Its ref (its records are `(DFTAG_VS, ref)`).
    pub(crate) reference: u16,
    /// Name.
    pub(crate) name: String,
    /// Class (`Attr0.0`, `DimVal0.1`, ...).
    pub(crate) class: String,
    /// Number of records.
    pub(crate) records: u32,
    /// Bytes of one record.
    pub(crate) record_size: u16,
    /// Fields, in record order.
    pub(crate) fields: Vec<Field>,
}

fn header(file: &dyn ByteSource, index: &DdIndex, tag: u16, reference: u16, what: &str) -> Result<Vec<u8>, Hdf4Error> {
    let dd = index.require(tag, reference, what)?;
    if dd.special {
        return Err(Hdf4Error::Unsupported(format!("{what} is a special element")));
    }
    let length = dd.length.min(MAX_HEADER);
    index.spend(length, what)?;
    Ok(read_exact(file, dd.offset, length, what)?.to_vec())
}

/// Reads vgroup `reference`.
///
/// # Errors
/// [`Hdf4Error`] when it is missing or malformed.
pub(crate) fn vgroup(file: &dyn ByteSource, index: &DdIndex, reference: u16) -> Result<Vgroup, Hdf4Error> {
    let what = format!("vgroup {reference}");
    let bytes = header(file, index, DFTAG_VG, reference, &what)?;
    let mut c = Cursor::new(&bytes, &what);
    let n = c.u16()? as usize;
    let tags = c.take(2 * n)?;
    let refs = c.take(2 * n)?;
    let be16 = |b: &[u8], i: usize| u16::from_be_bytes([b[2 * i], b[2 * i + 1]]);
    let members = (0..n).map(|i| (be16(tags, i), be16(refs, i))).collect();
    let name = c.string()?;
    let class = c.string()?;
    let attributes = vgroup_attributes(&bytes, &mut c)?;
    Ok(Vgroup { reference, name, class, members, attributes })
}

/// The attribute refs of a version-4 vgroup header (`c` after the class); none for older versions.
fn vgroup_attributes(bytes: &[u8], c: &mut Cursor<'_>) -> Result<Vec<u16>, Hdf4Error> {
    const VSET_NEW_VERSION: u16 = 4;
    const VG_ATTR_SET: u32 = 1;
    let version = bytes.len().checked_sub(5).map(|at| u16::from_be_bytes([bytes[at], bytes[at + 1]]));
    if version != Some(VSET_NEW_VERSION) || c.skip(4).is_err() {
        return Ok(Vec::new());
    }
    let flags = c.u32()?;
    if flags & VG_ATTR_SET == 0 {
        return Ok(Vec::new());
    }
    let n = c.u32()? as usize;
    let pairs = c.take(n.saturating_mul(4))?;
    Ok(pairs
        .chunks_exact(4)
        .filter(|p| u16::from_be_bytes([p[0], p[1]]) == DFTAG_VH)
        .map(|p| u16::from_be_bytes([p[2], p[3]]))
        .collect())
}

/// Reads the header of vdata `reference`.
///
/// # Errors
/// [`Hdf4Error`] when it is missing or malformed.
pub(crate) fn vdata(file: &dyn ByteSource, index: &DdIndex, reference: u16) -> Result<Vdata, Hdf4Error> {
    let what = format!("vdata {reference}");
    let bytes = header(file, index, DFTAG_VH, reference, &what)?;
    let mut c = Cursor::new(&bytes, &what);
    let _interlace = c.u16()?;
    let records = c.u32()?;
    let record_size = c.u16()?;
    let n = c.u16()? as usize;
    let mut arrays = [Vec::new(), Vec::new(), Vec::new(), Vec::new()];
    for array in &mut arrays {
        let raw = c.take(2 * n)?;
        *array = raw.chunks_exact(2).map(|b| u16::from_be_bytes([b[0], b[1]])).collect();
    }
    let [types, sizes, _offsets, orders] = arrays;
    let mut fields = Vec::with_capacity(n);
    for i in 0..n {
        fields.push(Field { name: c.string()?, number_type: types[i], size: sizes[i], order: orders[i] });
    }
    let name = c.string()?;
    let class = c.string()?;
    Ok(Vdata { reference, name, class, records, record_size, fields })
}

/// The records of a vdata, `records * record_size` bytes (at most `limit`).
///
/// # Errors
/// [`Hdf4Error`] when they are missing, shorter than the header says, or larger than `limit`.
pub(crate) fn records(file: &dyn ByteSource, index: &DdIndex, vdata: &Vdata, limit: u64) -> Result<Vec<u8>, Hdf4Error> {
    let what = format!("records of vdata {} ({})", vdata.reference, vdata.name);
    let want = u64::from(vdata.records) * u64::from(vdata.record_size);
    if want == 0 {
        return Ok(Vec::new());
    }
    if want > limit || want > file.len() {
        return Err(Hdf4Error::malformed(
            what,
            format!("{want} bytes of records, more than the file or vzarr's limit"),
        ));
    }
    let stored = storage(file, index, DFTAG_VS, vdata.reference)?.ok_or(Hdf4Error::Missing {
        what: what.clone(),
        tag: DFTAG_VS,
        reference: vdata.reference,
    })?;
    let mut bytes = read_stored(file, index, &stored, limit, &what)?;
    if (bytes.len() as u64) < want {
        return Err(Hdf4Error::malformed(
            what,
            format!("{} bytes, fewer than the {want} its header says", bytes.len()),
        ));
    }
    bytes.truncate(want as usize);
    Ok(bytes)
}
