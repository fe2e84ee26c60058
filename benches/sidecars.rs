//! DMR++ sidecar benchmark (issue 39), ratios against baselines measured in the same run:
//!
//! - **Parse**: a sidecar of 10^5 chunks (`v(1000, 10000)` int16 in chunks of (10, 10), deflate +
//!   shuffle, written by libnetcdf; its sidecar by `vzarr scan --format dmrpp`) scanned through the
//!   library (`scan_file`: XML parsed, every chunk translated, the data file fingerprinted), the best
//!   of 5 (target <= 50 ms); the scan of the same NetCDF-4 file's HDF5 metadata is the baseline.
//! - **Remote**: the daily benchmark archive of `benches/common` (365 granules of 288 chunks by
//!   default) and its sidecars (`vzarr scan --format dmrpp --url-prefix DIR/=s3://bench/granules/`)
//!   uploaded to an S3 server (`moto_server` from the Python environment of `tests/python/setup.sh`,
//!   and s3s-fs where installed, as `benches/remote.rs` finds it) and read through a proxy adding 20
//!   ms to every request. Timed with the defaults: `vzarr scan 's3://bench/granules/*.nc.dmrpp'
//!   --concat time`; the baselines: `vzarr scan 's3://bench/granules/*.nc' --concat time` (the same
//!   granules' HDF5 metadata; target: sidecars >= 5x faster) and VirtualiZarr's
//!   `open_virtual_mfdataset` with `DMRPPParser` on the same sidecars
//!   (`benches/sidecars_virtualizarr.py`; target >= 20x). Requests per granule are printed (the
//!   target: one request per granule).
//!
//! Run: `cargo bench --bench sidecars [-- --granules N --latency-ms MS --chunks N]`. Without the
//! Python environment (moto_server, VirtualiZarr) the remote part says in one line why it was not
//! measured.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::s3::{check_python, s3_env, servers, LatencyProxy, Measured, S3Server};
use common::{archive_dir, ensure_archive};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if !args.iter().any(|a| a == "--bench") {
        return; // built by `cargo test --all-targets`: nothing to measure there
    }
    let arg = |name: &str, default: u64| {
        args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)?.parse().ok()).unwrap_or(default)
    };
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    parse(&root.join("target/bench-sidecars"), arg("--chunks", 100_000) as usize);
    remote(&root, arg("--granules", 365) as usize, Duration::from_millis(arg("--latency-ms", 20)));
}

/// Times the scan of a sidecar of `chunks` chunks against the scan of its NetCDF-4 file.
fn parse(dir: &Path, chunks: usize) {
    let (file, sidecar) = ensure_big_sidecar(dir, chunks);
    let options = vzarr::scan::ScanOptions::default();
    let best = |path: &Path| {
        let mut times: Vec<f64> =
            (0..5).map(|_| common::time(|| drop(vzarr::scan::scan_file(path, &options).unwrap()))).collect();
        times.sort_by(f64::total_cmp);
        times[0]
    };
    let from_sidecar = best(&sidecar);
    let from_file = best(&file);
    let found: usize = vzarr::scan::scan_file(&sidecar, &options).unwrap().arrays.iter().map(|a| a.chunks.len()).sum();
    let bytes = std::fs::metadata(&sidecar).unwrap().len();
    println!(
        "sidecar of {found} chunks ({:.1} MB of XML): scanned in {:.1} ms (target <= 50), the HDF5 file's metadata \
         in {:.1} ms: {:.2}x",
        bytes as f64 / 1e6,
        from_sidecar * 1e3,
        from_file * 1e3,
        from_file / from_sidecar
    );
}

/// The NetCDF-4 file of `chunks` chunks and its sidecar, written once.
fn ensure_big_sidecar(dir: &Path, chunks: usize) -> (PathBuf, PathBuf) {
    let (ny, cy, cx) = (1000, 10, 10);
    let nx = (chunks / (ny / cy)).max(1) * cx;
    let file = dir.join(format!("chunks-{chunks}.nc"));
    // Beside its data file, as BES writes it (the data file lies in the sidecar's own container).
    let sidecar = dir.join(format!("chunks-{chunks}.nc.dmrpp"));
    if sidecar.exists() {
        return (file, sidecar);
    }
    std::fs::create_dir_all(dir).unwrap();
    let tmp = file.with_extension("tmp");
    let mut f = netcdf::create(&tmp).unwrap();
    f.add_dimension("y", ny).unwrap();
    f.add_dimension("x", nx).unwrap();
    let mut v = f.add_variable::<i16>("v", &["y", "x"]).unwrap();
    v.set_chunking(&[cy, cx]).unwrap();
    v.set_compression(1, true).unwrap();
    let values: Vec<i16> = (0..ny * nx).map(|i| ((i * 7919) % 3001) as i16).collect();
    v.put_values(&values, [0..ny, 0..nx]).unwrap();
    f.close().unwrap();
    std::fs::rename(&tmp, &file).unwrap();
    vzarr(&["scan".as_ref(), file.as_os_str(), "--format".as_ref(), "dmrpp".as_ref(), "-o".as_ref(), dir.as_os_str()]);
    (file, sidecar)
}

