//! `sources.bin`: the store's table of source files, each location stored once.
//!
//! Stage: built by `scan`/`combine` (one [`SourceFile`] per input file, its index is the `source`
//! of [`super::ChunkEntry::Source`]), written by `store`, read by `read`, which checks each
//! file's size, ETag and mtime before trusting the byte ranges ([`SourceFile::changed_since`]). Follows
//! `docs/design/001-manifest-format.md`, section "sources.bin".
//!
//! Locations are front-coded: archives list thousands of files under one directory or bucket
//! prefix, so each location stores only what differs from the previous one.

use super::varint::{put_varint, zigzag, Cursor};
use super::{crc32, DecodeError, ManifestError, SOURCES_FORMAT_VERSION};

/// Longest prefix, in bytes, that an entry shares with the previous location (longer common
/// prefixes are cut here by the encoder). It bounds what a decoder allocates: a location is at
/// most this many bytes plus suffix bytes actually present in the input, so a hostile table
/// cannot claim gigabytes of repeated prefixes.
pub(crate) const MAX_SHARED_PREFIX: usize = 1024;

/// Magic bytes at the start of `sources.bin`.
const SOURCES_MAGIC: [u8; 8] = *b"VZSOURC\0";
/// Magic, version and count.
const HEADER_LEN: usize = 20;
/// CRC-32 of everything before it.
const TRAILER_LEN: usize = 4;
/// Fewest bytes an entry takes: prefix length, suffix length, size, flags.
const MIN_ENTRY_BYTES: usize = 4;
/// Flags bit 0: an mtime follows.
const FLAG_MTIME: u8 = 0x01;
/// Flags bit 1 (format version 2 only): an ETag follows (after the mtime, when both are present).
const FLAG_ETAG: u8 = 0x02;
/// The format version of tables without any ETag: what vzarr wrote before ETags were recorded.
const VERSION_WITHOUT_ETAGS: u32 = 1;

/// A source file and the fingerprint checked at read time.
///
/// Build one with [`SourceFile::new`] (and [`SourceFile::with_etag`]) or with `..Default::default()`,
/// so that code keeps compiling when the fingerprint gains a field.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SourceFile {
    /// Path or URL of the file, as the reader will open it.
    pub location: String,
    /// Size of the file in bytes when it was scanned.
    pub size: u64,
    /// Modification time in nanoseconds since the Unix epoch (negative before 1970), if known.
    pub mtime_ns: Option<i64>,
    /// The ETag the server gave for a remote object (quotes and a `W/` prefix kept as sent), if any.
    /// Local files have none.
    pub etag: Option<String>,
}

impl SourceFile {
    /// A fingerprint without an ETag.
    #[must_use]
    pub fn new(location: impl Into<String>, size: u64, mtime_ns: Option<i64>) -> Self {
        SourceFile { location: location.into(), size, mtime_ns, etag: None }
    }

    /// The same fingerprint with `etag` (`None` leaves it unknown).
    #[must_use]
    pub fn with_etag(mut self, etag: Option<String>) -> Self {
        self.etag = etag;
        self
    }

    /// Why the file whose fingerprint is now `now` is not the one fingerprinted as `self` (one short
    /// phrase), or `None` when nothing known differs.
    ///
    /// Compared in this order: the size; the ETag when both are known (a strong ETag names the
    /// object's exact bytes, so an equal strong ETag settles it: the object is unchanged even if
    /// its last-modified time moved, as after a metadata-only copy); then the modification time when
    /// both are known.
    #[must_use]
    pub fn changed_since(&self, now: &SourceFile) -> Option<String> {
        if self.size != now.size {
            return Some(format!("size was {} bytes, is {}", self.size, now.size));
        }
        if let (Some(then), Some(etag)) = (&self.etag, &now.etag) {
            if then != etag {
                return Some(format!("ETag was {then}, is {etag}"));
            }
            if !then.starts_with("W/") {
                return None;
            }
        }
        match (self.mtime_ns, now.mtime_ns) {
            (Some(then), Some(mtime)) if then != mtime => {
                Some(format!("modification time was {}, is {}", format_ns(then), format_ns(mtime)))
            }
            _ => None,
        }
    }
}

