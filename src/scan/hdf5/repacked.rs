//! Variables of HDF5 compounds with padding (C-aligned members, unused bytes at the end, nested
//! compounds with gaps) as store-owned chunks of the packed Zarr `struct` that zarr-python reads
//! (`compound`): no byte range of the file holds the packed elements, so every chunk is read,
//! decoded with the file's filters, its elements packed ([`Repack`]) and encoded with the array's
//! codec chain, one chunk at a time.
//!
//! The array's chain is the file's with the element size of the packed struct where a codec names
//! one (shuffle, blosc's typesize), so the stored chunks compress about as the file's do; contiguous
//! and compact datasets, stored without filters, become raw slabs along the first dimension (at most
//! `max_slab_bytes` each, as referenced contiguous data). Chunks the file never wrote stay missing
//! (the fill value, packed), as do unallocated contiguous datasets.
//!
//! Memory: one chunk (stored, decoded, packed, encoded) at a time, its size checked before anything
//! is allocated for it; the store-owned bytes of the variable (at most [`MAX_REPACKED_BYTES`] before
//! compression) are held until the store is written, like every store-owned chunk.

use super::element::Repack;
use super::layout::{self, Layout, StoredChunk};
use super::{FileContext, Translated, VarScan};
use crate::codec::{ByteSwap, Codec, CodecChain, Filter};
use crate::dataset::ChunkTable;
use crate::grid::ChunkGrid;
use crate::manifest::ChunkEntry;
use crate::metadata::{FillValue, SourceChunks, SourceStorage};
use crate::scan::contiguous::slab_layout;
use crate::scan::filters::{filter_codec, FilterSpec};
use crate::scan::rewrite::ArrayCodecs;
use crate::scan::{chunk_table_for, ScanError};

/// Most bytes of packed elements one variable may become: they are store-owned, held in memory until
/// the store is written (as [`super::MAX_READ_BYTES`] bounds what the scan reads whole).
pub(super) const MAX_REPACKED_BYTES: u64 = 1 << 30;

