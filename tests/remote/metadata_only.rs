//! Remote scans fetch metadata only (issue 27, item 4): a NetCDF-4 file of small chunks, whose
//! chunk index nodes libhdf5 spreads through the file among the chunks, is scanned through the
//! remote block cache over a source that records every request. The scan costs at most 3 round
//! trips (the head, then one per level of the chunk index, every dataset's nodes of a level
//! together) and at most 10% of the file's bytes, and finds the same references as a local scan
//! of the file (whose values the other suites prove equal to libnetcdf's) and the time coordinate
//! libnetcdf reads.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use vzarr::scan::{ByteSource, CacheOptions, CachedSource, FetchTotals, LocalFile, RangeError};
use vzarr::ScanOptions;

/// A day of sea surface temperature as `benches/common` writes it: `sst(time, lat, lon)` int16 in
/// deflated 1 x 30 x 30 chunks of about 2 KB (`lat` x `lon` given), and an unlimited `time`.
pub fn write_small_chunks(dir: &Path, name: &str, lat: usize, lon: usize) -> PathBuf {
    let path = dir.join(name);
    let mut f = netcdf::create(&path).unwrap();
    f.add_unlimited_dimension("time").unwrap();
    f.add_dimension("lat", lat).unwrap();
    f.add_dimension("lon", lon).unwrap();
    let mut time = f.add_variable::<f64>("time", &["time"]).unwrap();
    time.put_attribute("units", "days since 2020-01-01").unwrap();
    time.put_values(&[name.len() as f64], (0..1,)).unwrap();
    let mut sst = f.add_variable::<i16>("sst", &["time", "lat", "lon"]).unwrap();
    sst.set_chunking(&[1, 30, 30]).unwrap();
    sst.set_compression(1, true).unwrap();
    let values: Vec<i16> = (0..lat * lon)
        .map(|i| {
            let (y, x) = ((i / lon) as f32, (i % lon) as f32);
            (1500.0 + 1000.0 * (y / 40.0).sin() * (x / 70.0).cos() + (i % 7) as f32) as i16
        })
        .collect();
    sst.put_values(&values, [0..1, 0..lat, 0..lon]).unwrap();
    f.close().unwrap();
    path
}

/// A local file read as a remote one would be, counting round trips: each `read_range` waits for
/// its answer (one round trip), the ranges of one `read_ranges` are sent together (one).
struct Recorder {
    file: LocalFile,
    rounds: AtomicU64,
    requests: AtomicU64,
    bytes: AtomicU64,
}

impl ByteSource for Recorder {
    fn location(&self) -> &str {
        self.file.location()
    }
    fn len(&self) -> u64 {
        self.file.len()
    }
    fn read_range(&self, offset: u64, length: u64) -> Result<Bytes, RangeError> {
        self.read_ranges(&[(offset, length)]).map(|mut got| got.remove(0))
    }
    fn read_ranges(&self, ranges: &[(u64, u64)]) -> Result<Vec<Bytes>, RangeError> {
        self.rounds.fetch_add(1, Ordering::SeqCst);
        self.requests.fetch_add(ranges.len() as u64, Ordering::SeqCst);
        self.bytes.fetch_add(ranges.iter().map(|r| r.1).sum(), Ordering::SeqCst);
        ranges.iter().map(|&(offset, length)| self.file.read_range(offset, length)).collect()
    }
}

/// Scans `path` as `scan_url` does (head, then the remote block cache over `recorder`), learning
/// its front into `totals`; returns the round trips, requests and bytes the source saw.
fn scan_recorded(path: &Path, totals: &FetchTotals) -> (u64, u64, u64) {
    let recorder = Arc::new(Recorder {
        file: LocalFile::open(path).unwrap(),
        rounds: AtomicU64::new(0),
        requests: AtomicU64::new(0),
        bytes: AtomicU64::new(0),
    });
    let head = recorder.read_range(0, totals.head_bytes().min(recorder.len())).unwrap();
    let inner: Arc<dyn ByteSource> = recorder.clone();
    let cached = Arc::new(CachedSource::primed(inner, CacheOptions::remote(), &head));
    let fingerprint = vzarr::read::fingerprint(path).unwrap();
    let options = ScanOptions { concat_dims: vec!["time".into()], ..ScanOptions::default() };
    let ours = vzarr::scan::scan_hdf5(path, cached.clone(), fingerprint, &options).unwrap();
    let theirs = crate::common::scan(path, &options).unwrap();
    assert_eq!(ours.arrays.len(), theirs.arrays.len());
    for (a, b) in ours.arrays.iter().zip(&theirs.arrays) {
        assert_eq!((&a.path, &a.metadata, &a.chunks), (&b.path, &b.metadata, &b.chunks), "{}", path.display());
    }
    assert_eq!(ours.concat, theirs.concat);
    // The concatenation coordinate (its chunk fetched with the index) is libnetcdf's.
    let time = crate::common::oracle_read(path, "time", None);
    let time: Vec<f64> = time.chunks_exact(8).map(|b| f64::from_ne_bytes(b.try_into().unwrap())).collect();
    assert_eq!(ours.concat.iter().map(|c| c.values.to_vec()).collect::<Vec<_>>(), vec![time]);
    totals.learn_front(cached.front());
    let seen = (
        recorder.rounds.load(Ordering::SeqCst),
        recorder.requests.load(Ordering::SeqCst),
        recorder.bytes.load(Ordering::SeqCst),
    );
    // The cache's own counters agree with what the source saw.
    let stats = cached.stats();
    assert_eq!((stats.rounds, stats.requests, stats.bytes), seen);
    seen
}

#[test]
fn small_chunk_files_cost_three_round_trips_and_a_tenth_of_their_bytes() {
    let dir = tempfile::tempdir().unwrap();
    // 288 chunks (a two-level index) and 1152 chunks (two levels, a wider root), two files each.
    for (lat, lon) in [(360, 720), (720, 1440)] {
        let files = crate::common::with_hdf5_files(|| {
            [1, 2].map(|day| write_small_chunks(dir.path(), &format!("sst_{lat}_{day}.nc"), lat, lon))
        });
        let totals = FetchTotals::default();
        for (i, path) in files.iter().enumerate() {
            let size = std::fs::metadata(path).unwrap().len();
            let (rounds, requests, bytes) = scan_recorded(path, &totals);
            eprintln!("{}: {rounds} round trips, {requests} requests, {bytes} of {size} bytes", path.display());
            assert!(rounds <= 3, "{}: {rounds} round trips", path.display());
            // The first file's head is a guess; the next asks for what the first's structure took.
            if i > 0 {
                assert!(bytes * 10 <= size, "{}: fetched {bytes} of {size} bytes", path.display());
            }
        }
    }
}
