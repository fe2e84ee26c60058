//! The NetCDF-3 scanner (CDF-1 classic, CDF-2 64-bit offset, CDF-5 64-bit data), without libnetcdf:
//! vzarr parses the header itself (`netcdf3/header`) and references the raw big-endian bytes.
//!
//! - The records of a file's only record variable are contiguous (the record stride is its record
//!   size): it is referenced like a non-record variable, as slabs along the record dimension.
//! - Where several record variables interleave, each becomes one chunk per record, shape `1 x rest`,
//!   at `begin + r * record_size`, within a budget of [`MAX_RECORD_REFERENCES`] references per file;
//!   a file needing more is refused (a sparse file can claim 2^32 records without using disk).
//! - A non-record variable is contiguous: one chunk, or slabs along its first dimension when large
//!   (`scan/contiguous`).
//! - `char` variables become fixed-width byte strings (`null_terminated_bytes`, NumPy `S<n>`): the
//!   last dimension (the string length) is folded into the element, as netCDF users read them.
//! - The codec chain is `bytes` with big endian; fill values come from `_FillValue` or netCDF's
//!   defaults.

pub(crate) mod header;

use std::path::Path;
use std::sync::Arc;

use header::{AttrValue, Header, HeaderError, NcType, Variable};
use serde_json::Value;

use super::chars::{char_dim_stackable, folded_length, CharUse};
use super::contiguous::slab_layout;
use super::{digest, unsupported, wants_digest, FileFormat, ScanError, ScanOptions};
use crate::codec::{CodecChain, Endian};
use crate::dataset::{ChunkTable, ConcatCoordinate, GroupNode, VirtualArray, VirtualDataset};
use crate::grid::{ChunkDim, ChunkGrid};
use crate::manifest::{ChunkEntry, SourceFile};
use crate::metadata::{
    encode_fill_value_attribute, float_attribute, ArrayMetadata, ArrayNotes, Attributes, DataType, FillValue,
    SourceLayout,
};
use crate::source::ByteSource;

/// Bytes read before the header is known to be longer.
const FIRST_READ: u64 = 64 << 10;

/// Most per-record chunk references built for the interleaved record variables of one file.
pub(super) const MAX_RECORD_REFERENCES: u64 = 1 << 22;

/// Most values read from a file for the concatenation coordinate (and its bounds).
pub(super) const MAX_COORDINATE_VALUES: u64 = 1 << 24;

/// Scans the NetCDF-3 file whose bytes `bytes` gives (local or from an object store); `path` names it
/// in messages and `source` is its fingerprint (the dataset's source 0).
///
/// # Errors
/// [`ScanError`] naming the file (and variable) that could not be scanned.
pub(super) fn scan_netcdf3(
    path: &Path,
    bytes: Arc<dyn ByteSource>,
    source: SourceFile,
    options: &ScanOptions,
) -> Result<VirtualDataset, ScanError> {
    let io = |source| ScanError::Io { path: path.to_path_buf(), source };
    let file = bytes.as_ref();
    let header = read_header(file, bytes.len()).map_err(|e| match e {
        HeaderRead::Io(e) => io(e),
        HeaderRead::Header(e) => {
            ScanError::Open { path: path.to_path_buf(), format: FileFormat::Netcdf3, source: e.into() }
        }
    })?;
    let mut dataset = VirtualDataset::default();
    dataset.sources.push(source);
    dataset.groups.push(GroupNode::new(String::new(), attributes(&header.attributes)));
    let layout = Layout::new(&header);
    for var in &header.variables {
        match array(&header, var, &layout, options) {
            Ok(mut array) => {
                add_digest(file, &header, var, &mut array, options);
                dataset.arrays.push(array);
            }
            Err(problem) => unsupported(path, &var.name, problem.to_string(), options, &mut dataset.warnings)?,
        }
    }
    for dim in &options.concat_dims {
        let coordinate = concat_coordinate(file, &header, dim).map_err(|e| ScanError::Variable {
            path: path.to_path_buf(),
            variable: dim.clone(),
            what: "reading the concatenation coordinate".into(),
            source: e.into(),
        })?;
        dataset.concat.extend(coordinate);
    }
    Ok(dataset)
}

