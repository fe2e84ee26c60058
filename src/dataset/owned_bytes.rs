//! [`OwnedBytes`]: the store-owned chunk bytes of one chunk table, in memory up to a budget and in
//! an unlinked spill file past it.
//!
//! Some chunks cannot be referenced in place and are copied into the store (szip, LZO and blosc2
//! chunks re-encoded, padded compounds repacked, HDF4 chunks zlib-wrapped, cropped tails, ...). A
//! scan holds every file's table until the store is written, so an archive whose chunks are all
//! copied would otherwise sit in RAM whole. Here the bytes are one logical blob per table, addressed
//! by `offset` and `length` like before, made of pieces:
//!
//! - **memory** pieces, while the bytes every live table holds in memory stay within the process's
//!   budget ([`memory_budget`]: 64 MiB by default, `VZARR_OWNED_MEMORY` or
//!   [`set_memory_budget`] to change it; 0 spills everything);
//! - **spilled** pieces past it: extents of one append-only spill file shared by every table of the
//!   process, created unlinked in [`std::env::temp_dir`] (`TMPDIR`) and read back with positional
//!   reads. Each table reserves extents of the file (64 KiB, doubling to 16 MiB) and fills them
//!   with positional writes, so tables filled by parallel scans do not interleave and a table holds
//!   about one piece per 16 MiB spilled: no heap object per chunk, and one file descriptor however
//!   many files a scan has. Unwritten room at the end of an extent is a hole of the file.
//!
//! Concatenation ([`OwnedBytes::append`]) moves pieces and shifts their offsets; nothing is copied.
//! The spill file lives as long as a spilled piece does and is never compacted while it lives:
//! bytes dropped from a table (compaction, a dropped table) keep their place in the file until every
//! table spilled into it is gone, and the next spill opens a new file.
//!
//! This is the one place of the pure data model that does I/O: the alternative, bytes that only fit
//! in memory, is what made all-copied archives unscannable.

use std::borrow::Cow;
use std::fs::File;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};

/// The environment variable setting the process's memory budget for owned bytes, in bytes
/// (a plain number, or with a `K`, `M` or `G` suffix for KiB, MiB, GiB), read once.
pub const MEMORY_BUDGET_VAR: &str = "VZARR_OWNED_MEMORY";
/// The memory budget when neither [`MEMORY_BUDGET_VAR`] nor [`set_memory_budget`] sets one: 64 MiB.
pub const DEFAULT_MEMORY_BUDGET: u64 = 64 << 20;

/// The first extent a table reserves in the spill file.
const FIRST_EXTENT: u64 = 64 << 10;
/// The largest extent a table reserves (larger pushes reserve exactly what they need).
const MAX_EXTENT: u64 = 16 << 20;
/// The buffer of streaming copies out of the spill file.
const COPY_BUFFER: u64 = 1 << 20;

/// Bytes of owned blobs held in memory by every live [`OwnedBytes`] of the process (capacities).
static HELD: AtomicU64 = AtomicU64::new(0);
/// The budget set by [`set_memory_budget`]; `u64::MAX` when unset.
static BUDGET_SET: AtomicU64 = AtomicU64::new(u64::MAX);
/// The budget of the environment, read once.
static BUDGET_ENV: OnceLock<u64> = OnceLock::new();
/// The spill file of the process while some piece uses it.
static SPILL: Mutex<Weak<SpillFile>> = Mutex::new(Weak::new());

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

/// The process's memory budget for owned bytes: what [`set_memory_budget`] set, else
/// [`MEMORY_BUDGET_VAR`], else [`DEFAULT_MEMORY_BUDGET`] (also when the variable does not parse).
pub fn memory_budget() -> u64 {
    match BUDGET_SET.load(Ordering::Relaxed) {
        u64::MAX => *BUDGET_ENV.get_or_init(|| {
            std::env::var(MEMORY_BUDGET_VAR).ok().and_then(|v| parse_size(&v)).unwrap_or(DEFAULT_MEMORY_BUDGET)
        }),
        set => set,
    }
}

/// Checks [`MEMORY_BUDGET_VAR`] where it is set: the line to print when it is not a size (which
/// [`memory_budget`] would take as unset), so a command can refuse it instead.
///
/// # Errors
/// The variable, its value and the sizes it takes.
pub fn check_memory_budget_var() -> Result<(), String> {
    let Some(value) = std::env::var_os(MEMORY_BUDGET_VAR) else { return Ok(()) };
    match value.to_str().and_then(parse_size) {
        Some(_) => Ok(()),
        None => Err(format!(
            "{MEMORY_BUDGET_VAR}={value:?}: not a size (a number of bytes, or with a K, M or G suffix: 64M)"
        )),
    }
}

