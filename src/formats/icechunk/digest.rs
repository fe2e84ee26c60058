//! A digest of an array's chunks as an Icechunk snapshot holds them, recorded in the snapshot's vzarr
//! summary when written and checked when read. Icechunk keeps no checksum of a manifest, so a damaged
//! reference (an offset, a length, a location) would otherwise read other bytes without a word.
//!
//! The digest covers, in chunk order, every chunk that is not missing: its linear index, and either its
//! source location (the virtual chunk URL), offset and length, or its stored bytes. It is a 64-bit
//! mixing hash over 64-bit words (not cryptographic: it detects damage, not tampering), about a
//! nanosecond a word, so 10^7 references cost tens of milliseconds.
//!
//! Two digests are recorded: one of the whole array (checked by readers that load the whole branch,
//! `vzarr append` and earlier vzarr versions), and one per block of whole rows, the blocks the
//! manifests are split into (checked by the lazy reader, `formats/icechunk/read`, as it loads each block).

use crate::dataset::VirtualArray;
use crate::manifest::ChunkEntry;
use crate::store::BlockDigests;

/// The digest of `array`'s chunks, with `url(source)` the virtual chunk URL of each source id, as
/// 16 hexadecimal digits. `None` when a source id has no URL.
pub(crate) fn references_digest<'u>(array: &VirtualArray, url: impl Fn(u32) -> Option<&'u str>) -> Option<String> {
    let entries = array.chunks.iter().enumerate().map(|(linear, entry)| (linear as u64, entry));
    chunks_digest(entries, url, |offset, length| array.chunks.owned_chunk(offset, length).ok())
}

/// The digests of `array`'s chunks in blocks of `per_block` chunks (linear order; the last block
/// may be shorter): what a lazy reader checks each block of chunks it loads against.
pub(crate) fn block_digests<'u>(
    array: &VirtualArray,
    per_block: u64,
    url: impl Fn(u32) -> Option<&'u str> + Copy,
) -> Option<BlockDigests> {
    let n = array.chunks.len() as u64;
    let per_block = per_block.max(1);
    let mut digests = Vec::new();
    let mut start = 0;
    while start < n {
        let end = start.saturating_add(per_block).min(n);
        let entries = (start..end).zip(array.chunks.range(start as usize..end as usize));
        digests.push(chunks_digest(entries, url, |offset, length| array.chunks.owned_chunk(offset, length).ok())?);
        start = end;
    }
    Some(BlockDigests { chunks: per_block, digests })
}

/// The digest of chunks given as `(linear index, entry)` in increasing linear order: `url(source)`
/// names each source id's virtual chunk URL, `owned(offset, length)` gives a store-owned chunk's
/// bytes (borrowed, or read back from a spill file). `None` when a source has no URL or an owned
/// chunk no bytes.
pub(crate) fn chunks_digest<'u, 'o>(
    entries: impl Iterator<Item = (u64, ChunkEntry)>,
    url: impl Fn(u32) -> Option<&'u str>,
    owned: impl Fn(u64, u64) -> Option<std::borrow::Cow<'o, [u8]>>,
) -> Option<String> {
    let mut urls: Vec<Option<u64>> = Vec::new();
    let mut hash = Mix::default();
    for (linear, entry) in entries {
        match entry {
            ChunkEntry::Missing => continue,
            ChunkEntry::Source { source, offset, length } => {
                let slot = source as usize;
                if urls.len() <= slot {
                    urls.resize(slot + 1, None);
                }
                let location = match urls[slot] {
                    Some(h) => h,
                    None => {
                        let h = Mix::of_bytes(url(source)?.as_bytes());
                        urls[slot] = Some(h);
                        h
                    }
                };
                hash.words(&[linear, 1, location, offset, length]);
            }
            ChunkEntry::Owned { offset, length } => {
                hash.words(&[linear, 2, Mix::of_bytes(&owned(offset, length)?), length]);
            }
        }
    }
    Some(format!("{:016x}", hash.finish()))
}

