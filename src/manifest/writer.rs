//! Streaming `manifest.bin` writer.
//!
//! Stage: `store` calls it after `combine`. Input: [`ChunkEntry`] values pushed in linear chunk
//! order. Output: 64 placeholder bytes, the blocks, then the block index, written to any
//! [`Write`]; [`ManifestWriter::finish`] returns the real header for the caller to write at
//! offset 0, so the output needs no `Seek` (an object-store multipart upload, a `Vec`, a file).
//! Follows `docs/design/001-manifest-format.md`.
//!
//! Memory: one encoded block (at most `block_len` x 26 bytes) plus 8 bytes per block for the
//! index, i.e. about 0.2% of the entries' in-memory size at the default block length.

use std::borrow::Borrow;
use std::io::Write;

use super::format::{check_block_len, BlockEncoder};
use super::{ChunkEntry, ManifestError, ManifestHeader, DEFAULT_BLOCK_LEN, MANIFEST_FORMAT_VERSION};

/// Streaming writer: push entries in linear order; memory O(block).
#[derive(Debug)]
pub(crate) struct ManifestWriter<W: Write> {
    out: W,
    num_chunks: u64,
    block_len: u32,
    /// Bytes written so far (the absolute position in the file).
    position: u64,
    /// Absolute start offset of every finished block.
    block_starts: Vec<u64>,
    encoder: BlockEncoder,
    /// Entries pushed so far.
    pushed: u64,
    /// Entries pushed into the current block.
    in_block: u32,
    source_entries: u64,
    owned_entries: u64,
    source_bytes: u64,
}

impl<W: Write> ManifestWriter<W> {
    /// A writer for `num_chunks` entries with the default block length
    /// ([`DEFAULT_BLOCK_LEN`], 4096); writes the 64 placeholder header bytes at once.
    ///
    /// # Errors
    /// [`ManifestError::Io`] if writing the placeholder fails.
    pub(crate) fn new(out: W, num_chunks: u64) -> Result<Self, ManifestError> {
        Self::with_block_len(out, num_chunks, DEFAULT_BLOCK_LEN)
    }

    /// A writer for `num_chunks` entries with `block_len` entries per block.
    ///
    /// # Errors
    /// [`ManifestError::InvalidBlockLen`] if `block_len` is 0 or above
    /// [`super::MAX_BLOCK_LEN`]; [`ManifestError::Io`] if writing the placeholder fails.
    pub(crate) fn with_block_len(mut out: W, num_chunks: u64, block_len: u32) -> Result<Self, ManifestError> {
        check_block_len(block_len)?;
        out.write_all(&[0u8; ManifestHeader::LEN])
            .map_err(|source| ManifestError::Io { what: "manifest header placeholder", source })?;
        Ok(Self {
            out,
            num_chunks,
            block_len,
            position: ManifestHeader::LEN as u64,
            block_starts: Vec::new(),
            encoder: BlockEncoder::default(),
            pushed: 0,
            in_block: 0,
            source_entries: 0,
            owned_entries: 0,
            source_bytes: 0,
        })
    }

    /// Appends the entry of the next chunk in linear order; writes a block when it is full.
    ///
    /// # Errors
    /// [`ManifestError::TooManyEntries`] past `num_chunks` entries,
    /// [`ManifestError::RangeOverflow`] if `offset + length` does not fit in a `u64`,
    /// [`ManifestError::Io`] if writing a block fails.
    pub(crate) fn push(&mut self, entry: ChunkEntry) -> Result<(), ManifestError> {
        if self.pushed >= self.num_chunks {
            return Err(ManifestError::TooManyEntries { num_chunks: self.num_chunks });
        }
        match entry {
            ChunkEntry::Missing => {}
            ChunkEntry::Source { offset, length, .. } | ChunkEntry::Owned { offset, length } => {
                if entry.end().is_none() {
                    return Err(ManifestError::RangeOverflow { linear: self.pushed, offset, length });
                }
                if matches!(entry, ChunkEntry::Source { .. }) {
                    self.source_entries += 1;
                    self.source_bytes = self.source_bytes.saturating_add(length);
                } else {
                    self.owned_entries += 1;
                }
            }
        }
        self.encoder.push(entry);
        self.pushed += 1;
        self.in_block += 1;
        if self.in_block == self.block_len || self.pushed == self.num_chunks {
            self.write_block()?;
        }
        Ok(())
    }

