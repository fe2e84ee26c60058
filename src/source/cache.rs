//! A block cache with read-ahead in front of any [`ByteSource`], so that the many small reads of a
//! file-format parser (superblock, object headers, heaps, index nodes) cost few requests.
//!
//! Reads are rounded out to aligned blocks; a miss fetches the missing run of blocks plus
//! `read_ahead` bytes in one request. The cache keeps at most `max_bytes` of blocks, evicting the
//! oldest first. Large reads (at least `bypass_bytes`, e.g. whole chunks) go straight to the source
//! and are not cached. Counters report requests and bytes fetched.
//!
//! A remote scan opens with one request for the first block, whose answer also carries the object's
//! size and fingerprint (no HEAD request): [`CachedSource::primed`] starts the cache with it.

use std::collections::{HashMap, VecDeque};
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
}

impl CacheOptions {
    /// For local files, where a read is a cheap system call: small blocks and no read-ahead, so that
    /// scanning a file's metadata copies little more than the metadata (a file whose chunk index is
    /// spread through it is not read whole).
    pub fn local() -> Self {
        CacheOptions { block_bytes: 8 << 10, read_ahead: 0, ..CacheOptions::default() }
    }
}

impl Default for CacheOptions {
    fn default() -> Self {
        CacheOptions { block_bytes: 64 << 10, read_ahead: 192 << 10, max_bytes: 16 << 20, bypass_bytes: 1 << 20 }
    }
}

/// Requests made and bytes fetched through a [`CachedSource`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FetchStats {
    /// Requests sent to the underlying source.
    pub requests: u64,
    /// Bytes fetched from it.
    pub bytes: u64,
}

/// Totals over many sources (the remote objects of a whole scan), shared between threads.
#[derive(Debug, Default)]
pub struct FetchTotals {
    objects: AtomicU64,
    object_bytes: AtomicU64,
    requests: AtomicU64,
    bytes: AtomicU64,
}

impl FetchTotals {
    /// Counts one object of `size` bytes, read with `stats`.
    pub fn add(&self, size: u64, stats: FetchStats) {
        self.objects.fetch_add(1, Ordering::Relaxed);
        self.object_bytes.fetch_add(size, Ordering::Relaxed);
        self.requests.fetch_add(stats.requests, Ordering::Relaxed);
        self.bytes.fetch_add(stats.bytes, Ordering::Relaxed);
    }

    /// Objects counted so far.
    pub fn objects(&self) -> u64 {
        self.objects.load(Ordering::Relaxed)
    }

    /// Their sizes, summed.
    pub fn object_bytes(&self) -> u64 {
        self.object_bytes.load(Ordering::Relaxed)
    }

    /// Requests sent and bytes fetched for them.
    pub fn stats(&self) -> FetchStats {
        FetchStats { requests: self.requests.load(Ordering::Relaxed), bytes: self.bytes.load(Ordering::Relaxed) }
    }
}

#[derive(Default)]
struct Blocks {
    blocks: HashMap<u64, Bytes>,
    order: VecDeque<u64>,
}

/// A [`ByteSource`] with a block cache and read-ahead in front of another.
pub struct CachedSource {
    inner: Arc<dyn ByteSource>,
    options: CacheOptions,
    blocks: Mutex<Blocks>,
    requests: AtomicU64,
    bytes: AtomicU64,
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
        }
    }

    /// Wraps `inner` whose first `head.len()` bytes were fetched by the caller in one request
    /// (counted here): the cache starts with the whole blocks among them, and with a short last one
    /// only where it ends the source.
    pub fn primed(inner: Arc<dyn ByteSource>, options: CacheOptions, head: &Bytes) -> Self {
        let cached = CachedSource::new(inner, options);
        cached.requests.store(1, Ordering::Relaxed);
        cached.bytes.store(head.len() as u64, Ordering::Relaxed);
        let (block, size) = (cached.options.block_bytes as usize, cached.inner.len());
        let mut guard = cached.blocks();
        for (index, start) in (0..head.len()).step_by(block).enumerate() {
            let end = (start + block).min(head.len());
            if end - start == block || end as u64 == size {
                guard.insert(index as u64, head.slice(start..end), &cached.options);
            }
        }
        drop(guard);
        cached
    }

    /// Requests and bytes fetched so far.
    pub fn stats(&self) -> FetchStats {
        FetchStats { requests: self.requests.load(Ordering::Relaxed), bytes: self.bytes.load(Ordering::Relaxed) }
    }

    fn fetch(&self, offset: u64, length: u64) -> Result<Bytes, RangeError> {
        self.requests.fetch_add(1, Ordering::Relaxed);
        self.bytes.fetch_add(length, Ordering::Relaxed);
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
        let ahead = self.options.read_ahead.div_ceil(block) * block;
        let end = ((last + 1) * block).saturating_add(ahead).min(size);
        let fetched = self.fetch(start, end - start)?;
        let mut guard = self.blocks();
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
        while self.order.len() as u64 * options.block_bytes > options.max_bytes {
            if let Some(old) = self.order.pop_front() {
                self.blocks.remove(&old);
            }
        }
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
        let options = CacheOptions { block_bytes: 16, read_ahead: 32, max_bytes: 64, bypass_bytes: 100 };
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
        let options = CacheOptions { block_bytes: 16, read_ahead: 32, max_bytes: 1024, bypass_bytes: 100 };
        let data: Vec<u8> = (0..100).map(|i| (i * 7 % 251) as u8).collect();
        let inner: Arc<dyn ByteSource> = Arc::new(Memory(data.clone()));
        // 40 bytes fetched by the caller: blocks 0 and 1 are whole, the 8 bytes of block 2 are not.
        let cached = CachedSource::primed(inner.clone(), options, &Bytes::copy_from_slice(&data[..40]));
        assert_eq!(cached.read_range(3, 29).unwrap(), &data[3..32]);
        assert_eq!(cached.stats(), FetchStats { requests: 1, bytes: 40 });
        assert_eq!(cached.read_range(30, 10).unwrap(), &data[30..40]);
        assert_eq!(cached.stats().requests, 2, "block 2 was incomplete, so it is fetched");
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
}
