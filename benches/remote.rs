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
//! For each archive, `vzarr scan 's3://…/*.nc' --concat time` (the command line a user runs, with the
//! default 16 files in flight and with 64) and
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

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

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
    let mut servers = vec![ServerKind::Moto];
    match s3s_fs(&root) {
        Some(program) => servers.push(ServerKind::S3sFs(program)),
        None => println!(
            "s3s-fs not measured: not installed (`cargo install s3s-fs@0.14.1 --locked --features binary --root \
             target/tools`)"
        ),
    }
    for kind in &servers {
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

/// The S3 servers the benchmark runs on.
enum ServerKind {
    /// moto's server, from the Python environment: it answers requests one at a time in Python
    /// (a few ms each), which bounds a scan that sends many small requests.
    Moto,
    /// s3s-fs (Rust, over a directory): a server that is not the bottleneck, so that round trips and
    /// bytes are the cost, as on a cloud object store.
    S3sFs(PathBuf),
}

impl ServerKind {
    fn describe(&self) -> &'static str {
        match self {
            ServerKind::Moto => "moto_server on 127.0.0.1 (Python, one request at a time)",
            ServerKind::S3sFs(_) => "s3s-fs on 127.0.0.1 (Rust, concurrent)",
        }
    }
}

/// The s3s-fs program: `target/tools/bin/s3s-fs`, else on the PATH.
fn s3s_fs(root: &Path) -> Option<PathBuf> {
    let local = root.join("target/tools/bin/s3s-fs");
    if local.exists() {
        return Some(local);
    }
    let found = Command::new("s3s-fs").arg("--version").output().is_ok_and(|o| o.status.success());
    found.then(|| PathBuf::from("s3s-fs"))
}

