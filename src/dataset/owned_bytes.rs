//! [`OwnedBytes`]: the store-owned chunk bytes of one chunk table, in memory up to a budget and in
//! an unlinked spill file past it.
//!
//! Some chunks cannot be referenced in place and are copied into the store (szip, LZO and blosc2
//! chunks re-encoded, padded compounds repacked, HDF4 chunks zlib-wrapped, cropped tails, ...). A
//! scan holds every file's table until the store is written, so an archive whose chunks are all
//! copied would otherwise sit in RAM whole. Here the bytes are one logical blob per table, addressed
//! by `offset` and `length` like before, made of pieces:
//!
//! - **memory** pieces, while the bytes every table sharing one [`OwnedBytesBudget`] holds in
//!   memory stay within it (a handle made at the edges, the command line, the Python package,
//!   `ScanOptions`: `source::owned_bytes_budget`; 0 spills everything;
//!   [`OwnedBytesBudget::unlimited`], the default of a table, never spills);
//! - **spilled** pieces past it: extents of one append-only spill file shared by every table of the
//!   budget, created by the budget's [`SpillFiles`] (the I/O side, `source/spill`: unlinked in
//!   [`std::env::temp_dir`]) and read back with positional reads. Each table reserves extents of the
//!   file (64 KiB, doubling to 16 MiB) and fills them with positional writes, so tables filled by
//!   parallel scans do not interleave and a table holds about one piece per 16 MiB spilled: no heap
//!   object per chunk, and one file descriptor however many files a scan has. Unwritten room at the
//!   end of an extent is a hole of the file.
//!
//! Concatenation ([`OwnedBytes::append`]) moves pieces and shifts their offsets; nothing is copied.
//! The spill file lives as long as a spilled piece does and is never compacted while it lives:
//! bytes dropped from a table (compaction, a dropped table) keep their place in the file until every
//! table spilled into it is gone, and the next spill opens a new file.
//!
//! The model itself opens no file and reads no environment: it reserves, writes and reads extents
//! of the [`SpillFile`] its budget's [`SpillFiles`] gives it.

use std::borrow::Cow;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

/// The memory budget the edges give when none is set: 64 MiB.
pub const DEFAULT_MEMORY_BUDGET: u64 = 64 << 20;

/// The first extent a table reserves in the spill file.
const FIRST_EXTENT: u64 = 64 << 10;
/// The largest extent a table reserves (larger pushes reserve exactly what they need).
const MAX_EXTENT: u64 = 16 << 20;
/// The buffer of streaming copies out of the spill file.
const COPY_BUFFER: u64 = 1 << 20;

/// A file that store-owned bytes past their budget go to, read and written at positions.
pub trait SpillFile: Send + Sync + std::fmt::Debug {
    /// Writes all of `bytes` at `at`.
    ///
    /// # Errors
    /// The I/O error.
    fn write_all_at(&self, bytes: &[u8], at: u64) -> std::io::Result<()>;
    /// Fills `out` with the bytes from `at`.
    ///
    /// # Errors
    /// The I/O error.
    fn read_exact_at(&self, out: &mut [u8], at: u64) -> std::io::Result<()>;
    /// The file's path when it was created, for messages.
    fn path(&self) -> &Path;
}

/// Creates the spill files of a budget (one at a time, while some piece uses it).
pub trait SpillFiles: Send + Sync + std::fmt::Debug {
    /// A new, empty spill file.
    ///
    /// # Errors
    /// [`OwnedBytesError::Create`] when it cannot be created.
    fn create(&self) -> Result<Box<dyn SpillFile>, OwnedBytesError>;
}

/// A memory budget for store-owned bytes, shared by the tables it is given to (clones are handles
/// of one budget): the bytes they hold in memory stay within its limit, the rest spills to files of
/// its [`SpillFiles`]. [`Default`] is [`OwnedBytesBudget::unlimited`].
#[derive(Clone, Debug, Default)]
pub struct OwnedBytesBudget(Arc<Budget>);

#[derive(Debug)]
struct Budget {
    limit: u64,
    /// Bytes of owned blobs held in memory by the live pieces of this budget (capacities).
    held: AtomicU64,
    spill: Option<Arc<dyn SpillFiles>>,
    /// The spill file while some piece uses it.
    current: Mutex<Weak<Spill>>,
}