/// A time in nanoseconds since the Unix epoch as UTC text (`2024-05-01T10:20:30.5Z`), the
/// proleptic Gregorian calendar (Hinnant's `civil_from_days`).
fn format_ns(ns: i64) -> String {
    let (secs, nanos) = (ns.div_euclid(1_000_000_000), ns.rem_euclid(1_000_000_000));
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let (h, m, s) = (rem / 3600, rem % 3600 / 60, rem % 60);
    let fraction = if nanos == 0 { String::new() } else { format!(".{nanos:09}").trim_end_matches('0').to_string() };
    format!("{year:04}-{month:02}-{day:02}T{h:02}:{m:02}:{s:02}{fraction}Z")
}

/// All sources of a store, in source id order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SourceTable {
    files: Vec<SourceFile>,
}

impl SourceTable {
    /// An empty table.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends a file and returns its source id (the number of files before it).
    ///
    /// A table holds at most `u32::MAX` files (ids `0..u32::MAX`); that would take hundreds of
    /// gigabytes of memory, so in practice `push` always succeeds. Past the limit the file is
    /// not added and `u32::MAX` is returned, an id that [`Self::get`] never resolves, so a
    /// reference to it fails loudly at read time. Use [`Self::try_push`] to get an error instead.
    pub fn push(&mut self, file: SourceFile) -> u32 {
        self.try_push(file).unwrap_or(u32::MAX)
    }

    /// Appends a file and returns its source id, or an error once the table is full.
    ///
    /// # Errors
    /// `ManifestError::TooManySources` once the table holds `u32::MAX` files.
    pub fn try_push(&mut self, file: SourceFile) -> Result<u32, ManifestError> {
        let id = u32::try_from(self.files.len())
            .ok()
            .filter(|&id| id < u32::MAX)
            .ok_or(ManifestError::TooManySources { max: u64::from(u32::MAX) })?;
        self.files.push(file);
        Ok(id)
    }

    /// Replaces file `id` (nothing happens for an id not in the table).
    #[cfg_attr(not(feature = "icechunk"), allow(dead_code))]
    pub(crate) fn replace(&mut self, id: u32, file: SourceFile) {
        if let Some(slot) = usize::try_from(id).ok().and_then(|i| self.files.get_mut(i)) {
            *slot = file;
        }
    }

    /// Number of files.
    #[must_use]
    pub fn len(&self) -> usize {
        self.files.len()
    }

    /// Whether the table has no files.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// The file with source id `id`.
    #[must_use]
    pub fn get(&self, id: u32) -> Option<&SourceFile> {
        self.files.get(usize::try_from(id).ok()?)
    }

    /// The files in source id order.
    pub fn iter(&self) -> impl Iterator<Item = &SourceFile> {
        self.files.iter()
    }

