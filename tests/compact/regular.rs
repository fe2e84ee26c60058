//! `vzarr materialize --chunks` (issue 40): a regular copy of a monthly archive, written under
//! `--max-memory`, interrupted and resumed, reads in zarrs (regular grid) equal to libnetcdf's reads
//! of the files; sharded copies and Icechunk repositories (one commit) read by zarrs, vzarr,
//! zarr-python, icechunk-python and xarray equal to the files; `--update` of a repository after an
//! append rewrites only the chunks the new days touch.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::common::archives::{daily, monthly, write_series_file};
use crate::common::{cli, cli_expect, read, with_hdf5_files};
use crate::interop::{assert_same, assert_zarrs_reads_exactly, oracle, s, zarrs_array, zarrs_time_edges};

const VARS: [&str; 5] = ["tas", "time", "time_bnds", "lat", "lon"];
const DAILY_VARS: [&str; 5] = VARS;

fn materialize(store: &Path, out: &Path, extra: &[&str]) -> std::process::Command {
    let mut command = crate::common::vzarr_command();
    command.args(["materialize", &s(store), &s(out)]).args(extra).stdout(std::process::Stdio::piped());
    command
}

#[test]
fn a_regular_copy_under_max_memory_resumes_and_equals_the_files() {
    let dir = tempfile::tempdir().unwrap();
    let (store, files) = monthly_store(dir.path());
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

/// The monthly archive of 2023-2024 (tas 731 x 10 x 12, chunks of a month x 5 x 6) scanned into a
/// native store; the store and the files.
fn monthly_store(dir: &Path) -> (PathBuf, Vec<PathBuf>) {
    let files: Vec<_> =
        with_hdf5_files(|| monthly(2023..=2024, None, true).iter().map(|f| write_series_file(dir, f)).collect());
    let store = dir.join("months.vzarr");
    super::scan(&files, &store, &[]);
    (store, files)
}

/// Every array of the Icechunk repository at `location`, read by vzarr, equals libnetcdf's reads of
/// the files.
pub(super) fn assert_vzarr_reads_exactly(location: &Path, files: &[PathBuf], vars: &[&str]) {
    // A regular copy owns its chunks: no source container to trust.
    let authorization = vzarr::read::Authorization::new(Vec::<String>::new());
    let opened =
        vzarr::read::blocking::BlockingStore::open_with(s(location), &vzarr::read::OpenOptions::new(authorization))
            .unwrap_or_else(|e| panic!("opening {}: {e}", location.display()));
    for var in vars {
        assert_same(&format!("{var} of {}", location.display()), &read(&opened, var, "").bytes, &oracle(files, var));
    }
}

/// Runs tests/python/check_regular.py (zarr-python, xarray and, for a repository, icechunk-python
/// against netCDF4's reads of the files) and asserts every check passed.
fn python_regular(python: &Path, args: &[String], files: &[PathBuf]) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/check_regular.py");
    let mut command = std::process::Command::new(python);
    command.arg(script).args(args).args(["--concat", "time"]).args(files).stdout(std::process::Stdio::piped());
    let run = crate::common::run(command);
    eprintln!("{}", run.stdout);
    assert_eq!(run.code, 0, "check_regular.py failed:\n{}\n{}", run.stdout, run.stderr);
}

