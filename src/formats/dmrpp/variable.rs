//! One array of a scanned file as a DMR++ variable element: its DAP4 type, dimensions, attributes and
//! storage (`dmrpp:chunks`, or `dmrpp:compact`), as BES's `get_dmrpp` writes them.
//!
//! Storage is the file's own, recovered from the scan:
//! - chunked: `chunkDimensionSizes` (the regular chunk shape) and one `dmrpp:chunk` per chunk the
//!   file holds, in chunk index order, `chunkPositionInArray` the chunk's origin in elements;
//! - contiguous: one `dmrpp:chunk` without a position. The scan cuts contiguous data into row slabs
//!   (`scan/contiguous`); an unfiltered array whose chunks are full-width slabs laid end to end,
//!   covering exactly the array's bytes, is written back as the one block it is. (An unfiltered
//!   chunked dataset whose chunks are such slabs, stored in order, is the same bytes and is written
//!   the same way.)
//! - compact: the one store-owned chunk of an unfiltered array, base64 in `dmrpp:compact`.
//!
//! What DMR++ cannot reference is refused with the reason (the caller leaves the variable out with a
//! warning): chunks vzarr re-encoded (a filter without a Zarr codec, or skipped filters), filters
//! other than shuffle, deflate and fletcher32, a rectilinear grid that is not contiguous storage, and
//! types without a DAP4 atomic form here (strings, structs, booleans, complex, float16, opaque).

use std::fmt::Write as _;

use super::attributes::{attributes_xml, escape};
use crate::codec::{Codec, Endian};
use crate::dataset::VirtualArray;
use crate::manifest::ChunkEntry;
use crate::metadata::DataType;

/// The DAP4 type name of a data type, if it has one here.
pub(super) fn dap_type(data_type: DataType) -> Option<&'static str> {
    Some(match data_type {
        DataType::Int8 => "Int8",
        DataType::UInt8 => "Byte",
        DataType::Int16 => "Int16",
        DataType::UInt16 => "UInt16",
        DataType::Int32 => "Int32",
        DataType::UInt32 => "UInt32",
        DataType::Int64 => "Int64",
        DataType::UInt64 => "UInt64",
        DataType::Float32 => "Float32",
        DataType::Float64 => "Float64",
        _ => return None,
    })
}

/// How each dimension of a variable is written: `<Dim name="/fqn"/>` or `<Dim size="n"/>`.
pub(super) type DimRefs = Vec<Option<String>>;

/// Why an array has no DMR++ form ([`variable_xml`]).
#[derive(Debug, thiserror::Error)]
pub(super) enum VariableError {
    /// A data type with no DAP4 atomic type.
    #[error("its data type {data_type} has no DAP4 atomic type here")]
    DataType {
        /// The data type's name.
        data_type: &'static str,
    },
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

/// The variable element of `array` (its last path segment as the name), indented by `indent`.
///
/// # Errors
/// [`VariableError`]: why the array has no DMR++ form.
pub(super) fn variable_xml(array: &VirtualArray, dims: &DimRefs, indent: &str) -> Result<String, VariableError> {
    let metadata = &array.metadata;
    let dap = dap_type(metadata.data_type).ok_or(VariableError::DataType { data_type: metadata.data_type.name() })?;
    let storage = storage_xml(array, &format!("{indent}    "))?;
    let name = array.path.rsplit('/').next().unwrap_or(&array.path);
    let mut out = format!("{indent}<{dap} name=\"{}\">\n", escape(name));
    for (dim, size) in dims.iter().zip(metadata.shape()) {
        match dim {
            Some(fqn) => writeln!(out, "{indent}    <Dim name=\"{}\"/>", escape(fqn)),
            None => writeln!(out, "{indent}    <Dim size=\"{size}\"/>"),
        }
        .ok();
    }
    out.push_str(&attributes_xml(&metadata.attributes, &metadata.notes, &format!("{indent}    ")));
    out.push_str(&storage);
    writeln!(out, "{indent}</{dap}>").ok();
    Ok(out)
}

/// The `dmrpp:chunks` element (and `dmrpp:compact`) of an array.
fn storage_xml(array: &VirtualArray, indent: &str) -> Result<String, VariableError> {
    let metadata = &array.metadata;
    if array.rewritten_chunks > 0 || metadata.notes.copied_chunks.is_some() {
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
        write!(attributes, " fillValue=\"{}\"", fill_text(array)).ok();
    }
    let order = if endian == Some(Endian::Big) { "BE" } else { "LE" };
    write!(attributes, " byteOrder=\"{order}\"").ok();
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
    if filters.is_empty() && full_width(array) && entries.iter().all(|e| *e == ChunkEntry::Missing) {
        // Contiguous storage never written: no chunk at all, as BES writes it.
        return Ok(format!("{indent}<dmrpp:chunks{attributes}/>\n"));
    }
    let mut out = format!("{indent}<dmrpp:chunks{attributes}>\n");
    if let Some((offset, length)) = contiguous(array, filters.is_empty(), &entries) {
        writeln!(out, "{indent}    <dmrpp:chunk offset=\"{offset}\" nBytes=\"{length}\"/>").ok();
    } else {
        chunk_list(array, &entries, &format!("{indent}    "), &mut out)?;
    }
    writeln!(out, "{indent}</dmrpp:chunks>").ok();
    Ok(out)
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
    if !unfiltered || !full_width(array) || entries.is_empty() {
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
/// fraction, others in exponent form with the element type's shortest digits; `nan`, `inf`).
fn fill_text(array: &VirtualArray) -> String {
    let metadata = &array.metadata;
    let bytes = metadata.fill_value.as_bytes();
    let value = metadata.data_type.values_to_f64(bytes).first().copied().unwrap_or(0.0);
    match metadata.data_type {
        DataType::Float32 | DataType::Float64 if value.is_nan() => "nan".into(),
        DataType::Float32 | DataType::Float64 if value.is_infinite() => if value > 0.0 { "inf" } else { "-inf" }.into(),
        DataType::Float32 | DataType::Float64 if value.fract() == 0.0 && value.abs() < 1e15 => {
            format!("{}", value as i64)
        }
        DataType::Float32 => format!("{:e}", value as f32),
        DataType::Float64 => format!("{value:e}"),
        data_type => metadata.fill_value.to_json(data_type).to_string(),
    }
}
