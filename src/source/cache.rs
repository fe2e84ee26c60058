//! A block cache with read-ahead in front of any [`ByteSource`], so that the many small reads of a
//! file-format parser (superblock, object headers, heaps, index nodes) cost few requests.
//!
//! Reads are rounded out to aligned blocks; a miss fetches the missing run of blocks plus
//! `read_ahead` bytes in one request. The cache keeps at most `max_bytes` of blocks, evicting the
//! oldest first. Large reads (at least `bypass_bytes`, e.g. whole chunks) go straight to the source
//! and are not cached. Counters report requests and bytes fetched.
//!
//! A remote scan opens with one request for the file's head, whose answer also carries the object's
//! size and fingerprint (no HEAD request): [`CachedSource::primed`] starts the cache with it. A
//! parser that knows which ranges it will read next (the nodes of one level of a chunk index)
//! hands them to [`ByteSource::prefetch`]: those not cached are fetched exactly, as one round of
//! concurrent requests (ranges less than [`COALESCE_GAP`] apart joined), and kept as extents beside
//! the blocks. Counters report requests, bytes and round trips
//! (requests one after another; a prefetch's requests together count as one).

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::{Bytes, BytesMut};

use super::range::{check_range, ByteSource, RangeError};

/// How a [`CachedSource`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheOptions {
    /// Cache block size in bytes. Default: 64 KiB.
    pub block_bytes: u64,
    /// Extra bytes fetched after a miss, in whole blocks. Default: 192 KiB.
    pub read_ahead: u64,
    /// Most bytes kept. Default: 16 MiB.
    pub max_bytes: u64,
    /// Reads of at least this many bytes bypass the cache. Default: 1 MiB.
    pub bypass_bytes: u64,
    /// Whether [`ByteSource::prefetch`] fetches ahead (worth it where requests cost a round trip,
    /// not for local files). Default: true.
    pub prefetch: bool,
}

impl CacheOptions {
    /// For local files, where a read is a cheap system call: small blocks and no read-ahead, so that
    /// scanning a file's metadata copies little more than the metadata (a file whose chunk index is
    /// spread through it is not read whole).
    pub fn local() -> Self {
        CacheOptions { block_bytes: 8 << 10, read_ahead: 0, prefetch: false, ..CacheOptions::default() }
    }

    /// For object stores, where every request costs a round trip and every byte counts: 4 KiB
    /// blocks, 12 KiB read after a miss (metadata written together is fetched together) and
    /// prefetching on. A file's first request asks for `REMOTE_HEAD_BYTES`.
    pub fn remote() -> Self {
        CacheOptions { block_bytes: 4 << 10, read_ahead: 12 << 10, ..CacheOptions::default() }
    }
}

/// The most a read-ahead grows to while misses follow one another through a file.
const MAX_READ_AHEAD: u64 = 1 << 20;

/// Bytes of a remote file fetched by its first request (superblock, root group and, in most
/// files, the object headers written with them) until the scan has learnt better from the files
/// before it (see [`FetchTotals::head_bytes`]).
pub(crate) const REMOTE_HEAD_BYTES: u64 = 16 << 10;

/// The first requests of a scan's files: never fewer bytes than this ...
const MIN_HEAD_BYTES: u64 = 4 << 10;
/// ... nor more than this; reads starting below it are the front that [`CachedSource::front`]
/// measures.
const MAX_HEAD_BYTES: u64 = 64 << 10;

impl Default for CacheOptions {
    fn default() -> Self {
        CacheOptions {
            block_bytes: 64 << 10,
            read_ahead: 192 << 10,
            max_bytes: 16 << 20,
            bypass_bytes: 1 << 20,
            prefetch: true,
        }
    }
}

/// Requests made and bytes fetched through a [`CachedSource`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FetchStats {
    /// Requests sent to the underlying source.
    pub requests: u64,
    /// Bytes fetched from it.
    pub bytes: u64,
    /// Round trips: requests that waited for the one before, a prefetch's requests counting once.
    pub rounds: u64,
}