    fn write_block(&mut self) -> Result<(), ManifestError> {
        let bytes = self.encoder.finish_block();
        self.out.write_all(bytes).map_err(|source| ManifestError::Io { what: "manifest block", source })?;
        self.block_starts.push(self.position);
        self.position += bytes.len() as u64;
        self.encoder.reset();
        self.in_block = 0;
        Ok(())
    }

    /// Writes the index and returns the full header bytes; the CALLER writes them at offset 0
    /// (so `W` needs no `Seek`: the writer writes 64 zero bytes first).
    ///
    /// # Errors
    /// [`ManifestError::TooFewEntries`] if fewer than `num_chunks` entries were pushed;
    /// [`ManifestError::Io`] if writing the index or flushing fails.
    pub(crate) fn finish(mut self) -> Result<(W, ManifestHeader), ManifestError> {
        if self.pushed < self.num_chunks {
            return Err(ManifestError::TooFewEntries { pushed: self.pushed, num_chunks: self.num_chunks });
        }
        let index_offset = self.position;
        let mut index = Vec::with_capacity((self.block_starts.len() + 1) * 8);
        for start in self.block_starts.iter().chain([&index_offset]) {
            index.extend_from_slice(&start.to_le_bytes());
        }
        let io = |source| ManifestError::Io { what: "manifest index", source };
        self.out.write_all(&index).map_err(io)?;
        self.out.flush().map_err(io)?;
        let header = ManifestHeader {
            format_version: MANIFEST_FORMAT_VERSION,
            block_len: self.block_len,
            num_chunks: self.num_chunks,
            index_offset,
            source_entries: self.source_entries,
            owned_entries: self.owned_entries,
            source_bytes: self.source_bytes,
        };
        Ok((self.out, header))
    }
}

/// Convenience: encode every entry (a slice, a dataset's chunk table) into a `Vec` (header included,
/// correct at offset 0), with the default block length.
///
/// # Errors
/// [`ManifestError::RangeOverflow`] if an entry's `offset + length` does not fit in a `u64`.
pub(crate) fn encode_manifest<E: Borrow<ChunkEntry>>(
    entries: impl IntoIterator<Item = E, IntoIter: ExactSizeIterator>,
) -> Result<Vec<u8>, ManifestError> {
    encode_manifest_with_block_len(entries, DEFAULT_BLOCK_LEN)
}

