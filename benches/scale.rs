//! Scan memory at scale (issues 27 and 42), and 10^8 references end to end (issue 27, item 2).
//!
//! Every step runs the release `vzarr` binary as its own process, and its peak memory is the
//! process's maximum resident set (`wait4` rusage; this process resets its own peak before each
//! spawn, since Linux carries the spawner's peak into the child at `exec`, and writes the inputs in
//! child processes, so that it stays at about 12 MiB).
//!
//! **Scan memory** (default): three ways of combining files (`scale/kinds.rs`), each written as a
//! native store and as an Icechunk repository, at 10^5, 10^6 and 10^7 references:
//! - *new dimension*: HDF5 files of 10,000 one-element int32 chunks (`v`, v1 B-tree index; element
//!   `j` of file `f` holds `f * 10000 + j`) along a new dimension `file` keyed by the file name;
//! - *existing dimension*, the everyday archive: NetCDF-4 files of `v(time=10000, x=4)` in chunks of
//!   `(1, 4)` with a contiguous `time` coordinate, `--concat time`;
//! - *member x time*: the same for 10 members, `--concat member=path:m(\d+)_ --concat time`.
//!
//! Printed per size: wall time, peak and the peak per reference, bytes per reference of the peak
//! above the 10^5-reference scan's (the code, libraries and fixed buffers cancel out) and how that
//! grows from 10^6 to 10^7, and the bytes per reference of the manifest written; then a summary at
//! 10^7. Targets: <= 16 bytes per reference above the 10^5 scan and <= 24 of the whole peak, at 10^7
//! references. After the new-dimension Icechunk repository of 10^7 references: open + read one
//! chunk as a `vzarr read` process (target < 50 ms) and through the library (< 20 ms; with the bytes
//! and read calls it took), and the same process against the repository uploaded to `moto_server`
//! (the S3 server the tests start; requests and bytes counted by a proxy that adds no latency).
//!
//! Measured (issue 42; 2 cores shared with other engineers' builds, load 4-5), at 10^7 references,
//! above the 10^5 scan / whole peak, bytes per reference:
//!
//! | | native store | Icechunk repository |
//! | --- | --- | --- |
//! | new dimension | 12.5 / 15.4 (11.5 s) | 13.4 / 17.9 (14.3 s) |
//! | existing dimension | 12.8 / 15.5 (5.0 s) | 13.8 / 17.9 (7.5 s) |
//! | member x time | 12.6 / 15.5 (3.4 s) | 26.4 / 31.0 (7.7 s) |
//!
//! Before issue 42, the existing dimension took 52.8 / 55.6 (native) and 51.6 / 55.6 (Icechunk):
//! every file's time values (8 bytes a time step, one chunk per step here) held as a list, copied
//! for the ordering keys, again for the overlap check, every step between values collected and
//! sorted, and the combined grid built from a list of every chunk edge. Member x time into
//! Icechunk is over the target: a row along `member` holds 10^6 chunks, more than a manifest's
//! 2^16, and manifests split only whole rows, so two manifests of 10^6 references (about 60 bytes
//! each before compression) are built at once. Icechunk reads (two runs): open + one chunk 15.5 and
//! 19.2 ms through the library; a `vzarr read` process, median of 5, 39.8 ms (the first, its
//! sources' inodes cold after the scans, 132-203 ms); 31.6 ms of CPU per process (`perf stat`),
//! 38.4 before its manifest was read directly rather than through Icechunk's iterator (a `String`
//! and a registry lookup per reference); a third of that CPU is the dynamic loader relocating the C
//! libraries, a sixth Icechunk verifying the manifest's flatbuffer. 1,000 chunks at random places:
//! 9.4-10.5 ms each.
//!
//! Issue 27, new dimension only: native store 10^6 references 1.70 s and 12.8 bytes/reference, 10^7
//! 16.7 s and 12.4; Icechunk repository 10^6 19.6 (two manifests in flight are most of it at that
//! size), 10^7 13.3. Before the chunk tables became columns moved into the combined table: 73 and 72
//! bytes/reference (native).
//!
//! **End to end** (`--end-to-end`, 10^8 references by default): `scan --shard I/16` for every shard,
//! `merge` of the parts into a native store and, from the same parts, `merge --format icechunk` into
//! a new repository (the one command a user has for an Icechunk repository of a sharded scan; the
//! native merge is its same-run baseline), then per store `vzarr read -s F,J` (open + read one
//! chunk, a process) and a child process reading through the library: open + one chunk, then 1,000
//! chunks at random places, every value checked against the one written and libhdf5's. Targets: each
//! merge under 2 minutes and 4 GiB; open + read one chunk under 50 ms. See `scale/end_to_end.rs` and
//! the figures there.
//!
//! Run: `cargo bench --bench scale [-- --refs 10000000 --format native|icechunk --kind existing]`
//! (default: up to 10^7, both formats, every kind), `cargo bench --bench scale -- --end-to-end [--refs
//! 100000000 --shards 16]`. Inputs are written once and cached under `target/tmp/bench-scale/` (4 GB
//! for 10^8 references, 1.4 GB for the NetCDF-4 inputs of 10^7: check `df -h`).

