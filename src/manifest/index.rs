//! Read side of `manifest.bin`: the block index and block decoding.
//!
//! Stage: `read` (and tests). Input: the 64-byte header and the index bytes (fetched once per
//! array, `8 x (num_blocks + 1)` bytes: about 2 KiB per million chunks at the default block
//! length), then the bytes of whichever blocks a selection touches, fetched by the caller with
//! [`ManifestIndex::block_bytes`]. Output: [`ChunkEntry`] values. Follows
//! `docs/design/001-manifest-format.md`, section "Index".
//!
//! Everything is validated before use: the index must start right after the header, end at
//! `index_offset`, and give every block a byte length its entry count can produce, so a corrupt
//! index can neither make a reader fetch gigabytes for one block nor allocate from a bogus count.

use std::ops::Range;

use super::format::{decode_block_bytes, le_u64, BLOCK_TRAILER_LEN, MAX_ENTRY_BYTES, MIN_BLOCK_BYTES};
use super::{ChunkEntry, ManifestError, ManifestHeader};

/// Read side: header + block offsets; decodes blocks fetched by the caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ManifestIndex {
    header: ManifestHeader,
    /// `num_blocks + 1` absolute offsets; block `b` is `offsets[b]..offsets[b + 1]`.
    offsets: Vec<u64>,
}

impl ManifestIndex {
    /// Builds the index from a header and the bytes of [`ManifestHeader::index_range`].
    ///
    /// # Errors
    /// Header validation errors (see [`ManifestHeader::parse`]) for a hand-built header,
    /// [`ManifestError::Truncated`] or [`ManifestError::InvalidIndex`] if `index_bytes` does not
    /// have the expected length, and [`ManifestError::InvalidIndex`] if the offsets do not start
    /// at 64, end at `index_offset`, or give a block a byte length its entries cannot have.
    pub(crate) fn new(header: ManifestHeader, index_bytes: &[u8]) -> Result<Self, ManifestError> {
        header.validate()?;
        let range = header.index_range();
        let expected = range.end - range.start;
        let actual = index_bytes.len() as u64;
        if actual < expected {
            return Err(ManifestError::Truncated { what: "manifest index", needed: expected, available: actual });
        }
        if actual > expected {
            return Err(ManifestError::InvalidIndex {
                block: header.num_blocks(),
                reason: "more index bytes than blocks",
            });
        }
        let offsets: Vec<u64> = index_bytes.chunks_exact(8).map(le_u64).collect();
        let index = Self { header, offsets };
        index.check_offsets()?;
        Ok(index)
    }

    /// Checks the start, the end and every block's byte length.
    fn check_offsets(&self) -> Result<(), ManifestError> {
        let blocks = self.header.num_blocks();
        if self.offsets.first() != Some(&(ManifestHeader::LEN as u64)) {
            return Err(invalid(0, "first block does not start right after the header"));
        }
        if self.offsets.last() != Some(&self.header.index_offset) {
            return Err(invalid(blocks, "last block does not end at the index offset"));
        }
        for (block, pair) in (0u64..).zip(self.offsets.windows(2)) {
            let chunks = self.block_chunks(block);
            let max = (chunks.end - chunks.start) * MAX_ENTRY_BYTES + BLOCK_TRAILER_LEN;
            match pair[1].checked_sub(pair[0]) {
                Some(len) if (MIN_BLOCK_BYTES..=max).contains(&len) => {}
                _ => return Err(invalid(block, "block byte length is impossible")),
            }
        }
        Ok(())
    }

    /// Parses the header and index from a whole file and decodes every block, checking the
    /// header's counters against the entries. Meant for tests and small arrays.
    ///
    /// # Errors
    /// Every error of [`ManifestHeader::parse`], [`Self::new`] and [`Self::decode_block`];
    /// [`ManifestError::Truncated`] if `file` ends before the index does,
    /// [`ManifestError::InvalidHeader`] if bytes follow the index, and
    /// [`ManifestError::CountMismatch`] if the header counters disagree with the entries.
    pub(crate) fn decode_all(file: &[u8]) -> Result<Vec<ChunkEntry>, ManifestError> {
        let header = ManifestHeader::parse(file)?;
        let range = header.index_range();
        let file_len = file.len() as u64;
        if file_len < range.end {
            return Err(ManifestError::Truncated { what: "manifest", needed: range.end, available: file_len });
        }
        if file_len > range.end {
            return Err(ManifestError::InvalidHeader { reason: "bytes follow the index" });
        }
        let index = Self::new(header, slice(file, range)?)?;
        let mut entries = Vec::new();
        let mut counts = Counts::default();
        for block in 0..index.header.num_blocks() {
            let decoded = index.decode_block(block, slice(file, index.block_bytes(block))?)?;
            counts.add(&decoded);
            entries.extend(decoded);
        }
        counts.check(&index.header)?;
        Ok(entries)
    }