impl FileContext<'_> {
    /// The store-owned chunks of padded compound variable `v` (its `data_type` the packed struct),
    /// stored as `layout`; None when it is left out (a warning, or an error without
    /// --skip-unsupported).
    pub(super) fn repacked(
        &mut self,
        v: &VarScan<'_>,
        repack: &Repack,
        layout: Layout,
        fill: &FillValue,
    ) -> Result<Option<Translated>, ScanError> {
        let packed = v.data_type.size() as u64;
        let total = v.shape.iter().try_fold(packed, |n, &d| n.checked_mul(d));
        if total.is_none_or(|t| t > MAX_REPACKED_BYTES) {
            let why = format!(
                "cannot store a compound with padding packed: shape {:?} of {packed}-byte structs is over {} MiB",
                v.shape,
                MAX_REPACKED_BYTES >> 20
            );
            return self.skip(v.var, why).map(|_| None);
        }
        match layout {
            Layout::Chunked(chunk_shape) => self.repacked_chunked(v, repack, &chunk_shape[..v.shape.len()], fill),
            Layout::Contiguous { address, size } => self.repacked_contiguous(v, repack, address, size).map(Some),
            Layout::Compact(bytes) => self.repacked_compact(v, repack, &bytes).map(Some),
            Layout::Other(what) => self.skip(v.var, format!("cannot reference {what}")).map(|_| None),
        }
    }

    /// The file's storage of padded compound variable `v` stored in one piece, as
    /// [`Self::source_chunks`] gives a chunked one's: `storage` is its block or its compact bytes.
    pub(super) fn source_block(
        &self,
        v: &VarScan<'_>,
        repack: &Repack,
        storage: SourceStorage,
    ) -> Option<SourceChunks> {
        let crate::metadata::DataType::Struct(fields) = v.data_type else { return None };
        Some(SourceChunks { struct_offsets: struct_offsets(repack, fields)?, storage })
    }

    /// The file's own chunks of padded compound variable `v` stored in chunks of `chunk_shape`, for
    /// the DMR++ writer (`ArrayNotes::source_chunks`); None when they cannot be listed as BES lists
    /// them (a chunk with skipped filters, an index that does not read).
    pub(super) fn source_chunks(&self, v: &VarScan<'_>, repack: &Repack, chunk_shape: &[u64]) -> Option<SourceChunks> {
        let crate::metadata::DataType::Struct(fields) = v.data_type else { return None };
        let mut stored: Vec<(Vec<u64>, StoredChunk)> = Vec::new();
        let max_dims = v.var.dataset.max_dims().map(<[u64]>::to_vec);
        let mut visit = |origin: &[u64], chunk: StoredChunk| stored.push((origin.to_vec(), chunk));
        layout::visit_chunks(&self.file, &v.info, &v.index_extent, max_dims.as_deref(), &mut visit).ok()?;
        if stored.iter().any(|(_, c)| c.filter_mask != 0) || chunk_shape.len() != v.shape.len() {
            return None;
        }
        let grid = ChunkGrid::regular(&v.shape, chunk_shape).ok()?;
        let mut chunks = Vec::with_capacity(stored.len());
        for (origin, c) in &stored {
            let coords: Vec<u64> = origin.iter().zip(chunk_shape).map(|(o, n)| o / n.max(&1)).collect();
            chunks.push((grid.linear_index(&coords), c.address, c.size));
        }
        chunks.sort_unstable();
        let struct_offsets = struct_offsets(repack, fields)?;
        let storage = SourceStorage::Chunked { chunk_shape: chunk_shape.to_vec(), chunks: std::sync::Arc::new(chunks) };
        Some(SourceChunks { struct_offsets, storage })
    }

    fn repacked_chunked(
        &mut self,
        v: &VarScan<'_>,
        repack: &Repack,
        chunk_shape: &[u64],
        fill: &FillValue,
    ) -> Result<Option<Translated>, ScanError> {
        let (stored_size, packed_size) = (repack.source_size, v.data_type.size());
        let chunk_bytes = chunk_shape.iter().try_fold(stored_size as u64, |n, &d| n.checked_mul(d));
        if chunk_bytes.is_none_or(|b| b > MAX_REPACKED_BYTES) {
            let msg = format!("chunks of shape {chunk_shape:?} of {stored_size}-byte compounds are over 1 GiB");
            return Err(self.variable_error(&v.var.path, "repacking chunks", msg));
        }
        let mut filters = Vec::with_capacity(v.info.filters.len());
        for f in &v.info.filters {
            let spec = FilterSpec { id: f.id, name: &f.name, cd_values: &f.cd_values };
            match filter_codec(&spec, stored_size) {
                Ok(codec) => filters.push(codec),
                Err(e) => return self.skip(v.var, e.to_string()).map(|_| None),
            }
        }
        let bytes = Codec::Bytes { endian: v.endian };
        let chain = |codecs: Vec<Codec>| {
            CodecChain::new([vec![bytes.clone()], codecs].concat())
                .map_err(|e| self.variable_error(&v.var.path, "building codecs", e))
        };
        // The file's codecs, over stored elements left in file order.
        let source = ArrayCodecs {
            bytes: bytes.clone(),
            filters: filters.iter().cloned().map(Filter::Codec).collect(),
            full: chain(filters.clone())?,
            element_size: stored_size,
            swap: ByteSwap::Unit(1),
        };
        let packed_filters: Vec<Codec> = filters.iter().map(|c| for_packed(c, packed_size)).collect();
        let full = chain(packed_filters.clone())?;
        let packed = ArrayCodecs {
            bytes: bytes.clone(),
            filters: packed_filters.into_iter().map(Filter::Codec).collect(),
            full: full.clone(),
            element_size: packed_size,
            swap: v.data_type.byte_swap(),
        };
        let grid =
            ChunkGrid::regular(&v.shape, chunk_shape).map_err(|e| self.variable_error(&v.var.path, "chunk grid", e))?;
        let mut chunks = chunk_table_for(self.path, &v.var.path, &grid)?.owned_in(&self.options.owned_budget);
        let mut stored: Vec<(Vec<u64>, StoredChunk)> = Vec::new();
        let max_dims = v.var.dataset.max_dims().map(<[u64]>::to_vec);
        let mut visit = |origin: &[u64], chunk: StoredChunk| stored.push((origin.to_vec(), chunk));
        layout::visit_chunks(&self.file, &v.info, &v.index_extent, max_dims.as_deref(), &mut visit)
            .map_err(|e| self.variable_error(&v.var.path, "locating chunks", e))?;
        let pack = |elements: &[u8]| {
            let mut out = Vec::with_capacity(elements.len() / stored_size.max(1) * packed_size);
            repack.pack(elements, &mut out);
            out
        };
        let file_len = self.bytes.len();
        if let Some((_, c)) =
            stored.iter().find(|(_, c)| c.address.checked_add(c.size).is_none_or(|end| end > file_len))
        {
            let msg = format!(
                "the chunk of {} bytes at offset {} lies past the end of the file ({file_len} bytes)",
                c.size, c.address
            );
            return Err(self.variable_error(&v.var.path, "locating chunks", msg));
        }
        let rewritten = stored.len() as u64;
        for (origin, chunk) in stored {
            let coords: Vec<u64> = origin.iter().zip(chunk_shape).map(|(o, c)| o / c).collect();
            let linear = grid.linear_index(&coords);
            // Elements past the HDF5 extent (a netCDF view longer than the dataset) read as fill.
            let valid: Vec<u64> =
                (0..origin.len()).map(|d| chunk_shape[d].min(v.stored_shape[d].saturating_sub(origin[d]))).collect();
            let raw = self.read_raw(&v.var.path, chunk.address, chunk.size)?;
            let owned = source
                .repack(&raw, chunk.filter_mask, chunk_shape, &valid, fill.as_bytes(), &pack, &packed)
                .map_err(|e| self.variable_error(&v.var.path, &format!("repacking chunk {linear}"), e))?;
            let entry = chunks.push_owned(&owned).map_err(self.owned_error(&v.var.path))?;
            chunks.set(linear as usize, entry);
        }
        Ok(Some(Translated { grid, codecs: full, chunks, rewritten, copied: None }))
    }

    fn repacked_contiguous(
        &mut self,
        v: &VarScan<'_>,
        repack: &Repack,
        address: Option<u64>,
        size: Option<u64>,
    ) -> Result<Translated, ScanError> {
        let (stored_size, packed_size) = (repack.source_size as u64, v.data_type.size() as u64);
        self.check_contiguous(v, stored_size, address, size)?;
        // Slabs of packed elements; each one's elements are stored at `stored_size` bytes apiece.
        let (grid, slabs) = slab_layout(&v.shape, packed_size, 0, 0, self.options.max_slab_bytes)
            .map_err(|e| self.variable_error(&v.var.path, "chunk grid", e))?;
        let Some(address) = address else {
            return Ok(Translated {
                grid,
                codecs: CodecChain::raw(v.endian),
                chunks: ChunkTable::missing(slabs.len()),
                rewritten: 0,
                copied: None,
            });
        };
        let mut chunks = ChunkTable::missing(slabs.len()).owned_in(&self.options.owned_budget);
        for (linear, slab) in slabs.iter().enumerate() {
            let ChunkEntry::Source { offset, length, .. } = *slab else { continue };
            let (first, count) = (offset / packed_size, length / packed_size);
            let raw = self.read_raw(&v.var.path, address + first * stored_size, count * stored_size)?;
            let mut packed = Vec::with_capacity(length as usize);
            repack.pack(&raw, &mut packed);
            // The raw chain (`bytes` in the file's byte order) stores the packed bytes as they are.
            let entry = chunks.push_owned(&packed).map_err(self.owned_error(&v.var.path))?;
            chunks.set(linear, entry);
        }
        let rewritten = slabs.len() as u64;
        Ok(Translated { grid, codecs: CodecChain::raw(v.endian), chunks, rewritten, copied: None })
    }

    fn repacked_compact(&mut self, v: &VarScan<'_>, repack: &Repack, bytes: &[u8]) -> Result<Translated, ScanError> {
        let chunk_shape: Vec<u64> = v.shape.iter().map(|&n| n.max(1)).collect();
        let grid = ChunkGrid::regular(&v.shape, &chunk_shape)
            .map_err(|e| self.variable_error(&v.var.path, "chunk grid", e))?;
        let mut chunks = ChunkTable::missing(grid.num_chunks() as usize).owned_in(&self.options.owned_budget);
        let one = grid.num_chunks() == 1;
        if one {
            let len = v.shape.iter().product::<u64>() * repack.source_size as u64;
            if bytes.len() as u64 != len {
                let msg = format!("compact data of {} bytes does not hold shape {:?}", bytes.len(), v.shape);
                return Err(self.variable_error(&v.var.path, "reading layout", msg));
            }
            let mut packed = Vec::with_capacity(v.data_type.size() * bytes.len() / repack.source_size.max(1));
            repack.pack(bytes, &mut packed);
            let entry = chunks.push_owned(&packed).map_err(self.owned_error(&v.var.path))?;
            chunks.set(0, entry);
        }
        Ok(Translated { grid, codecs: CodecChain::raw(v.endian), chunks, rewritten: u64::from(one), copied: None })
    }
}

