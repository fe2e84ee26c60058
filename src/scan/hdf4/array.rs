//! One scientific data set as a [`VirtualArray`]: its grid, codec chain, fill value and chunk
//! references, from how its data element is stored.
//!
//! | storage                        | grid                  | chunks                                 |
//! |--------------------------------|-----------------------|----------------------------------------|
//! | never written                  | one chunk             | missing (the fill value)               |
//! | contiguous                     | slabs (`contiguous`)  | references                             |
//! | deflate, one range             | one chunk             | a reference, `numcodecs.zlib`          |
//! | chunked (plain or deflate)     | the chunk shape       | one reference per chunk of the table   |
//! | linked blocks of whole rows    | one chunk per block   | references (rectilinear along dim 0)   |
//! | in an external file            | slabs (`contiguous`)  | references into that file (source > 0) |
//! | other linked blocks, RLE, szip,| slabs (whole) /       | decoded, stored by the store (zlib)    |
//! | skipping Huffman, NBIT         | the chunk shape       |                                        |
//!
//! Linked blocks count as whole rows as stored or, else, with blocks adjacent in the file merged. A
//! data set with an unlimited dimension has as many rows as its data element holds (libhdf4's
//! `numrecs`), whatever its dimension record says.
//!
//! A chunk whose storage differs from the array's codec chain (an RLE chunk, a plain chunk among
//! deflated ones) is decoded and re-encoded with the array's chain, as a store-owned chunk.

use std::io::Write;

use super::dd::DdIndex;
use super::decode::decode;
use super::errors::Hdf4Error;
use super::sds::{Sds, DFTAG_SD};
use super::special::{read_stored, storage, Chunked, Coder, Storage, DFTAG_CHUNK};
use super::vobjects::{records, vdata};
use crate::codec::{Codec, CodecChain, Endian};
use crate::dataset::{ChunkTable, VirtualArray};
use crate::grid::{ChunkDim, ChunkGrid};
use crate::manifest::ChunkEntry;
use crate::metadata::{encode_fill_value_attribute, ArrayMetadata, ArrayNotes, Attributes, DataType, FillValue};
use crate::scan::contiguous::slab_layout;
use crate::scan::{ScanOptions, MAX_CHUNKS_PER_ARRAY};
use crate::source::ByteSource;

/// Most bytes of decoded values one array may store in the store (linked blocks, RLE, ...).
pub(crate) const MAX_DECODED_BYTES: u64 = 256 << 20;

/// The zlib level store-owned chunks of deflated arrays are written with.
const OWNED_ZLIB_LEVEL: u16 = 6;

