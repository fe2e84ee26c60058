//! Icechunk benchmark: committing one array of n virtual references (1,000 chunks per source file)
//! to a new Icechunk repository (`write_icechunk`, manifests of `DEFAULT_MANIFEST_CHUNKS`) against
//! writing the same dataset as a native store (`NativeWriter`), in the same run: time and peak
//! memory growth of each, and their ratios. Then an append-sized update on top of the repository
//! (`read_branch` + `update_icechunk` adding one more source file's 1,000 chunks), which records only
//! the new chunks.
//!
//! Peak memory is the growth of the process's peak resident set (`VmHWM`, reset before each step
//! through `/proc/self/clear_refs`). The native writer streams the in-memory dataset and adds next
//! to nothing, so the Icechunk peak is also given as a multiple of the dataset's own size (its chunk
//! entries).
//!
//! Measured (2 shared cores, local disk, manifests of 2^20 chunks):
//! - through Icechunk's session (every reference in its change set, each location compressed on
//!   its own), committed as a chain of rounds of 2^20 chunks: 10^6 references 2.9 s and +0.68 GB;
//!   10^7 38.7 s (187x the native writer's 0.21 s) and +0.85 GB; amending one commit instead was
//!   quadratic (10^7: 76 s, +4.1 GB);
//! - manifests and transaction log built by vzarr (`store/icechunk/manifests`, `snapshot`,
//!   `transaction_log`), one snapshot: 10^6 references 0.32 s and +0.1 GB; 10^7 in 10 manifests
//!   3.0-3.5 s (13-15x the native writer's 0.23-0.27 s) and +0.41-0.46 GB (1.8-2x the 0.23 GB
//!   dataset itself). What remains is the format's own cost: a flatbuffer table per reference in
//!   the manifests and another in the transaction log, about 0.75 GB for 10^7, zstd-compressed;
//! - an update commit of 1,000 new references on top of 10^7: 6.6-7.6 s and +1.0 GB, of which
//!   5.9 s reading the branch's 10^7 references back (`read_branch`, through Icechunk's chunk
//!   iterator: a location string per reference) and 1.7 s committing (Icechunk rewrites the one
//!   manifest holding the last row, 2^20 references); the change set holds only the new ones;
//! - open + read one chunk, read lazily (machine busy compiling): with manifests of 2^20 references,
//!   10^7 references 0.34 s and +52 MiB (10^6: 0.39 s, +75 MiB), against 6.6 s and 1.1 GB through the
//!   whole-branch copy it replaced; one manifest of 2^20 references is decoded per block. With the
//!   default manifests of 2^16: 10^7 references 17.5 ms, +0 MiB (10^6: 26-59 ms); the commit of 10^7
//!   3.3 s in 153 manifests, +329 MiB (35 bytes/ref); the update commit 4.9 s (3.8 s reading the
//!   branch, 1.0 s committing: the one manifest rewritten is 16 times smaller).
//!
//! Then opening each store and reading one chunk in the middle of the array (`Store::open_with`,
//! `ArrayReader::read`, a fresh store each time): the repository is read lazily (its snapshot, then
//! the one manifest holding the chunk), the native store reads its summary and one manifest block.
//!
//! Run: `cargo bench --bench icechunk [-- --refs 100000,1000000,10000000] [--manifest-chunks N]` (the
//! default list, manifests of [`DEFAULT_MANIFEST_CHUNKS`](vzarr::formats::DEFAULT_MANIFEST_CHUNKS)).

mod common;

use std::time::Instant;

use vzarr::dataset::DataType;
use vzarr::dataset::VirtualDataset;
use vzarr::dataset::{ChunkEntry, SourceFile};
use vzarr::formats::read_branch;
use vzarr::formats::{update_icechunk, write_icechunk, IcechunkOptions, NativeWriter};
use vzarr::formats::{WriteOptions, Writer};
use vzarr::grid::ChunkGrid;

