//! `vzarr compact` (issue 40): runs of daily size-1 chunks folded into target-size chunks, in a
//! native store (one atomic exchange) and in an Icechunk repository (one commit). Every value read
//! back equals libnetcdf's reads of the daily files; `verify` passes; zarrs reads the materialized
//! copy of a compacted store; refusals (usage errors, a changed source, a busy store) leave the
//! store byte for byte as it was.

use std::path::{Path, PathBuf};

use crate::common::archives::{daily, write_series_file, SeriesFile};
use crate::common::{cli, cli_expect, open_store, read, with_hdf5_files};
use crate::interop::{assert_same, assert_zarrs_reads_exactly, oracle, s};

const VARS: [&str; 3] = ["tas", "time", "time_bnds"];

pub(super) fn write_days(dir: &Path, days: usize) -> Vec<PathBuf> {
    with_hdf5_files(|| daily(2001, days).iter().map(|f| write_series_file(dir, f)).collect())
}

pub(super) fn scan(files: &[PathBuf], out: &Path, extra: &[&str]) {
    let mut args = vec!["scan".to_string()];
    args.extend(files.iter().map(s));
    args.extend(["--concat", "time", "-o"].map(String::from));
    args.push(s(out));
    args.extend(extra.iter().map(|a| a.to_string()));
    cli_expect(&args, 0);
}

pub(super) fn compact(store: &Path, extra: &[&str]) -> crate::common::Run {
    let mut args = vec!["compact".to_string(), s(store)];
    args.extend(extra.iter().map(|a| a.to_string()));
    cli(&args)
}

/// The time edges of `var` as the store says.
pub(super) fn time_edges(store: &Path, var: &str) -> Vec<u64> {
    let opened = open_store(store);
    let array = opened.array(var).unwrap();
    array.reader().metadata().chunk_grid.dim(0).edges().collect()
}

pub(super) fn assert_values(store: &Path, files: &[PathBuf]) {
    let opened = open_store(store);
    for var in VARS {
        assert_same(&format!("{var} of the compacted store"), &read(&opened, var, "").bytes, &oracle(files, var));
    }
}

