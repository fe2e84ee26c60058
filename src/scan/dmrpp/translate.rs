//! One DMR++ variable as a Zarr array (input: a [`DmrVariable`]; output: a [`VirtualArray`] whose
//! chunks reference the data file), built as the HDF5 scanner builds the same dataset: the filter
//! pipeline through `scan/filters` (deflate, shuffle, fletcher32 in the listed order), contiguous
//! data as slabs (`scan/contiguous`), compact data and variable-length strings as store-owned chunks,
//! the fill value as `fillValue` gives it (zero when absent), `_FillValue` encoded for xarray, an
//! enum's members as CF flags, `_Encoding` on fixed-length strings.

use super::chunks::{chunk_table, ChunksInfo, Storage};
use super::elements::{element_info, is_char, ElementError, ElementInfo, Padding};
use super::heap_string::{heap_string, DESCRIPTOR};
use super::model::DmrVariable;
use super::special_struct::special_struct;
use super::string_kind::{string_kind, variable_length_members, StringKind};
use super::types::value_bytes;
use super::Context;
use crate::codec::{ByteSwap, Codec, CodecChain, Endian, Filter};
use crate::dataset::{ChunkTable, OwnedBytes, VirtualArray};
use crate::grid::ChunkGrid;
use crate::manifest::ChunkEntry;
use crate::metadata::{encode_fill_value_attribute, ArrayMetadata, DataType, FillValue};
use crate::scan::chars::{char_dim_stackable, folded_length, CharUse};
use crate::scan::contiguous::slab_layout;
use crate::scan::filters::{filter_stage, stored_codecs, FilterSpec};
use crate::scan::rewrite::ArrayCodecs;
use crate::scan::{chunk_table_for, ScanError, MAX_CHUNKS_PER_ARRAY};

/// A variable's grid, codecs and chunks.
struct Layout {
    grid: ChunkGrid,
    codecs: CodecChain,
    chunks: ChunkTable,
}

/// Why a variable was not translated: unsupported (a warning under `skip_unsupported`) or an error
/// of the sidecar (always an error).
pub(super) enum Refusal {
    Unsupported(crate::scan::BoxError),
    Error(ScanError),
}

