//! Sources changed after the scan: an S3 object replaced by one of the same size (only its ETag
//! tells) makes `read` fail with one line naming it, `--no-check-sources` reads it anyway, and the
//! fingerprints in `sources.bin` hold the ETags the server gave.

use std::path::Path;

use crate::common::servers::S3Server;

/// `bytes` with `from` replaced by `to` (same length) exactly once: a file of the same size whose
/// data chunks are untouched.
fn edited(bytes: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    assert_eq!(from.len(), to.len());
    let at = bytes.windows(from.len()).position(|w| w == from).expect("the text is in the file");
    let mut out = bytes.to_vec();
    out[at..at + to.len()].copy_from_slice(to);
    out
}

#[test]
fn an_s3_source_replaced_with_the_same_size_is_named() {
    let Some(server) = S3Server::start() else {
        assert!(!crate::interop::python_required(), "VZARR_REQUIRE_PYTHON=1 but moto_server is not installed");
        eprintln!("notice: moto_server is not installed (run tests/python/setup.sh); stale S3 source test not run");
        return;
    };
    let months = ["tas_2023-01.nc", "tas_2023-02.nc"];
    let local = server.upload_samples("archive", &months);
    let dir = tempfile::tempdir().unwrap();
    let s = |p: &Path| p.display().to_string();
    let (store, npy) = (dir.path().join("tas.vzarr"), dir.path().join("tas.npy"));
    let run = |args: &[&str]| server.vzarr(args);
    let scan = run(&["scan", "s3://archive/tas_2023-0*.nc", "--concat", "time", "-o", &s(&store)]);
    assert_eq!(scan.code, 0, "{}", scan.stderr);
    let sources = vzarr::dataset::SourceTable::decode(&std::fs::read(store.join("sources.bin")).unwrap()).unwrap();
    for file in sources.iter() {
        let etag = file.etag.as_deref().unwrap_or_else(|| panic!("{}: no ETag recorded", file.location));
        assert!(etag.len() > 2 && etag.starts_with('"'), "{}: ETag {etag}", file.location);
        assert!(file.mtime_ns.is_some(), "{}: no last-modified time", file.location);
    }
    let read = run(&["read", &s(&store), "tas", "-o", &s(&npy)]);
    assert_eq!(read.code, 0, "{}", read.stderr);
    // February replaced by a file of the same size: one attribute's text differs, the data do not.
    let original = std::fs::read(&local[1]).unwrap();
    let changed = edited(&original, b"vzarr sample archive", b"vzarr sample ARCHIVE");
    let replacement = dir.path().join("replacement.nc");
    std::fs::write(&replacement, &changed).unwrap();
    server.upload("archive", &[("tas_2023-02.nc", &replacement)]);
    std::fs::remove_file(&npy).unwrap();
    let stale = run(&["read", &s(&store), "tas", "-o", &s(&npy)]);
    assert_eq!(stale.code, 1, "{}", stale.stderr);
    assert_eq!(stale.stderr.trim().lines().count(), 1, "{}", stale.stderr);
    assert!(
        stale.stderr.contains("s3://archive/tas_2023-02.nc: source file changed since the scan (ETag was \""),
        "{}",
        stale.stderr
    );
    assert!(!npy.exists(), "nothing written");
    // --no-check-sources reads the objects as they are: the data chunks are the same, so the values
    // equal libnetcdf's reads of the original files.
    let unchecked = run(&["read", &s(&store), "tas", "-o", &s(&npy), "--no-check-sources"]);
    assert_eq!(unchecked.code, 0, "{}", unchecked.stderr);
    let ours = crate::common::parse_npy(&std::fs::read(&npy).unwrap());
    let theirs: Vec<u8> = local.iter().flat_map(|p| crate::common::oracle_read(p, "tas", None)).collect();
    assert!(ours.data == theirs, "tas read without the check equals libnetcdf's reads of the files");
    // A materialized copy refuses the changed source too, unless told not to check.
    let copy = dir.path().join("tas.zarr");
    let materialized = run(&["materialize", &s(&store), &s(&copy)]);
    assert_eq!(materialized.code, 1, "{}", materialized.stderr);
    assert!(
        materialized.stderr.contains("s3://archive/tas_2023-02.nc: source file changed"),
        "{}",
        materialized.stderr
    );
    let materialized = run(&["materialize", &s(&store), &s(&copy), "--no-check-sources"]);
    assert_eq!(materialized.code, 0, "{}", materialized.stderr);
    crate::interop::assert_zarrs_reads_exactly(&copy, &local, &["tas", "time"]);
}

/// An object replaced after the reader checked its fingerprint (same size, data chunks unchanged) is
/// not read: every ranged GET carries the recorded ETag as If-Match, the server answers 412, and the
/// read fails as a changed source instead of returning the new object's bytes.
#[test]
fn an_s3_object_replaced_after_the_check_is_refused_by_its_etag() {
    use vzarr::grid::Selection;
    use vzarr::read::blocking::BlockingStore;
    use vzarr::read::{OpenOptions, ReadError, ReadOptions};
    let Some(server) = S3Server::start() else {
        assert!(!crate::interop::python_required(), "VZARR_REQUIRE_PYTHON=1 but moto_server is not installed");
        eprintln!("notice: moto_server is not installed (run tests/python/setup.sh); If-Match test not run");
        return;
    };
    let months = ["tas_2023-01.nc", "tas_2023-02.nc"];
    let local = server.upload_samples("replaced", &months);
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("tas.vzarr");
    let scan =
        server.vzarr(&["scan", "s3://replaced/tas_2023-0*.nc", "--concat", "time", "-o", &store.display().to_string()]);
    assert_eq!(scan.code, 0, "{}", scan.stderr);
    let remote = vzarr::read::RemoteOptions { config: server.config(), ..Default::default() };
    let options = OpenOptions::new(vzarr::read::Authorization::new(["s3://replaced/"])).with_remote(remote);
    let opened = BlockingStore::open_with(store.display().to_string(), &options).unwrap();
    let tas = opened.array("tas").unwrap();
    let all = Selection::all(&tas.reader().shape());
    // The first read checks both sources' fingerprints and reads them: libnetcdf's values.
    let first = tas.read(&all, &ReadOptions::default()).unwrap();
    let theirs: Vec<u8> = local.iter().flat_map(|p| crate::common::oracle_read(p, "tas", None)).collect();
    assert!(first.bytes == theirs, "tas equals libnetcdf's reads of the files");
    // February replaced by an object of the same size whose data chunks are the same bytes.
    let original = std::fs::read(&local[1]).unwrap();
    let replacement = dir.path().join("replacement.nc");
    std::fs::write(&replacement, edited(&original, b"vzarr sample archive", b"vzarr sample ARCHIVE")).unwrap();
    server.upload("replaced", &[("tas_2023-02.nc", &replacement)]);
    let err = tas.read(&all, &ReadOptions::default()).unwrap_err();
    assert!(matches!(err, ReadError::SourceChanged { .. }), "{err}");
    assert!(err.to_string().contains("s3://replaced/tas_2023-02.nc"), "{err}");
}
