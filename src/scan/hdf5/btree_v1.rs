//! The version 1 B-tree chunk index (node type 1, raw data chunks) of datasets whose layout message
//! predates version 4, walked and checked as it is walked (HDF5 file format specification, III.A.1).
//!
//! A node holds `n` children and `n + 1` keys; child `i` holds the chunks whose offsets `k`
//! satisfy `key[i] <= k < key[i + 1]`, compared dimension by dimension from the first (libhdf5's
//! lookups rely on it). A leaf's children are chunks: key `i` gives the chunk's element offsets, its
//! stored size and filter mask. A corrupt index is refused, naming the node, where a walk that
//! trusted it would read other values than libhdf5 (a chunk dropped, duplicated or misplaced):
//! - every node has the `TREE` signature, node type 1 and the level its parent implies (one less),
//!   and is reached once (no loops, no shared subtrees);
//! - the keys of a node's children are strictly increasing, and lie inside the range its parent
//!   gives it (the final key is not checked: libhdf5 and libnetcdf often write it equal to the last
//!   chunk's offsets, not past them);
//! - a chunk's offsets are on the chunk grid, its element-size offset is 0, and it lies inside the
//!   dataset's largest extent (its maximum dimensions where they are fixed);
//! - so every chunk position appears once.
//!
//! Memory: one node at a time plus the entries found; a node's size is bounded by its 16-bit entry
//! count and is read only where the file has those bytes.

mod node;

use std::collections::HashSet;

use crate::source::ByteSource;

use hdf5_reader::chunk_index::ChunkEntry as IndexEntry;
use hdf5_reader::io::Cursor;
use hdf5_reader::storage::Storage;
use node::Node;

/// A chunk index the walk refuses, naming the node.
#[derive(Debug, thiserror::Error)]
#[error("B-tree node at {address:#x}: {problem}")]
pub(super) struct BtreeError {
    /// The node's address.
    address: u64,
    /// What is wrong with it.
    #[source]
    problem: NodeProblem,
}

/// What is wrong with one node of a chunk index.
#[derive(Debug, thiserror::Error)]
enum NodeProblem {
    /// Its address is the undefined address.
    #[error("a child address is undefined")]
    Undefined,
    /// The walk met it before.
    #[error("reached twice (a loop or a shared subtree)")]
    Revisited,
    /// Its bytes could not be read.
    #[error("{0}")]
    Read(#[source] hdf5_reader::error::Error),
    /// Its entry count makes it longer than the file.
    #[error("{0} entries would run past the end of the file")]
    PastEnd(u64),
    /// Its bytes do not parse.
    #[error("{0}")]
    Parse(#[from] node::NodeError),
    /// Not a chunk index node.
    #[error("node type {0} in a chunk index")]
    NodeType(u8),
    /// Another level than its parent's implies.
    #[error("level {level}, but its parent's level makes it {expected}")]
    Level {
        /// Its level.
        level: u8,
        /// The level its parent implies.
        expected: u8,
    },
    /// A node below the root without entries.
    #[error("no entries below the root")]
    Empty,
    /// Two keys out of order.
    #[error("keys {first:?} and {second:?} are not in increasing order")]
    Unordered {
        /// The first key's offsets.
        first: Vec<u64>,
        /// The next key's offsets.
        second: Vec<u64>,
    },
    /// Its first key lies before the range its parent gives it.
    #[error("key {key:?} lies before its parent's key {parent:?}")]
    BeforeParent {
        /// The key's offsets.
        key: Vec<u64>,
        /// The parent's key.
        parent: Vec<u64>,
    },
    /// Its last key lies past the range its parent gives it.
    #[error("key {key:?} lies at or after its parent's next key {parent:?}")]
    AfterParent {
        /// The key's offsets.
        key: Vec<u64>,
        /// The parent's next key.
        parent: Vec<u64>,
    },
    /// A chunk key with a nonzero element-size offset.
    #[error("chunk {offsets:?} has element offset {element}, not 0")]
    ElementOffset {
        /// The chunk's offsets.
        offsets: Vec<u64>,
        /// Its element-size offset.
        element: u64,
    },
    /// A chunk off the chunk grid.
    #[error("chunk {offsets:?} is off the chunk grid {chunk:?}")]
    OffGrid {
        /// The chunk's offsets.
        offsets: Vec<u64>,
        /// The chunk shape.
        chunk: Vec<u32>,
    },
    /// A chunk outside the dataset's largest extent.
    #[error("chunk {offsets:?} lies outside the dataset's extent {bound:?}")]
    OutsideExtent {
        /// The chunk's offsets.
        offsets: Vec<u64>,
        /// The largest extent.
        bound: Vec<u64>,
    },
    /// A chunk not after the one before it.
    #[error("chunk {offsets:?} follows chunk {previous:?}")]
    Follows {
        /// The chunk's offsets.
        offsets: Vec<u64>,
        /// The chunk before it.
        previous: Vec<u64>,
    },
}

/// What the walk needs to know of the file and the dataset.
pub(super) struct ChunkTree<'a> {
    /// The file's bytes (addresses relative to the superblock).
    pub storage: &'a dyn Storage,
    /// Bytes of a file address.
    pub offset_size: u8,
    /// The chunk's shape (without the element-size dimension).
    pub chunk: &'a [u32],
    /// Per dimension, the largest extent a chunk may start below: the maximum dimension where it
    /// is fixed, `u64::MAX` where unlimited.
    pub bound: &'a [u64],
}

impl ChunkTree<'_> {
    /// Every chunk the tree rooted at `root` indexes, in key order.
    ///
    /// # Errors
    /// [`BtreeError`] naming the node (by address) and what is wrong with it.
    pub(super) fn entries(&self, root: u64) -> Result<Vec<IndexEntry>, BtreeError> {
        let mut walk = Walk { tree: self, visited: HashSet::new(), entries: Vec::new() };
        if !Cursor::is_undefined_offset(root, self.offset_size) {
            walk.node(root, None, None, None)?;
        }
        Ok(walk.entries)
    }
}