#[test]
fn sharded_and_icechunk_regular_copies_equal_the_files() {
    let dir = tempfile::tempdir().unwrap();
    let (store, files) = monthly_store(dir.path());
    // Shards of 2 x 2 x 1 chunks of (90, 4, 5): the last shards reach past the array (their inner
    // chunks wholly outside it are left empty), under a small memory limit.
    let sharded = dir.path().join("sharded.zarr");
    let spec = ["--chunks", "time=90,lat=4,lon=5", "--shards", "time=180,lat=8", "--max-memory", "40K"];
    let run = cli_expect(&[&["materialize", &s(&store), &s(&sharded)][..], &spec].concat(), 0);
    assert!(run.stdout.contains("in shards"), "{}", run.stdout);
    assert_zarrs_reads_exactly(&sharded, &files, &VARS);
    let doc = crate::common::array_json(&sharded, "tas");
    assert_eq!(doc["chunk_grid"]["configuration"]["chunk_shape"], serde_json::json!([180, 8, 5]));
    assert_eq!(doc["codecs"][0]["name"], "sharding_indexed");
    assert_eq!(doc["codecs"][0]["configuration"]["chunk_shape"], serde_json::json!([90, 4, 5]));
    // --codec: the chunks re-encoded with zstd instead of the files' deflate.
    let zstd = dir.path().join("zstd.zarr");
    cli_expect(&["materialize", &s(&store), &s(&zstd), "--chunks", "time=90", "--codec", "zstd:5"], 0);
    assert_zarrs_reads_exactly(&zstd, &files, &VARS);
    let codecs = &crate::common::array_json(&zstd, "tas")["codecs"];
    assert_eq!(codecs[1]["name"], "zstd", "{codecs}");
    assert_eq!(codecs[1]["configuration"]["level"], 5, "{codecs}");
    let bad_codec =
        cli(&["materialize", &s(&store), &s(dir.path().join("bad.zarr")), "--chunks", "time=9", "--codec", "blosc"]);
    assert!(bad_codec.code == 2 && bad_codec.stderr.contains("expected none, zstd"), "{}", bad_codec.stderr);
    // An Icechunk repository, one commit.
    let repo = dir.path().join("months.icechunk");
    let args = ["materialize", &s(&store), &s(&repo), "--chunks", "time=90,lat=4,lon=5", "--format", "icechunk"];
    let run = cli_expect(&[&args[..], &["--message", "regular copy"]].concat(), 0);
    assert!(run.stdout.contains("one Icechunk commit"), "{}", run.stdout);
    assert_eq!(crate::icechunk_repo::history(&repo, "main"), ["regular copy", "Repository initialized"]);
    assert_vzarr_reads_exactly(&repo, &files, &VARS);
    if let Some(python) = crate::icechunk_repo::icechunk_python() {
        let chunks = ["--chunks".to_string(), "tas=90,4,5".to_string()];
        python_regular(&python, &[&["--repo".to_string(), s(&repo)][..], &chunks].concat(), &files);
        let zarr = ["--zarr".to_string(), s(&sharded), "--sharded".into(), "tas".into()];
        python_regular(&python, &[&zarr[..], &chunks].concat(), &files);
        python_regular(&python, &["--zarr".to_string(), s(&zstd)], &files);
    }
    // Refusals: shards that split a chunk, shards in a repository; nothing is written.
    let bad = dir.path().join("bad.zarr");
    let split = cli(&["materialize", &s(&store), &s(&bad), "--chunks", "time=90", "--shards", "time=100"]);
    assert!(split.code == 1 && split.stderr.contains("not a multiple of the chunk length 90"), "{}", split.stderr);
    let layout = cli(&["materialize", &s(&store), &s(&bad), "--chunks", "time=90", "--shards", "file"]);
    assert!(layout.code == 2 && layout.stderr.contains("by dimension name"), "{}", layout.stderr);
    let bad_repo = dir.path().join("bad.icechunk");
    let sharded_repo = ["materialize", &s(&store), &s(&bad_repo), "--chunks", "time=90", "--shards", "time=180"];
    let refused = cli(&[&sharded_repo[..], &["--format", "icechunk"]].concat());
    assert!(refused.code == 1 && refused.stderr.contains("written unsharded"), "{}", refused.stderr);
    assert!(!bad.exists() && !dir.path().join("bad.zarr.partial").exists() && !bad_repo.exists());
}

/// The chunks the tip of `main` changed against its parent, per array (Icechunk's diff).
fn changed_chunks(repo: &Path) -> BTreeMap<String, Vec<Vec<u32>>> {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        use futures::TryStreamExt;
        use icechunk::repository::VersionInfo;
        let storage = icechunk::new_local_filesystem_storage(repo).await.unwrap();
        let repository = icechunk::Repository::open(storage).execute().await.unwrap();
        let tip = VersionInfo::BranchTipRef("main".into());
        let ancestry: Vec<_> = repository.ancestry(&tip).await.unwrap().try_collect().await.unwrap();
        let diff = repository.diff(&VersionInfo::SnapshotId(ancestry[1].id.clone()), &tip).await.unwrap();
        diff.updated_chunks
            .iter()
            .filter(|(_, chunks)| !chunks.is_empty())
            .map(|(path, chunks)| (path.to_string(), chunks.iter().map(|c| c.0.clone()).collect()))
            .collect()
    })
}

