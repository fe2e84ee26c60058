//! Scanning over S3 against a real S3-compatible server on 127.0.0.1 (`moto_server`), started by the
//! test: NetCDF-4, HDF5 2.0 and NetCDF-3 objects; the references found through ranged reads equal those of the same file scanned locally (whose
//! values the other suites prove equal to libnetcdf's), scanning reads a small part of each file, and
//! a missing object or bad credentials give one line naming the URL.

mod azure;
mod faults;
mod http;
mod metadata_only;
mod output;
mod stale;
mod verify;

use vzarr::read::RemoteOptions;
use vzarr::ScanOptions;

use crate::common::servers::S3Server;

/// An 8 MB HDF5 file of 1 MB chunks (pseudo-random, so its bytes are the file's bulk).
fn write_megabyte_chunks(dir: &std::path::Path) -> std::path::PathBuf {
    let path = dir.join("megabyte_chunks.h5");
    let file = hdf5::File::create(&path).unwrap();
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let values: Vec<u64> = (0..1 << 20)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        })
        .collect();
    file.new_dataset_builder().chunk(1 << 17).with_data(&values).create("noise").unwrap();
    path
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

#[test]
fn objects_over_s3_give_the_local_references() {
    let Some(server) = S3Server::start() else {
        assert!(!crate::interop::python_required(), "VZARR_REQUIRE_PYTHON=1 but moto_server is not installed");
        eprintln!("notice: moto_server is not installed (run tests/python/setup.sh); S3 scan test not run");
        return;
    };
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    let classic = crate::common::with_hdf5_files(|| {
        crate::common::classic::write_mixed(dir.path(), "classic.nc", netcdf::Options::_64BIT_OFFSET, 4)
    });
    let big = crate::common::with_hdf5_files(|| write_megabyte_chunks(dir.path()));
    let small = crate::common::with_hdf5_files(|| metadata_only::write_small_chunks(dir.path(), "sst.nc", 360, 720));
    let uploads = [
        ("megabyte_chunks.h5", big),
        ("sst_small_chunks.nc", small),
        ("tas_2023-01.nc", root.join("fixtures/sample/tas_2023-01.nc")),
        ("libver_latest.h5", root.join("fixtures/hdf5/libver_latest.h5")),
        ("classic.nc", classic),
    ];
    let objects: Vec<(&str, &std::path::Path)> = uploads.iter().map(|(k, p)| (*k, p.as_path())).collect();
    server.upload("archive", &objects);
    let remote = RemoteOptions { config: server.config(), max_retries: 1, ..RemoteOptions::default() };
    let runtime = runtime();
    for (key, local) in &objects {
        let url = format!("s3://archive/{key}");
        let scan = vzarr::scan::scan_url(&url, &ScanOptions::default(), &remote, runtime.handle())
            .unwrap_or_else(|e| panic!("{e}"));
        let ours = scan.dataset;
        let theirs = crate::common::scan(local, &ScanOptions::default()).unwrap();
        let (source, local_source) = (ours.sources.get(0).unwrap(), theirs.sources.get(0).unwrap());
        assert_eq!(source.location, url);
        assert_eq!(source.size, local_source.size);
        assert_eq!(ours.arrays.len(), theirs.arrays.len(), "{url}");
        for (a, b) in ours.arrays.iter().zip(&theirs.arrays) {
            assert_eq!((&a.path, &a.metadata, &a.chunks), (&b.path, &b.metadata, &b.chunks), "{url}");
        }
        if *key == "megabyte_chunks.h5" {
            // Metadata only: the first block answers it all (its reply also gives size and
            // fingerprint: no HEAD request), under 2% of the 8 MB file.
            let size = source.size;
            eprintln!("{url}: {} requests, {} bytes fetched of {size}", scan.fetched.requests, scan.fetched.bytes);
            assert!(scan.fetched.requests <= 2, "{url}: {:?}", scan.fetched);
            assert!(scan.fetched.bytes * 50 <= size, "{url}: fetched {:?} of {size} bytes", scan.fetched);
        }
        if *key == "sst_small_chunks.nc" {
            // Chunk index nodes spread through the file: fetched a level at a time, every node of a
            // level in one round of concurrent requests. Scanned again with the same options, the
            // head asks for what the first scan's structure took.
            let size = source.size;
            assert!(scan.fetched.rounds <= 3, "{url}: {:?}", scan.fetched);
            let options = ScanOptions::default();
            let first = vzarr::scan::scan_url(&url, &options, &remote, runtime.handle()).unwrap();
            let learnt = vzarr::scan::scan_url(&url, &options, &remote, runtime.handle()).unwrap();
            assert_eq!((&first.dataset.arrays, &learnt.dataset.arrays), (&ours.arrays, &ours.arrays));
            let learnt = learnt.fetched;
            assert!(learnt.rounds <= 3, "{url}: {learnt:?}");
            assert!(learnt.bytes * 10 <= size, "{url}: fetched {learnt:?} of {size} bytes");
        }
    }
    let missing = vzarr::scan::scan_url("s3://archive/nope.nc", &ScanOptions::default(), &remote, runtime.handle());
    let message = missing.unwrap_err().to_string();
    assert!(message.starts_with("s3://archive/nope.nc: ") && !message.contains('\n'), "{message}");
    assert!(message.to_lowercase().contains("not found"), "{message}");
    // An empty object cannot answer a range request (416): its size comes from a HEAD request, and
    // the error says what the file is not.
    let empty = dir.path().join("empty.nc");
    std::fs::write(&empty, b"").unwrap();
    server.upload("archive", &[("empty.nc", empty.as_path())]);
    let message = vzarr::scan::scan_url("s3://archive/empty.nc", &ScanOptions::default(), &remote, runtime.handle())
        .unwrap_err()
        .to_string();
    assert!(message.starts_with("s3://archive/empty.nc: ") && !message.contains('\n'), "{message}");
    assert!(!message.contains("416") && !message.to_lowercase().contains("range"), "{message}");
}