mod common;
#[path = "scale/end_to_end.rs"]
mod end_to_end;
#[path = "scale/kinds.rs"]
mod kinds;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use kinds::Kind;

/// Chunks (references) per file.
const CHUNKS: usize = common::series::STEPS;
/// Target: bytes per reference of the peak above the 10^5-reference scan's.
const TARGET_ABOVE: f64 = 16.0;
/// Target: bytes per reference of the whole process's peak at 10^7 references.
const TARGET_WHOLE: f64 = 24.0;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if !args.iter().any(|a| a == "--bench") {
        return; // built by `cargo test --all-targets`: nothing to measure there
    }
    if args.iter().any(|a| a == "--write-inputs") {
        return write_inputs_child(&args);
    }
    if args.iter().any(|a| a == "--write-netcdf") {
        return common::series::write_netcdf_child(&args);
    }
    if args.iter().any(|a| a == "--read-child") {
        return end_to_end::read_child(&args);
    }
    let flag = |name: &str, default: u64| -> u64 {
        args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)?.parse().ok()).unwrap_or(default)
    };
    let text = |name: &str| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1).cloned());
    let e2e = args.iter().any(|a| a == "--end-to-end");
    let refs = flag("--refs", if e2e { 100_000_000 } else { 10_000_000 });
    let root = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("bench-scale");
    let work = root.join("work");
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).unwrap();
    let count = (refs as usize).div_ceil(CHUNKS).max(10);
    if e2e {
        let files = write_inputs(&root.join("files-10000-chunks"), count);
        return end_to_end::run(&files, &work, flag("--shards", 16) as u32);
    }
    let formats: Vec<&str> = match text("--format") {
        Some(f) if f == "native" => vec!["native"],
        Some(f) if f == "icechunk" => vec!["icechunk"],
        _ => vec!["native", "icechunk"],
    };
    let only = text("--kind");
    let mut summary = Vec::new();
    for kind in Kind::all(&root).into_iter().filter(|k| only.as_deref().is_none_or(|o| k.name.starts_with(o))) {
        for format in &formats {
            summary.push(measure_kind(&kind, format, count, &work));
        }
    }
    println!("At {} references (targets: <= {TARGET_ABOVE} bytes/reference above the 10^5 scan, <= {TARGET_WHOLE} of the whole peak):", count * CHUNKS);
    for line in summary {
        println!("  {line}");
    }
}

/// Scans of 10^5, 10^6, ... references of one kind into one format, printed; returns the summary line
/// of the largest.
fn measure_kind(kind: &Kind, format: &str, count: usize, work: &Path) -> String {
    println!(
        "{} (vzarr scan --concat {}), {format}, files of {CHUNKS} chunks:",
        kind.name,
        kind.concat.join(" --concat ")
    );
    let mut base: Option<Phase> = None;
    let mut previous: Option<f64> = None;
    let mut last = String::new();
    let mut n_files = 10;
    while n_files <= count {
        let files = kind.files(n_files);
        let phase = scan(&files, kind.concat, work, format);
        let n = phase.refs as f64;
        let manifest = manifest_bytes(&phase.output) as f64 / n;
        let whole = phase.peak_kib as f64 * 1024.0 / n;
        let line = match &base {
            None => format!("(baseline for the growth below; manifest {manifest:.2} bytes/reference)"),
            Some(b) => {
                let per_ref = phase.peak_kib.saturating_sub(b.peak_kib) as f64 * 1024.0 / (n - b.refs as f64);
                let growth = previous.map(|p| format!(", x{:.2} per reference vs 10x fewer", per_ref / p));
                previous = Some(per_ref);
                last = format!(
                    "{} x {format}: {per_ref:.1} bytes/reference above the 10^5 scan, {whole:.1} of the whole peak ({} MiB, {:.1} s)",
                    kind.name,
                    phase.peak_kib / 1024,
                    phase.seconds
                );
                format!(
                    "{per_ref:.1} bytes/reference above the baseline (target <= {TARGET_ABOVE}){}; manifest {manifest:.2} bytes/reference",
                    growth.unwrap_or_default()
                )
            }
        };
        println!(
            "  {:>9} references: {:>7.2} s, peak {:>5} MiB ({whole:.1} bytes/reference), {line}",
            phase.refs,
            phase.seconds,
            phase.peak_kib / 1024
        );
        if n_files * 10 > count && format == "icechunk" && kind.name == "new dimension" {
            let dir = files[0].parent().unwrap_or(work);
            end_to_end::read_back("Icechunk repository", &phase.output, dir, files.len(), work);
            end_to_end::read_back_s3(&phase.output, files.len(), work);
        }
        base.get_or_insert(phase);
        n_files *= 10;
    }
    last
}

