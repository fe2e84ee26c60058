//! [`ChunkTable`]: where every chunk of one array lives, held as compact columns.
//!
//! A table is one entry per chunk of the grid, in row-major (linear index) order, plus a blob of
//! store-owned bytes. Scans of 10^7 references hold every file's table at once (combine needs them
//! all), so the storage is what decides a scan's memory: **12 bytes a chunk** when every reference
//! of a run of chunks points into one source file (every table a scan makes), 16 when they point into
//! several, no heap object per reference, and pages of missing chunks left unwritten.
//!
//! Layout: a table is a list of [`Segment`]s, consecutive runs of its linear indices, so that
//! concatenating files along the leading axis ([`ChunkTable::concatenated`]) moves each file's
//! columns into the combined table instead of copying them. A segment's columns:
//!
//! - `offsets: u64`: the byte offset; its top bit marks a store-owned chunk (offset in `owned`);
//! - `lengths: u32`: `length + 2` of a chunk; `0` is a missing chunk (so zeroed, untouched pages are
//!   missing chunks) and `1` an entry kept in `exceptions`;
//! - `sources`: none yet, one id for every referenced chunk of the segment, or a `u32` per chunk;
//! - `exceptions`: the rare entries that do not fit the columns (a chunk of `2^32 - 2` bytes or
//!   more, a source offset with the top bit set), by index.

use std::collections::BTreeMap;

use super::owned_bytes::{OwnedBytes, OwnedBytesError};
use crate::manifest::ChunkEntry;

/// The top bit of a stored offset: the entry is store-owned.
const OWNED_BIT: u64 = 1 << 63;
/// Stored length of a missing chunk.
const LEN_MISSING: u32 = 0;
/// Stored length of an entry kept in the segment's exceptions.
const LEN_EXCEPTION: u32 = 1;
/// What is added to a length to store it (the values below are the tags above).
const LEN_BIAS: u64 = 2;

/// Where every chunk of one array lives: one [`ChunkEntry`] per chunk of the grid, in row-major
/// (linear index) order, and the bytes of its store-owned chunks. See the module docs for the
/// layout (12 or 16 bytes a chunk).
#[derive(Debug, Clone, Default)]
pub struct ChunkTable {
    /// Consecutive runs of the table, the first starting at 0.
    segments: Vec<Segment>,
    /// Bytes of [`ChunkEntry::Owned`] chunks, addressed by their offset and length (in memory or
    /// spilled: [`OwnedBytes`]).
    pub owned: OwnedBytes,
}

/// Source ids of a segment's referenced chunks.
#[derive(Debug, Clone, Default)]
enum Sources {
    /// No chunk of the segment has been set to a reference yet.
    #[default]
    None,
    /// Every referenced chunk of the segment points into this source.
    Uniform(u32),
    /// One id per chunk (meaningless for chunks that are not references).
    PerEntry(Vec<u32>),
}

/// A run of consecutive chunks of a table.
#[derive(Debug, Clone, Default)]
struct Segment {
    /// Linear index of the first chunk.
    start: u64,
    offsets: Vec<u64>,
    lengths: Vec<u32>,
    sources: Sources,
    exceptions: BTreeMap<u64, ChunkEntry>,
}

impl Segment {
    fn missing(start: u64, len: usize) -> Self {
        Segment { start, offsets: vec![0; len], lengths: vec![0; len], ..Segment::default() }
    }

    fn len(&self) -> usize {
        self.lengths.len()
    }

    fn get(&self, i: usize) -> ChunkEntry {
        let (stored, offset) = (self.lengths[i], self.offsets[i]);
        match stored {
            LEN_MISSING => ChunkEntry::Missing,
            LEN_EXCEPTION => self.exceptions.get(&(i as u64)).copied().unwrap_or(ChunkEntry::Missing),
            _ => {
                let length = u64::from(stored) - LEN_BIAS;
                if offset & OWNED_BIT != 0 {
                    return ChunkEntry::Owned { offset: offset & !OWNED_BIT, length };
                }
                let source = match &self.sources {
                    Sources::None => 0,
                    Sources::Uniform(s) => *s,
                    Sources::PerEntry(ids) => ids[i],
                };
                ChunkEntry::Source { source, offset, length }
            }
        }
    }

