//! Icechunk manifests built straight from a dataset's chunk tables.
//!
//! Icechunk's own write path records every reference in a session's change set (a map entry and
//! two heap objects a reference), then copies them into manifests and zstd-compresses each
//! location on its own: about 4 microseconds a reference. A virtual dataset already holds its
//! references sorted, with one location per source file, so vzarr writes the manifest flatbuffer
//! itself, in the layout `icechunk-format` reads (verified by Icechunk when it reads one, and here
//! in builds with debug assertions; `icechunk/object` writes the file):
//! - one manifest per [`Piece`], a run of rows of one array ([`plan`]), in row-major chunk order,
//!   which is the lexicographic order of chunk indices that Icechunk's lookups binary-search;
//! - each source's location (and ETag) written once per manifest and shared by every reference to
//!   it, where Icechunk writes a compressed copy per reference: no compression dictionary, smaller
//!   manifests, and a few dozen nanoseconds a reference;
//! - store-owned chunks with the payloads Icechunk gave them when they were stored (inline bytes
//!   or a chunk object).

use std::collections::{BTreeMap, HashMap};

use flatbuffers::{FlatBufferBuilder, WIPOffset};
use icechunk::format::flatbuffers::generated;
use icechunk::format::manifest::{Checksum, ChunkPayload, Manifest, ManifestExtents};
use icechunk::format::{ManifestId, NodeId};

use super::nodes::Sources;
use crate::dataset::{VirtualArray, VirtualDataset};
use crate::grid::ChunkGrid;
use crate::manifest::ChunkEntry;

/// Default chunks per manifest ([`super::IcechunkOptions::manifest_chunks`]): 2^16, so that a read
/// of one chunk fetches and decodes a manifest of at most 65,536 references (10^7 references: 153
/// manifests; open + read one chunk 19 ms where manifests of 2^20 took 0.34 s, and an append rewrites
/// a manifest 16 times smaller), at no cost in commit time.
///
/// Needs feature `icechunk`.
pub const DEFAULT_MANIFEST_CHUNKS: u64 = 1 << 16;

/// A run of one array's chunks, in linear (row-major) order: one manifest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Piece {
    pub(super) array: usize,
    pub(super) start: u64,
    pub(super) end: u64,
}

/// The manifests to write: per array, runs of whole rows along the first axis of at most
/// `per_manifest` chunks (one row when a row alone is larger), or the whole array when it has no
/// more chunks than that. The same splits as `write::write_config` gives Icechunk, so a
/// later `vzarr append` rewrites only the manifests it touches.
pub(super) fn plan(dataset: &VirtualDataset, per_manifest: u64) -> Vec<Piece> {
    let mut pieces = Vec::new();
    for (index, array) in dataset.arrays.iter().enumerate() {
        let n = array.chunks.len() as u64;
        let step = chunks_per_manifest(array, per_manifest);
        let mut start = 0;
        while start < n {
            let end = start.saturating_add(step).min(n);
            pieces.push(Piece { array: index, start, end });
            start = end;
        }
    }
    pieces
}

/// The chunks of each of `array`'s manifests (the last may hold fewer): whole rows along the
/// first axis, at most `per_manifest` chunks (one row when a row alone is larger), or the whole
/// array when it has no more chunks than that.
pub(super) fn chunks_per_manifest(array: &VirtualArray, per_manifest: u64) -> u64 {
    let n = array.chunks.len() as u64;
    match array.metadata.chunk_grid.grid_shape().first() {
        Some(&rows) if n > per_manifest && rows > 0 => {
            let per_row = (n / rows).max(1);
            per_row * (per_manifest / per_row).max(1)
        }
        _ => n.max(1),
    }
}

/// One built manifest and the extents of the chunks it holds.
pub(super) struct Built {
    /// The manifest flatbuffer.
    pub(super) bytes: Vec<u8>,
    /// The references it holds.
    pub(super) refs: u32,
    pub(super) extents: ManifestExtents,
    /// The index of the array in the dataset.
    pub(super) array: usize,
}

