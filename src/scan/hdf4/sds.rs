//! The SD model (the multi-file SD interface of libhdf4, `mfhdf`): how scientific data sets are laid
//! out on vgroups and vdatas.
//!
//! - The file's vgroup of class `CDF0.0` holds the file attributes: vdatas of class `Attr0.0`, one
//!   field `VALUES` whose order is the value count.
//! - Each data set is a vgroup of class `Var0.0` named after it. Its members: the vgroups of its
//!   dimensions (class `Dim0.0`/`UDim0.0`, named after the dimension, in dimension order), its
//!   attributes (`Attr0.0` vdatas), a marker vdata (`SDSVar`, or `CoordVar` for a dimension scale),
//!   its number type `(DFTAG_NT, ref)`: `version, type, width, class: u8` (class 4 is little-endian),
//!   its dimension record `(DFTAG_SDD, ref)`: `rank: u16`, `rank` extents `u32`, the number-type refs,
//!   and its data `(DFTAG_SD, ref)` (absent until written).
//! - A dimension scale is a `Var0.0` vgroup named after its dimension, one-dimensional: a
//!   coordinate variable.

use serde_json::Value;

use super::cursor::{text, Cursor};
use super::dd::DdIndex;
use super::errors::Hdf4Error;
use super::read_exact;
use super::vobjects::{records, vdata, vgroup, Vgroup, DFTAG_VG, DFTAG_VH};
use crate::metadata::{float_attribute, DataType};
use crate::source::ByteSource;

/// The number type tag.
pub(crate) const DFTAG_NT: u16 = 106;
/// The dimension record tag.
pub(crate) const DFTAG_SDD: u16 = 701;
/// The data tag of a data set.
pub(crate) const DFTAG_SD: u16 = 702;
/// The numeric data group tag (the DFSD model's list of a data set's objects).
pub(crate) const DFTAG_NDG: u16 = 720;

/// Most bytes of one attribute's values.
const MAX_ATTRIBUTE_BYTES: u64 = 64 << 20;
/// Most dimensions of a data set (libhdf4's `H4_MAX_VAR_DIMS`).
const MAX_RANK: usize = 32;

/// An HDF4 number type (its code) with no Zarr data type.
#[derive(Debug, thiserror::Error)]
#[error("HDF4 number type {0} has no Zarr data type")]
pub(crate) struct NumberTypeError(u16);

/// An HDF4 number type: a `DFNT_*` code and its byte order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct NumberType {
    /// The `DFNT_*` code without format flags (5 float32, 24 int32, ...).
    pub(crate) code: u16,
    /// Whether multi-byte values are stored little-endian.
    pub(crate) little: bool,
}

impl NumberType {
    /// The type of a vdata field's code (`DFNT_LITEND`, 0x4000, marks little-endian).
    pub(crate) fn from_field(code: u16) -> Self {
        NumberType { code: code & 0x0fff, little: code & 0x4000 != 0 }
    }

    /// The Zarr data type; `char8`/`uchar8` are one-byte strings' characters.
    ///
    /// # Errors
    /// [`NumberTypeError`] for a type with no Zarr equivalent.
    pub(crate) fn data_type(self) -> Result<DataType, NumberTypeError> {
        Ok(match self.code {
            3 | 21 => DataType::UInt8,
            4 => DataType::FixedBytes(1),
            5 => DataType::Float32,
            6 => DataType::Float64,
            20 => DataType::Int8,
            22 => DataType::Int16,
            23 => DataType::UInt16,
            24 => DataType::Int32,
            25 => DataType::UInt32,
            26 => DataType::Int64,
            27 => DataType::UInt64,
            code => return Err(NumberTypeError(code)),
        })
    }

    /// Bytes of one value of number type `code` (`DFNT_*`; format flags ignored), for the types
    /// vzarr reads.
    pub(crate) fn value_size(code: u32) -> Option<u32> {
        match code & 0xfff {
            3 | 4 | 20 | 21 => Some(1),
            22 | 23 => Some(2),
            5 | 24 | 25 => Some(4),
            6 | 26 | 27 => Some(8),
            _ => None,
        }
    }

    pub(crate) fn is_text(self) -> bool {
        matches!(self.code, 3 | 4)
    }
}

