//! Sources over plain HTTP(S) with range requests, against a real server on 127.0.0.1
//! (`tests/python/range_server.py`, standard library only), including a server that fails requests
//! (retried with backoff) and one that never answers (ended by the request timeout): the store's
//! values equal libnetcdf's reads of the same files, and every failure is one line naming the URL.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use vzarr::read::RemoteOptions;
use vzarr::ScanOptions;

use crate::common::servers::HttpServer;
use crate::common::{assert_store_matches_oracle, cli, Run};

/// A directory with a NetCDF-4 sample month and a NetCDF-3 file.
fn served_files(dir: &Path) -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/sample");
    let month = dir.join("tas_2023-01.nc");
    std::fs::copy(root.join("tas_2023-01.nc"), &month).unwrap();
    let classic = crate::common::with_hdf5_files(|| {
        crate::common::classic::write_mixed(dir, "classic.nc", netcdf::Options::_64BIT_OFFSET, 4)
    });
    vec![month, classic]
}

fn scan_cli(url: &str, store: &Path, flags: &[&str]) -> Run {
    let mut args = vec!["scan".to_string(), url.to_string(), "-o".into(), store.display().to_string()];
    args.extend(flags.iter().map(|f| f.to_string()));
    cli(&args)
}

/// Scanning through ranged GETs gives exactly the local scan's references (NetCDF-4 and NetCDF-3);
/// `vzarr scan URL` then reading the store (its sources over HTTP) gives libnetcdf's values.
#[test]
fn http_sources_scan_and_read_like_local_files() {
    let dir = tempfile::tempdir().unwrap();
    let files = served_files(dir.path());
    let server = HttpServer::start(dir.path(), &[]);
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let remote = RemoteOptions { max_retries: 0, ..RemoteOptions::default() };
    for file in &files {
        let url = format!("{}/{}", server.base, file.file_name().unwrap().to_str().unwrap());
        let ours = vzarr::scan::scan_url(&url, &ScanOptions::default(), &remote, runtime.handle())
            .unwrap_or_else(|e| panic!("{e}"))
            .dataset;
        let theirs = crate::common::scan(file, &ScanOptions::default()).unwrap();
        assert_eq!(ours.sources.get(0).unwrap().location, url);
        assert_eq!(ours.arrays.len(), theirs.arrays.len(), "{url}");
        for (a, b) in ours.arrays.iter().zip(&theirs.arrays) {
            assert_eq!((&a.path, &a.metadata, &a.chunks), (&b.path, &b.metadata, &b.chunks), "{url}");
        }
    }
    // The command line, and reads of the store's sources over HTTP.
    let url = format!("{}/tas_2023-01.nc", server.base);
    let store = dir.path().join("tas.vzarr");
    let run = scan_cli(&url, &store, &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_store_matches_oracle(&files[0], &store);
}

/// A server that answers 503 to its first requests: the retries get through (and the store equals
/// libnetcdf's reads); with fewer retries than failures the scan is one line naming the URL.
#[test]
fn failed_requests_are_retried_then_reported() {
    let dir = tempfile::tempdir().unwrap();
    let file = served_files(dir.path()).remove(0);
    let flaky = HttpServer::start(dir.path(), &["--fail", "3"]);
    let url = format!("{}/tas_2023-01.nc", flaky.base);
    let store = dir.path().join("retried.vzarr");
    let run = scan_cli(&url, &store, &["--retries", "4"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_store_matches_oracle(&file, &store);
    let failing = HttpServer::start(dir.path(), &["--fail", "1000"]);
    let url = format!("{}/tas_2023-01.nc", failing.base);
    let refused = dir.path().join("refused.vzarr");
    let run = scan_cli(&url, &refused, &["--retries", "1"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(run.stderr_lines().len(), 1, "{}", run.stderr);
    assert!(run.stderr.contains(&url) && run.stderr.contains("503"), "{}", run.stderr);
    assert!(!refused.exists());
}

/// A server that never answers: the request timeout ends the scan with one line naming the URL, and
/// reading a store whose source server is gone fails the same way instead of hanging.
#[test]
fn a_silent_server_times_out_and_a_gone_one_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let file = served_files(dir.path()).remove(0);
    let silent = HttpServer::start(dir.path(), &["--hang", ".nc"]);
    let url = format!("{}/tas_2023-01.nc", silent.base);
    let started = Instant::now();
    let run = scan_cli(&url, &dir.path().join("silent.vzarr"), &["--retries", "0", "--request-timeout", "1"]);
    assert!(started.elapsed() < Duration::from_secs(60), "the timeout ended the scan");
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(run.stderr_lines().len(), 1, "{}", run.stderr);
    assert!(run.stderr.contains(&url), "{}", run.stderr);
    drop(silent);
    // A store scanned while the server ran, read after it stopped.
    let server = HttpServer::start(dir.path(), &[]);
    let url = format!("{}/tas_2023-01.nc", server.base);
    let store = dir.path().join("s.vzarr");
    assert_eq!(scan_cli(&url, &store, &[]).code, 0);
    assert_store_matches_oracle(&file, &store);
    drop(server);
    let npy = dir.path().join("tas.npy");
    let store_text = store.display().to_string();
    let run = cli(&["read", &store_text, "tas", "-o", &npy.display().to_string(), "--retries", "0"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(run.stderr_lines().len(), 1, "{}", run.stderr);
    assert!(run.stderr.contains(&url), "{}", run.stderr);
    assert!(!npy.exists());
}

/// HTTP has no listing: an archive served over HTTP is given as a list of URLs (`--files-from`, in
/// any order), scanned and concatenated along time; the store's values equal libnetcdf's reads of
/// the files, in time order.
#[test]
fn a_url_list_over_http_is_one_archive() {
    let dir = tempfile::tempdir().unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/sample");
    let months = ["tas_2023-03.nc", "tas_2023-01.nc", "tas_2023-02.nc"];
    for month in months {
        std::fs::copy(root.join(month), dir.path().join(month)).unwrap();
    }
    let server = HttpServer::start(dir.path(), &[]);
    let list = dir.path().join("urls.txt");
    let urls: String = months.iter().map(|m| format!("{}/{m}\n", server.base)).collect();
    std::fs::write(&list, urls).unwrap();
    let store = dir.path().join("tas.vzarr");
    let run = cli(&[
        "scan",
        "--files-from",
        &list.display().to_string(),
        "--concat",
        "time",
        "-o",
        &store.display().to_string(),
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let mut ordered: Vec<PathBuf> = months.iter().map(|m| dir.path().join(m)).collect();
    ordered.sort();
    let theirs: Vec<u8> = ordered.iter().flat_map(|p| crate::common::oracle_read(p, "tas", None)).collect();
    let ours = crate::common::read(&crate::common::open_store(&store), "tas", "");
    assert!(ours.bytes == theirs, "tas over HTTP equals libnetcdf's reads of the files, in time order");
}
