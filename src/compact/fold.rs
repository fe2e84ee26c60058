//! Building one compacted array: its new grid, kept references, and the folded chunks read through
//! the store's reader and re-encoded with the array's codecs.
//!
//! Input: the array as stored (a [`VirtualArray`]), the axis and [`Piece`]s of the plan, and the
//! array's [`ArrayReader`]. Output: the array with the new grid along the axis, every kept chunk's
//! entry as it was (references untouched; store-owned bytes carried over), and every folded chunk a
//! store-owned chunk. Each folded piece is read as one slab (the piece along the axis, everything
//! along the other dimensions) when that fits `max_memory`, else chunk by chunk; the slab's chunks
//! are cut, padded with the fill value to their full edges (a chunk at the end of another dimension
//! extends past the array) and encoded in parallel (rayon).

use rayon::prelude::*;

use super::plan::{new_dim, Piece};
use super::CompactError;
use crate::dataset::{ChunkTable, VirtualArray};
use crate::grid::{ChunkGrid, DimSelection, Selection};
use crate::manifest::ChunkEntry;
use crate::metadata::ArrayMetadata;
use crate::ndcopy::unravel;
use crate::read::{ArrayReader, ReadOptions};
use crate::rechunk::{encode_chunk, Region};

/// Where and how folded chunks are read.
pub(super) struct Folding<'a> {
    /// The store, for messages.
    pub(super) store: &'a str,
    /// Largest slab read at once, in bytes.
    pub(super) max_memory: u64,
    /// The runtime the reader runs on.
    pub(super) runtime: &'a tokio::runtime::Handle,
}

/// A new chunk's grid coordinates and its encoded bytes.
type Encoded = (Vec<u64>, Vec<u8>);

/// The compacted array and the number of store-owned chunks written for it.
pub(super) fn fold_array(
    old: &VirtualArray,
    axis: usize,
    pieces: &[Piece],
    reader: &ArrayReader,
    folding: &Folding<'_>,
) -> Result<(VirtualArray, u64), CompactError> {
    let build =
        |reason: String| CompactError::Build { store: folding.store.to_string(), array: old.path.clone(), reason };
    let old_grid = &old.metadata.chunk_grid;
    let mut dims = old_grid.dims().to_vec();
    dims[axis] = new_dim(old_grid.dim(axis), pieces).map_err(|e| build(e.to_string()))?;
    let grid = ChunkGrid::new(dims);
    let mut metadata = old.metadata.clone();
    metadata.chunk_grid = grid.clone();
    let mut entries = kept_entries(old, &grid, axis, pieces);
    let mut owned = old.chunks.owned.clone();
    let mut written = 0;
    for (j, piece) in pieces.iter().enumerate() {
        let Piece::Fold { first, last, .. } = *piece else { continue };
        let present: Vec<Vec<u64>> =
            piece_chunks(&grid, axis, j as u64).filter(|coords| covers_data(old, axis, coords, first..last)).collect();
        for (coords, bytes) in fold_piece(&metadata, axis, &present, reader, folding)? {
            let offset = owned.push(&bytes).map_err(|e| build(e.to_string()))?;
            let linear = grid.linear_index(&coords) as usize;
            entries[linear] = ChunkEntry::Owned { offset, length: bytes.len() as u64 };
            written += 1;
        }
    }
    let referenced: u64 =
        entries.iter().map(|e| if let ChunkEntry::Owned { length, .. } = e { *length } else { 0 }).sum();
    let mut chunks = ChunkTable::from_entries(entries, owned);
    // Owned bytes of folded chunks are dropped (one copy of the rest); none dropped: no copy.
    if referenced != chunks.owned.len() {
        chunks.compact_owned().map_err(|e| build(e.to_string()))?;
    }
    let array = VirtualArray {
        path: old.path.clone(),
        metadata,
        chunks,
        rewritten_chunks: old.rewritten_chunks,
        digest: old.digest,
        tails: Vec::new(),
    };
    Ok((array, written))
}

/// Every chunk of the new grid: a kept chunk's old entry, `Missing` for folded ones (set later).
fn kept_entries(old: &VirtualArray, grid: &ChunkGrid, axis: usize, pieces: &[Piece]) -> Vec<ChunkEntry> {
    let old_grid = &old.metadata.chunk_grid;
    (0..grid.num_chunks())
        .map(|linear| {
            let mut coords = grid.chunk_coords(linear);
            match pieces.get(coords[axis] as usize) {
                Some(Piece::Keep(c)) => {
                    coords[axis] = *c;
                    old.chunks.get(old_grid.linear_index(&coords) as usize).unwrap_or(ChunkEntry::Missing)
                }
                _ => ChunkEntry::Missing,
            }
        })
        .collect()
}

/// The coordinates of the new grid's chunks at `index` along `axis`, in row-major order.
fn piece_chunks(grid: &ChunkGrid, axis: usize, index: u64) -> impl Iterator<Item = Vec<u64>> {
    let mut shape = grid.grid_shape();
    shape[axis] = 1;
    let count: u64 = shape.iter().product();
    (0..count).map(move |k| {
        let mut coords = unravel(k, &shape);
        coords[axis] = index;
        coords
    })
}