/// Runs the release `vzarr` with `args`, which must succeed.
fn vzarr(args: &[&std::ffi::OsStr]) {
    let out = Command::new(env!("CARGO_BIN_EXE_vzarr")).args(args).output().unwrap();
    assert!(out.status.success(), "vzarr {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
}

/// The remote comparison on every S3 server available.
fn remote(root: &Path, granules: usize, latency: Duration) {
    let python = root.join("target/pyenv/bin/python");
    if let Err(why) = check_python(&python).and_then(|()| check_virtualizarr(&python)) {
        println!("remote sidecar benchmark not run: {why} (run tests/python/setup.sh)");
        return;
    }
    let paths = ensure_archive(&archive_dir(granules), granules);
    let sidecars = ensure_sidecars(root, granules, &paths);
    for kind in &servers(root) {
        let server = S3Server::start(kind, &python);
        server.upload(&python, "bench", "granules", &paths);
        server.upload(&python, "bench", "granules", &sidecars);
        let proxy = LatencyProxy::start(server.port, latency);
        println!(
            "\n{granules} granules and their sidecars on {}, reached through a proxy adding {} ms per request",
            kind.describe(),
            latency.as_millis()
        );
        measure(&proxy, &python, granules);
    }
}

fn check_virtualizarr(python: &Path) -> Result<(), String> {
    let probe = Command::new(python).args(["-c", "import virtualizarr, obstore, obspec_utils"]).output();
    match probe {
        Ok(out) if out.status.success() => Ok(()),
        Ok(out) => Err(String::from_utf8_lossy(&out.stderr).lines().last().unwrap_or("import failed").to_string()),
        Err(e) => Err(e.to_string()),
    }
}

/// The sidecars of `paths`, written once by `vzarr scan --format dmrpp`, their `dmrpp:href` the
/// granules' S3 URLs.
fn ensure_sidecars(root: &Path, granules: usize, paths: &[PathBuf]) -> Vec<PathBuf> {
    let dir = root.join(format!("target/bench-sidecars/daily-{granules}"));
    let sidecars: Vec<PathBuf> =
        paths.iter().map(|p| dir.join(format!("{}.dmrpp", p.file_name().unwrap().to_str().unwrap()))).collect();
    if sidecars.iter().all(|s| s.exists()) {
        return sidecars;
    }
    let prefix = format!("{}/=s3://bench/granules/", archive_dir(granules).display());
    let mut args: Vec<&std::ffi::OsStr> = vec!["scan".as_ref()];
    args.extend(paths.iter().map(|p| p.as_os_str()));
    args.extend(["--format", "dmrpp", "--overwrite", "--url-prefix", &prefix, "-o"].map(std::ffi::OsStr::new));
    args.push(dir.as_os_str());
    vzarr(&args);
    sidecars
}

/// Scans the granules from their sidecars, from their HDF5 metadata, and with VirtualiZarr.
fn measure(proxy: &LatencyProxy, python: &Path, granules: usize) {
    let work = tempfile::tempdir().unwrap();
    let store = work.path().join("granules.vzarr");
    let endpoint = proxy.endpoint();
    // Once untimed first: the server's and the system's caches warm for every tool measured.
    vzarr_scan(&endpoint, "*.nc.dmrpp", &store);
    let sidecars = proxy.measure(|| vzarr_scan(&endpoint, "*.nc.dmrpp", &store));
    let hdf5 = proxy.measure(|| vzarr_scan(&endpoint, "*.nc", &store));
    let virtualizarr = proxy.measure(|| virtualizarr_scan(python, &endpoint));
    report("vzarr scan, DMR++ sidecars", &sidecars, granules);
    report("vzarr scan, HDF5 metadata", &hdf5, granules);
    report("VirtualiZarr, DMRPPParser", &virtualizarr, granules);
    println!(
        "  sidecars: {:.2}x faster than vzarr's HDF5 scan (target >= 5), {:.2}x faster than VirtualiZarr's \
         DMRPPParser (target >= 20); {:.2} requests per granule (target 1)",
        hdf5.seconds / sidecars.seconds,
        virtualizarr.seconds / sidecars.seconds,
        sidecars.requests as f64 / granules as f64
    );
}

fn report(what: &str, m: &Measured, granules: usize) {
    println!(
        "  {what:<28} {:7.2} s  {:6.2} requests/granule  {:5.2} round trips/granule  {:9.0} bytes/granule",
        m.seconds,
        m.requests as f64 / granules as f64,
        m.rounds as f64 / granules as f64,
        m.bytes as f64 / granules as f64,
    );
}

/// `vzarr scan 's3://bench/granules/PATTERN' --concat time` with the default settings.
fn vzarr_scan(endpoint: &str, pattern: &str, store: &Path) {
    let out = Command::new(env!("CARGO_BIN_EXE_vzarr"))
        .args(["scan", &format!("s3://bench/granules/{pattern}"), "--concat", "time", "--overwrite", "-o"])
        .arg(store)
        .envs(s3_env(endpoint))
        .output()
        .unwrap();
    assert!(out.status.success(), "vzarr scan {pattern} failed: {}", String::from_utf8_lossy(&out.stderr));
}

fn virtualizarr_scan(python: &Path, endpoint: &str) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/sidecars_virtualizarr.py");
    let out =
        Command::new(python).arg(script).args(["bench", "granules/", "time"]).envs(s3_env(endpoint)).output().unwrap();
    assert!(out.status.success(), "VirtualiZarr failed: {}", String::from_utf8_lossy(&out.stderr));
}