    /// Encodes the table as `sources.bin`: format version `SOURCES_FORMAT_VERSION` when a file
    /// has an ETag, else version 1 (byte for byte what vzarr wrote before ETags, readable by it).
    #[must_use]
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER_LEN + TRAILER_LEN + 32 * self.files.len());
        let etags = self.files.iter().any(|f| f.etag.is_some());
        let version = if etags { SOURCES_FORMAT_VERSION } else { VERSION_WITHOUT_ETAGS };
        out.extend_from_slice(&SOURCES_MAGIC);
        out.extend_from_slice(&version.to_le_bytes());
        out.extend_from_slice(&(self.files.len() as u64).to_le_bytes());
        let mut prev = "";
        for file in &self.files {
            let loc = file.location.as_str();
            let shared = shared_prefix(prev, loc);
            put_varint(&mut out, shared as u64);
            put_varint(&mut out, (loc.len() - shared) as u64);
            out.extend_from_slice(&loc.as_bytes()[shared..]);
            put_varint(&mut out, file.size);
            let flags =
                if file.mtime_ns.is_some() { FLAG_MTIME } else { 0 } | if file.etag.is_some() { FLAG_ETAG } else { 0 };
            out.push(flags);
            if let Some(mtime) = file.mtime_ns {
                put_varint(&mut out, zigzag(mtime));
            }
            if let Some(etag) = &file.etag {
                put_varint(&mut out, etag.len() as u64);
                out.extend_from_slice(etag.as_bytes());
            }
            prev = loc;
        }
        let crc = crc32(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }

    /// Decodes `sources.bin`. Never panics; validates UTF-8, lengths and the checksum.
    ///
    /// # Errors
    /// `ManifestError::Truncated`, `ManifestError::BadMagic`,
    /// `ManifestError::UnsupportedVersion`, `ManifestError::ChecksumMismatch`,
    /// `ManifestError::TooManySources` for a count above `u32::MAX`, and
    /// `ManifestError::CorruptSourceTable` for an entry that cannot be decoded (bad lengths,
    /// invalid UTF-8, unknown flags, trailing bytes).
    pub fn decode(bytes: &[u8]) -> Result<Self, ManifestError> {
        let (version, count, body) = split_checked(bytes)?;
        // Every entry takes at least MIN_ENTRY_BYTES, so this bounds the allocation below.
        let most = (body.len() / MIN_ENTRY_BYTES) as u64;
        if count > most {
            return Err(ManifestError::Truncated {
                what: "source table entries",
                needed: count.saturating_mul(MIN_ENTRY_BYTES as u64),
                available: body.len() as u64,
            });
        }
        let mut files = Vec::with_capacity(usize::try_from(count).unwrap_or(0));
        let mut cursor = Cursor::new(body);
        let mut prev = String::new();
        for entry in 0..count {
            let corrupt = |cursor: &Cursor<'_>, cause| ManifestError::CorruptSourceTable {
                entry,
                position: HEADER_LEN as u64 + cursor.position(),
                cause,
            };
            let file = decode_file(&mut cursor, &prev, version).map_err(|e| corrupt(&cursor, e))?;
            prev.clone_from(&file.location);
            files.push(file);
        }
        if cursor.remaining() > 0 {
            let cause = DecodeError::TrailingBytes { count: cursor.remaining() as u64 };
            return Err(ManifestError::CorruptSourceTable {
                entry: count,
                position: HEADER_LEN as u64 + cursor.position(),
                cause,
            });
        }
        Ok(Self { files })
    }
}

/// Length in bytes of the longest common prefix of `prev` and `loc`, at most
/// [`MAX_SHARED_PREFIX`], that ends on a character boundary of `loc` (so the stored suffix is
/// valid UTF-8 on its own).
fn shared_prefix(prev: &str, loc: &str) -> usize {
    let mut shared = prev.bytes().zip(loc.bytes()).take(MAX_SHARED_PREFIX).take_while(|(a, b)| a == b).count();
    while !loc.is_char_boundary(shared) {
        shared -= 1;
    }
    shared
}