    fn set(&mut self, i: usize, entry: ChunkEntry) {
        if self.lengths[i] == LEN_EXCEPTION {
            self.exceptions.remove(&(i as u64));
        }
        let inline = |offset: u64, length: u64| {
            let stored = length.checked_add(LEN_BIAS).and_then(|l| u32::try_from(l).ok());
            stored.filter(|_| offset & OWNED_BIT == 0)
        };
        let (offset, stored) = match entry {
            ChunkEntry::Missing => (0, LEN_MISSING),
            ChunkEntry::Owned { offset, length } => match inline(offset, length) {
                Some(stored) => (offset | OWNED_BIT, stored),
                None => (0, LEN_EXCEPTION),
            },
            ChunkEntry::Source { source, offset, length } => match inline(offset, length) {
                Some(stored) => {
                    self.set_source(i, source);
                    (offset, stored)
                }
                None => (0, LEN_EXCEPTION),
            },
        };
        if stored == LEN_EXCEPTION {
            self.exceptions.insert(i as u64, entry);
        }
        self.offsets[i] = offset;
        self.lengths[i] = stored;
    }

    fn set_source(&mut self, i: usize, source: u32) {
        match &mut self.sources {
            Sources::None => self.sources = Sources::Uniform(source),
            Sources::Uniform(s) if *s == source => {}
            Sources::Uniform(s) => {
                let mut ids = vec![*s; self.lengths.len()];
                ids[i] = source;
                self.sources = Sources::PerEntry(ids);
            }
            Sources::PerEntry(ids) => ids[i] = source,
        }
    }

    fn push(&mut self, entry: ChunkEntry) {
        self.offsets.push(0);
        self.lengths.push(LEN_MISSING);
        if let Sources::PerEntry(ids) = &mut self.sources {
            ids.push(0);
        }
        self.set(self.len() - 1, entry);
    }

    /// Points every reference at `source`.
    fn rename_source(&mut self, source: u32) {
        if !matches!(self.sources, Sources::None) {
            self.sources = Sources::Uniform(source);
        }
        for entry in self.exceptions.values_mut() {
            if let ChunkEntry::Source { source: s, .. } = entry {
                *s = source;
            }
        }
    }

    /// Adds `base` to the source id of every reference.
    fn shift_sources(&mut self, base: u32) {
        match &mut self.sources {
            Sources::None => {}
            Sources::Uniform(s) => *s = s.saturating_add(base),
            Sources::PerEntry(ids) => ids.iter_mut().for_each(|s| *s = s.saturating_add(base)),
        }
        for entry in self.exceptions.values_mut() {
            if let ChunkEntry::Source { source: s, .. } = entry {
                *s = s.saturating_add(base);
            }
        }
    }

    /// Adds `shift` to the offset of every store-owned chunk.
    fn shift_owned(&mut self, shift: u64) {
        if shift == 0 {
            return;
        }
        for (offset, &stored) in self.offsets.iter_mut().zip(&self.lengths) {
            if stored > LEN_EXCEPTION && *offset & OWNED_BIT != 0 {
                // Owned offsets are offsets in the table's blob: they stay far below 2^63.
                *offset = ((*offset & !OWNED_BIT) + shift) | OWNED_BIT;
            }
        }
        for entry in self.exceptions.values_mut() {
            if let ChunkEntry::Owned { offset, .. } = entry {
                *offset += shift;
            }
        }
    }

    fn shrink_to_fit(&mut self) {
        self.offsets.shrink_to_fit();
        self.lengths.shrink_to_fit();
        if let Sources::PerEntry(ids) = &mut self.sources {
            ids.shrink_to_fit();
        }
    }
}

impl ChunkTable {
    /// A table of `num_chunks` missing chunks (zeroed pages: memory is taken as chunks are set).
    pub fn missing(num_chunks: usize) -> Self {
        ChunkTable { segments: vec![Segment::missing(0, num_chunks)], owned: OwnedBytes::new() }
    }

