//! Sharded scan + merge against one scan, on the same files, in the same run (issue 13).
//!
//! Inputs: files of 1000 chunks each (a 1-D int32 dataset `v` with one element per chunk, as in
//! `benches/scan.rs`), 10^7 references by default (10,000 files), combined along a new dimension
//! `file` keyed by the file name, so every reference of every file ends up in one array.
//!
//! Each phase runs the release `vzarr` binary as its own process, as job-array tasks would, and its
//! peak memory is the process's maximum resident set (`wait4` rusage):
//!
//! 1. one `scan` over every file (the baseline);
//! 2. `scan --shard I/16` for every shard, one after the other (on a cluster they run at once: the
//!    wall time there is the slowest shard's);
//! 3. `merge` of the 16 parts (checked to be the baseline store, byte for byte).
//!
//! Target: merge's peak memory no more than one scan's (it holds the per-file scans the way one scan
//! does, never all parts' bytes), and 10^7 references in 16 parts merge on this 2-core machine.
//!
//! Run: `cargo bench --bench scale_out [-- --refs N --shards N]`. Inputs are written once and cached
//! under `target/bench-scan/files-1000-chunks` (shared with `benches/scan.rs`).

mod common;

use std::path::{Path, PathBuf};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if !args.iter().any(|a| a == "--bench") {
        return; // built by `cargo test --all-targets`: nothing to measure there
    }
    let flag = |name: &str, default: u64| -> u64 {
        args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)?.parse().ok()).unwrap_or(default)
    };
    let (refs, shards) = (flag("--refs", 10_000_000), flag("--shards", 16) as u32);
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target");
    let inputs = write_inputs(&root.join("bench-scan/files-1000-chunks"), (refs / 1000) as usize);
    let work = root.join("bench-scale-out");
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(work.join("parts")).unwrap();
    let list = work.join("inputs.txt");
    let lines: Vec<String> = inputs.iter().map(|p| p.display().to_string()).collect();
    std::fs::write(&list, lines.join("\n")).unwrap();
    let common = |extra: &[&str]| -> Vec<String> {
        let mut a = vec!["--files-from".to_string(), list.display().to_string()];
        a.extend(["--concat", r"file=path:f(\d+)\.h5"].map(String::from));
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    };
    println!("{} files of 1000 chunks: {} references, {shards} shards", inputs.len(), inputs.len() * 1000);

    let single = work.join("single.vzarr");
    let one = common::run_vzarr("scan", &common(&["-o", &single.display().to_string()]));
    println!("  one scan                  {:>8.2} s   peak {:>6} MiB", one.seconds, one.peak_mib());

    let parts_dir = format!("{}/", work.join("parts").display());
    let mut tasks = Vec::new();
    for i in 0..shards {
        tasks.push(common::run_vzarr("scan", &common(&["--shard", &format!("{i}/{shards}"), "-o", &parts_dir])));
    }
    let total: f64 = tasks.iter().map(|t| t.seconds).sum();
    let slowest = tasks.iter().map(|t| t.seconds).fold(0.0, f64::max);
    let peak = tasks.iter().map(|t| t.peak_kib).max().unwrap_or(0);
    let part_bytes: u64 =
        std::fs::read_dir(work.join("parts")).unwrap().map(|e| e.unwrap().metadata().unwrap().len()).sum();
    println!(
        "  {shards} shard scans          {total:>8.2} s   (slowest {slowest:.2} s; peak {:>6} MiB per task; parts {:.1} MiB, {:.2} bytes/reference)",
        peak / 1024,
        part_bytes as f64 / 1048576.0,
        part_bytes as f64 / (inputs.len() * 1000) as f64
    );

    let merged = work.join("merged.vzarr");
    let parts_glob = format!("{}*.vzpart", parts_dir);
    let merge = common::run_vzarr(
        "merge",
        &[parts_glob, "--concat".into(), r"file=path:f(\d+)\.h5".into(), "-o".into(), merged.display().to_string()],
    );
    println!("  merge                     {:>8.2} s   peak {:>6} MiB", merge.seconds, merge.peak_mib());
    println!(
        "  merge / one scan: time {:.2}x, peak memory {:.2}x (target <= 1.0); sharded critical path (slowest shard + merge) {:.2} s",
        merge.seconds / one.seconds,
        merge.peak_kib as f64 / one.peak_kib as f64,
        slowest + merge.seconds
    );
    assert_same_tree(&single, &merged);
    println!("  the merged store equals the single scan's, byte for byte");
}

/// `count` files of 1000 chunks (written once, in parallel).
fn write_inputs(dir: &Path, count: usize) -> Vec<PathBuf> {
    use rayon::prelude::*;
    std::fs::create_dir_all(dir).unwrap();
    let paths: Vec<PathBuf> = (0..count).map(|i| dir.join(format!("f{i:05}.h5"))).collect();
    paths.par_iter().for_each(|path| {
        if path.exists() {
            return;
        }
        let tmp = path.with_extension("tmp");
        let file = hdf5::File::create(&tmp).unwrap();
        let values: Vec<i32> = (0..1000).collect();
        file.new_dataset_builder().chunk(1).with_data(&values).create("v").unwrap();
        drop(file);
        std::fs::rename(tmp, path).unwrap();
    });
    paths
}

fn assert_same_tree(a: &Path, b: &Path) {
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        for entry in std::fs::read_dir(a.join(&rel)).unwrap() {
            let name = rel.join(entry.unwrap().file_name());
            if a.join(&name).is_dir() {
                stack.push(name);
            } else {
                let same = std::fs::read(a.join(&name)).unwrap() == std::fs::read(b.join(&name)).unwrap();
                assert!(same, "{} differs", name.display());
            }
        }
    }
}