/// Most bytes of index nodes fetched ahead for one file: well inside the block cache's budget, so
/// that the walks that follow still find them there.
const PREFETCH_BUDGET: u64 = 8 << 20;

/// Entries an internal node is taken to have room for when it is fetched ahead: libhdf5 writes
/// every node at its full size, 2K entries, with K = 32 unless the file says otherwise. A node
/// with more is read whole by the walk.
const PREFETCH_ENTRIES: u64 = 64;

/// Larger chunks of values the scan reads are not fetched ahead (the read fetches them itself).
const MAX_VALUE_CHUNK: u64 = 1 << 20;

/// Most entries a leaf is taken to hold (its parent's keys bound it by the chunks between them).
const MAX_LEAF_ENTRIES: u64 = 1024;

/// A chunk index to fetch ahead: its root, the dataset's chunk shape and its extent, and whether
/// the chunks it indexes are fetched too (values the scan reads).
pub(super) struct PrefetchTree {
    pub root: u64,
    pub chunk: Vec<u32>,
    pub bound: Vec<u64>,
    pub values: bool,
}

impl PrefetchTree {
    /// Chunks along each dimension.
    fn grid(&self) -> impl Iterator<Item = u64> + '_ {
        self.chunk.iter().zip(&self.bound).map(|(&c, &b)| b.div_ceil(u64::from(c.max(1))))
    }

    /// The row-major position of the chunk at element `offsets` (keys in increasing order have
    /// increasing positions); `None` off the grid or outside the extent.
    fn position(&self, offsets: &[u64]) -> Option<u64> {
        let mut position = 0u64;
        for ((&offset, &chunk), n) in offsets.iter().zip(&self.chunk).zip(self.grid()) {
            let (index, chunk) = (offset / u64::from(chunk.max(1)), u64::from(chunk.max(1)));
            if offset % chunk != 0 || index >= n {
                return None;
            }
            position = position.checked_mul(n)?.checked_add(index)?;
        }
        Some(position)
    }

    /// Chunk positions in all.
    fn positions(&self) -> Option<u64> {
        self.grid().try_fold(1u64, u64::checked_mul)
    }
}

/// A node to fetch: its tree, address, the entries it is taken to have, and the chunk position
/// its subtree ends before (where its parent's keys tell).
struct Pending<'t> {
    tree: &'t PrefetchTree,
    address: u64,
    entries: u64,
    end: Option<u64>,
}

/// The file a prefetch reads: its bytes (which fetch ahead), the same bytes as `hdf5-reader`
/// storage (which nodes are parsed from), its address size, and the superblock's address (which
/// chunk addresses are relative to).
pub(super) struct PrefetchFile<'a> {
    pub bytes: &'a dyn ByteSource,
    pub storage: &'a dyn Storage,
    pub offset_size: u8,
    pub base: u64,
}