/// Totals over many sources (the remote objects of a whole scan), shared between threads.
#[derive(Debug, Default)]
pub struct FetchTotals {
    objects: AtomicU64,
    object_bytes: AtomicU64,
    requests: AtomicU64,
    bytes: AtomicU64,
    rounds: AtomicU64,
    /// The longest front of a file read so far (0: none yet).
    front: AtomicU64,
}

impl FetchTotals {
    /// Bytes a file's first request should ask for: the longest front (the bytes from the start
    /// to the end of the last read starting in the first 64 KiB) of the files scanned so far with
    /// these totals, rounded up to 1 KiB and kept within 4 to 64 KiB; `REMOTE_HEAD_BYTES` before
    /// the first. Files of one archive are written alike, so after the first files the head holds
    /// what a file's structure needs and no more.
    pub fn head_bytes(&self) -> u64 {
        match self.front.load(Ordering::Relaxed) {
            0 => REMOTE_HEAD_BYTES,
            front => front.div_ceil(1 << 10).saturating_mul(1 << 10).clamp(MIN_HEAD_BYTES, MAX_HEAD_BYTES),
        }
    }

    /// Learns the front of one scanned file ([`CachedSource::front`]).
    pub fn learn_front(&self, front: u64) {
        self.front.fetch_max(front, Ordering::Relaxed);
    }

    /// Counts one object of `size` bytes, read with `stats`.
    pub fn add(&self, size: u64, stats: FetchStats) {
        self.objects.fetch_add(1, Ordering::Relaxed);
        self.object_bytes.fetch_add(size, Ordering::Relaxed);
        self.requests.fetch_add(stats.requests, Ordering::Relaxed);
        self.bytes.fetch_add(stats.bytes, Ordering::Relaxed);
        self.rounds.fetch_add(stats.rounds, Ordering::Relaxed);
    }

    /// Objects counted so far.
    pub fn objects(&self) -> u64 {
        self.objects.load(Ordering::Relaxed)
    }

    /// Their sizes, summed.
    pub fn object_bytes(&self) -> u64 {
        self.object_bytes.load(Ordering::Relaxed)
    }

    /// Requests sent, bytes fetched for them and round trips.
    pub fn stats(&self) -> FetchStats {
        FetchStats {
            requests: self.requests.load(Ordering::Relaxed),
            bytes: self.bytes.load(Ordering::Relaxed),
            rounds: self.rounds.load(Ordering::Relaxed),
        }
    }
}

/// Prefetched ranges closer than this are fetched as one.
pub(crate) const COALESCE_GAP: u64 = 1 << 10;

#[derive(Default)]
struct Blocks {
    blocks: HashMap<u64, Bytes>,
    order: VecDeque<u64>,
    /// Prefetched ranges by their start, oldest first in `extent_order`, `extent_bytes` in all.
    extents: BTreeMap<u64, Bytes>,
    extent_order: VecDeque<u64>,
    extent_bytes: u64,
    /// Where the last miss's fetch ended and the read-ahead it used: a miss starting there reads
    /// on through the file (a header longer than a read-ahead), so its read-ahead doubles.
    streak: (u64, u64),
}

/// A [`ByteSource`] with a block cache and read-ahead in front of another.
pub struct CachedSource {
    inner: Arc<dyn ByteSource>,
    options: CacheOptions,
    blocks: Mutex<Blocks>,
    requests: AtomicU64,
    bytes: AtomicU64,
    rounds: AtomicU64,
    front: AtomicU64,
}

impl CachedSource {
    /// Wraps `inner`. Block size and budgets of zero are raised to one block.
    pub fn new(inner: Arc<dyn ByteSource>, options: CacheOptions) -> Self {
        let block_bytes = options.block_bytes.max(1);
        let options = CacheOptions { block_bytes, max_bytes: options.max_bytes.max(block_bytes), ..options };
        CachedSource {
            inner,
            options,
            blocks: Mutex::new(Blocks::default()),
            requests: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            rounds: AtomicU64::new(0),
            front: AtomicU64::new(0),
        }
    }