/// A 64-bit multiply-rotate mix over words.
struct Mix(u64);

impl Default for Mix {
    fn default() -> Self {
        Mix(0x243F_6A88_85A3_08D3)
    }
}

impl Mix {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;

    fn words(&mut self, words: &[u64]) {
        for &w in words {
            self.0 = (self.0 ^ w.wrapping_mul(Self::K)).rotate_left(29).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        }
    }

    fn finish(&self) -> u64 {
        let mut h = self.0;
        h ^= h >> 31;
        h = h.wrapping_mul(0x94D0_49BB_1331_11EB);
        h ^ (h >> 29)
    }

    /// Bytes as one word: their length and 8-byte little-endian words, mixed.
    fn of_bytes(bytes: &[u8]) -> u64 {
        let mut mix = Mix::default();
        mix.words(&[bytes.len() as u64]);
        for piece in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..piece.len()].copy_from_slice(piece);
            mix.words(&[u64::from_le_bytes(word)]);
        }
        mix.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataset::{ChunkTable, OwnedBytes};

    fn array(entries: Vec<ChunkEntry>, owned: Vec<u8>) -> VirtualArray {
        let chunks = ChunkTable::from_entries(entries, OwnedBytes::from_vec(owned, &Default::default()).unwrap());
        VirtualArray {
            path: "v".into(),
            metadata: crate::metadata::ArrayMetadata::from_json(&serde_json::json!({
                "zarr_format": 3, "node_type": "array", "shape": [4], "data_type": "uint8",
                "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [1]}},
                "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
                "codecs": [{"name": "bytes"}]
            }))
            .unwrap(),
            chunks,
            rewritten_chunks: 0,
            digest: None,
            tails: Vec::new(),
        }
    }

    #[test]
    fn any_changed_reference_or_byte_changes_the_digest() {
        let urls = ["file:///a.nc", "file:///b.nc"];
        let url = |id: u32| urls.get(id as usize).copied();
        let base = vec![
            ChunkEntry::Source { source: 0, offset: 100, length: 50 },
            ChunkEntry::Missing,
            ChunkEntry::Owned { offset: 0, length: 3 },
            ChunkEntry::Source { source: 1, offset: 0, length: 8 },
        ];
        let digest = |entries: Vec<ChunkEntry>, owned: Vec<u8>| references_digest(&array(entries, owned), url).unwrap();
        let reference = digest(base.clone(), vec![1, 2, 3]);
        assert_eq!(reference, digest(base.clone(), vec![1, 2, 3]), "deterministic");
        let mut offset = base.clone();
        offset[0] = ChunkEntry::Source { source: 0, offset: 101, length: 50 };
        let mut location = base.clone();
        location[3] = ChunkEntry::Source { source: 0, offset: 0, length: 8 };
        let mut dropped = base.clone();
        dropped[0] = ChunkEntry::Missing;
        let mut moved = base.clone();
        moved.swap(0, 1);
        for (what, entries, owned) in [
            ("offset", offset, vec![1, 2, 3]),
            ("location", location, vec![1, 2, 3]),
            ("dropped", dropped, vec![1, 2, 3]),
            ("moved", moved, vec![1, 2, 3]),
            ("owned byte", base.clone(), vec![1, 2, 4]),
        ] {
            assert_ne!(digest(entries, owned), reference, "{what}");
        }
        // Source ids are only names: the same URLs under other ids give the same digest.
        let swapped_urls = ["file:///b.nc", "file:///a.nc"];
        let swapped = |id: u32| swapped_urls.get(id as usize).copied();
        let mut renumbered = base.clone();
        renumbered[0] = ChunkEntry::Source { source: 1, offset: 100, length: 50 };
        renumbered[3] = ChunkEntry::Source { source: 0, offset: 0, length: 8 };
        let mut table = array(renumbered, vec![1, 2, 3]);
        table.chunks.owned = OwnedBytes::from_vec(vec![1, 2, 3], &Default::default()).unwrap();
        assert_eq!(references_digest(&table, swapped).unwrap(), reference);
    }
}
