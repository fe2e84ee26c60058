//! The range server (`tests/python/range_server.py`, standard library only) on a directory, for tests
//! of sources over HTTP with range requests; shared by the HDF4 and DMR++ remote tests.

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// The range server on a directory, stopped on drop.
pub(crate) struct Server {
    child: Child,
    /// The server's base URL (`http://127.0.0.1:PORT`).
    pub(crate) base: String,
}

impl Server {
    /// Starts the server on `root` (with the test environment's Python when it is set up).
    pub(crate) fn start(root: &Path) -> Self {
        let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
        let venv = manifest.join("target/pyenv/bin/python");
        let python = if venv.exists() { venv } else { PathBuf::from("python3") };
        let mut child = Command::new(python)
            .arg(manifest.join("tests/python/range_server.py"))
            .arg(root)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("python3 runs tests/python/range_server.py");
        let mut line = String::new();
        let stdout = child.stdout.take().expect("piped stdout");
        std::io::BufReader::new(stdout).read_line(&mut line).expect("the server prints its port");
        let port = line.trim().strip_prefix("PORT ").unwrap_or_else(|| panic!("range_server.py said {line:?}"));
        Server { child, base: format!("http://127.0.0.1:{port}") }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
