//! One node of a version 1 chunk index, parsed flat from its bytes: a node's keys are read into one
//! array of offsets (no allocation per key), which is what a walk over 10^5 chunks spends its time on.
//!
//! Layout (HDF5 file format specification, III.A.1): `TREE`, node type (1 byte), level (1 byte),
//! entries used (2 bytes), left and right sibling addresses, then key 0, child 0, key 1, child 1, ...,
//! key n. A chunk key is the chunk's stored size (4 bytes), its filter mask (4 bytes) and `rank + 1`
//! element offsets of 8 bytes each (the last one the element-size dimension's); a child is an address.

/// Why a node's bytes do not parse.
#[derive(Debug, thiserror::Error)]
pub(super) enum NodeError {
    /// The bytes do not start with `TREE`.
    #[error("no B-tree signature (TREE)")]
    Signature,
    /// The node ends before its last field.
    #[error("cut short at byte {at} of {len}")]
    Short {
        /// Where the field that does not fit starts.
        at: usize,
        /// Bytes of the node.
        len: usize,
    },
    /// The superblock gives an address size the format does not have.
    #[error("an address size of {0} bytes")]
    AddressSize(u8),
}

/// A parsed node. A node of another type than 1 (chunks) keeps its type and level only: the walk
/// refuses it by its type.
#[derive(Debug)]
pub(super) struct Node {
    /// 1 for a chunk index node (0 is a group node).
    pub node_type: u8,
    /// 0 for a leaf, whose children are chunks.
    pub level: u8,
    /// Offsets per key: the dataset's rank plus one.
    stride: usize,
    /// Per key, the chunk's stored size and filter mask.
    sizes: Vec<(u32, u32)>,
    /// Every key's offsets, one key after another.
    offsets: Vec<u64>,
    /// The children's addresses (one fewer than the keys).
    pub children: Vec<u64>,
}

impl Node {
    /// Parses the node in `bytes` of a rank-`rank` dataset in a file of `offset_size`-byte
    /// addresses. `bytes` holds the whole node (its size follows from its entry count).
    pub(super) fn parse(bytes: &[u8], offset_size: u8, rank: usize) -> Result<Node, NodeError> {
        let mut at = Reader { bytes, pos: 0 };
        if at.take(4)? != b"TREE" {
            return Err(NodeError::Signature);
        }
        let (node_type, level) = (at.u8()?, at.u8()?);
        let entries = usize::from(at.u16()?);
        at.take(2 * usize::from(offset_size))?; // the siblings
        let stride = rank + 1;
        let mut node = Node { node_type, level, stride, sizes: Vec::new(), offsets: Vec::new(), children: Vec::new() };
        if node_type != 1 {
            return Ok(node);
        }
        node.sizes.reserve(entries + 1);
        node.offsets.reserve((entries + 1) * stride);
        node.children.reserve(entries);
        for i in 0..=entries {
            node.sizes.push((at.u32()?, at.u32()?));
            for _ in 0..stride {
                node.offsets.push(at.u64()?);
            }
            if i < entries {
                node.children.push(at.address(offset_size)?);
            }
        }
        Ok(node)
    }

    /// Keys in all (one more than the children).
    pub(super) fn key_count(&self) -> usize {
        self.sizes.len()
    }

    /// Key `i`: the chunk's element offsets (without the element-size dimension's), its stored size
    /// and filter mask, and the element-size dimension's offset.
    pub(super) fn key(&self, i: usize) -> (&[u64], u32, u32, u64) {
        let offsets = &self.offsets[i * self.stride..(i + 1) * self.stride];
        let (size, mask) = self.sizes[i];
        (&offsets[..self.stride - 1], size, mask, offsets[self.stride - 1])
    }
}

/// Little-endian reads from a node's bytes, each checked against their end.
struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], NodeError> {
        let end = self.pos.checked_add(n).filter(|&end| end <= self.bytes.len());
        let end = end.ok_or(NodeError::Short { at: self.pos, len: self.bytes.len() })?;
        let taken = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(taken)
    }

    fn uint(&mut self, n: usize) -> Result<u64, NodeError> {
        let mut value = [0u8; 8];
        value[..n].copy_from_slice(self.take(n)?);
        Ok(u64::from_le_bytes(value))
    }

    fn u8(&mut self) -> Result<u8, NodeError> {
        Ok(self.take(1)?[0])
    }

    fn u16(&mut self) -> Result<u16, NodeError> {
        Ok(self.uint(2)? as u16)
    }

    fn u32(&mut self) -> Result<u32, NodeError> {
        Ok(self.uint(4)? as u32)
    }

    fn u64(&mut self) -> Result<u64, NodeError> {
        self.uint(8)
    }

    /// An address of `size` bytes (2, 4 or 8, as the superblock says).
    fn address(&mut self, size: u8) -> Result<u64, NodeError> {
        match size {
            2 | 4 | 8 => self.uint(usize::from(size)),
            _ => Err(NodeError::AddressSize(size)),
        }
    }
}
