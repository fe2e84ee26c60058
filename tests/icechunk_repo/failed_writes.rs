//! Issue 41: a write that fails (a full file system, made by the `VZARR_TEST_FAIL_AT` hook of debug
//! builds) leaves no half-made new repository, so a retry succeeds; and an existing repository keeps
//! its branches, history, config and files.

use std::path::{Path, PathBuf};

use super::{history, scan_icechunk, tip};
use crate::common::archives::{write_series_file, yearly};
use crate::common::with_hdf5_files;
use crate::interop::{assert_same, oracle, s};

/// `vzarr scan SOURCES --concat time --format icechunk -o REPO EXTRA`, failing at `point`.
fn scan_failing_at(sources: &[PathBuf], repo: &Path, extra: &[&str], point: &str) -> crate::common::Run {
    let mut command = crate::common::vzarr_command();
    command.arg("scan").args(sources).args(["--concat", "time", "--format", "icechunk", "-o"]).arg(repo);
    command.args(extra).env("VZARR_TEST_FAIL_AT", point);
    crate::common::run(command)
}

fn sources(dir: &Path) -> Vec<PathBuf> {
    with_hdf5_files(|| yearly(2001..=2002, 61).iter().map(|f| write_series_file(dir, f)).collect())
}

/// `tas` read by `vzarr read` from the repository equals libnetcdf's reads of the sources.
fn assert_reads_as_the_sources(repo: &Path, sources: &[PathBuf]) {
    let npy = repo.with_extension("tas.npy");
    crate::common::cli_expect(&["read", &s(repo), "tas", "-o", &s(&npy)], 0);
    let ours = crate::common::parse_npy(&std::fs::read(&npy).unwrap());
    assert_same("tas", &ours.data, &oracle(sources, "tas"));
}

/// Creating a new repository fails on a full disk after Icechunk wrote its first objects: nothing is
/// left at the path (it used to keep `snapshots/` and refuse the retry as "not an Icechunk
/// repository"), and the retry succeeds. The same for a failure once the snapshot is written.
#[test]
fn a_failed_write_of_a_new_repository_is_removed_and_the_retry_succeeds() {
    let dir = tempfile::tempdir().unwrap();
    let sources = sources(dir.path());
    for point in ["icechunk-created", "icechunk-snapshot-written"] {
        let repo = dir.path().join(format!("{point}.icechunk"));
        let run = scan_failing_at(&sources, &repo, &[], point);
        assert_ne!(run.code, 0, "{point}: the write was to fail");
        assert_eq!(run.stderr.trim().lines().count(), 1, "{point}: one line: {}", run.stderr);
        assert!(run.stderr.contains("No space left on device"), "{point}: {}", run.stderr);
        assert!(!repo.exists(), "{point}: the half-made repository is left behind");
        scan_icechunk(&sources, &repo, &[], 0);
        assert_reads_as_the_sources(&repo, &sources);
    }
}

/// A commit to an existing repository that fails once its snapshot is written leaves the repository
/// as it was for every reader: the branch, its tip and history, its branches and its config unchanged,
/// every object file it had with the bytes it had, and its values. Not byte for byte: the objects the
/// failed write stored stay (unreferenced, as Icechunk leaves them: removing them could remove a
/// concurrent writer's), and Icechunk rewrote its `repo` file for the temporary branch.
#[test]
fn a_failed_commit_leaves_an_existing_repository_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let sources = sources(dir.path());
    let repo = dir.path().join("repo.icechunk");
    scan_icechunk(&sources[..1], &repo, &[], 0);
    let before = (crate::common::tree_files(&repo), tip(&repo, "main"), history(&repo, "main"), branches(&repo));
    let run = scan_failing_at(&sources, &repo, &["--message", "second"], "icechunk-snapshot-written");
    assert_ne!(run.code, 0, "the commit was to fail");
    assert_eq!(run.stderr.trim().lines().count(), 1, "one line: {}", run.stderr);
    let after = (crate::common::tree_files(&repo), tip(&repo, "main"), history(&repo, "main"), branches(&repo));
    let changed: Vec<&String> =
        before.0.iter().filter(|(p, b)| after.0.get(*p) != Some(b) && p.as_str() != "repo").map(|(p, _)| p).collect();
    assert!(changed.is_empty(), "changed or removed: {changed:?}");
    assert_eq!((&after.1, &after.2, &after.3), (&before.1, &before.2, &before.3));
    assert_reads_as_the_sources(&repo, &sources[..1]);
    scan_icechunk(&sources, &repo, &["--message", "second"], 0);
    assert_eq!(history(&repo, "main").len(), before.2.len() + 1, "the retry commits");
}

/// The repository's branches, sorted.
fn branches(repo: &Path) -> Vec<String> {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let storage = icechunk::new_local_filesystem_storage(repo).await.unwrap();
        let repository = icechunk::Repository::open(storage).execute().await.unwrap();
        let mut names: Vec<String> = repository.list_branches().await.unwrap().into_iter().collect();
        names.sort();
        names
    })
}
