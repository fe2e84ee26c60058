//! The Zarr v3 `sharding_indexed` codec, as vzarr writes it: metadata and shard byte layout.
//!
//! Stage: inside [`crate::codec`]; used by `export/materialize` to pack a native store's chunks into
//! shards without decoding them. Pure: no I/O.
//!
//! Spec: Zarr v3 core, "Sharding codec" (`sharding_indexed`). A shard is an array chunk (of the outer
//! chunk grid) split into inner chunks of `chunk_shape`; its stored object is the inner chunks'
//! encoded bytes followed (`index_location: "end"`) by the index: for every inner chunk in C order,
//! two little-endian `u64`, `offset` and `nbytes`, both `0xFFFF_FFFF_FFFF_FFFF` for an empty chunk
//! (read as the fill value), then the CRC-32C (Castagnoli) of those index bytes, little-endian: the
//! index codecs `[bytes little, crc32c]`, exactly as zarr-python writes them.
//!
//! ```
//! use vzarr::testing::{parse_shard, ShardBuilder};
//! let mut shard = ShardBuilder::new(3);
//! shard.push(Some(b"first"));
//! shard.push(None);
//! shard.push(Some(b"third"));
//! let bytes = shard.finish();
//! let chunks = parse_shard(&bytes, 3)?;
//! assert_eq!(chunks[0].clone().map(|r| &bytes[r]), Some(&b"first"[..]));
//! assert_eq!(chunks[1], None);
//! # Ok::<(), vzarr::testing::ShardIndexError>(())
//! ```

use std::ops::Range;

use serde_json::{json, Value};

use super::CodecChain;

/// A shard whose index cannot be read back.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ShardIndexError {
    /// The object is shorter than the index of its number of inner chunks.
    #[error("shard of {len} bytes is shorter than the index of {inner_chunks} inner chunks")]
    Truncated {
        /// Bytes of the shard.
        len: usize,
        /// Inner chunks expected.
        inner_chunks: u64,
    },
    /// The CRC-32C after the index does not match it.
    #[error("shard index checksum mismatch: stored {stored:#010x}, computed {computed:#010x}")]
    ChecksumMismatch {
        /// The checksum stored after the index.
        stored: u32,
        /// The checksum of the index bytes.
        computed: u32,
    },
    /// An index entry points outside the chunk data.
    #[error("inner chunk {chunk} at offset {offset}, {nbytes} bytes, lies outside {data} bytes of chunk data")]
    OutOfBounds {
        /// Inner chunk (C order).
        chunk: usize,
        /// Offset in the index.
        offset: u64,
        /// Length in the index.
        nbytes: u64,
        /// Bytes of chunk data before the index.
        data: usize,
    },
}

/// `offset` and `nbytes` of an empty inner chunk in the index.
pub(crate) const EMPTY: u64 = u64::MAX;

/// Bytes of the index of a shard of `inner_chunks` chunks: 16 per chunk plus the 4-byte checksum.
#[must_use]
pub fn index_len(inner_chunks: u64) -> u64 {
    inner_chunks.saturating_mul(16).saturating_add(4)
}

/// The `sharding_indexed` codec of an array: inner chunk shape and the inner chunks' codecs.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ShardingIndexed {
    /// Shape of every inner chunk (elements per dimension); divides every shard's shape.
    pub chunk_shape: Vec<u64>,
    /// The codecs of each inner chunk (the source chunks' own codecs).
    pub codecs: CodecChain,
}

impl ShardingIndexed {
    /// The codec as one element of the array's `codecs` JSON array.
    #[must_use]
    pub(crate) fn to_json(&self) -> Value {
        json!({
            "name": "sharding_indexed",
            "configuration": {
                "chunk_shape": self.chunk_shape,
                "codecs": self.codecs.to_json(),
                "index_codecs": [
                    {"name": "bytes", "configuration": {"endian": "little"}},
                    {"name": "crc32c"},
                ],
                "index_location": "end",
            },
        })
    }
}

/// Builds one shard: inner chunks pushed in C order, then [`ShardBuilder::finish`].
#[derive(Debug)]
pub struct ShardBuilder {
    data: Vec<u8>,
    index: Vec<u8>,
    expected: u64,
}

impl ShardBuilder {
    /// A shard of `inner_chunks` inner chunks (the product of shard shape / chunk shape).
    #[must_use]
    pub fn new(inner_chunks: u64) -> Self {
        // The index is 16 bytes per chunk the caller's own grid holds; no untrusted count sizes it.
        let index = Vec::with_capacity(usize::try_from(index_len(inner_chunks)).unwrap_or(0));
        ShardBuilder { data: Vec::new(), index, expected: inner_chunks }
    }

    /// Reserves room for `bytes` more bytes of chunk data.
    pub fn reserve(&mut self, bytes: usize) {
        self.data.reserve(bytes);
    }

    /// Appends the next inner chunk's encoded bytes, or marks it empty (`None`).
    pub fn push(&mut self, chunk: Option<&[u8]>) {
        let (offset, nbytes) = match chunk {
            Some(bytes) => {
                let offset = self.data.len() as u64;
                self.data.extend_from_slice(bytes);
                (offset, bytes.len() as u64)
            }
            None => (EMPTY, EMPTY),
        };
        self.index.extend_from_slice(&offset.to_le_bytes());
        self.index.extend_from_slice(&nbytes.to_le_bytes());
    }