/// What is wrong with a variable's storage, fill value or filters as the sidecar gives them.
#[derive(Debug, thiserror::Error)]
enum TranslateError {
    /// Its dimensions do not resolve.
    #[error("{0}")]
    Dims(#[from] super::model::DimError),
    /// Its storage does not parse.
    #[error("{0}")]
    Storage(#[from] super::chunks::ChunksError),
    /// Its data file cannot be used.
    #[error("{0}")]
    Files(#[from] super::files::FilesError),
    /// The fill value is refused.
    #[error("{0}")]
    FillValue(#[from] crate::metadata::MetadataError),
    /// A value that does not parse.
    #[error("{0}")]
    Value(#[from] super::types::ValueError),
    /// A structure fill value of another number of values than members.
    #[error("{values} values for a structure of {members} members")]
    StructValues {
        /// Values given.
        values: usize,
        /// Leaf members.
        members: usize,
    },
    /// A filter name vzarr does not know.
    #[error("unknown filter {0:?} in compressionType")]
    UnknownFilter(String),
    /// A filter with no Zarr codec vzarr describes it with.
    #[error("{0}")]
    Filter(crate::scan::filters::UnsupportedFilter),
    /// A filter that is no Zarr codec.
    #[error("filter {0} has no Zarr codec")]
    NoCodec(String),
    /// The codec chain is refused.
    #[error("{0}")]
    Codec(#[from] crate::codec::CodecError),
    /// No chunk grid for the shape.
    #[error("{0}")]
    Grid(#[from] crate::grid::GridError),
    /// A chunk shape of another rank than the shape.
    #[error("chunkDimensionSizes {chunk_shape:?} do not match shape {shape:?}")]
    ChunkShape {
        /// The chunk shape.
        chunk_shape: Vec<u64>,
        /// The shape.
        shape: Vec<u64>,
    },
    /// A shape of more slabs than vzarr references.
    #[error("shape {0:?} is too large to reference")]
    TooLarge(Vec<u64>),
    /// Several pieces of contiguous data.
    #[error("{0} pieces of data without chunkDimensionSizes (no chunk grid places them)")]
    Pieces(usize),
    /// Contiguous data of another size than the shape.
    #[error("contiguous storage of {length} bytes does not hold shape {shape:?}")]
    Contiguous {
        /// Bytes stored.
        length: u64,
        /// The shape.
        shape: Vec<u64>,
    },
    /// Compact data of another size than the shape.
    #[error("compact data of {length} bytes does not hold shape {shape:?}")]
    Compact {
        /// Bytes stored.
        length: usize,
        /// The shape.
        shape: Vec<u64>,
    },
    /// The strings cannot be stored.
    #[error("cannot store its strings: {0}")]
    Strings(#[source] crate::codec::CodecError),
}

impl From<ScanError> for Refusal {
    fn from(e: ScanError) -> Self {
        Refusal::Error(e)
    }
}

/// The array of `var`.
pub(super) fn translate(ctx: &mut Context<'_>, var: &DmrVariable<'_>) -> Result<VirtualArray, Refusal> {
    let invalid = |what: &str, why: TranslateError| Refusal::Error(ctx.variable_error(&var.path, what, why));
    let dims = var.dims.clone().map_err(|why| invalid("reading dimensions", why.into()))?;
    let shape: Vec<u64> = dims.iter().map(|(_, n)| *n).collect();
    let count = shape.iter().try_fold(1u64, |n, &d| n.checked_mul(d));
    let storage = super::chunks::storage(var.element, count).map_err(|why| invalid("reading storage", why.into()))?;
    if let Storage::Unsupported(why) = &storage {
        return Err(Refusal::Unsupported(why.clone().into()));
    }
    if let Storage::Structure(data) = &storage {
        return special_structure(ctx, var, dims, data);
    }
    let storage = read_blocks(ctx, var, count, storage)?;
    let storage = match heap_scalar(ctx, var, &shape, &storage)? {
        Some(text) => Storage::Strings(vec![text]),
        None => compact_variable_length(ctx, var, &shape, storage)?,
    };
    let invalid = |what: &str, why: TranslateError| Refusal::Error(ctx.variable_error(&var.path, what, why));
    let info = match element_info(var.element, &storage, ctx.enumerations) {
        // A fixed-length string whose length the sidecar leaves out: the data file's.
        Err(ElementError::NoLength) if var.element.name == "String" => match file_string_kind(ctx, var)? {
            Some(StringKind::Fixed(n)) => ElementInfo::plain(DataType::FixedBytes(n)),
            _ => return Err(Refusal::Unsupported(ElementError::NoLength.into())),
        },
        info => info.map_err(|e| Refusal::Unsupported(e.into()))?,
    };
    let mut storage = storage;
    let mut data_type = info.data_type;
    let mut dims = dims;
    let mut shape = shape;
    let mut fill = fill_value(&info, &storage, var).map_err(|why| invalid("reading the fill value", why))?;
    if let Some(length) = char_fold(ctx, var, &shape, &mut storage, data_type) {
        // netCDF `char` arrays: the last dimension is the string length, as the HDF5 scanner folds it.
        let first = fill.as_bytes().first().copied().unwrap_or(0);
        data_type = DataType::FixedBytes(length);
        fill = FillValue::from_bytes(data_type, vec![first; length as usize])
            .map_err(|e| invalid("reading the fill value", e.into()))?;
        shape.pop();
        dims.pop();
    }
    let (layout, rewritten) = match &info.padding {
        Some(padding) => repacked(ctx, &var.path, (&shape, data_type), &storage, padding, fill.as_bytes())?,
        None => (layout_of(ctx, &var.path, &shape, data_type, storage)?, 0),
    };
    let mut metadata = ArrayMetadata {
        data_type,
        chunk_grid: layout.grid,
        fill_value: fill,
        codecs: layout.codecs,
        dimension_names: Some(dims.into_iter().map(|(name, _)| name).collect()),
        attributes: var.attributes.clone(),
        notes: var.notes.clone(),
    };
    encode_fill_value_attribute(data_type, &mut metadata.attributes, &mut metadata.notes);
    if matches!(info.data_type, DataType::FixedBytes(n) if n > 1) && var.element.name == "String" {
        metadata.attributes.entry("_Encoding").or_insert_with(|| "utf-8".into());
    }
    if let Some(pad) = var.element.child("dmrpp:FixedLengthStringArray").and_then(|f| f.attr("pad")) {
        metadata.notes.string_pad = Some(pad.to_string());
    }
    if let Some(members) = info.enum_members {
        add_enum_flags(members, &mut metadata);
    }
    Ok(VirtualArray {
        path: var.path.clone(),
        metadata,
        chunks: layout.chunks,
        rewritten_chunks: rewritten,
        digest: None,
        tails: Vec::new(),
    })
}

/// The string of a scalar `String` whose one unfiltered piece of data is an HDF5 heap descriptor
/// (`dmrpp/heap_string`), read through the data file; None for any other variable. BES's
/// `unsupported-variable-length-string` fill marks such a descriptor: one that does not resolve is
/// then refused.
fn heap_scalar(
    ctx: &mut Context<'_>,
    var: &DmrVariable<'_>,
    shape: &[u64],
    storage: &Storage,
) -> Result<Option<String>, Refusal> {
    let Storage::Chunks(info @ ChunksInfo { chunk_shape: None, .. }) = storage else { return Ok(None) };
    let fixed = var.element.child("dmrpp:FixedLengthStringArray").is_some();
    let chunk = info.chunks.first().filter(|c| c.length == DESCRIPTOR && info.chunks.len() == 1);
    let (Some(chunk), true, false, true) = (chunk, shape.is_empty(), fixed, info.filters.is_empty()) else {
        return Ok(None);
    };
    if var.element.name != "String" {
        return Ok(None);
    }
    let marked = info.fill.as_deref() == Some("unsupported-variable-length-string");
    let invalid = |ctx: &Context<'_>, why: TranslateError| {
        Refusal::Error(ctx.variable_error(&var.path, "reading its heap descriptor", why))
    };
    let href = chunk.href.map(|h| info.chunks.hrefs()[h].as_str());
    let source = ctx.files.source_of(href).map_err(|why| invalid(ctx, why.into()))?;
    let descriptor = ctx.files.read(source, chunk.offset, DESCRIPTOR).map_err(|why| invalid(ctx, why.into()))?;
    let text = heap_string(&ctx.files, source, &descriptor).map_err(|why| invalid(ctx, why.into()))?;
    match (text, marked) {
        (Some(bytes), _) => match String::from_utf8(bytes) {
            Ok(text) => Ok(Some(text)),
            Err(_) => Err(Refusal::Unsupported("a variable-length string that is not UTF-8".into())),
        },
        (None, true) => {
            let why = "a variable-length string whose heap descriptor names no string of the data file";
            Err(Refusal::Unsupported(why.into()))
        }
        (None, false) => Ok(None),
    }
}

/// Linked blocks that are not adjacent ([`Storage::Blocks`]) read from the data file, in order, as
/// the array's data held in the store (at most 16 bytes for each of its `count` elements before
/// anything is read); any other storage unchanged.
fn read_blocks(
    ctx: &Context<'_>,
    var: &DmrVariable<'_>,
    count: Option<u64>,
    storage: Storage,
) -> Result<Storage, Refusal> {
    let Storage::Blocks(info, blocks) = storage else { return Ok(storage) };
    let total = blocks.iter().try_fold(0u64, |n, &(_, length)| n.checked_add(length));
    let most = count.and_then(|c| c.checked_mul(16));
    let invalid = |why: TranslateError| Refusal::Error(ctx.variable_error(&var.path, "reading linked blocks", why));
    let Some(total) = total.filter(|&t| most.is_some_and(|m| t <= m)) else {
        let shape = var.dims.as_ref().map(|d| d.iter().map(|(_, n)| *n).collect()).unwrap_or_default();
        return Err(invalid(TranslateError::Compact { length: total.unwrap_or(u64::MAX) as usize, shape }));
    };
    let mut bytes = Vec::with_capacity(total as usize);
    for (offset, length) in blocks {
        bytes.extend(ctx.files.read(0, offset, length).map_err(|why| invalid(why.into()))?);
    }
    Ok(Storage::Inline(info, bytes))
}

/// The datatype of `var`'s dataset in the sidecar's data file (source 0, opened by the HDF5 reader
/// once for the scan), under its HDF5 path; None when that is no HDF5 dataset.
fn file_datatype(ctx: &Context<'_>, var: &DmrVariable<'_>) -> Result<Option<hdf5_reader::Datatype>, Refusal> {
    let invalid =
        |why| Refusal::Error(ctx.variable_error(&var.path, "reading its datatype", TranslateError::from(why)));
    let Some(file) = ctx.files.hdf5(0).map_err(invalid)? else { return Ok(None) };
    let path = var.notes.source_path.as_deref().unwrap_or(&var.path);
    Ok(file.dataset(path).ok().map(|dataset| dataset.dtype().clone()))
}

/// The string kind of `var`'s dataset in the sidecar's data file ([`file_datatype`]).
fn file_string_kind(ctx: &Context<'_>, var: &DmrVariable<'_>) -> Result<Option<StringKind>, Refusal> {
    Ok(file_datatype(ctx, var)?.as_ref().and_then(string_kind))
}

/// A scalar `String` held as compact text under `<dmrpp:chunks>`, which BES writes for fixed- and
/// variable-length strings alike: as one string when the data file's dataset holds variable-length
/// strings, else `storage` unchanged (fixed-length bytes of the text's length).
fn compact_variable_length(
    ctx: &Context<'_>,
    var: &DmrVariable<'_>,
    shape: &[u64],
    storage: Storage,
) -> Result<Storage, Refusal> {
    let fixed = var.element.child("dmrpp:FixedLengthStringArray").is_some();
    let ambiguous = var.element.name == "String" && shape.is_empty() && !fixed;
    if !matches!(storage, Storage::Inline(..)) || !ambiguous || var.element.child("dmrpp:chunks").is_none() {
        return Ok(storage);
    }
    if file_string_kind(ctx, var)? != Some(StringKind::Variable) {
        return Ok(storage);
    }
    let Storage::Inline(_, bytes) = storage else { return Ok(storage) };
    match String::from_utf8(bytes) {
        Ok(text) => Ok(Storage::Strings(vec![text])),
        Err(_) => Err(Refusal::Unsupported("a variable-length string that is not UTF-8".into())),
    }
}

/// A structure with string members whose elements the sidecar holds (`dmrpp:specialstructuredata`),
/// as one store-owned chunk of the whole shape, typed as the HDF5 scanner types the compound
/// (`dmrpp/special_struct`); its fill value is zero, as HDF5's default.
fn special_structure(
    ctx: &mut Context<'_>,
    var: &DmrVariable<'_>,
    dims: Vec<(String, u64)>,
    data: &[u8],
) -> Result<VirtualArray, Refusal> {
    let shape: Vec<u64> = dims.iter().map(|(_, n)| *n).collect();
    let count = shape.iter().try_fold(1u64, |n, &d| n.checked_mul(d)).unwrap_or(u64::MAX);
    // The sidecar does not say which string members are variable-length; the data file does.
    let variable = file_datatype(ctx, var)?.as_ref().map(variable_length_members).unwrap_or_default();
    let stored = special_struct(var.element, data, count, &variable).map_err(|e| Refusal::Unsupported(e.into()))?;
    let endian = endian(stored.data_type, &ChunksInfo { byte_order: Some(Endian::Little), ..ChunksInfo::default() });
    let layout = compact(ctx, &var.path, &shape, stored.data_type, endian, stored.bytes)?;
    let mut metadata = ArrayMetadata {
        data_type: stored.data_type,
        chunk_grid: layout.grid,
        fill_value: FillValue::zero(stored.data_type),
        codecs: layout.codecs,
        dimension_names: Some(dims.into_iter().map(|(name, _)| name).collect()),
        attributes: var.attributes.clone(),
        notes: var.notes.clone(),
    };
    encode_fill_value_attribute(stored.data_type, &mut metadata.attributes, &mut metadata.notes);
    Ok(VirtualArray {
        path: var.path.clone(),
        metadata,
        chunks: layout.chunks,
        rewritten_chunks: 0,
        digest: None,
        tails: Vec::new(),
    })
}

/// A structure with padding, as the HDF5 scanner stores it (`scan/hdf5/repacked`): its stored
/// elements read from the data file (or the sidecar's compact data), packed ([`Padding`]) and held as
/// store-owned chunks of the packed struct. Returns the layout and the number of chunks rewritten.
fn repacked(
    ctx: &mut Context<'_>,
    var: &str,
    array: (&[u64], DataType),
    storage: &Storage,
    padding: &Padding,
    fill: &[u8],
) -> Result<(Layout, u64), Refusal> {
    match storage {
        Storage::Chunks(info @ ChunksInfo { chunk_shape: Some(chunk_shape), .. }) => {
            repacked_chunked(ctx, var, array, info, chunk_shape, padding, fill)
        }
        // Filtered data in one piece (as `contiguous` reads it): one chunk of the whole shape.
        Storage::Chunks(info) if !info.filters.is_empty() => {
            let whole: Vec<u64> = array.0.iter().map(|&n| n.max(1)).collect();
            repacked_chunked(ctx, var, array, info, &whole, padding, fill)
        }
        Storage::Chunks(info) => repacked_contiguous(ctx, var, array, info, padding),
        Storage::Inline(info, bytes) => repacked_compact(ctx, var, array, info, bytes, padding),
        _ => Err(Refusal::Unsupported("a structure with padding stored neither in chunks nor compact".into())),
    }
}

/// A padded structure stored in chunks of `chunk_shape`: every chunk the sidecar lists is read from
/// the data file, decoded with the sidecar's filters over the stored elements, its elements packed
/// and encoded with the packed struct's chain, as a store-owned chunk; chunks not listed stay missing
/// (the fill value).
fn repacked_chunked(
    ctx: &mut Context<'_>,
    var: &str,
    (shape, data_type): (&[u64], DataType),
    info: &ChunksInfo,
    chunk_shape: &[u64],
    padding: &Padding,
    fill: &[u8],
) -> Result<(Layout, u64), Refusal> {
    let invalid =
        |ctx: &Context<'_>, what: &str, why: TranslateError| Refusal::Error(ctx.variable_error(var, what, why));
    if chunk_shape.len() != shape.len() {
        let why = TranslateError::ChunkShape { chunk_shape: chunk_shape.to_vec(), shape: shape.to_vec() };
        return Err(invalid(ctx, "reading storage", why));
    }
    let stages = |size: usize| filter_stages(info, size).map_err(|e| Refusal::Unsupported(e.into()));
    let bytes = Codec::Bytes { endian: endian(data_type, info) };
    let chain = |stages: &[Filter]| CodecChain::new([vec![bytes.clone()], stored_codecs(stages)].concat());
    let (stored_stages, packed_stages) = (stages(padding.stored_size)?, stages(data_type.size())?);
    let source = ArrayCodecs {
        bytes: bytes.clone(),
        full: chain(&stored_stages).map_err(|e| invalid(ctx, "building codecs", e.into()))?,
        filters: stored_stages,
        element_size: padding.stored_size,
        swap: ByteSwap::Unit(1),
    };
    let packed = ArrayCodecs {
        bytes: bytes.clone(),
        full: chain(&packed_stages).map_err(|e| invalid(ctx, "building codecs", e.into()))?,
        filters: packed_stages,
        element_size: data_type.size(),
        swap: data_type.byte_swap(),
    };
    let grid = ChunkGrid::regular(shape, chunk_shape).map_err(|e| invalid(ctx, "chunk grid", e.into()))?;
    let table = chunk_table_for(ctx.path, var, &grid)?;
    let mut source_of = |href: Option<&str>| ctx.files.source_of(href);
    let listed = chunk_table(&grid, chunk_shape, table, &info.chunks, &mut source_of)
        .map_err(|why| invalid(ctx, "locating chunks", why.into()))?;
    let mut chunks = chunk_table_for(ctx.path, var, &grid)?.owned_in(&ctx.options.owned_budget);
    let mut rewritten = 0;
    for (linear, entry) in listed.iter().enumerate() {
        let ChunkEntry::Source { source: file, offset, length } = entry else { continue };
        let raw = ctx.files.read(file, offset, length).map_err(|why| invalid(ctx, "reading a chunk", why.into()))?;
        let coords = grid.chunk_coords(linear as u64);
        let valid: Vec<u64> =
            coords.iter().zip(chunk_shape).zip(shape).map(|((c, n), s)| (*n).min(s.saturating_sub(c * n))).collect();
        let pack = |stored: &[u8]| padding.pack(stored);
        let owned = source
            .repack(&raw, 0, chunk_shape, &valid, fill, &pack, &packed)
            .map_err(|e| invalid(ctx, &format!("repacking chunk {linear}"), TranslateError::Codec(e)))?;
        let entry = chunks.push_owned(&owned).map_err(|e| ctx.owned_error(var, e))?;
        chunks.set(linear, entry);
        rewritten += 1;
    }
    Ok((Layout { grid, codecs: packed.full, chunks }, rewritten))
}

/// A padded structure stored in one unfiltered piece, as the HDF5 scanner stores it: slabs of packed
/// elements along the first dimension (at most `max_slab_bytes` each), each slab's stored elements
/// read from the data file and packed into a store-owned chunk. Without a piece (never written)
/// every slab is missing (the fill value).
fn repacked_contiguous(
    ctx: &mut Context<'_>,
    var: &str,
    (shape, data_type): (&[u64], DataType),
    info: &ChunksInfo,
    padding: &Padding,
) -> Result<(Layout, u64), Refusal> {
    let invalid =
        |ctx: &Context<'_>, what: &str, why: TranslateError| Refusal::Error(ctx.variable_error(var, what, why));
    let (stored_size, packed_size) = (padding.stored_size as u64, (data_type.size() as u64).max(1));
    let expected = shape.iter().try_fold(stored_size, |n, &d| n.checked_mul(d));
    let packed_bytes = shape.iter().try_fold(packed_size, |n, &d| n.checked_mul(d));
    let slabs = packed_bytes.map(|p| p / ctx.options.max_slab_bytes.max(1));
    let Some(expected) = expected.filter(|_| slabs.is_some_and(|s| s < MAX_CHUNKS_PER_ARRAY)) else {
        return Err(invalid(ctx, "reading storage", TranslateError::TooLarge(shape.to_vec())));
    };
    if info.chunks.len() > 1 {
        return Err(invalid(ctx, "reading storage", TranslateError::Pieces(info.chunks.len())));
    }
    let (grid, entries) = slab_layout(shape, packed_size, 0, 0, ctx.options.max_slab_bytes)
        .map_err(|e| invalid(ctx, "chunk grid", e.into()))?;
    let codecs = CodecChain::raw(endian(data_type, info));
    let mut chunks = ChunkTable::missing(entries.len()).owned_in(&ctx.options.owned_budget);
    let Some(piece) = info.chunks.first() else { return Ok((Layout { grid, codecs, chunks }, 0)) };
    if piece.length != expected {
        let why = TranslateError::Contiguous { length: piece.length, shape: shape.to_vec() };
        return Err(invalid(ctx, "reading storage", why));
    }
    let href = piece.href.map(|h| info.chunks.hrefs()[h].as_str());
    let source = ctx.files.source_of(href).map_err(|why| invalid(ctx, "locating chunks", why.into()))?;
    let mut rewritten = 0;
    for (linear, slab) in entries.iter().enumerate() {
        let ChunkEntry::Source { offset, length, .. } = *slab else { continue };
        let (first, count) = (offset / packed_size, length / packed_size);
        let raw = ctx
            .files
            .read(source, piece.offset + first * stored_size, count * stored_size)
            .map_err(|why| invalid(ctx, "reading storage", why.into()))?;
        let entry = chunks.push_owned(&padding.pack(&raw)).map_err(|e| ctx.owned_error(var, e))?;
        chunks.set(linear, entry);
        rewritten += 1;
    }
    Ok((Layout { grid, codecs, chunks }, rewritten))
}

/// A padded structure stored compact (its stored elements in the sidecar): the packed elements as
/// one store-owned chunk of the whole shape, as [`compact`] stores a packed one.
fn repacked_compact(
    ctx: &mut Context<'_>,
    var: &str,
    (shape, data_type): (&[u64], DataType),
    info: &ChunksInfo,
    bytes: &[u8],
    padding: &Padding,
) -> Result<(Layout, u64), Refusal> {
    let expected = shape.iter().try_fold(padding.stored_size as u64, |n, &d| n.checked_mul(d));
    if expected != Some(bytes.len() as u64) {
        let why = TranslateError::Compact { length: bytes.len(), shape: shape.to_vec() };
        return Err(Refusal::Error(ctx.variable_error(var, "reading storage", why)));
    }
    let layout = compact(ctx, var, shape, data_type, endian(data_type, info), padding.pack(bytes))?;
    let rewritten = u64::from(layout.grid.num_chunks() == 1);
    Ok((layout, rewritten))
}

/// The grid, codecs and chunks of a variable of `shape` and `data_type` stored as `storage`.
fn layout_of(
    ctx: &mut Context<'_>,
    var: &str,
    shape: &[u64],
    data_type: DataType,
    storage: Storage,
) -> Result<Layout, Refusal> {
    Ok(match storage {
        Storage::Strings(strings) => owned_strings(ctx, var, shape, &strings)?,
        Storage::Inline(_, bytes) if data_type == DataType::String => {
            owned_strings(ctx, var, shape, &[String::from_utf8_lossy(&bytes).into_owned()])?
        }
        Storage::Inline(chunks, bytes) => compact(ctx, var, shape, data_type, endian(data_type, &chunks), bytes)?,
        Storage::Chunks(chunks) => match &chunks.chunk_shape {
            Some(chunk_shape) => chunked(ctx, var, shape, data_type, &chunks, chunk_shape)?,
            None => contiguous(ctx, var, shape, data_type, &chunks)?,
        },
        Storage::Unsupported(why) => return Err(Refusal::Unsupported(why.into())),
        // `translate` stores these with `special_structure` before any layout is asked for.
        Storage::Structure(_) => return Err(Refusal::Unsupported("a structure with string members".into())),
        // `translate` reads these into inline data first.
        Storage::Blocks(..) => return Err(Refusal::Unsupported("linked blocks not read".into())),
    })
}

/// An enum's members as CF flags and notes, as `scan/hdf5/owned::add_enum_flags` gives them.
fn add_enum_flags(members: Vec<(String, serde_json::Value)>, metadata: &mut ArrayMetadata) {
    let attributes = &mut metadata.attributes;
    if attributes.contains_key("flag_values") || attributes.contains_key("flag_meanings") {
        return;
    }
    let names: Vec<String> = members.iter().map(|(m, _)| m.split_whitespace().collect::<Vec<_>>().join("_")).collect();
    let values: Vec<serde_json::Value> = members.iter().map(|(_, v)| v.clone()).collect();
    metadata.notes.enum_members = Some(members.into_iter().collect());
    attributes.insert("flag_values".into(), serde_json::Value::Array(values));
    attributes.insert("flag_meanings".into(), serde_json::Value::from(names.join(" ")));
}

/// The `bytes` codec's byte order: `byteOrder` (little-endian when absent) for multi-byte elements.
fn endian(data_type: DataType, info: &ChunksInfo) -> Option<Endian> {
    let multi = match data_type {
        DataType::Struct(s) => s.has_multi_byte_fields(),
        DataType::FixedBytes(_) | DataType::RawBytes(_) | DataType::String => false,
        t => t.size() > 1,
    };
    multi.then(|| info.byte_order.unwrap_or(Endian::Little))
}

/// The string length a netCDF `char` array (one-byte strings) folds its last dimension into, when
/// the HDF5 scanner would fold it: the whole dimension in every chunk, and xarray's stacking rule
/// (`scan/chars`) among the variables of its group. The storage then loses that dimension too.
fn char_fold(
    ctx: &Context<'_>,
    var: &DmrVariable<'_>,
    shape: &[u64],
    storage: &mut Storage,
    data_type: DataType,
) -> Option<u32> {
    let length = *shape.last()?;
    let whole_rows = match storage {
        Storage::Chunks(info) => info.chunk_shape.as_ref().is_none_or(|c| c.last() == Some(&length)),
        Storage::Inline(..) => true,
        _ => false,
    };
    if data_type != DataType::FixedBytes(1) || !whole_rows || !stackable_last(ctx, var) {
        return None;
    }
    let length = folded_length(length)?;
    if let Storage::Chunks(info) = storage {
        if let Some(chunk_shape) = &mut info.chunk_shape {
            chunk_shape.pop();
        }
        // The last coordinate of a whole-row chunk's origin is 0; anything else fails the checks.
        info.chunks.drop_last_zero_coordinate();
    }
    Some(length)
}

/// Whether xarray stacks the last dimension of `var` (a char array) into strings, judged among the
/// variables of its group.
fn stackable_last(ctx: &Context<'_>, var: &DmrVariable<'_>) -> bool {
    let parent = |path: &str| path.rsplit_once('/').map_or("", |(g, _)| g).to_string();
    let group = parent(&var.path);
    let uses: Vec<CharUse<'_>> = ctx
        .variables
        .iter()
        .filter(|v| parent(&v.path) == group)
        .map(|v| CharUse {
            name: v.path.rsplit('/').next().unwrap_or_default(),
            dims: v.dims.as_ref().map(|d| d.iter().map(|(n, _)| n.as_str()).collect()).unwrap_or_default(),
            is_char: is_char(v.element),
        })
        .collect();
    let last = var.dims.as_ref().ok().and_then(|d| d.last());
    last.is_some_and(|(dim, _)| char_dim_stackable(dim, &uses))
}

/// The fill value `fillValue` gives (a struct's: one value per leaf, blank-separated), else the
/// `_FillValue` attribute's; when both are absent, the SD interface's default for an HDF4 data set (BES marks those with `dmr_sds_ref`), else zero;
/// for strings, BES's `unsupported-string` is zero.
fn fill_value(info: &ElementInfo, storage: &Storage, var: &DmrVariable<'_>) -> Result<FillValue, TranslateError> {
    let data_type = info.data_type;
    let text = match storage {
        Storage::Chunks(c) | Storage::Inline(c, _) => c.fill.as_deref(),
        _ => None,
    };
    // Without `fillValue`, a `_FillValue` attribute (netCDF writes both from one value) says it.
    let attribute = var.element.children_named("Attribute").find(|a| a.attr("name") == Some("_FillValue"));
    let attribute = attribute.and_then(|a| a.child("Value")).map(|v| v.text.as_str());
    let text = text.or(attribute.filter(|_| !matches!(data_type, DataType::String | DataType::Struct(_))));
    let Some(text) = text.filter(|t| !t.trim().is_empty()) else {
        let hdf4 = var.element.children_named("Attribute").any(|a| a.attr("name") == Some("dmr_sds_ref"));
        if hdf4 && !matches!(data_type, DataType::String | DataType::Struct(_)) {
            return Ok(FillValue::from_bytes(data_type, crate::scan::hdf4::sd_default_fill(data_type))?);
        }
        return Ok(FillValue::zero(data_type));
    };
    let bytes = match data_type {
        DataType::String => return Ok(FillValue::zero(data_type)),
        DataType::FixedBytes(_) if text == "unsupported-string" => return Ok(FillValue::zero(data_type)),
        DataType::Struct(_) => {
            let values: Vec<&str> = text.split_whitespace().collect();
            if values.len() == 1 && values[0].parse::<f64>().is_ok_and(|v| v == 0.0) {
                return Ok(FillValue::zero(data_type));
            }
            if values.len() != info.leaves.len() {
                return Err(TranslateError::StructValues { values: values.len(), members: info.leaves.len() });
            }
            let mut bytes = Vec::with_capacity(data_type.size());
            for (leaf, value) in info.leaves.iter().zip(values) {
                bytes.extend(value_bytes(*leaf, value)?);
            }
            bytes
        }
        t => value_bytes(t, text)?,
    };
    Ok(FillValue::from_bytes(data_type, bytes)?)
}

/// The codecs of the filter list: `bytes`, then each filter's codec in pipeline order.
fn codecs(info: &ChunksInfo, data_type: DataType, type_size: usize) -> Result<CodecChain, TranslateError> {
    let filters = filter_stages(info, type_size)?;
    let bytes = Codec::Bytes { endian: endian(data_type, info) };
    Ok(CodecChain::new([vec![bytes], stored_codecs(&filters)].concat())?)
}

/// The sidecar's filters as codec stages over elements of `type_size` bytes.
fn filter_stages(info: &ChunksInfo, type_size: usize) -> Result<Vec<Filter>, TranslateError> {
    let mut filters = Vec::with_capacity(info.filters.len());
    for name in &info.filters {
        let level = info.deflate_level.map(|l| vec![l]).unwrap_or_default();
        let (id, cd_values) = match name.as_str() {
            "deflate" => (1, level),
            "shuffle" => (2, Vec::new()),
            "fletcher32" => (3, Vec::new()),
            other => return Err(TranslateError::UnknownFilter(other.to_string())),
        };
        let spec = FilterSpec { id, name, cd_values: &cd_values };
        match filter_stage(&spec, type_size).map_err(TranslateError::Filter)? {
            stage @ Filter::Codec(_) => filters.push(stage),
            Filter::Source(_) => return Err(TranslateError::NoCodec(name.clone())),
        }
    }
    Ok(filters)
}

fn chunked(
    ctx: &mut Context<'_>,
    var: &str,
    shape: &[u64],
    data_type: DataType,
    info: &ChunksInfo,
    chunk_shape: &[u64],
) -> Result<Layout, Refusal> {
    let invalid =
        |ctx: &Context<'_>, what: &str, why: TranslateError| Refusal::Error(ctx.variable_error(var, what, why));
    if chunk_shape.len() != shape.len() {
        let why = TranslateError::ChunkShape { chunk_shape: chunk_shape.to_vec(), shape: shape.to_vec() };
        return Err(invalid(ctx, "reading storage", why));
    }
    let codecs = codecs(info, data_type, data_type.size()).map_err(|e| Refusal::Unsupported(e.into()))?;
    let grid = ChunkGrid::regular(shape, chunk_shape).map_err(|e| invalid(ctx, "chunk grid", e.into()))?;
    let table = chunk_table_for(ctx.path, var, &grid)?;
    let mut source_of = |href: Option<&str>| ctx.files.source_of(href);
    let chunks = chunk_table(&grid, chunk_shape, table, &info.chunks, &mut source_of)
        .map_err(|why| invalid(ctx, "locating chunks", why.into()))?;
    Ok(Layout { grid, codecs, chunks })
}

/// Data stored in one piece: uncompressed as slabs, as the HDF5 scanner references contiguous
/// storage; with filters (an HDF4 compressed data set) as one chunk of the whole shape.
fn contiguous(
    ctx: &mut Context<'_>,
    var: &str,
    shape: &[u64],
    data_type: DataType,
    info: &ChunksInfo,
) -> Result<Layout, Refusal> {
    let invalid =
        |ctx: &Context<'_>, what: &str, why: TranslateError| Refusal::Error(ctx.variable_error(var, what, why));
    let size = data_type.size() as u64;
    let expected = shape.iter().try_fold(size, |n, &d| n.checked_mul(d));
    let slabs = expected.map(|e| e / ctx.options.max_slab_bytes.max(1));
    let Some(expected) = expected.filter(|_| slabs.is_some_and(|s| s < MAX_CHUNKS_PER_ARRAY)) else {
        return Err(invalid(ctx, "reading storage", TranslateError::TooLarge(shape.to_vec())));
    };
    if info.chunks.len() > 1 {
        return Err(invalid(ctx, "reading storage", TranslateError::Pieces(info.chunks.len())));
    }
    if !info.filters.is_empty() {
        let codecs = codecs(info, data_type, data_type.size()).map_err(|e| Refusal::Unsupported(e.into()))?;
        let whole: Vec<u64> = shape.iter().map(|&n| n.max(1)).collect();
        let grid = ChunkGrid::regular(shape, &whole).map_err(|e| invalid(ctx, "chunk grid", e.into()))?;
        let table = ChunkTable::missing(grid.num_chunks() as usize).owned_in(&ctx.options.owned_budget);
        let mut source_of = |href: Option<&str>| ctx.files.source_of(href);
        let chunks = chunk_table(&grid, &whole, table, &info.chunks, &mut source_of)
            .map_err(|why| invalid(ctx, "locating chunks", why.into()))?;
        return Ok(Layout { grid, codecs, chunks });
    }
    let chunk = info.chunks.first();
    if let Some(c) = chunk.filter(|c| c.length != expected) {
        let why = TranslateError::Contiguous { length: c.length, shape: shape.to_vec() };
        return Err(invalid(ctx, "reading storage", why));
    }
    let source = match chunk {
        Some(c) => {
            let href = c.href.map(|h| info.chunks.hrefs()[h].as_str());
            ctx.files.source_of(href).map_err(|why| invalid(ctx, "locating chunks", why.into()))?
        }
        None => 0,
    };
    let address = chunk.map_or(0, |c| c.offset);
    let (grid, entries) = slab_layout(shape, size, address, source, ctx.options.max_slab_bytes)
        .map_err(|e| invalid(ctx, "chunk grid", e.into()))?;
    let chunks = match chunk {
        Some(_) => ChunkTable::from_entries(entries, OwnedBytes::with_budget(&ctx.options.owned_budget)),
        None => ChunkTable::missing(entries.len()).owned_in(&ctx.options.owned_budget),
    };
    Ok(Layout { grid, codecs: CodecChain::raw(endian(data_type, info)), chunks })
}

/// Compact data (in the sidecar) as one store-owned chunk of the whole shape.
fn compact(
    ctx: &mut Context<'_>,
    var: &str,
    shape: &[u64],
    data_type: DataType,
    endian: Option<Endian>,
    bytes: Vec<u8>,
) -> Result<Layout, Refusal> {
    let whole: Vec<u64> = shape.iter().map(|&n| n.max(1)).collect();
    let grid =
        ChunkGrid::regular(shape, &whole).map_err(|e| Refusal::Error(ctx.variable_error(var, "chunk grid", e)))?;
    let mut chunks = ChunkTable::missing(grid.num_chunks() as usize).owned_in(&ctx.options.owned_budget);
    let expected = shape.iter().try_fold(data_type.size() as u64, |n, &d| n.checked_mul(d));
    if expected != Some(bytes.len() as u64) {
        let why = TranslateError::Compact { length: bytes.len(), shape: shape.to_vec() };
        return Err(Refusal::Error(ctx.variable_error(var, "reading storage", why)));
    }
    if grid.num_chunks() == 1 {
        let entry = chunks.push_owned(&bytes).map_err(|e| ctx.owned_error(var, e))?;
        chunks.set(0, entry);
    }
    Ok(Layout { grid, codecs: CodecChain::raw(endian), chunks })
}

/// Variable-length strings as one store-owned chunk of `string` (`vlen-utf8`).
fn owned_strings(ctx: &mut Context<'_>, var: &str, shape: &[u64], strings: &[String]) -> Result<Layout, Refusal> {
    let whole: Vec<u64> = shape.iter().map(|&n| n.max(1)).collect();
    let grid =
        ChunkGrid::regular(shape, &whole).map_err(|e| Refusal::Error(ctx.variable_error(var, "chunk grid", e)))?;
    let codecs = CodecChain::vlen_utf8();
    let mut chunks = ChunkTable::default().owned_in(&ctx.options.owned_budget);
    if !strings.is_empty() {
        let encoded =
            codecs.encode_strings(strings).map_err(|e| Refusal::Unsupported(TranslateError::Strings(e).into()))?;
        let entry = chunks.push_owned(&encoded).map_err(|e| ctx.owned_error(var, e))?;
        chunks.push(entry);
    }
    Ok(Layout { grid, codecs, chunks })
}