/// Sets the process's memory budget for owned bytes (`None`: back to the environment's or the
/// default). Bytes already in memory stay there; the budget decides where further bytes go.
pub fn set_memory_budget(bytes: Option<u64>) {
    BUDGET_SET.store(bytes.unwrap_or(u64::MAX).min(u64::MAX - 1), Ordering::Relaxed);
}

/// Bytes of owned blobs every live table of the process holds in memory.
pub fn memory_held() -> u64 {
    HELD.load(Ordering::Relaxed)
}

/// `123`, `64K`, `64M`, `1G` (binary units, `KiB`/`MiB`/`GiB` too), in bytes.
fn parse_size(text: &str) -> Option<u64> {
    let text = text.trim();
    let digits = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (number, unit) = text.split_at(digits);
    let shift = match unit.trim().to_ascii_uppercase().as_str() {
        "" | "B" => 0,
        "K" | "KB" | "KIB" => 10,
        "M" | "MB" | "MIB" => 20,
        "G" | "GB" | "GIB" => 30,
        _ => return None,
    };
    number.parse::<u64>().ok()?.checked_mul(1 << shift)
}

/// Takes `n` bytes of the budget, or nothing when they do not fit.
fn take_budget(n: u64) -> bool {
    let budget = memory_budget();
    HELD.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |h| h.checked_add(n).filter(|&t| t <= budget)).is_ok()
}

/// The spill file every table of the process spills into.
#[derive(Debug)]
struct SpillFile {
    file: File,
    /// Where it was created (unlinked since).
    path: PathBuf,
    /// End of the reserved extents.
    end: AtomicU64,
}

impl SpillFile {
    /// The process's spill file, created when no live piece holds one.
    fn shared() -> Result<Arc<SpillFile>, OwnedBytesError> {
        let mut slot = SPILL.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(file) = slot.upgrade() {
            return Ok(file);
        }
        let dir = std::env::temp_dir();
        let named = tempfile::Builder::new()
            .prefix("vzarr-owned-")
            .suffix(".spill")
            .tempfile_in(&dir)
            .map_err(|source| OwnedBytesError::Create { dir, source })?;
        let path = named.path().to_path_buf();
        let file = Arc::new(SpillFile { file: named.into_file(), path, end: AtomicU64::new(0) });
        *slot = Arc::downgrade(&file);
        Ok(file)
    }

    fn error(&self, what: &'static str) -> impl FnOnce(std::io::Error) -> OwnedBytesError + '_ {
        move |source| OwnedBytesError::Spill { path: self.path.clone(), what, source }
    }
}

/// Owned bytes in memory, counted in the process's [`memory_held`] by capacity.
#[derive(Debug, Default)]
struct Held(Vec<u8>);

impl Held {
    /// Appends `bytes` if the capacity needed fits the budget; false (nothing appended) otherwise.
    fn try_extend(&mut self, bytes: &[u8]) -> bool {
        let (len, cap) = (self.0.len() as u64, self.0.capacity() as u64);
        let need = len + bytes.len() as u64;
        if need > cap {
            let doubled = need.max(cap.saturating_mul(2));
            let target = if take_budget(doubled - cap) {
                doubled
            } else if take_budget(need - cap) {
                need
            } else {
                return false;
            };
            self.0.reserve_exact((target - len) as usize);
            let actual = self.0.capacity() as u64;
            if actual > target {
                HELD.fetch_add(actual - target, Ordering::Relaxed);
            }
        }
        self.0.extend_from_slice(bytes);
        true
    }

    fn shrink_to_fit(&mut self) {
        let before = self.0.capacity();
        self.0.shrink_to_fit();
        HELD.fetch_sub((before - self.0.capacity()) as u64, Ordering::Relaxed);
    }
}

impl Clone for Held {
    fn clone(&self) -> Self {
        let bytes = self.0.clone();
        HELD.fetch_add(bytes.capacity() as u64, Ordering::Relaxed);
        Held(bytes)
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        HELD.fetch_sub(self.0.capacity() as u64, Ordering::Relaxed);
    }
}

/// Bytes of a table in the spill file.
#[derive(Debug)]
struct Extent {
    file: Arc<SpillFile>,
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
/// memory within the process's budget and in the shared spill file past it (see the module docs).
#[derive(Clone, Default)]
pub struct OwnedBytes {
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
    /// No bytes.
    pub fn new() -> Self {
        OwnedBytes::default()
    }