/// The chunk indices of an array's chunks from a linear index on, in row-major order, without
/// allocating per chunk.
pub(super) struct Odometer {
    shape: Vec<u64>,
    coords: Vec<u32>,
}

impl Odometer {
    /// Starts at linear index `start` of `grid`; fails when an index exceeds 32 bits (Icechunk's
    /// limit).
    pub(super) fn new(grid: &ChunkGrid, start: u64) -> Result<Odometer, super::nodes::IndexLimit> {
        let shape = grid.grid_shape();
        if shape.iter().any(|&n| n > u64::from(u32::MAX)) {
            return Err(super::nodes::IndexLimit);
        }
        let coords = grid.chunk_coords(start).iter().map(|&c| c as u32).collect();
        Ok(Odometer { shape, coords })
    }

    /// The current chunk's indices.
    pub(super) fn coords(&self) -> &[u32] {
        &self.coords
    }

    /// Moves to the next chunk in row-major order.
    pub(super) fn advance(&mut self) {
        for (c, &n) in self.coords.iter_mut().zip(&self.shape).rev() {
            *c += 1;
            if u64::from(*c) < n {
                return;
            }
            *c = 0;
        }
    }
}

/// Where a source's references point, written once per manifest.
#[derive(Clone, Copy)]
struct SharedSource<'fbb> {
    location: WIPOffset<&'fbb str>,
    etag: Option<WIPOffset<&'fbb str>>,
    last_modified: u32,
}

/// Builds the manifest of `piece` (None when it holds no chunk). `owned` maps the linear index
/// of each store-owned chunk of the array to the payload Icechunk stored it as.
pub(super) fn build(
    id: &ManifestId,
    node: &NodeId,
    array: &VirtualArray,
    piece: &Piece,
    sources: &Sources,
    owned: &BTreeMap<u64, ChunkPayload>,
) -> Result<Option<Built>, String> {
    let entries = array.chunks.range(piece.start as usize..piece.end as usize);
    let present = entries.clone().filter(|e| !matches!(e, ChunkEntry::Missing)).count();
    if present == 0 {
        return Ok(None);
    }
    let mut odometer = Odometer::new(&array.metadata.chunk_grid, piece.start).map_err(|e| e.to_string())?;
    let ndim = odometer.coords().len();
    let mut builder = FlatBufferBuilder::with_capacity(present.saturating_mul(48 + 4 * ndim).min(1 << 30) + 4096);
    let mut shared: HashMap<u32, SharedSource> = HashMap::new();
    let mut last: Option<(u32, SharedSource)> = None;
    let mut refs = Vec::with_capacity(present);
    let mut from = vec![u32::MAX; ndim];
    let mut to = vec![0u32; ndim];
    for (i, entry) in entries.enumerate() {
        let linear = piece.start + i as u64;
        if !matches!(entry, ChunkEntry::Missing) {
            for ((f, t), &c) in from.iter_mut().zip(to.iter_mut()).zip(odometer.coords()) {
                *f = (*f).min(c);
                *t = (*t).max(c + 1);
            }
        }
        match entry {
            ChunkEntry::Missing => {}
            ChunkEntry::Source { length: 0, .. } => {
                return Err(format!("chunk {:?}: a zero-length reference (Icechunk refuses them)", odometer.coords()));
            }
            ChunkEntry::Source { source, offset, length } => {
                let target = match last {
                    Some((s, target)) if s == source => target,
                    _ => {
                        let target = match shared.get(&source) {
                            Some(&target) => target,
                            None => {
                                let target = share(&mut builder, sources, source)
                                    .ok_or_else(|| format!("chunk {linear}: no source {source}"))?;
                                shared.insert(source, target);
                                target
                            }
                        };
                        last = Some((source, target));
                        target
                    }
                };
                let index = Some(builder.create_vector(odometer.coords()));
                let args = generated::ChunkRefArgs {
                    index,
                    location: Some(target.location),
                    offset,
                    length,
                    checksum_etag: target.etag,
                    checksum_last_modified: target.last_modified,
                    ..Default::default()
                };
                refs.push(generated::ChunkRef::create(&mut builder, &args));
            }
            ChunkEntry::Owned { .. } => {
                let payload = owned
                    .get(&linear)
                    .ok_or_else(|| format!("chunk {linear}: the store-owned chunk was not stored"))?;
                let index = Some(builder.create_vector(odometer.coords()));
                refs.push(owned_ref(&mut builder, index, payload)?);
            }
        }
        odometer.advance();
    }
    let node_id = generated::ObjectId8::new(&node.0);
    let refs = Some(builder.create_vector(&refs));
    let array_args = generated::ArrayManifestArgs { node_id: Some(&node_id), refs, ..Default::default() };
    let arrays = [generated::ArrayManifest::create(&mut builder, &array_args)];
    let arrays = Some(builder.create_vector(&arrays));
    let manifest_id = generated::ObjectId12::new(&id.0);
    let root = generated::Manifest::create(
        &mut builder,
        &generated::ManifestArgs { id: Some(&manifest_id), arrays, ..Default::default() },
    );
    builder.finish(root, Some("Ichk"));
    let (mut bytes, head) = builder.collapse();
    bytes.drain(..head);
    if cfg!(debug_assertions) {
        Manifest::verify_buffer(&bytes).map_err(|e| format!("the manifest built does not verify: {e}"))?;
    }
    let refs = u32::try_from(present).map_err(|_| format!("{present} references in one manifest"))?;
    Ok(Some(Built { bytes, refs, extents: ManifestExtents::new(&from, &to), array: piece.array }))
}