impl Default for Budget {
    fn default() -> Self {
        Budget { limit: u64::MAX, held: AtomicU64::new(0), spill: None, current: Mutex::new(Weak::new()) }
    }
}

impl OwnedBytesBudget {
    /// No limit: every byte stays in memory.
    pub fn unlimited() -> Self {
        OwnedBytesBudget::default()
    }

    /// At most `limit` bytes in memory (0: everything spills), the rest in files `spill` creates.
    pub fn new(limit: u64, spill: Arc<dyn SpillFiles>) -> Self {
        OwnedBytesBudget(Arc::new(Budget { limit, spill: Some(spill), ..Budget::default() }))
    }

    /// The limit, in bytes (`u64::MAX` for none).
    pub fn limit(&self) -> u64 {
        self.0.limit
    }

    /// Bytes the tables of this budget hold in memory.
    pub fn held(&self) -> u64 {
        self.0.held.load(Ordering::Relaxed)
    }

    /// Takes `n` bytes of the budget, or nothing when they do not fit (always fits without spill files).
    fn take(&self, n: u64) -> bool {
        let limit = if self.0.spill.is_some() { self.0.limit } else { u64::MAX };
        let held = &self.0.held;
        held.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |h| Some(h.saturating_add(n)).filter(|&t| t <= limit))
            .is_ok()
    }

    fn add(&self, n: u64) {
        self.0.held.fetch_add(n, Ordering::Relaxed);
    }

    fn release(&self, n: u64) {
        self.0.held.fetch_sub(n, Ordering::Relaxed);
    }

    /// The budget's spill file, created when no live piece holds one.
    fn spill_file(&self) -> Result<Arc<Spill>, OwnedBytesError> {
        let mut slot = self.0.current.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(file) = slot.upgrade() {
            return Ok(file);
        }
        let Some(files) = &self.0.spill else { unreachable!("a budget without spill files takes every byte") };
        let file = Arc::new(Spill { file: files.create()?, end: AtomicU64::new(0) });
        *slot = Arc::downgrade(&file);
        Ok(file)
    }
}