/// A finished scan: wall time, peak resident memory, references and output.
struct Phase {
    seconds: f64,
    peak_kib: u64,
    refs: u64,
    output: PathBuf,
}

/// Runs the release binary over `files` and measures it with `wait4`.
fn scan(files: &[PathBuf], concat: &[&str], work: &Path, format: &str) -> Phase {
    let list = work.join(format!("inputs-{}.txt", files.len()));
    let lines: Vec<String> = files.iter().map(|p| p.display().to_string()).collect();
    std::fs::write(&list, lines.join("\n")).unwrap();
    let extension = if format == "icechunk" { "icechunk" } else { "vzarr" };
    let output = work.join(format!("scan-{}.{extension}", files.len()));
    let _ = std::fs::remove_dir_all(&output);
    common::reset_peak();
    let start = Instant::now();
    let mut command = Command::new(env!("CARGO_BIN_EXE_vzarr"));
    command.arg("scan").arg("--files-from").arg(&list);
    for c in concat {
        command.args(["--concat", c]);
    }
    #[allow(clippy::zombie_processes)] // reaped by wait4 below, which also gives its peak memory
    let child = command
        .args(["--format", format, "-o"])
        .arg(&output)
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("starting vzarr");
    let peak_kib = common::wait_peak_kib(child, "vzarr scan");
    Phase { seconds: start.elapsed().as_secs_f64(), peak_kib, refs: (files.len() * CHUNKS) as u64, output }
}

/// Bytes of the chunk manifests under `store` (`manifest.bin` of a native store; every file of an
/// Icechunk repository's `manifests/`).
fn manifest_bytes(store: &Path) -> u64 {
    let mut total = 0;
    let mut stack = vec![store.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.file_name().is_some_and(|n| n == "manifest.bin")
                || path.parent().and_then(|p| p.file_name()).is_some_and(|n| n == "manifests")
            {
                total += entry.metadata().map_or(0, |m| m.len());
            }
        }
    }
    total
}

/// `count` files of `CHUNKS` chunks, element `j` of file `f` holding `f * CHUNKS + j` (written once,
/// by two child processes: libhdf5 serializes the calls of one process, and this process stays small,
/// since its peak is a floor of every child's that `wait4` reports).
fn write_inputs(dir: &Path, count: usize) -> Vec<PathBuf> {
    std::fs::create_dir_all(dir).unwrap();
    let paths: Vec<PathBuf> = (0..count).map(|i| dir.join(format!("f{i:05}.h5"))).collect();
    if paths.iter().all(|p| p.exists()) {
        return paths;
    }
    let start = Instant::now();
    let children: Vec<_> = (0..2)
        .map(|i| {
            Command::new(std::env::current_exe().unwrap())
                .args(["--bench", "--write-inputs"])
                .arg(dir)
                .args([count.to_string(), i.to_string(), "2".into()])
                .spawn()
                .expect("starting an input writer")
        })
        .collect();
    for mut child in children {
        assert!(child.wait().unwrap().success(), "writing the inputs failed");
    }
    println!("{count} input files ready in {:.1} s", start.elapsed().as_secs_f64());
    paths
}

/// The child of [`write_inputs`]: `--write-inputs DIR COUNT I N` writes the missing files whose number
/// is `I` modulo `N`.
fn write_inputs_child(args: &[String]) {
    let at = args.iter().position(|a| a == "--write-inputs").unwrap();
    let dir = PathBuf::from(&args[at + 1]);
    let [count, i, n] = [2, 3, 4].map(|k| args[at + k].parse::<usize>().unwrap());
    for f in (i..count).step_by(n) {
        let path = dir.join(format!("f{f:05}.h5"));
        if path.exists() {
            continue;
        }
        let tmp = path.with_extension("tmp");
        let file = hdf5::File::create(&tmp).unwrap();
        let values: Vec<i32> = (0..CHUNKS).map(|j| end_to_end::expected(f, j)).collect();
        file.new_dataset_builder().chunk(1).with_data(&values).create("v").unwrap();
        drop(file);
        std::fs::rename(tmp, path).unwrap();
    }
}