/// The command line over S3, configured by the standard environment variables: a glob over a bucket
/// is listed, the files are scanned and concatenated, and `vzarr read` of the store (its sources on S3)
/// returns libnetcdf's values of the local files, concatenated.
#[test]
fn cli_scans_an_s3_glob_and_reads_the_store_back() {
    let Some(server) = S3Server::start() else {
        assert!(!crate::interop::python_required(), "VZARR_REQUIRE_PYTHON=1 but moto_server is not installed");
        eprintln!("notice: moto_server is not installed (run tests/python/setup.sh); S3 CLI test not run");
        return;
    };
    let months = ["tas_2023-01.nc", "tas_2023-02.nc", "tas_2023-03.nc"];
    let local = server.upload_samples("archive", &months);
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("tas.vzarr");
    let npy = dir.path().join("tas.npy");
    let run = |args: &[&str]| server.vzarr(args);
    let s = |p: &std::path::Path| p.display().to_string();
    let scan = run(&["scan", "s3://archive/tas_2023-0*.nc", "--concat", "time", "-o", &s(&store)]);
    assert_eq!(scan.code, 0, "{}", scan.stderr);
    // The summary says what scanning cost: one first-block request per file at least, and the bytes.
    let size: u64 = local.iter().map(|p| std::fs::metadata(p).unwrap().len()).sum();
    let summary = scan
        .stdout
        .lines()
        .find(|l| l.starts_with("read 3 remote file(s)"))
        .unwrap_or_else(|| panic!("{}", scan.stdout));
    assert!(summary.starts_with(&format!("read 3 remote file(s) of {size} bytes: ")), "{summary}");
    let requests: u64 = summary.split(": ").nth(1).and_then(|r| r.split(' ').next()?.parse().ok()).unwrap();
    assert!((3..=9).contains(&requests), "{summary}");
    let read = run(&["read", &s(&store), "tas", "-o", &s(&npy)]);
    assert_eq!(read.code, 0, "{}", read.stderr);
    let ours = crate::common::parse_npy(&std::fs::read(&npy).unwrap());
    let theirs: Vec<u8> = local.iter().flat_map(|p| crate::common::oracle_read(p, "tas", None)).collect();
    assert!(ours.data == theirs, "tas over S3 equals libnetcdf's reads of the files");
    // The kerchunk export keeps the s3:// URLs: zarr-python and xarray read them through s3fs, and
    // every value equals netCDF4's reads of the local files.
    let refs = dir.path().join("tas.json");
    assert_eq!(run(&["export", &s(&store), "--kerchunk", &s(&refs)]).code, 0);
    let python = crate::interop::python().expect("moto_server runs, so the Python environment is there");
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/check_interop.py");
    let mut command = std::process::Command::new(python);
    command.arg(script).args(["--refs", &s(&refs), "--s3-endpoint", &server.endpoint, "--concat", "time"]);
    command.args(&local).stdout(std::process::Stdio::piped());
    let check = crate::common::run(command);
    assert_eq!(check.code, 0, "check_interop.py over S3:\n{}\n{}", check.stdout, check.stderr);
    assert!(check.stdout.contains("ok   kerchunk xarray tas"), "{}", check.stdout);
    // --anonymous sends unsigned requests (public buckets); this bucket is private, so the server
    // refuses them: one line naming the object and saying access was denied, nothing written.
    let anonymous = dir.path().join("anonymous.vzarr");
    let public = run(&["scan", "s3://archive/tas_2023-0*.nc", "--concat", "time", "--anonymous", "-o", &s(&anonymous)]);
    assert_eq!(public.code, 1, "{}", public.stderr);
    assert_eq!(public.stderr.trim().lines().count(), 1, "{}", public.stderr);
    assert!(
        public.stderr.contains("s3://archive/tas_2023-0") && public.stderr.contains("privileges"),
        "{}",
        public.stderr
    );
    assert!(!anonymous.exists());
    let missing = run(&["scan", "s3://archive/nothing-*.nc", "-o", &s(&dir.path().join("x.vzarr"))]);
    assert_eq!(missing.code, 1);
    assert!(missing.stderr.contains("s3://archive/nothing-*.nc: no objects match"), "{}", missing.stderr);
}

