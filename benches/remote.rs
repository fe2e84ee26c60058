//! Remote scan benchmark: vzarr against kerchunk on the same S3 server, in the same run.
//!
//! Two archives are uploaded to local S3-compatible servers, `moto_server` from the Python
//! environment of `tests/python/setup.sh` (it answers one request at a time in Python) and, where it
//! is installed (`cargo install s3s-fs@0.14.1 --locked --features binary --root target/tools`),
//! s3s-fs (Rust, concurrent: a server that is not the bottleneck), and scanned through a proxy that
//! adds a fixed latency to every request (20 ms by default), as a distant object store would:
//! - the daily benchmark archive of `benches/common` (small chunks, files of about 0.5 MB; 120 days
//!   by default);
//! - a monthly archive with MB-sized chunks (`tas(days, 180, 360)` float32, chunks of 2 MB).
//!
//! For each archive, `vzarr scan 's3://…/*.nc' --concat time` (the command line a user runs, with its
//! defaults, and with 16 files in flight, the default before issue 39) and
//! kerchunk (`SingleHdf5ToZarr` over s3fs file objects, then `MultiZarrToZarr` along time, as its
//! documentation shows) are timed, and the proxy counts their requests, the bytes they received and
//! the round trips per file (a request for an object that arrives more than half a latency after the
//! one before it for the same object waited for that one's answer: a new round trip; requests sent
//! together count once). Targets: vzarr >= 10x faster than kerchunk; the small-chunk archive's
//! scan fetching <= 10% of its bytes in <= 3 round trips per file; bytes fetched while scanning the
//! MB-chunk archive <= 2% of the archive.
//!
//! Run: `cargo bench --bench remote [-- --files N --latency-ms MS]`. Without the Python environment
//! (moto_server, kerchunk) one line says why nothing was measured.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::s3::{check_python, s3_env, servers, LatencyProxy, Measured, S3Server};
use common::{archive_dir, ensure_archive};

/// Days per month of the monthly archive (2023).
const MONTH_DAYS: [usize; 12] = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if !args.iter().any(|a| a == "--bench") {
        return; // built by `cargo test --all-targets`: nothing to measure there
    }
    let arg = |name: &str, default: u64| {
        args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)?.parse().ok()).unwrap_or(default)
    };
    let files = arg("--files", 120) as usize;
    let latency = Duration::from_millis(arg("--latency-ms", 20));
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let python = root.join("target/pyenv/bin/python");
    if let Err(why) = check_python(&python) {
        println!("remote benchmark not run: {why} (run tests/python/setup.sh)");
        return;
    }
    let daily = ensure_archive(&archive_dir(files), files);
    let monthly = ensure_monthly(&root.join("target/bench-remote/monthly"));
    for kind in &servers(&root) {
        let server = S3Server::start(kind, &python);
        server.upload(&python, "bench", "daily", &daily);
        server.upload(&python, "bench", "monthly", &monthly);
        let proxy = LatencyProxy::start(server.port, latency);
        println!(
            "\nS3 server: {}, reached through a proxy adding {} ms per request",
            kind.describe(),
            latency.as_millis()
        );
        measure_archives(&proxy, &python, [("daily", &daily), ("monthly", &monthly)]);
    }
}

/// Scans both archives with vzarr and kerchunk through `proxy`, printing what each did.
fn measure_archives(proxy: &LatencyProxy, python: &Path, archives: [(&str, &Vec<PathBuf>); 2]) {
    let work = tempfile::tempdir().unwrap();
    for (name, paths) in archives {
        let bytes: u64 = paths.iter().map(|p| std::fs::metadata(p).unwrap().len()).sum();
        println!("\n{name} archive: {} files, {:.1} MB", paths.len(), bytes as f64 / 1e6);
        let store = work.path().join(format!("{name}.vzarr"));
        // Once untimed first: the server's and the system's caches warm for every tool measured.
        vzarr_scan(&proxy.endpoint(), name, &store, None);
        let ours = proxy.measure(|| vzarr_scan(&proxy.endpoint(), name, &store, None));
        let narrow = proxy.measure(|| vzarr_scan(&proxy.endpoint(), name, &store, Some(16)));
        let theirs = proxy.measure(|| kerchunk_scan(python, &proxy.endpoint(), name, &work.path().join(name)));
        report("vzarr scan (defaults)", &ours, paths.len(), bytes);
        report("vzarr scan (16 in flight)", &narrow, paths.len(), bytes);
        report("kerchunk (h5py over s3fs)", &theirs, paths.len(), bytes);
        println!(
            "  vzarr (defaults) / kerchunk: {:.3}x the time (target <= 0.1: {:.1}x faster), {:.3}x the bytes; 16 in \
             flight: {:.1}x faster",
            ours.seconds / theirs.seconds,
            theirs.seconds / ours.seconds,
            ours.bytes as f64 / theirs.bytes.max(1) as f64,
            theirs.seconds / narrow.seconds
        );
        let share = 100.0 * ours.bytes as f64 / bytes as f64;
        let rounds = ours.rounds as f64 / paths.len() as f64;
        if name == "monthly" {
            println!("  vzarr fetched {share:.2}% of the MB-chunk archive (target <= 2%)");
        } else {
            println!(
                "  vzarr fetched {share:.2}% of the small-chunk archive (target <= 10%) in {rounds:.2} round trips \
                 per file (target <= 3)"
            );
        }
    }
}

