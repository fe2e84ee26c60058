//! `manifest.bin` version 1: the 64-byte header and the block encoding.
//!
//! Stage: pure encoding/decoding used by the writer (`writer.rs`) and the read side (`index.rs`).
//! Follows `docs/design/001-manifest-format.md`, sections "Header" and "Blocks".
//!
//! - Input: [`ChunkEntry`] values one at a time ([`BlockEncoder`]), or the bytes of one block.
//! - Output: header bytes, block bytes (entries + CRC-32 trailer), decoded entries.
//!
//! Delta state (previous source, previous ends) is reset at every block start, so each block
//! decodes on its own. Offsets are delta-coded modulo 2^64 (`wrapping_sub`, read as `i64`,
//! zigzagged): the mapping is a bijection, so any `u64` offset round-trips exactly, and ordinary
//! forward or backward steps stay short.

use std::ops::Range;

use super::varint::{apply_delta, delta_code, put_varint, Cursor};
use super::{crc32, ChunkEntry, DecodeError, ManifestError, MANIFEST_FORMAT_VERSION, MAX_BLOCK_LEN};

/// Magic bytes at the start of `manifest.bin`.
pub(crate) const MANIFEST_MAGIC: [u8; 8] = *b"VZMANIF\0";

/// Length of the CRC-32 trailer at the end of every block.
pub(crate) const BLOCK_TRAILER_LEN: u64 = 4;
/// [`BLOCK_TRAILER_LEN`] as a buffer length.
const TRAILER_BYTES: usize = 4;

/// Fewest bytes a block can take: a one-byte tag, a one-byte varint and the trailer.
pub(crate) const MIN_BLOCK_BYTES: u64 = 2 + BLOCK_TRAILER_LEN;

/// Most bytes one entry can take: tag, 5-byte source id, two 10-byte varints.
pub(crate) const MAX_ENTRY_BYTES: u64 = 1 + 5 + 10 + 10;

/// Tag kind (low 2 bits): a run of missing chunks.
const KIND_MISSING: u8 = 0;
/// Tag kind: a chunk in a source file.
const KIND_SOURCE: u8 = 1;
/// Tag kind: a chunk in the array's own blob.
const KIND_OWNED: u8 = 2;
/// Tag bit 2 on a source entry: same source as the previous source entry in this block.
const SAME_SOURCE: u8 = 0x04;

/// The fixed 64-byte header at offset 0 of `manifest.bin`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestHeader {
    /// Format version; `MANIFEST_FORMAT_VERSION` for files this crate writes.
    pub format_version: u32,
    /// Entries per block (the last block may hold fewer).
    pub block_len: u32,
    /// Number of chunks (entries) in the manifest.
    pub num_chunks: u64,
    /// Absolute byte offset of the block index (which ends the file).
    pub index_offset: u64,
    /// Number of [`ChunkEntry::Source`] entries.
    pub source_entries: u64,
    /// Number of [`ChunkEntry::Owned`] entries.
    pub owned_entries: u64,
    /// Sum of the lengths of the source entries, saturating at `u64::MAX`.
    pub source_bytes: u64,
}

impl ManifestHeader {
    /// Size of the header in bytes.
    pub const LEN: usize = 64;

    /// Encodes the header, including its CRC-32 in bytes 60..64.
    #[must_use]
    pub fn to_bytes(&self) -> [u8; 64] {
        let mut out = [0u8; 64];
        out[0..8].copy_from_slice(&MANIFEST_MAGIC);
        out[8..12].copy_from_slice(&self.format_version.to_le_bytes());
        out[12..16].copy_from_slice(&self.block_len.to_le_bytes());
        out[16..24].copy_from_slice(&self.num_chunks.to_le_bytes());
        out[24..32].copy_from_slice(&self.index_offset.to_le_bytes());
        out[32..40].copy_from_slice(&self.source_entries.to_le_bytes());
        out[40..48].copy_from_slice(&self.owned_entries.to_le_bytes());
        out[48..56].copy_from_slice(&self.source_bytes.to_le_bytes());
        // 56..60 reserved (zero).
        let crc = crc32(&out[..60]);
        out[60..64].copy_from_slice(&crc.to_le_bytes());
        out
    }