    /// `bytes` as a blob: kept as they are when the budget has room for them, spilled otherwise.
    ///
    /// # Errors
    /// [`OwnedBytesError`] when the bytes must spill and the spill file cannot be created or written.
    pub fn from_vec(bytes: Vec<u8>) -> Result<Self, OwnedBytesError> {
        let mut out = OwnedBytes::new();
        if bytes.is_empty() {
            return Ok(out);
        }
        if take_budget(bytes.capacity() as u64) {
            out.pieces.push(Piece { start: 0, data: Data::Memory(Held(bytes)) });
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
                let mut held = Held::default();
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
        let file = SpillFile::shared()?;
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
    pub fn append(&mut self, other: OwnedBytes) {
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

    /// Tests that set the process's budget run one at a time (other tests only push bytes).
    static BUDGET_LOCK: Mutex<()> = Mutex::new(());

    /// Runs `f` under a memory budget of `bytes`.
    fn with_budget<T>(bytes: u64, f: impl FnOnce() -> T) -> T {
        let _guard = BUDGET_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        set_memory_budget(Some(bytes));
        let out = f();
        set_memory_budget(None);
        out
    }

    /// `n` bytes of a pattern seeded by `seed`.
    fn blob(seed: u8, n: usize) -> Vec<u8> {
        (0..n).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect()
    }

    #[test]
    fn memory_and_spilled_bytes_read_back_exactly() {
        for budget in [0, 1 << 30] {
            with_budget(budget, || {
                let mut owned = OwnedBytes::new();
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
        with_budget(0, || {
            let mut table = ChunkTable::missing(64);
            for k in 0..64 {
                let entry = table.push_owned(&blob(k as u8, 64 << 10)).unwrap();
                table.set(k, entry);
            }
            assert_eq!(table.owned.spilled_bytes(), 64 * (64 << 10));
            assert!(table.owned.memory_bytes() < 1024, "{:?}", table.owned);
            // From 64 KiB extents doubling: a few pieces for 4 MiB.
            assert!(table.owned.pieces.len() <= 8, "{:?}", table.owned);
            let from_vec = OwnedBytes::from_vec(blob(1, 1000)).unwrap();
            assert_eq!((from_vec.spilled_bytes(), from_vec.to_vec().unwrap()), (1000, blob(1, 1000)));
        });
    }

    #[test]
    fn memory_stays_within_a_small_budget() {
        with_budget(1 << 20, || {
            let mut owned = OwnedBytes::new();
            for k in 0..64 {
                owned.push(&blob(k, 100_000)).unwrap();
            }
            assert!(owned.memory_bytes() <= (1 << 20) + 1024, "{:?}", owned);
            assert!(memory_held() <= 1 << 20);
            assert_eq!(owned.len(), 6_400_000);
            assert!(owned.spilled_bytes() >= 6_400_000 - (1 << 20));
            let expected: Vec<u8> = (0..64).flat_map(|k| blob(k, 100_000)).collect();
            assert_eq!(owned.to_vec().unwrap(), expected);
        });
    }

    #[test]
    fn concatenation_moves_pieces_and_keeps_offsets() {
        with_budget(150_000, || {
            // a: in memory then spilled; b: spilled; c: from a vector (in memory if room is left).
            let mut a = OwnedBytes::new();
            let (a1, a2) = (blob(1, 100_000), blob(2, 100_000));
            a.push(&a1).unwrap();
            a.push(&a2).unwrap();
            let mut b = OwnedBytes::new();
            let b1 = blob(3, 70_000);
            b.push(&b1).unwrap();
            let c = OwnedBytes::from_vec(blob(4, 10)).unwrap();
            let mut joined = a.clone();
            joined.append(b.clone());
            joined.append(OwnedBytes::new());
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
        with_budget(0, || {
            let mut a = ChunkTable::missing(2);
            let e = a.push_owned(b"hello").unwrap();
            a.set(1, e);
            let mut b = ChunkTable::missing(3);
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
        with_budget(0, || {
            let mut a = OwnedBytes::new();
            a.push(b"abc").unwrap();
            let mut b = a.clone();
            assert_eq!(a, b);
            a.push(b"d").unwrap();
            b.push(b"e").unwrap();
            assert_eq!((a.to_vec().unwrap(), b.to_vec().unwrap()), (b"abcd".to_vec(), b"abce".to_vec()));
            assert_ne!(a, b);
            assert_eq!(OwnedBytes::from_vec(b"abcd".to_vec()).unwrap(), a);
        });
    }

    #[test]
    fn sizes_parse_in_binary_units() {
        assert_eq!(parse_size("0"), Some(0));
        assert_eq!(parse_size("1234"), Some(1234));
        assert_eq!(parse_size("64M"), Some(64 << 20));
        assert_eq!(parse_size(" 2 GiB "), Some(2 << 30));
        assert_eq!(parse_size("8k"), Some(8 << 10));
        assert_eq!(parse_size("lots"), None);
        assert_eq!(parse_size("-1"), None);
    }
}