/// A store kept on S3 itself (a `*.vzarr` directory uploaded as objects) is read in place: `info`,
/// `read`, `export` and `materialize` take its `s3://` URL; the values equal libnetcdf's reads of the
/// local files and the materialized copy, read by zarrs, equals them too.
#[test]
fn stores_on_s3_are_read_in_place() {
    let Some(server) = S3Server::start() else {
        assert!(!crate::interop::python_required(), "VZARR_REQUIRE_PYTHON=1 but moto_server is not installed");
        eprintln!("notice: moto_server is not installed (run tests/python/setup.sh); S3 store test not run");
        return;
    };
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/sample");
    let months = ["tas_2023-01.nc", "tas_2023-02.nc"];
    let local: Vec<std::path::PathBuf> = months.iter().map(|m| root.join(m)).collect();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("tas.vzarr");
    let s = |p: &std::path::Path| p.display().to_string();
    let mut args = vec!["scan".to_string()];
    args.extend(local.iter().map(|p| s(p)));
    args.extend(["--concat".into(), "time".into(), "-o".into(), s(&store)]);
    crate::common::cli_expect(&args, 0);
    // Every file of the store, as objects under `stores/tas.vzarr/`.
    let mut files = Vec::new();
    let mut pending = vec![store.clone()];
    while let Some(d) = pending.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else {
                let key = format!("stores/tas.vzarr/{}", path.strip_prefix(&store).unwrap().display());
                files.push((key, path));
            }
        }
    }
    let objects: Vec<(&str, &std::path::Path)> = files.iter().map(|(k, p)| (k.as_str(), p.as_path())).collect();
    server.upload("archive", &objects);
    let run = |args: &[&str]| server.vzarr(args);
    let url = "s3://archive/stores/tas.vzarr";
    let info = run(&["info", url]);
    assert_eq!(info.code, 0, "{}", info.stderr);
    assert!(info.stdout.contains("tas"), "{}", info.stdout);
    let npy = dir.path().join("tas.npy");
    let read = run(&["read", url, "tas", "-o", &s(&npy)]);
    assert_eq!(read.code, 0, "{}", read.stderr);
    let theirs: Vec<u8> = local.iter().flat_map(|p| crate::common::oracle_read(p, "tas", None)).collect();
    assert!(crate::common::parse_npy(&std::fs::read(&npy).unwrap()).data == theirs, "tas read from the S3 store");
    let refs = dir.path().join("refs.json");
    let export = run(&["export", url, "--kerchunk", &s(&refs)]);
    assert_eq!(export.code, 0, "{}", export.stderr);
    let copy = dir.path().join("tas.zarr");
    let materialized = run(&["materialize", url, &s(&copy)]);
    assert_eq!(materialized.code, 0, "{}", materialized.stderr);
    crate::interop::assert_zarrs_reads_exactly(&copy, &local, &["tas", "time"]);
}

