//! Sidecars over HTTP with range requests (`tests/python/range_server.py`, standard library only):
//! a sidecar's URL scans to the same arrays and references as its data file's URL, the data file
//! fingerprinted from its own object, in at most two ranged reads of the sidecar.

use std::path::Path;

use crate::common::range_server::Server;

use vzarr::read::RemoteOptions;
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

/// A sidecar scanned for concatenation reads its data file's coordinate with one ranged GET, whose
/// answer also fingerprints the data file (no HEAD request): the same sources as the data file's own
/// scan, and the coordinate values libnetcdf reads from the file.
#[test]
fn a_sidecar_scan_fingerprints_its_data_file_with_the_read_it_needs() {
    use vzarr::formats::DmrppWriter;
    use vzarr::formats::{WriteOptions, Writer};
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("day.nc");
    let mut nc = netcdf::create(&file).unwrap();
    nc.add_unlimited_dimension("time").unwrap();
    nc.add_dimension("x", 6).unwrap();
    let mut time = nc.add_variable::<f64>("time", &["time"]).unwrap();
    time.put_attribute("units", "days since 2020-01-01").unwrap();
    time.put_values(&[3.0, 4.0], (0..2,)).unwrap();
    let mut v = nc.add_variable::<i32>("v", &["time", "x"]).unwrap();
    v.set_chunking(&[1, 3]).unwrap();
    v.put_values(&(0..12).collect::<Vec<i32>>(), [0..2, 0..6]).unwrap();
    nc.close().unwrap();
    let server = Server::start(dir.path());
    let proxy = crate::common::fault_proxy::FaultProxy::start(&server.base);
    let prefix = format!("{}/={}/", dir.path().display(), proxy.endpoint).parse().unwrap();
    let local = vzarr::scan::scan_file(&file, &ScanOptions::default()).unwrap();
    let writer = DmrppWriter { url_prefixes: vec![prefix] };
    writer.write(&local, &dir.path().join("day.nc.dmrpp"), &WriteOptions::default()).unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    // The proxy closes every connection after one exchange: a request sent on a connection it
    // closed is sent again (it never reached the proxy, which logs only what it forwards).
    let remote = RemoteOptions { max_retries: 3, ..RemoteOptions::default() };
    let options = ScanOptions { concat_dims: vec!["time".into()], ..ScanOptions::default() };
    let data = format!("{}/day.nc", proxy.endpoint);
    let scan =
        |url: &str| vzarr::scan::scan_url(url, &options, &remote, runtime.handle()).unwrap_or_else(|e| panic!("{e}"));
    proxy.take_requests();
    let ours = scan(&format!("{data}.dmrpp"));
    let requests = proxy.take_requests();
    let theirs = scan(&data);
    assert_eq!(ours.dataset.sources, theirs.dataset.sources, "the data file's own fingerprint");
    let to_data: Vec<_> = requests.iter().filter(|r| r.path.ends_with("/day.nc")).collect();
    assert_eq!(to_data.len(), 1, "one request to the data file: {requests:?}");
    assert_eq!(to_data[0].method, "GET", "{requests:?}");
    let times: Vec<f64> = netcdf::open(&file).unwrap().variable("time").unwrap().get_values(..).unwrap();
    assert_eq!(ours.dataset.concat.len(), 1);
    assert_eq!(ours.dataset.concat[0].values, vzarr::dataset::CoordinateValues::new(times));
    assert_eq!(ours.dataset.concat, theirs.dataset.concat);
}
