//! Chunk manifest and source table: where every chunk's bytes are.
//!
//! Stage: pure data model, shared by `combine` (which produces entries), `store` (which writes
//! `manifest.bin` and `sources.bin`) and `read` (which fetches single blocks of a manifest by byte
//! range and decodes them). Nothing here does I/O except through the [`std::io::Write`] handed to
//! [`ManifestWriter`].
//!
//! - Input: [`ChunkEntry`] values in row-major chunk-grid order ("linear index"), and the
//!   [`SourceFile`]s they point into.
//! - Output: the `manifest.bin` and `sources.bin` byte formats, specified byte by byte in
//!   `docs/design/001-manifest-format.md` (format version [`MANIFEST_FORMAT_VERSION`]).
//!
//! Layout: `varint` (LEB128 + zigzag), `format` (header, block encoding and decoding),
//! `writer` ([`ManifestWriter`], [`encode_manifest`]), `index` ([`ManifestIndex`]: the read side)
//! and `sources` ([`SourceTable`]).
//!
//! Every decoder here accepts arbitrary bytes: corrupt input yields a [`ManifestError`], never a
//! panic, and no allocation is sized from a count that the input bytes have not been checked to
//! hold.

pub(crate) mod binding;
pub(crate) mod format;
mod index;
mod sha256;
pub(crate) mod sources;
mod varint;
mod writer;

pub(crate) use format::ManifestHeader;
pub(crate) use index::ManifestIndex;
pub(crate) use sources::{SourceFile, SourceTable};
pub(crate) use writer::{encode_manifest, ManifestWriter};

/// Version of the `manifest.bin` format written by this crate (and the only one it reads).
pub(crate) const MANIFEST_FORMAT_VERSION: u32 = 1;

/// Newest version of the `sources.bin` format: 2 adds the ETag of remote objects. The writer keeps
/// writing version 1 for tables without any ETag (local files), so those stay readable by older
/// vzarr; the reader reads both.
pub(crate) const SOURCES_FORMAT_VERSION: u32 = 2;

/// Entries per block when none is given: 4096 (about 20 KiB per block for typical archives).
pub(crate) const DEFAULT_BLOCK_LEN: u32 = 4096;

/// Largest accepted block length (entries per block): 2^20. It bounds the memory a reader
/// allocates for one decoded block, whatever a (possibly corrupt) header claims.
pub(crate) const MAX_BLOCK_LEN: u32 = 1 << 20;

/// Where one chunk's bytes are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChunkEntry {
    /// Never written: reads as the fill value.
    Missing,
    /// `length` bytes at byte `offset` of source file number `source` (index into the
    /// [`SourceTable`]).
    Source {
        /// Index of the file in the store's [`SourceTable`].
        source: u32,
        /// Byte offset of the chunk in that file.
        offset: u64,
        /// Length of the chunk in bytes.
        length: u64,
    },
    /// `length` bytes at `offset` of the array's own blob (bytes vzarr rewrote or inlined).
    Owned {
        /// Byte offset of the chunk in the array's blob.
        offset: u64,
        /// Length of the chunk in bytes.
        length: u64,
    },
}

impl ChunkEntry {
    /// One past the last byte of the referenced range, or `None` for [`ChunkEntry::Missing`]
    /// and for a range whose end does not fit in a `u64` (such an entry is invalid).
    #[must_use]
    pub fn end(&self) -> Option<u64> {
        match *self {
            Self::Missing => None,
            Self::Source { offset, length, .. } | Self::Owned { offset, length } => offset.checked_add(length),
        }
    }
}

/// What is wrong at one position of a corrupt block or source table.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// The bytes end in the middle of a value.
    #[error("unexpected end of data")]
    UnexpectedEnd,
    /// A varint has more than 10 bytes or a value above `u64::MAX`.
    #[error("varint overflows 64 bits")]
    VarintOverflow,
    /// A varint has a redundant trailing zero byte (every value has one canonical encoding).
    #[error("varint is not minimally encoded")]
    VarintNotMinimal,
    /// A tag or flags byte with an unknown kind or reserved bits set.
    #[error("invalid tag byte {tag:#04x}")]
    BadTag {
        /// The byte read.
        tag: u8,
    },
    /// A source entry says "same source as before" but is the first source entry of its block.
    #[error("entry repeats the previous source but none precedes it in the block")]
    NoPreviousSource,
    /// A source id above `u32::MAX`.
    #[error("source id {id} does not fit in 32 bits")]
    SourceIdTooLarge {
        /// The decoded id.
        id: u64,
    },
    /// A run of missing chunks longer than what is left of the block.
    #[error("missing run of {run} chunks but only {remaining} remain in the block")]
    RunTooLong {
        /// Decoded run length.
        run: u64,
        /// Entries still expected in the block.
        remaining: u64,
    },
    /// A chunk byte range whose end does not fit in a `u64`.
    #[error("byte range at offset {offset} with length {length} overflows u64")]
    RangeOverflow {
        /// Decoded offset.
        offset: u64,
        /// Decoded length.
        length: u64,
    },
    /// Entries are all decoded but bytes remain.
    #[error("{count} unexpected trailing bytes")]
    TrailingBytes {
        /// Number of bytes left over.
        count: u64,
    },
    /// A source location claims a shared prefix longer than the previous location or than
    /// [`MAX_SHARED_PREFIX`].
    #[error("shared prefix of {len} bytes is invalid (limit {limit})")]
    BadSharedPrefix {
        /// Claimed length in bytes.
        len: u64,
        /// Largest length allowed for this entry.
        limit: u64,
    },
    /// A source location that is not valid UTF-8.
    #[error("location is not valid UTF-8")]
    InvalidUtf8,
}