    /// The end of the last byte read (not fetched ahead) by a read that started in the first
    /// 64 KiB: how much of the file's start its structure took.
    pub fn front(&self) -> u64 {
        self.front.load(Ordering::Relaxed)
    }

    /// Wraps `inner` whose first `head.len()` bytes were fetched by the caller in one request
    /// (counted here): the cache starts with them (as a prefetched extent), and with the whole
    /// blocks among them.
    pub fn primed(inner: Arc<dyn ByteSource>, options: CacheOptions, head: &Bytes) -> Self {
        let cached = CachedSource::new(inner, options);
        cached.requests.store(1, Ordering::Relaxed);
        cached.rounds.store(1, Ordering::Relaxed);
        cached.bytes.store(head.len() as u64, Ordering::Relaxed);
        let (block, size) = (cached.options.block_bytes as usize, cached.inner.len());
        let mut guard = cached.blocks();
        for (index, start) in (0..head.len()).step_by(block).enumerate() {
            let end = (start + block).min(head.len());
            if end - start == block || end as u64 == size {
                guard.insert(index as u64, head.slice(start..end), &cached.options);
            }
        }
        if !head.len().is_multiple_of(block) {
            guard.insert_extent(0, head.clone(), &cached.options);
        }
        drop(guard);
        cached
    }

    /// Requests, bytes and round trips so far.
    pub fn stats(&self) -> FetchStats {
        FetchStats {
            requests: self.requests.load(Ordering::Relaxed),
            bytes: self.bytes.load(Ordering::Relaxed),
            rounds: self.rounds.load(Ordering::Relaxed),
        }
    }

    fn fetch(&self, offset: u64, length: u64) -> Result<Bytes, RangeError> {
        self.requests.fetch_add(1, Ordering::Relaxed);
        self.bytes.fetch_add(length, Ordering::Relaxed);
        self.rounds.fetch_add(1, Ordering::Relaxed);
        self.inner.read_range(offset, length)
    }

    fn blocks(&self) -> std::sync::MutexGuard<'_, Blocks> {
        // A panic while holding the lock leaves only a cache behind: keep using it.
        self.blocks.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Fetches blocks `first..=last` (those missing, plus read-ahead) and returns them all.
    fn load(&self, first: u64, last: u64) -> Result<Vec<Bytes>, RangeError> {
        let block = self.options.block_bytes;
        let size = self.inner.len();
        let cached: Vec<Option<Bytes>> = {
            let guard = self.blocks();
            (first..=last).map(|b| guard.blocks.get(&b).cloned()).collect()
        };
        let Some(miss) = cached.iter().position(Option::is_none) else {
            return Ok(cached.into_iter().flatten().collect());
        };
        let start = (first + miss as u64) * block;
        let base = self.options.read_ahead.div_ceil(block) * block;
        let ahead = match self.blocks().streak {
            (end, ahead) if end == start && ahead > 0 => (ahead * 2).min(MAX_READ_AHEAD.max(base)),
            _ => base,
        };
        let mut end = ((last + 1) * block).saturating_add(ahead).min(size);
        {
            // The read-ahead stops at the first block already cached.
            let guard = self.blocks();
            if let Some(cached) = (last + 1..end.div_ceil(block)).find(|b| guard.blocks.contains_key(b)) {
                end = cached * block;
            }
        }
        let fetched = self.fetch(start, end - start)?;
        let mut guard = self.blocks();
        guard.streak = (end, ahead);
        let mut out = Vec::with_capacity(cached.len());
        for (i, hit) in cached.into_iter().enumerate() {
            out.push(hit.unwrap_or_else(|| {
                let at = ((first + i as u64) * block - start) as usize;
                fetched.slice(at..(at + block as usize).min(fetched.len()))
            }));
        }
        let mut b = start / block;
        while b * block < end {
            let at = (b * block - start) as usize;
            guard.insert(b, fetched.slice(at..(at + block as usize).min(fetched.len())), &self.options);
            b += 1;
        }
        Ok(out)
    }
}