/// `codec` (one of the file's filters) for chunks of packed elements of `packed_size` bytes: the
/// codecs that name an element size take the packed one.
fn for_packed(codec: &Codec, packed_size: usize) -> Codec {
    match codec {
        Codec::Shuffle { .. } => Codec::Shuffle { element_size: packed_size },
        Codec::Blosc { cname, clevel, shuffle, blocksize, .. } => Codec::Blosc {
            cname: *cname,
            clevel: *clevel,
            shuffle: *shuffle,
            typesize: packed_size,
            blocksize: *blocksize,
        },
        other => other.clone(),
    }
}

/// BES's `structOffset` of a padded compound: the stored offsets of the members after the first,
/// then the stored element size.
fn struct_offsets(repack: &Repack, fields: &crate::metadata::StructType) -> Option<Vec<u64>> {
    let mut offsets = Vec::with_capacity(fields.fields().len());
    let mut packed = 0usize;
    for field in fields.fields() {
        offsets.push(stored_offset(repack, packed)?);
        packed += field.data_type.size();
    }
    if offsets.is_empty() {
        return None;
    }
    offsets.remove(0);
    offsets.push(repack.source_size as u64);
    Some(offsets)
}

/// Where the byte at `packed` of a packed element lies in the stored element.
fn stored_offset(repack: &Repack, packed: usize) -> Option<u64> {
    let mut start = 0;
    for &(offset, len) in &repack.runs {
        if packed < start + len {
            return Some((offset + packed - start) as u64);
        }
        start += len;
    }
    None
}