#[test]
fn daily_chunks_fold_into_target_chunks_and_read_as_the_files() {
    let dir = tempfile::tempdir().unwrap();
    let files = write_days(dir.path(), 40);
    let store = dir.path().join("days.vzarr");
    scan(&files, &store, &[]);
    // A dry run prints the plan and writes nothing.
    let before = crate::common::tree_files(&store);
    let dry = compact(&store, &["--dim", "time", "--target", "30", "--dry-run"]);
    assert_eq!(dry.code, 0, "{}", dry.stderr);
    assert!(dry.stdout.contains("tas: time: [1 x 40] -> [30, 10]"), "{}", dry.stdout);
    assert!(crate::common::tree_files(&store) == before, "a dry run changed the store");
    // Every chunk is folded, the last file's too: 30 + 10.
    let run = compact(&store, &["--chunks", "time=30"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    for var in VARS {
        assert_eq!(time_edges(&store, var), vec![30, 10], "{var}");
    }
    assert_values(&store, &files);
    let verified = cli_expect(&["verify", &s(&store)], 0);
    assert!(verified.stdout.contains(": 0 failed"), "{}", verified.stdout);
    // Idempotent: nothing to fold, nothing written.
    let compacted = crate::common::tree_files(&store);
    let again = compact(&store, &["--dim", "time", "--target", "30"]);
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert!(again.stdout.contains("nothing to fold"), "{}", again.stdout);
    assert!(crate::common::tree_files(&store) == compacted, "a compaction with nothing to fold changed the store");
    // Another Zarr implementation reads the compacted chunks (materialized verbatim).
    let zarr = dir.path().join("days.zarr");
    cli_expect(&["materialize", &s(&store), &s(&zarr)], 0);
    assert_zarrs_reads_exactly(&zarr, &files, &VARS);
}

/// Old chunks that a new chunk does not hold whole: files of 10 days in chunks of 4 (each file's
/// last chunk half filled), latitude and longitude chunks that do not divide the grid, folded into
/// chunks of 7 that start and end inside old chunks. With the default memory limit the chunks are
/// built a chunk row at a time; under a small one, one chunk at a time. Both read as the files.
#[test]
fn chunks_folded_across_old_chunk_edges_read_as_the_files() {
    let dir = tempfile::tempdir().unwrap();
    let files: Vec<PathBuf> = with_hdf5_files(|| {
        (0..3)
            .map(|k| {
                let mut file = SeriesFile::new(format!("part{k}.nc"), 10 * k, 10, 4);
                file.chunk_yx = (4, 5);
                write_series_file(dir.path(), &file)
            })
            .collect()
    });
    let store = dir.path().join("parts.vzarr");
    scan(&files, &store, &[]);
    // The last file's last chunk keeps its edge: it really decodes to 4 steps.
    assert_eq!(time_edges(&store, "tas"), vec![4, 4, 2, 4, 4, 2, 4, 4, 4]);
    let small = dir.path().join("small.vzarr");
    crate::common::copy_dir(&store, &small);
    for (store, extra) in [(&store, None), (&small, Some("2K"))] {
        let mut args = vec!["--chunks", "time=7"];
        args.extend(extra.iter().flat_map(|m| ["--max-memory", *m]));
        let run = compact(store, &args);
        assert_eq!(run.code, 0, "{}", run.stderr);
        assert_eq!(time_edges(store, "tas"), vec![7, 7, 7, 7, 2], "{}", store.display());
        assert_values(store, &files);
        let verified = cli_expect(&["verify", &s(store)], 0);
        assert!(verified.stdout.contains(": 0 failed"), "{}", verified.stdout);
    }
}

#[test]
fn append_then_compact_tail_like_a_daily_cron_job() {
    let dir = tempfile::tempdir().unwrap();
    let files = write_days(dir.path(), 40);
    let store = dir.path().join("days.vzarr");
    scan(&files[..35], &store, &[]);
    cli_expect(&["compact", &s(&store), "--dim", "time", "--target", "10"], 0);
    assert_eq!(time_edges(&store, "tas"), vec![10, 10, 10, 5]);
    // The last stored file now starts inside a folded chunk: the appends continue after it.
    for file in &files[35..] {
        cli_expect(&["append", &s(&store), &s(file)], 0);
    }
    assert_eq!(time_edges(&store, "tas"), vec![10, 10, 10, 5, 1, 1, 1, 1, 1]);
    let tail = compact(&store, &["--dim", "time", "--target", "10", "--tail"]);
    assert_eq!(tail.code, 0, "{}", tail.stderr);
    assert_eq!(time_edges(&store, "tas"), vec![10, 10, 10, 10]);
    assert_values(&store, &files);
    cli_expect(&["verify", &s(&store)], 0);
}

#[test]
fn bad_options_are_usage_errors_and_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let files = write_days(dir.path(), 5);
    let store = dir.path().join("days.vzarr");
    scan(&files, &store, &[]);
    let before = crate::common::tree_files(&store);
    let cases: [(&[&str], &str); 5] = [
        (&["--dim", "time", "--target", "0"], "at least 1"),
        (&["--chunks", "time=6"], "larger than dimension time (5)"),
        (&["--dim", "depth", "--target", "3"], "no array has a dimension named \"depth\""),
        (&["--chunks", "time"], "expected DIM=LENGTH"),
        (&[], "needs --dim DIM --target N"),
    ];
    for (args, message) in cases {
        let run = compact(&store, args);
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert!(run.stderr.contains(message), "{args:?}: {}", run.stderr);
        assert!(crate::common::tree_files(&store) == before, "{args:?} changed the store");
    }
}

#[test]
fn a_changed_source_or_a_busy_store_is_refused_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let files = write_days(dir.path(), 6);
    let store = dir.path().join("days.vzarr");
    scan(&files, &store, &[]);
    let before = crate::common::tree_files(&store);
    // A busy store: another writer holds the lock.
    {
        use std::os::fd::AsRawFd;
        let held = std::fs::File::open(&store).unwrap();
        // SAFETY: flock on a descriptor this test owns.
        assert_eq!(unsafe { libc::flock(held.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) }, 0);
        let busy = compact(&store, &["--chunks", "time=3"]);
        assert_eq!(busy.code, 1);
        assert_eq!(busy.stderr_lines().len(), 1, "{}", busy.stderr);
        assert!(busy.stderr.contains("is running"), "{}", busy.stderr);
    }
    assert!(crate::common::tree_files(&store) == before, "a refused compaction changed the store");
    // A source rewritten since the scan is named, before anything is written.
    let changed = &files[1];
    let bytes = std::fs::read(changed).unwrap();
    std::fs::write(changed, [&bytes[..], b"x"].concat()).unwrap();
    let run = compact(&store, &["--chunks", "time=3"]);
    assert_eq!(run.code, 1);
    assert_eq!(run.stderr_lines().len(), 1, "{}", run.stderr);
    assert!(run.stderr.contains(&s(changed)) && run.stderr.contains("changed since the scan"), "{}", run.stderr);
    assert!(crate::common::tree_files(&store) == before, "a refused compaction changed the store");
}

