//! Sidecars over HTTP with range requests (`tests/python/range_server.py`, standard library only):
//! a sidecar's URL scans to the same arrays and references as its data file's URL, the data file
//! fingerprinted from its own object, in at most two ranged reads of the sidecar.

use std::path::Path;

use crate::common::range_server::Server;

use vzarr::source::RemoteOptions;
use vzarr::ScanOptions;

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
