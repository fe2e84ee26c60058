//! One array of a scanned file as a DMR++ variable element: its DAP4 type, dimensions, attributes and
//! storage (`dmrpp:chunks`, or `dmrpp:compact`), as BES's `get_dmrpp` writes them.
//!
//! Storage is the file's own, recovered from the scan:
//! - chunked: `chunkDimensionSizes` (the regular chunk shape) and one `dmrpp:chunk` per chunk the
//!   file holds, in chunk index order, `chunkPositionInArray` the chunk's origin in elements;
//! - contiguous: one `dmrpp:chunk` without a position. The scan cuts contiguous data into row slabs
//!   (`scan/contiguous`); an unfiltered array whose chunks are full-width slabs laid end to end,
//!   covering exactly the array's bytes, is written back as the one block it is (unless the scan
//!   notes the file stores it chunked: its chunks are then listed, as BES lists them).
//! - compact: the one store-owned chunk of an unfiltered array, base64 in `dmrpp:compact`.
//!
//! What DMR++ cannot reference is refused with the reason (the caller leaves the variable out with a
//! warning): chunks vzarr re-encoded (a filter without a Zarr codec, or skipped filters), filters
//! other than shuffle, deflate and fletcher32, a rectilinear grid that is not contiguous storage, and
//! types without a DAP4 atomic form here (strings, structs, booleans, complex, float16, opaque).

use std::fmt::Write as _;

use super::attributes::{attributes_xml, escape};
use super::special_struct::special_xml;
use super::types::{fixed_fill_text, members_xml, number_text, strings_xml, struct_fill_text, Kind, TypeError};
use crate::codec::{Codec, Endian};
use crate::dataset::VirtualArray;
use crate::manifest::ChunkEntry;
use crate::metadata::{DataType, SourceChunks, SourceLayout, SourceStorage};

/// How each dimension of a variable is written: `<Dim name="/fqn"/>` or `<Dim size="n"/>`.
pub(super) type DimRefs = Vec<Option<String>>;

