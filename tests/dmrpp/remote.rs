//! Sidecars over HTTP with range requests (`tests/python/range_server.py`, standard library only):
//! a sidecar's URL scans to the same arrays and references as its data file's URL, the data file
//! fingerprinted from its own object, in at most two ranged reads of the sidecar.

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use vzarr::source::RemoteOptions;
use vzarr::ScanOptions;

/// The range server on a directory, stopped on drop.
struct Server {
    child: Child,
    base: String,
}

impl Server {
    fn start(root: &Path) -> Self {
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

#[test]
fn sidecar_urls_scan_like_their_data_files_urls() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/dmrpp/dmrpp");
    let server = Server::start(&root);
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let remote = RemoteOptions { max_retries: 0, ..RemoteOptions::default() };
    let options = ScanOptions::default();
    for name in ["SDS_shuf_2def_fle.h5", "chunked_twoD.h5", "compact_example.h5", "t_enum_grp_array.h5"] {
        let data = format!("{}/{name}", server.base);
        let sidecar = format!("{data}.dmrpp");
        let scan = |url: &str| {
            vzarr::scan::scan_url(url, &options, &remote, runtime.handle()).unwrap_or_else(|e| panic!("{e}"))
        };
        let (ours, theirs) = (scan(&sidecar), scan(&data));
        assert_eq!(ours.dataset.sources.get(0).unwrap().location, data);
        assert_eq!(ours.dataset.sources, theirs.dataset.sources, "{sidecar}: the data file's own fingerprint");
        assert_eq!(ours.dataset.arrays.len(), theirs.dataset.arrays.len(), "{sidecar}");
        for (a, b) in ours.dataset.arrays.iter().zip(&theirs.dataset.arrays) {
            assert_eq!(a.path, b.path, "{sidecar}");
            assert_eq!(a.metadata.chunk_grid, b.metadata.chunk_grid, "{sidecar}: {}", a.path);
            assert_eq!(a.metadata.data_type, b.metadata.data_type, "{sidecar}: {}", a.path);
            assert_eq!(a.chunks, b.chunks, "{sidecar}: {}", a.path);
        }
        assert!(ours.fetched.requests <= 2, "{sidecar}: {:?}", ours.fetched);
    }
}
