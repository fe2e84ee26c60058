//! `vzarr verify` of stores whose sources are remote (S3 on moto, the HTTP range server): libnetcdf
//! reads a temporary local copy of each source, one at a time, removed afterwards; a source changed
//! or removed after the scan makes verify fail with a line naming it.

use std::path::Path;
use std::process::Stdio;

use crate::common::servers::{HttpServer, S3Server};
use crate::common::Run;

/// Runs vzarr with `env` (and TMPDIR = `tmp`, where verify puts its copies), stdout captured.
fn vzarr(env: &[(String, String)], tmp: &Path, args: &[&str]) -> Run {
    let mut command = crate::common::vzarr_command();
    command.args(args).envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str()))).env("TMPDIR", tmp);
    command.stdout(Stdio::piped());
    crate::common::run(command)
}

/// The names in `dir` of verify's copies (`vzarr-verify-*`).
fn copies_left(dir: &Path) -> Vec<String> {
    let names = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned());
    names.filter(|n| n.starts_with("vzarr-verify-")).collect()
}

fn line_of<'a>(stdout: &'a str, array: &str) -> &'a str {
    let prefix = |l: &&str| l.split_whitespace().nth(1) == Some(&format!("{array}:"));
    stdout.lines().find(prefix).unwrap_or_else(|| panic!("no line for {array}:\n{stdout}"))
}

#[test]
fn verify_copies_s3_sources_and_names_a_changed_one() {
    let Some(server) = S3Server::start() else {
        assert!(!crate::interop::python_required(), "VZARR_REQUIRE_PYTHON=1 but moto_server is not installed");
        eprintln!("notice: moto_server is not installed (run tests/python/setup.sh); S3 verify test not run");
        return;
    };
    let months = ["tas_2023-01.nc", "tas_2023-02.nc", "tas_2023-03.nc"];
    let local = server.upload_samples("archive", &months);
    let (dir, tmp) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let store = dir.path().join("tas.vzarr").display().to_string();
    let env = server.env();
    let scan = vzarr(&env, tmp.path(), &["scan", "s3://archive/tas_2023-0*.nc", "--concat", "time", "-o", &store]);
    assert_eq!(scan.code, 0, "{}", scan.stderr);
    let ok = vzarr(&env, tmp.path(), &["verify", &store]);
    assert_eq!(ok.code, 0, "{}\n{}", ok.stdout, ok.stderr);
    let tas = line_of(&ok.stdout, "tas");
    // Every element of tas (3 months of 180 x 360 cells, as libnetcdf reads the files) compared.
    let elements: usize = local.iter().map(|p| crate::common::oracle_read(p, "tas", None).len() / 4).sum();
    assert_eq!(tas, format!("ok   tas: {elements} elements equal"), "{}", ok.stdout);
    assert!(ok.stdout.ends_with("0 failed\n"), "{}", ok.stdout);
    assert_eq!(copies_left(tmp.path()), Vec::<String>::new(), "the copies are removed");
    // A source replaced after the scan (same size, one attribute's text differs): named, not compared.
    let original = std::fs::read(&local[2]).unwrap();
    let at = original.windows(20).position(|w| w == b"vzarr sample archive").unwrap();
    let mut changed = original.clone();
    changed[at..at + 20].copy_from_slice(b"VZARR SAMPLE ARCHIVE");
    let replacement = dir.path().join("march.nc");
    std::fs::write(&replacement, &changed).unwrap();
    server.upload("archive", &[("tas_2023-03.nc", &replacement)]);
    let stale = vzarr(&env, tmp.path(), &["verify", &store]);
    assert_eq!(stale.code, 1, "{}\n{}", stale.stdout, stale.stderr);
    let line = line_of(&stale.stdout, "tas");
    assert!(line.starts_with("FAIL tas: ") && line.contains("s3://archive/tas_2023-03.nc"), "{}", stale.stdout);
    assert!(line.contains("source file changed since the scan (ETag was"), "{}", stale.stdout);
    assert_eq!(copies_left(tmp.path()), Vec::<String>::new());
    // --no-check-sources compares what is there now: the edited object header fails its checksum in
    // libhdf5, so the copy cannot be read, and the arrays from it fail naming it.
    let unchecked = vzarr(&env, tmp.path(), &["verify", &store, "--no-check-sources"]);
    assert_eq!(unchecked.code, 1, "{}\n{}", unchecked.stdout, unchecked.stderr);
    let line = line_of(&unchecked.stdout, "tas");
    assert!(
        line.starts_with("FAIL tas: s3://archive/tas_2023-03.nc: tas: reading the source with libnetcdf"),
        "{line}"
    );
    assert_eq!(copies_left(tmp.path()), Vec::<String>::new());
    server.upload("archive", &[("tas_2023-03.nc", &local[2])]);
    let restored = vzarr(&env, tmp.path(), &["verify", &store, "--no-check-sources"]);
    assert_eq!(restored.code, 0, "{}\n{}", restored.stdout, restored.stderr);
    // A source deleted after the scan.
    let script = format!(
        "import boto3\nboto3.client('s3', endpoint_url='{}', aws_access_key_id='testing', aws_secret_access_key='testing', \
         region_name='us-east-1').delete_object(Bucket='archive', Key='tas_2023-02.nc')",
        server.endpoint
    );
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/pyenv/bin/python");
    assert!(std::process::Command::new(python).args(["-c", &script]).status().unwrap().success());
    let gone = vzarr(&env, tmp.path(), &["verify", &store, "--no-check-sources"]);
    assert_eq!(gone.code, 1, "{}\n{}", gone.stdout, gone.stderr);
    let line = line_of(&gone.stdout, "tas");
    assert!(line.contains("s3://archive/tas_2023-02.nc") && line.to_lowercase().contains("not found"), "{line}");
    assert_eq!(line.lines().count(), 1);
    assert_eq!(copies_left(tmp.path()), Vec::<String>::new());
}