/// Fetches the nodes of the chunk indexes `trees` level by level, one level of every tree as one
/// round of requests ([`ByteSource::prefetch`]), so that the walks that follow
/// ([`ChunkTree::entries`]) read from the cache: a remote file's indexes cost as many round trips
/// as the deepest has levels. The chunks of trees whose values are wanted go with the next level.
/// A node is fetched at the size its header gives where the cache already holds that, else at the
/// size its parent's keys imply (the chunks between them) for a leaf, or at libhdf5's full node
/// size. Only a hint: a node that cannot be read ends its subtree here, and the walk reports it.
pub(super) fn prefetch_trees(file: &PrefetchFile, trees: &[PrefetchTree]) {
    let defined = |address: u64| !Cursor::is_undefined_offset(address, file.offset_size);
    let mut level: Vec<Pending> = trees
        .iter()
        .filter(|tree| defined(tree.root))
        .map(|tree| Pending { tree, address: tree.root, entries: PREFETCH_ENTRIES, end: tree.positions() })
        .collect();
    let mut seen: HashSet<u64> = level.iter().map(|p| p.address).collect();
    let mut spent = 0u64;
    let mut values: Vec<(u64, u64)> = Vec::new();
    while !level.is_empty() || !values.is_empty() {
        let mut ranges: Vec<(u64, u64)> = level
            .iter()
            .map(|p| {
                let cached = file.bytes.read_cached(p.address, 8);
                let entries = cached.and_then(|header| header_entries(&header)).unwrap_or(p.entries);
                (p.address, node_len(p.tree.chunk.len(), file.offset_size, entries))
            })
            .collect();
        ranges.append(&mut values);
        spent = spent.saturating_add(ranges.iter().map(|r| r.1).sum());
        if spent > PREFETCH_BUDGET || !matches!(file.bytes.prefetch(&ranges), Ok(true)) {
            return;
        }
        let mut next = Vec::new();
        for pending in &level {
            let rank = pending.tree.chunk.len();
            let Ok(node) = read_node(file.storage, pending.address, file.offset_size, rank) else {
                continue;
            };
            if node.node_type != 1 {
                continue;
            }
            let keys: Vec<(&[u64], u32)> =
                (0..node.key_count()).map(|i| node.key(i)).map(|(offsets, size, ..)| (offsets, size)).collect();
            for (i, &child) in node.children.iter().enumerate() {
                if node.level == 0 {
                    let size = u64::from(keys[i].1);
                    if pending.tree.values && size <= MAX_VALUE_CHUNK {
                        values.push((child.saturating_add(file.base), size));
                    }
                    continue;
                }
                if !defined(child) || !seen.insert(child) {
                    continue;
                }
                let start = pending.tree.position(keys[i].0);
                let end = match keys.get(i + 1) {
                    Some(next) if i + 1 < node.children.len() => pending.tree.position(next.0),
                    _ => pending.end,
                };
                let entries = match (start, end) {
                    (Some(start), Some(end)) if node.level == 1 && end > start => (end - start).min(MAX_LEAF_ENTRIES),
                    _ => PREFETCH_ENTRIES,
                };
                next.push(Pending { tree: pending.tree, address: child, entries, end });
            }
        }
        level = next;
    }
}

/// The entry count of the node whose first 8 bytes are `header`, if it is a chunk index node.
fn header_entries(header: &[u8]) -> Option<u64> {
    (header.len() >= 8 && &header[..4] == b"TREE" && header[4] == 1)
        .then(|| u64::from(u16::from_le_bytes([header[6], header[7]])))
}

/// Bytes of a chunk index node of a rank-`rank` dataset holding `entries` children.
fn node_len(rank: usize, offset_size: u8, entries: u64) -> u64 {
    let offset = u64::from(offset_size);
    let key = 8 + 8 * (rank as u64 + 1);
    8 + 2 * offset + (entries + 1) * key + entries * offset
}

/// Reads and parses the chunk index node at `address` of a rank-`rank` dataset, only where the
/// file has its bytes.
fn read_node(storage: &dyn Storage, address: u64, offset_size: u8, rank: usize) -> Result<Node, NodeProblem> {
    let header_len = 8 + 2 * u64::from(offset_size);
    let header = storage.read_range(address, header_len as usize).map_err(NodeProblem::Read)?;
    let entries = header.as_ref().get(6..8).map_or(0, |b| u64::from(u16::from_le_bytes([b[0], b[1]])));
    let len = node_len(rank, offset_size, entries);
    if address.checked_add(len).is_none_or(|end| end > storage.len()) {
        return Err(NodeProblem::PastEnd(entries));
    }
    let bytes = storage.read_range(address, len as usize).map_err(NodeProblem::Read)?;
    Ok(Node::parse(bytes.as_ref(), offset_size, rank)?)
}