/// Scans both archives with vzarr and kerchunk through `proxy`, printing what each did.
fn measure_archives(proxy: &LatencyProxy, python: &Path, archives: [(&str, &Vec<PathBuf>); 2]) {
    let work = tempfile::tempdir().unwrap();
    for (name, paths) in archives {
        let bytes: u64 = paths.iter().map(|p| std::fs::metadata(p).unwrap().len()).sum();
        println!("\n{name} archive: {} files, {:.1} MB", paths.len(), bytes as f64 / 1e6);
        let store = work.path().join(format!("{name}.vzarr"));
        let ours = proxy.measure(|| vzarr_scan(&proxy.endpoint(), name, &store, 16));
        let wide = proxy.measure(|| vzarr_scan(&proxy.endpoint(), name, &store, 64));
        let theirs = proxy.measure(|| kerchunk_scan(python, &proxy.endpoint(), name, &work.path().join(name)));
        report("vzarr scan (16 in flight)", &ours, paths.len(), bytes);
        report("vzarr scan (64 in flight)", &wide, paths.len(), bytes);
        report("kerchunk (h5py over s3fs)", &theirs, paths.len(), bytes);
        println!(
            "  vzarr / kerchunk: {:.3}x the time (target <= 0.1), {:.3}x the bytes",
            ours.seconds / theirs.seconds,
            ours.bytes as f64 / theirs.bytes.max(1) as f64
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

/// What one tool did through the proxy.
struct Measured {
    seconds: f64,
    requests: u64,
    bytes: u64,
    /// Round trips to the objects (listings not counted).
    rounds: u64,
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

fn check_python(python: &Path) -> Result<(), String> {
    if !python.exists() {
        return Err(format!("{} is missing", python.display()));
    }
    let probe = Command::new(python).args(["-c", "import kerchunk, s3fs, moto, boto3"]).output();
    match probe {
        Ok(out) if out.status.success() => Ok(()),
        Ok(out) => Err(String::from_utf8_lossy(&out.stderr).lines().last().unwrap_or("import failed").to_string()),
        Err(e) => Err(e.to_string()),
    }
}

/// The S3 settings of both tools, pointed at `endpoint`.
fn s3_env(endpoint: &str) -> [(&'static str, String); 5] {
    [
        ("AWS_ENDPOINT_URL", endpoint.to_string()),
        ("AWS_ALLOW_HTTP", "true".into()),
        ("AWS_ACCESS_KEY_ID", "testing".into()),
        ("AWS_SECRET_ACCESS_KEY", "testing".into()),
        ("AWS_REGION", "us-east-1".into()),
    ]
}

fn vzarr_scan(endpoint: &str, prefix: &str, store: &Path, in_flight: usize) {
    let out = Command::new(env!("CARGO_BIN_EXE_vzarr"))
        .args(["scan", &format!("s3://bench/{prefix}/*.nc"), "--concat", "time", "--overwrite"])
        .args(["--max-concurrent-requests", &in_flight.to_string(), "-o"])
        .arg(store)
        .envs(s3_env(endpoint))
        .output()
        .unwrap();
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

/// A running S3 server, stopped on drop.
struct S3Server {
    child: Child,
    port: u16,
    /// s3s-fs's directory of buckets.
    _root: Option<tempfile::TempDir>,
}

impl S3Server {
    fn start(kind: &ServerKind, python: &Path) -> Self {
        let port = free_port();
        let (mut command, root) = match kind {
            ServerKind::Moto => {
                let mut command = Command::new(python.with_file_name("moto_server"));
                command.args(["-H", "127.0.0.1", "-p", &port.to_string()]);
                (command, None)
            }
            ServerKind::S3sFs(program) => {
                let root = tempfile::tempdir().unwrap();
                let mut command = Command::new(program);
                command
                    .args(["--host", "127.0.0.1", "--port", &port.to_string()])
                    .args(["--access-key", "testing", "--secret-key", "testing"])
                    .arg(root.path());
                (command, Some(root))
            }
        };
        let child = command.stdout(Stdio::null()).stderr(Stdio::null()).spawn().expect("the S3 server starts");
        let started = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(started.elapsed() < Duration::from_secs(30), "{} did not start", kind.describe());
            std::thread::sleep(Duration::from_millis(100));
        }
        S3Server { child, port, _root: root }
    }

    /// Uploads `paths` to `s3://bucket/prefix/` directly (not through the proxy).
    fn upload(&self, python: &Path, bucket: &str, prefix: &str, paths: &[PathBuf]) {
        let mut script = format!(
            "import boto3\ns3 = boto3.client('s3', endpoint_url='http://127.0.0.1:{}', aws_access_key_id='testing', \
             aws_secret_access_key='testing', region_name='us-east-1')\n\
             if not any(b['Name'] == '{bucket}' for b in s3.list_buckets().get('Buckets', [])): s3.create_bucket(Bucket='{bucket}')\n",
            self.port
        );
        for path in paths {
            let name = path.file_name().unwrap().to_str().unwrap();
            script.push_str(&format!(
                "s3.upload_file({:?}, '{bucket}', '{prefix}/{name}')\n",
                path.display().to_string()
            ));
        }
        let status = Command::new(python).args(["-c", &script]).status().unwrap();
        assert!(status.success(), "uploading to the S3 server failed");
    }
}

impl Drop for S3Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A TCP proxy in front of the S3 server that holds every HTTP request `latency` before passing it
/// on, and counts requests, round trips per object and the bytes sent back.
struct LatencyProxy {
    port: u16,
    requests: Arc<Counts>,
    bytes: Arc<AtomicU64>,
}

/// Requests, and round trips to objects: when each object was last asked for.
struct Counts {
    latency: Duration,
    requests: AtomicU64,
    rounds: AtomicU64,
    last: std::sync::Mutex<std::collections::HashMap<String, Instant>>,
}

impl Counts {
    /// Counts a request whose first bytes are `data`.
    fn request(&self, data: &[u8]) {
        self.requests.fetch_add(1, Ordering::SeqCst);
        let line = String::from_utf8_lossy(&data[..data.len().min(1024)]);
        let Some(target) = line.split(' ').nth(1) else { return };
        if target.contains('?') {
            return; // a listing, not an object read
        }
        let now = Instant::now();
        let mut last = self.last.lock().unwrap();
        let waited = last.get(target).is_none_or(|&before| now.duration_since(before) > self.latency / 2);
        if waited {
            self.rounds.fetch_add(1, Ordering::SeqCst);
        }
        last.insert(target.to_string(), now);
    }
}

impl LatencyProxy {
    fn start(upstream: u16, latency: Duration) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let counts = Counts {
            latency,
            requests: AtomicU64::new(0),
            rounds: AtomicU64::new(0),
            last: std::sync::Mutex::default(),
        };
        let (requests, bytes) = (Arc::new(counts), Arc::new(AtomicU64::new(0)));
        let (r, b) = (requests.clone(), bytes.clone());
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let Ok(server) = TcpStream::connect(("127.0.0.1", upstream)) else { continue };
                let (r, b) = (r.clone(), b.clone());
                let (client2, server2) = (client.try_clone().unwrap(), server.try_clone().unwrap());
                std::thread::spawn(move || forward_requests(client, server, latency, &r));
                std::thread::spawn(move || forward_responses(server2, client2, &b));
            }
        });
        LatencyProxy { port, requests, bytes }
    }

    fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Runs `f`, returning its wall time and the requests, round trips and bytes that went through
    /// the proxy.
    fn measure(&self, f: impl FnOnce()) -> Measured {
        self.requests.last.lock().unwrap().clear();
        let counts = &self.requests;
        let (requests, rounds) = (counts.requests.load(Ordering::SeqCst), counts.rounds.load(Ordering::SeqCst));
        let bytes = self.bytes.load(Ordering::SeqCst);
        let start = Instant::now();
        f();
        let seconds = start.elapsed().as_secs_f64();
        Measured {
            seconds,
            requests: counts.requests.load(Ordering::SeqCst) - requests,
            bytes: self.bytes.load(Ordering::SeqCst) - bytes,
            rounds: counts.rounds.load(Ordering::SeqCst) - rounds,
        }
    }
}

/// True when `data` starts an HTTP request line.
fn starts_request(data: &[u8]) -> bool {
    ["GET ", "HEAD ", "PUT ", "POST ", "DELETE "].iter().any(|m| data.starts_with(m.as_bytes()))
}

fn forward_requests(mut from: TcpStream, mut to: TcpStream, latency: Duration, requests: &Counts) {
    let mut buf = vec![0u8; 64 << 10];
    while let Ok(n) = from.read(&mut buf) {
        if n == 0 {
            break;
        }
        if starts_request(&buf[..n]) {
            requests.request(&buf[..n]);
            std::thread::sleep(latency);
        }
        if to.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    let _ = to.shutdown(Shutdown::Write);
}

fn forward_responses(mut from: TcpStream, mut to: TcpStream, bytes: &AtomicU64) {
    let mut buf = vec![0u8; 256 << 10];
    while let Ok(n) = from.read(&mut buf) {
        if n == 0 {
            break;
        }
        bytes.fetch_add(n as u64, Ordering::SeqCst);
        if to.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    let _ = to.shutdown(Shutdown::Write);
}
