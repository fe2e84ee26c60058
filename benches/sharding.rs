//! Sharding benchmark: `materialize` of the daily archive, one object per chunk vs one shard per file
//! (`--shards file`), in the same run.
//!
//! Uses the archive of `benches/archive.rs` (built once under `target/bench-archive/`: daily NetCDF-4
//! files of `sst(time=1, lat=360, lon=720)` int16, chunks (1, 30, 30), deflate + shuffle) and prints:
//! - objects written, bytes (and their ratio to the source chunks' bytes from the manifest), time;
//! - when a Python with zarr-python 3 exists (`VZARR_PYTHON`, else `target/pyenv` made by
//!   `tests/python/setup.sh`): zarr-python reading one day (best of 5) and the whole of `sst` (once)
//!   from each store (values checked equal between the two), with the sharded / unsharded ratios.
//!
//! Run: `cargo bench --bench sharding [-- --files N]` (default 365 files).

mod common;

use std::path::{Path, PathBuf};

use common::{archive_dir, ensure_archive, files_arg, peak_rss_kib, time, NX, NY};
use vzarr::export::{materialize, MaterializeOptions, MaterializeReport, ShardSpec};
use vzarr::formats::NativeWriter;
use vzarr::formats::{WriteOptions, Writer};
use vzarr::pipeline::{combine, CombineOptions};
use vzarr::read::Store;
use vzarr::scan::{scan_files, ScanOptions};

/// Times zarr-python reading one day and the whole variable from each store given; prints JSON.
const PYTHON_READS: &str = r#"
import json, sys, time
import numpy as np
import zarr
zarr.config.set({"array.rectilinear_chunks": True})
out, values = {}, {}
for label, path in zip(sys.argv[1::2], sys.argv[2::2]):
    sst = zarr.open_group(path, mode="r")["sst"]
    one = float("inf")
    for _ in range(5):  # best of 5: a day is a fraction of a second
        start = time.perf_counter(); day = sst[100]; one = min(one, time.perf_counter() - start)
    start = time.perf_counter(); whole = sst[...]; every = time.perf_counter() - start
    out[label] = {"day": one, "all": every}
    values[label] = (day, whole)
first = next(iter(values.values()))
for label, (day, whole) in values.items():
    assert np.array_equal(day, first[0]) and np.array_equal(whole, first[1]), f"{label} differs"
print(json.dumps(out))
"#;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if !args.iter().any(|a| a == "--bench") {
        return; // built and run by `cargo test --all-targets`: nothing to measure there
    }
    let files = files_arg(&args);
    let dir = archive_dir(files);
    let paths = ensure_archive(&dir, files);
    println!("archive: {files} daily files of sst(1, {NY}, {NX}) int16, chunks (1, 30, 30), deflate+shuffle");
    let store_path = dir.with_extension("vzarr");
    if !store_path.join("vzarr.json").exists() {
        let options = ScanOptions { concat_dims: vec!["time".into()], ..ScanOptions::default() };
        let scanned = scan_files(&paths, &options, &|_, _| {}).unwrap();
        let combined = combine(scanned, &CombineOptions::along("time")).unwrap();
        NativeWriter.write(&combined, &store_path, &WriteOptions { overwrite: true }).unwrap();
    }
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let store = runtime
        .block_on(Store::open(store_path.to_str().unwrap(), &vzarr::read::Authorization::new([dir.to_str().unwrap()])))
        .unwrap();
    let stats = store.info().arrays.iter().find(|a| a.path == "sst").unwrap().stats;
    let chunk_bytes = stats.referenced_bytes + stats.owned_bytes;
    println!("source: {} chunks of sst, {chunk_bytes} bytes", stats.referenced + stats.owned);

    let plain = dir.with_extension("zarr");
    let sharded = dir.with_extension("sharded.zarr");
    let run = |destination: &Path, shards: Option<ShardSpec>| {
        // Removing a previous run's 105,000 files is not part of the measurement.
        if destination.exists() {
            std::fs::remove_dir_all(destination).unwrap();
        }
        let options = MaterializeOptions { shards, ..MaterializeOptions::default() };
        let mut report = MaterializeReport::default();
        let seconds = time(|| {
            report = runtime.block_on(materialize(&store, destination, &options, &|_| {})).unwrap();
        });
        (report, seconds)
    };
    let (plain_report, plain_s) = run(&plain, None);
    let (sharded_report, sharded_s) = run(&sharded, Some(ShardSpec::File));
    let sst = |r: &MaterializeReport| r.layouts.iter().find(|l| l.path == "sst").cloned().unwrap();
    let (p, s) = (sst(&plain_report), sst(&sharded_report));
    println!("materialize sst            objects     bytes (x chunk bytes)   time");
    for (label, l, secs) in [("one object per chunk", &p, plain_s), ("--shards file", &s, sharded_s)] {
        let ratio = l.bytes as f64 / chunk_bytes as f64;
        println!(
            "  {label:<22} {:>9} {:>11} ({ratio:.4})   {secs:.3} s (whole store, files flushed)",
            l.objects, l.bytes
        );
    }
    println!(
        "  sharded / unsharded: objects {:.5}x, bytes {:.4}x, time {:.2}x",
        s.objects as f64 / p.objects as f64,
        s.bytes as f64 / p.bytes as f64,
        sharded_s / plain_s
    );
    python_reads(&plain, &sharded);
    println!("peak memory: {} MiB", peak_rss_kib() / 1024);
}

/// zarr-python reads from both stores, when a Python environment exists.
fn python_reads(plain: &Path, sharded: &Path) {
    let candidates = [
        std::env::var_os("VZARR_PYTHON").map(PathBuf::from),
        Some(Path::new(env!("CARGO_MANIFEST_DIR")).join("target/pyenv/bin/python")),
    ];
    let Some(python) = candidates.into_iter().flatten().find(|p| p.exists()) else {
        println!("zarr-python reads: no Python environment (run tests/python/setup.sh); not measured");
        return;
    };
    let output = std::process::Command::new(python)
        .args(["-c", PYTHON_READS, "unsharded"])
        .arg(plain)
        .arg("sharded")
        .arg(sharded)
        .output()
        .unwrap();
    if !output.status.success() {
        println!("zarr-python reads failed: {}", String::from_utf8_lossy(&output.stderr));
        return;
    }
    let times: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    for (what, key) in [("one day", "day"), ("all of sst", "all")] {
        let (u, s) = (times["unsharded"][key].as_f64().unwrap(), times["sharded"][key].as_f64().unwrap());
        println!("zarr-python read {what:<11} unsharded {u:>8.3} s   sharded {s:>8.3} s   ratio {:.2}x", s / u);
    }
}