/// One attribute: its number type and its values as stored.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Attribute {
    /// Name.
    pub(crate) name: String,
    /// Number type of the values.
    pub(crate) number_type: NumberType,
    /// The values' bytes as stored.
    pub(crate) raw: Vec<u8>,
}

impl Attribute {
    /// The values as native-endian element bytes (`None` for text and unknown types).
    pub(crate) fn native_bytes(&self) -> Option<Vec<u8>> {
        let data_type = self.number_type.data_type().ok().filter(|_| !self.number_type.is_text())?;
        let size = data_type.size();
        let mut out = self.raw[..self.raw.len() / size * size].to_vec();
        let stored_little = self.number_type.little;
        if size > 1 && stored_little != cfg!(target_endian = "little") {
            out.chunks_exact_mut(size).for_each(<[u8]>::reverse);
        }
        Some(out)
    }

    /// The values as JSON: text as a string, one number as a scalar, several as an array.
    pub(crate) fn to_json(&self) -> Value {
        if self.number_type.is_text() {
            return Value::from(text(&self.raw));
        }
        let (Ok(data_type), Some(native)) = (self.number_type.data_type(), self.native_bytes()) else {
            return Value::Null;
        };
        let values: Vec<Value> = native.chunks_exact(data_type.size()).map(|b| number(data_type, b)).collect();
        match <[Value; 1]>::try_from(values) {
            Ok([one]) => one,
            Err(many) => Value::Array(many),
        }
    }
}

/// One native-endian value as JSON (integers exact, floats through `float_attribute`).
fn number(data_type: DataType, b: &[u8]) -> Value {
    let mut raw = [0u8; 8];
    raw[..b.len()].copy_from_slice(b);
    match data_type {
        DataType::Int8 => Value::from(b[0] as i8),
        DataType::UInt8 => Value::from(b[0]),
        DataType::Int16 => Value::from(i16::from_ne_bytes([b[0], b[1]])),
        DataType::UInt16 => Value::from(u16::from_ne_bytes([b[0], b[1]])),
        DataType::Int32 => Value::from(i32::from_ne_bytes([b[0], b[1], b[2], b[3]])),
        DataType::UInt32 => Value::from(u32::from_ne_bytes([b[0], b[1], b[2], b[3]])),
        DataType::Int64 => Value::from(i64::from_ne_bytes(raw)),
        DataType::UInt64 => Value::from(u64::from_ne_bytes(raw)),
        DataType::Float32 => float_attribute(f64::from(f32::from_ne_bytes([b[0], b[1], b[2], b[3]]))),
        DataType::Float64 => float_attribute(f64::from_ne_bytes(raw)),
        _ => Value::Null,
    }
}

/// One scientific data set.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Sds {
    /// Name.
    pub(crate) name: String,
    /// Its vgroup's ref.
    pub(crate) reference: u16,
    /// Dimension names, in order.
    pub(crate) dims: Vec<String>,
    /// Extents, in elements.
    pub(crate) shape: Vec<u64>,
    /// Number type of the values.
    pub(crate) number_type: NumberType,
    /// Attributes.
    pub(crate) attributes: Vec<Attribute>,
    /// The ref of its data element `(DFTAG_SD, ref)`, absent when never written.
    pub(crate) data_ref: Option<u16>,
    /// Whether one of its dimensions is unlimited (a `UDim0.0` dimension vgroup: libhdf4's record
    /// variable, whose first extent is the rows its data element holds, not the dimension record's).
    pub(crate) unlimited: bool,
}

/// The SD content of a file: file attributes, data sets (each read, or why not) and the vgroups
/// that are not the SD model's own.
#[derive(Debug)]
pub(crate) struct SdFile {
    /// File attributes.
    pub(crate) attributes: Vec<Attribute>,
    /// Data sets in file order: (name, the ref of its `Var0.0` vgroup, the data set or why it could
    /// not be read).
    pub(crate) datasets: Vec<(String, u16, Result<Sds, Hdf4Error>)>,
    /// Vgroups of other classes (the V interface's own groups, HDF-EOS2's, the GR interface's), in
    /// file order.
    pub(crate) vgroups: Vec<Vgroup>,
    /// The `Var0.0` vgroup ref of each data set by the (tag, ref) other vgroups name it with: its
    /// numeric data group (what `SDidtoref` returns and the V interface stores), its data element and
    /// its vgroup.
    pub(crate) var_of: std::collections::HashMap<(u16, u16), u16>,
}

