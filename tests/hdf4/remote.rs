//! HDF4 files over HTTP with range requests (`tests/python/range_server.py`, standard library only):
//! the scan through ranged GETs gives exactly the local scan's arrays and chunk references (data in an
//! external file referenced at the URL next to the HDF4 file's).

use std::path::Path;

use crate::range_server::Server;

use vzarr::read::RemoteOptions;
use vzarr::{scan_file, ScanOptions};

#[test]
fn http_sources_scan_like_local_files() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/hdf4");
    let server = Server::start(&root);
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let remote = RemoteOptions { max_retries: 0, ..RemoteOptions::default() };
    let options = ScanOptions { skip_unsupported: true, ..Default::default() };
    for file in super::fixtures().iter().filter(|f| f.parent() == Some(root.as_path())) {
        let url = format!("{}/{}", server.base, file.file_name().unwrap().to_str().unwrap());
        let ours = vzarr::scan::scan_url(&url, &options, &remote, runtime.handle()).unwrap_or_else(|e| panic!("{e}"));
        let theirs = scan_file(file, &options).unwrap();
        assert_eq!(ours.dataset.sources.get(0).unwrap().location, url);
        assert_eq!(ours.dataset.sources.len(), theirs.sources.len(), "{url}");
        if let Some(external) = ours.dataset.sources.get(1) {
            assert_eq!(external.location, format!("{}/external_data.bin", server.base));
            assert_eq!(external.size, theirs.sources.get(1).unwrap().size);
        }
        assert_eq!(ours.dataset.arrays.len(), theirs.arrays.len(), "{url}");
        for (a, b) in ours.dataset.arrays.iter().zip(&theirs.arrays) {
            assert_eq!((&a.path, &a.metadata, &a.chunks), (&b.path, &b.metadata, &b.chunks), "{url}");
        }
        assert!(ours.fetched.bytes <= file.metadata().unwrap().len() * 2, "{url}: {:?}", ours.fetched);
    }
}

#[test]
fn a_missing_external_file_over_http_is_a_one_line_error() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(super::fixture("chunked_partial.hdf"), dir.path().join("chunked_partial.hdf")).unwrap();
    let server = Server::start(dir.path());
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let remote = RemoteOptions { max_retries: 0, ..RemoteOptions::default() };
    let url = format!("{}/chunked_partial.hdf", server.base);
    let err = vzarr::scan::scan_url(&url, &ScanOptions::default(), &remote, runtime.handle()).unwrap_err().to_string();
    let wanted = format!("{url}: external: finding its external file: external file \"external_data.bin\": not found");
    assert!(err.starts_with(&wanted) && !err.contains('\n'), "{err}");
    assert!(err.contains(&format!("{}/external_data.bin", server.base)), "{err}");
}
