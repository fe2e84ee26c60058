//! Compounds with variable-length string or object reference members ([`TextCompound`]), read at
//! scan time and stored by the store: a `struct` array whose text fields are `fixed_length_utf32`,
//! in the source's chunk shape (cut to the array), chunks encoded with the `bytes` codec alone.
//!
//! Each string member's values are read from the global heap, each reference member's resolved to
//! the paths of the objects they name (`structure::Objects`); a field is as wide as its longest
//! value (at least one code point), as NumPy gives such values (`U<n>`). Positions past the HDF5
//! extent (a variable shorter than its unlimited dimension) hold zeros and empty strings.

use hdf5_reader::Dataset;

use super::element::{text, MemberKind, TextCompound};
use crate::codec::{CodecChain, Endian};
use crate::grid::ChunkGrid;
use crate::metadata::{DataType, StructField, StructType};
use crate::ndcopy::{copy_box, DimCopy};

/// Most elements one such variable may hold (each is read and converted at scan time).
const MAX_ELEMENTS: u64 = 1 << 24;
/// Most bytes the stored elements and their text may take (UTF-32 is four bytes a code point).
const MAX_BYTES: usize = 256 << 20;

/// Why a compound variable's values cannot be stored.
#[derive(Debug, thiserror::Error)]
pub(super) enum StructError {
    /// More elements than such a variable may hold.
    #[error("more than {MAX_ELEMENTS} elements")]
    TooMany,
    /// The HDF5 extent is larger than the netCDF shape.
    #[error("HDF5 extent {stored:?} does not fit netCDF shape {shape:?}")]
    Extent {
        /// The HDF5 extent.
        stored: Vec<u64>,
        /// The netCDF shape.
        shape: Vec<u64>,
    },
    /// More bytes of stored elements than vzarr reads.
    #[error("more than {MAX_BYTES} bytes of elements")]
    TooLarge,
    /// The elements could not be read.
    #[error("reading its elements: {0}")]
    Read(#[source] hdf5_reader::error::Error),
    /// Another number of bytes than the extent holds.
    #[error("{read} bytes read for {extent} elements of {size} bytes")]
    Count {
        /// Bytes read.
        read: usize,
        /// Elements of the extent.
        extent: u64,
        /// Bytes of one element.
        size: usize,
    },
    /// More bytes of packed elements than vzarr stores.
    #[error("more than {MAX_BYTES} bytes of stored elements")]
    TooLargeStored,
    /// More bytes of text than vzarr stores.
    #[error("more than {MAX_BYTES} bytes of text")]
    TooMuchText,
    /// A string member's descriptor ends past the compound.
    #[error("member {0}: its string descriptor ends past the compound")]
    Descriptor(String),
    /// A string member's value could not be read.
    #[error("member {name}: reading a string: {source}")]
    String {
        /// The member.
        name: String,
        /// The reader's error.
        source: hdf5_reader::error::Error,
    },
    /// A string member's value is not UTF-8.
    #[error("member {name}: a string {source}")]
    Utf8 {
        /// The member.
        name: String,
        /// Where the UTF-8 breaks.
        source: std::str::Utf8Error,
    },
    /// A reference member's references do not resolve.
    #[error("member {name}: {source}")]
    Resolve {
        /// The member.
        name: String,
        /// Why.
        source: super::structure::ReferenceError,
    },
    /// Another number of paths than references.
    #[error("member {name}: {count} references resolved")]
    Resolved {
        /// The member.
        name: String,
        /// Paths resolved.
        count: usize,
    },
    /// The struct type is refused.
    #[error("{0}")]
    Struct(#[source] crate::metadata::MetadataError),
    /// No chunk grid for the shape.
    #[error("{0}")]
    Grid(#[source] crate::grid::GridError),
    /// A chunk could not be encoded.
    #[error("{0}")]
    Encode(#[source] crate::codec::CodecError),
}

/// A compound variable as the store holds it.
pub(super) struct StoredStruct {
    /// The struct type (text members as `fixed_length_utf32`).
    pub(super) data_type: DataType,
    /// The chunk grid over the netCDF shape.
    pub(super) grid: ChunkGrid,
    /// `bytes` (little-endian) alone.
    pub(super) codecs: CodecChain,
    /// The encoded chunks, in row-major grid order (none for an empty array).
    pub(super) chunks: Vec<Vec<u8>>,
    /// The members holding object references (their fields hold paths).
    pub(super) reference_fields: Vec<String>,
}

/// Reads the values of `ds` (compound `compound`, netCDF shape `shape`) and stores them; `resolve`
/// gives the paths of a member's raw object references (`size` bytes each). The error says why the
/// values cannot be stored.
pub(super) fn stored_struct(
    ds: &Dataset,
    compound: &TextCompound,
    shape: &[u64],
    resolve: impl Fn(&[u8], u8) -> Result<Vec<String>, super::structure::ReferenceError>,
) -> Result<StoredStruct, StructError> {
    let stored = ds.shape().to_vec();
    let count = |s: &[u64]| s.iter().try_fold(1u64, |n, &d| n.checked_mul(d)).filter(|&n| n <= MAX_ELEMENTS);
    let (Some(total), Some(extent)) = (count(shape), count(&stored)) else {
        return Err(StructError::TooMany);
    };
    if stored.len() != shape.len() || stored.iter().zip(shape).any(|(s, n)| s > n) {
        return Err(StructError::Extent { stored, shape: shape.to_vec() });
    }
    let raw = match extent {
        0 => Vec::new(),
        n if n as usize * compound.size > MAX_BYTES => return Err(StructError::TooLarge),
        _ => ds.read_raw_bytes().map_err(StructError::Read)?,
    };
    if raw.len() as u64 != extent * compound.size as u64 {
        return Err(StructError::Count { read: raw.len(), extent, size: compound.size });
    }
    let texts = member_texts(ds, compound, &raw, resolve)?;
    let struct_type = struct_type(compound, &texts)?;
    let (data_type, size) = (DataType::Struct(struct_type), struct_type.size());
    if total as usize * size > MAX_BYTES {
        return Err(StructError::TooLargeStored);
    }
    let packed = pack(compound, &raw, &texts, struct_type);
    let chunk_shape: Vec<u64> = match ds.chunks() {
        Some(c) => c.iter().zip(shape).map(|(&c, &n)| u64::from(c).min(n).max(1)).collect(),
        None => shape.iter().map(|&n| n.max(1)).collect(),
    };
    let grid = ChunkGrid::regular(shape, &chunk_shape).map_err(StructError::Grid)?;
    let codecs = CodecChain::raw(Some(Endian::Little));
    let chunks = match total {
        0 => Vec::new(),
        _ => chunked(&packed, &stored, shape, &grid, size, &codecs, data_type)?,
    };
    let reference_fields = compound
        .members
        .iter()
        .filter(|m| matches!(m.kind, MemberKind::ObjectReference(_)))
        .map(|m| m.name.clone())
        .collect();
    Ok(StoredStruct { data_type, grid, codecs, chunks, reference_fields })
}

/// One text member's values, in element order, and the code points of the longest.
struct TextColumn {
    values: Vec<String>,
    widest: usize,
}

/// For each member, its values' text (None for copied members).
fn member_texts(
    ds: &Dataset,
    compound: &TextCompound,
    raw: &[u8],
    resolve: impl Fn(&[u8], u8) -> Result<Vec<String>, super::structure::ReferenceError>,
) -> Result<Vec<Option<TextColumn>>, StructError> {
    let elements = || raw.chunks_exact(compound.size.max(1));
    let count = raw.len() / compound.size.max(1);
    let descriptor = ds.vlen_reference_size();
    let mut bytes = 0usize;
    let mut texts = Vec::with_capacity(compound.members.len());
    for m in &compound.members {
        let values = match m.kind {
            MemberKind::Copied(_) => {
                texts.push(None);
                continue;
            }
            MemberKind::VlenString(padding) => {
                if m.offset + descriptor > compound.size {
                    return Err(StructError::Descriptor(m.name.clone()));
                }
                let mut values = Vec::with_capacity(count);
                for element in elements() {
                    let heap = ds
                        .resolve_vlen_reference_bytes(&element[m.offset..m.offset + descriptor], 1)
                        .map_err(|source| StructError::String { name: m.name.clone(), source })?;
                    let value =
                        text(&heap, padding).map_err(|source| StructError::Utf8 { name: m.name.clone(), source })?;
                    values.push(value.to_owned());
                }
                values
            }
            MemberKind::ObjectReference(n) => {
                let refs: Vec<u8> = elements().flat_map(|e| &e[m.offset..m.offset + usize::from(n)]).copied().collect();
                let values =
                    resolve(&refs, n).map_err(|source| StructError::Resolve { name: m.name.clone(), source })?;
                if values.len() != count {
                    return Err(StructError::Resolved { name: m.name.clone(), count: values.len() });
                }
                values
            }
        };
        let lengths = values.iter().map(|v| v.chars().count());
        let (total, widest) = lengths.fold((0, 0), |(total, widest), n| (total + n, widest.max(n)));
        bytes += 4 * total;
        if bytes > MAX_BYTES {
            return Err(StructError::TooMuchText);
        }
        texts.push(Some(TextColumn { values, widest }));
    }
    Ok(texts)
}

/// The struct of the members, each text member a UTF-32 field as wide as its longest value.
fn struct_type(compound: &TextCompound, texts: &[Option<TextColumn>]) -> Result<&'static StructType, StructError> {
    let fields = compound
        .members
        .iter()
        .zip(texts)
        .map(|(m, column)| {
            let data_type = match (&m.kind, column) {
                (MemberKind::Copied(member), _) => member.data_type,
                (_, column) => DataType::FixedUtf32(4 * column.as_ref().map_or(0, |c| c.widest).max(1) as u32),
            };
            StructField { name: m.name.clone(), data_type }
        })
        .collect();
    StructType::intern(fields).map_err(StructError::Struct)
}

/// The elements of `struct_type` (native byte order) of the stored elements `raw`.
fn pack(compound: &TextCompound, raw: &[u8], texts: &[Option<TextColumn>], struct_type: &StructType) -> Vec<u8> {
    let size = struct_type.size();
    let count = raw.len() / compound.size.max(1);
    let mut out = vec![0u8; count * size];
    for (i, (element, dst)) in raw.chunks_exact(compound.size.max(1)).zip(out.chunks_exact_mut(size)).enumerate() {
        for ((m, values), (at, field)) in compound.members.iter().zip(texts).zip(struct_type.offsets()) {
            let field_bytes = &mut dst[at..at + field.data_type.size()];
            match (&m.kind, values) {
                (MemberKind::Copied(member), _) => {
                    let mut to = 0;
                    for &(offset, len) in &member.runs {
                        field_bytes[to..to + len].copy_from_slice(&element[m.offset + offset..][..len]);
                        to += len;
                    }
                    if member.endian.is_some_and(|e| e != Endian::native()) {
                        member.data_type.byte_swap().apply(field_bytes);
                    }
                }
                (_, Some(column)) => {
                    for (unit, c) in field_bytes.chunks_exact_mut(4).zip(column.values[i].chars()) {
                        unit.copy_from_slice(&u32::from(c).to_ne_bytes());
                    }
                }
                (_, None) => {}
            }
        }
    }
    out
}

/// The encoded chunks of `grid` over the elements `packed` (HDF5 extent `stored`, netCDF `shape`).
fn chunked(
    packed: &[u8],
    stored: &[u64],
    shape: &[u64],
    grid: &ChunkGrid,
    size: usize,
    codecs: &CodecChain,
    data_type: DataType,
) -> Result<Vec<Vec<u8>>, StructError> {
    let mut chunks = Vec::with_capacity(grid.num_chunks() as usize);
    for linear in 0..grid.num_chunks() {
        let coords = grid.chunk_coords(linear);
        let edges = grid.chunk_shape(&coords);
        let dims: Vec<DimCopy> = (0..shape.len())
            .map(|d| {
                let start = grid.dims()[d].start(coords[d]);
                let count = stored[d].saturating_sub(start).min(edges[d]);
                DimCopy { src_start: start, src_step: 1, dst_start: 0, count }
            })
            .collect();
        let mut chunk = vec![0u8; edges.iter().product::<u64>() as usize * size];
        if dims.iter().all(|d| d.count > 0) {
            copy_box(packed, stored, &mut chunk, &edges, &dims, size);
        }
        chunks.push(codecs.encode(&chunk, data_type.byte_swap()).map_err(StructError::Encode)?);
    }
    Ok(chunks)
}