/// The virtual array of data set `sds`; `external` gives the source id of an external file by the
/// name the file stores.
///
/// # Errors
/// [`Hdf4Error::Unsupported`] for types and storage vzarr cannot represent; [`Hdf4Error::External`]
/// from `external`; other variants for malformed or unreadable structures.
pub(crate) fn build(
    file: &dyn ByteSource,
    index: &DdIndex,
    sds: &Sds,
    options: &ScanOptions,
    external: &mut dyn FnMut(&str) -> Result<u32, Hdf4Error>,
) -> Result<VirtualArray, Hdf4Error> {
    let data_type = sds.number_type.data_type()?;
    let endian =
        (data_type.swap_unit() > 1).then_some(if sds.number_type.little { Endian::Little } else { Endian::Big });
    // A data element the data set names but the file does not have is a lost descriptor (libhdf4's
    // `SDreaddata` fails on it), not data never written: that is a data set naming no element.
    let stored = match sds.data_ref {
        Some(r) => Some(storage(file, index, DFTAG_SD, r)?.ok_or_else(|| Hdf4Error::Missing {
            what: format!("data set {}", sds.name),
            tag: DFTAG_SD,
            reference: r,
        })?),
        None => None,
    };
    let shape = current_shape(sds, stored.as_ref(), data_type.size() as u64);
    let layout = Layout { data_type, endian, shape: &shape, name: &sds.name, budget: &options.owned_budget };
    let total = layout.total_bytes()?;
    let mut chunk_fill = None;
    let (grid, codecs, chunks) = match stored {
        None => layout.whole(CodecChain::raw(endian), None)?,
        Some(Storage::Plain { offset, length }) => {
            if length < total {
                return Err(Hdf4Error::Unsupported(format!(
                    "contiguous data of {length} bytes, fewer than the {total} of its shape"
                )));
            }
            layout.slabs(0, offset, options.max_slab_bytes)?
        }
        Some(Storage::External { name, offset, length }) => {
            if length < total {
                return Err(Hdf4Error::Unsupported(format!(
                    "external file {name:?} holds {length} bytes of it, fewer than the {total} of its shape"
                )));
            }
            layout.slabs(external(&name)?, offset, options.max_slab_bytes)?
        }
        Some(Storage::Compressed { coder, data, length }) if length == total => match (coder, *data) {
            (Coder::Deflate { level }, Storage::Plain { offset, length }) if length > 0 => {
                layout.whole(layout.zlib(level), Some(ChunkEntry::Source { source: 0, offset, length }))?
            }
            // hrepack writes uncompressed data as "compressed" with no coder.
            (Coder::None, Storage::Plain { offset, length }) if length >= total => {
                layout.slabs(0, offset, options.max_slab_bytes)?
            }
            (coder, data) => {
                let decoded = decode_whole(file, index, coder, &data, total, &sds.name)?;
                layout.decoded_slabs(&decoded, options.max_slab_bytes)?
            }
        },
        Some(Storage::Compressed { length, .. }) => {
            return Err(Hdf4Error::Unsupported(format!(
                "compressed data of {length} bytes, not the {total} of its shape"
            )));
        }
        Some(linked @ Storage::Linked { .. }) => layout.linked(file, index, &linked, total, options.max_slab_bytes)?,
        Some(Storage::Chunked(chunked)) => {
            chunk_fill = Some(chunked.fill.clone());
            layout.chunked(file, index, &chunked)?
        }
    };
    let fill = fill_value(sds, data_type, endian, chunk_fill.as_deref());
    let mut attributes: Attributes = sds.attributes.iter().map(|a| (a.name.clone(), a.to_json())).collect();
    let mut notes = ArrayNotes::default();
    for a in sds.attributes.iter().filter(|a| !a.number_type.is_text()) {
        if let Ok(t) = a.number_type.data_type() {
            notes.note_type(&a.name, t);
        }
    }
    encode_fill_value_attribute(data_type, &mut attributes, &mut notes);
    let metadata = ArrayMetadata {
        data_type,
        chunk_grid: grid,
        fill_value: FillValue::from_bytes(data_type, fill).map_err(|e| Hdf4Error::Unsupported(e.to_string()))?,
        codecs,
        dimension_names: Some(sds.dims.clone()),
        attributes,
        notes,
    };
    Ok(VirtualArray { path: sds.name.clone(), metadata, chunks, rewritten_chunks: 0, digest: None, tails: Vec::new() })
}

/// The data set's shape as libhdf4 reports it. A record variable's (one with an unlimited dimension)
/// first extent is the whole rows its data element holds: libhdf4's `hdf_read_vars` sets `numrecs`
/// to `Hlength` over the bytes of one row, and `SDgetinfo` reports `numrecs`. The dimension record
/// keeps the extent it had when it was last written (the session that created the data set): rows
/// appended in a later session are in the element, not in the record. Other data sets, and record
/// variables never written or chunked, keep the dimension record's shape.
fn current_shape(sds: &Sds, stored: Option<&Storage>, element_size: u64) -> Vec<u64> {
    let mut shape = sds.shape.clone();
    let length = stored.and_then(Storage::element_length).filter(|_| sds.unlimited);
    let row = shape.iter().skip(1).try_fold(element_size, |n, &d| n.checked_mul(d)).filter(|&row| row > 0);
    if let (Some(first), Some(length), Some(row)) = (shape.first_mut(), length, row) {
        *first = length / row;
    }
    shape
}

/// Linked blocks merged where one block ends where the next begins in the file (the same bytes in
/// the same order, fewer and longer runs: what BES's DMR++ lists for an element appended in small
/// blocks).
fn coalesced(blocks: &[(u64, u64)]) -> Vec<(u64, u64)> {
    let mut runs: Vec<(u64, u64)> = Vec::with_capacity(blocks.len());
    for &(offset, length) in blocks {
        match runs.last_mut() {
            Some((start, run)) if *start + *run == offset => *run += length,
            _ => runs.push((offset, length)),
        }
    }
    runs
}

