//! The transaction log of a snapshot that replaces a branch's content with a dataset, built
//! straight from the chunk tables.
//!
//! It lists what Icechunk's own commit of the same change would: the base snapshot's nodes as
//! deleted, the new nodes as new, and every stored chunk of every array as updated (how `diff`
//! and conflict detection see the commit). Icechunk's `TransactionLog::new_from_parts` takes the
//! chunk indices as one heap vector each and builds the flatbuffer in memory (about 28 bytes a chunk
//! of a 2-d array: 2.8 GB for 10^8 chunks); here they go from a bitmap of the stored chunks into the
//! compressor, the flatbuffer laid out front to back (every size is known beforehand, so every
//! offset is), in the layout `icechunk-format` reads (sorted node ids, chunks in row-major order).
//! The [`Plan`] owns what it needs (a bit per chunk), so the log is written on a thread of its own
//! while the manifests are.

use std::io::Write;

use icechunk::format::format_constants::SpecVersionBin;
use icechunk::format::snapshot::{NodeData, NodeSnapshot, Snapshot};
use icechunk::format::transaction_log::TransactionLog;
use icechunk::format::{NodeId, SnapshotId};

use super::manifests::Odometer;
use super::object::{self, Kind, ObjectError};
use crate::dataset::VirtualDataset;
use crate::grid::ChunkGrid;
use crate::manifest::ChunkEntry;

/// What a transaction log lists, owned.
pub(super) struct Plan {
    id: SnapshotId,
    new_groups: Vec<NodeId>,
    new_arrays: Vec<NodeId>,
    deleted_groups: Vec<NodeId>,
    deleted_arrays: Vec<NodeId>,
    /// Per array with stored chunks, sorted by node id: its grid and which chunks are stored.
    arrays: Vec<(NodeId, ChunkGrid, Vec<u64>)>,
}

impl Plan {
    /// The log of snapshot `id`, which replaces `base`'s nodes by `nodes`; `ids` are the dataset
    /// arrays' node ids.
    pub(super) fn new(
        id: &SnapshotId,
        base: &Snapshot,
        nodes: &[NodeSnapshot],
        dataset: &VirtualDataset,
        ids: &[NodeId],
    ) -> Result<Plan, String> {
        let (mut deleted_groups, mut deleted_arrays) = (Vec::new(), Vec::new());
        for node in base.iter() {
            let node = node.map_err(|e| e.to_string())?;
            match node.node_data {
                NodeData::Group => deleted_groups.push(node.id),
                NodeData::Array { .. } => deleted_arrays.push(node.id),
            }
        }
        let (mut new_groups, mut new_arrays) = (Vec::new(), Vec::new());
        for node in nodes {
            match node.node_data {
                NodeData::Group => new_groups.push(node.id.clone()),
                NodeData::Array { .. } => new_arrays.push(node.id.clone()),
            }
        }
        let mut arrays = Vec::new();
        for (array, id) in dataset.arrays.iter().zip(ids) {
            let mut stored = vec![0u64; array.chunks.len().div_ceil(64)];
            for (i, entry) in array.chunks.iter().enumerate() {
                if !matches!(entry, ChunkEntry::Missing) {
                    stored[i / 64] |= 1 << (i % 64);
                }
            }
            if stored.iter().any(|&word| word != 0) {
                arrays.push((id.clone(), array.metadata.chunk_grid.clone(), stored));
            }
        }
        for list in [&mut new_groups, &mut new_arrays, &mut deleted_groups, &mut deleted_arrays] {
            list.sort();
        }
        arrays.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(Plan { id: id.clone(), new_groups, new_arrays, deleted_groups, deleted_arrays, arrays })
    }

    /// The transaction log file (Icechunk's header and one zstd frame), written as the flatbuffer is
    /// laid out: front to back, straight into the compressor, so that memory holds the bitmaps and the
    /// compressed file but never the flatbuffer of every chunk index (28 bytes a chunk of a 2-d
    /// array). Builds with debug assertions lay it out in memory first and verify it as Icechunk's
    /// reader does.
    pub(super) fn file(&self, spec: SpecVersionBin, level: i32) -> Result<Vec<u8>, ObjectError> {
        self.file_into(Vec::new(), spec, level)
    }

