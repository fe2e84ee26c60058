//! Combine benchmark: the pure group -> concatenate -> merge step on synthetic scans (no files), to
//! show it scales linearly with the number of files.
//!
//! Each synthetic file is one CMIP-like `tas(time=365, lat=4, lon=6)` year of one member, chunked
//! (100, 2, 3) (a partial, trimmed last chunk per year), with a `time` coordinate and `variant_label`
//! attribute. Combined with `member=attr:variant_label` and `time`, for growing archives.
//!
//! A second part writes one synthetic array of 10^5 .. 10^7 references (1,000 chunks per source file)
//! with the native writer and as an Icechunk repository (`write_icechunk`, manifests of at most
//! `DEFAULT_MANIFEST_CHUNKS`), and prints both times, their ratio and each one's peak memory growth.
//!
//! Run: `cargo bench --bench combine` (`-- write` for the writers only, `-- combine` for combine only).

use std::time::Instant;

use vzarr::codec::{CodecChain, Endian};
use vzarr::combine::{combine, CombineOptions, ConcatDim};
use vzarr::dataset::{ChunkTable, ConcatCoordinate, GroupNode, TailChunks, VirtualArray, VirtualDataset};
use vzarr::grid::ChunkGrid;
use vzarr::manifest::{ChunkEntry, SourceFile};
use vzarr::metadata::{ArrayMetadata, Attributes, DataType, FillValue};

const DAYS: u64 = 365;

fn array(path: &str, shape: &[u64], chunk: &[u64], names: &[&str]) -> VirtualArray {
    let grid = ChunkGrid::regular(shape, chunk).unwrap();
    let n = grid.num_chunks();
    let entries = (0..n).map(|k| ChunkEntry::Source { source: 0, offset: 4096 + k * 1000, length: 900 }).collect();
    let metadata = ArrayMetadata {
        data_type: DataType::Float32,
        chunk_grid: grid,
        fill_value: FillValue::zero(DataType::Float32),
        codecs: CodecChain::raw(Some(Endian::Little)),
        dimension_names: Some(names.iter().map(|s| s.to_string()).collect()),
        attributes: Attributes::new(),
    };
    VirtualArray {
        path: path.into(),
        metadata,
        chunks: ChunkTable { entries, owned: Vec::new() },
        rewritten_chunks: 0,
        digest: None,
        tails: Vec::new(),
    }
}

fn file(member: usize, year: u64) -> VirtualDataset {
    let mut tas = array("tas", &[DAYS, 4, 6], &[100, 2, 3], &["time", "lat", "lon"]);
    let grid = tas.metadata.chunk_grid.clone();
    let last: Vec<(u64, ChunkEntry)> = (0..grid.num_chunks())
        .filter(|&k| grid.chunk_coords(k)[0] == 3)
        .map(|k| (k, ChunkEntry::Source { source: 0, offset: 4096 + k * 1000, length: 65 * 6 * 4 }))
        .collect();
    tas.tails.push(TailChunks { dims: vec![0], entries: last, rewritten: 0 });
    let time = array("time", &[DAYS], &[DAYS], &["time"]);
    let mut attributes = Attributes::new();
    attributes.insert("variant_label".into(), format!("r{member}i1p1f1").into());
    let mut dataset = VirtualDataset {
        groups: vec![GroupNode { path: String::new(), attributes }],
        arrays: vec![time, tas],
        ..VirtualDataset::default()
    };
    let location = format!("/archive/tas_day_M_r{member}i1p1f1_gn_{year}.nc");
    dataset.sources.push(SourceFile::new(location, 1 << 20, Some(0)));
    let first = (year * DAYS) as f64;
    dataset.concat.push(ConcatCoordinate {
        dim: "time".into(),
        values: (0..DAYS).map(|d| first + d as f64 + 0.5).collect(),
        units: Some("days since 1850-01-01".into()),
        calendar: Some("noleap".into()),
        bounds: None,
    });
    dataset
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if !args.iter().any(|a| a == "--bench") {
        return; // built and run by `cargo test --all-targets`: nothing to measure there
    }
    let only = |part: &str| !args.iter().any(|a| a == "write" || a == "combine") || args.iter().any(|a| a == part);
    if only("combine") {
        combine_part();
    }
    if only("write") {
        write_part();
    }
}

