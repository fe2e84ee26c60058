//! An array's manifest entries walked in rounds of [`ENTRIES_PER_ROUND`], so that a walk over every
//! chunk (an export, an index rebuilt from a manifest) holds one round in memory at a time.

use super::{ArrayReader, ReadError};
use crate::manifest::ChunkEntry;

/// Manifest entries fetched and handled per round when walking a whole array.
pub const ENTRIES_PER_ROUND: u64 = 1 << 16;

/// The manifest entries of `array` in rounds of [`ENTRIES_PER_ROUND`]: `(first linear index, entries)`.
pub(crate) struct EntryRounds<'a> {
    array: &'a ArrayReader,
    next: u64,
    end: u64,
}

impl<'a> EntryRounds<'a> {
    /// The rounds of every chunk of `array`, first to last.
    pub(crate) fn new(array: &'a ArrayReader) -> Self {
        EntryRounds { array, next: 0, end: array.metadata().chunk_grid.num_chunks() }
    }

    /// The next round, `None` after the last chunk.
    pub(crate) async fn next_round(&mut self) -> Result<Option<(u64, Vec<ChunkEntry>)>, ReadError> {
        if self.next >= self.end {
            return Ok(None);
        }
        let start = self.next;
        self.next = start.saturating_add(ENTRIES_PER_ROUND).min(self.end);
        let entries = self.array.entries(start..self.next).await?;
        Ok(Some((start, entries)))
    }
}