impl Blocks {
    fn insert(&mut self, index: u64, bytes: Bytes, options: &CacheOptions) {
        if self.blocks.insert(index, bytes).is_none() {
            self.order.push_back(index);
        }
        self.evict(options);
    }

    /// Keeps a prefetched range.
    fn insert_extent(&mut self, start: u64, bytes: Bytes, options: &CacheOptions) {
        self.extent_bytes += bytes.len() as u64;
        if let Some(old) = self.extents.insert(start, bytes) {
            self.extent_bytes -= old.len() as u64;
        } else {
            self.extent_order.push_back(start);
        }
        self.evict(options);
    }

    /// Drops the oldest blocks, then the oldest extents, while more than the budget is kept.
    fn evict(&mut self, options: &CacheOptions) {
        while self.order.len() as u64 * options.block_bytes + self.extent_bytes > options.max_bytes {
            if let Some(old) = self.order.pop_front() {
                self.blocks.remove(&old);
            } else if let Some(old) = self.extent_order.pop_front() {
                self.extent_bytes -= self.extents.remove(&old).map_or(0, |b| b.len() as u64);
            } else {
                break;
            }
        }
    }

    /// `length` bytes at `offset` if one prefetched extent holds them all.
    fn extent(&self, offset: u64, length: u64) -> Option<Bytes> {
        let (&start, bytes) = self.extents.range(..=offset).next_back()?;
        let at = (offset - start) as usize;
        (at as u64 + length <= bytes.len() as u64).then(|| bytes.slice(at..at + length as usize))
    }

    /// `length` bytes at `offset` if the cache holds them all (in one extent or in blocks).
    fn get(&self, offset: u64, length: u64, block: u64) -> Option<Bytes> {
        if let Some(bytes) = self.extent(offset, length) {
            return Some(bytes);
        }
        let (first, last) = (offset / block, (offset + length.max(1) - 1) / block);
        let mut out = BytesMut::with_capacity(length as usize);
        for b in first..=last {
            let bytes = self.blocks.get(&b)?;
            let from = if b == first { (offset - first * block) as usize } else { 0 };
            let take = (bytes.len().saturating_sub(from)).min(length as usize - out.len());
            out.extend_from_slice(bytes.get(from..from + take)?);
        }
        (out.len() as u64 == length).then(|| out.freeze())
    }
}

impl ByteSource for CachedSource {
    fn location(&self) -> &str {
        self.inner.location()
    }

    fn len(&self) -> u64 {
        self.inner.len()
    }

    fn read_range(&self, offset: u64, length: u64) -> Result<Bytes, RangeError> {
        check_range(self.location(), offset, length, self.len())?;
        if length == 0 {
            return Ok(Bytes::new());
        }
        if offset < MAX_HEAD_BYTES {
            self.front.fetch_max(offset + length, Ordering::Relaxed);
        }
        if let Some(bytes) = self.blocks().extent(offset, length) {
            return Ok(bytes);
        }
        if length >= self.options.bypass_bytes {
            return self.fetch(offset, length);
        }
        let block = self.options.block_bytes;
        let (first, last) = (offset / block, (offset + length - 1) / block);
        let blocks = self.load(first, last)?;
        let skip = (offset - first * block) as usize;
        if blocks.len() == 1 {
            return Ok(blocks[0].slice(skip..skip + length as usize));
        }
        let mut out = BytesMut::with_capacity(length as usize);
        let mut remaining = length as usize;
        for (i, bytes) in blocks.iter().enumerate() {
            let from = if i == 0 { skip } else { 0 };
            let take = (bytes.len() - from).min(remaining);
            out.extend_from_slice(&bytes[from..from + take]);
            remaining -= take;
        }
        Ok(out.freeze())
    }