fn combine_part() {
    let options = CombineOptions {
        dims: vec!["member=attr:variant_label".parse().unwrap(), ConcatDim::existing("time")],
        ..CombineOptions::default()
    };
    for (members, years) in [(10, 100), (20, 250), (40, 500)] {
        let files: Vec<VirtualDataset> = (0..members).flat_map(|m| (0..years).map(move |y| file(m, y))).collect();
        let n = files.len();
        let refs: usize = files.iter().map(|f| f.arrays.iter().map(|a| a.chunks.entries.len()).sum::<usize>()).sum();
        let start = Instant::now();
        let combined = combine(files, &options).unwrap();
        let secs = start.elapsed().as_secs_f64();
        let shape = combined.array("tas").unwrap().metadata.shape();
        println!(
            "{members} members x {years} years = {n} files, {refs} references: combine {secs:.3} s \
             ({:.0} files/s, {:.2} us/file); tas {shape:?}",
            n as f64 / secs,
            secs * 1e6 / n as f64
        );
    }
}

/// One array `v(n / 100, 10, 10)` of `n` single-element chunks, 1,000 per source file.
fn many_refs(n: u64) -> VirtualDataset {
    let rows = n / 100;
    let mut v = array("v", &[rows, 10, 10], &[1, 1, 1], &["time", "y", "x"]);
    for (k, entry) in v.chunks.entries.iter_mut().enumerate() {
        let k = k as u64;
        *entry = ChunkEntry::Source { source: (k / 1000) as u32, offset: 4096 + (k % 1000) * 8, length: 8 };
    }
    let mut dataset = VirtualDataset { arrays: vec![v], ..VirtualDataset::default() };
    for f in 0..n.div_ceil(1000) {
        let location = format!("/archive/part{f:06}.nc");
        dataset.sources.push(SourceFile::new(location, 1 << 20, Some(1_700_000_000_000_000_000)));
    }
    dataset
}

/// Resets the peak resident set size (Linux `clear_refs` 5) and returns the current one, in KiB.
fn reset_peak() -> u64 {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    status_kib("VmRSS:")
}

fn status_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with(field))?.split_whitespace().nth(1)?.parse().ok())
        .unwrap_or(0)
}

fn timed(f: impl FnOnce()) -> (f64, u64) {
    let base = reset_peak();
    let start = Instant::now();
    f();
    (start.elapsed().as_secs_f64(), status_kib("VmHWM:").saturating_sub(base))
}

fn write_part() {
    use vzarr::store::{write_icechunk, IcechunkOptions, NativeWriter, WriteOptions, Writer};
    let runtime = tokio::runtime::Runtime::new().unwrap();
    println!("write one array of n references: native store vs Icechunk repository (local disk)");
    for n in [100_000u64, 1_000_000, 10_000_000] {
        let dataset = many_refs(n);
        let dir = tempfile::tempdir().unwrap();
        let native = dir.path().join("v.vzarr");
        let (native_s, native_kib) = timed(|| {
            NativeWriter.write(&dataset, &native, &WriteOptions::default()).unwrap();
        });
        let repo = dir.path().join("v.icechunk").display().to_string();
        let mut manifests = 0;
        let (ice_s, ice_kib) = timed(|| {
            let info = runtime.block_on(write_icechunk(&dataset, &repo, &IcechunkOptions::default())).unwrap();
            manifests = info.manifests;
        });
        println!(
            "  {n:>9} refs: native {native_s:.2} s (+{} MiB peak), icechunk {ice_s:.2} s in {manifests} manifest(s) \
             (+{} MiB peak, {:.0} bytes/ref): {:.1}x the native writer's time",
            native_kib / 1024,
            ice_kib / 1024,
            ice_kib as f64 * 1024.0 / n as f64,
            ice_s / native_s
        );
    }
}