/// Whether any old chunk the new chunk at `coords` overlaps (old chunks `along` on the axis) holds
/// data: a chunk made of missing chunks only stays missing.
fn covers_data(old: &VirtualArray, axis: usize, coords: &[u64], along: std::ops::Range<u64>) -> bool {
    let old_grid = &old.metadata.chunk_grid;
    along.into_iter().any(|c| {
        let mut at = coords.to_vec();
        at[axis] = c;
        !matches!(old.chunks.get(old_grid.linear_index(&at) as usize), Some(ChunkEntry::Missing) | None)
    })
}

/// The encoded bytes of the chunks `present` of one folded piece (new grid coordinates).
fn fold_piece(
    metadata: &ArrayMetadata,
    axis: usize,
    present: &[Vec<u64>],
    reader: &ArrayReader,
    folding: &Folding<'_>,
) -> Result<Vec<Encoded>, CompactError> {
    let Some(first) = present.first() else { return Ok(Vec::new()) };
    let grid = &metadata.chunk_grid;
    let size = metadata.element_size() as u64;
    let mut slab_shape = grid.shape();
    slab_shape[axis] = grid.dim(axis).valid(first[axis]);
    let slab_bytes = slab_shape.iter().try_fold(size, |acc, &n| acc.checked_mul(n));
    if slab_bytes.is_some_and(|b| b <= folding.max_memory) && present.len() > 1 {
        let mut origin = vec![0; slab_shape.len()];
        origin[axis] = grid.dim(axis).start(first[axis]);
        let slab = Region { origin, shape: slab_shape };
        return fold_slab(metadata, axis, present, &slab, reader, folding);
    }
    let mut out = Vec::with_capacity(present.len());
    for coords in present {
        let region = Region {
            origin: grid.chunk_origin(coords),
            shape: coords.iter().enumerate().map(|(d, &c)| grid.dim(d).valid(c)).collect(),
        };
        let data = read_region(reader, &region, folding)?;
        out.extend(encode_chunks(metadata, reader.path(), std::slice::from_ref(coords), &region, &data, folding)?);
    }
    Ok(out)
}

/// The chunks `present` of a slab that fits in memory, read band by band along the first other
/// dimension of more than one chunk (one chunk row each), each band encoded on another thread while
/// the next one is read: the reads' waits for their files are filled with encoding. The chunks come
/// out in the order of `present` (row-major), as from one read of the whole slab.
fn fold_slab(
    metadata: &ArrayMetadata,
    axis: usize,
    present: &[Vec<u64>],
    slab: &Region,
    reader: &ArrayReader,
    folding: &Folding<'_>,
) -> Result<Vec<Encoded>, CompactError> {
    let grid = &metadata.chunk_grid;
    let band_dim = (0..grid.ndim()).find(|&d| d != axis && grid.dim(d).num_chunks() > 1);
    let Some(band_dim) = band_dim else {
        let data = read_region(reader, slab, folding)?;
        return encode_chunks(metadata, reader.path(), present, slab, &data, folding);
    };
    let dim = grid.dim(band_dim);
    let bands: Vec<(Region, &[Vec<u64>])> = present
        .chunk_by(|a, b| a[band_dim] == b[band_dim])
        .map(|coords| {
            let mut band = slab.clone();
            band.origin[band_dim] = dim.start(coords[0][band_dim]);
            band.shape[band_dim] = dim.valid(coords[0][band_dim]);
            (band, coords)
        })
        .collect();
    let mut out = Vec::with_capacity(present.len());
    let path = reader.path();
    std::thread::scope(|scope| {
        let mut encoding: Option<std::thread::ScopedJoinHandle<'_, _>> = None;
        for (band, coords) in &bands {
            let data = read_region(reader, band, folding)?;
            if let Some(previous) = encoding.take() {
                out.extend(joined(previous)?);
            }
            encoding = Some(scope.spawn(move || encode_chunks(metadata, path, coords, band, &data, folding)));
        }
        if let Some(last) = encoding {
            out.extend(joined(last)?);
        }
        Ok(out)
    })
}

/// The result of an encoding thread (a panic in it is resumed here).
fn joined(
    handle: std::thread::ScopedJoinHandle<'_, Result<Vec<Encoded>, CompactError>>,
) -> Result<Vec<Encoded>, CompactError> {
    handle.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}

/// The decoded elements of `region`, read through the store's reader.
fn read_region(reader: &ArrayReader, region: &Region, folding: &Folding<'_>) -> Result<Vec<u8>, CompactError> {
    let dims = region.origin.iter().zip(&region.shape).map(|(&o, &n)| DimSelection::from(o..o + n));
    let selection = Selection::new(dims, &reader.shape())
        .map_err(|source| crate::read::ReadError::Selection { array: reader.path().to_string(), source })?;
    let options = ReadOptions { max_memory: folding.max_memory, ..ReadOptions::default() };
    Ok(folding.runtime.block_on(reader.read(&selection, &options))?.bytes)
}

/// The chunks at `coords` cut from `data` (the elements of `region`), padded and encoded in parallel.
fn encode_chunks(
    metadata: &ArrayMetadata,
    array: &str,
    coords: &[Vec<u64>],
    region: &Region,
    data: &[u8],
    folding: &Folding<'_>,
) -> Result<Vec<Encoded>, CompactError> {
    coords
        .par_iter()
        .map(|coords| {
            let bytes = encode_chunk(metadata, coords, region, data).map_err(|source| CompactError::Encode {
                store: folding.store.to_string(),
                array: array.to_string(),
                chunk: coords.clone(),
                source,
            })?;
            Ok((coords.clone(), bytes))
        })
        .collect()
}