    /// This table with its store-owned bytes counted in `budget` (for a table holding none yet).
    pub fn owned_in(mut self, budget: &super::OwnedBytesBudget) -> Self {
        if self.owned.is_empty() {
            self.owned = OwnedBytes::with_budget(budget);
        }
        self
    }

    /// A table of `entries`, with `owned` as its store-owned bytes.
    pub fn from_entries(entries: impl IntoIterator<Item = ChunkEntry>, owned: OwnedBytes) -> Self {
        let mut table = ChunkTable::default();
        table.extend(entries);
        table.owned = owned;
        table.shrink_to_fit();
        table
    }

    /// Number of chunks.
    pub fn len(&self) -> usize {
        self.segments.last().map_or(0, |s| s.start as usize + s.len())
    }

    /// True for a table of no chunk.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The segment holding chunk `linear` and its index there.
    fn locate(&self, linear: usize) -> Option<(usize, usize)> {
        let k = match self.segments.len() {
            1 => 0,
            _ => self.segments.partition_point(|s| s.start as usize <= linear).checked_sub(1)?,
        };
        let segment = self.segments.get(k)?;
        let i = linear - segment.start as usize;
        (i < segment.len()).then_some((k, i))
    }

    /// The entry of chunk `linear`, or `None` past the end.
    pub fn get(&self, linear: usize) -> Option<ChunkEntry> {
        self.locate(linear).map(|(k, i)| self.segments[k].get(i))
    }

    /// The entry of chunk `linear`.
    ///
    /// # Panics
    /// When `linear` is past the end (as slice indexing does): callers index by the grid the table
    /// was made for.
    pub fn entry(&self, linear: usize) -> ChunkEntry {
        match self.get(linear) {
            Some(entry) => entry,
            None => panic!("chunk {linear} of a table of {}", self.len()),
        }
    }

    /// Sets the entry of chunk `linear`.
    ///
    /// # Panics
    /// When `linear` is past the end (as slice indexing does).
    pub fn set(&mut self, linear: usize, entry: ChunkEntry) {
        let len = self.len();
        let Some((k, i)) = self.locate(linear) else { panic!("chunk {linear} of a table of {len}") };
        self.segments[k].set(i, entry);
    }

    /// Appends the entry of the next chunk.
    pub fn push(&mut self, entry: ChunkEntry) {
        if self.segments.is_empty() {
            self.segments.push(Segment::default());
        }
        if let Some(last) = self.segments.last_mut() {
            last.push(entry);
        }
    }