/// Errors from writing or reading a manifest or a source table.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ManifestError {
    /// Writing to the output failed.
    #[error("i/o error while writing the {what}")]
    Io {
        /// Which part was being written.
        what: &'static str,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The data does not start with the expected magic bytes.
    #[error("{file}: bad magic bytes {found:02x?}")]
    BadMagic {
        /// `"manifest"` or `"source table"`.
        file: &'static str,
        /// The first bytes found (up to 8).
        found: Vec<u8>,
    },
    /// A format version this build does not read.
    #[error("{file}: unsupported format version {version} (this build reads version {supported})")]
    UnsupportedVersion {
        /// `"manifest"` or `"source table"`.
        file: &'static str,
        /// Version found in the data.
        version: u32,
        /// Version this build reads.
        supported: u32,
    },
    /// A stored CRC-32 does not match the bytes it covers.
    #[error("{what}: checksum mismatch (stored {stored:#010x}, computed {computed:#010x})")]
    ChecksumMismatch {
        /// What the checksum covers, e.g. `"manifest header"` or `"manifest block 3"`.
        what: String,
        /// Checksum stored in the data.
        stored: u32,
        /// Checksum of the bytes as read.
        computed: u32,
    },
    /// The data is shorter than its structure requires.
    #[error("{what}: truncated: need {needed} bytes, have {available}")]
    Truncated {
        /// What was being read.
        what: &'static str,
        /// Bytes required.
        needed: u64,
        /// Bytes present.
        available: u64,
    },
    /// A block length of 0 or above [`MAX_BLOCK_LEN`].
    #[error("block length {block_len} is outside 1..={max}")]
    InvalidBlockLen {
        /// The requested or stored block length.
        block_len: u32,
        /// Largest allowed block length.
        max: u32,
    },
    /// A header field contradicts the others.
    #[error("manifest header: {reason}")]
    InvalidHeader {
        /// Which consistency check failed.
        reason: &'static str,
    },
    /// The block index is malformed.
    #[error("manifest index: block {block}: {reason}")]
    InvalidIndex {
        /// Block whose offsets are wrong (`num_blocks` for the final end offset).
        block: u64,
        /// What is wrong.
        reason: &'static str,
    },
    /// A block number at or past the number of blocks.
    #[error("block {block} out of range (manifest has {num_blocks} blocks)")]
    BlockOutOfRange {
        /// Requested block.
        block: u64,
        /// Number of blocks in the manifest.
        num_blocks: u64,
    },
    /// The bytes passed for a block do not have the length the index gives it.
    #[error("block {block}: got {actual} bytes, the index says {expected}")]
    BlockLength {
        /// Block number.
        block: u64,
        /// Length from the index.
        expected: u64,
        /// Length passed in.
        actual: u64,
    },
    /// A block's entries cannot be decoded.
    #[error("manifest block {block}: corrupt at byte {position}")]
    CorruptBlock {
        /// Block number.
        block: u64,
        /// Byte position inside the block.
        position: u64,
        /// What is wrong there.
        #[source]
        cause: DecodeError,
    },
    /// A header counter disagrees with the decoded entries.
    #[error("manifest: header says {header} {what}, entries give {actual}")]
    CountMismatch {
        /// Which counter.
        what: &'static str,
        /// Value stored in the header.
        header: u64,
        /// Value computed from the entries.
        actual: u64,
    },
    /// More entries pushed than the `num_chunks` given to the writer.
    #[error("manifest writer: more than {num_chunks} entries pushed")]
    TooManyEntries {
        /// Declared number of chunks.
        num_chunks: u64,
    },
    /// `finish` called before `num_chunks` entries were pushed.
    #[error("manifest writer: finished after {pushed} of {num_chunks} entries")]
    TooFewEntries {
        /// Entries pushed.
        pushed: u64,
        /// Declared number of chunks.
        num_chunks: u64,
    },
    /// An entry whose `offset + length` does not fit in a `u64`.
    #[error("chunk {linear}: byte range at offset {offset} with length {length} overflows u64")]
    RangeOverflow {
        /// Linear chunk index of the entry.
        linear: u64,
        /// Offset of the entry.
        offset: u64,
        /// Length of the entry.
        length: u64,
    },
    /// A source table entry cannot be decoded.
    #[error("source table: entry {entry}: corrupt at byte {position}")]
    CorruptSourceTable {
        /// Index of the entry being decoded.
        entry: u64,
        /// Byte position in the encoded table.
        position: u64,
        /// What is wrong there.
        #[source]
        cause: DecodeError,
    },
    /// A source table would exceed `u32::MAX` files.
    #[error("source table: more than {max} files")]
    TooManySources {
        /// Largest number of files.
        max: u64,
    },
}

/// CRC-32 (IEEE, as in zlib and gzip) of `bytes`.
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = flate2::Crc::new();
    crc.update(bytes);
    crc.sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32_matches_the_standard_check_value() {
        // The CRC-32/ISO-HDLC check value for "123456789".
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
    }

    #[test]
    fn decoded_entry_is_24_bytes() {
        // The design note's memory bound for a decoded block relies on this.
        assert_eq!(std::mem::size_of::<ChunkEntry>(), 24);
    }

    #[test]
    fn entry_end() {
        assert_eq!(ChunkEntry::Missing.end(), None);
        let e = ChunkEntry::Source { source: 1, offset: 10, length: 5 };
        assert_eq!(e.end(), Some(15));
        let o = ChunkEntry::Owned { offset: u64::MAX, length: 1 };
        assert_eq!(o.end(), None);
        let o = ChunkEntry::Owned { offset: u64::MAX, length: 0 };
        assert_eq!(o.end(), Some(u64::MAX));
    }
}
