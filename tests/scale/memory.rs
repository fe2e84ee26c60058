//! Scan memory (issue 27): the peak resident memory of `vzarr scan` grows by at most
//! [`BUDGET_BYTES_PER_REFERENCE`] per chunk reference. Measured in the child process, never timed:
//! the binary reports its own peak (`VmHWM`, with `VZARR_TEST_COUNTERS=1`; a parent's `wait4` would
//! include the test process's own peak, which Linux carries across `exec`). A scan of 10^6
//! references (100 HDF5 files of 10,000 one-element chunks, combined along a new dimension) is
//! compared with a scan of 10^5 of the same files, so that the code, libraries and fixed buffers
//! cancel out.

use std::path::{Path, PathBuf};
use std::process::Stdio;

/// The budget: a reference in memory takes at most this many bytes at the scan's peak.
const BUDGET_BYTES_PER_REFERENCE: f64 = 16.0;
/// Chunks per file.
const CHUNKS: usize = 10_000;

/// `count` files of `CHUNKS` one-element int32 chunks (v1 B-tree index), `f00000.h5`, ...
fn write_files(dir: &Path, count: usize) -> Vec<PathBuf> {
    let values: Vec<i32> = (0..CHUNKS as i32).collect();
    let paths: Vec<PathBuf> = (0..count).map(|i| dir.join(format!("f{i:05}.h5"))).collect();
    crate::common::with_hdf5_files(|| {
        for path in &paths {
            let file = hdf5::File::create(path).unwrap();
            file.new_dataset_builder().chunk(1).with_data(&values).create("v").unwrap();
        }
    });
    paths
}

/// The peak resident memory (KiB) `vzarr scan` reports for a scan of `files` into `store`.
fn scan_peak_kib(files: &[PathBuf], list: &Path, store: &Path) -> u64 {
    let lines: Vec<String> = files.iter().map(|p| p.display().to_string()).collect();
    std::fs::write(list, lines.join("\n")).unwrap();
    let mut command = crate::common::vzarr_command();
    command.arg("scan").arg("--files-from").arg(list).args(["--concat", r"file=path:f(\d+)\.h5", "-o"]).arg(store);
    command.env("VZARR_TEST_COUNTERS", "1").stdout(Stdio::null());
    let run = crate::common::run(command);
    assert_eq!(run.code, 0, "{}", run.stderr);
    run.counter("peak_kib").expect("peak_kib counter")
}

#[test]
fn a_million_reference_scan_stays_within_its_memory_budget() {
    let dir = tempfile::tempdir().unwrap();
    let files = write_files(dir.path(), 100);
    let small = scan_peak_kib(&files[..10], &dir.path().join("small.txt"), &dir.path().join("small.vzarr"));
    let large = scan_peak_kib(&files, &dir.path().join("large.txt"), &dir.path().join("large.vzarr"));
    let references = (files.len() - 10) * CHUNKS;
    let per_reference = large.saturating_sub(small) as f64 * 1024.0 / references as f64;
    println!("peak {small} KiB for 10^5 references, {large} KiB for 10^6: {per_reference:.1} bytes per reference");
    assert!(large > 0, "no peak reported");
    assert!(
        per_reference <= BUDGET_BYTES_PER_REFERENCE,
        "{per_reference:.1} bytes per reference at the peak (budget {BUDGET_BYTES_PER_REFERENCE})"
    );
    // The store holds every reference.
    let store = crate::common::open_store(&dir.path().join("large.vzarr"));
    let v = store.array("v").unwrap();
    assert_eq!(v.reader().metadata().chunk_grid.num_chunks(), (files.len() * CHUNKS) as u64);
}