/// Why store-owned bytes could not be stored or read back.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OwnedBytesError {
    /// The spill file could not be created.
    #[error("{}: creating a spill file for store-owned chunk bytes: {source}", dir.display())]
    Create {
        /// The directory it was created in.
        dir: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// Writing or reading the spill file failed.
    #[error("{} (spill file of store-owned chunk bytes, unlinked): {what}: {source}", path.display())]
    Spill {
        /// The spill file's path when it was created (it is unlinked at once).
        path: PathBuf,
        /// What was being done.
        what: &'static str,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A range asked for lies outside the bytes held.
    #[error("store-owned bytes {offset}+{length} lie outside the {held} bytes held")]
    OutOfRange {
        /// Offset asked for.
        offset: u64,
        /// Length asked for.
        length: u64,
        /// Bytes held.
        held: u64,
    },
    /// Writing the bytes out ([`OwnedBytes::copy_to`]) failed.
    #[error("writing store-owned chunk bytes: {source}")]
    Write {
        /// The writer's error.
        source: std::io::Error,
    },
}

/// A budget's spill file and the end of the extents reserved in it.
#[derive(Debug)]
struct Spill {
    file: Box<dyn SpillFile>,
    /// End of the reserved extents.
    end: AtomicU64,
}

impl Spill {
    fn error(&self, what: &'static str) -> impl FnOnce(std::io::Error) -> OwnedBytesError + '_ {
        move |source| OwnedBytesError::Spill { path: self.file.path().to_path_buf(), what, source }
    }
}

/// Owned bytes in memory, counted in their budget's [`OwnedBytesBudget::held`] by capacity.
#[derive(Debug)]
struct Held(Vec<u8>, OwnedBytesBudget);

impl Held {
    /// Appends `bytes` if the capacity needed fits the budget; false (nothing appended) otherwise.
    fn try_extend(&mut self, bytes: &[u8]) -> bool {
        let (len, cap) = (self.0.len() as u64, self.0.capacity() as u64);
        let need = len + bytes.len() as u64;
        if need > cap {
            let doubled = need.max(cap.saturating_mul(2));
            let target = if self.1.take(doubled - cap) {
                doubled
            } else if self.1.take(need - cap) {
                need
            } else {
                return false;
            };
            self.0.reserve_exact((target - len) as usize);
            let actual = self.0.capacity() as u64;
            if actual > target {
                self.1.add(actual - target);
            }
        }
        self.0.extend_from_slice(bytes);
        true
    }

    fn shrink_to_fit(&mut self) {
        let before = self.0.capacity();
        self.0.shrink_to_fit();
        self.1.release((before - self.0.capacity()) as u64);
    }
}

impl Clone for Held {
    fn clone(&self) -> Self {
        let bytes = self.0.clone();
        self.1.add(bytes.capacity() as u64);
        Held(bytes, self.1.clone())
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.1.release(self.0.capacity() as u64);
    }
}

/// Bytes of a table in the spill file.
#[derive(Debug)]
struct Extent {
    file: Arc<Spill>,
    /// Where they start in the file.
    at: u64,
    length: u64,
    /// Reserved bytes after them that this piece may still fill.
    room: u64,
}

impl Clone for Extent {
    /// A clone shares the bytes but not the room (only the original fills it).
    fn clone(&self) -> Self {
        Extent { file: self.file.clone(), at: self.at, length: self.length, room: 0 }
    }
}

#[derive(Debug, Clone)]
enum Data {
    Memory(Held),
    Spilled(Extent),
}

/// A run of a table's owned bytes.
#[derive(Debug, Clone)]
struct Piece {
    /// Offset of its first byte in the table's blob.
    start: u64,
    data: Data,
}

impl Piece {
    fn len(&self) -> u64 {
        match &self.data {
            Data::Memory(held) => held.0.len() as u64,
            Data::Spilled(extent) => extent.length,
        }
    }

    /// Copies its bytes `from..from + out.len()` into `out`.
    fn read_into(&self, from: u64, out: &mut [u8]) -> Result<(), OwnedBytesError> {
        match &self.data {
            Data::Memory(held) => {
                out.copy_from_slice(&held.0[from as usize..from as usize + out.len()]);
                Ok(())
            }
            Data::Spilled(e) => e.file.file.read_exact_at(out, e.at + from).map_err(e.file.error("reading")),
        }
    }
}

/// The store-owned bytes of one chunk table: one logical blob addressed by offset and length, in
/// memory within its budget and in the budget's spill file past it (see the module docs).
#[derive(Clone, Default)]
pub struct OwnedBytes {
    /// The budget further bytes are counted in.
    budget: OwnedBytesBudget,
    pieces: Vec<Piece>,
    /// The next extent this table reserves in the spill file.
    next_extent: u64,
}

impl std::fmt::Debug for OwnedBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OwnedBytes")
            .field("len", &self.len())
            .field("in_memory", &self.memory_bytes())
            .field("pieces", &self.pieces.len())
            .finish()
    }
}

impl OwnedBytes {
    /// No bytes, counted in no budget (they stay in memory).
    pub fn new() -> Self {
        OwnedBytes::default()
    }

    /// No bytes; the bytes pushed are counted in `budget`.
    pub fn with_budget(budget: &OwnedBytesBudget) -> Self {
        OwnedBytes { budget: budget.clone(), ..OwnedBytes::default() }
    }

    /// The budget further bytes are counted in.
    pub fn budget(&self) -> &OwnedBytesBudget {
        &self.budget
    }

    /// `bytes` as a blob counted in `budget`: kept as they are when it has room for them, spilled
    /// otherwise.
    ///
    /// # Errors
    /// [`OwnedBytesError`] when the bytes must spill and the spill file cannot be created or written.
    pub fn from_vec(bytes: Vec<u8>, budget: &OwnedBytesBudget) -> Result<Self, OwnedBytesError> {
        let mut out = OwnedBytes::with_budget(budget);
        if bytes.is_empty() {
            return Ok(out);
        }
        if budget.take(bytes.capacity() as u64) {
            out.pieces.push(Piece { start: 0, data: Data::Memory(Held(bytes, budget.clone())) });
        } else {
            out.push(&bytes)?;
        }
        Ok(out)
    }