    /// Parses and validates a header from the first 64 bytes of `bytes`.
    ///
    /// # Errors
    /// [`ManifestError::Truncated`] if fewer than 64 bytes are given,
    /// [`ManifestError::BadMagic`], [`ManifestError::UnsupportedVersion`],
    /// [`ManifestError::ChecksumMismatch`], [`ManifestError::InvalidBlockLen`] (0 or above
    /// [`MAX_BLOCK_LEN`]) and [`ManifestError::InvalidHeader`] when fields contradict each other
    /// (counters above `num_chunks`, an index offset that cannot hold the blocks, an index end
    /// past `u64::MAX`, non-zero reserved bytes).
    pub fn parse(bytes: &[u8]) -> Result<Self, ManifestError> {
        let bytes = bytes.get(..Self::LEN).ok_or(ManifestError::Truncated {
            what: "manifest header",
            needed: Self::LEN as u64,
            available: bytes.len() as u64,
        })?;
        if bytes[0..8] != MANIFEST_MAGIC {
            return Err(ManifestError::BadMagic { file: "manifest", found: bytes[0..8].to_vec() });
        }
        let format_version = le_u32(&bytes[8..12]);
        if format_version != MANIFEST_FORMAT_VERSION {
            return Err(ManifestError::UnsupportedVersion {
                file: "manifest",
                version: format_version,
                supported: MANIFEST_FORMAT_VERSION,
            });
        }
        let (stored, computed) = (le_u32(&bytes[60..64]), crc32(&bytes[..60]));
        if stored != computed {
            return Err(ManifestError::ChecksumMismatch { what: "manifest header".to_owned(), stored, computed });
        }
        if bytes[56..60] != [0; 4] {
            return Err(invalid_header("reserved bytes 56..60 are not zero"));
        }
        let header = Self {
            format_version,
            block_len: le_u32(&bytes[12..16]),
            num_chunks: le_u64(&bytes[16..24]),
            index_offset: le_u64(&bytes[24..32]),
            source_entries: le_u64(&bytes[32..40]),
            owned_entries: le_u64(&bytes[40..48]),
            source_bytes: le_u64(&bytes[48..56]),
        };
        header.validate()?;
        Ok(header)
    }

    /// Checks that the fields are consistent with each other (see [`Self::parse`]).
    pub(crate) fn validate(&self) -> Result<(), ManifestError> {
        check_block_len(self.block_len)?;
        let counted = self.source_entries.checked_add(self.owned_entries);
        if counted.is_none_or(|n| n > self.num_chunks) {
            return Err(invalid_header("more source + owned entries than chunks"));
        }
        if self.source_entries == 0 && self.source_bytes != 0 {
            return Err(invalid_header("source bytes without source entries"));
        }
        let blocks = self.num_blocks();
        let min_data = blocks.saturating_mul(MIN_BLOCK_BYTES);
        let max_data =
            self.num_chunks.saturating_mul(MAX_ENTRY_BYTES).saturating_add(blocks.saturating_mul(BLOCK_TRAILER_LEN));
        let data = self.index_offset.checked_sub(Self::LEN as u64);
        if data.is_none_or(|d| d < min_data || d > max_data) {
            return Err(invalid_header("index offset does not fit the number of blocks"));
        }
        let index_len = blocks.checked_add(1).and_then(|n| n.checked_mul(8));
        if index_len.and_then(|len| self.index_offset.checked_add(len)).is_none() {
            return Err(invalid_header("index end overflows u64"));
        }
        Ok(())
    }

    /// Number of blocks: `ceil(num_chunks / block_len)` (0 when `block_len` is 0).
    #[must_use]
    pub fn num_blocks(&self) -> u64 {
        match u64::from(self.block_len) {
            0 => 0,
            len => self.num_chunks.div_ceil(len),
        }
    }

    /// Byte range of the block index: `num_blocks + 1` little-endian `u64` offsets starting at
    /// `index_offset` (saturating at `u64::MAX` for headers that [`Self::parse`] would reject).
    #[must_use]
    pub fn index_range(&self) -> Range<u64> {
        let len = self.num_blocks().saturating_add(1).saturating_mul(8);
        self.index_offset..self.index_offset.saturating_add(len)
    }
}

/// Rejects block lengths outside `1..=MAX_BLOCK_LEN`.
pub(crate) fn check_block_len(block_len: u32) -> Result<(), ManifestError> {
    if block_len == 0 || block_len > MAX_BLOCK_LEN {
        return Err(ManifestError::InvalidBlockLen { block_len, max: MAX_BLOCK_LEN });
    }
    Ok(())
}