struct Walk<'t, 'a> {
    tree: &'t ChunkTree<'a>,
    visited: HashSet<u64>,
    entries: Vec<IndexEntry>,
}

impl Walk<'_, '_> {
    /// Walks the node at `address`, whose parent says it has `level` and holds keys in `lo..hi`.
    fn node(
        &mut self,
        address: u64,
        level: Option<u8>,
        lo: Option<&[u64]>,
        hi: Option<&[u64]>,
    ) -> Result<(), BtreeError> {
        let bad = |problem: NodeProblem| BtreeError { address, problem };
        if Cursor::is_undefined_offset(address, self.tree.offset_size) {
            return Err(bad(NodeProblem::Undefined));
        }
        if !self.visited.insert(address) {
            return Err(bad(NodeProblem::Revisited));
        }
        let node = self.read(address).map_err(bad)?;
        if node.node_type != 1 {
            return Err(bad(NodeProblem::NodeType(node.node_type)));
        }
        if let Some(expected) = level.filter(|&l| l != node.level) {
            return Err(bad(NodeProblem::Level { level: node.level, expected }));
        }
        if node.children.is_empty() && level.is_some() {
            return Err(bad(NodeProblem::Empty));
        }
        let mut keys: Vec<(&[u64], u32, u32, u64)> = (0..node.key_count()).map(|i| node.key(i)).collect();
        // The final key (the right key of the last child) is not checked: files libhdf5 and
        // libnetcdf write give it as the last chunk's own offsets as often as past them.
        keys.pop();
        for pair in keys.windows(2) {
            if pair[0].0 >= pair[1].0 {
                let (first, second) = (pair[0].0.to_vec(), pair[1].0.to_vec());
                return Err(bad(NodeProblem::Unordered { first, second }));
            }
        }
        if let (Some(lo), Some(&(first, ..))) = (lo, keys.first()) {
            if first < lo {
                return Err(bad(NodeProblem::BeforeParent { key: first.to_vec(), parent: lo.to_vec() }));
            }
        }
        if let (Some(hi), Some(&(last, ..))) = (hi, keys.last()) {
            if last >= hi {
                return Err(bad(NodeProblem::AfterParent { key: last.to_vec(), parent: hi.to_vec() }));
            }
        }
        for (i, &child) in node.children.iter().enumerate() {
            let (offsets, size, filter_mask, element) = keys[i];
            if node.level > 0 {
                // The last child's chunks are bounded by what bounds this node.
                let next = keys.get(i + 1).map_or(hi, |k| Some(k.0));
                self.node(child, Some(node.level - 1), Some(offsets), next)?;
                continue;
            }
            self.check_chunk(offsets, element).map_err(bad)?;
            let entry = IndexEntry { address: child, size: u64::from(size), filter_mask, offsets: offsets.to_vec() };
            if let Some(previous) = self.entries.last() {
                if previous.offsets.as_slice() >= offsets {
                    let (offsets, previous) = (offsets.to_vec(), previous.offsets.clone());
                    return Err(bad(NodeProblem::Follows { offsets, previous }));
                }
            }
            self.entries.push(entry);
        }
        Ok(())
    }

    /// A leaf key names a chunk: on the grid, inside the dataset's largest extent.
    fn check_chunk(&self, offsets: &[u64], element: u64) -> Result<(), NodeProblem> {
        if element != 0 {
            return Err(NodeProblem::ElementOffset { offsets: offsets.to_vec(), element });
        }
        for ((&offset, &chunk), &bound) in offsets.iter().zip(self.tree.chunk).zip(self.tree.bound) {
            if offset % u64::from(chunk.max(1)) != 0 {
                return Err(NodeProblem::OffGrid { offsets: offsets.to_vec(), chunk: self.tree.chunk.to_vec() });
            }
            if offset >= bound {
                let bound = self.tree.bound.to_vec();
                return Err(NodeProblem::OutsideExtent { offsets: offsets.to_vec(), bound });
            }
        }
        Ok(())
    }