    fn prefetch(&self, ranges: &[(u64, u64)]) -> Result<bool, RangeError> {
        if !self.options.prefetch {
            return Ok(false);
        }
        let (block, size) = (self.options.block_bytes, self.inner.len());
        let mut wanted: Vec<(u64, u64)> = {
            let guard = self.blocks();
            ranges
                .iter()
                .map(|&(offset, length)| (offset, offset.saturating_add(length).min(size)))
                .filter(|&(start, end)| start < end && guard.get(start, end - start, block).is_none())
                .collect()
        };
        wanted.sort_unstable();
        let mut spans: Vec<(u64, u64)> = Vec::new();
        for (start, end) in wanted {
            match spans.last_mut() {
                Some((_, last)) if start <= last.saturating_add(COALESCE_GAP) => *last = (*last).max(end),
                _ => spans.push((start, end)),
            }
        }
        if spans.is_empty() {
            return Ok(true);
        }
        let spans: Vec<(u64, u64)> = spans.into_iter().map(|(start, end)| (start, end - start)).collect();
        self.requests.fetch_add(spans.len() as u64, Ordering::Relaxed);
        self.bytes.fetch_add(spans.iter().map(|s| s.1).sum::<u64>(), Ordering::Relaxed);
        self.rounds.fetch_add(1, Ordering::Relaxed);
        let fetched = self.inner.read_ranges(&spans)?;
        let mut guard = self.blocks();
        for (&(start, _), bytes) in spans.iter().zip(fetched) {
            guard.insert_extent(start, bytes, &self.options);
        }
        Ok(true)
    }