    /// Length of the blob.
    pub fn len(&self) -> u64 {
        self.pieces.last().map_or(0, |p| p.start + p.len())
    }

    /// True for no bytes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes held in memory (capacities of the in-memory pieces and the piece list).
    pub fn memory_bytes(&self) -> usize {
        let held: usize =
            self.pieces.iter().map(|p| if let Data::Memory(h) = &p.data { h.0.capacity() } else { 0 }).sum();
        held + self.pieces.capacity() * std::mem::size_of::<Piece>()
    }

    /// Bytes kept in the spill file.
    pub fn spilled_bytes(&self) -> u64 {
        self.pieces.iter().map(|p| if let Data::Spilled(e) = &p.data { e.length } else { 0 }).sum()
    }

    /// Appends `bytes` and returns their offset in the blob.
    ///
    /// # Errors
    /// [`OwnedBytesError`] when the bytes must spill and the spill file cannot be created or written.
    pub fn push(&mut self, bytes: &[u8]) -> Result<u64, OwnedBytesError> {
        let offset = self.len();
        if bytes.is_empty() {
            return Ok(offset);
        }
        let n = bytes.len() as u64;
        match self.pieces.last_mut().map(|p| &mut p.data) {
            Some(Data::Spilled(e)) if e.room >= n => {
                e.file.file.write_all_at(bytes, e.at + e.length).map_err(e.file.error("writing"))?;
                e.length += n;
                e.room -= n;
                return Ok(offset);
            }
            // Once a table spills it keeps spilling: its pieces stay few.
            Some(Data::Spilled(_)) => {}
            Some(Data::Memory(held)) => {
                if held.try_extend(bytes) {
                    return Ok(offset);
                }
            }
            None => {
                let mut held = Held(Vec::new(), self.budget.clone());
                if held.try_extend(bytes) {
                    self.pieces.push(Piece { start: offset, data: Data::Memory(held) });
                    return Ok(offset);
                }
            }
        }
        self.spill(bytes)?;
        Ok(offset)
    }

    /// Writes `bytes` to a new extent of the spill file, as a new piece.
    fn spill(&mut self, bytes: &[u8]) -> Result<(), OwnedBytesError> {
        let file = self.budget.spill_file()?;
        let n = bytes.len() as u64;
        let extent = self.next_extent.clamp(FIRST_EXTENT, MAX_EXTENT);
        self.next_extent = extent.saturating_mul(2);
        let reserved = extent.max(n);
        let at = file.end.fetch_add(reserved, Ordering::Relaxed);
        file.file.write_all_at(bytes, at).map_err(file.error("writing"))?;
        let start = self.len();
        let data = Data::Spilled(Extent { file, at, length: n, room: reserved - n });
        self.pieces.push(Piece { start, data });
        Ok(())
    }