/// Why an array has no DMR++ form ([`variable_xml`]).
#[derive(Debug, thiserror::Error)]
pub(super) enum VariableError {
    /// A data type with no DMR++ form here.
    #[error("{0}")]
    Type(#[from] TypeError),
    /// Chunks vzarr re-encoded.
    #[error("some chunks are vzarr's re-encoded copies, not bytes of the file")]
    Rewritten,
    /// A single chunk vzarr re-encoded.
    #[error("its one chunk is a re-encoded copy, not bytes of the file")]
    RewrittenCompact,
    /// The compact chunk's bytes could not be read back.
    #[error("{0}")]
    Owned(#[source] crate::dataset::OwnedBytesError),
    /// Chunks in a file an HDF5 external link names.
    #[error("its chunks lie in another file (an HDF5 external link)")]
    OtherFile,
    /// Chunks vzarr holds.
    #[error("some chunks are held by vzarr, not the file")]
    HeldByVzarr,
    /// A rectilinear chunk grid.
    #[error("its chunk grid is rectilinear, which a file's own chunks never are")]
    Rectilinear,
    /// A codec DMR++ has no name for.
    #[error("the {codec} codec has no DMR++ compressionType")]
    Codec {
        /// The codec's name.
        codec: &'static str,
    },
}

/// The variable element of `array` (its last path segment as the name), indented by `indent`,
/// preceded by the `<Enumeration>` an enum declares; `special` holds the decoded elements of a
/// structure with string members (written as `dmrpp:specialstructuredata`).
///
/// # Errors
/// [`VariableError`]: why the array has no DMR++ form.
pub(super) fn variable_xml(
    array: &VirtualArray,
    dims: &DimRefs,
    special: Option<&[u8]>,
    indent: &str,
) -> Result<String, VariableError> {
    let metadata = &array.metadata;
    let kind = Kind::of(array)?;
    let inner = format!("{indent}    ");
    let (members, storage) = match (&kind, special) {
        (Kind::Struct(fields), Some(values)) => special_xml(metadata.notes.compound.as_ref(), fields, values, &inner)?,
        (Kind::Struct(fields), None) => (members_xml(array, fields, &inner)?, storage_xml(array, &kind, &inner)?),
        (Kind::VlenString, _) => (String::new(), strings_xml(array, &inner)?),
        _ => (String::new(), storage_xml(array, &kind, &inner)?),
    };
    let (group, name) = array.path.rsplit_once('/').unwrap_or(("", &array.path));
    let (enumeration, enum_attribute) = kind.enumeration(group, indent);
    let tag = kind.tag();
    let mut out = enumeration;
    writeln!(out, "{indent}<{tag} name=\"{}\"{enum_attribute}>", escape(name)).ok();
    out.push_str(&members);
    for (dim, size) in dims.iter().zip(metadata.shape()) {
        match dim {
            Some(fqn) => writeln!(out, "{inner}<Dim name=\"{}\"/>", escape(fqn)),
            None => writeln!(out, "{inner}<Dim size=\"{size}\"/>"),
        }
        .ok();
    }
    let data_type = dap_type_of(&kind).map(|_| metadata.data_type);
    out.push_str(&attributes_xml(&metadata.attributes, &metadata.notes, data_type, &inner));
    out.push_str(&storage);
    if let Kind::FixedString(length) = kind {
        if !metadata.shape().is_empty() {
            let pad = metadata.notes.string_pad.as_deref().unwrap_or("null_term");
            writeln!(out, "{inner}<dmrpp:FixedLengthStringArray string_length=\"{length}\" pad=\"{}\"/>", escape(pad))
                .ok();
        }
    }
    writeln!(out, "{indent}</{tag}>").ok();
    Ok(out)
}

/// The numeric type whose `_FillValue` is written in it: atomic and enum variables'.
fn dap_type_of(kind: &Kind) -> Option<&'static str> {
    match kind {
        Kind::Atomic(dap) => Some(dap),
        Kind::Enum { base, .. } => Some(base),
        _ => None,
    }
}

/// The `dmrpp:chunks` element (and `dmrpp:compact`) of an array.
fn storage_xml(array: &VirtualArray, kind: &Kind, indent: &str) -> Result<String, VariableError> {
    let metadata = &array.metadata;
    let file_chunks = match (kind, &metadata.notes.source_chunks) {
        (Kind::Struct(_), Some(chunks)) => Some(chunks),
        _ => None,
    };
    if file_chunks.is_none() && (array.rewritten_chunks > 0 || metadata.notes.copied_chunks.is_some()) {
        return Err(VariableError::Rewritten);
    }
    let Filters { names: filters, level, endian } = filters(metadata.codecs.codecs())?;
    let mut attributes = String::new();
    if !filters.is_empty() {
        write!(attributes, " compressionType=\"{}\"", filters.join(" ")).ok();
    }
    if let Some(level) = level {
        write!(attributes, " deflateLevel=\"{level}\"").ok();
    }
    if metadata.notes.fill_value.is_none() {
        write!(attributes, " fillValue=\"{}\"", escape(&fill_text(array, kind))).ok();
    }
    let order = if endian == Some(Endian::Big) { "BE" } else { "LE" };
    write!(attributes, " byteOrder=\"{order}\"").ok();
    if let (Kind::Struct(fields), None) = (kind, file_chunks) {
        // A packed structure: its members' offsets are the packed ones (BES writes them too).
        let offsets: Vec<String> =
            fields.offsets().skip(1).map(|(o, _)| o.to_string()).chain([fields.size().to_string()]).collect();
        write!(attributes, " structOffset=\"{}\"", offsets.join(" ")).ok();
    }
    if let Some(source) = file_chunks {
        // A padded compound the scan repacked: the file's chunks, as BES lists them.
        let offsets: Vec<String> = source.struct_offsets.iter().map(u64::to_string).collect();
        write!(attributes, " structOffset=\"{}\"", offsets.join(" ")).ok();
        return Ok(file_chunk_list(array, source, &attributes, indent));
    }
    let entries: Vec<ChunkEntry> = array.chunks.iter().collect();
    if let [ChunkEntry::Owned { offset, length }] = entries.as_slice() {
        if !filters.is_empty() {
            return Err(VariableError::RewrittenCompact);
        }
        let bytes = array.chunks.owned_chunk(*offset, *length).map_err(VariableError::Owned)?;
        let data = crate::base64::encode(&bytes);
        return Ok(format!("{indent}<dmrpp:chunks{attributes}/>\n{indent}<dmrpp:compact>{data}</dmrpp:compact>\n"));
    }
    if entries.iter().any(|e| matches!(e, ChunkEntry::Source { source, .. } if *source != 0)) {
        return Err(VariableError::OtherFile);
    }
    if entries.iter().any(|e| matches!(e, ChunkEntry::Owned { .. })) {
        return Err(VariableError::HeldByVzarr);
    }
    let chunked_in_file = matches!(metadata.notes.source_layout, Some(SourceLayout::Chunked(_)));
    let never_written = entries.iter().all(|e| *e == ChunkEntry::Missing);
    if filters.is_empty() && full_width(array) && never_written && !chunked_in_file {
        // Contiguous storage never written: no chunk at all, as BES writes it.
        return Ok(format!("{indent}<dmrpp:chunks{attributes}/>\n"));
    }
    let mut out = format!("{indent}<dmrpp:chunks{attributes}>\n");
    if let Some((offset, length)) = contiguous(array, filters.is_empty(), &entries) {
        writeln!(out, "{indent}    <dmrpp:chunk offset=\"{offset}\" nBytes=\"{length}\"/>").ok();
    } else if let Some(blocks) = linked_blocks(array, filters.is_empty(), &entries) {
        // HDF4 linked blocks: runs of whole rows apart in the file, listed as BES lists them.
        for (offset, length) in blocks {
            writeln!(out, "{indent}    <dmrpp:block offset=\"{offset}\" nBytes=\"{length}\"/>").ok();
        }
    } else {
        chunk_list(array, &entries, &format!("{indent}    "), &mut out)?;
    }
    writeln!(out, "{indent}</dmrpp:chunks>").ok();
    Ok(out)
}

/// The `dmrpp:chunks` of a padded compound: the file's storage the scan noted, as BES lists it.
fn file_chunk_list(array: &VirtualArray, source: &SourceChunks, attributes: &str, indent: &str) -> String {
    let (chunk_shape, chunks) = match &source.storage {
        SourceStorage::Compact(stored) => {
            let data = crate::base64::encode(stored);
            return format!("{indent}<dmrpp:chunks{attributes}/>\n{indent}<dmrpp:compact>{data}</dmrpp:compact>\n");
        }
        SourceStorage::Contiguous { offset, length } => {
            let chunk = format!("{indent}    <dmrpp:chunk offset=\"{offset}\" nBytes=\"{length}\"/>");
            return format!("{indent}<dmrpp:chunks{attributes}>\n{chunk}\n{indent}</dmrpp:chunks>\n");
        }
        SourceStorage::Chunked { chunk_shape, chunks } => (chunk_shape, chunks),
    };
    let mut out = format!("{indent}<dmrpp:chunks{attributes}>\n");
    let sizes: Vec<String> = chunk_shape.iter().map(u64::to_string).collect();
    writeln!(out, "{indent}    <dmrpp:chunkDimensionSizes>{}</dmrpp:chunkDimensionSizes>", sizes.join(" ")).ok();
    let grid = &array.metadata.chunk_grid;
    for &(linear, offset, length) in chunks.iter() {
        let position: Vec<String> =
            grid.chunk_coords(linear).iter().zip(chunk_shape).map(|(c, n)| (c * n).to_string()).collect();
        writeln!(
            out,
            "{indent}    <dmrpp:chunk offset=\"{offset}\" nBytes=\"{length}\" chunkPositionInArray=\"[{}]\"/>",
            position.join(",")
        )
        .ok();
    }
    writeln!(out, "{indent}</dmrpp:chunks>").ok();
    out
}

/// The chunk shape and one `dmrpp:chunk` per stored chunk.
fn chunk_list(
    array: &VirtualArray,
    entries: &[ChunkEntry],
    indent: &str,
    out: &mut String,
) -> Result<(), VariableError> {
    let grid = &array.metadata.chunk_grid;
    let chunk_shape: Vec<u64> =
        grid.dims().iter().map(|d| d.regular_size()).collect::<Option<_>>().ok_or(VariableError::Rectilinear)?;
    let sizes: Vec<String> = chunk_shape.iter().map(u64::to_string).collect();
    writeln!(out, "{indent}<dmrpp:chunkDimensionSizes>{}</dmrpp:chunkDimensionSizes>", sizes.join(" ")).ok();
    for (linear, entry) in (0u64..).zip(entries) {
        let ChunkEntry::Source { offset, length, .. } = entry else { continue };
        write!(out, "{indent}<dmrpp:chunk offset=\"{offset}\" nBytes=\"{length}\" chunkPositionInArray=\"[").ok();
        for (d, (c, n)) in grid.chunk_coords(linear).iter().zip(&chunk_shape).enumerate() {
            let comma = if d == 0 { "" } else { "," };
            write!(out, "{comma}{}", c * n).ok();
        }
        out.push_str("]\"/>\n");
    }
    Ok(())
}

/// The one block of contiguous storage the chunks are, if they are: unfiltered full-width row slabs
/// laid end to end in order, covering exactly the array's bytes.
fn contiguous(array: &VirtualArray, unfiltered: bool, entries: &[ChunkEntry]) -> Option<(u64, u64)> {
    // A dataset the file stores chunked keeps its chunks, as BES lists them.
    let chunked_in_file = matches!(array.metadata.notes.source_layout, Some(SourceLayout::Chunked(_)));
    if chunked_in_file || !unfiltered || !full_width(array) || entries.is_empty() {
        return None;
    }
    let total = array.metadata.shape().iter().product::<u64>() * array.metadata.element_size() as u64;
    let ChunkEntry::Source { offset: start, .. } = entries[0] else { return None };
    let mut next = start;
    for entry in entries {
        let ChunkEntry::Source { offset, length, .. } = *entry else { return None };
        if offset != next {
            return None;
        }
        next = offset + length;
    }
    (next - start == total).then_some((start, total))
}

/// The byte ranges of an unfiltered array stored in runs of whole rows (its grid rectilinear along
/// the first dimension only, every run referenced in the data file): HDF4 linked blocks, in order.
fn linked_blocks(array: &VirtualArray, unfiltered: bool, entries: &[ChunkEntry]) -> Option<Vec<(u64, u64)>> {
    let rows = array.metadata.chunk_grid.dims().first()?;
    if !unfiltered || !full_width(array) || rows.regular_size().is_some() || entries.is_empty() {
        return None;
    }
    let row_bytes = array.metadata.shape().iter().skip(1).product::<u64>() * array.metadata.element_size() as u64;
    let mut blocks = Vec::with_capacity(entries.len());
    for (k, entry) in entries.iter().enumerate() {
        let ChunkEntry::Source { source: 0, offset, length } = *entry else { return None };
        if length != rows.valid(k as u64) * row_bytes {
            return None;
        }
        blocks.push((offset, length));
    }
    Some(blocks)
}

/// Whether the chunks are rows of the whole array: one chunk of the full extent along every dimension
/// but the first (the grid `scan/contiguous` gives contiguous storage).
fn full_width(array: &VirtualArray) -> bool {
    let grid = &array.metadata.chunk_grid;
    grid.dims().iter().skip(1).all(|d| d.num_chunks() == 1 && d.edge(0) == d.extent())
}

/// A codec chain as DMR++ says it.
struct Filters {
    /// `compressionType`'s names, in pipeline order.
    names: Vec<&'static str>,
    /// `deflateLevel` (the first deflate's).
    level: Option<u32>,
    /// The stored byte order (`None` for 1-byte types).
    endian: Option<Endian>,
}

/// The DMR++ filter names of the bytes -> bytes codecs, the deflate level, and the byte order.
fn filters(codecs: &[Codec]) -> Result<Filters, VariableError> {
    let (mut names, mut level, mut endian) = (Vec::new(), None, None);
    for codec in codecs {
        match codec {
            Codec::Bytes { endian: e } => endian = *e,
            Codec::Shuffle { .. } => names.push("shuffle"),
            Codec::Zlib { level: l } => {
                names.push("deflate");
                level.get_or_insert(*l);
            }
            Codec::Fletcher32 => names.push("fletcher32"),
            other => return Err(VariableError::Codec { codec: other.name() }),
        }
    }
    Ok(Filters { names, level, endian })
}

/// The fill value as `get_dmrpp` writes it: a number in decimal (integral floats without a
/// fraction, others with the element type's shortest digits; `nan`, `inf`), a structure's leaf
/// values space-separated, a fixed-length string's text.
fn fill_text(array: &VirtualArray, kind: &Kind) -> String {
    let metadata = &array.metadata;
    let bytes = metadata.fill_value.as_bytes();
    match kind {
        Kind::Struct(fields) => return struct_fill_text(fields, bytes),
        Kind::FixedString(_) => return fixed_fill_text(bytes),
        _ => {}
    }
    let value = metadata.data_type.values_to_f64(bytes).first().copied().unwrap_or(0.0);
    match metadata.data_type {
        DataType::Float32 | DataType::Float64 if value.is_finite() && value.fract() == 0.0 && value.abs() < 1e15 => {
            format!("{}", value as i64)
        }
        DataType::Float32 | DataType::Float64 => number_text(metadata.data_type, bytes),
        DataType::Bool => format!("{}", value as i64),
        data_type => metadata.fill_value.to_json(data_type).to_string(),
    }
}