    fn read_cached(&self, offset: u64, length: u64) -> Option<Bytes> {
        self.blocks().get(offset, length, self.options.block_bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Memory(Vec<u8>);

    impl ByteSource for Memory {
        fn location(&self) -> &str {
            "memory"
        }
        fn len(&self) -> u64 {
            self.0.len() as u64
        }
        fn read_range(&self, offset: u64, length: u64) -> Result<Bytes, RangeError> {
            check_range("memory", offset, length, self.len())?;
            Ok(Bytes::copy_from_slice(&self.0[offset as usize..(offset + length) as usize]))
        }
    }

    fn source(len: usize, options: CacheOptions) -> (Vec<u8>, CachedSource) {
        let data: Vec<u8> = (0..len).map(|i| (i * 7 % 251) as u8).collect();
        let cached = CachedSource::new(Arc::new(Memory(data.clone())), options);
        (data, cached)
    }

    #[test]
    fn every_read_returns_the_source_bytes() {
        let options =
            CacheOptions { block_bytes: 16, read_ahead: 32, max_bytes: 64, bypass_bytes: 100, prefetch: true };
        let (data, cached) = source(1000, options);
        let reads = [(0u64, 1u64), (5, 40), (15, 2), (990, 10), (100, 150), (37, 64), (999, 1), (0, 1000)];
        for (offset, length) in reads {
            let got = cached.read_range(offset, length).unwrap();
            assert_eq!(&got[..], &data[offset as usize..(offset + length) as usize], "{offset}+{length}");
        }
        assert!(cached.read_range(999, 2).is_err());
    }

    #[test]
    fn a_primed_cache_serves_its_head_without_requests() {
        let options =
            CacheOptions { block_bytes: 16, read_ahead: 32, max_bytes: 1024, bypass_bytes: 100, prefetch: true };
        let data: Vec<u8> = (0..100).map(|i| (i * 7 % 251) as u8).collect();
        let inner: Arc<dyn ByteSource> = Arc::new(Memory(data.clone()));
        // 40 bytes fetched by the caller: blocks 0 and 1 are whole, the 8 bytes of block 2 are not,
        // but the head is kept whole.
        let cached = CachedSource::primed(inner.clone(), options, &Bytes::copy_from_slice(&data[..40]));
        assert_eq!(cached.read_range(3, 29).unwrap(), &data[3..32]);
        assert_eq!(cached.stats(), FetchStats { requests: 1, bytes: 40, rounds: 1 });
        assert_eq!(cached.read_range(30, 10).unwrap(), &data[30..40]);
        assert_eq!(cached.stats().requests, 1, "the head's last 8 bytes are kept too");
        assert_eq!(cached.front(), 40);
        assert_eq!(cached.read_range(35, 10).unwrap(), &data[35..45]);
        assert_eq!(cached.stats().requests, 2, "past the head: block 2 is fetched");
        // A head that is the whole (short) source ends in a short block, which is kept.
        let short: Arc<dyn ByteSource> = Arc::new(Memory(data[..20].to_vec()));
        let cached = CachedSource::primed(short, options, &Bytes::copy_from_slice(&data[..20]));
        assert_eq!(cached.read_range(0, 20).unwrap(), &data[..20]);
        assert_eq!(cached.stats().requests, 1);
    }

    #[test]
    fn small_reads_share_one_request() {
        let (_, cached) = source(1 << 20, CacheOptions::default());
        for offset in (0..100_000).step_by(1000) {
            cached.read_range(offset, 200).unwrap();
        }
        // 100 KB of small reads within the first block plus read-ahead (256 KiB): one request.
        assert_eq!(cached.stats().requests, 1);
        assert_eq!(cached.stats().bytes, 256 << 10);
    }

    #[test]
    fn a_prefetch_is_one_round_and_later_reads_cost_nothing() {
        let options =
            CacheOptions { block_bytes: 16, read_ahead: 32, max_bytes: 4096, bypass_bytes: 1000, prefetch: true };
        let (data, cached) = source(3995, options);
        // Exactly the ranges, those less than COALESCE_GAP apart joined (with the bytes between);
        // the last one is cut at the end of the source.
        let ranges = [(20, 20), (0, 10), (1000, 16), (3000, 20), (3985, 10)];
        assert!(cached.prefetch(&ranges).unwrap());
        assert_eq!(cached.stats(), FetchStats { requests: 2, bytes: 1016 + 995, rounds: 1 });
        for (offset, length) in ranges {
            let got = cached.read_range(offset, length).unwrap();
            assert_eq!(&got[..], &data[offset as usize..(offset + length) as usize], "{offset}+{length}");
        }
        assert_eq!(cached.stats().rounds, 1, "every prefetched range is served from the cache");
        assert_eq!(cached.read_cached(100, 900).unwrap(), &data[100..1000]);
        assert_eq!(cached.read_cached(1010, 10), None, "past the first extent");
        // What is cached is not asked for again; a source without prefetching fetches nothing ahead.
        cached.prefetch(&ranges).unwrap();
        assert_eq!(cached.stats().requests, 2);
        let (_, lazy) = source(3995, CacheOptions { prefetch: false, ..options });
        assert!(!lazy.prefetch(&ranges).unwrap());
        assert_eq!(lazy.stats(), FetchStats::default());
    }

    #[test]
    fn misses_that_read_on_through_the_file_double_the_read_ahead() {
        let options =
            CacheOptions { block_bytes: 16, read_ahead: 16, max_bytes: 1 << 20, bypass_bytes: 1 << 20, prefetch: true };
        let (data, cached) = source(10_000, options);
        // One byte at a time from the start, as a parser of a long header reads: fetches of 32,
        // 48, 80, 144, ... bytes (the block asked for plus a read-ahead of 16, 32, 64, 128, ...).
        for offset in 0..2000u64 {
            assert_eq!(cached.read_range(offset, 1).unwrap()[0], data[offset as usize]);
        }
        assert_eq!(cached.stats().requests, 7, "{:?}", cached.stats());
        // A miss elsewhere starts again from the configured read-ahead.
        cached.read_range(5000, 1).unwrap();
        assert_eq!(cached.stats().bytes, 2144 + 32);
    }
}
