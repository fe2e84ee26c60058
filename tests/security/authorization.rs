//! Authorized source containers: the trust list `scan` fills, `vzarr trust`, `--allow-source` and
//! `VZARR_ALLOW_SOURCES`; crafted stores naming system files, symlinks out of a container, FIFOs.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::common::hostile::cli_limited;
use crate::common::*;
use vzarr::dataset::SourceTable;
use vzarr::{NativeWriter, ScanOptions, WriteOptions, Writer};

/// A test's own configuration directory (`XDG_CONFIG_HOME`): its trust list starts empty.
pub(crate) struct Config(tempfile::TempDir);

impl Config {
    pub(crate) fn new() -> Self {
        Config(tempfile::tempdir().unwrap())
    }

    pub(crate) fn trust_list(&self) -> String {
        std::fs::read_to_string(self.0.path().join("vzarr/trusted-sources")).unwrap_or_default()
    }

    /// Runs `vzarr args` with this configuration and the extra environment `env`.
    pub(crate) fn run<S: AsRef<OsStr>>(&self, args: &[S], env: &[(&str, &str)]) -> Run {
        let mut command = vzarr_command();
        command.args(args).env("XDG_CONFIG_HOME", self.0.path()).env_remove("VZARR_ALLOW_SOURCES");
        command.env_remove("RUST_BACKTRACE").stdout(std::process::Stdio::piped());
        command.envs(env.iter().copied());
        run(command)
    }
}

fn os(parts: &[&dyn AsRef<OsStr>]) -> Vec<OsString> {
    parts.iter().map(|p| p.as_ref().to_os_string()).collect()
}

/// The monthly fixture: its file and directory.
fn monthly() -> Fixture {
    Fixture::new(|d| fixtures::write_monthly(d, &fixtures::Monthly::new(2023, 2)))
}

/// Checks that `npy` holds libnetcdf's `tas` of `source`.
fn assert_npy_is_tas(npy: &Path, source: &Path) {
    let ours = parse_npy(&std::fs::read(npy).unwrap());
    let theirs = oracle_read(source, "tas", None);
    assert_same_elements("tas", &ours.data, &theirs, 4);
}

fn dir_prefix(dir: &Path) -> String {
    format!("{}/", std::fs::canonicalize(dir).unwrap().display())
}

#[test]
fn scan_then_read_needs_no_flag() {
    let (config, f) = (Config::new(), monthly());
    let store = f.join("s.vzarr");
    let npy = f.join("tas.npy");
    let scan = config.run(&os(&[&"scan", &f.path, &"-o", &store]), &[]);
    assert_eq!(scan.code, 0, "{}", scan.stderr);
    assert!(config.trust_list().lines().any(|l| l == dir_prefix(f.dir.path())), "{}", config.trust_list());
    let read = config.run(&os(&[&"read", &store, &"tas", &"-o", &npy]), &[]);
    assert_eq!(read.code, 0, "{}", read.stderr);
    assert_npy_is_tas(&npy, &f.path);
}

#[test]
fn a_store_from_elsewhere_is_read_once_authorized() {
    let f = monthly();
    let store = f.join("s.vzarr");
    let npy = f.join("tas.npy");
    let scan = Config::new().run(&os(&[&"scan", &f.path, &"-o", &store]), &[]);
    assert_eq!(scan.code, 0, "{}", scan.stderr);
    let container = dir_prefix(f.dir.path());
    let read_args = os(&[&"read", &store, &"tas", &"-o", &npy, &"--overwrite"]);

    // Another user (an empty trust list): one line naming the container and the flag.
    let other = Config::new();
    let refused = other.run(&read_args, &[]);
    assert_eq!(refused.code, 1, "{}", refused.stderr);
    assert_eq!(refused.stderr_lines().len(), 1, "{}", refused.stderr);
    assert!(refused.stderr.contains(&container) && refused.stderr.contains("--allow-source"), "{}", refused.stderr);
    assert!(!npy.exists());

    let flag = other.run(&[read_args.clone(), os(&[&"--allow-source", &f.dir.path()])].concat(), &[]);
    assert_eq!(flag.code, 0, "{}", flag.stderr);
    assert_npy_is_tas(&npy, &f.path);

    let env = other.run(&read_args, &[("VZARR_ALLOW_SOURCES", &format!("s3://elsewhere/,{container}"))]);
    assert_eq!(env.code, 0, "{}", env.stderr);
    assert_npy_is_tas(&npy, &f.path);

    let listed = other.run(&os(&[&"trust", &store, &"--list"]), &[]);
    assert_eq!((listed.code, listed.stdout.trim()), (0, container.as_str()), "{}", listed.stderr);
    assert!(other.trust_list().is_empty());
    assert_eq!(other.run(&read_args, &[]).code, 1);
    let trusted = other.run(&os(&[&"trust", &store]), &[]);
    assert_eq!(trusted.code, 0, "{}", trusted.stderr);
    assert!(other.trust_list().lines().any(|l| l == container));
    std::fs::remove_file(&npy).unwrap();
    let after = other.run(&read_args, &[]);
    assert_eq!(after.code, 0, "{}", after.stderr);
    assert_npy_is_tas(&npy, &f.path);
}

/// A store of the monthly fixture whose source table names `target` instead (with `target`'s size and
/// modification time, so the fingerprint check passes), written as an attacker would: consistently.
fn store_pointing_at(f: &Fixture, target: &str, name: &str) -> PathBuf {
    let mut dataset = scan(&f.path, &ScanOptions::default()).unwrap();
    let mut sources = SourceTable::new();
    sources.push(vzarr::read::fingerprint(Path::new(target)).unwrap());
    dataset.sources = sources;
    let store = f.join(name);
    NativeWriter.write(&dataset, &store, &WriteOptions::default()).unwrap();
    store
}