    /// [`Plan::file`] written into `out` (a local repository's file: then memory holds only the
    /// bitmaps).
    pub(super) fn file_into<W: Write>(&self, out: W, spec: SpecVersionBin, level: i32) -> Result<W, ObjectError> {
        if cfg!(debug_assertions) {
            let mut bytes = Vec::new();
            self.write(&mut bytes).map_err(ObjectError::Write)?;
            TransactionLog::verify_buffer(&bytes).map_err(|e| ObjectError::Verify(Box::new(e)))?;
            return object::write_file(out, Kind::TransactionLog, spec, level, bytes.len() as u64, |w| {
                w.write_all(&bytes)
            });
        }
        object::write_file(out, Kind::TransactionLog, spec, level, self.len(), |out| self.write(out))
    }

    /// Bytes of the flatbuffer [`Plan::write`] writes.
    pub(super) fn len(&self) -> u64 {
        let ids = [&self.new_groups, &self.new_arrays, &self.deleted_groups, &self.deleted_arrays];
        let lists: u64 = ids.iter().map(|list| 4 + 8 * list.len() as u64).sum::<u64>() + 4 + 4 + 4;
        let arrays = 4 + 4 * self.arrays.len() as u64 + CHUNK_VTABLE + ARRAY_VTABLE;
        let chunks: u64 = self
            .arrays
            .iter()
            .map(|(_, grid, stored)| ARRAY_TABLE + 4 + stored_count(stored) * (4 + entry_len(grid)))
            .sum();
        HEAD + ROOT_VTABLE + ROOT_TABLE + lists + arrays + chunks
    }

    /// Writes the flatbuffer, front to back (offsets computed from the sizes of what follows).
    ///
    /// Layout, every position 4-byte aligned: the root offset and file identifier; the root vtable
    /// and table; the node id vectors (new groups, new arrays, deleted groups, deleted arrays, then
    /// the empty updated arrays and groups and moved nodes); the vector of updated-chunk tables; the
    /// vtables shared by every `ChunkIndices` and every `ArrayUpdatedChunks` table; then per array
    /// its table, the vector of its chunk tables and each chunk's table followed by its coordinates.
    pub(super) fn write(&self, out: &mut dyn Write) -> std::io::Result<()> {
        let mut w = Sink { out, at: 0 };
        w.u32((HEAD + ROOT_VTABLE) as u32)?;
        w.bytes(b"Ichk")?;
        // Root vtable: 9 fields (id, six node lists, updated chunks, moved nodes), then 2 bytes of padding.
        let vtable_at = w.at;
        w.u16(4 + 2 * 9)?;
        w.u16(ROOT_TABLE as u16)?;
        for field in [4u16, 16, 20, 24, 28, 32, 36, 40, 44] {
            w.u16(field)?;
        }
        w.u16(0)?;
        let table_at = w.at;
        w.i32((table_at - vtable_at) as i32)?;
        w.bytes(&self.id.0)?;
        // The eight offsets, fields 1..=8 at table + 16 + 4i, to the vectors written right after.
        let empty: Vec<NodeId> = Vec::new();
        let lists = [&self.new_groups, &self.new_arrays, &self.deleted_groups, &self.deleted_arrays, &empty, &empty];
        let mut target = table_at + ROOT_TABLE;
        let mut offsets = Vec::with_capacity(8);
        for list in &lists {
            offsets.push(target);
            target += 4 + 8 * list.len() as u64;
        }
        let updated_at = target;
        let moved_at = updated_at + 4 + 4 * self.arrays.len() as u64;
        offsets.push(updated_at);
        offsets.push(moved_at);
        for (i, at) in offsets.iter().enumerate() {
            w.u32((at - (table_at + 16 + 4 * i as u64)) as u32)?;
        }
        for list in lists {
            w.u32(list.len() as u32)?;
            for id in list {
                w.bytes(&id.0)?;
            }
        }
        // The updated chunks: one table per array, laid out after the moved nodes and the two vtables.
        let chunk_vtable_at = moved_at + 4;
        let array_vtable_at = chunk_vtable_at + CHUNK_VTABLE;
        let mut array_at = array_vtable_at + ARRAY_VTABLE;
        w.u32(self.arrays.len() as u32)?;
        for (i, (_, grid, stored)) in self.arrays.iter().enumerate() {
            w.u32((array_at - (updated_at + 4 + 4 * i as u64)) as u32)?;
            array_at += ARRAY_TABLE + 4 + stored_count(stored) * (4 + entry_len(grid));
        }
        w.u32(0)?; // moved nodes: none
                   // ChunkIndices: one field (coords, at 4); table of 8 bytes.
        w.u16(6)?;
        w.u16(8)?;
        w.u16(4)?;
        w.u16(0)?;
        // ArrayUpdatedChunks: node_id (an 8-byte struct) at 4, chunks at 12; table of 16 bytes.
        w.u16(8)?;
        w.u16(ARRAY_TABLE as u16)?;
        w.u16(4)?;
        w.u16(12)?;
        for (node, grid, stored) in &self.arrays {
            let table_at = w.at;
            w.i32((table_at - array_vtable_at) as i32)?;
            w.bytes(&node.0)?;
            w.u32(4)?; // the chunk vector follows the table
            let count = stored_count(stored);
            let entry = entry_len(grid);
            let vector_at = w.at;
            w.u32(count as u32)?;
            let first = vector_at + 4 + 4 * count;
            for k in 0..count {
                w.u32((first + k * entry - (vector_at + 4 + 4 * k)) as u32)?;
            }
            let mut odometer = Odometer::new(grid, 0).map_err(std::io::Error::other)?;
            for linear in 0..grid.num_chunks() as usize {
                if stored[linear / 64] & (1 << (linear % 64)) != 0 {
                    let chunk_at = w.at;
                    w.i32((chunk_at - chunk_vtable_at) as i32)?;
                    w.u32(4)?; // the coordinates follow the table
                    let coords = odometer.coords();
                    w.u32(coords.len() as u32)?;
                    for &c in coords {
                        w.u32(c)?;
                    }
                }
                odometer.advance();
            }
        }
        debug_assert_eq!(w.at, self.len(), "the transaction log's length as computed");
        Ok(())
    }
}

