//! Real servers on 127.0.0.1 for the remote tests, started by the tests themselves: an S3-compatible
//! server (moto, installed into `target/pyenv` by `tests/python/setup.sh`, run with its writes
//! atomic by `tests/python/moto_atomic.py`).

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running `moto_server`, stopped on drop.
pub struct S3Server {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    pub endpoint: String,
    python: PathBuf,
}

/// The venv's Python and moto_server, when the environment has them.
fn moto() -> Option<(PathBuf, PathBuf)> {
    let bin = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/pyenv/bin");
    let (python, server) = (bin.join("python"), bin.join("moto_server"));
    (python.exists() && server.exists()).then_some((python, server))
}

impl S3Server {
    /// Starts a server on a free port and waits until it accepts connections; None when moto is not
    /// installed (the caller says so in one line).
    pub fn start() -> Option<Self> {
        let (python, _) = moto()?;
        let port = TcpListener::bind("127.0.0.1:0").ok()?.local_addr().ok()?.port();
        let child = {
            let _no_files = super::no_hdf5_files_open();
            // moto with its writes atomic (tests/python/moto_atomic.py says why).
            let atomic = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/moto_atomic.py");
            Command::new(&python)
                .arg(atomic)
                .args(["-H", "127.0.0.1", "-p", &port.to_string()])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .ok()?
        };
        let server = S3Server { child, endpoint: format!("http://127.0.0.1:{port}"), python };
        let address: SocketAddr = format!("127.0.0.1:{port}").parse().ok()?;
        let started = Instant::now();
        while TcpStream::connect_timeout(&address, Duration::from_millis(200)).is_err() {
            assert!(started.elapsed() < Duration::from_secs(30), "moto_server did not start on port {port}");
            std::thread::sleep(Duration::from_millis(100));
        }
        Some(server)
    }

    /// The object_store configuration that reaches this server.
    pub fn config(&self) -> Vec<(String, String)> {
        [
            ("aws_endpoint", self.endpoint.as_str()),
            ("aws_allow_http", "true"),
            ("aws_access_key_id", "testing"),
            ("aws_secret_access_key", "testing"),
            ("aws_region", "us-east-1"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
    }

    /// The environment variables that point vzarr's command line at this server (`AWS_ENDPOINT_URL`,
    /// `AWS_ALLOW_HTTP`, credentials, region).
    pub fn env(&self) -> Vec<(String, String)> {
        self.config().into_iter().map(|(k, v)| (k.to_uppercase(), v)).collect()
    }

    /// Runs `vzarr ARGS` pointed at this server ([`S3Server::env`]), its standard output captured.
    pub fn vzarr(&self, args: &[&str]) -> super::Run {
        let mut command = super::vzarr_command();
        command.args(args).envs(self.env()).stdout(Stdio::piped());
        super::run(command)
    }

    /// Creates `bucket` and uploads the sample archive's `months` (`fixtures/sample/NAME`) under their
    /// names; returns their local paths, in the same order.
    pub fn upload_samples(&self, bucket: &str, months: &[&str]) -> Vec<PathBuf> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/sample");
        let local: Vec<PathBuf> = months.iter().map(|m| root.join(m)).collect();
        let objects: Vec<(&str, &Path)> = months.iter().zip(&local).map(|(m, p)| (*m, p.as_path())).collect();
        self.upload(bucket, &objects);
        local
    }

    /// Creates `bucket` and uploads each (key, local file) with boto3 (moto's dependency).
    pub fn upload(&self, bucket: &str, objects: &[(&str, &Path)]) {
        let mut script = format!(
            "import boto3\ns3 = boto3.client('s3', endpoint_url='{}', aws_access_key_id='testing', \
             aws_secret_access_key='testing', region_name='us-east-1')\ns3.create_bucket(Bucket='{bucket}')\n",
            self.endpoint
        );
        for (key, path) in objects {
            script.push_str(&format!("s3.upload_file({:?}, '{bucket}', {key:?})\n", path.display().to_string()));
        }
        let _no_files = super::no_hdf5_files_open();
        let status = Command::new(&self.python).args(["-c", &script]).status().unwrap();
        assert!(status.success(), "uploading to moto failed");
    }
}

impl Drop for S3Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A running `tests/python/range_server.py` (standard library only: any Python 3 runs it), serving
/// a directory over HTTP with range requests, optionally with faults; stopped on drop.
pub struct HttpServer {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
}

impl HttpServer {
    /// Serves `root`; `faults` are the script's options (`--fail N`, `--hang SUBSTRING`).
    pub fn start(root: &Path, faults: &[&str]) -> Self {
        use std::io::BufRead;
        let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
        let venv = manifest.join("target/pyenv/bin/python");
        let python = if venv.exists() { venv } else { PathBuf::from("python3") };
        let mut child = {
            let _no_files = super::no_hdf5_files_open();
            Command::new(python)
                .arg(manifest.join("tests/python/range_server.py"))
                .arg(root)
                .args(faults)
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .expect("python3 runs tests/python/range_server.py")
        };
        let mut line = String::new();
        let stdout = child.stdout.take().expect("piped stdout");
        std::io::BufReader::new(stdout).read_line(&mut line).expect("the server prints its port");
        let port = line.trim().strip_prefix("PORT ").unwrap_or_else(|| panic!("range_server.py said {line:?}"));
        HttpServer { child, base: format!("http://127.0.0.1:{port}") }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