fn invalid_header(reason: &'static str) -> ManifestError {
    ManifestError::InvalidHeader { reason }
}

/// Little-endian `u32` from a 4-byte slice (missing bytes read as zero; callers pass 4).
fn le_u32(bytes: &[u8]) -> u32 {
    let mut buf = [0u8; 4];
    for (dst, src) in buf.iter_mut().zip(bytes) {
        *dst = *src;
    }
    u32::from_le_bytes(buf)
}

/// Little-endian `u64` from an 8-byte slice (missing bytes read as zero; callers pass 8).
pub(crate) fn le_u64(bytes: &[u8]) -> u64 {
    let mut buf = [0u8; 8];
    for (dst, src) in buf.iter_mut().zip(bytes) {
        *dst = *src;
    }
    u64::from_le_bytes(buf)
}

/// Encodes the entries of one block; reused from block to block.
#[derive(Debug, Default)]
pub(crate) struct BlockEncoder {
    buf: Vec<u8>,
    missing_run: u64,
    prev_end: u64,
    prev_source: Option<u32>,
    prev_owned_end: u64,
}

impl BlockEncoder {
    /// Appends one entry. The caller has checked that its end fits in a `u64`.
    pub(crate) fn push(&mut self, entry: ChunkEntry) {
        match entry {
            ChunkEntry::Missing => self.missing_run += 1,
            ChunkEntry::Source { source, offset, length } => {
                self.flush_missing();
                let same = self.prev_source == Some(source);
                self.buf.push(KIND_SOURCE | if same { SAME_SOURCE } else { 0 });
                if !same {
                    put_varint(&mut self.buf, u64::from(source));
                }
                put_varint(&mut self.buf, delta_code(self.prev_end, offset));
                put_varint(&mut self.buf, length);
                self.prev_end = offset.wrapping_add(length);
                self.prev_source = Some(source);
            }
            ChunkEntry::Owned { offset, length } => {
                self.flush_missing();
                self.buf.push(KIND_OWNED);
                put_varint(&mut self.buf, delta_code(self.prev_owned_end, offset));
                put_varint(&mut self.buf, length);
                self.prev_owned_end = offset.wrapping_add(length);
            }
        }
    }

    fn flush_missing(&mut self) {
        if self.missing_run > 0 {
            self.buf.push(KIND_MISSING);
            put_varint(&mut self.buf, self.missing_run - 1);
            self.missing_run = 0;
        }
    }

    /// Ends the block: flushes a pending missing run, appends the CRC-32 trailer and returns the
    /// block's bytes. Call [`Self::reset`] before pushing the next block's entries.
    pub(crate) fn finish_block(&mut self) -> &[u8] {
        self.flush_missing();
        let crc = crc32(&self.buf);
        self.buf.extend_from_slice(&crc.to_le_bytes());
        &self.buf
    }

    /// Clears the buffer and the delta state for a new block.
    pub(crate) fn reset(&mut self) {
        self.buf.clear();
        self.missing_run = 0;
        self.prev_end = 0;
        self.prev_source = None;
        self.prev_owned_end = 0;
    }
}

/// Decodes block `block` from its bytes (entries + CRC trailer); it must hold exactly `count`
/// entries (`count <= MAX_BLOCK_LEN`, checked by the caller).
pub(crate) fn decode_block_bytes(block: u64, bytes: &[u8], count: u64) -> Result<Vec<ChunkEntry>, ManifestError> {
    let body_len = bytes.len().saturating_sub(TRAILER_BYTES);
    let (body, trailer) = bytes.split_at(body_len);
    if trailer.len() != TRAILER_BYTES {
        return Err(ManifestError::Truncated {
            what: "manifest block",
            needed: BLOCK_TRAILER_LEN,
            available: bytes.len() as u64,
        });
    }
    let (stored, computed) = (le_u32(trailer), crc32(body));
    if stored != computed {
        return Err(ManifestError::ChecksumMismatch { what: format!("manifest block {block}"), stored, computed });
    }
    decode_entries(body, count).map_err(|(position, cause)| ManifestError::CorruptBlock { block, position, cause })
}