/// Why a variable cannot be referenced (the problem of an unsupported variable).
#[derive(Debug, thiserror::Error)]
enum VariableError {
    /// A char variable without dimensions to fold.
    #[error("char variable without dimensions")]
    NoDimensions,
    /// A char dimension no fixed-length string type holds.
    #[error("char dimension of length 0 or over 4 GiB")]
    CharLength,
    /// No chunk grid for the variable.
    #[error("{0}")]
    Grid(#[from] crate::grid::GridError),
    /// The fill value is refused.
    #[error("{0}")]
    FillValue(#[from] crate::metadata::MetadataError),
    /// A fill value of another size than an element.
    #[error("fill value of {len} bytes for {data_type}")]
    FillSize {
        /// Bytes of the fill value.
        len: usize,
        /// The variable's type.
        data_type: DataType,
    },
    /// More record references than vzarr keeps for one file.
    #[error(
        "{numrecs} records of {variables} interleaved record variables (this one in {per_record} pieces a record) need {total} chunk references, more than vzarr's limit of {MAX_RECORD_REFERENCES} per file"
    )]
    TooManyRecords {
        /// Records in the file.
        numrecs: u64,
        /// Record variables.
        variables: u64,
        /// Pieces of one record of this variable.
        per_record: u64,
        /// References needed.
        total: u64,
    },
}

enum HeaderRead {
    Io(std::io::Error),
    Header(HeaderError),
}

/// Reads as much of the file as the header needs (64 KiB first, more when the parser asks).
fn read_header(file: &dyn ByteSource, file_len: u64) -> Result<Header, HeaderRead> {
    let mut want = FIRST_READ.min(file_len);
    loop {
        let bytes = read_prefix(file, want).map_err(HeaderRead::Io)?;
        match header::parse_header(&bytes, file_len) {
            Err(HeaderError::NeedMore { at_least }) if at_least > want && at_least <= file_len => {
                want = at_least.max(want.saturating_mul(2)).min(file_len).min(header::MAX_HEADER_BYTES);
            }
            other => return other.map_err(HeaderRead::Header),
        }
    }
}

fn read_prefix(file: &dyn ByteSource, len: u64) -> std::io::Result<Vec<u8>> {
    Ok(file.read_range(0, len).map_err(std::io::Error::other)?.to_vec())
}

/// The Zarr data type, element bytes and shape of a variable (char arrays folded).
fn element(header: &Header, var: &Variable) -> Result<(DataType, Vec<u64>), VariableError> {
    let t = match var.nc_type {
        NcType::Byte => DataType::Int8,
        NcType::Short => DataType::Int16,
        NcType::Int => DataType::Int32,
        NcType::Float => DataType::Float32,
        NcType::Double => DataType::Float64,
        NcType::UByte => DataType::UInt8,
        NcType::UShort => DataType::UInt16,
        NcType::UInt => DataType::UInt32,
        NcType::Int64 => DataType::Int64,
        NcType::UInt64 => DataType::UInt64,
        NcType::Char => return char_element(header, var),
    };
    Ok((t, var.shape.clone()))
}

/// A char variable's last dimension becomes the string length, unless it is the record dimension, has
/// length 1, or xarray would not stack it into strings (`scan/chars`).
fn char_element(header: &Header, var: &Variable) -> Result<(DataType, Vec<u64>), VariableError> {
    let last = var.dim_ids.last().and_then(|&d| header.dimensions.get(d));
    if last.is_none_or(|d| d.is_record || !stackable(header, &d.name)) {
        return Ok((DataType::FixedBytes(1), var.shape.clone()));
    }
    let (&len, rest) = var.shape.split_last().ok_or(VariableError::NoDimensions)?;
    if len == 1 {
        // One-character strings keep their dimension (`scan/chars`).
        return Ok((DataType::FixedBytes(1), var.shape.clone()));
    }
    let len = folded_length(len).ok_or(VariableError::CharLength)?;
    Ok((DataType::FixedBytes(len), rest.to_vec()))
}

/// Whether xarray stacks the char dimension `dim` of this file into strings.
fn stackable(header: &Header, dim: &str) -> bool {
    let dim_name = |&d: &usize| header.dimensions.get(d).map_or("", |d| d.name.as_str());
    let group: Vec<CharUse<'_>> = header
        .variables
        .iter()
        .map(|v| CharUse {
            name: &v.name,
            dims: v.dim_ids.iter().map(dim_name).collect(),
            is_char: v.nc_type == NcType::Char,
        })
        .collect();
    char_dim_stackable(dim, &group)
}