/// Bytes before the root vtable: the root offset and the file identifier.
const HEAD: u64 = 8;
/// The root vtable: size, table size, 9 field offsets, padding.
const ROOT_VTABLE: u64 = 24;
/// The root table: its vtable offset, the 12-byte snapshot id and 8 offsets.
const ROOT_TABLE: u64 = 4 + 12 + 8 * 4;
/// The vtable of every `ChunkIndices` table (with padding).
const CHUNK_VTABLE: u64 = 8;
/// The vtable of every `ArrayUpdatedChunks` table.
const ARRAY_VTABLE: u64 = 8;
/// An `ArrayUpdatedChunks` table: its vtable offset, the 8-byte node id, the offset of its chunks.
const ARRAY_TABLE: u64 = 4 + 8 + 4;

/// Bytes of one chunk's table and coordinates in an array of `grid`'s rank.
fn entry_len(grid: &ChunkGrid) -> u64 {
    8 + 4 + 4 * grid.grid_shape().len() as u64
}

/// Chunks marked stored in a bitmap.
fn stored_count(stored: &[u64]) -> u64 {
    stored.iter().map(|word| u64::from(word.count_ones())).sum()
}

/// A writer that counts the bytes written, for the offsets.
struct Sink<'a> {
    out: &'a mut dyn Write,
    at: u64,
}