    /// Every entry, in linear order.
    pub fn iter(&self) -> Entries<'_> {
        self.range(0..self.len())
    }

    /// The entries of chunks `range` (clamped to the table), in linear order.
    pub fn range(&self, range: std::ops::Range<usize>) -> Entries<'_> {
        let end = range.end.min(self.len());
        let start = range.start.min(end);
        let (segment, index) = self.locate(start).unwrap_or((self.segments.len(), 0));
        Entries { segments: &self.segments, segment, index, remaining: end - start }
    }

    /// Points every reference at source `source` (a single-file table joining a combined one).
    pub fn rename_source(&mut self, source: u32) {
        for segment in &mut self.segments {
            segment.rename_source(source);
        }
    }

    /// Adds `base` to every reference's source id: the table of a file whose sources (the file, then
    /// its external files) are ids `base..` of a combined source table.
    pub fn shift_sources(&mut self, base: u32) {
        for segment in &mut self.segments {
            segment.shift_sources(base);
        }
    }

    /// The tables one after the other (their linear indices shifted, their owned bytes appended),
    /// moving their columns and owned bytes (in memory or spilled) instead of copying them.
    pub fn concatenated(tables: impl IntoIterator<Item = ChunkTable>) -> ChunkTable {
        let mut out = ChunkTable::default();
        for table in tables {
            let (start, shift) = (out.len() as u64, out.owned.len());
            out.owned.append(table.owned);
            for mut segment in table.segments {
                if segment.len() == 0 {
                    continue;
                }
                segment.start += start;
                segment.shift_owned(shift);
                out.segments.push(segment);
            }
        }
        out
    }

    /// Appends store-owned chunk bytes and returns the entry that points at them.
    ///
    /// # Errors
    /// [`OwnedBytesError`] when the bytes must spill (the memory budget is spent) and the spill file
    /// cannot be created or written.
    pub fn push_owned(&mut self, bytes: &[u8]) -> Result<ChunkEntry, OwnedBytesError> {
        let offset = self.owned.push(bytes)?;
        Ok(ChunkEntry::Owned { offset, length: bytes.len() as u64 })
    }

    /// The bytes of a store-owned chunk (borrowed when they are in memory).
    ///
    /// # Errors
    /// [`OwnedBytesError::OutOfRange`] for a range outside the owned bytes, or an error reading the
    /// spill file.
    pub fn owned_chunk(&self, offset: u64, length: u64) -> Result<std::borrow::Cow<'_, [u8]>, OwnedBytesError> {
        self.owned.read(offset, length)
    }

    /// Keeps only the owned bytes that entries point at, in entry order (one copy per entry), and
    /// repoints the entries. Entries whose range lies outside the owned bytes are left as they are.
    /// A table whose entries already use every owned byte once, in order, is left untouched.
    ///
    /// # Errors
    /// [`OwnedBytesError`] reading or spilling bytes.
    pub fn compact_owned(&mut self) -> Result<(), OwnedBytesError> {
        if self.owned.is_empty() || self.owned_in_order() {
            return Ok(());
        }
        let empty = OwnedBytes::with_budget(self.owned.budget());
        let old = std::mem::replace(&mut self.owned, empty);
        for linear in 0..self.len() {
            let Some(ChunkEntry::Owned { offset, length }) = self.get(linear) else { continue };
            if offset.checked_add(length).is_some_and(|end| end <= old.len()) {
                let bytes = old.read(offset, length)?;
                let entry = self.push_owned(&bytes)?;
                self.set(linear, entry);
            }
        }
        self.owned.shrink_to_fit();
        Ok(())
    }

    /// True when the owned entries, in entry order, tile the owned bytes exactly.
    fn owned_in_order(&self) -> bool {
        let mut next = 0u64;
        for entry in self.iter() {
            if let ChunkEntry::Owned { offset, length } = entry {
                if offset != next {
                    return false;
                }
                next = offset.saturating_add(length);
            }
        }
        next == self.owned.len()
    }

    /// Releases spare capacity of the columns.
    pub fn shrink_to_fit(&mut self) {
        for segment in &mut self.segments {
            segment.shrink_to_fit();
        }
        self.owned.shrink_to_fit();
    }

    /// Bytes the table holds in memory (columns and the in-memory owned bytes, not the spilled
    /// ones), for reports and tests.
    pub fn heap_bytes(&self) -> usize {
        let columns: usize = self
            .segments
            .iter()
            .map(|s| {
                let ids = if let Sources::PerEntry(ids) = &s.sources { ids.capacity() * 4 } else { 0 };
                s.offsets.capacity() * 8 + s.lengths.capacity() * 4 + ids + s.exceptions.len() * 48
            })
            .sum();
        columns + self.owned.memory_bytes()
    }

    /// Counts of the table's contents.
    pub fn stats(&self) -> ChunkStats {
        ChunkStats::of(self.iter())
    }
}

impl ChunkStats {
    /// Counts of `entries`. Byte totals saturate: a store read from another program may reference
    /// ranges whose lengths add up past `u64::MAX`.
    pub fn of(entries: impl IntoIterator<Item = ChunkEntry>) -> Self {
        let mut stats = ChunkStats::default();
        for entry in entries {
            match entry {
                ChunkEntry::Missing => stats.missing += 1,
                ChunkEntry::Source { length, .. } => {
                    stats.referenced += 1;
                    stats.referenced_bytes = stats.referenced_bytes.saturating_add(length);
                }
                ChunkEntry::Owned { length, .. } => {
                    stats.owned += 1;
                    stats.owned_bytes = stats.owned_bytes.saturating_add(length);
                }
            }
        }
        stats
    }
}