    /// The bytes `offset..offset + length`: borrowed when they lie in one in-memory piece, read
    /// into a buffer otherwise (its size is bounded by the bytes held).
    ///
    /// # Errors
    /// [`OwnedBytesError::OutOfRange`] past the end; [`OwnedBytesError::Spill`] when the spill file
    /// cannot be read.
    pub fn read(&self, offset: u64, length: u64) -> Result<Cow<'_, [u8]>, OwnedBytesError> {
        let held = self.len();
        let end = offset.checked_add(length).filter(|&e| e <= held);
        let Some(end) = end else { return Err(OwnedBytesError::OutOfRange { offset, length, held }) };
        if length == 0 {
            return Ok(Cow::Borrowed(&[]));
        }
        let k = self.pieces.partition_point(|p| p.start <= offset) - 1;
        let piece = &self.pieces[k];
        if let Data::Memory(h) = &piece.data {
            if end <= piece.start + piece.len() {
                let from = (offset - piece.start) as usize;
                return Ok(Cow::Borrowed(&h.0[from..from + length as usize]));
            }
        }
        let mut out = vec![0u8; length as usize];
        self.read_into(offset, &mut out)?;
        Ok(Cow::Owned(out))
    }

    /// Copies the bytes from `offset` into `out` (the range lies inside the blob).
    fn read_into(&self, offset: u64, out: &mut [u8]) -> Result<(), OwnedBytesError> {
        let mut k = self.pieces.partition_point(|p| p.start <= offset) - 1;
        let (mut at, mut done) = (offset, 0usize);
        while done < out.len() {
            let piece = &self.pieces[k];
            let from = at - piece.start;
            let n = (piece.len() - from).min((out.len() - done) as u64) as usize;
            piece.read_into(from, &mut out[done..done + n])?;
            (done, at, k) = (done + n, at + n as u64, k + 1);
        }
        Ok(())
    }

    /// Writes the whole blob to `out`, streaming spilled pieces through a 1 MiB buffer.
    ///
    /// # Errors
    /// [`OwnedBytesError::Spill`] when the spill file cannot be read, [`OwnedBytesError::Write`]
    /// when `out` fails.
    pub fn copy_to(&self, out: &mut impl Write) -> Result<(), OwnedBytesError> {
        let write = |source| OwnedBytesError::Write { source };
        let mut buffer = Vec::new();
        for piece in &self.pieces {
            match &piece.data {
                Data::Memory(held) => out.write_all(&held.0).map_err(write)?,
                Data::Spilled(e) => {
                    let mut done = 0;
                    while done < e.length {
                        let n = (e.length - done).min(COPY_BUFFER) as usize;
                        buffer.resize(n, 0);
                        e.file.file.read_exact_at(&mut buffer, e.at + done).map_err(e.file.error("reading"))?;
                        out.write_all(&buffer).map_err(write)?;
                        done += n as u64;
                    }
                }
            }
        }
        Ok(())
    }

    /// Appends `other`'s bytes after these (their offsets shift by [`OwnedBytes::len`]), moving its
    /// pieces: no byte is copied.
    ///
    /// An empty blob counted in no budget takes `other`'s: a table concatenated from scanned tables
    /// counts the bytes pushed later where they counted theirs.
    pub fn append(&mut self, other: OwnedBytes) {
        if self.pieces.is_empty() && self.budget.0.spill.is_none() {
            self.budget = other.budget.clone();
        }
        let shift = self.len();
        // The last piece's room is no longer at the blob's end.
        if let Some(Piece { data: Data::Spilled(e), .. }) = self.pieces.last_mut() {
            e.room = 0;
        }
        for mut piece in other.pieces {
            if piece.len() > 0 {
                piece.start += shift;
                self.pieces.push(piece);
            }
        }
        self.next_extent = self.next_extent.max(other.next_extent);
    }

    /// Releases spare capacity (of in-memory pieces and the piece list).
    pub fn shrink_to_fit(&mut self) {
        for piece in &mut self.pieces {
            if let Data::Memory(held) = &mut piece.data {
                held.shrink_to_fit();
            }
        }
        self.pieces.shrink_to_fit();
    }

    /// The whole blob in one buffer (tests and small arrays).
    ///
    /// # Errors
    /// As [`OwnedBytes::read`].
    pub fn to_vec(&self) -> Result<Vec<u8>, OwnedBytesError> {
        Ok(self.read(0, self.len())?.into_owned())
    }
}