impl Sink<'_> {
    fn bytes(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.at += bytes.len() as u64;
        self.out.write_all(bytes)
    }
    fn u16(&mut self, v: u16) -> std::io::Result<()> {
        self.bytes(&v.to_le_bytes())
    }
    fn u32(&mut self, v: u32) -> std::io::Result<()> {
        self.bytes(&v.to_le_bytes())
    }
    fn i32(&mut self, v: i32) -> std::io::Result<()> {
        self.bytes(&v.to_le_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grid::ChunkDim;
    use icechunk::format::ChunkIndices;

    /// Two arrays (a 2-d one with chunks missing, a 0-d one) and groups new and deleted.
    fn plan() -> Plan {
        let grid =
            ChunkGrid::new(vec![ChunkDim::from_edges(10, &[3, 3, 4]).unwrap(), ChunkDim::regular(5, 2).unwrap()]);
        let stored = vec![0b10_1101u64];
        let scalar = ChunkGrid::new(Vec::new());
        let mut ids: Vec<NodeId> = (0..5).map(|_| NodeId::random()).collect();
        ids.sort();
        Plan {
            id: SnapshotId::random(),
            new_groups: vec![ids[0].clone()],
            new_arrays: vec![ids[1].clone(), ids[2].clone()],
            deleted_groups: vec![ids[3].clone()],
            deleted_arrays: vec![ids[4].clone()],
            arrays: vec![(ids[1].clone(), grid, stored), (ids[2].clone(), scalar, vec![1])],
        }
    }

    #[test]
    fn the_log_written_front_to_back_reads_as_icechunks_own() {
        let plan = plan();
        let mut bytes = Vec::new();
        plan.write(&mut bytes).unwrap();
        assert_eq!(bytes.len() as u64, plan.len());
        let ours = TransactionLog::from_buffer(bytes).unwrap();
        let chunks = |plan: &Plan| -> Vec<(NodeId, Vec<ChunkIndices>)> {
            plan.arrays
                .iter()
                .map(|(id, grid, stored)| {
                    let mut odometer = Odometer::new(grid, 0).unwrap();
                    let mut list = Vec::new();
                    for linear in 0..grid.num_chunks() as usize {
                        if stored[linear / 64] & (1 << (linear % 64)) != 0 {
                            list.push(ChunkIndices(odometer.coords().to_vec()));
                        }
                        odometer.advance();
                    }
                    (id.clone(), list)
                })
                .collect()
        };
        let expected = chunks(&plan);
        let theirs = TransactionLog::new_from_parts(
            &plan.id,
            plan.new_groups.clone().into_iter(),
            plan.new_arrays.clone().into_iter(),
            plan.deleted_groups.clone().into_iter(),
            plan.deleted_arrays.clone().into_iter(),
            Vec::new().into_iter(),
            Vec::new().into_iter(),
            expected.clone().into_iter().map(|(id, list)| (id, list.into_iter())),
            std::iter::empty(),
        );
        for log in [&ours, &theirs] {
            assert_eq!(log.new_groups().collect::<Vec<_>>(), plan.new_groups);
            assert_eq!(log.new_arrays().collect::<Vec<_>>(), plan.new_arrays);
            assert_eq!(log.deleted_groups().collect::<Vec<_>>(), plan.deleted_groups);
            assert_eq!(log.deleted_arrays().collect::<Vec<_>>(), plan.deleted_arrays);
            assert_eq!(log.updated_groups().count() + log.updated_arrays().count(), 0);
            let updated: Vec<(NodeId, Vec<ChunkIndices>)> =
                log.updated_chunks().map(|(id, list)| (id, list.collect())).collect();
            assert_eq!(updated, expected);
            assert_eq!(log.moves().count(), 0);
        }
        assert_eq!(expected[0].1.len(), 4, "chunks 0, 2, 3 and 5 of the 2-d array");
    }

    #[test]
    fn the_streamed_file_decompresses_to_the_same_log() {
        let plan = plan();
        let file =
            object::file_written(Kind::TransactionLog, SpecVersionBin::default(), 3, plan.len(), |w| plan.write(w))
                .unwrap();
        let mut bytes = Vec::new();
        plan.write(&mut bytes).unwrap();
        // The zstd frame follows Icechunk's header (magic, client name, three bytes).
        let start = file.windows(4).position(|w| w == [0x28, 0xb5, 0x2f, 0xfd]).unwrap();
        assert_eq!(zstd::stream::decode_all(&file[start..]).unwrap(), bytes);
    }

    #[test]
    fn a_local_repository_gets_the_same_file_streamed_into_place() {
        let plan = plan();
        let dir = tempfile::tempdir().unwrap();
        let spec = SpecVersionBin::default();
        let size =
            object::write_local_transaction_log(dir.path(), &plan.id, |out| plan.file_into(out, spec, 3)).unwrap();
        let written = std::fs::read(dir.path().join("transactions").join(plan.id.to_string())).unwrap();
        assert_eq!(written, plan.file(spec, 3).unwrap());
        assert_eq!(size, written.len() as u64);
        let names: Vec<_> = std::fs::read_dir(dir.path().join("transactions")).unwrap().flatten().collect();
        assert_eq!(names.len(), 1, "no staged sibling left behind");
    }
}