/// The entries of a run of a [`ChunkTable`], in linear order ([`ChunkTable::iter`],
/// [`ChunkTable::range`]).
#[derive(Debug, Clone)]
pub struct Entries<'a> {
    segments: &'a [Segment],
    segment: usize,
    index: usize,
    remaining: usize,
}

impl Iterator for Entries<'_> {
    type Item = ChunkEntry;

    fn next(&mut self) -> Option<ChunkEntry> {
        if self.remaining == 0 {
            return None;
        }
        while self.segments.get(self.segment)?.len() <= self.index {
            self.segment += 1;
            self.index = 0;
        }
        let entry = self.segments[self.segment].get(self.index);
        self.index += 1;
        self.remaining -= 1;
        Some(entry)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.remaining, Some(self.remaining))
    }
}

impl ExactSizeIterator for Entries<'_> {}

impl<'a> IntoIterator for &'a ChunkTable {
    type Item = ChunkEntry;
    type IntoIter = Entries<'a>;

    fn into_iter(self) -> Entries<'a> {
        self.iter()
    }
}

impl Extend<ChunkEntry> for ChunkTable {
    fn extend<I: IntoIterator<Item = ChunkEntry>>(&mut self, entries: I) {
        for entry in entries {
            self.push(entry);
        }
    }
}

impl FromIterator<ChunkEntry> for ChunkTable {
    fn from_iter<I: IntoIterator<Item = ChunkEntry>>(entries: I) -> Self {
        ChunkTable::from_entries(entries, OwnedBytes::new())
    }
}

impl PartialEq for ChunkTable {
    fn eq(&self, other: &Self) -> bool {
        self.owned == other.owned && self.len() == other.len() && self.iter().eq(other.iter())
    }
}