impl PartialEq for OwnedBytes {
    /// Same bytes (compared window by window; a blob that cannot be read equals nothing).
    fn eq(&self, other: &Self) -> bool {
        if self.len() != other.len() {
            return false;
        }
        let mut offset = 0;
        while offset < self.len() {
            let n = (self.len() - offset).min(COPY_BUFFER);
            match (self.read(offset, n), other.read(offset, n)) {
                (Ok(a), Ok(b)) if a == b => offset += n,
                _ => return false,
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataset::ChunkTable;
    use crate::manifest::ChunkEntry;

    /// Spill files of the tests: unlinked temporary files.
    #[derive(Debug)]
    struct TempSpill;

    #[derive(Debug)]
    struct TempFile(std::fs::File, PathBuf);

    impl SpillFile for TempFile {
        fn write_all_at(&self, bytes: &[u8], at: u64) -> std::io::Result<()> {
            std::os::unix::fs::FileExt::write_all_at(&self.0, bytes, at)
        }
        fn read_exact_at(&self, out: &mut [u8], at: u64) -> std::io::Result<()> {
            std::os::unix::fs::FileExt::read_exact_at(&self.0, out, at)
        }
        fn path(&self) -> &Path {
            &self.1
        }
    }

    impl SpillFiles for TempSpill {
        fn create(&self) -> Result<Box<dyn SpillFile>, OwnedBytesError> {
            let file = tempfile::tempfile().map_err(|source| OwnedBytesError::Create { dir: "tmp".into(), source })?;
            Ok(Box::new(TempFile(file, "spill".into())))
        }
    }

    /// Runs `f` with a memory budget of `bytes` of its own.
    fn with_budget<T>(bytes: u64, f: impl FnOnce(&OwnedBytesBudget) -> T) -> T {
        f(&OwnedBytesBudget::new(bytes, Arc::new(TempSpill)))
    }

    /// A table of `n` missing chunks whose owned bytes count in `budget`.
    fn table(n: usize, budget: &OwnedBytesBudget) -> ChunkTable {
        let mut table = ChunkTable::missing(n);
        table.owned = OwnedBytes::with_budget(budget);
        table
    }

    /// `n` bytes of a pattern seeded by `seed`.
    fn blob(seed: u8, n: usize) -> Vec<u8> {
        (0..n).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect()
    }

    #[test]
    fn memory_and_spilled_bytes_read_back_exactly() {
        for budget in [0, 1 << 30] {
            with_budget(budget, |bud| {
                let mut owned = OwnedBytes::with_budget(bud);
                let chunks: Vec<Vec<u8>> = (0..20).map(|k| blob(k, 1000 + 7919 * k as usize)).collect();
                let offsets: Vec<u64> = chunks.iter().map(|c| owned.push(c).unwrap()).collect();
                assert_eq!(owned.push(&[]).unwrap(), owned.len());
                assert_eq!(owned.spilled_bytes() > 0, budget == 0, "budget {budget}");
                for (c, &o) in chunks.iter().zip(&offsets) {
                    assert_eq!(*owned.read(o, c.len() as u64).unwrap(), c[..]);
                }
                let all = chunks.concat();
                assert_eq!(owned.to_vec().unwrap(), all);
                let mut copied = Vec::new();
                owned.copy_to(&mut copied).unwrap();
                assert_eq!(copied, all);
                // Ranges across pushes, and out of range.
                assert_eq!(*owned.read(500, 5000).unwrap(), all[500..5500]);
                let err = owned.read(owned.len() - 1, 2).unwrap_err();
                assert!(matches!(err, OwnedBytesError::OutOfRange { .. }), "{err}");
                assert!(owned.read(u64::MAX, 2).is_err());
            });
        }
    }

    #[test]
    fn a_budget_of_zero_spills_everything_and_keeps_the_heap_small() {
        with_budget(0, |bud| {
            let mut table = table(64, bud);
            for k in 0..64 {
                let entry = table.push_owned(&blob(k as u8, 64 << 10)).unwrap();
                table.set(k, entry);
            }
            assert_eq!(table.owned.spilled_bytes(), 64 * (64 << 10));
            assert!(table.owned.memory_bytes() < 1024, "{:?}", table.owned);
            // From 64 KiB extents doubling: a few pieces for 4 MiB.
            assert!(table.owned.pieces.len() <= 8, "{:?}", table.owned);
            let from_vec = OwnedBytes::from_vec(blob(1, 1000), bud).unwrap();
            assert_eq!((from_vec.spilled_bytes(), from_vec.to_vec().unwrap()), (1000, blob(1, 1000)));
        });
    }

    #[test]
    fn memory_stays_within_a_small_budget() {
        with_budget(1 << 20, |bud| {
            let mut owned = OwnedBytes::with_budget(bud);
            for k in 0..64 {
                owned.push(&blob(k, 100_000)).unwrap();
            }
            assert!(owned.memory_bytes() <= (1 << 20) + 1024, "{:?}", owned);
            assert!(bud.held() <= 1 << 20);
            assert_eq!(owned.len(), 6_400_000);
            assert!(owned.spilled_bytes() >= 6_400_000 - (1 << 20));
            let expected: Vec<u8> = (0..64).flat_map(|k| blob(k, 100_000)).collect();
            assert_eq!(owned.to_vec().unwrap(), expected);
        });
    }

    #[test]
    fn concatenation_moves_pieces_and_keeps_offsets() {
        with_budget(150_000, |bud| {
            // a: in memory then spilled; b: spilled; c: from a vector (in memory if room is left).
            let mut a = OwnedBytes::with_budget(bud);
            let (a1, a2) = (blob(1, 100_000), blob(2, 100_000));
            a.push(&a1).unwrap();
            a.push(&a2).unwrap();
            let mut b = OwnedBytes::with_budget(bud);
            let b1 = blob(3, 70_000);
            b.push(&b1).unwrap();
            let c = OwnedBytes::from_vec(blob(4, 10), bud).unwrap();
            let mut joined = a.clone();
            joined.append(b.clone());
            joined.append(OwnedBytes::with_budget(bud));
            joined.append(c);
            assert_eq!(joined.len(), 270_010);
            assert_eq!(*joined.read(100_000, 100_000).unwrap(), a2[..]);
            assert_eq!(*joined.read(200_000, 70_000).unwrap(), b1[..]);
            assert_eq!(*joined.read(270_000, 10).unwrap(), blob(4, 10)[..]);
            // Pushing after concatenation never writes over another table's extent.
            let offset = joined.push(&blob(5, 3000)).unwrap();
            a.push(&blob(6, 3000)).unwrap();
            b.push(&blob(7, 3000)).unwrap();
            assert_eq!(*joined.read(offset, 3000).unwrap(), blob(5, 3000)[..]);
            assert_eq!(*joined.read(200_000, 70_000).unwrap(), b1[..]);
            assert_eq!(*a.read(200_000, 3000).unwrap(), blob(6, 3000)[..]);
            assert_eq!(*b.read(70_000, 3000).unwrap(), blob(7, 3000)[..]);
            assert_eq!(*joined.read(100_000, 100_000).unwrap(), a2[..]);
        });
    }

    #[test]
    fn tables_concatenate_and_compact_spilled_bytes() {
        with_budget(0, |bud| {
            let mut a = table(2, bud);
            let e = a.push_owned(b"hello").unwrap();
            a.set(1, e);
            let mut b = table(3, bud);
            let unused = b.push_owned(b"dropped").unwrap();
            let kept = b.push_owned(b"world").unwrap();
            b.set(0, kept);
            b.set(2, unused);
            b.set(2, ChunkEntry::Missing);
            b.compact_owned().unwrap();
            assert_eq!(b.owned.to_vec().unwrap(), b"world");
            assert_eq!(b.entry(0), ChunkEntry::Owned { offset: 0, length: 5 });
            let joined = ChunkTable::concatenated([a, b]);
            assert_eq!(joined.entry(2), ChunkEntry::Owned { offset: 5, length: 5 });
            assert_eq!(*joined.owned_chunk(5, 5).unwrap(), *b"world");
            assert_eq!(joined.owned.memory_bytes(), joined.owned.pieces.capacity() * size_of::<Piece>());
        });
    }

    #[test]
    fn clones_and_equality() {
        with_budget(0, |bud| {
            let mut a = OwnedBytes::with_budget(bud);
            a.push(b"abc").unwrap();
            let mut b = a.clone();
            assert_eq!(a, b);
            a.push(b"d").unwrap();
            b.push(b"e").unwrap();
            assert_eq!((a.to_vec().unwrap(), b.to_vec().unwrap()), (b"abcd".to_vec(), b"abce".to_vec()));
            assert_ne!(a, b);
            assert_eq!(OwnedBytes::from_vec(b"abcd".to_vec(), bud).unwrap(), a);
        });
    }

    #[test]
    fn an_unlimited_budget_keeps_everything_in_memory() {
        let mut owned = OwnedBytes::new();
        owned.push(&blob(1, 1 << 20)).unwrap();
        assert_eq!((owned.spilled_bytes(), owned.budget().held() >= 1 << 20), (0, true));
        let other = OwnedBytesBudget::unlimited();
        assert_eq!(other.held(), 0, "budgets count apart");
    }
}
