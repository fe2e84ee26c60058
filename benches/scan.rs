//! Scan benchmark for the native HDF5 reader, with baselines measured in the same run.
//!
//! - The daily benchmark archive of `benches/common` (365 NetCDF-4 files, 105,120 chunks; shared with
//!   `benches/archive.rs` under `target/bench-archive/`): vzarr's scan against libhdf5 2.0's own
//!   chunk walk (h5py `dataset.id.chunk_iter`, timed inside Python over the same files) when the
//!   Python environment (`tests/python/setup.sh`, h5py) exists. Target: ratio <= 0.5.
//! - One file with a 1-D dataset of 10,000 / 40,000 / 160,000 chunks (v1 B-tree): scan time, and
//!   how it grows with chunks (linear is 4x per step). Target: 160,000 chunks < 0.3 s.
//! - Many files of 1000 chunks each: 10^5, 10^6 (and with `--refs 10000000`, 10^7) references,
//!   scan time and peak memory per reference. Targets: 10^6 in <= 3 s, <= 64 bytes/reference.
//!
//! Run: `cargo bench --bench scan [-- --refs N]` (default 1,000,000). Inputs are written once and
//! cached under `target/bench-scan/`.

use std::path::{Path, PathBuf};
use std::time::Instant;

use vzarr::scan::{scan_files, ScanOptions};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if !args.iter().any(|a| a == "--bench") {
        return; // built by `cargo test --all-targets`: nothing to measure there
    }
    let max_refs: u64 =
        args.iter().position(|a| a == "--refs").and_then(|i| args.get(i + 1)?.parse().ok()).unwrap_or(1_000_000);
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target");
    daily_archive(&root.join("bench-archive/daily-365"));
    one_file_many_chunks(&root.join("bench-scan"));
    many_files(&root.join("bench-scan"), max_refs);
}

fn seconds(f: impl FnOnce()) -> f64 {
    let start = Instant::now();
    f();
    start.elapsed().as_secs_f64()
}

fn scan_all(paths: &[PathBuf]) -> u64 {
    let scanned = scan_files(paths, &ScanOptions::default(), &|_, _| {}).unwrap();
    scanned.iter().flat_map(|d| &d.arrays).map(|a| a.chunks.len() as u64).sum()
}

fn daily_archive(dir: &Path) {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| d.filter_map(|e| Some(e.ok()?.path())).filter(|p| p.extension().is_some_and(|x| x == "nc")).collect())
        .unwrap_or_default();
    paths.sort();
    if paths.len() != 365 {
        println!("daily archive: not built yet (run `cargo bench --bench archive` first); skipped");
        return;
    }
    let mut refs = 0;
    let ours = seconds(|| refs = scan_all(&paths));
    println!("daily archive: 365 files, {refs} chunk references");
    println!("  vzarr scan (native reader, {} threads)   {ours:.3} s", rayon::current_num_threads());
    match python_chunk_walk(&paths) {
        Some(theirs) => println!(
            "  baseline: libhdf5 2.0 chunk_iter (h5py) {theirs:.3} s   ratio {:.2}x (target <= 0.5)",
            ours / theirs
        ),
        None => println!("  baseline: no Python with h5py (run tests/python/setup.sh); ratio not measured"),
    }
}

/// Seconds h5py (HDF5 2.0) takes to open every file and walk every dataset's chunks with
/// `chunk_iter`, timed inside Python.
fn python_chunk_walk(paths: &[PathBuf]) -> Option<f64> {
    let python = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/pyenv/bin/python");
    let script = r#"
import sys, time, h5py
paths = sys.stdin.read().split("\n")
def walk(group, count):
    for item in group.values():
        if isinstance(item, h5py.Group):
            walk(item, count)
        elif item.chunks is not None:
            item.id.chunk_iter(lambda info: count.append(1))
count = []
start = time.perf_counter()
for p in paths:
    with h5py.File(p, "r") as f:
        walk(f, count)
print(time.perf_counter() - start, len(count))
"#;
    use std::io::Write;
    let mut child = std::process::Command::new(python)
        .args(["-c", script])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .ok()?;
    let list: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    child.stdin.take()?.write_all(list.join("\n").as_bytes()).ok()?;
    let out = child.wait_with_output().ok()?;
    String::from_utf8(out.stdout).ok()?.split_whitespace().next()?.parse().ok()
}

/// A file whose only dataset is 1-D int32 with one element per chunk (earliest format: v1 B-tree).
fn write_chunks_file(path: &Path, chunks: usize) {
    if path.exists() {
        return;
    }
    let tmp = path.with_extension("tmp");
    let file = hdf5::File::create(&tmp).unwrap();
    let values: Vec<i32> = (0..chunks as i32).collect();
    file.new_dataset_builder().chunk(1).with_data(&values).create("v").unwrap();
    drop(file);
    std::fs::rename(tmp, path).unwrap();
}

fn one_file_many_chunks(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    println!("one file, one 1-D dataset (v1 B-tree index):");
    let mut previous: Option<f64> = None;
    for chunks in [10_000usize, 40_000, 160_000] {
        let path = dir.join(format!("chunks_{chunks}.h5"));
        write_chunks_file(&path, chunks);
        let mut refs = 0;
        let t = seconds(|| refs = scan_all(std::slice::from_ref(&path)));
        assert_eq!(refs, chunks as u64);
        let growth = previous.map(|p| format!("   x{:.1} for 4x chunks", t / p)).unwrap_or_default();
        println!("  {chunks:>7} chunks: {t:.3} s{growth}");
        previous = Some(t);
    }
}

fn many_files(dir: &Path, max_refs: u64) {
    let files_dir = dir.join("files-1000-chunks");
    std::fs::create_dir_all(&files_dir).unwrap();
    let needed = (max_refs / 1000) as usize;
    let paths: Vec<PathBuf> = (0..needed).map(|i| files_dir.join(format!("f{i:05}.h5"))).collect();
    let writing = seconds(|| {
        use rayon::prelude::*;
        paths.par_iter().for_each(|p| write_chunks_file(p, 1000));
    });
    println!("files of 1000 chunks each (inputs ready in {writing:.1} s):");
    let mut previous: Option<f64> = None;
    let mut count = 100usize;
    while count <= needed {
        let before = peak_rss_kib();
        let mut refs = 0;
        let t = seconds(|| refs = scan_all(&paths[..count]));
        let per_ref = (peak_rss_kib().saturating_sub(before) * 1024) as f64 / refs as f64;
        let growth = previous.map(|p| format!("   x{:.1} for 10x references", t / p)).unwrap_or_default();
        println!("  {refs:>9} references: {t:.3} s, peak memory growth {per_ref:.0} bytes/reference{growth}");
        previous = Some(t);
        count *= 10;
    }
}

fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("VmHWM:"))?.split_whitespace().nth(1)?.parse().ok())
        .unwrap_or(0)
}