/// Counts describing a chunk table.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ChunkStats {
    /// Chunks referenced in source files.
    pub referenced: u64,
    /// Bytes referenced in source files.
    pub referenced_bytes: u64,
    /// Chunks whose bytes the store holds (rewritten or inlined).
    pub owned: u64,
    /// Bytes the store holds.
    pub owned_bytes: u64,
    /// Chunks never written (read as the fill value).
    pub missing: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn src(source: u32, offset: u64, length: u64) -> ChunkEntry {
        ChunkEntry::Source { source, offset, length }
    }

    /// Every kind of entry, the ones that do not fit the columns included.
    fn every_kind() -> Vec<ChunkEntry> {
        vec![
            src(0, 4096, 300),
            ChunkEntry::Missing,
            src(0, 0, 0),
            ChunkEntry::Owned { offset: 0, length: 4 },
            src(0, 1 << 40, u64::from(u32::MAX) - 2),
            src(0, 1 << 40, u64::from(u32::MAX) - 1),
            src(0, 7, 1 << 40),
            src(0, OWNED_BIT | 5, 1),
            ChunkEntry::Owned { offset: 2, length: 1 << 33 },
            src(7, 8, 9),
            src(u32::MAX, u64::MAX, 0),
        ]
    }

    #[test]
    fn entries_round_trip_through_the_columns() {
        let entries = every_kind();
        let table: ChunkTable = entries.iter().copied().collect();
        assert_eq!(table.len(), entries.len());
        assert_eq!(table.iter().collect::<Vec<_>>(), entries);
        for (i, &e) in entries.iter().enumerate() {
            assert_eq!(table.get(i), Some(e));
        }
        assert_eq!(table.get(entries.len()), None);
        // Set in any order over a missing table, and overwritten.
        let mut set = ChunkTable::missing(entries.len());
        for (i, &e) in entries.iter().enumerate().rev() {
            set.set(i, ChunkEntry::Owned { offset: 1 << 50, length: 1 << 50 });
            set.set(i, e);
        }
        assert_eq!(set, table);
        assert_eq!(set.range(3..5).collect::<Vec<_>>(), entries[3..5]);
        assert_eq!(set.range(9..100).len(), 2);
    }

    #[test]
    fn one_source_takes_twelve_bytes_a_chunk() {
        let n = 10_000;
        let mut table = ChunkTable::missing(n);
        for i in 0..n {
            table.set(i, src(3, i as u64 * 100, 100));
        }
        assert_eq!(table.heap_bytes(), 12 * n);
        table.set(5, src(4, 0, 1));
        assert_eq!(table.heap_bytes(), 16 * n);
        assert_eq!((table.entry(4), table.entry(5)), (src(3, 400, 100), src(4, 0, 1)));
        table.rename_source(9);
        assert!(table.iter().all(|e| matches!(e, ChunkEntry::Source { source: 9, .. })));
    }

    #[test]
    fn shifting_sources_keeps_each_reference_apart() {
        // A file's own chunks (source 0) and its external file's (1), uniform and mixed segments.
        let mut table: ChunkTable = [src(0, 1, 2), ChunkEntry::Missing, src(1, 8, 4)].into_iter().collect();
        let owned = table.push_owned(b"ab").unwrap();
        table.push(owned);
        table.set(1, ChunkEntry::Source { source: 1, offset: u64::MAX - 1, length: 1 });
        table.shift_sources(7);
        let expected = [src(7, 1, 2), src(8, u64::MAX - 1, 1), src(8, 8, 4), owned];
        assert_eq!(table.iter().collect::<Vec<_>>(), expected);
        let mut uniform: ChunkTable = [src(0, 1, 2), src(0, 3, 2)].into_iter().collect();
        uniform.shift_sources(3);
        assert!(uniform.iter().all(|e| matches!(e, ChunkEntry::Source { source: 3, .. })));
    }

    #[test]
    fn concatenation_moves_segments_and_shifts_owned_bytes() {
        let mut a: ChunkTable = [src(0, 1, 2), ChunkEntry::Missing].into_iter().collect();
        let owned = a.push_owned(b"ab").unwrap();
        a.push(owned);
        let mut b: ChunkTable = every_kind().into_iter().collect();
        b.owned = OwnedBytes::from_vec(b"wxyz".to_vec(), &Default::default()).unwrap();
        b.rename_source(5);
        let joined = ChunkTable::concatenated([a.clone(), ChunkTable::default(), b.clone()]);
        assert_eq!(joined.len(), a.len() + b.len());
        assert_eq!(joined.owned.to_vec().unwrap(), b"abwxyz");
        let shifted = |e: ChunkEntry| match e {
            ChunkEntry::Owned { offset, length } => ChunkEntry::Owned { offset: offset + 2, length },
            other => other,
        };
        let expected: Vec<ChunkEntry> = a.iter().chain(b.iter().map(shifted)).collect();
        assert_eq!(joined.iter().collect::<Vec<_>>(), expected);
        for (i, &e) in expected.iter().enumerate() {
            assert_eq!(joined.get(i), Some(e), "{i}");
        }
        assert_eq!(joined.range(2..5).collect::<Vec<_>>(), expected[2..5]);
        let mut edited = joined.clone();
        edited.set(3, ChunkEntry::Missing);
        assert_eq!(edited.entry(3), ChunkEntry::Missing);
        assert_eq!(edited.stats().missing, joined.stats().missing + 1);
    }

    #[test]
    fn compacting_keeps_only_the_bytes_entries_use() {
        let mut table = ChunkTable::missing(3);
        table.owned = OwnedBytes::from_vec(b"0123456789".to_vec(), &Default::default()).unwrap();
        table.set(0, ChunkEntry::Owned { offset: 6, length: 2 });
        table.set(2, ChunkEntry::Owned { offset: 1, length: 3 });
        table.compact_owned().unwrap();
        assert_eq!(table.owned.to_vec().unwrap(), b"67123");
        assert_eq!(table.entry(2), ChunkEntry::Owned { offset: 2, length: 3 });
    }
}