/// [`encode_manifest`] with `block_len` entries per block.
///
/// # Errors
/// [`ManifestError::InvalidBlockLen`] for a block length outside `1..=MAX_BLOCK_LEN`, and
/// [`ManifestError::RangeOverflow`] if an entry's `offset + length` does not fit in a `u64`.
pub(crate) fn encode_manifest_with_block_len<E: Borrow<ChunkEntry>>(
    entries: impl IntoIterator<Item = E, IntoIter: ExactSizeIterator>,
    block_len: u32,
) -> Result<Vec<u8>, ManifestError> {
    let entries = entries.into_iter();
    let mut writer = ManifestWriter::with_block_len(Vec::new(), entries.len() as u64, block_len)?;
    for entry in entries {
        writer.push(*entry.borrow())?;
    }
    let (mut bytes, header) = writer.finish()?;
    if let Some(head) = bytes.get_mut(..ManifestHeader::LEN) {
        head.copy_from_slice(&header.to_bytes());
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::super::format::le_u64;
    use super::*;

    fn src(source: u32, offset: u64, length: u64) -> ChunkEntry {
        ChunkEntry::Source { source, offset, length }
    }

    /// The complete example file of `docs/design/001-manifest-format.md` (version 1). Its
    /// checksums were computed independently (Python's `zlib.crc32`). Keep this test as is when
    /// the format moves on: version 1 files must stay readable or be rejected explicitly.
    const GOLDEN_V1: &str = concat!(
        "565a4d414e494600010000000010000006000000000000005800000000000000",
        "03000000000000000100000000000000fe0100000000000000000000f3f635fa",
        "01038040ac020508c80100010200100100af090af6edf2bf4000000000000000",
        "5800000000000000",
    );

    fn golden_entries() -> Vec<ChunkEntry> {
        vec![
            src(3, 4096, 300),
            src(3, 4400, 200),
            ChunkEntry::Missing,
            ChunkEntry::Missing,
            ChunkEntry::Owned { offset: 0, length: 16 },
            src(0, 4000, 10),
        ]
    }

    fn unhex(hex: &str) -> Vec<u8> {
        (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap()).collect()
    }

    #[test]
    fn golden_v1_file() {
        let golden = unhex(GOLDEN_V1);
        assert_eq!(encode_manifest(golden_entries()).unwrap(), golden);
        assert_eq!(super::super::ManifestIndex::decode_all(&golden).unwrap(), golden_entries());
    }

    #[test]
    fn empty_manifest_is_header_plus_one_index_entry() {
        let bytes = encode_manifest([ChunkEntry::Missing; 0]).unwrap();
        assert_eq!(bytes.len(), 72);
        let header = ManifestHeader::parse(&bytes).unwrap();
        assert_eq!(header.num_chunks, 0);
        assert_eq!(header.num_blocks(), 0);
        assert_eq!(header.index_offset, 64);
        assert_eq!(le_u64(&bytes[64..72]), 64);
    }

    #[test]
    fn counts_and_layout() {
        let entries = [
            src(0, 100, 10),
            ChunkEntry::Missing,
            ChunkEntry::Owned { offset: 0, length: 7 },
            src(1, 5, 20),
            ChunkEntry::Missing,
        ];
        let bytes = encode_manifest_with_block_len(entries.iter(), 2).unwrap();
        let h = ManifestHeader::parse(&bytes).unwrap();
        assert_eq!(h.num_blocks(), 3);
        assert_eq!((h.source_entries, h.owned_entries, h.source_bytes), (2, 1, 30));
        // The index is the last 4 u64s: block starts then the index offset itself.
        assert_eq!(h.index_range(), h.index_offset..bytes.len() as u64);
        let index: Vec<u64> = bytes[h.index_offset as usize..].chunks(8).map(le_u64).collect();
        assert_eq!(index[0], 64);
        assert_eq!(index[3], h.index_offset);
        assert!(index.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn push_and_finish_enforce_num_chunks() {
        let mut w = ManifestWriter::with_block_len(Vec::new(), 2, 1).unwrap();
        w.push(ChunkEntry::Missing).unwrap();
        let w2 = ManifestWriter::new(Vec::new(), 1).unwrap();
        assert!(matches!(w2.finish(), Err(ManifestError::TooFewEntries { pushed: 0, num_chunks: 1 })));
        w.push(ChunkEntry::Missing).unwrap();
        assert!(matches!(w.push(ChunkEntry::Missing), Err(ManifestError::TooManyEntries { num_chunks: 2 })));
        assert!(w.finish().is_ok());
    }

    #[test]
    fn rejects_overflowing_ranges_and_bad_block_len() {
        let mut w = ManifestWriter::new(Vec::new(), 3).unwrap();
        w.push(src(0, u64::MAX - 5, 5)).unwrap();
        assert!(matches!(w.push(src(0, u64::MAX - 5, 6)), Err(ManifestError::RangeOverflow { linear: 1, .. })));
        assert!(matches!(
            ManifestWriter::with_block_len(Vec::new(), 3, 0),
            Err(ManifestError::InvalidBlockLen { block_len: 0, .. })
        ));
        assert!(ManifestWriter::with_block_len(Vec::new(), 3, super::super::MAX_BLOCK_LEN + 1).is_err());
    }

    #[test]
    fn io_errors_are_reported() {
        struct Failing;
        impl Write for Failing {
            fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
                Err(std::io::Error::other("disk full"))
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        assert!(matches!(ManifestWriter::new(Failing, 1), Err(ManifestError::Io { .. })));
    }

    #[test]
    fn missing_runs_stop_at_block_boundaries() {
        // 10 missing chunks in blocks of 4: runs of 4, 4, 2 -> each block is 2 bytes + CRC.
        let bytes = encode_manifest_with_block_len([ChunkEntry::Missing; 10], 4).unwrap();
        let h = ManifestHeader::parse(&bytes).unwrap();
        assert_eq!(h.index_offset, 64 + 3 * 6);
        assert_eq!(&bytes[64..66], &[0x00, 0x03]);
        assert_eq!(&bytes[76..78], &[0x00, 0x01]);
    }
}