/// Checks magic, version, checksum and count; returns the version, the count and the entry bytes.
fn split_checked(bytes: &[u8]) -> Result<(u32, u64, &[u8]), ManifestError> {
    if bytes.len() < HEADER_LEN + TRAILER_LEN {
        return Err(ManifestError::Truncated {
            what: "source table",
            needed: (HEADER_LEN + TRAILER_LEN) as u64,
            available: bytes.len() as u64,
        });
    }
    let (head, rest) = bytes.split_at(HEADER_LEN);
    let (body, trailer) = rest.split_at(rest.len() - TRAILER_LEN);
    if head[..8] != SOURCES_MAGIC {
        return Err(ManifestError::BadMagic { file: "source table", found: head[..8].to_vec() });
    }
    let version = u32::from_le_bytes([head[8], head[9], head[10], head[11]]);
    if !(VERSION_WITHOUT_ETAGS..=SOURCES_FORMAT_VERSION).contains(&version) {
        return Err(ManifestError::UnsupportedVersion {
            file: "source table",
            version,
            supported: SOURCES_FORMAT_VERSION,
        });
    }
    let stored = u32::from_le_bytes([trailer[0], trailer[1], trailer[2], trailer[3]]);
    let computed = crc32(&bytes[..bytes.len() - TRAILER_LEN]);
    if stored != computed {
        return Err(ManifestError::ChecksumMismatch { what: "source table".to_owned(), stored, computed });
    }
    let mut count = [0u8; 8];
    count.copy_from_slice(&head[12..20]);
    let count = u64::from_le_bytes(count);
    if count > u64::from(u32::MAX) {
        return Err(ManifestError::TooManySources { max: u64::from(u32::MAX) });
    }
    Ok((version, count, body))
}