/// Chunks per (synthetic) source file, and per row of the array.
const PER_FILE: u64 = 1000;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if !args.iter().any(|a| a == "--bench") {
        return; // built and run by `cargo test --all-targets`: nothing to measure there
    }
    let sizes: Vec<u64> = args
        .iter()
        .position(|a| a == "--refs")
        .and_then(|i| args.get(i + 1))
        .map(|list| list.split(',').filter_map(|n| n.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![100_000, 1_000_000, 10_000_000]);
    let mut options = IcechunkOptions::default();
    if let Some(chunks) = args.iter().position(|a| a == "--manifest-chunks").and_then(|i| args.get(i + 1)) {
        options.manifest_chunks = chunks.parse().expect("--manifest-chunks takes a number");
    }
    let runtime = tokio::runtime::Runtime::new().unwrap();
    println!("one array of n virtual references: native store vs Icechunk repository (local disk)");
    for n in sizes {
        let sources = tempfile::tempdir().unwrap();
        let dataset = many_refs(n, sources.path());
        // The dataset itself (24 bytes a chunk entry): the native writer streams it and adds ~nothing,
        // so the Icechunk writer's peak is compared with it.
        let dataset_kib = (n as usize * std::mem::size_of::<ChunkEntry>() / 1024).max(1);
        let dir = tempfile::tempdir().unwrap();
        let native = dir.path().join("v.vzarr");
        let (native_s, native_kib) = measured(|| {
            NativeWriter.write(&dataset, &native, &WriteOptions::default()).unwrap();
        });
        let repo = dir.path().join("v.icechunk").display().to_string();
        let mut manifests = 0;
        let (ice_s, ice_kib) = measured(|| {
            let info = runtime.block_on(write_icechunk(&dataset, &repo, &options)).unwrap();
            manifests = info.manifests;
        });
        println!(
            "  {n:>9} refs: native {native_s:.2} s, +{} MiB peak | icechunk {ice_s:.2} s in {manifests} manifest(s), \
             +{} MiB peak ({:.0} bytes/ref) | icechunk/native: {:.0}x time, peak {:.1}x the dataset in memory, \
             {} vs {} MiB on disk",
            native_kib / 1024,
            ice_kib / 1024,
            ice_kib as f64 * 1024.0 / n as f64,
            ice_s / native_s,
            ice_kib as f64 / dataset_kib as f64,
            disk_bytes(std::path::Path::new(&repo)) >> 20,
            disk_bytes(&native) >> 20,
        );
        let middle = n / 2;
        let source = dataset.sources.get((middle / PER_FILE) as u32).unwrap();
        make_source(source);
        let native_path = native.display().to_string();
        let (native_read_s, native_read_kib) =
            measured(|| runtime.block_on(read_one(&native_path, middle, sources.path())));
        let (ice_read_s, ice_read_kib) = measured(|| runtime.block_on(read_one(&repo, middle, sources.path())));
        println!(
            "  {n:>9} refs: open + read one chunk: native {:.1} ms, +{} MiB | icechunk {:.1} ms, +{} MiB | \
             icechunk/native: {:.1}x time",
            native_read_s * 1e3,
            native_read_kib / 1024,
            ice_read_s * 1e3,
            ice_read_kib / 1024,
            ice_read_s / native_read_s
        );
        let grown = many_refs(n + PER_FILE, sources.path());
        let mut reading_s = 0.0;
        let (read_s, read_kib) = measured(|| {
            let remote = vzarr::read::RemoteOptions::default();
            let started = Instant::now();
            let stored = runtime.block_on(read_branch(&repo, "main", &remote)).unwrap();
            reading_s = started.elapsed().as_secs_f64();
            let update = IcechunkOptions { commit_to_existing: true, ..options.clone() };
            runtime.block_on(update_icechunk(&stored, &grown, &repo, &update)).unwrap();
        });
        println!(
            "  {n:>9} refs: + {PER_FILE} refs as one update commit: {read_s:.2} s ({reading_s:.2} s reading the \
             branch, {:.2} s committing the new chunks), +{} MiB peak",
            read_s - reading_s,
            read_kib / 1024
        );
    }
}

/// Opens the store at `location` and reads chunk `linear` of `v` (one element), its sources in `dir`.
async fn read_one(location: &str, linear: u64, dir: &std::path::Path) {
    let trusted = vzarr::read::Authorization::new([format!("{}/", dir.display())]);
    let store = vzarr::read::Store::open_with(location, &vzarr::read::OpenOptions::new(trusted)).await.unwrap();
    let array = store.array("v").await.unwrap();
    let coords = array.metadata().chunk_grid.chunk_coords(linear);
    let dims: Vec<vzarr::grid::DimSelection> = coords.iter().map(|&c| c.into()).collect();
    let selection = vzarr::grid::Selection::new(dims, &array.shape()).unwrap();
    let data = array.read(&selection, &vzarr::read::ReadOptions::default()).await.unwrap();
    assert_eq!(data.bytes, [0u8; 8], "the source holds zeros");
}

/// Writes source `file` as the dataset records it: its size of zeros, its modification time.
fn make_source(file: &SourceFile) {
    let handle = std::fs::File::create(&file.location).unwrap();
    handle.set_len(file.size).unwrap();
    let seconds = file.mtime_ns.unwrap() / 1_000_000_000;
    handle.set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_secs(seconds as u64)).unwrap();
}

/// One array `v(time, y, x)` of `n` one-element chunks (rounded down to whole rows of 100), every
/// chunk a reference into one of `n / 1000` source files in `dir` (not written).
fn many_refs(n: u64, dir: &std::path::Path) -> VirtualDataset {
    let rows = n / 100;
    let grid = ChunkGrid::regular(&[rows, 10, 10], &[1, 1, 1]).unwrap();
    let entries: Vec<ChunkEntry> = (0..grid.num_chunks())
        .map(|k| ChunkEntry::Source { source: (k / PER_FILE) as u32, offset: 4096 + (k % PER_FILE) * 8, length: 8 })
        .collect();
    let sources =
        (0..n.div_ceil(PER_FILE)).map(|f| (dir.join(format!("part{f:06}.nc")).display().to_string(), 1 << 20));
    common::one_array_dataset(grid, DataType::Float64, entries, sources)
}

/// Seconds `f` takes and the growth of the peak resident set meanwhile, KiB.
/// Bytes of the files under `path`.
fn disk_bytes(path: &std::path::Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(path) else {
        return std::fs::metadata(path).map_or(0, |m| m.len());
    };
    entries.flatten().map(|e| disk_bytes(&e.path())).sum()
}

fn measured(f: impl FnOnce()) -> (f64, u64) {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let base = status_kib("VmRSS:");
    let start = Instant::now();
    f();
    (start.elapsed().as_secs_f64(), status_kib("VmHWM:").saturating_sub(base))
}

fn status_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with(field))?.split_whitespace().nth(1)?.parse().ok())
        .unwrap_or(0)
}