#[test]
fn a_store_naming_system_files_reads_nothing() {
    let f = monthly();
    let config = Config::new();
    let store = store_pointing_at(&f, "/etc/passwd", "passwd.vzarr");
    let out = f.join("out");
    let attempts = [
        os(&[&"read", &store, &"tas", &"-o", &out.with_extension("npy")]),
        os(&[&"export", &store, &"--kerchunk", &out.with_extension("json")]),
        os(&[&"materialize", &store, &out.with_extension("zarr")]),
        os(&[&"verify", &store]),
    ];
    for args in &attempts {
        let run = config.run(args, &[]);
        assert_eq!(run.code, 1, "{args:?}: {}", run.stderr);
        assert_eq!(run.stderr_lines().len(), 1, "{args:?}: {}", run.stderr);
        assert!(run.stderr.contains("/etc/ is not authorized") && run.stderr.contains("--allow-source /etc/"));
    }
    assert!(!out.with_extension("npy").exists() && !out.with_extension("json").exists());
    assert!(!out.with_extension("zarr").exists());

    // Authorizing everything still never reads a kernel file: /proc stats as 0 bytes.
    let store = store_pointing_at(&f, "/proc/self/environ", "environ.vzarr");
    let run =
        config.run(&os(&[&"read", &store, &"tas", &"-o", &out.with_extension("npy"), &"--allow-source", &"/"]), &[]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.contains("procfs") && run.stderr_lines().len() == 1, "{}", run.stderr);
    assert!(!out.with_extension("npy").exists());
}

#[test]
fn a_symlink_out_of_the_container_is_refused() {
    let f = monthly();
    let outside = tempfile::tempdir().unwrap();
    let real = outside.path().join("real.nc");
    std::fs::copy(&f.path, &real).unwrap();
    let link_dir = tempfile::tempdir().unwrap();
    let link = link_dir.path().join("tas.nc");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let store = scan_to_store(&link, f.dir.path(), "link.vzarr", &ScanOptions::default());
    let config = Config::new();
    let npy = f.join("x.npy");
    let args = os(&[&"read", &store, &"tas", &"-o", &npy, &"--allow-source", &link_dir.path()]);
    let run = config.run(&args, &[]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let container = dir_prefix(outside.path());
    assert!(run.stderr.contains(&format!("{container} is not authorized")), "{}", run.stderr);
    // The store records where its sources really are; trusting that reads them.
    let run = config.run(&[args, os(&[&"--allow-source", &outside.path()])].concat(), &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_npy_is_tas(&npy, &f.path);
}

#[test]
fn a_source_replaced_by_a_fifo_is_refused_without_hanging() {
    let f = monthly();
    let store = scan_fixture(&f);
    std::fs::remove_file(&f.path).unwrap();
    let c_path = std::ffi::CString::new(f.path.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
    let npy = f.join("x.npy");
    let run = cli_limited(&os(&[&"read", &store, &"tas", &"-o", &npy]), Duration::from_secs(30));
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.contains("FIFO, not a regular file"), "{}", run.stderr);
}

#[test]
fn kerchunk_exports_carry_the_source_containers() {
    let f = monthly();
    let store = scan_fixture(&f);
    let json = f.join("refs.json");
    let run = cli(&os(&[&"export", &store, &"--kerchunk", &json]));
    assert_eq!(run.code, 0, "{}", run.stderr);
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let want = format!("file://{}", dir_prefix(f.dir.path()));
    assert_eq!(doc["vzarr"]["source_containers"], serde_json::json!([want]));
    let info: serde_json::Value = serde_json::from_slice(&std::fs::read(store.join("vzarr.json")).unwrap()).unwrap();
    assert_eq!(info["source_containers"], serde_json::json!([dir_prefix(f.dir.path())]));
}

#[test]
fn exports_of_moved_archives_check_paths_alone() {
    let f = monthly();
    let store = scan_fixture(&f);
    let moved = std::fs::read(&f.path).unwrap();
    std::fs::remove_file(&f.path).unwrap();
    let json = f.join("refs.json");
    let prefix = format!("{}=s3://bucket/archive/", dir_prefix(f.dir.path()));
    let args = os(&[&"export", &store, &"--kerchunk", &json, &"--url-prefix", &prefix]);
    // The archive now lives in a bucket: its references are still published from a trusted directory.
    let trusted = Config::new().run(&[args.clone(), os(&[&"--allow-source", &f.dir.path()])].concat(), &[]);
    assert_eq!(trusted.code, 0, "{}", trusted.stderr);
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(doc["vzarr"]["source_containers"], serde_json::json!(["s3://bucket/archive/"]));
    let chunk = doc["refs"]["tas/c/0/0/0"].as_array().expect("a reference");
    assert_eq!(chunk[0], format!("s3://bucket/archive/{}", f.path.file_name().unwrap().to_str().unwrap()));
    let (offset, length) = (chunk[1].as_u64().unwrap() as usize, chunk[2].as_u64().unwrap() as usize);
    assert!(offset + length <= moved.len());
    std::fs::remove_file(&json).unwrap();
    let refused = Config::new().run(&args, &[]);
    assert_eq!(refused.code, 1, "{}", refused.stderr);
    assert!(refused.stderr.contains("is not authorized") && !json.exists(), "{}", refused.stderr);
}

#[test]
fn scanning_a_kernel_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("p.vzarr");
    let run = Config::new().run(&os(&[&"scan", &"/proc/self/environ", &"-o", &store]), &[]);
    assert_eq!((run.code, run.stderr_lines().len()), (1, 1), "{}", run.stderr);
    assert!(run.stderr.contains("procfs") && !store.exists(), "{}", run.stderr);
}