#[test]
fn verify_copies_http_sources_and_names_a_changed_one() {
    let (served, tmp) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/sample");
    let months = ["tas_2023-01.nc", "tas_2023-02.nc"];
    for m in months {
        std::fs::copy(root.join(m), served.path().join(m)).unwrap();
    }
    let classic = crate::common::with_hdf5_files(|| {
        crate::common::classic::write_mixed(served.path(), "classic.nc", netcdf::Options::_64BIT_OFFSET, 4)
    });
    let server = HttpServer::start(served.path(), &[]);
    let store = served.path().join("tas.vzarr").display().to_string();
    let urls: Vec<String> = months.iter().map(|m| format!("{}/{m}", server.base)).collect();
    let mut args = vec!["scan"];
    args.extend(urls.iter().map(String::as_str));
    args.extend(["--concat", "time", "-o", &store]);
    let scan = vzarr(&[], tmp.path(), &args);
    assert_eq!(scan.code, 0, "{}", scan.stderr);
    let ok = vzarr(&[], tmp.path(), &["verify", &store]);
    assert_eq!(ok.code, 0, "{}\n{}", ok.stdout, ok.stderr);
    assert!(line_of(&ok.stdout, "tas").starts_with("ok   tas: "), "{}", ok.stdout);
    assert_eq!(copies_left(tmp.path()), Vec::<String>::new());
    // A NetCDF-3 source over HTTP.
    let classic_store = served.path().join("classic.vzarr").display().to_string();
    let url = format!("{}/classic.nc", server.base);
    assert_eq!(vzarr(&[], tmp.path(), &["scan", &url, "-o", &classic_store]).code, 0);
    let ok = vzarr(&[], tmp.path(), &["verify", &classic_store]);
    assert_eq!(ok.code, 0, "{}\n{}", ok.stdout, ok.stderr);
    assert!(ok.stdout.ends_with("0 failed\n") && !ok.stdout.contains("FAIL"), "{}", ok.stdout);
    // A new dimension keyed by a global attribute: verify reads each key from the source's copy.
    let other = served.path().join("classic_b.nc");
    let bytes = std::fs::read(&classic).unwrap();
    let at = bytes.windows(13).position(|w| w == b"classic mixed").unwrap();
    let mut edited = bytes.clone();
    edited[at..at + 13].copy_from_slice(b"classic MIXED");
    std::fs::write(&other, edited).unwrap();
    let keyed = served.path().join("keyed.vzarr").display().to_string();
    let (a, b) = (format!("{}/classic.nc", server.base), format!("{}/classic_b.nc", server.base));
    let scan = vzarr(&[], tmp.path(), &["scan", &a, &b, "--concat", "run=attr:title", "-o", &keyed]);
    assert_eq!(scan.code, 0, "{}", scan.stderr);
    let ok = vzarr(&[], tmp.path(), &["verify", &keyed]);
    assert_eq!(ok.code, 0, "{}\n{}", ok.stdout, ok.stderr);
    assert_eq!(line_of(&ok.stdout, "run"), "ok   run: 2 elements equal", "{}", ok.stdout);
    assert_eq!(copies_left(tmp.path()), Vec::<String>::new());
    // The server's ETag comes from size and mtime: a touched file is a changed source.
    let feb = served.path().join(months[1]);
    let later = std::fs::metadata(&feb).unwrap().modified().unwrap() + std::time::Duration::from_secs(7);
    std::fs::File::options().write(true).open(&feb).unwrap().set_modified(later).unwrap();
    let stale = vzarr(&[], tmp.path(), &["verify", &store]);
    assert_eq!(stale.code, 1, "{}\n{}", stale.stdout, stale.stderr);
    let line = line_of(&stale.stdout, "tas");
    assert!(line.contains(&urls[1]) && line.contains("source file changed since the scan"), "{}", stale.stdout);
    assert_eq!(copies_left(tmp.path()), Vec::<String>::new());
}
