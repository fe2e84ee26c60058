//! Many variables (issue 14, item 19): a store is made durable with one sync however many files it
//! has, `verify` opens each source once however many variables it checks, and `info` lists them all.
//! Asserted on counts the binary reports (`VZARR_TEST_COUNTERS=1`), not on time; timings are in
//! `benches/archive.rs`.

mod concat_memory;
mod memory;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use crate::common::hostile::{Cdf2, NC_FLOAT};
use crate::common::{oracle_read, run, Run};

/// A CDF-2 file with `n` float variables `v0..` of 4 values each (`v<i>[j] = i + j / 4`).
pub fn write_many_variables(dir: &Path, n: usize) -> PathBuf {
    let mut cdf = Cdf2 { dims: vec![("x".into(), 4)], ..Cdf2::default() };
    for i in 0..n {
        cdf.vars.push((format!("v{i}"), vec![0], NC_FLOAT, 0));
    }
    let mut bytes = cdf.encode(|_| 16);
    for i in 0..n {
        for j in 0..4 {
            bytes.extend((i as f32 + j as f32 / 4.0).to_be_bytes());
        }
    }
    let path = dir.join(format!("many_{n}.nc"));
    std::fs::write(&path, bytes).unwrap();
    path
}

fn counted(args: &[OsString]) -> (Run, u64, u64) {
    let mut command = crate::common::vzarr_command();
    command.args(args).env("VZARR_TEST_COUNTERS", "1").stdout(Stdio::piped());
    let run = run(command);
    assert_eq!(run.code, 0, "{args:?}: {}", run.stderr);
    let value = |name: &str| run.counter(name).unwrap_or_else(|| panic!("counter {name}: {}", run.stderr));
    let (syncs, opens) = (value("syncs"), value("oracle_opens"));
    (run, syncs, opens)
}

#[test]
fn many_variables_take_one_sync_and_one_source_open() {
    let dir = tempfile::tempdir().unwrap();
    let n = 300;
    let file = write_many_variables(dir.path(), n);
    let store = dir.path().join("many.vzarr");
    let (_, syncs, _) = counted(&["scan".into(), file.clone().into(), "-o".into(), store.clone().into()]);
    assert_eq!(syncs, 1, "one sync for a store of {} files", 2 * n + 3);
    let (run, _, opens) = counted(&["verify".into(), store.clone().into()]);
    assert_eq!(opens, 1, "the source is opened once for {n} variables");
    assert_eq!(run.stdout.lines().filter(|l| l.starts_with("ok")).count(), n, "{}", run.stdout);
    let (run, _, _) = counted(&["info".into(), store.clone().into(), "--json".into()]);
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(doc["arrays"].as_array().unwrap().len(), n);
    let kerchunk = dir.path().join("many.json");
    let (_, syncs, _) = counted(&["export".into(), store.clone().into(), "--kerchunk".into(), kerchunk.into()]);
    assert_eq!(syncs, 1);
    // The values are the file's: spot-check the last variable against libnetcdf.
    let last = format!("v{}", n - 1);
    let ours = crate::common::read(&crate::common::open_store(&store), &last, "");
    assert_eq!(ours.bytes, oracle_read(&file, &last, None));
}