/// How the record variables of a file lie.
struct Layout {
    /// Number of record variables.
    record_variables: u64,
}

impl Layout {
    fn new(header: &Header) -> Self {
        Layout { record_variables: header.variables.iter().filter(|v| v.is_record).count() as u64 }
    }
}

fn array(
    header: &Header,
    var: &Variable,
    layout: &Layout,
    options: &ScanOptions,
) -> Result<VirtualArray, VariableError> {
    let (data_type, shape) = element(header, var)?;
    let es = data_type.size() as u64;
    let endian = (data_type.swap_unit() > 1).then_some(Endian::Big);
    let (grid, entries) = if var.is_record && layout.record_variables > 1 {
        record_layout(header, var, &shape, es, layout, options.max_slab_bytes)?
    } else {
        slab_layout(&shape, es, var.begin, 0, options.max_slab_bytes)?
    };
    let fill = fill_bytes(var, data_type)?;
    let names = var.dim_ids.iter().take(shape.len()).filter_map(|&d| header.dimensions.get(d)).map(|d| d.name.clone());
    let mut metadata = ArrayMetadata {
        data_type,
        chunk_grid: grid,
        fill_value: FillValue::from_bytes(data_type, fill)?,
        codecs: CodecChain::raw(endian),
        dimension_names: Some(names.collect()),
        attributes: attributes(&var.attributes),
        notes: notes(&var.attributes),
    };
    encode_fill_value_attribute(data_type, &mut metadata.attributes, &mut metadata.notes);
    metadata.notes.source_layout = Some(SourceLayout::Classic);
    metadata.notes.unlimited_dims = var
        .dim_ids
        .iter()
        .filter_map(|&d| header.dimensions.get(d))
        .filter(|d| d.is_record)
        .map(|d| d.name.clone())
        .collect();
    Ok(VirtualArray {
        path: var.name.clone(),
        metadata,
        chunks: ChunkTable::from_entries(entries, crate::dataset::OwnedBytes::with_budget(&options.owned_budget)),
        rewritten_chunks: 0,
        digest: None,
        tails: Vec::new(),
    })
}

/// One chunk per record (records interleaved with other record variables), within the file's budget.
/// Interleaved record variables: record `r` of `var` is at `begin + r * record_size`. Each record is
/// one chunk, or, when a record is larger than `max_slab_bytes`, split into slabs along its first
/// dimension as contiguous variables are (a small read then fetches little).
fn record_layout(
    header: &Header,
    var: &Variable,
    shape: &[u64],
    element_size: u64,
    layout: &Layout,
    max_slab_bytes: u64,
) -> Result<(ChunkGrid, Vec<ChunkEntry>), VariableError> {
    let (record_grid, pieces) = match shape.get(1..).filter(|rest| !rest.is_empty()) {
        Some(rest) if var.data_size > max_slab_bytes => {
            let (grid, entries) = slab_layout(rest, element_size, 0, 0, max_slab_bytes)?;
            (grid.dims().to_vec(), entries)
        }
        Some(rest) => {
            let dims = rest.iter().map(|&n| ChunkDim::regular(n, n.max(1))).collect::<Result<Vec<_>, _>>();
            let whole = ChunkEntry::Source { source: 0, offset: 0, length: var.data_size };
            (dims?, vec![whole])
        }
        None => (Vec::new(), vec![ChunkEntry::Source { source: 0, offset: 0, length: var.data_size }]),
    };
    let per_record = pieces.len() as u64;
    let interleaved = header.numrecs.saturating_mul(layout.record_variables);
    let total = interleaved.max(header.numrecs.saturating_mul(per_record));
    if total > MAX_RECORD_REFERENCES {
        let (numrecs, variables) = (header.numrecs, layout.record_variables);
        return Err(VariableError::TooManyRecords { numrecs, variables, per_record, total });
    }
    let records = shape.first().copied().unwrap_or(0);
    let mut dims = vec![ChunkDim::regular(records, 1)?];
    dims.extend(record_grid);
    let grid = ChunkGrid::new(dims);
    let records = if grid.num_chunks() == 0 { 0 } else { header.numrecs };
    let entries = (0..records)
        .flat_map(|r| {
            let base = var.begin + r * header.record_size;
            pieces.iter().map(move |piece| match *piece {
                ChunkEntry::Source { offset, length, .. } => {
                    ChunkEntry::Source { source: 0, offset: base + offset, length }
                }
                other => other,
            })
        })
        .collect();
    Ok((grid, entries))
}