/// Decodes exactly `count` entries that must use up all of `body`.
fn decode_entries(body: &[u8], count: u64) -> Result<Vec<ChunkEntry>, (u64, DecodeError)> {
    let capacity = usize::try_from(count.min(u64::from(MAX_BLOCK_LEN))).unwrap_or(0);
    let mut out = Vec::with_capacity(capacity);
    let mut cursor = Cursor::new(body);
    let mut state = DecodeState::default();
    let mut decoded = 0u64;
    while decoded < count {
        let start = cursor.position();
        decoded += state.decode_one(&mut cursor, count - decoded, &mut out).map_err(|e| (start, e))?;
    }
    if cursor.remaining() > 0 {
        let count = cursor.remaining() as u64;
        return Err((cursor.position(), DecodeError::TrailingBytes { count }));
    }
    Ok(out)
}

/// Delta state of the block decoder, mirroring [`BlockEncoder`].
#[derive(Debug, Default)]
struct DecodeState {
    source_end: u64,
    source: Option<u32>,
    owned_end: u64,
}

impl DecodeState {
    /// Decodes one tagged item into `out`; returns how many entries it produced.
    fn decode_one(
        &mut self,
        cursor: &mut Cursor<'_>,
        remaining: u64,
        out: &mut Vec<ChunkEntry>,
    ) -> Result<u64, DecodeError> {
        let tag = cursor.read_u8()?;
        match (tag & 0x03, tag >> 2) {
            (KIND_MISSING, 0) => {
                let run = cursor.read_varint()?.saturating_add(1);
                if run > remaining {
                    return Err(DecodeError::RunTooLong { run, remaining });
                }
                // run <= remaining <= MAX_BLOCK_LEN, so it fits in usize.
                let run_usize = usize::try_from(run).map_err(|_| DecodeError::RunTooLong { run, remaining })?;
                out.extend(std::iter::repeat_n(ChunkEntry::Missing, run_usize));
                Ok(run)
            }
            (KIND_SOURCE, flags @ (0 | 1)) => {
                let source = match (flags, self.source) {
                    (1, Some(prev)) => prev,
                    (1, None) => return Err(DecodeError::NoPreviousSource),
                    _ => {
                        let id = cursor.read_varint()?;
                        u32::try_from(id).map_err(|_| DecodeError::SourceIdTooLarge { id })?
                    }
                };
                let (offset, length) = read_range(cursor, self.source_end)?;
                self.source_end = offset.wrapping_add(length);
                self.source = Some(source);
                out.push(ChunkEntry::Source { source, offset, length });
                Ok(1)
            }
            (KIND_OWNED, 0) => {
                let (offset, length) = read_range(cursor, self.owned_end)?;
                self.owned_end = offset.wrapping_add(length);
                out.push(ChunkEntry::Owned { offset, length });
                Ok(1)
            }
            _ => Err(DecodeError::BadTag { tag }),
        }
    }
}