/// The SD model's own vgroup classes.
const SD_CLASSES: [&str; 4] = ["CDF0.0", "Var0.0", "Dim0.0", "UDim0.0"];

/// Reads the SD model of a file.
///
/// # Errors
/// [`Hdf4Error`] when a vgroup or the file attributes cannot be read; a data set that cannot be read
/// is an `Err` in [`SdFile::datasets`].
pub(crate) fn read_sd(file: &dyn ByteSource, index: &DdIndex) -> Result<SdFile, Hdf4Error> {
    let mut sd =
        SdFile { attributes: Vec::new(), datasets: Vec::new(), vgroups: Vec::new(), var_of: Default::default() };
    for reference in index.refs_of(DFTAG_VG) {
        let group = vgroup(file, index, reference)?;
        match group.class.as_str() {
            "CDF0.0" if sd.attributes.is_empty() => sd.attributes = member_attributes(file, index, &group)?,
            "Var0.0" => {
                sd.var_of.entry((DFTAG_VG, reference)).or_insert(reference);
                for &(tag, member) in &group.members {
                    if matches!(tag, DFTAG_NDG | DFTAG_SD) {
                        sd.var_of.entry((tag, member)).or_insert(reference);
                    }
                }
                sd.datasets.push((group.name.clone(), reference, sds(file, index, &group)));
            }
            class if SD_CLASSES.contains(&class) => {}
            _ => sd.vgroups.push(group),
        }
    }
    Ok(sd)
}

/// The attributes (vdatas `refs` of class `Attr0.0`) of a vgroup.
///
/// # Errors
/// [`Hdf4Error`] when one cannot be read.
pub(crate) fn vgroup_attributes(
    file: &dyn ByteSource,
    index: &DdIndex,
    refs: &[u16],
) -> Result<Vec<Attribute>, Hdf4Error> {
    let mut out = Vec::new();
    for &reference in refs {
        let v = vdata(file, index, reference)?;
        if v.class == "Attr0.0" {
            out.push(attribute(file, index, &v)?);
        }
    }
    Ok(out)
}

fn member_attributes(file: &dyn ByteSource, index: &DdIndex, group: &Vgroup) -> Result<Vec<Attribute>, Hdf4Error> {
    let mut out = Vec::new();
    for &(tag, reference) in &group.members {
        if tag == DFTAG_VH {
            let v = vdata(file, index, reference)?;
            if v.class == "Attr0.0" {
                out.push(attribute(file, index, &v)?);
            }
        }
    }
    Ok(out)
}

fn attribute(file: &dyn ByteSource, index: &DdIndex, v: &super::vobjects::Vdata) -> Result<Attribute, Hdf4Error> {
    let field = v.fields.first().ok_or_else(|| Hdf4Error::malformed(format!("attribute {}", v.name), "no field"))?;
    let raw = records(file, index, v, MAX_ATTRIBUTE_BYTES)?;
    Ok(Attribute { name: v.name.clone(), number_type: NumberType::from_field(field.number_type), raw })
}