/// The fill value as native-endian element bytes.
fn fill_bytes(var: &Variable, data_type: DataType) -> Result<Vec<u8>, VariableError> {
    let value = var.fill_value();
    let mut bytes = native_values(&value);
    if let DataType::FixedBytes(n) = data_type {
        let c = bytes.first().copied().unwrap_or(0);
        bytes = vec![c; n as usize];
    }
    if bytes.len() != data_type.size() {
        return Err(VariableError::FillSize { len: bytes.len(), data_type });
    }
    Ok(bytes)
}

/// Native-endian bytes of every value.
fn native_values(value: &AttrValue) -> Vec<u8> {
    fn bytes<T: Copy, const N: usize>(v: &[T], f: fn(T) -> [u8; N]) -> Vec<u8> {
        v.iter().flat_map(|x| f(*x)).collect()
    }
    match value {
        AttrValue::Bytes(v) => bytes(v, i8::to_ne_bytes),
        AttrValue::Text(v) | AttrValue::UBytes(v) => v.clone(),
        AttrValue::Shorts(v) => bytes(v, i16::to_ne_bytes),
        AttrValue::Ints(v) => bytes(v, i32::to_ne_bytes),
        AttrValue::Floats(v) => bytes(v, f32::to_ne_bytes),
        AttrValue::Doubles(v) => bytes(v, f64::to_ne_bytes),
        AttrValue::UShorts(v) => bytes(v, u16::to_ne_bytes),
        AttrValue::UInts(v) => bytes(v, u32::to_ne_bytes),
        AttrValue::Int64s(v) => bytes(v, i64::to_ne_bytes),
        AttrValue::UInt64s(v) => bytes(v, u64::to_ne_bytes),
    }
}

/// Attributes as JSON: one value stays a scalar, text becomes a string (trailing NULs dropped).
fn attributes(attrs: &[header::Attribute]) -> Attributes {
    fn one_or_many<T>(v: &[T], f: impl Fn(&T) -> Value) -> Value {
        match v {
            [x] => f(x),
            xs => Value::Array(xs.iter().map(f).collect()),
        }
    }
    attrs
        .iter()
        .map(|a| {
            let value = match &a.value {
                AttrValue::Text(t) => {
                    let end = t.iter().rposition(|&c| c != 0).map_or(0, |i| i + 1);
                    Value::from(String::from_utf8_lossy(&t[..end]).into_owned())
                }
                AttrValue::Bytes(v) => one_or_many(v, |x| Value::from(*x)),
                AttrValue::UBytes(v) => one_or_many(v, |x| Value::from(*x)),
                AttrValue::Shorts(v) => one_or_many(v, |x| Value::from(*x)),
                AttrValue::UShorts(v) => one_or_many(v, |x| Value::from(*x)),
                AttrValue::Ints(v) => one_or_many(v, |x| Value::from(*x)),
                AttrValue::UInts(v) => one_or_many(v, |x| Value::from(*x)),
                AttrValue::Int64s(v) => one_or_many(v, |x| Value::from(*x)),
                AttrValue::UInt64s(v) => one_or_many(v, |x| Value::from(*x)),
                AttrValue::Floats(v) => one_or_many(v, |x| float_attribute(f64::from(*x))),
                AttrValue::Doubles(v) => one_or_many(v, |x| float_attribute(*x)),
            };
            (a.name.clone(), value)
        })
        .collect()
}

