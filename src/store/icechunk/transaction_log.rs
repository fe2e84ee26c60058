//! The transaction log of a snapshot that replaces a branch's content with a dataset, built
//! straight from the chunk tables.
//!
//! It lists what Icechunk's own commit of the same change would: the base snapshot's nodes as
//! deleted, the new nodes as new, and every stored chunk of every array as updated (how `diff`
//! and conflict detection see the commit). Icechunk's `TransactionLog::new_from_parts` takes the
//! chunk indices as one heap vector each; here they go from a bitmap of the stored chunks into the
//! flatbuffer directly, in the layout `icechunk-format` reads (sorted node ids, chunks in
//! row-major order). The [`Plan`] owns what it needs (a bit per chunk), so the log is built and
//! compressed on a thread of its own while the manifests are.

use flatbuffers::FlatBufferBuilder;
use icechunk::format::flatbuffers::generated;
use icechunk::format::snapshot::{NodeData, NodeSnapshot, Snapshot};
use icechunk::format::transaction_log::TransactionLog;
use icechunk::format::{NodeId, SnapshotId};

use super::manifests::Odometer;
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

    /// The transaction log flatbuffer.
    pub(super) fn build(&self) -> Result<Vec<u8>, String> {
        let chunks: u64 = self.arrays.iter().map(|(_, grid, _)| grid.num_chunks()).sum();
        let ndim = self.arrays.iter().map(|(_, grid, _)| grid.grid_shape().len()).max().unwrap_or(0) as u64;
        let capacity = chunks.saturating_mul(16 + 4 * ndim).min(1 << 30) as usize + 4096;
        let mut builder = FlatBufferBuilder::with_capacity(capacity);
        let mut ids = |ids: &[NodeId]| {
            let ids: Vec<_> = ids.iter().map(|id| generated::ObjectId8::new(&id.0)).collect();
            Some(builder.create_vector(&ids))
        };
        let (new_groups, new_arrays) = (ids(&self.new_groups), ids(&self.new_arrays));
        let (deleted_groups, deleted_arrays) = (ids(&self.deleted_groups), ids(&self.deleted_arrays));
        let (updated_groups, updated_arrays) = (ids(&[]), ids(&[]));
        let mut updated = Vec::with_capacity(self.arrays.len());
        for (node, grid, stored) in &self.arrays {
            let mut odometer = Odometer::new(grid, 0)?;
            let mut indices = Vec::new();
            for linear in 0..grid.num_chunks() as usize {
                if stored[linear / 64] & (1 << (linear % 64)) != 0 {
                    let coords = Some(builder.create_vector(odometer.coords()));
                    let args = generated::ChunkIndicesArgs { coords };
                    indices.push(generated::ChunkIndices::create(&mut builder, &args));
                }
                odometer.advance();
            }
            let chunks = Some(builder.create_vector(&indices));
            let node_id = generated::ObjectId8::new(&node.0);
            let args = generated::ArrayUpdatedChunksArgs { node_id: Some(&node_id), chunks };
            updated.push(generated::ArrayUpdatedChunks::create(&mut builder, &args));
        }
        let updated_chunks = Some(builder.create_vector(&updated));
        let moved_nodes = Some(builder.create_vector::<flatbuffers::WIPOffset<generated::MoveOperation>>(&[]));
        let snapshot_id = generated::ObjectId12::new(&self.id.0);
        let args = generated::TransactionLogArgs {
            id: Some(&snapshot_id),
            new_groups,
            new_arrays,
            deleted_groups,
            deleted_arrays,
            updated_groups,
            updated_arrays,
            updated_chunks,
            moved_nodes,
            ..Default::default()
        };
        let log = generated::TransactionLog::create(&mut builder, &args);
        builder.finish(log, Some("Ichk"));
        let (mut bytes, head) = builder.collapse();
        bytes.drain(..head);
        if cfg!(debug_assertions) {
            TransactionLog::verify_buffer(&bytes)
                .map_err(|e| format!("the transaction log built does not verify: {e}"))?;
        }
        Ok(bytes)
    }
}