#[test]
fn an_icechunk_copy_updated_after_an_append_rewrites_only_the_touched_chunks() {
    let dir = tempfile::tempdir().unwrap();
    let files: Vec<PathBuf> =
        with_hdf5_files(|| daily(2001, 40).iter().map(|f| write_series_file(dir.path(), f)).collect());
    let store = dir.path().join("days.vzarr");
    super::scan(&files[..30], &store, &[]);
    let repo = dir.path().join("days.icechunk");
    cli_expect(&["materialize", &s(&store), &s(&repo), "--chunks", "time=7", "--format", "icechunk"], 0);
    assert_vzarr_reads_exactly(&repo, &files[..30], &DAILY_VARS);
    let mut append = vec!["append".to_string(), s(&store)];
    append.extend(files[30..].iter().map(s));
    cli_expect(&append, 0);
    let run = cli_expect(&["materialize", &s(&store), &s(&repo), "--update", "--message", "ten more days"], 0);
    assert!(run.stdout.contains("chunks rewritten") && run.stdout.contains("in one commit"), "{}", run.stdout);
    assert_eq!(crate::icechunk_repo::history(&repo, "main").len(), 3);
    assert_vzarr_reads_exactly(&repo, &files, &DAILY_VARS);
    // Days 30..40 touch time chunks 4 (28..35, which held 2 days) and 5 (35..40); nothing else changed.
    let (ny, nx) = (2u32, 2u32); // lat 10 and lon 12 in the source's chunks of 5 and 6
    let tas: Vec<Vec<u32>> =
        (4..6).flat_map(|t| (0..ny).flat_map(move |y| (0..nx).map(move |x| vec![t, y, x]))).collect();
    let expected = BTreeMap::from([
        ("/tas".to_string(), tas),
        ("/time".to_string(), vec![vec![4], vec![5]]),
        ("/time_bnds".to_string(), vec![vec![4, 0], vec![5, 0]]),
    ]);
    assert_eq!(changed_chunks(&repo), expected);
    if let Some(python) = crate::icechunk_repo::icechunk_python() {
        let changed = ["--changed", "tas=4/0/0,4/0/1,4/1/0,4/1/1,5/0/0,5/0/1,5/1/0,5/1/1", "--changed", "time=4,5"];
        let mut args: Vec<String> = ["--repo".to_string(), s(&repo), "--chunks".into(), "tas=7,5,6".into()].to_vec();
        args.extend(changed.iter().map(|a| a.to_string()));
        args.extend(["--changed", "time_bnds=4/0,5/0"].map(String::from));
        python_regular(&python, &args, &files);
    }
    // Up to date: nothing written, no commit.
    let again = cli_expect(&["materialize", &s(&store), &s(&repo), "--update"], 0);
    assert!(again.stdout.contains("up to date"), "{}", again.stdout);
    assert_eq!(crate::icechunk_repo::history(&repo, "main").len(), 3);
}

#[test]
fn two_materialize_runs_onto_one_output_take_turns() {
    // Issue 52 item 7: without a lock, one published and the other failed removing its marker,
    // leaving `OUT.partial`, which then blocked every later run.
    let dir = tempfile::tempdir().unwrap();
    let (store, files) = monthly_store(dir.path());
    let out = dir.path().join("months.zarr");
    let spec = ["--chunks", "time=90,lat=4,lon=5", "--max-memory", "40K"];
    let children: Vec<_> = {
        let _exclusive = crate::common::no_hdf5_files_open();
        (0..2)
            .map(|_| {
                let mut command = materialize(&store, &out, &spec);
                command.stderr(std::process::Stdio::piped());
                command.spawn().unwrap()
            })
            .collect()
    };
    let runs: Vec<_> = children.into_iter().map(|c| c.wait_with_output().unwrap()).collect();
    let codes: Vec<_> = runs.iter().map(|r| r.status.code()).collect();
    let stderr: Vec<_> = runs.iter().map(|r| String::from_utf8_lossy(&r.stderr).into_owned()).collect();
    assert_eq!(codes.iter().filter(|c| **c == Some(0)).count(), 1, "{codes:?} {stderr:?}");
    let lost = stderr.iter().zip(&codes).find(|(_, c)| **c != Some(0)).unwrap().0;
    assert!(lost.contains("already exists") && lost.lines().count() == 1, "{lost}");
    let names = crate::common::dir_entries(dir.path());
    assert!(!dir.path().join("months.zarr.partial").exists(), "{names:?}");
    let hidden: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(hidden.is_empty(), "{hidden:?}");
    assert_zarrs_reads_exactly(&out, &files, &VARS);
    // The next run is not blocked.
    cli_expect(&[&["materialize", &s(&store), &s(&out), "--overwrite"][..], &spec].concat(), 0);
}
