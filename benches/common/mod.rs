//! What the benchmarks share: the daily archive (365 NetCDF-4 files of `sst(1, 360, 720)` int16,
//! chunks (1, 30, 30), deflate + shuffle: 105,120 references), built once and cached under
//! `target/bench-archive/`, and timing helpers.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::time::Instant;

/// Latitudes of the daily archive.
pub const NY: usize = 360;
/// Longitudes of the daily archive.
pub const NX: usize = 720;

/// The directory of the `files`-day archive.
pub fn archive_dir(files: usize) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench-archive").join(format!("daily-{files}"))
}

/// `--files N` from the command line, 365 by default.
pub fn files_arg(args: &[String]) -> usize {
    args.iter().position(|a| a == "--files").and_then(|i| args.get(i + 1)?.parse().ok()).unwrap_or(365)
}

/// Seconds `f` takes.
pub fn time(mut f: impl FnMut()) -> f64 {
    let start = Instant::now();
    f();
    start.elapsed().as_secs_f64()
}

/// Peak resident memory of this process, KiB.
pub fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("VmHWM:"))?.split_whitespace().nth(1)?.parse().ok())
        .unwrap_or(0)
}

/// Writes the archive unless it is already there.
pub fn ensure_archive(dir: &Path, files: usize) -> Vec<PathBuf> {
    std::fs::create_dir_all(dir).unwrap();
    let paths: Vec<PathBuf> = (0..files).map(|d| dir.join(format!("sst_{d:04}.nc"))).collect();
    for (day, path) in paths.iter().enumerate() {
        if !path.exists() {
            write_day(path, day);
        }
    }
    paths
}

fn write_day(path: &Path, day: usize) {
    let tmp = path.with_extension("tmp");
    let mut f = netcdf::create(&tmp).unwrap();
    f.add_unlimited_dimension("time").unwrap();
    f.add_dimension("lat", NY).unwrap();
    f.add_dimension("lon", NX).unwrap();
    let mut time = f.add_variable::<f64>("time", &["time"]).unwrap();
    time.put_attribute("units", "days since 2020-01-01").unwrap();
    time.put_values(&[day as f64], (0..1,)).unwrap();
    let mut sst = f.add_variable::<i16>("sst", &["time", "lat", "lon"]).unwrap();
    sst.set_chunking(&[1, 30, 30]).unwrap();
    sst.set_compression(1, true).unwrap();
    sst.put_attribute("scale_factor", 0.01f32).unwrap();
    let values: Vec<i16> = (0..NY * NX)
        .map(|i| {
            let (y, x) = ((i / NX) as f32, (i % NX) as f32);
            (1500.0 + 1000.0 * (y / 40.0).sin() * (x / 70.0 + day as f32 / 50.0).cos() + (i % 7) as f32) as i16
        })
        .collect();
    sst.put_values(&values, [0..1, 0..NY, 0..NX]).unwrap();
    f.close().unwrap();
    std::fs::rename(tmp, path).unwrap();
}

/// Resets this process's peak resident set to its current one (`/proc/self/clear_refs`), before
/// spawning a child whose peak [`wait_peak_kib`] measures: Linux carries the spawning process's peak
/// into the child's at `exec`.
pub fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// Waits for `child` (a `vzarr` run) with `wait4` and gives its peak resident set in KiB; panics
/// naming `what` unless it exited 0.
pub fn wait_peak_kib(child: std::process::Child, what: &str) -> u64 {
    let mut status = 0;
    // SAFETY: an all-zero rusage is valid; wait4 fills it for our own child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waiting for our own child, with valid pointers.
    let pid = unsafe { libc::wait4(child.id() as libc::pid_t, &mut status, 0, &mut usage) };
    assert!(pid > 0 && libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0, "{what} failed");
    usage.ru_maxrss as u64
}

/// A `vzarr` run's wall time and peak resident memory.
pub struct Phase {
    /// Wall time, seconds.
    pub seconds: f64,
    /// Peak resident set, KiB.
    pub peak_kib: u64,
}

impl Phase {
    /// Peak resident set, MiB.
    pub fn peak_mib(&self) -> u64 {
        self.peak_kib / 1024
    }
}

/// Runs the release `vzarr` binary (`SOURCE_DATE_EPOCH` fixed, so outputs of different seconds
/// compare equal; its output thrown away) and measures it with `wait4`, from a reset peak.
pub fn run_vzarr(command: &str, args: &[String]) -> Phase {
    run_vzarr_with(command, args, &[])
}

/// [`run_vzarr`] with `env` set (an S3 endpoint and its credentials, say).
pub fn run_vzarr_with(command: &str, args: &[String], env: &[(&str, String)]) -> Phase {
    reset_peak();
    let start = Instant::now();
    #[allow(clippy::zombie_processes)] // reaped by wait4 below, which also gives its peak memory
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_vzarr"))
        .arg(command)
        .args(args)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .env("SOURCE_DATE_EPOCH", "1700000000")
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("starting vzarr");
    let peak_kib = wait_peak_kib(child, &format!("vzarr {command}"));
    Phase { seconds: start.elapsed().as_secs_f64(), peak_kib }
}
pub mod floor;
pub mod s3;
pub mod series;

/// One array `v(time, y, x)` of `data_type` on `grid` whose chunks are `entries`, uncompressed
/// little-endian, referencing the (not written) source files `sources` (location, size): the
/// synthetic datasets the writer benches time.
pub fn one_array_dataset(
    grid: vzarr::grid::ChunkGrid,
    data_type: vzarr::dataset::DataType,
    entries: Vec<vzarr::dataset::ChunkEntry>,
    sources: impl IntoIterator<Item = (String, u64)>,
) -> vzarr::VirtualDataset {
    use vzarr::dataset::{ArrayMetadata, Attributes, FillValue};
    use vzarr::dataset::{ChunkTable, OwnedBytes, SourceFile, VirtualArray};
    use vzarr::dataset::{CodecChain, Endian};
    let metadata = ArrayMetadata {
        data_type,
        chunk_grid: grid,
        fill_value: FillValue::zero(data_type),
        codecs: CodecChain::raw(Some(Endian::Little)),
        dimension_names: Some(["time", "y", "x"].iter().map(|s| s.to_string()).collect()),
        attributes: Attributes::new(),
        notes: Default::default(),
    };
    let array = VirtualArray {
        path: "v".into(),
        metadata,
        chunks: ChunkTable::from_entries(entries, OwnedBytes::new()),
        rewritten_chunks: 0,
        digest: None,
        tails: Vec::new(),
    };
    let mut dataset = vzarr::VirtualDataset { arrays: vec![array], ..Default::default() };
    for (location, size) in sources {
        dataset.sources.push(SourceFile::new(location, size, Some(1_700_000_000_000_000_000)));
    }
    dataset
}
