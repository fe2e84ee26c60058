//! `vzarr materialize --chunks` (issue 40): a regular copy of a monthly archive, written under
//! `--max-memory`, interrupted and resumed, reads in zarrs (regular grid) equal to libnetcdf's reads
//! of the files.

use std::path::Path;

use crate::common::archives::{monthly, write_series_file};
use crate::common::{cli, cli_expect, with_hdf5_files};
use crate::interop::{assert_zarrs_reads_exactly, s, zarrs_array, zarrs_time_edges};

const VARS: [&str; 5] = ["tas", "time", "time_bnds", "lat", "lon"];

fn materialize(store: &Path, out: &Path, extra: &[&str]) -> std::process::Command {
    let mut command = crate::common::vzarr_command();
    command.args(["materialize", &s(store), &s(out)]).args(extra).stdout(std::process::Stdio::piped());
    command
}

#[test]
fn a_regular_copy_under_max_memory_resumes_and_equals_the_files() {
    let dir = tempfile::tempdir().unwrap();
    let files: Vec<_> =
        with_hdf5_files(|| monthly(2023..=2024, None, true).iter().map(|f| write_series_file(dir.path(), f)).collect());
    let store = dir.path().join("months.vzarr");
    let mut args = vec!["scan".to_string()];
    args.extend(files.iter().map(s));
    args.extend(["--concat", "time", "-o"].map(String::from));
    args.push(s(&store));
    cli_expect(&args, 0);
    let out = dir.path().join("months.zarr");
    let spec = ["--chunks", "time=90,lat=4,lon=5", "--max-memory", "40K"];
    // Killed after its first row of chunks: nothing at the destination, the partial copy kept.
    let mut killed = materialize(&store, &out, &spec);
    killed.env("VZARR_TEST_CRASH_AT", "regular-row-written");
    let run = crate::common::run(killed);
    assert_ne!(run.code, 0, "the copy was to be killed: {}", run.stderr);
    assert!(!out.exists());
    let partial = dir.path().join("months.zarr.partial");
    assert!(crate::common::dir_entries(&partial).len() > 1, "the first row was written");
    // The rerun continues: fewer chunks written than a whole copy writes.
    let written = |run: &crate::common::Run| -> u64 {
        assert_eq!(run.code, 0, "{}", run.stderr);
        run.stdout.split(" chunks written").next().unwrap().rsplit(' ').next().unwrap().parse().unwrap()
    };
    let resumed = written(&crate::common::run(materialize(&store, &out, &spec)));
    let whole = written(&crate::common::run(materialize(&store, &dir.path().join("whole.zarr"), &spec)));
    assert!(0 < resumed && resumed < whole, "resumed {resumed} of {whole} chunks");
    assert!(!partial.exists(), "the partial copy was published");
    assert_zarrs_reads_exactly(&out, &files, &VARS);
    let tas = zarrs_array(&out, "tas");
    assert!(zarrs_time_edges(&tas).iter().all(|&e| e == 90));
    let doc = crate::common::array_json(&out, "tas");
    assert_eq!(doc["chunk_grid"], serde_json::json!({"name": "regular", "configuration": {"chunk_shape": [90, 4, 5]}}));
    // One read per row of chunks (the default memory), other dimensions as the source chunks them.
    let out2 = dir.path().join("time.zarr");
    cli_expect(&["materialize", &s(&store), &s(&out2), "--chunks", "time=100"], 0);
    assert_zarrs_reads_exactly(&out2, &files, &VARS);
    assert_eq!(
        crate::common::array_json(&out2, "tas")["chunk_grid"]["configuration"]["chunk_shape"],
        serde_json::json!([100, 5, 6])
    );
    // Bad specs change nothing.
    let bad = cli(&["materialize", &s(&store), &s(dir.path().join("bad.zarr")), "--chunks", "depth=3"]);
    assert!(bad.code == 1 && bad.stderr.contains("no array has a dimension named \"depth\""), "{}", bad.stderr);
    let zero = cli(&["materialize", &s(&store), &s(dir.path().join("bad.zarr")), "--chunks", "time=0"]);
    assert!(zero.code == 2 && zero.stderr.contains("at least 1"), "{}", zero.stderr);
    assert!(!dir.path().join("bad.zarr").exists() && !dir.path().join("bad.zarr.partial").exists());
}