/// Sources and the Icechunk repository both on S3: `scan --format icechunk -o s3://...` commits, and
/// `read` of the repository URL equals libnetcdf's reads of the files.
#[test]
fn icechunk_repository_on_s3_over_s3_sources() {
    let Some(server) = S3Server::start() else {
        assert!(!crate::interop::python_required(), "VZARR_REQUIRE_PYTHON=1 but moto_server is not installed");
        eprintln!("notice: moto_server is not installed (run tests/python/setup.sh); S3 Icechunk test not run");
        return;
    };
    let months = ["tas_2023-01.nc", "tas_2023-02.nc"];
    let local = server.upload_samples("archive", &months);
    server.upload("repos", &[]);
    let dir = tempfile::tempdir().unwrap();
    let npy = dir.path().join("tas.npy");
    let run = |args: &[&str]| server.vzarr(args);
    let repo = "s3://repos/tas.icechunk";
    let scan = run(&["scan", "s3://archive/tas_2023-0*.nc", "--concat", "time", "--format", "icechunk", "-o", repo]);
    assert_eq!(scan.code, 0, "{}", scan.stderr);
    assert!(scan.stdout.contains("s3://archive/"), "the container prefix is printed: {}", scan.stdout);
    // Read through a recording proxy: a URL ending in `.icechunk` is opened as a repository first,
    // asking nothing of a native store (no `vzarr.json`).
    let proxy = crate::common::fault_proxy::FaultProxy::start(&server.endpoint);
    let mut read = crate::common::vzarr_command();
    read.args(["read", repo, "tas", "-o", &npy.display().to_string()]).envs(proxy.env(server.env()));
    let read = crate::common::run(read);
    assert_eq!(read.code, 0, "{}", read.stderr);
    let asked: Vec<String> = proxy.take_requests().into_iter().map(|r| format!("{} {}", r.method, r.path)).collect();
    assert!(asked.iter().any(|r| r.contains("/repos/tas.icechunk/snapshots/")), "{asked:?}");
    assert!(!asked.iter().any(|r| r.contains("vzarr.json")), "a native store was probed: {asked:?}");
    let ours = crate::common::parse_npy(&std::fs::read(&npy).unwrap());
    let theirs: Vec<u8> = local.iter().flat_map(|p| crate::common::oracle_read(p, "tas", None)).collect();
    assert!(ours.data == theirs, "tas from the S3 repository equals libnetcdf's reads of the files");
    let again = run(&["scan", "s3://archive/tas_2023-0*.nc", "--concat", "time", "--format", "icechunk", "-o", repo]);
    assert_eq!(again.code, 1, "{}", again.stdout);
    assert!(again.stderr.contains("already exists"), "{}", again.stderr);
}