/// Decodes one entry given the previous entry's location (ETags only in format version 2).
fn decode_file(cursor: &mut Cursor<'_>, prev: &str, version: u32) -> Result<SourceFile, DecodeError> {
    let shared = cursor.read_varint()?;
    let limit = prev.len().min(MAX_SHARED_PREFIX) as u64;
    if shared > limit {
        return Err(DecodeError::BadSharedPrefix { len: shared, limit });
    }
    let suffix_len = cursor.read_varint()?;
    // Bounded by the input: read_bytes fails if fewer bytes remain.
    let suffix = cursor.read_bytes(suffix_len)?;
    let prefix = usize::try_from(shared).ok().and_then(|n| prev.as_bytes().get(..n)).unwrap_or_default();
    let mut location = prefix.to_vec();
    location.extend_from_slice(suffix);
    let location = String::from_utf8(location).map_err(|_| DecodeError::InvalidUtf8)?;
    let size = cursor.read_varint()?;
    let flags = cursor.read_u8()?;
    let known = if version >= 2 { FLAG_MTIME | FLAG_ETAG } else { FLAG_MTIME };
    if flags & !known != 0 {
        return Err(DecodeError::BadTag { tag: flags });
    }
    let mtime_ns = if flags & FLAG_MTIME != 0 { Some(cursor.read_zigzag()?) } else { None };
    let etag = if flags & FLAG_ETAG != 0 {
        let len = cursor.read_varint()?;
        // Bounded by the input: read_bytes fails if fewer bytes remain.
        let bytes = cursor.read_bytes(len)?;
        Some(String::from_utf8(bytes.to_vec()).map_err(|_| DecodeError::InvalidUtf8)?)
    } else {
        None
    };
    Ok(SourceFile { location, size, mtime_ns, etag })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn file(location: &str, size: u64, mtime_ns: Option<i64>) -> SourceFile {
        SourceFile::new(location, size, mtime_ns)
    }

    fn table(files: &[SourceFile]) -> SourceTable {
        let mut t = SourceTable::new();
        for (i, f) in files.iter().enumerate() {
            assert_eq!(t.push(f.clone()) as usize, i);
        }
        t
    }

    #[test]
    fn layout_matches_the_design_note() {
        let t = table(&[file("/d/a.nc", 300, None), file("/d/b.nc", 5, Some(-1))]);
        let bytes = t.encode();
        let mut expected = b"VZSOURC\0\x01\0\0\0\x02\0\0\0\0\0\0\0".to_vec();
        expected.extend_from_slice(&[0, 7]);
        expected.extend_from_slice(b"/d/a.nc");
        expected.extend_from_slice(&[0xac, 0x02, 0x00]); // size 300, no mtime
        expected.extend_from_slice(&[3, 4]);
        expected.extend_from_slice(b"b.nc");
        expected.extend_from_slice(&[5, 0x01, 0x01]); // size 5, mtime zigzag(-1) = 1
        let crc = crc32(&expected);
        expected.extend_from_slice(&crc.to_le_bytes());
        assert_eq!(bytes, expected);
        assert_eq!(SourceTable::decode(&bytes).unwrap(), t);
    }

    #[test]
    fn etags_make_a_version_2_table() {
        let t =
            table(&[file("s3://b/a.nc", 300, Some(-1)).with_etag(Some("\"e1\"".into())), file("s3://b/c.nc", 5, None)]);
        let bytes = t.encode();
        let mut expected = b"VZSOURC\0\x02\0\0\0\x02\0\0\0\0\0\0\0".to_vec();
        expected.extend_from_slice(&[0, 11]);
        expected.extend_from_slice(b"s3://b/a.nc");
        // size 300, flags mtime + ETag, mtime zigzag(-1) = 1, ETag of 4 bytes.
        expected.extend_from_slice(&[0xac, 0x02, 0x03, 0x01, 0x04]);
        expected.extend_from_slice(b"\"e1\"");
        expected.extend_from_slice(&[7, 4]);
        expected.extend_from_slice(b"c.nc");
        expected.extend_from_slice(&[5, 0x00]);
        let crc = crc32(&expected);
        expected.extend_from_slice(&crc.to_le_bytes());
        assert_eq!(bytes, expected);
        assert_eq!(SourceTable::decode(&bytes).unwrap(), t);
        // An ETag-only entry (no mtime).
        let t = table(&[file("https://h/x.nc", 1, None).with_etag(Some(String::new()))]);
        assert_eq!(SourceTable::decode(&t.encode()).unwrap(), t);
    }

    #[test]
    fn version_1_tables_still_read_and_reject_etags() {
        // A table as vzarr wrote it before ETags (the bytes of the design note's example).
        let mut old = b"VZSOURC\0\x01\0\0\0\x02\0\0\0\0\0\0\0".to_vec();
        old.extend_from_slice(&[0, 7]);
        old.extend_from_slice(b"/d/a.nc");
        old.extend_from_slice(&[0xac, 0x02, 0x00, 3, 4]);
        old.extend_from_slice(b"b.nc");
        old.extend_from_slice(&[5, 0x01, 0x01]);
        let crc = crc32(&old);
        old.extend_from_slice(&crc.to_le_bytes());
        let t = SourceTable::decode(&old).unwrap();
        assert_eq!(t, table(&[file("/d/a.nc", 300, None), file("/d/b.nc", 5, Some(-1))]));
        assert!(t.iter().all(|f| f.etag.is_none()));
        // Without ETags the writer keeps writing version 1, byte for byte.
        assert_eq!(t.encode(), old);
        // The ETag flag is reserved in version 1.
        let with_etag = table(&[file("/a", 1, None).with_etag(Some("x".into()))]).encode();
        let mut v1 = with_etag.clone();
        v1[8] = 1;
        let n = v1.len() - 4;
        let crc = crc32(&v1[..n]);
        v1[n..].copy_from_slice(&crc.to_le_bytes());
        assert!(matches!(
            SourceTable::decode(&v1),
            Err(ManifestError::CorruptSourceTable { cause: DecodeError::BadTag { tag: 2 }, .. })
        ));
        assert!(SourceTable::decode(&with_etag).is_ok());
    }

    #[test]
    fn changes_are_named() {
        let etag = |e: &str| Some(format!("\"{e}\""));
        let then = file("s3://b/a.nc", 10, Some(1_700_000_000_000_000_000)).with_etag(etag("a"));
        assert_eq!(then.changed_since(&then), None);
        let bigger = SourceFile { size: 11, ..then.clone() };
        assert_eq!(then.changed_since(&bigger).unwrap(), "size was 10 bytes, is 11");
        let replaced = then.clone().with_etag(etag("b"));
        assert_eq!(then.changed_since(&replaced).unwrap(), "ETag was \"a\", is \"b\"");
        // An equal strong ETag settles it; a weak one leaves the mtime to compare.
        let touched = SourceFile { mtime_ns: Some(1_700_000_001_500_000_000), ..then.clone() };
        assert_eq!(then.changed_since(&touched), None);
        let weak = then.clone().with_etag(Some("W/\"a\"".into()));
        let weak_touched = touched.clone().with_etag(Some("W/\"a\"".into()));
        assert_eq!(
            weak.changed_since(&weak_touched).unwrap(),
            "modification time was 2023-11-14T22:13:20Z, is 2023-11-14T22:13:21.5Z"
        );
        // Without an ETag on either side the mtime decides; unknown values are not compared.
        let local = file("/d/a.nc", 10, Some(0));
        assert!(local
            .changed_since(&file("/d/a.nc", 10, Some(-1)))
            .unwrap()
            .contains("1969-12-31T23:59:59.999999999Z"));
        assert_eq!(local.changed_since(&file("/d/a.nc", 10, None)), None);
        assert!(then.changed_since(&touched.clone().with_etag(None)).unwrap().starts_with("modification"));
    }

    #[test]
    fn accessors() {
        let t = table(&[file("x", 1, None), file("y", 2, Some(3))]);
        assert_eq!(t.len(), 2);
        assert!(!t.is_empty());
        assert_eq!(t.get(1).map(|f| f.size), Some(2));
        assert_eq!(t.get(2), None);
        assert_eq!(t.get(u32::MAX), None);
        let names: Vec<_> = t.iter().map(|f| f.location.as_str()).collect();
        assert_eq!(names, ["x", "y"]);
        assert!(SourceTable::new().is_empty());
    }

    #[test]
    fn unicode_prefixes_split_on_char_boundaries() {
        // "é" is 0xc3 0xa9 and "è" 0xc3 0xa8: the byte-wise common prefix ends inside a char.
        let t = table(&[
            file("s3://bucket/données/é.nc", 1, Some(i64::MIN)),
            file("s3://bucket/données/è.nc", 2, Some(i64::MAX)),
            file("s3://bucket/数据/日本.nc", 3, None),
            file("", 0, Some(0)),
            file("s3://bucket/数据/日本.nc", 4, None),
        ]);
        assert_eq!(shared_prefix("é", "è"), 0);
        assert_eq!(SourceTable::decode(&t.encode()).unwrap(), t);
    }

    #[test]
    fn long_shared_prefixes_are_cut_at_the_limit() {
        let dir = "d".repeat(3000);
        let t = table(&[file(&format!("{dir}/a.nc"), 1, None), file(&format!("{dir}/b.nc"), 2, None)]);
        let bytes = t.encode();
        // Second entry: shared = 1024 (varint 80 08), then the remaining 1981 bytes.
        let second = 20 + 1 + 2 + 3005 + 2;
        assert_eq!(&bytes[second..second + 4], &[0x80, 0x08, 0xbd, 0x0f]);
        assert_eq!(bytes.len(), second + 4 + 1981 + 2 + 4);
        assert_eq!(SourceTable::decode(&bytes).unwrap(), t);
        let mut t2 = SourceTable::new();
        assert_eq!(t2.try_push(file("x", 0, None)).unwrap(), 0);
        assert_eq!(t2.try_push(file("y", 0, None)).unwrap(), 1);
    }

    #[test]
    fn decode_rejections() {
        let good = table(&[file("/a/b", 1, None), file("/a/c", 2, Some(5))]).encode();
        let resealed = |mut bytes: Vec<u8>| {
            let n = bytes.len() - 4;
            let crc = crc32(&bytes[..n]);
            bytes[n..].copy_from_slice(&crc.to_le_bytes());
            bytes
        };
        assert!(matches!(SourceTable::decode(&good[..23]), Err(ManifestError::Truncated { .. })));
        let mut b = good.clone();
        b[0] = b'X';
        assert!(matches!(SourceTable::decode(&b), Err(ManifestError::BadMagic { .. })));
        let mut b = good.clone();
        b[8] = 3;
        assert!(matches!(SourceTable::decode(&b), Err(ManifestError::UnsupportedVersion { version: 3, .. })));
        let mut b = good.clone();
        b[21] ^= 0x40;
        assert!(matches!(SourceTable::decode(&b), Err(ManifestError::ChecksumMismatch { .. })));
        // Count 2^40: rejected before any allocation.
        let mut b = good.clone();
        b[17] = 1;
        assert!(matches!(SourceTable::decode(&resealed(b)), Err(ManifestError::TooManySources { .. })));
        let mut b = good.clone();
        b[12] = 200;
        assert!(matches!(SourceTable::decode(&resealed(b)), Err(ManifestError::Truncated { .. })));
        let mut b = good.clone();
        b[12] = 1;
        assert!(matches!(
            SourceTable::decode(&resealed(b)),
            Err(ManifestError::CorruptSourceTable { entry: 1, cause: DecodeError::TrailingBytes { .. }, .. })
        ));
        // First entry claims a shared prefix with a (non-existent) previous location.
        let mut b = good.clone();
        b[20] = 1;
        assert!(matches!(
            SourceTable::decode(&resealed(b)),
            Err(ManifestError::CorruptSourceTable {
                entry: 0,
                cause: DecodeError::BadSharedPrefix { len: 1, limit: 0 },
                ..
            })
        ));
        // Invalid UTF-8 in the first location.
        let mut b = good.clone();
        b[22] = 0xff;
        assert!(matches!(
            SourceTable::decode(&resealed(b)),
            Err(ManifestError::CorruptSourceTable { cause: DecodeError::InvalidUtf8, .. })
        ));
        // Unknown flag bits on the first entry (offset 20 + 2 + 4 + 1 = 27).
        let mut b = good;
        b[27] = 0x02;
        assert!(matches!(
            SourceTable::decode(&resealed(b)),
            Err(ManifestError::CorruptSourceTable { cause: DecodeError::BadTag { tag: 2 }, .. })
        ));
    }

    fn arb_file() -> impl Strategy<Value = SourceFile> {
        let location = prop_oneof!["(/data/archive/(era5|gridmet)/[0-9]{4}/)?[a-zé日_]{0,12}\\.nc", "\\PC{0,30}",];
        let etag = proptest::option::of(prop_oneof!["\"[0-9a-f]{32}\"", "W/\"\\PC{0,20}\""]);
        (location, any::<u64>(), proptest::option::of(any::<i64>()), etag)
            .prop_map(|(location, size, mtime_ns, etag)| SourceFile { location, size, mtime_ns, etag })
    }

    proptest! {
        #[test]
        fn round_trip(files in proptest::collection::vec(arb_file(), 0..40)) {
            let t = table(&files);
            let bytes = t.encode();
            prop_assert_eq!(SourceTable::decode(&bytes).unwrap(), t);
        }

        #[test]
        fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..100)) {
            prop_assert!(SourceTable::decode(&bytes).is_err());
            // Past the magic and version, and with a valid checksum, reaching the entry decoder.
            let mut b = b"VZSOURC\0\x01\0\0\0".to_vec();
            b.extend_from_slice(&bytes);
            let crc = crc32(&b);
            b.extend_from_slice(&crc.to_le_bytes());
            if let Ok(t) = SourceTable::decode(&b) {
                prop_assert_eq!(SourceTable::decode(&t.encode()).unwrap(), t);
            }
        }

        #[test]
        fn truncations_and_flips_are_errors(
            files in proptest::collection::vec(arb_file(), 1..10),
            at in any::<prop::sample::Index>(),
            bit in 0..8u8,
        ) {
            let bytes = table(&files).encode();
            let i = at.index(bytes.len());
            prop_assert!(SourceTable::decode(&bytes[..i]).is_err());
            let mut flipped = bytes.clone();
            flipped[i] ^= 1 << bit;
            prop_assert!(SourceTable::decode(&flipped).is_err());
        }
    }
}