    /// The header this index was built with.
    #[must_use]
    pub(crate) fn header(&self) -> &ManifestHeader {
        &self.header
    }

    /// Number of blocks.
    #[must_use]
    pub(crate) fn num_blocks(&self) -> u64 {
        self.header.num_blocks()
    }

    /// Block holding linear chunk index `linear` (a number `>= num_blocks` if `linear` is past
    /// the last chunk).
    #[must_use]
    pub(crate) fn block_of(&self, linear: u64) -> u64 {
        // block_len >= 1: validated in `new`.
        linear / u64::from(self.header.block_len.max(1))
    }

    /// Byte range of `block` in the file (empty, at the index offset, for a block out of range).
    #[must_use]
    pub(crate) fn block_bytes(&self, block: u64) -> Range<u64> {
        let at = |b: u64| usize::try_from(b).ok().and_then(|b| self.offsets.get(b));
        match (at(block), block.checked_add(1).and_then(at)) {
            (Some(&start), Some(&end)) => start..end,
            _ => self.header.index_offset..self.header.index_offset,
        }
    }

    /// Linear chunk indices covered by `block` (empty, at `num_chunks`, for a block out of
    /// range).
    #[must_use]
    pub(crate) fn block_chunks(&self, block: u64) -> Range<u64> {
        let len = u64::from(self.header.block_len);
        let n = self.header.num_chunks;
        let start = block.saturating_mul(len).min(n);
        start..start.saturating_add(len).min(n)
    }

    /// Decodes one block from its bytes (the file's [`Self::block_bytes`] range); returns
    /// exactly `block_chunks(block).len()` entries. Never panics on corrupt bytes.
    ///
    /// # Errors
    /// [`ManifestError::BlockOutOfRange`], [`ManifestError::BlockLength`] if `bytes` is not as
    /// long as the index says, [`ManifestError::ChecksumMismatch`] if the block's CRC-32 does not
    /// match, and [`ManifestError::CorruptBlock`] if its entries cannot be decoded.
    pub(crate) fn decode_block(&self, block: u64, bytes: &[u8]) -> Result<Vec<ChunkEntry>, ManifestError> {
        let num_blocks = self.num_blocks();
        if block >= num_blocks {
            return Err(ManifestError::BlockOutOfRange { block, num_blocks });
        }
        let range = self.block_bytes(block);
        let expected = range.end - range.start;
        if bytes.len() as u64 != expected {
            return Err(ManifestError::BlockLength { block, expected, actual: bytes.len() as u64 });
        }
        let chunks = self.block_chunks(block);
        decode_block_bytes(block, bytes, chunks.end - chunks.start)
    }
}

fn invalid(block: u64, reason: &'static str) -> ManifestError {
    ManifestError::InvalidIndex { block, reason }
}

/// `file[range]`, or a truncation error.
fn slice(file: &[u8], range: Range<u64>) -> Result<&[u8], ManifestError> {
    let start = usize::try_from(range.start).ok();
    let end = usize::try_from(range.end).ok();
    start.zip(end).and_then(|(s, e)| file.get(s..e)).ok_or(ManifestError::Truncated {
        what: "manifest",
        needed: range.end,
        available: file.len() as u64,
    })
}

/// Running totals of the header counters.
#[derive(Debug, Default)]
struct Counts {
    source_entries: u64,
    owned_entries: u64,
    source_bytes: u64,
}

impl Counts {
    fn add(&mut self, entries: &[ChunkEntry]) {
        for entry in entries {
            match *entry {
                ChunkEntry::Missing => {}
                ChunkEntry::Source { length, .. } => {
                    self.source_entries += 1;
                    self.source_bytes = self.source_bytes.saturating_add(length);
                }
                ChunkEntry::Owned { .. } => self.owned_entries += 1,
            }
        }
    }

