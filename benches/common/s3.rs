//! The S3 set-up of the remote benchmarks (`remote`, `sidecars`): local S3-compatible servers
//! (`moto_server` from the Python environment of `tests/python/setup.sh`; s3s-fs where installed),
//! and a proxy in front of them that adds a fixed latency to every request, as a distant object
//! store would, and counts the requests, round trips and bytes that pass through it.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The S3 servers the benchmark runs on.
pub enum ServerKind {
    /// moto's server, from the Python environment: it answers requests one at a time in Python
    /// (a few ms each), which bounds a scan that sends many small requests.
    Moto,
    /// s3s-fs (Rust, over a directory): a server that is not the bottleneck, so that round trips and
    /// bytes are the cost, as on a cloud object store.
    S3sFs(PathBuf),
}

impl ServerKind {
    pub fn describe(&self) -> &'static str {
        match self {
            ServerKind::Moto => "moto_server on 127.0.0.1 (Python, one request at a time)",
            ServerKind::S3sFs(_) => "s3s-fs on 127.0.0.1 (Rust, concurrent)",
        }
    }
}

/// The s3s-fs program: `target/tools/bin/s3s-fs`, else on the PATH.
pub fn s3s_fs(root: &Path) -> Option<PathBuf> {
    let local = root.join("target/tools/bin/s3s-fs");
    if local.exists() {
        return Some(local);
    }
    let found = Command::new("s3s-fs").arg("--version").output().is_ok_and(|o| o.status.success());
    found.then(|| PathBuf::from("s3s-fs"))
}

/// The servers a benchmark measures on: moto, and s3s-fs where it is installed (else one line says
/// how to install it).
pub fn servers(root: &Path) -> Vec<ServerKind> {
    let mut servers = vec![ServerKind::Moto];
    match s3s_fs(root) {
        Some(program) => servers.push(ServerKind::S3sFs(program)),
        None => println!(
            "s3s-fs not measured: not installed (`cargo install s3s-fs@0.14.1 --locked --features binary --root \
             target/tools`)"
        ),
    }
    servers
}

/// What one tool did through the proxy.
pub struct Measured {
    /// Wall time.
    pub seconds: f64,
    /// Requests sent.
    pub requests: u64,
    /// Bytes received.
    pub bytes: u64,
    /// Round trips to the objects (listings not counted).
    pub rounds: u64,
    /// Each request's method and target (`GET /bench/repo.icechunk/refs/branch.main/ref.json`), in
    /// the order sent.
    pub lines: Vec<String>,
}

pub fn check_python(python: &Path) -> Result<(), String> {
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
pub fn s3_env(endpoint: &str) -> [(&'static str, String); 5] {
    [
        ("AWS_ENDPOINT_URL", endpoint.to_string()),
        ("AWS_ALLOW_HTTP", "true".into()),
        ("AWS_ACCESS_KEY_ID", "testing".into()),
        ("AWS_SECRET_ACCESS_KEY", "testing".into()),
        ("AWS_REGION", "us-east-1".into()),
    ]
}

/// A running S3 server, stopped on drop.
pub struct S3Server {
    child: Child,
    /// The server's port on 127.0.0.1.
    pub port: u16,
    /// s3s-fs's directory of buckets.
    _root: Option<tempfile::TempDir>,
}

impl S3Server {
    pub fn start(kind: &ServerKind, python: &Path) -> Self {
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

    /// Uploads every file under `dir` to `s3://bucket/prefix/` under its path relative to `dir`
    /// (an Icechunk repository, say), directly (not through the proxy).
    pub fn upload_tree(&self, python: &Path, bucket: &str, prefix: &str, dir: &Path) {
        let script = format!(
            "import boto3, os\ns3 = boto3.client('s3', endpoint_url='http://127.0.0.1:{}', aws_access_key_id='testing', \
             aws_secret_access_key='testing', region_name='us-east-1')\n\
             if not any(b['Name'] == '{bucket}' for b in s3.list_buckets().get('Buckets', [])): s3.create_bucket(Bucket='{bucket}')\n\
             root = {:?}\n\
             for top, _, names in os.walk(root):\n    \
                 for name in names:\n        \
                     path = os.path.join(top, name)\n        \
                     s3.upload_file(path, '{bucket}', '{prefix}/' + os.path.relpath(path, root))\n",
            self.port,
            dir.display().to_string()
        );
        let status = Command::new(python).args(["-c", &script]).status().unwrap();
        assert!(status.success(), "uploading {} to the S3 server failed", dir.display());
    }

    /// Uploads `paths` to `s3://bucket/prefix/` directly (not through the proxy).
    pub fn upload(&self, python: &Path, bucket: &str, prefix: &str, paths: &[PathBuf]) {
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

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A TCP proxy in front of the S3 server that holds every HTTP request `latency` before passing it
/// on, and counts requests, round trips per object and the bytes sent back.
pub struct LatencyProxy {
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
    lines: std::sync::Mutex<Vec<String>>,
}

impl Counts {
    /// Counts a request whose first bytes are `data`.
    fn request(&self, data: &[u8]) {
        self.requests.fetch_add(1, Ordering::SeqCst);
        let line = String::from_utf8_lossy(&data[..data.len().min(1024)]);
        let mut words = line.split(' ');
        let (method, target) = (words.next().unwrap_or_default(), words.next());
        self.lines.lock().unwrap().push(format!("{method} {}", target.unwrap_or_default()));
        let Some(target) = target else { return };
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
    pub fn start(upstream: u16, latency: Duration) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let counts = Counts {
            latency,
            requests: AtomicU64::new(0),
            rounds: AtomicU64::new(0),
            last: std::sync::Mutex::default(),
            lines: std::sync::Mutex::default(),
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

    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Runs `f`, returning its wall time and the requests, round trips and bytes that went through
    /// the proxy.
    pub fn measure(&self, f: impl FnOnce()) -> Measured {
        self.requests.last.lock().unwrap().clear();
        self.requests.lines.lock().unwrap().clear();
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
            lines: std::mem::take(&mut *counts.lines.lock().unwrap()),
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