/// Writes source `source`'s location and checksum into the manifest being built.
fn share<'fbb>(builder: &mut FlatBufferBuilder<'fbb>, sources: &Sources, source: u32) -> Option<SharedSource<'fbb>> {
    let url = sources.urls.get(source as usize)?;
    let location = builder.create_string(url.url());
    let (etag, last_modified) = match sources.checksums.get(source as usize)? {
        Some(Checksum::ETag(etag)) => (Some(builder.create_string(&etag.0)), 0),
        Some(Checksum::LastModified(seconds)) => (None, seconds.0),
        None => (None, 0),
    };
    Some(SharedSource { location, etag, last_modified })
}

/// A store-owned chunk's reference: its bytes inline, or the chunk object Icechunk wrote.
fn owned_ref<'fbb>(
    builder: &mut FlatBufferBuilder<'fbb>,
    index: Option<WIPOffset<flatbuffers::Vector<'fbb, u32>>>,
    payload: &ChunkPayload,
) -> Result<WIPOffset<generated::ChunkRef<'fbb>>, String> {
    let args = match payload {
        ChunkPayload::Inline(bytes) => {
            let inline = Some(builder.create_vector(bytes.as_ref()));
            generated::ChunkRefArgs { index, inline, ..Default::default() }
        }
        ChunkPayload::Ref(chunk) => {
            let id = generated::ObjectId12::new(&chunk.id.0);
            let args = generated::ChunkRefArgs {
                index,
                offset: chunk.offset,
                length: chunk.length,
                chunk_id: Some(&id),
                ..Default::default()
            };
            return Ok(generated::ChunkRef::create(builder, &args));
        }
        other => return Err(format!("a store-owned chunk stored as {other:?}")),
    };
    Ok(generated::ChunkRef::create(builder, &args))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grid::ChunkDim;

    #[test]
    fn the_odometer_walks_row_major_order() {
        let grid =
            ChunkGrid::new(vec![ChunkDim::from_edges(90, &[31, 28, 31]).unwrap(), ChunkDim::regular(10, 4).unwrap()]);
        let mut odometer = Odometer::new(&grid, 1).unwrap();
        for linear in 1..grid.num_chunks() {
            let expected: Vec<u32> = grid.chunk_coords(linear).iter().map(|&c| c as u32).collect();
            assert_eq!(odometer.coords(), expected.as_slice(), "linear {linear}");
            odometer.advance();
        }
    }
}