/// The fill value as native bytes: for chunked data the chunk header's (what libhdf4 fills missing
/// chunks with, whatever the attribute says), else `_FillValue`, else the netCDF default of the type
/// the SD interface maps it to (what libhdf4 reads where nothing was written).
fn fill_value(sds: &Sds, data_type: DataType, endian: Option<Endian>, chunk_fill: Option<&[u8]>) -> Vec<u8> {
    let size = data_type.size();
    if let Some(stored) = chunk_fill.filter(|b| b.len() == size) {
        let mut bytes = stored.to_vec();
        if endian.is_some_and(|e| e != Endian::native()) {
            bytes.reverse();
        }
        return bytes;
    }
    let attribute = sds.attributes.iter().find(|a| a.name == "_FillValue").and_then(|a| a.native_bytes());
    if let Some(bytes) = attribute.filter(|b| b.len() == size) {
        return bytes;
    }
    default_fill(data_type)
}

/// netCDF's default fill values (`NC_FILL_*`), which the SD interface uses for every type of the
/// same size: unsigned types get the signed pattern (`0x81`, `0x8001`, `0x80000001`).
pub(crate) fn default_fill(data_type: DataType) -> Vec<u8> {
    match data_type {
        DataType::Int8 | DataType::UInt8 => vec![0x81],
        DataType::Int16 | DataType::UInt16 => (-32767i16).to_ne_bytes().to_vec(),
        DataType::Int32 | DataType::UInt32 => (-2147483647i32).to_ne_bytes().to_vec(),
        DataType::Float32 => 9.969_21e36_f32.to_ne_bytes().to_vec(),
        DataType::Float64 => 9.969_209_968_386_869e36_f64.to_ne_bytes().to_vec(),
        other => vec![0; other.size()],
    }
}

/// Decodes a whole compressed element.
fn decode_whole(
    file: &dyn ByteSource,
    index: &DdIndex,
    coder: Coder,
    data: &Storage,
    total: u64,
    name: &str,
) -> Result<Vec<u8>, Hdf4Error> {
    if total > MAX_DECODED_BYTES {
        return Err(Hdf4Error::Unsupported(format!(
            "{coder} data of {total} bytes, more than vzarr decodes ({MAX_DECODED_BYTES})"
        )));
    }
    let encoded = read_stored(file, index, data, file.len(), &format!("compressed data of {name}"))?;
    decode(coder, &encoded, total as usize).map_err(Hdf4Error::Decode)
}

/// What every storage form needs to know of the array.
struct Layout<'a> {
    data_type: DataType,
    endian: Option<Endian>,
    shape: &'a [u64],
    name: &'a str,
    /// The budget of the chunk bytes copied into the store.
    budget: &'a crate::dataset::OwnedBytesBudget,
}

type Parts = (ChunkGrid, CodecChain, ChunkTable);

/// A chunk as found in the chunk table, before the array's codec chain is chosen.
enum Found {
    /// Uncompressed bytes of the file.
    Plain(u64, u64),
    /// A zlib stream in the file, and the level it was deflated with.
    Zlib(u64, u64, u16),
    /// Decoded values (as stored: the file's byte order).
    Decoded(Vec<u8>),
}