    fn check(&self, header: &ManifestHeader) -> Result<(), ManifestError> {
        let pairs = [
            ("source entries", header.source_entries, self.source_entries),
            ("owned entries", header.owned_entries, self.owned_entries),
            ("source bytes", header.source_bytes, self.source_bytes),
        ];
        for (what, header, actual) in pairs {
            if header != actual {
                return Err(ManifestError::CountMismatch { what, header, actual });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::writer::encode_manifest_with_block_len;
    use super::super::{encode_manifest, MAX_BLOCK_LEN};
    use super::*;
    use proptest::prelude::*;

    /// Entries mixing all kinds, runs of missing chunks and offsets near `u64::MAX`.
    fn arb_entries() -> impl Strategy<Value = Vec<ChunkEntry>> {
        let offset = prop_oneof![0..1u64 << 32, any::<u64>(), (u64::MAX - 100_000)..=u64::MAX];
        let one = prop_oneof![
            3 => (1..20usize).prop_map(|n| vec![ChunkEntry::Missing; n]),
            5 => (0..5u32, offset.clone(), 0..100_000u64).prop_map(|(source, offset, length)| {
                vec![ChunkEntry::Source { source, offset, length: length.min(u64::MAX - offset) }]
            }),
            1 => (offset, any::<u64>()).prop_map(|(offset, length)| {
                vec![ChunkEntry::Owned { offset, length: length.min(u64::MAX - offset) }]
            }),
        ];
        proptest::collection::vec(one, 0..60).prop_map(|v| v.concat())
    }

    fn index_of(file: &[u8]) -> ManifestIndex {
        let header = ManifestHeader::parse(file).unwrap();
        let r = header.index_range();
        ManifestIndex::new(header, &file[r.start as usize..r.end as usize]).unwrap()
    }

    /// `files x chunks_per_file` entries laid out like a real archive: sequential chunks of
    /// 20..60 KiB with small gaps, 1% missing.
    fn realistic_archive(files: u32, chunks_per_file: u64) -> Vec<ChunkEntry> {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            // xorshift64*: a fixed, dependency-free pseudo-random sequence.
            state ^= state >> 12;
            state ^= state << 25;
            state ^= state >> 27;
            state.wrapping_mul(0x2545_f491_4f6c_dd1d)
        };
        let mut entries = Vec::new();
        for source in 0..files {
            // Chunk data starts after the HDF5 superblock and metadata.
            let mut offset = 4096 + next() % 60_000;
            for _ in 0..chunks_per_file {
                let length = 20 * 1024 + next() % (40 * 1024);
                if next() % 100 == 0 {
                    entries.push(ChunkEntry::Missing);
                    continue;
                }
                entries.push(ChunkEntry::Source { source, offset, length });
                // Small gaps (B-tree nodes, alignment), now and then a larger one.
                let gap = if next() % 50 == 0 { 4096 + next() % 8192 } else { next() % 64 };
                offset += length + gap;
            }
        }
        entries
    }

    #[test]
    fn realistic_archive_size() {
        let entries = realistic_archive(100, 1000);
        let bytes = encode_manifest(&entries).unwrap();
        let per_entry = bytes.len() as f64 / entries.len() as f64;
        println!("realistic archive: {} entries, {} bytes, {per_entry:.3} bytes/entry", entries.len(), bytes.len());
        assert!(per_entry <= 8.0, "{per_entry} bytes per entry");
        assert_eq!(ManifestIndex::decode_all(&bytes).unwrap(), entries);
    }

    #[test]
    fn block_access_and_out_of_range() {
        let entries = realistic_archive(3, 10);
        let file = encode_manifest_with_block_len(&entries, 7).unwrap();
        let index = index_of(&file);
        assert_eq!(index.num_blocks(), 5);
        assert_eq!(index.block_of(0), 0);
        assert_eq!(index.block_of(13), 1);
        assert_eq!(index.block_of(14), 2);
        assert_eq!(index.block_chunks(4), 28..30);
        assert_eq!(index.block_chunks(5), 30..30);
        assert_eq!(index.block_chunks(u64::MAX), 30..30);
        let end = index.header().index_offset;
        assert_eq!(index.block_bytes(5), end..end);
        assert_eq!(index.block_bytes(u64::MAX), end..end);
        assert!(matches!(index.decode_block(5, &[]), Err(ManifestError::BlockOutOfRange { block: 5, num_blocks: 5 })));
        let r = index.block_bytes(1);
        let short = &file[r.start as usize..r.end as usize - 1];
        assert!(matches!(index.decode_block(1, short), Err(ManifestError::BlockLength { block: 1, .. })));
    }

    #[test]
    fn index_validation() {
        let file = encode_manifest_with_block_len(realistic_archive(2, 10), 4).unwrap();
        let header = ManifestHeader::parse(&file).unwrap();
        let r = header.index_range();
        let index_bytes = &file[r.start as usize..r.end as usize];
        assert!(matches!(ManifestIndex::new(header.clone(), &index_bytes[1..]), Err(ManifestError::Truncated { .. })));
        let mut longer = index_bytes.to_vec();
        longer.extend_from_slice(&[0; 8]);
        assert!(ManifestIndex::new(header.clone(), &longer).is_err());
        // Swap two block starts: block 1 would get a negative length.
        let mut swapped = index_bytes.to_vec();
        swapped[8..16].copy_from_slice(&index_bytes[16..24]);
        swapped[16..24].copy_from_slice(&index_bytes[8..16]);
        assert!(matches!(
            ManifestIndex::new(header.clone(), &swapped),
            Err(ManifestError::InvalidIndex { block: 0 | 1, .. })
        ));
        let mut first = index_bytes.to_vec();
        first[0] = 65;
        assert!(matches!(
            ManifestIndex::new(header.clone(), &first),
            Err(ManifestError::InvalidIndex { block: 0, .. })
        ));
        let bad_header = ManifestHeader { block_len: MAX_BLOCK_LEN + 1, ..header };
        assert!(ManifestIndex::new(bad_header, index_bytes).is_err());
    }

    #[test]
    fn decode_all_rejects_length_and_counter_mismatch() {
        let entries = realistic_archive(2, 5);
        let mut file = encode_manifest(&entries).unwrap();
        file.push(0);
        assert!(matches!(ManifestIndex::decode_all(&file), Err(ManifestError::InvalidHeader { .. })));
        file.pop();
        let mut header = ManifestHeader::parse(&file).unwrap();
        header.source_bytes += 1;
        file[..64].copy_from_slice(&header.to_bytes());
        assert!(matches!(
            ManifestIndex::decode_all(&file),
            Err(ManifestError::CountMismatch { what: "source bytes", .. })
        ));
    }

    #[test]
    fn huge_claimed_chunk_count_does_not_allocate() {
        // A valid-looking header for 2^40 missing chunks in 2^20-entry blocks, in a tiny file.
        let header = ManifestHeader {
            format_version: 1,
            block_len: MAX_BLOCK_LEN,
            num_chunks: 1 << 40,
            index_offset: 64 + (1 << 20) * 6,
            source_entries: 0,
            owned_entries: 0,
            source_bytes: 0,
        };
        let mut file = header.to_bytes().to_vec();
        file.extend_from_slice(&[0; 36]);
        assert!(matches!(ManifestIndex::decode_all(&file), Err(ManifestError::Truncated { .. })));
        assert!(ManifestIndex::new(header, &file[64..]).is_err());
    }

    proptest! {
        #[test]
        fn round_trip(entries in arb_entries(), block_len in prop_oneof![1..6u32, Just(4096)]) {
            let file = encode_manifest_with_block_len(&entries, block_len).unwrap();
            prop_assert_eq!(&ManifestIndex::decode_all(&file).unwrap(), &entries);
            let index = index_of(&file);
            let mut covered = 0;
            for block in 0..index.num_blocks() {
                let chunks = index.block_chunks(block);
                prop_assert_eq!(chunks.start, covered);
                covered = chunks.end;
                for linear in chunks.clone() {
                    prop_assert_eq!(index.block_of(linear), block);
                }
                let r = index.block_bytes(block);
                let decoded = index.decode_block(block, &file[r.start as usize..r.end as usize]);
                let expected = &entries[chunks.start as usize..chunks.end as usize];
                prop_assert_eq!(decoded.unwrap(), expected);
            }
            prop_assert_eq!(covered, entries.len() as u64);
        }

        #[test]
        fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            prop_assert!(ManifestIndex::decode_all(&bytes).is_err());
            let mut with_magic = b"VZMANIF\0\x01\0\0\0".to_vec();
            with_magic.extend_from_slice(&bytes);
            let _ = ManifestIndex::decode_all(&with_magic);
        }

        #[test]
        fn truncations_are_errors(entries in arb_entries(), cut in any::<prop::sample::Index>()) {
            let file = encode_manifest_with_block_len(&entries, 3).unwrap();
            let len = cut.index(file.len());
            prop_assert!(ManifestIndex::decode_all(&file[..len]).is_err());
        }

        #[test]
        fn bit_flips_are_detected(
            entries in arb_entries(),
            at in any::<prop::sample::Index>(),
            bit in 0..8u8,
        ) {
            let mut file = encode_manifest_with_block_len(&entries, 3).unwrap();
            let i = at.index(file.len());
            file[i] ^= 1 << bit;
            // The header CRC, the index checks and the block CRCs together catch any single flip.
            prop_assert!(ManifestIndex::decode_all(&file).is_err(), "flip at byte {} bit {}", i, bit);
        }
    }
}