/// The numeric types of the attributes (netCDF-3 types, as netCDF4-python gives them).
fn notes(attrs: &[header::Attribute]) -> ArrayNotes {
    let mut notes = ArrayNotes::default();
    for a in attrs {
        let data_type = match &a.value {
            AttrValue::Text(_) => continue,
            AttrValue::Bytes(_) => DataType::Int8,
            AttrValue::UBytes(_) => DataType::UInt8,
            AttrValue::Shorts(_) => DataType::Int16,
            AttrValue::UShorts(_) => DataType::UInt16,
            AttrValue::Ints(_) => DataType::Int32,
            AttrValue::UInts(_) => DataType::UInt32,
            AttrValue::Int64s(_) => DataType::Int64,
            AttrValue::UInt64s(_) => DataType::UInt64,
            AttrValue::Floats(_) => DataType::Float32,
            AttrValue::Doubles(_) => DataType::Float64,
        };
        notes.note_type(&a.name, data_type);
    }
    notes
}

/// A variable's values as f64, refusing more than [`MAX_COORDINATE_VALUES`].
fn coordinate_values(file: &dyn ByteSource, header: &Header, var: &Variable) -> std::io::Result<Vec<f64>> {
    let count = var.shape.iter().product::<u64>();
    if count > MAX_COORDINATE_VALUES {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("`{}` has {count} values, more than vzarr's limit of {MAX_COORDINATE_VALUES} per file", var.name),
        ));
    }
    Ok(decode_f64(&stored_bytes(file, header, var)?, var.nc_type))
}

/// All of a variable's bytes (records gathered), as stored (big-endian). Callers bound the size.
fn stored_bytes(file: &dyn ByteSource, header: &Header, var: &Variable) -> std::io::Result<Vec<u8>> {
    let read = |offset: u64, length: u64| file.read_range(offset, length).map_err(std::io::Error::other);
    if !var.is_record {
        return Ok(read(var.begin, var.data_size)?.to_vec());
    }
    let mut buf = Vec::with_capacity((var.data_size * header.numrecs) as usize);
    for r in 0..header.numrecs {
        buf.extend_from_slice(&read(var.begin + r * header.record_size, var.data_size)?);
    }
    Ok(buf)
}

/// Digest of a small variable's stored bytes (the same scanner reads every file, so stored bytes
/// compare as well as values).
fn add_digest(file: &dyn ByteSource, header: &Header, var: &Variable, array: &mut VirtualArray, options: &ScanOptions) {
    if !wants_digest(options, array) {
        return;
    }
    if let Ok(bytes) = stored_bytes(file, header, var) {
        array.digest = Some(digest(&bytes));
    }
}

/// The coordinate variable of `dim` (same name, only that dimension), decoded to f64.
fn concat_coordinate(file: &dyn ByteSource, header: &Header, dim: &str) -> std::io::Result<Option<ConcatCoordinate>> {
    let find = |name: &str| header.variables.iter().find(|v| v.name == name);
    let Some(var) = find(dim).filter(|v| v.shape.len() == 1 && v.nc_type != NcType::Char) else { return Ok(None) };
    let text = |v: &Variable, name: &str| {
        v.attributes.iter().find(|a| a.name == name).and_then(|a| match &a.value {
            AttrValue::Text(t) => Some(String::from_utf8_lossy(t).trim_end_matches('\0').to_string()),
            _ => None,
        })
    };
    let values = coordinate_values(file, header, var)?;
    let bounds = match text(var, "bounds").and_then(|name| find(&name).map(|b| (name, b))) {
        Some((name, b)) => Some((name, coordinate_values(file, header, b)?.into())),
        None => None,
    };
    let (units, calendar) = (text(var, "units"), text(var, "calendar"));
    Ok(Some(ConcatCoordinate { dim: dim.to_string(), values: values.into(), units, calendar, bounds }))
}

/// Big-endian values of `t` as f64.
fn decode_f64(bytes: &[u8], t: NcType) -> Vec<f64> {
    let size = t.size() as usize;
    bytes
        .chunks_exact(size)
        .map(|b| {
            let mut raw = [0u8; 8];
            raw[8 - size..].copy_from_slice(b);
            let u = u64::from_be_bytes(raw);
            match t {
                NcType::Byte => f64::from(u as u8 as i8),
                NcType::Short => f64::from(u as u16 as i16),
                NcType::Int => f64::from(u as u32 as i32),
                NcType::Int64 => u as i64 as f64,
                NcType::Float => f64::from(f32::from_bits(u as u32)),
                NcType::Double => f64::from_bits(u),
                _ => u as f64,
            }
        })
        .collect()
}