impl Layout<'_> {
    fn total_bytes(&self) -> Result<u64, Hdf4Error> {
        self.shape
            .iter()
            .try_fold(self.data_type.size() as u64, |n, &d| n.checked_mul(d))
            .ok_or_else(|| Hdf4Error::Unsupported(format!("shape {:?} has more bytes than fit in 64 bits", self.shape)))
    }

    /// The chain of deflated data: `level` is the file's (what a DMR++ sidecar says); decoding
    /// does not depend on it.
    fn zlib(&self, level: u16) -> CodecChain {
        let codecs = vec![Codec::Bytes { endian: self.endian }, Codec::Zlib { level: u32::from(level) }];
        CodecChain::new(codecs).unwrap_or_else(|_| CodecChain::raw(self.endian))
    }

    /// Contiguous bytes at `offset` of source `source` as slabs along the first dimension.
    fn slabs(&self, source: u32, offset: u64, max_slab_bytes: u64) -> Result<Parts, Hdf4Error> {
        let (grid, entries) = slab_layout(self.shape, self.data_type.size() as u64, offset, source, max_slab_bytes)
            .map_err(|e| Hdf4Error::Unsupported(e.to_string()))?;
        Ok((
            grid,
            CodecChain::raw(self.endian),
            ChunkTable::from_entries(entries, crate::dataset::OwnedBytes::with_budget(self.budget)),
        ))
    }

    /// Bytes of one row (one index along the first dimension), when the array has rows.
    fn row_bytes(&self, total: u64) -> Option<u64> {
        let rows = *self.shape.first()?;
        (rows > 0 && total > 0).then(|| total / rows)
    }

    /// The rows each linked block holds, when every block holds whole rows (cut at the array's end).
    fn row_aligned(&self, blocks: &[(u64, u64)], total: u64) -> Option<Vec<u64>> {
        let row = self.row_bytes(total)?;
        let mut left = total;
        let mut edges = Vec::new();
        for &(_, length) in blocks {
            let take = length.min(left);
            if take % row != 0 {
                return None;
            }
            if take > 0 {
                edges.push(take / row);
            }
            left -= take;
        }
        (left == 0).then_some(edges)
    }

    /// Linked blocks, every one in order: referenced one chunk per block when each holds whole rows
    /// (as stored, else with blocks adjacent in the file merged), else read and kept by the store.
    ///
    /// # Errors
    /// [`Hdf4Error::Unsupported`] when the blocks hold fewer bytes than the shape or more than vzarr
    /// decodes; other variants when they cannot be read.
    fn linked(
        &self,
        file: &dyn ByteSource,
        index: &DdIndex,
        linked: &Storage,
        total: u64,
        max_slab_bytes: u64,
    ) -> Result<Parts, Hdf4Error> {
        if let Storage::Linked { blocks, .. } = linked {
            if self.row_aligned(blocks, total).is_some() {
                return self.linked_rows(blocks, total);
            }
            let runs = coalesced(blocks);
            if self.row_aligned(&runs, total).is_some() {
                return self.linked_rows(&runs, total);
            }
        }
        let what = format!("linked blocks of {}", self.name);
        let bytes = read_stored(file, index, linked, MAX_DECODED_BYTES, &what)?;
        if (bytes.len() as u64) < total {
            return Err(Hdf4Error::Unsupported(format!(
                "linked blocks hold {} bytes, fewer than the {total} of its shape",
                bytes.len()
            )));
        }
        self.decoded_slabs(&bytes, max_slab_bytes)
    }

    /// Linked blocks holding whole rows, referenced one chunk per block (a rectilinear grid along the
    /// first dimension).
    fn linked_rows(&self, blocks: &[(u64, u64)], total: u64) -> Result<Parts, Hdf4Error> {
        let edges = self.row_aligned(blocks, total).unwrap_or_default();
        let grid_error = |e: crate::grid::GridError| Hdf4Error::Unsupported(e.to_string());
        let rows = self.shape.first().copied().unwrap_or(0);
        let mut dims = vec![ChunkDim::from_edges(rows, &edges).map_err(grid_error)?];
        for &extent in self.shape.iter().skip(1) {
            dims.push(ChunkDim::regular(extent, extent.max(1)).map_err(grid_error)?);
        }
        let mut left = total;
        let mut entries = Vec::with_capacity(edges.len());
        for &(offset, length) in blocks {
            let take = length.min(left);
            if take > 0 {
                entries.push(ChunkEntry::Source { source: 0, offset, length: take });
            }
            left -= take;
        }
        Ok((
            ChunkGrid::new(dims),
            CodecChain::raw(self.endian),
            ChunkTable::from_entries(entries, crate::dataset::OwnedBytes::with_budget(self.budget)),
        ))
    }

    /// One chunk covering the whole array.
    fn whole(&self, codecs: CodecChain, entry: Option<ChunkEntry>) -> Result<Parts, Hdf4Error> {
        let chunk: Vec<u64> = self.shape.iter().map(|&n| n.max(1)).collect();
        let grid = ChunkGrid::regular(self.shape, &chunk).map_err(|e| Hdf4Error::Unsupported(e.to_string()))?;
        let mut table = ChunkTable::missing(grid.num_chunks() as usize).owned_in(self.budget);
        if let (false, Some(entry)) = (table.is_empty(), entry) {
            table.set(0, entry);
        }
        Ok((grid, codecs, table))
    }

    /// One store-owned chunk holding the decoded values (zlib-compressed).
    /// Decoded values (as stored: the file's byte order) kept by the store, zlib-compressed, in slabs
    /// along the first dimension as contiguous data is referenced, so a small read decodes little.
    fn decoded_slabs(&self, stored: &[u8], max_slab_bytes: u64) -> Result<Parts, Hdf4Error> {
        let (grid, slabs) = slab_layout(self.shape, self.data_type.size() as u64, 0, 0, max_slab_bytes)
            .map_err(|e| Hdf4Error::Unsupported(e.to_string()))?;
        let mut table = ChunkTable::missing(slabs.len()).owned_in(self.budget);
        for (slot, slab) in slabs.iter().enumerate() {
            let ChunkEntry::Source { offset, length, .. } = *slab else { continue };
            let bytes = stored
                .get(offset as usize..(offset + length) as usize)
                .ok_or_else(|| Hdf4Error::malformed(self.name, "decoded values shorter than the shape"))?;
            let entry = table.push_owned(&zlib(bytes)?)?;
            table.set(slot, entry);
        }
        Ok((grid, self.zlib(OWNED_ZLIB_LEVEL), table))
    }

    fn chunked(&self, file: &dyn ByteSource, index: &DdIndex, chunked: &Chunked) -> Result<Parts, Hdf4Error> {
        let what = format!("chunk table of {}", self.name);
        if chunked.dims.len() != self.shape.len() {
            return Err(Hdf4Error::malformed(
                what,
                format!("{} dimensions for a rank-{} data set", chunked.dims.len(), self.shape.len()),
            ));
        }
        self.same_as_header(chunked, &what)?;
        let chunk: Vec<u64> = chunked.dims.iter().map(|&(_, c)| c).collect();
        let grid = ChunkGrid::regular(self.shape, &chunk).map_err(|e| Hdf4Error::Unsupported(e.to_string()))?;
        let count = grid.checked_num_chunks().filter(|&n| n <= MAX_CHUNKS_PER_ARRAY).ok_or_else(|| {
            Hdf4Error::Unsupported(format!(
                "shape {:?} in chunks of {chunk:?} has more than vzarr's limit of {MAX_CHUNKS_PER_ARRAY} chunks",
                self.shape
            ))
        })?;
        let chunk_bytes = chunk.iter().product::<u64>() * self.data_type.size() as u64;
        let found = self.chunk_list(file, index, chunked, &grid, chunk_bytes)?;
        let level = found.iter().find_map(|(_, f)| match f {
            Found::Zlib(_, _, level) => Some(*level),
            _ => None,
        });
        let zlib_chain = level.is_some();
        let codecs = match level {
            Some(level) => self.zlib(level),
            None => CodecChain::raw(self.endian),
        };
        let mut table = ChunkTable::missing(count as usize).owned_in(self.budget);
        let mut decoded = 0u64;
        for (linear, f) in found {
            let entry = match f {
                Found::Plain(offset, length) if !zlib_chain => ChunkEntry::Source { source: 0, offset, length },
                Found::Zlib(offset, length, _) => ChunkEntry::Source { source: 0, offset, length },
                Found::Plain(offset, length) => {
                    let bytes = read_stored(file, index, &Storage::Plain { offset, length }, chunk_bytes, &what)?;
                    table.push_owned(&zlib(&bytes)?)?
                }
                Found::Decoded(bytes) => {
                    decoded += bytes.len() as u64;
                    if decoded > MAX_DECODED_BYTES {
                        return Err(Hdf4Error::Unsupported(format!(
                            "more than {MAX_DECODED_BYTES} bytes of chunks to decode"
                        )));
                    }
                    if zlib_chain {
                        table.push_owned(&zlib(&bytes)?)?
                    } else {
                        table.push_owned(&bytes)?
                    }
                }
            };
            table.set(linear as usize, entry);
        }
        Ok((grid, codecs, table))
    }

    /// Checks the chunk header's copy of the shape and element size against the data set's own
    /// (its dimension record and number type). libhdf4 reads chunks through the header: where the
    /// copies differ one of them is damaged and vzarr cannot tell which, so the data set is refused
    /// (an unlimited dimension's header length of 0 is not a difference).
    fn same_as_header(&self, chunked: &Chunked, what: &str) -> Result<(), Hdf4Error> {
        let size = self.data_type.size() as u64;
        if chunked.element_size != size {
            return Err(Hdf4Error::malformed(
                what,
                format!(
                    "the chunk header says elements of {} bytes, the number type {size}: one copy is damaged",
                    chunked.element_size
                ),
            ));
        }
        let header: Vec<u64> = chunked.dims.iter().map(|&(length, _)| length).collect();
        if header.iter().zip(self.shape).any(|(&h, &s)| h != s && h != 0) {
            return Err(Hdf4Error::malformed(
                what,
                format!(
                    "the chunk header says shape {header:?}, the dimension record {:?}: one copy is damaged",
                    self.shape
                ),
            ));
        }
        Ok(())
    }

    /// Every chunk of the chunk table: (linear index, where its bytes are).
    fn chunk_list(
        &self,
        file: &dyn ByteSource,
        index: &DdIndex,
        chunked: &Chunked,
        grid: &ChunkGrid,
        chunk_bytes: u64,
    ) -> Result<Vec<(u64, Found)>, Hdf4Error> {
        let what = format!("chunk table of {}", self.name);
        let table = vdata(file, index, chunked.table_ref)?;
        let rank = self.shape.len();
        let row = 4 * rank + 4;
        if usize::from(table.record_size) != row {
            return Err(Hdf4Error::malformed(
                what,
                format!("records of {} bytes, not the {row} of a rank-{rank} table", table.record_size),
            ));
        }
        let rows = records(file, index, &table, file.len())?;
        let grid_shape = grid.grid_shape();
        let mut found = Vec::with_capacity(rows.len() / row);
        for record in rows.chunks_exact(row) {
            let be32 = |i: usize| {
                u64::from(u32::from_be_bytes([record[4 * i], record[4 * i + 1], record[4 * i + 2], record[4 * i + 3]]))
            };
            let coords: Vec<u64> = (0..rank).map(be32).collect();
            if coords.iter().zip(&grid_shape).any(|(c, n)| c >= n) {
                return Err(Hdf4Error::malformed(
                    what,
                    format!("chunk {coords:?} lies outside the grid {grid_shape:?}"),
                ));
            }
            let reference = u16::from_be_bytes([record[4 * rank + 2], record[4 * rank + 3]]);
            let chunk_what = format!("chunk {coords:?} of {}", self.name);
            let stored = storage(file, index, DFTAG_CHUNK, reference)?.ok_or(Hdf4Error::Missing {
                what: chunk_what.clone(),
                tag: DFTAG_CHUNK,
                reference,
            })?;
            found.push((grid.linear_index(&coords), self.chunk(file, index, stored, chunk_bytes, &chunk_what)?));
        }
        Ok(found)
    }

    fn chunk(
        &self,
        file: &dyn ByteSource,
        index: &DdIndex,
        stored: Storage,
        chunk_bytes: u64,
        what: &str,
    ) -> Result<Found, Hdf4Error> {
        match stored {
            Storage::Plain { offset, length } if length >= chunk_bytes => Ok(Found::Plain(offset, chunk_bytes)),
            Storage::Plain { length, .. } => {
                Err(Hdf4Error::malformed(what, format!("{length} bytes, fewer than the chunk's {chunk_bytes}")))
            }
            Storage::Compressed { coder, data, .. } => match (coder, *data) {
                (Coder::Deflate { level }, Storage::Plain { offset, length }) if length > 0 => {
                    Ok(Found::Zlib(offset, length, level))
                }
                // hrepack writes uncompressed chunks as "compressed" with no coder.
                (Coder::None, Storage::Plain { offset, length }) if length >= chunk_bytes => {
                    Ok(Found::Plain(offset, chunk_bytes))
                }
                (coder, data) => {
                    if chunk_bytes > MAX_DECODED_BYTES {
                        return Err(Hdf4Error::Unsupported(format!("{what}: {coder} chunks of {chunk_bytes} bytes")));
                    }
                    let encoded = read_stored(file, index, &data, file.len(), what)?;
                    decode(coder, &encoded, chunk_bytes as usize)
                        .map(Found::Decoded)
                        .map_err(|source| Hdf4Error::DecodeChunk { what: what.to_string(), source })
                }
            },
            linked @ Storage::Linked { .. } => {
                let mut bytes = read_stored(file, index, &linked, MAX_DECODED_BYTES, what)?;
                if (bytes.len() as u64) < chunk_bytes {
                    return Err(Hdf4Error::malformed(what, "linked blocks shorter than the chunk"));
                }
                bytes.truncate(chunk_bytes as usize);
                Ok(Found::Decoded(bytes))
            }
            Storage::Chunked(_) => Err(Hdf4Error::malformed(what, "a chunk that is itself chunked")),
            Storage::External { .. } => Err(Hdf4Error::malformed(what, "a chunk in an external file")),
        }
    }
}

fn zlib(bytes: &[u8]) -> Result<Vec<u8>, Hdf4Error> {
    let mut encoder =
        flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::new(u32::from(OWNED_ZLIB_LEVEL)));
    encoder
        .write_all(bytes)
        .and_then(|()| encoder.finish())
        .map_err(|e| Hdf4Error::Unsupported(format!("compressing: {e}")))
}