    /// Inner chunks pushed so far.
    #[must_use]
    pub fn len(&self) -> u64 {
        self.index.len() as u64 / 16
    }

    /// True before the first push.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    /// The shard object: chunk bytes, index, checksum.
    ///
    /// # Panics
    /// In debug builds, when the number of pushed chunks differs from the one given to
    /// [`ShardBuilder::new`].
    #[must_use]
    pub fn finish(mut self) -> Vec<u8> {
        debug_assert_eq!(self.len(), self.expected, "inner chunks pushed");
        let checksum = crc32c::crc32c(&self.index);
        self.data.append(&mut self.index);
        self.data.extend_from_slice(&checksum.to_le_bytes());
        self.data
    }
}

/// The byte range of every inner chunk of a shard of `inner_chunks` chunks written with
/// `index_location: "end"`, `None` for empty chunks; checks the index checksum and that every range
/// lies inside the chunk data.
///
/// # Errors
/// [`ShardIndexError`]: a shard shorter than its index, a checksum mismatch, a range outside the data.
pub fn parse_shard(shard: &[u8], inner_chunks: u64) -> Result<Vec<Option<Range<usize>>>, ShardIndexError> {
    let truncated = ShardIndexError::Truncated { len: shard.len(), inner_chunks };
    let index_len = usize::try_from(index_len(inner_chunks)).map_err(|_| truncated.clone())?;
    let data_len = shard.len().checked_sub(index_len).ok_or(truncated)?;
    let (data, index) = shard.split_at(data_len);
    let (index, checksum) = index.split_at(index_len - 4);
    let stored = u32::from_le_bytes([checksum[0], checksum[1], checksum[2], checksum[3]]);
    let computed = crc32c::crc32c(index);
    if stored != computed {
        return Err(ShardIndexError::ChecksumMismatch { stored, computed });
    }
    let word = |b: &[u8]| u64::from_le_bytes(b.try_into().unwrap_or([0; 8]));
    index
        .chunks_exact(16)
        .enumerate()
        .map(|(chunk, entry)| {
            let (offset, nbytes) = (word(&entry[..8]), word(&entry[8..]));
            if offset == EMPTY && nbytes == EMPTY {
                return Ok(None);
            }
            let end = offset.checked_add(nbytes).filter(|&end| end <= data.len() as u64);
            end.map(|end| Some(offset as usize..end as usize)).ok_or(ShardIndexError::OutOfBounds {
                chunk,
                offset,
                nbytes,
                data: data.len(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::{Codec, Endian};

    #[test]
    fn index_layout_matches_the_spec() {
        let mut shard = ShardBuilder::new(2);
        shard.push(None);
        shard.push(Some(&[7, 8, 9]));
        let bytes = shard.finish();
        assert_eq!(bytes.len(), 3 + 32 + 4);
        assert_eq!(&bytes[..3], &[7, 8, 9]);
        assert_eq!(&bytes[3..19], &[0xff; 16], "empty chunk: both words all ones");
        assert_eq!(u64::from_le_bytes(bytes[19..27].try_into().unwrap()), 0);
        assert_eq!(u64::from_le_bytes(bytes[27..35].try_into().unwrap()), 3);
        // CRC-32C check value of the spec's test vector "123456789".
        assert_eq!(crc32c::crc32c(b"123456789"), 0xE306_9283);
        assert_eq!(&bytes[35..], &crc32c::crc32c(&bytes[3..35]).to_le_bytes());
        assert_eq!(parse_shard(&bytes, 2).unwrap(), vec![None, Some(0..3)]);
    }

    #[test]
    fn corrupt_shards_are_rejected() {
        let mut shard = ShardBuilder::new(1);
        shard.push(Some(b"abc"));
        let mut bytes = shard.finish();
        assert!(matches!(parse_shard(&bytes[..10], 1), Err(ShardIndexError::Truncated { .. })));
        assert!(matches!(parse_shard(&bytes, 2), Err(ShardIndexError::Truncated { .. })));
        bytes[5] ^= 1;
        assert!(matches!(parse_shard(&bytes, 1), Err(ShardIndexError::ChecksumMismatch { .. })));
        let mut forged = ShardBuilder::new(1);
        forged.push(Some(b"abc"));
        let mut forged = forged.finish();
        forged[3] = 9; // offset 9 of 3 bytes of data
        let crc = crc32c::crc32c(&forged[3..19]).to_le_bytes();
        forged[19..].copy_from_slice(&crc);
        assert!(matches!(parse_shard(&forged, 1), Err(ShardIndexError::OutOfBounds { .. })));
    }

    #[test]
    fn metadata_names_inner_and_index_codecs() {
        let codecs = CodecChain::new(vec![Codec::Bytes { endian: Some(Endian::Little) }, Codec::Zlib { level: 4 }]);
        let codec = ShardingIndexed { chunk_shape: vec![1, 30, 30], codecs: codecs.unwrap() };
        let doc = codec.to_json();
        assert_eq!(doc["name"], "sharding_indexed");
        assert_eq!(doc["configuration"]["chunk_shape"], json!([1, 30, 30]));
        assert_eq!(doc["configuration"]["codecs"][1]["name"], "numcodecs.zlib");
        assert_eq!(doc["configuration"]["index_codecs"][1]["name"], "crc32c");
        assert_eq!(doc["configuration"]["index_location"], "end");
    }
}