#[test]
fn two_compactions_at_once_one_wins_and_the_other_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let files = write_days(dir.path(), 30);
    let store = dir.path().join("days.vzarr");
    scan(&files, &store, &[]);
    let spawn = || {
        let mut command = crate::common::vzarr_command();
        command.args(["compact", &s(&store), "--chunks", "time=7"]);
        command.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
        command.spawn().unwrap()
    };
    let (a, b) = (spawn(), spawn());
    let runs = [a.wait_with_output().unwrap(), b.wait_with_output().unwrap()];
    let written =
        runs.iter().filter(|r| r.status.success() && String::from_utf8_lossy(&r.stdout).contains("compacted")).count();
    assert_eq!(written, 1, "exactly one compaction writes: {runs:?}");
    for run in runs.iter().filter(|r| !r.status.success()) {
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.contains("is running"), "{stderr}");
    }
    assert_eq!(time_edges(&store, "tas"), vec![7, 7, 7, 7, 2]);
    assert_values(&store, &files);
}

/// Runs `vzarr compact` on a repository and reads it back through a reader opened on the previous
/// snapshot (still reading it) and through the new tip.
#[test]
fn icechunk_daily_appends_compact_in_one_commit_while_an_old_reader_reads_on() {
    let dir = tempfile::tempdir().unwrap();
    let files = write_days(dir.path(), 40);
    let repo = dir.path().join("days.icechunk");
    scan(&files[..30], &repo, &["--format", "icechunk"]);
    for file in &files[30..] {
        cli_expect(&["append", &s(&repo), &s(file)], 0);
    }
    let commits = crate::icechunk_repo::history(&repo, "main").len();
    let open = || {
        let authorization = vzarr::read::Authorization::new([format!("{}/", dir.path().display())]);
        vzarr::read::blocking::BlockingStore::open_with(s(&repo), &vzarr::read::OpenOptions::new(authorization))
            .unwrap()
    };
    let old = open();
    let old_tas = old.array("tas").unwrap();
    let run = compact(&repo, &["--dim", "time", "--target", "31", "--message", "monthly chunks"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("new snapshot"), "{}", run.stdout);
    let messages = crate::icechunk_repo::history(&repo, "main");
    assert_eq!(messages.len(), commits + 1, "one commit: {messages:?}");
    assert_eq!(messages[0], "monthly chunks");
    // The reader of the previous snapshot reads on, with its daily chunks.
    let all = vzarr::Selection::all(&old_tas.reader().shape());
    let old_values = old_tas.read(&all, &vzarr::ReadOptions::default()).unwrap();
    assert_same("tas through the previous snapshot", &old_values.bytes, &oracle(&files, "tas"));
    assert_eq!(old_tas.reader().metadata().chunk_grid.dim(0).num_chunks(), 40);
    // The new tip: [31, 9], equal to the files.
    let new = open();
    for var in VARS {
        let array = new.array(var).unwrap();
        let edges: Vec<u64> = array.reader().metadata().chunk_grid.dim(0).edges().collect();
        assert_eq!(edges, vec![31, 9], "{var}");
        let values = array.read(&vzarr::Selection::all(&array.reader().shape()), &Default::default()).unwrap();
        assert_same(&format!("{var} at the new tip"), &values.bytes, &oracle(&files, var));
    }
    let verified = cli_expect(&["verify", &s(&repo)], 0);
    assert!(verified.stdout.contains(": 0 failed"), "{}", verified.stdout);
    // icechunk-python + zarr-python + xarray read the compacted snapshot equal to netCDF4's reads.
    if let Some(python) = crate::icechunk_repo::icechunk_python() {
        crate::icechunk_repo::python_check(&python, &repo, &files, &[]);
    }
    // An append after the compaction continues the repository, and compact --tail folds it again.
    let more = with_hdf5_files(|| {
        let mut next = daily(2001, 42);
        next.drain(..40);
        next.iter().map(|f| write_series_file(dir.path(), f)).collect::<Vec<_>>()
    });
    cli_expect(&["append", &s(&repo), &s(&more[0]), &s(&more[1])], 0);
    cli_expect(&["compact", &s(&repo), "--chunks", "time=31", "--tail"], 0);
    let all_files: Vec<PathBuf> = files.iter().chain(&more).cloned().collect();
    let tip = open();
    let tas = tip.array("tas").unwrap();
    assert_eq!(tas.reader().metadata().chunk_grid.dim(0).edges().collect::<Vec<_>>(), vec![31, 11]);
    let values = tas.read(&vzarr::Selection::all(&tas.reader().shape()), &Default::default()).unwrap();
    assert_same("tas after append + compact --tail", &values.bytes, &oracle(&all_files, "tas"));
}

/// A compaction killed (SIGKILL) after staging the new store, or after writing the new snapshot
/// but before the branch moves, leaves the old store or branch, readable; the next run compacts.
#[test]
fn a_killed_compaction_leaves_the_old_store_and_the_next_one_compacts() {
    let dir = tempfile::tempdir().unwrap();
    let files = write_days(dir.path(), 12);
    let (store, repo) = (dir.path().join("days.vzarr"), dir.path().join("days.icechunk"));
    scan(&files, &store, &[]);
    scan(&files, &repo, &["--format", "icechunk"]);
    for (location, crash) in [(&store, "staged"), (&repo, "icechunk-snapshot-written")] {
        let before = crate::common::tree_files(location);
        let commits = crate::icechunk_repo::history(&repo, "main");
        let mut command = crate::common::vzarr_command();
        command.args(["compact", &s(location), "--chunks", "time=5"]).env("VZARR_TEST_CRASH_AT", crash);
        let run = crate::common::run(command);
        assert_ne!(run.code, 0, "{crash}: the compaction was to be killed: {}", run.stderr);
        if location == &store {
            assert!(crate::common::tree_files(&store) == before, "the killed compaction changed the store");
            assert_values(&store, &files);
        } else {
            assert_eq!(crate::icechunk_repo::history(&repo, "main"), commits, "the branch moved");
        }
        let again = compact(location, &["--chunks", "time=5"]);
        assert_eq!(again.code, 0, "{crash}: {}", again.stderr);
    }
    assert_eq!(time_edges(&store, "tas"), vec![5, 5, 2]);
    assert_values(&store, &files);
    cli_expect(&["verify", &s(&repo)], 0);
    assert!(crate::common::dir_entries(dir.path()).iter().all(|n| !n.starts_with(".days")), "staging left behind");
}

mod calendar;
mod intermediate;
mod regular;
