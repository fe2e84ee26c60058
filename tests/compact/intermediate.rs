//! `vzarr materialize --chunks` through an intermediate array (issue 40, item 2): source and target
//! chunks that cross badly (one whole-globe chunk per day into long time series of small tiles) under
//! a small `--max-memory` take rechunker's intermediate pass, survive a kill in either pass, and read
//! in zarrs equal to libnetcdf's reads of the files; and the copy's peak resident memory, measured in
//! the child process, stays within `--max-memory` plus a fixed allowance for the binary itself.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use crate::common::archives::{write_series_file, yearly};
use crate::common::{cli_expect, with_hdf5_files};
use crate::interop::{assert_zarrs_reads_exactly, s};

const VARS: [&str; 5] = ["tas", "time", "time_bnds", "lat", "lon"];

/// Resident memory of the `vzarr` binary itself beyond what `--max-memory` bounds: code, the C
/// libraries, the runtimes' threads and fixed buffers. Measured by the test (the same copy of a
/// 4 x 5-point archive, which holds next to nothing): 49 MiB in a debug build (its code pages are
/// most of it; a release build's: 23 MiB); 56 MiB stated, for the allocator's slack.
const ALLOWANCE_MIB: u64 = 56;

/// Two yearly files (2023-2024: 731 days) of `tas(time, ny, nx)` in one chunk per day, scanned into a
/// native store; the store and the files.
fn daily_chunked_store(dir: &Path, ny: usize, nx: usize, compress: bool) -> (PathBuf, Vec<PathBuf>) {
    let files: Vec<PathBuf> = with_hdf5_files(|| {
        yearly(2023..=2024, 1)
            .into_iter()
            .map(|mut f| {
                (f.ny, f.nx, f.chunk_yx, f.compress) = (ny, nx, (ny, nx), compress);
                write_series_file(dir, &f)
            })
            .collect()
    });
    let store = dir.join("days.vzarr");
    super::scan(&files, &store, &[]);
    (store, files)
}

fn materialize(store: &Path, out: &Path, extra: &[&str]) -> std::process::Command {
    let mut command = crate::common::vzarr_command();
    command.args(["materialize", &s(store), &s(out)]).args(extra).stdout(Stdio::piped());
    command
}

#[test]
fn badly_crossing_chunks_go_through_an_intermediate_array_and_resume() {
    let dir = tempfile::tempdir().unwrap();
    let (store, files) = daily_chunked_store(dir.path(), 40, 50, true);
    let out = dir.path().join("series.zarr");
    // 1 MiB: a block of 512 KiB, a tenth of the array; the direct copy would decode each day's chunk
    // once per block of 10 x 30 tiles it overlaps (8x).
    let spec = ["--chunks", "time=365,lat=10,lon=10", "--max-memory", "1M"];
    let partial = dir.path().join("series.zarr.partial");
    let scratch = partial.join(".vzarr-intermediate");
    // Killed in pass 1, then in pass 2: nothing at the destination, the intermediate chunks kept.
    for crash in ["intermediate-block-written", "regular-row-written"] {
        let mut killed = materialize(&store, &out, &spec);
        killed.env("VZARR_TEST_CRASH_AT", crash);
        let run = crate::common::run(killed);
        assert_ne!(run.code, 0, "{crash}: the copy was to be killed: {}", run.stderr);
        assert!(!out.exists());
        assert!(crate::common::dir_entries(&scratch.join("tas")).len() > 1, "{crash}: intermediate chunks kept");
    }
    let run = crate::common::run(materialize(&store, &out, &spec));
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.contains("tas: source and target chunks cross badly: copied through an intermediate array"),
        "{}",
        run.stdout
    );
    assert!(!partial.exists() && !out.join(".vzarr-intermediate").exists(), "intermediate arrays removed");
    assert_zarrs_reads_exactly(&out, &files, &VARS);
    let doc = crate::common::array_json(&out, "tas");
    assert_eq!(doc["chunk_grid"]["configuration"]["chunk_shape"], serde_json::json!([365, 10, 10]));
    // An Icechunk repository: the intermediate array in a temporary directory, one commit.
    let repo = dir.path().join("series.icechunk");
    let (store_arg, repo_arg) = (s(&store), s(&repo));
    let args = [&["materialize", store_arg.as_str(), repo_arg.as_str()][..], &spec, &["--format", "icechunk"]].concat();
    let run = cli_expect(&args, 0);
    assert!(run.stdout.contains("copied through an intermediate array"), "{}", run.stdout);
    super::regular::assert_vzarr_reads_exactly(&repo, &files, &["tas"]);
    // With room for whole rows, the same copy reads directly.
    let direct = dir.path().join("direct.zarr");
    let run = cli_expect(&["materialize", &s(&store), &s(&direct), "--chunks", "time=365,lat=10,lon=10"], 0);
    assert!(!run.stdout.contains("intermediate"), "{}", run.stdout);
    assert_zarrs_reads_exactly(&direct, &files, &["tas"]);
}

/// The peak resident memory (MiB) the `vzarr materialize` child reports (`VmHWM`: its own address
/// space's, which a parent's `wait4` would mix with the test process's).
fn peak_mib(store: &Path, out: &Path, extra: &[&str]) -> (u64, String) {
    let mut command = materialize(store, out, extra);
    command.env("VZARR_TEST_COUNTERS", "1");
    let run = crate::common::run(command);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let kib = run.counter("peak_kib").expect("peak_kib counter");
    (kib / 1024, run.stdout)
}

#[test]
fn a_regular_copy_stays_within_max_memory() {
    let dir = tempfile::tempdir().unwrap();
    // tas 731 x 120 x 250 float32: 84 MiB, uncompressed (the copy is the work, not zlib).
    let (ny, nx) = (120, 250);
    let (store, files) = daily_chunked_store(dir.path(), ny, nx, false);
    let max_mib = 8;
    let limit = format!("{max_mib}M");
    let spec = ["--chunks", "time=365,lat=20,lon=25", "--max-memory", limit.as_str()];
    let out = dir.path().join("bounded.zarr");
    let (peak, stdout) = peak_mib(&store, &out, &spec);
    // The allowance, measured: the same archive of 4 x 5 points (nothing to hold) copied the same way.
    let small_dir = dir.path().join("small");
    std::fs::create_dir(&small_dir).unwrap();
    let (small, _) = daily_chunked_store(&small_dir, 4, 5, false);
    let (baseline, _) = peak_mib(&small, &small_dir.join("small.zarr"), &["--chunks", "time=365,lat=2,lon=2"]);
    println!("peak {peak} MiB under --max-memory {max_mib}M (allowance {ALLOWANCE_MIB} MiB; the same copy of 4 x 5 points: {baseline} MiB)");
    assert!(stdout.contains("intermediate array"), "{stdout}");
    assert!(peak <= max_mib + ALLOWANCE_MIB, "peak {peak} MiB > {max_mib} MiB + {ALLOWANCE_MIB} MiB");
    assert!(baseline <= ALLOWANCE_MIB, "the binary alone takes {baseline} MiB");
    // What the copy holds beyond the binary itself stays within the limit too.
    assert!(peak.saturating_sub(baseline) <= max_mib, "peak {peak} MiB, {baseline} MiB of it the binary");
    // The array is larger than the limit and the allowance together: holding it would fail the check.
    let array_mib = (731 * ny * nx * 4) as u64 >> 20;
    assert!(array_mib > max_mib + ALLOWANCE_MIB, "{array_mib} MiB");
    assert_zarrs_reads_exactly(&out, &files, &["tas"]);
}