fn report(what: &str, m: &Measured, files: usize, archive_bytes: u64) {
    println!(
        "  {what:<28} {:7.2} s  {:6.1} requests/file  {:5.2} round trips/file  {:9.0} bytes/file  ({:.1}% of \
         the archive)",
        m.seconds,
        m.requests as f64 / files as f64,
        m.rounds as f64 / files as f64,
        m.bytes as f64 / files as f64,
        100.0 * m.bytes as f64 / archive_bytes as f64
    );
}

/// `vzarr scan` of the archive under `prefix`: with its defaults, or `in_flight` files at once.
fn vzarr_scan(endpoint: &str, prefix: &str, store: &Path, in_flight: Option<usize>) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_vzarr"));
    command.args(["scan", &format!("s3://bench/{prefix}/*.nc"), "--concat", "time", "--overwrite"]);
    if let Some(n) = in_flight {
        command.args(["--max-concurrent-requests", &n.to_string()]);
    }
    let out = command.arg("-o").arg(store).envs(s3_env(endpoint)).output().unwrap();
    assert!(out.status.success(), "vzarr scan failed: {}", String::from_utf8_lossy(&out.stderr));
}

fn kerchunk_scan(python: &Path, endpoint: &str, prefix: &str, json: &Path) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/remote_kerchunk.py");
    let out = Command::new(python)
        .arg(script)
        .args([&format!("bench/{prefix}"), "time"])
        .arg(json)
        .envs(s3_env(endpoint))
        .output()
        .unwrap();
    assert!(out.status.success(), "kerchunk failed: {}", String::from_utf8_lossy(&out.stderr));
}

/// The monthly archive with MB-sized chunks, written once.
fn ensure_monthly(dir: &Path) -> Vec<PathBuf> {
    std::fs::create_dir_all(dir).unwrap();
    let mut paths = Vec::new();
    for (month, &days) in MONTH_DAYS.iter().enumerate() {
        let path = dir.join(format!("tas_2023-{:02}.nc", month + 1));
        if !path.exists() {
            let first_day: usize = MONTH_DAYS[..month].iter().sum();
            write_month(&path, first_day, days);
        }
        paths.push(path);
    }
    paths
}

fn write_month(path: &Path, first_day: usize, days: usize) {
    let (ny, nx) = (180, 360);
    let tmp = path.with_extension("tmp");
    let mut f = netcdf::create(&tmp).unwrap();
    f.add_unlimited_dimension("time").unwrap();
    f.add_dimension("lat", ny).unwrap();
    f.add_dimension("lon", nx).unwrap();
    let mut time = f.add_variable::<f64>("time", &["time"]).unwrap();
    time.put_attribute("units", "days since 2023-01-01").unwrap();
    time.put_attribute("calendar", "standard").unwrap();
    let days_since: Vec<f64> = (first_day..first_day + days).map(|d| d as f64).collect();
    time.put_values(&days_since, (0..days,)).unwrap();
    let mut tas = f.add_variable::<f32>("tas", &["time", "lat", "lon"]).unwrap();
    tas.set_chunking(&[days, ny / 2, nx / 2]).unwrap();
    tas.put_attribute("units", "K").unwrap();
    let mut state = 0x9E37_79B9_7F4A_7C15u64 ^ first_day as u64;
    let values: Vec<f32> = (0..days * ny * nx)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            250.0 + (state >> 40) as f32 / (1u64 << 24) as f32 * 60.0
        })
        .collect();
    tas.put_values(&values, [0..days, 0..ny, 0..nx]).unwrap();
    f.close().unwrap();
    std::fs::rename(tmp, path).unwrap();
}
