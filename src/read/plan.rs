//! Read step 1 (pure): selection -> chunk spans -> batches of chunk reads grouped by file.
//!
//! Input: spans from the array's grid and their manifest entries. Output: [`Batch`]es whose stored
//! bytes stay under a budget, each with its byte ranges grouped by file, so one request per file
//! fetches a batch.

use std::collections::BTreeMap;
use std::ops::Range;

use crate::grid::{ChunkSpan, DimPiece};
use crate::manifest::ChunkEntry;

/// Where a chunk's bytes are fetched from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum FileKey {
    /// Source file by id.
    Source(u32),
    /// The array's owned-bytes file.
    Owned,
}

/// One chunk to read: its coordinates, the part of it selected, and where its bytes are.
#[derive(Debug, Clone)]
pub(crate) struct ChunkRead {
    pub(crate) coords: Vec<u64>,
    pub(crate) pieces: Vec<DimPiece>,
    pub(crate) entry: ChunkEntry,
}

impl ChunkRead {
    /// Builds a read from a span and its manifest entry.
    pub(crate) fn new(span: ChunkSpan, entry: ChunkEntry) -> Self {
        ChunkRead { coords: span.coords, pieces: span.pieces, entry }
    }

    /// The file and byte range, or None for a missing chunk. Every store loader refuses an entry
    /// whose end overflows; were one to pass, its range ends at `u64::MAX` and the fetch refuses it
    /// as a short reply rather than wrapping.
    pub(crate) fn location(&self) -> Option<(FileKey, Range<u64>)> {
        match self.entry {
            ChunkEntry::Missing => None,
            ChunkEntry::Source { source, offset, length } => {
                Some((FileKey::Source(source), offset..offset.saturating_add(length)))
            }
            ChunkEntry::Owned { offset, length } => Some((FileKey::Owned, offset..offset.saturating_add(length))),
        }
    }

    /// Stored bytes this read fetches.
    pub(crate) fn stored_len(&self) -> u64 {
        self.location().map_or(0, |(_, r)| r.end - r.start)
    }
}

/// The ranges to fetch from one file, and which read each serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FileRequest {
    pub(crate) file: FileKey,
    /// Ranges sorted by offset (duplicates kept once).
    pub(crate) ranges: Vec<Range<u64>>,
    /// For each range, the indices of the reads it serves.
    pub(crate) readers: Vec<Vec<usize>>,
}

/// Reads of one batch and their requests.
#[derive(Debug, Clone)]
pub(crate) struct Batch {
    pub(crate) reads: Vec<ChunkRead>,
    pub(crate) requests: Vec<FileRequest>,
}

impl Batch {
    /// Groups the reads' ranges by file, sorted by offset, deduplicated.
    pub(crate) fn new(reads: Vec<ChunkRead>) -> Self {
        let mut by_file: BTreeMap<FileKey, BTreeMap<(u64, u64), Vec<usize>>> = BTreeMap::new();
        for (i, read) in reads.iter().enumerate() {
            if let Some((file, range)) = read.location() {
                by_file.entry(file).or_default().entry((range.start, range.end)).or_default().push(i);
            }
        }
        let requests = by_file
            .into_iter()
            .map(|(file, ranges)| {
                let (ranges, readers) = ranges.into_iter().map(|((s, e), r)| (s..e, r)).unzip();
                FileRequest { file, ranges, readers }
            })
            .collect();
        Batch { reads, requests }
    }
}

/// Splits reads into groups whose stored bytes stay under `budget` (a single larger chunk forms a
/// group of its own). Order is kept.
pub(crate) fn split_by_bytes(reads: Vec<ChunkRead>, budget: u64) -> Vec<Vec<ChunkRead>> {
    let mut groups = Vec::new();
    let mut current = Vec::new();
    let mut bytes = 0u64;
    for read in reads {
        let len = read.stored_len();
        if !current.is_empty() && bytes.saturating_add(len) > budget {
            groups.push(std::mem::take(&mut current));
            bytes = 0;
        }
        bytes = bytes.saturating_add(len);
        current.push(read);
    }
    if !current.is_empty() {
        groups.push(current);
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(entry: ChunkEntry) -> ChunkRead {
        ChunkRead { coords: vec![0], pieces: Vec::new(), entry }
    }

    #[test]
    fn ranges_are_grouped_by_file_sorted_and_shared() {
        let reads = vec![
            read(ChunkEntry::Source { source: 1, offset: 500, length: 10 }),
            read(ChunkEntry::Missing),
            read(ChunkEntry::Source { source: 1, offset: 100, length: 10 }),
            read(ChunkEntry::Owned { offset: 0, length: 4 }),
            read(ChunkEntry::Source { source: 1, offset: 100, length: 10 }),
            read(ChunkEntry::Source { source: 0, offset: 7, length: 1 }),
        ];
        let batch = Batch::new(reads);
        let files: Vec<FileKey> = batch.requests.iter().map(|r| r.file).collect();
        assert_eq!(files, [FileKey::Source(0), FileKey::Source(1), FileKey::Owned]);
        assert_eq!(batch.requests[1].ranges, [100..110, 500..510]);
        assert_eq!(batch.requests[1].readers, [vec![2, 4], vec![0]]);
    }

    #[test]
    fn batches_respect_the_byte_budget() {
        let reads: Vec<ChunkRead> =
            (0..10).map(|i| read(ChunkEntry::Source { source: 0, offset: i * 40, length: 40 })).collect();
        let groups = split_by_bytes(reads, 100);
        assert_eq!(groups.iter().map(Vec::len).collect::<Vec<_>>(), [2, 2, 2, 2, 2]);
        let big = vec![read(ChunkEntry::Source { source: 0, offset: 0, length: 1000 })];
        assert_eq!(split_by_bytes(big, 100).len(), 1);
    }
}