fn sds(file: &dyn ByteSource, index: &DdIndex, group: &Vgroup) -> Result<Sds, Hdf4Error> {
    let mut dims = Vec::new();
    let (mut nt, mut sdd, mut data_ref, mut ndg) = (None, None, None, None);
    let mut attributes = Vec::new();
    let mut unlimited = false;
    for &(tag, reference) in &group.members {
        match tag {
            DFTAG_VG => {
                let dim = vgroup(file, index, reference)?;
                if dim.class.ends_with("Dim0.0") {
                    unlimited |= dim.class == "UDim0.0";
                    dims.push(dim.name);
                }
            }
            DFTAG_VH => {
                let v = vdata(file, index, reference)?;
                if v.class == "Attr0.0" {
                    attributes.push(attribute(file, index, &v)?);
                }
            }
            DFTAG_NT => nt = Some(number_type(file, index, reference)?),
            DFTAG_SDD => sdd = Some(reference),
            DFTAG_SD => data_ref = Some(reference),
            DFTAG_NDG => ndg = Some(reference),
            _ => {}
        }
    }
    let what = format!("data set {} (vgroup {})", group.name, group.reference);
    // Older writers list the dimension record and the data only in the numeric data group.
    if let (None, Some(ndg)) = (sdd, ndg) {
        for (tag, reference) in numeric_data_group(file, index, ndg)? {
            match tag {
                DFTAG_SDD => sdd = sdd.or(Some(reference)),
                DFTAG_SD => data_ref = data_ref.or(Some(reference)),
                _ => {}
            }
        }
    }
    let sdd = sdd.ok_or_else(|| Hdf4Error::malformed(&what, "no dimension record"))?;
    let (shape, sdd_nt) = dimension_record(file, index, sdd)?;
    let number_type = match (nt, sdd_nt) {
        (Some(nt), _) => nt,
        (None, Some(r)) => number_type(file, index, r)?,
        (None, None) => return Err(Hdf4Error::malformed(&what, "no number type")),
    };
    if dims.len() != shape.len() {
        dims = (0..shape.len()).map(|i| format!("fakeDim{i}")).collect();
    }
    Ok(Sds {
        name: group.name.clone(),
        reference: group.reference,
        dims,
        shape,
        number_type,
        attributes,
        data_ref,
        unlimited,
    })
}

/// The (tag, ref) members of numeric data group `reference`.
fn numeric_data_group(file: &dyn ByteSource, index: &DdIndex, reference: u16) -> Result<Vec<(u16, u16)>, Hdf4Error> {
    let what = format!("numeric data group {reference}");
    let dd = index.require(DFTAG_NDG, reference, &what)?;
    let length = dd.length.min(4 * 256);
    index.spend(length, &what)?;
    let bytes = read_exact(file, dd.offset, length, &what)?;
    Ok(bytes.chunks_exact(4).map(|b| (u16::from_be_bytes([b[0], b[1]]), u16::from_be_bytes([b[2], b[3]]))).collect())
}

fn number_type(file: &dyn ByteSource, index: &DdIndex, reference: u16) -> Result<NumberType, Hdf4Error> {
    let what = format!("number type {reference}");
    let dd = index.require(DFTAG_NT, reference, &what)?;
    let b = read_exact(file, dd.offset, 4, &what)?;
    let number_type = NumberType { code: u16::from(b[1]), little: b[3] == 4 };
    // `version, type, width in bits, class`: a record whose width is not its type's does not parse
    // (libhdf4 refuses it), whatever bytes it was pointed at.
    match NumberType::value_size(u32::from(b[1])) {
        Some(size) if u32::from(b[2]) == 8 * size => Ok(number_type),
        Some(size) => Err(Hdf4Error::malformed(
            what,
            format!("type {} of {} bits, not the {} of that type: the record is damaged", b[1], b[2], 8 * size),
        )),
        // A type vzarr does not read is refused as unsupported when the array is built.
        None => Ok(number_type),
    }
}

/// The extents of a dimension record and the ref of its number type.
fn dimension_record(
    file: &dyn ByteSource,
    index: &DdIndex,
    reference: u16,
) -> Result<(Vec<u64>, Option<u16>), Hdf4Error> {
    let what = format!("dimension record {reference}");
    let dd = index.require(DFTAG_SDD, reference, &what)?;
    let bytes = read_exact(file, dd.offset, dd.length.min(2 + 8 * MAX_RANK as u64 + 4), &what)?;
    let mut c = Cursor::new(&bytes, &what);
    let rank = c.u16()? as usize;
    if rank > MAX_RANK {
        return Err(Hdf4Error::malformed(what, format!("rank {rank}, more than {MAX_RANK}")));
    }
    let mut shape = Vec::with_capacity(rank);
    for _ in 0..rank {
        shape.push(u64::from(c.u32()?));
    }
    let nt = c.u16().and_then(|tag| Ok((tag, c.u16()?))).ok().filter(|(t, _)| *t == DFTAG_NT).map(|(_, r)| r);
    Ok((shape, nt))
}