    /// Reads and parses the node at `address`, only where the file has its bytes.
    fn read(&self, address: u64) -> Result<Node, NodeProblem> {
        let tree = self.tree;
        read_node(tree.storage, address, tree.offset_size, tree.chunk.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file image holding the given nodes at their addresses (8-byte addresses and lengths).
    struct Image(Vec<u8>);

    impl Storage for Image {
        fn len(&self) -> u64 {
            self.0.len() as u64
        }
        fn read_range(
            &self,
            offset: u64,
            len: usize,
        ) -> hdf5_reader::error::Result<hdf5_reader::storage::StorageBuffer> {
            let start = offset as usize;
            let bytes = self.0.get(start..start + len).ok_or(hdf5_reader::error::Error::UnexpectedEof {
                offset,
                needed: len as u64,
                available: self.len().saturating_sub(offset),
            })?;
            Ok(hdf5_reader::storage::StorageBuffer::from_vec(bytes.to_vec()))
        }
    }

    /// A rank-1 node: level, then (key, child) pairs and the final key.
    fn node(level: u8, keys: &[u64], children: &[u64]) -> Vec<u8> {
        let mut out = b"TREE".to_vec();
        out.push(1);
        out.push(level);
        out.extend_from_slice(&(children.len() as u16).to_le_bytes());
        out.extend_from_slice(&u64::MAX.to_le_bytes());
        out.extend_from_slice(&u64::MAX.to_le_bytes());
        for (i, key) in keys.iter().enumerate() {
            out.extend_from_slice(&16u32.to_le_bytes());
            out.extend_from_slice(&0u32.to_le_bytes());
            out.extend_from_slice(&key.to_le_bytes());
            out.extend_from_slice(&0u64.to_le_bytes());
            if let Some(child) = children.get(i) {
                out.extend_from_slice(&child.to_le_bytes());
            }
        }
        out
    }

    fn image(nodes: &[(u64, Vec<u8>)]) -> Image {
        let mut bytes = vec![0u8; 4096];
        for (at, node) in nodes {
            bytes[*at as usize..*at as usize + node.len()].copy_from_slice(node);
        }
        Image(bytes)
    }

    fn walk(image: &Image, bound: u64) -> Result<Vec<u64>, BtreeError> {
        let tree = ChunkTree { storage: image, offset_size: 8, chunk: &[4], bound: &[bound] };
        tree.entries(0).map(|e| e.iter().map(|c| c.offsets[0]).collect())
    }

    #[test]
    fn a_two_level_tree_gives_its_chunks_in_order() {
        let nodes = [
            (0, node(1, &[0, 8, 16], &[1000, 2000])),
            (1000, node(0, &[0, 4, 8], &[3000, 3016])),
            (2000, node(0, &[8, 12, 16], &[3032, 3048])),
        ];
        assert_eq!(walk(&image(&nodes), 16).unwrap(), vec![0, 4, 8, 12]);
        // A final key equal to the last chunk's offsets, as libnetcdf writes it.
        assert_eq!(walk(&image(&[(0, node(0, &[0, 4, 4], &[3000, 3016]))]), 16).unwrap(), vec![0, 4]);
    }

    #[test]
    fn corrupt_trees_are_refused_by_node() {
        let refused = |nodes: &[(u64, Vec<u8>)], bound: u64, needle: &str| {
            let error = walk(&image(nodes), bound).unwrap_err().to_string();
            assert!(error.contains(needle), "{needle:?} not in {error:?}");
        };
        // Keys out of order in a leaf.
        refused(&[(0, node(0, &[4, 0, 8], &[3000, 3016]))], 16, "not in increasing order");
        // A child whose keys leave the range its parent gives it (a chunk duplicated across leaves).
        let nodes = [
            (0, node(1, &[0, 8, 16], &[1000, 2000])),
            (1000, node(0, &[0, 4, 8], &[3000, 3016])),
            (2000, node(0, &[4, 12, 16], &[3032, 3048])),
        ];
        refused(&nodes, 16, "before its parent's key");
        // A chunk outside the dataset's fixed extent.
        refused(&[(0, node(0, &[0, 16, 20], &[3000, 3016]))], 16, "outside the dataset's extent");
        // Off the chunk grid.
        refused(&[(0, node(0, &[0, 6, 8], &[3000, 3016]))], 16, "off the chunk grid");
        // A loop, and a child at the wrong level.
        refused(&[(0, node(1, &[0, 8], &[0]))], 16, "reached twice");
        refused(&[(0, node(2, &[0, 8], &[1000])), (1000, node(0, &[0, 8], &[3000]))], 16, "level 0");
        // An entry count that runs past the end of the file.
        let mut huge = node(0, &[0, 4], &[3000]);
        huge[6..8].copy_from_slice(&u16::MAX.to_le_bytes());
        refused(&[(0, huge)], 16, "past the end of the file");
    }
}