/// Reads `zigzag(offset - prev_end)` and `length`; checks that the range end fits in a `u64`.
fn read_range(cursor: &mut Cursor<'_>, prev_end: u64) -> Result<(u64, u64), DecodeError> {
    let offset = apply_delta(prev_end, cursor.read_varint()?);
    let length = cursor.read_varint()?;
    if offset.checked_add(length).is_none() {
        return Err(DecodeError::RangeOverflow { offset, length });
    }
    Ok((offset, length))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn header() -> ManifestHeader {
        ManifestHeader {
            format_version: 1,
            block_len: 4,
            num_chunks: 10,
            index_offset: 64 + 30,
            source_entries: 6,
            owned_entries: 2,
            source_bytes: 1234,
        }
    }

    fn encode_block(entries: &[ChunkEntry]) -> Vec<u8> {
        let mut enc = BlockEncoder::default();
        for &e in entries {
            enc.push(e);
        }
        enc.finish_block().to_vec()
    }

    #[test]
    fn header_layout_is_as_documented() {
        let bytes = header().to_bytes();
        assert_eq!(&bytes[0..8], b"VZMANIF\0");
        assert_eq!(bytes[8..12], [1, 0, 0, 0]);
        assert_eq!(bytes[12..16], [4, 0, 0, 0]);
        assert_eq!(bytes[16..24], [10, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(bytes[24..32], [94, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(bytes[32], 6);
        assert_eq!(bytes[40], 2);
        assert_eq!(bytes[48..50], [0xd2, 0x04]);
        assert_eq!(bytes[56..60], [0; 4]);
        assert_eq!(le_u32(&bytes[60..64]), crc32(&bytes[..60]));
        assert_eq!(ManifestHeader::parse(&bytes).ok(), Some(header()));
        assert_eq!(header().num_blocks(), 3);
        assert_eq!(header().index_range(), 94..94 + 32);
    }

    #[test]
    fn header_rejections() {
        let good = header().to_bytes();
        assert!(matches!(
            ManifestHeader::parse(&good[..63]),
            Err(ManifestError::Truncated { needed: 64, available: 63, .. })
        ));
        let mut bad = good;
        bad[0] = b'X';
        assert!(matches!(ManifestHeader::parse(&bad), Err(ManifestError::BadMagic { .. })));
        let h = ManifestHeader { format_version: 2, ..header() };
        assert!(matches!(
            ManifestHeader::parse(&h.to_bytes()),
            Err(ManifestError::UnsupportedVersion { version: 2, .. })
        ));
        let mut bad = good;
        bad[20] ^= 1;
        assert!(matches!(ManifestHeader::parse(&bad), Err(ManifestError::ChecksumMismatch { .. })));
        let cases = [
            ManifestHeader { block_len: 0, ..header() },
            ManifestHeader { block_len: MAX_BLOCK_LEN + 1, ..header() },
            ManifestHeader { source_entries: 9, ..header() },
            ManifestHeader { source_entries: 0, ..header() },
            ManifestHeader { index_offset: 64 + 17, ..header() },
            ManifestHeader { index_offset: 63, ..header() },
            ManifestHeader { index_offset: u64::MAX - 8, num_chunks: u64::MAX, ..header() },
            // A 100-byte file cannot hold 2^60 chunks' blocks.
            ManifestHeader { num_chunks: 1 << 60, ..header() },
        ];
        for h in cases {
            assert!(ManifestHeader::parse(&h.to_bytes()).is_err(), "{h:?}");
        }
    }

    #[test]
    fn num_blocks_handles_zero_block_len() {
        let h = ManifestHeader { block_len: 0, ..header() };
        assert_eq!(h.num_blocks(), 0);
        let h = ManifestHeader { num_chunks: u64::MAX, block_len: 1, ..header() };
        assert_eq!(h.index_range().end, u64::MAX);
    }

    #[test]
    fn block_bytes_match_the_design_note_example() {
        // The worked example of docs/design/001-manifest-format.md.
        let entries = [
            ChunkEntry::Source { source: 3, offset: 4096, length: 300 },
            ChunkEntry::Source { source: 3, offset: 4400, length: 200 },
            ChunkEntry::Missing,
            ChunkEntry::Missing,
            ChunkEntry::Owned { offset: 0, length: 16 },
            ChunkEntry::Source { source: 0, offset: 4000, length: 10 },
        ];
        let bytes = encode_block(&entries);
        let body: [u8; 20] = [
            0x01, 0x03, 0x80, 0x40, 0xac, 0x02, // source 3, zz(4096) = 8192, 300
            0x05, 0x08, 0xc8, 0x01, // same source, zz(4400 - 4396) = 8, 200
            0x00, 0x01, // missing run of 2
            0x02, 0x00, 0x10, // owned, zz(0), 16
            0x01, 0x00, 0xaf, 0x09, 0x0a, // source 0, zz(4000 - 4600) = 1199, 10
        ];
        assert_eq!(&bytes[..20], &body[..]);
        assert_eq!(bytes.len(), 24);
        assert_eq!(le_u32(&bytes[20..]), crc32(&body));
        assert_eq!(decode_block_bytes(0, &bytes, 6).ok(), Some(entries.to_vec()));
    }

    #[test]
    fn block_decoder_rejections() {
        let with_crc = |body: &[u8]| {
            let mut v = body.to_vec();
            v.extend_from_slice(&crc32(body).to_le_bytes());
            v
        };
        let cause = |body: &[u8], count| match decode_block_bytes(7, &with_crc(body), count) {
            Err(ManifestError::CorruptBlock { block: 7, cause, .. }) => Some(cause),
            _ => None,
        };
        assert_eq!(cause(&[0x03], 1), Some(DecodeError::BadTag { tag: 3 }));
        assert_eq!(cause(&[0x08, 0x00], 1), Some(DecodeError::BadTag { tag: 8 }));
        assert_eq!(cause(&[0x06, 0, 1], 1), Some(DecodeError::BadTag { tag: 6 }));
        assert_eq!(cause(&[0x05, 0, 1], 1), Some(DecodeError::NoPreviousSource));
        assert_eq!(cause(&[0x00, 0x02], 2), Some(DecodeError::RunTooLong { run: 3, remaining: 2 }));
        assert_eq!(cause(&[0x00, 0x00, 0x00], 1), Some(DecodeError::TrailingBytes { count: 1 }));
        assert_eq!(cause(&[0x01, 0x00], 1), Some(DecodeError::UnexpectedEnd));
        let mut big_id = vec![0x01];
        put_varint(&mut big_id, 1 << 32);
        big_id.extend_from_slice(&[0, 0]);
        assert_eq!(cause(&big_id, 1), Some(DecodeError::SourceIdTooLarge { id: 1 << 32 }));
        // offset u64::MAX (zz(-1) = 1 from prev_end 0), length 2: end overflows.
        assert_eq!(cause(&[0x02, 0x01, 0x02], 1), Some(DecodeError::RangeOverflow { offset: u64::MAX, length: 2 }));
        let mut bad_crc = with_crc(&[0x00, 0x00]);
        bad_crc[0] = 0x01;
        assert!(matches!(decode_block_bytes(0, &bad_crc, 1), Err(ManifestError::ChecksumMismatch { .. })));
        assert!(matches!(decode_block_bytes(0, &[0, 0, 0], 1), Err(ManifestError::Truncated { .. })));
    }

    fn arb_entry() -> impl Strategy<Value = ChunkEntry> {
        let offset = prop_oneof![0..1u64 << 40, any::<u64>(), (u64::MAX - 1000)..=u64::MAX];
        prop_oneof![
            Just(ChunkEntry::Missing),
            (0..4u32, offset.clone(), 0..100_000u64).prop_map(|(source, offset, length)| {
                let length = length.min(u64::MAX - offset);
                ChunkEntry::Source { source, offset, length }
            }),
            (offset, any::<u64>())
                .prop_map(|(offset, length)| ChunkEntry::Owned { offset, length: length.min(u64::MAX - offset) }),
        ]
    }

    proptest! {
        #[test]
        fn header_round_trip(
            block_len in 1..=MAX_BLOCK_LEN,
            num_chunks in 0..1u64 << 40,
            extra in 0..1000u64,
            split in any::<(u64, u64)>(),
        ) {
            let blocks = num_chunks.div_ceil(u64::from(block_len));
            let source_entries = split.0 % (num_chunks + 1);
            let h = ManifestHeader {
                format_version: 1,
                block_len,
                num_chunks,
                index_offset: 64 + blocks * MIN_BLOCK_BYTES + extra.min(num_chunks * 20),
                source_entries,
                owned_entries: split.1 % (num_chunks - source_entries + 1),
                source_bytes: if source_entries == 0 { 0 } else { split.1 },
            };
            prop_assert_eq!(ManifestHeader::parse(&h.to_bytes()).ok(), Some(h));
        }

        #[test]
        fn block_round_trip(entries in proptest::collection::vec(arb_entry(), 1..200)) {
            let bytes = encode_block(&entries);
            let count = entries.len() as u64;
            prop_assert!(bytes.len() as u64 <= count * MAX_ENTRY_BYTES + BLOCK_TRAILER_LEN);
            prop_assert!(bytes.len() as u64 >= MIN_BLOCK_BYTES);
            prop_assert_eq!(decode_block_bytes(0, &bytes, count).ok(), Some(entries.clone()));
            // Asking for a different count fails instead of guessing.
            prop_assert!(decode_block_bytes(0, &bytes, count + 1).is_err());
            prop_assert!(decode_block_bytes(0, &bytes, count - 1).is_err());
        }

        #[test]
        fn block_decoder_survives_any_body(
            body in proptest::collection::vec(any::<u8>(), 0..64),
            count in 1..50u64,
        ) {
            let mut bytes = body.clone();
            bytes.extend_from_slice(&crc32(&body).to_le_bytes());
            if let Ok(entries) = decode_block_bytes(0, &bytes, count) {
                prop_assert_eq!(entries.len() as u64, count);
            }
        }
    }
}
