//! `vzarr append REPO` (issue 12): an Icechunk repository extended with new files gets exactly one
//! commit per append, holds what a fresh `scan --format icechunk` of every file holds (metadata,
//! references, store-owned chunks, summary), and reads as libnetcdf reads the files (through vzarr,
//! and through icechunk-python + xarray); refused appends leave the history unchanged.

use std::path::{Path, PathBuf};

use super::{history, icechunk_python, python_check, scan_icechunk, tip};
use crate::common::archives::{monthly, write_series_file, yearly, SeriesFile};
use crate::common::cmip::{cmip_archive, write_cmip_file, CmipFile};
use crate::common::{cli, cli_expect, with_hdf5_files};
use crate::interop::{assert_same, oracle, s};

fn append(repo: &Path, files: &[PathBuf], extra: &[&str]) -> crate::common::Run {
    let mut args = vec!["append".to_string(), s(repo)];
    args.extend(files.iter().map(s));
    args.extend(extra.iter().map(|a| a.to_string()));
    cli(&args)
}

fn write_series(dir: &Path, files: &[SeriesFile]) -> Vec<PathBuf> {
    with_hdf5_files(|| files.iter().map(|f| write_series_file(dir, f)).collect())
}

/// The branch as vzarr reads it back (sources as recorded), printed, with the history line's time
/// blanked: two repositories holding the same groups, arrays, chunk references, store-owned bytes,
/// sources and summary print the same.
fn contents(repo: &Path, branch: &str) -> String {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let remote = vzarr::read::RemoteOptions::default();
    let stored = runtime.block_on(vzarr::formats::read_branch(&s(repo), branch, &remote)).unwrap();
    let text = format!("{:#?}", stored.dataset);
    regex::Regex::new(r"\d+ \(seconds").unwrap().replace_all(&text, "T (seconds").into_owned()
}

fn assert_same_contents(appended: &Path, fresh: &Path) {
    let (a, b) = (contents(appended, "main"), contents(fresh, "main"));
    if a != b {
        let line = a.lines().zip(b.lines()).position(|(x, y)| x != y).unwrap_or(0);
        let around = |t: &str| t.lines().skip(line.saturating_sub(5)).take(12).collect::<Vec<_>>().join("\n");
        panic!("appended and fresh repositories differ at line {line}:\n{}\n---\n{}", around(&a), around(&b));
    }
}

/// `var` read by `vzarr read` from the repository equals libnetcdf's reads of `in_order`.
fn assert_values(repo: &Path, branch: &str, var: &str, in_order: &[PathBuf]) {
    let npy = repo.with_extension(format!("{var}.npy"));
    let _ = std::fs::remove_file(&npy);
    cli_expect(&["read", &s(repo), var, "-o", &s(&npy), "--branch", branch], 0);
    let ours = crate::common::parse_npy(&std::fs::read(&npy).unwrap());
    assert_same(&format!("{var} from the appended repository"), &ours.data, &oracle(in_order, var));
}

#[test]
fn one_file_then_several_files_each_one_commit_equal_to_a_fresh_scan() {
    let dir = tempfile::tempdir().unwrap();
    let files = write_series(dir.path(), &monthly(2001..=2001, Some(10), true)[..6]);
    let (repo, fresh) = (dir.path().join("appended.icechunk"), dir.path().join("fresh.icechunk"));
    scan_icechunk(&files[..3], &repo, &[], 0);
    let one = append(&repo, &files[3..4], &[]);
    assert_eq!(one.code, 0, "{}", one.stderr);
    assert!(one.stdout.contains("new snapshot"), "{}", one.stdout);
    let mut shuffled = files[4..].to_vec();
    shuffled.reverse();
    let several = append(&repo, &shuffled, &["--message", "two more months"]);
    assert_eq!(several.code, 0, "{}", several.stderr);
    let messages = history(&repo, "main");
    assert_eq!(messages.len(), 4, "{messages:?}");
    assert_eq!(messages[0], "two more months");
    assert_eq!(messages[1], format!("vzarr append: {}", files[3].file_name().unwrap().to_string_lossy()));
    scan_icechunk(&files, &fresh, &[], 0);
    assert_same_contents(&repo, &fresh);
    for var in ["tas", "time", "time_bnds"] {
        assert_values(&repo, "main", var, &files);
    }
    assert_values(&repo, "main", "lat", &files[..1]);
    let verified = cli_expect(&["verify", &s(&repo)], 0);
    assert!(verified.stdout.contains(": 0 failed"), "{}", verified.stdout);
    if let Some(python) = icechunk_python() {
        python_check(&python, &repo, &files, &["--snapshots", "3"]);
    }
}

#[test]
fn new_years_for_every_member_of_a_member_by_time_repository() {
    let dir = tempfile::tempdir().unwrap();
    let all: Vec<CmipFile> = cmip_archive().into_iter().filter(|f| f.year >= 2004).collect();
    let (old, new): (Vec<CmipFile>, Vec<CmipFile>) = all.iter().cloned().partition(|f| f.year < 2006);
    let paths = |files: &[CmipFile]| -> Vec<PathBuf> {
        with_hdf5_files(|| files.iter().map(|f| write_cmip_file(dir.path(), f)).collect())
    };
    let (old_paths, new_paths) = (paths(&old), paths(&new));
    let concat = ["--concat", "member=attr:variant_label", "--concat", "time"];
    let (repo, fresh) = (dir.path().join("appended.icechunk"), dir.path().join("fresh.icechunk"));
    let scan = |sources: &[PathBuf], out: &Path| {
        let mut args: Vec<String> = vec!["scan".into()];
        args.extend(sources.iter().map(s));
        args.extend(concat.iter().map(|a| a.to_string()));
        args.extend(["--format".into(), "icechunk".into(), "-o".into(), s(out)]);
        cli_expect(&args, 0);
    };
    scan(&old_paths, &repo);
    let run = append(&repo, &new_paths, &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(history(&repo, "main").len(), 3);
    let every: Vec<PathBuf> = old_paths.iter().chain(&new_paths).cloned().collect();
    scan(&every, &fresh);
    assert_same_contents(&repo, &fresh);
    for var in ["tas", "pr"] {
        let mut in_order = Vec::new();
        for member in ["r1i1p1f1", "r2i1p1f1", "r10i1p1f1"] {
            for year in 2004..=2006 {
                let f = all.iter().find(|f| f.var == var && f.member == member && f.year == year).unwrap();
                in_order.push(dir.path().join(f.name()));
            }
        }
        assert_values(&repo, "main", var, &in_order);
    }
}

/// Each refusal is one line and leaves the branch's tip (and so its history) as it was.
#[test]
fn refused_appends_leave_the_history_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let files = write_series(dir.path(), &yearly(2001..=2003, 61));
    let repo = dir.path().join("repo.icechunk");
    scan_icechunk(&files, &repo, &[], 0);
    let before = (tip(&repo, "main"), history(&repo, "main"));
    let bad = dir.path().join("bad");
    std::fs::create_dir(&bad).unwrap();
    let next = || yearly(2004..=2004, 61).remove(0);
    let write = |f: SeriesFile| with_hdf5_files(|| write_series_file(&bad, &f));
    let mut overlap = next();
    overlap.first_day -= 10;
    overlap.name = "overlap.nc".into();
    let mut units = next();
    units.name = "units.nc".into();
    units.tas_text = vec![("units", "degC")];
    let mut gap = yearly(2005..=2005, 61).remove(0);
    gap.name = "gap.nc".into();
    let cases: Vec<(Vec<PathBuf>, Vec<&str>, Vec<&str>)> = vec![
        (vec![write(overlap)], vec![], vec!["overlap.nc", "overlap"]),
        (vec![write(units)], vec![], vec!["units.nc", "tas", "units"]),
        (vec![write(gap)], vec![], vec!["gap.nc", "--allow-gaps"]),
        (vec![files[2].clone()], vec![], vec!["already in the store"]),
        (vec![write(next())], vec!["--branch", "nope"], vec!["no branch \"nope\" (branches: main)"]),
    ];
    for (inputs, extra, hints) in cases {
        let run = append(&repo, &inputs, &extra);
        assert_eq!(run.code, 1, "expected a refusal: {}", run.stderr);
        let lines: Vec<&str> = run.stderr.lines().filter(|l| !l.trim().is_empty()).collect();
        assert_eq!(lines.len(), 1, "one line: {}", run.stderr);
        for hint in hints {
            assert!(lines[0].contains(hint), "{hint:?} not in {:?}", lines[0]);
        }
        assert_eq!((tip(&repo, "main"), history(&repo, "main")), before, "the history changed");
    }
    // A stored last file modified since the commit is refused too.
    let later = std::time::SystemTime::now() + std::time::Duration::from_secs(3600);
    std::fs::File::options().write(true).open(&files[2]).unwrap().set_modified(later).unwrap();
    let run = append(&repo, &[write(next())], &[]);
    assert!(run.code == 1 && run.stderr.contains("modified after the repository was written"), "{}", run.stderr);
    assert_eq!((tip(&repo, "main"), history(&repo, "main")), before, "the history changed");
}

/// Only the last stored file is read again: the others may be elsewhere.
#[test]
fn append_works_with_the_older_files_moved_away() {
    let dir = tempfile::tempdir().unwrap();
    let files = write_series(dir.path(), &yearly(2001..=2004, 61));
    let (repo, fresh) = (dir.path().join("appended.icechunk"), dir.path().join("fresh.icechunk"));
    scan_icechunk(&files, &fresh, &[], 0);
    scan_icechunk(&files[..3], &repo, &[], 0);
    let aside = dir.path().join("aside");
    std::fs::create_dir(&aside).unwrap();
    for f in &files[..2] {
        std::fs::rename(f, aside.join(f.file_name().unwrap())).unwrap();
    }
    let run = append(&repo, &files[3..], &[]);
    assert_eq!(run.code, 0, "append failed: {}", run.stderr);
    for f in &files[..2] {
        std::fs::rename(aside.join(f.file_name().unwrap()), f).unwrap();
    }
    assert_same_contents(&repo, &fresh);
    assert_values(&repo, "main", "tas", &files);
}

/// `--branch` for `append`, `read`, `info` and `verify`: a repository written to branch `dev` has
/// its data there (main keeps the empty initial snapshot); a missing branch is one line.
#[test]
fn branches_for_append_read_info_and_verify() {
    let dir = tempfile::tempdir().unwrap();
    let files = write_series(dir.path(), &yearly(2001..=2003, 61));
    let repo = dir.path().join("repo.icechunk");
    scan_icechunk(&files[..2], &repo, &["--branch", "dev"], 0);
    let run = append(&repo, &files[2..], &["--branch", "dev"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(history(&repo, "dev").len(), 3);
    assert_eq!(history(&repo, "main").len(), 1, "main is untouched");
    for var in ["tas", "time"] {
        assert_values(&repo, "dev", var, &files);
    }
    let verified = cli_expect(&["verify", &s(&repo), "--branch", "dev"], 0);
    assert!(verified.stdout.contains("ok   tas:") && verified.stdout.contains(": 0 failed"), "{}", verified.stdout);
    let native = dir.path().join("native.vzarr");
    cli_expect(&["scan", &s(&files[0]), &s(&files[1]), &s(&files[2]), "--concat", "time", "-o", &s(&native)], 0);
    let native_info = cli_expect(&["info", &s(&native), "--json"], 0).stdout.replace(&s(&native), "STORE");
    let info = cli_expect(&["info", &s(&repo), "--branch", "dev", "--json"], 0).stdout.replace(&s(&repo), "STORE");
    assert_eq!(
        super::without_source_files(&info),
        super::without_source_files(&native_info),
        "info of branch dev is the native store's of the same files"
    );
    let on_main = cli(&["read", &s(&repo), "tas", "-o", &s(dir.path().join("main.npy"))]);
    assert_eq!(on_main.code, 1, "main has no tas: {}", on_main.stderr);
    for command in ["info", "verify"] {
        let run = cli(&[command, &s(&repo), "--branch", "nope"]);
        assert_eq!(run.code, 1, "{}", run.stderr);
        assert!(run.stderr.contains("no branch \"nope\" (branches: dev, main)"), "{}", run.stderr);
        assert_eq!(run.stderr.trim().lines().count(), 1, "{}", run.stderr);
    }
    let run = cli(&["info", &s(&native), "--branch", "dev"]);
    assert!(run.code == 1 && run.stderr.contains("a branch applies to Icechunk repositories only"), "{}", run.stderr);
}

/// An append killed after its snapshot is written but before the branch moves leaves the previous
/// snapshot the tip, readable; the next append succeeds with one commit.
#[test]
fn an_append_killed_before_the_branch_moves_leaves_the_previous_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let files = write_series(dir.path(), &yearly(2001..=2003, 61));
    let repo = dir.path().join("repo.icechunk");
    scan_icechunk(&files[..2], &repo, &[], 0);
    let before = (tip(&repo, "main"), history(&repo, "main"));
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_vzarr"));
    command.arg("append").arg(&repo).arg(&files[2]).env("VZARR_TEST_CRASH_AT", "icechunk-snapshot-written");
    let run = crate::common::run(command);
    assert_ne!(run.code, 0, "the append was to be killed: {}", run.stderr);
    assert_eq!((tip(&repo, "main"), history(&repo, "main")), before, "the branch moved");
    assert_values(&repo, "main", "tas", &files[..2]);
    let run = append(&repo, &files[2..], &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(history(&repo, "main").len(), 3);
    assert_values(&repo, "main", "tas", &files);
}

/// Sources and repository on S3 (moto): `append s3://...` commits the new month; `read` of the
/// repository equals libnetcdf's reads of the three files.
#[test]
fn append_to_a_repository_on_s3() {
    let Some(server) = crate::common::servers::S3Server::start() else {
        assert!(!crate::interop::python_required(), "VZARR_REQUIRE_PYTHON=1 but moto_server is not installed");
        eprintln!("notice: moto_server is not installed (run tests/python/setup.sh); S3 Icechunk append not run");
        return;
    };
    let months = ["tas_2023-01.nc", "tas_2023-02.nc", "tas_2023-03.nc"];
    let local = server.upload_samples("archive", &months);
    server.upload("repos", &[]);
    let run = |args: &[&str]| server.vzarr(args);
    let repo = "s3://repos/tas.icechunk";
    let scan = run(&["scan", "s3://archive/tas_2023-0[12].nc", "--concat", "time", "--format", "icechunk", "-o", repo]);
    assert_eq!(scan.code, 0, "{}", scan.stderr);
    let appended = run(&["append", repo, "s3://archive/tas_2023-03.nc", "--message", "March"]);
    assert_eq!(appended.code, 0, "{}", appended.stderr);
    assert!(appended.stdout.contains("new snapshot"), "{}", appended.stdout);
    let again = run(&["append", repo, "s3://archive/tas_2023-03.nc"]);
    assert!(again.code == 1 && again.stderr.contains("already in the store"), "{}", again.stderr);
    let dir = tempfile::tempdir().unwrap();
    let npy = dir.path().join("tas.npy");
    let read = run(&["read", repo, "tas", "-o", &s(&npy), "--branch", "main"]);
    assert_eq!(read.code, 0, "{}", read.stderr);
    let ours = crate::common::parse_npy(&std::fs::read(&npy).unwrap());
    assert_same("tas from the appended S3 repository", &ours.data, &oracle(&local, "tas"));
}

/// Issue 28, item 1: two appends racing on one local repository (one of two years, one of the first
/// of them), over many trials. Never two successes with one commit: every append that exits 0 has its
/// commit in the history, and a loser fails with one line; the branch reads as libnetcdf reads the
/// files its history committed.
#[test]
fn concurrent_appends_never_lose_a_commit() {
    let dir = tempfile::tempdir().unwrap();
    let files = write_series(dir.path(), &yearly(2001..=2003, 61));
    let mut refused = 0;
    for trial in 0..16 {
        let repo = dir.path().join(format!("repo{trial}.icechunk"));
        scan_icechunk(&files[..1], &repo, &["--concat", "time"], 0);
        let before = history(&repo, "main").len();
        let (two, one) = std::thread::scope(|scope| {
            let two = scope.spawn(|| append(&repo, &files[1..3], &[]));
            let one = scope.spawn(|| append(&repo, &files[1..2], &[]));
            (two.join().unwrap(), one.join().unwrap())
        });
        for run in [&two, &one].into_iter().filter(|r| r.code != 0) {
            refused += 1;
            let lines = run.stderr_lines();
            assert_eq!(lines.len(), 1, "trial {trial}: a refusal is one line:\n{}", run.stderr);
            assert!(!lines[0].contains("context") && !lines[0].contains("panicked"), "trial {trial}: {}", lines[0]);
        }
        let succeeded = [&two, &one].iter().filter(|r| r.code == 0).count();
        assert!(succeeded >= 1, "trial {trial}: neither append succeeded:\n{}\n{}", two.stderr, one.stderr);
        assert_eq!(history(&repo, "main").len(), before + succeeded, "trial {trial}: a commit was lost");
        let committed = if two.code == 0 { 3 } else { 2 };
        assert_values(&repo, "main", "tas", &files[..committed]);
    }
    // The two appends overlap (the same first year), so in every trial one of them is refused.
    assert_eq!(refused, 16);
}

/// Issue 28, item 1, over S3 (moto): two overlapping appends racing on one repository, over several
/// trials. The branch moves by Icechunk's conditional write: exactly one succeeds, the other fails
/// in one line, and the branch reads as libnetcdf reads the winner's files.
#[test]
fn concurrent_appends_to_an_s3_repository_never_both_succeed() {
    let Some(server) = crate::common::servers::S3Server::start() else {
        assert!(!crate::interop::python_required(), "VZARR_REQUIRE_PYTHON=1 but moto_server is not installed");
        eprintln!("notice: moto_server is not installed (run tests/python/setup.sh); S3 append race not run");
        return;
    };
    let months = ["tas_2023-01.nc", "tas_2023-02.nc", "tas_2023-03.nc"];
    let local = server.upload_samples("race", &months);
    server.upload("racerepos", &[]);
    let dir = tempfile::tempdir().unwrap();
    let npy = dir.path().join("tas.npy");
    for trial in 0..6 {
        let repo = format!("s3://racerepos/t{trial}.icechunk");
        let scan = server.vzarr(&[
            "scan",
            "s3://race/tas_2023-01.nc",
            "--concat",
            "time",
            "--format",
            "icechunk",
            "-o",
            &repo,
        ]);
        assert_eq!(scan.code, 0, "{}", scan.stderr);
        let (two, one) = std::thread::scope(|scope| {
            let two = scope
                .spawn(|| server.vzarr(&["append", &repo, "s3://race/tas_2023-02.nc", "s3://race/tas_2023-03.nc"]));
            let one = scope.spawn(|| server.vzarr(&["append", &repo, "s3://race/tas_2023-02.nc"]));
            (two.join().unwrap(), one.join().unwrap())
        });
        let succeeded = [&two, &one].iter().filter(|r| r.code == 0).count();
        assert_eq!(succeeded, 1, "trial {trial}: exactly one append succeeds:\n{}\n{}", two.stderr, one.stderr);
        let loser = if two.code == 0 { &one } else { &two };
        assert_eq!(loser.stderr_lines().len(), 1, "trial {trial}: {}", loser.stderr);
        assert!(!loser.stderr.contains("context"), "trial {trial}: {}", loser.stderr);
        let read = server.vzarr(&["read", &repo, "tas", "-o", &s(&npy), "--overwrite"]);
        assert_eq!(read.code, 0, "{}", read.stderr);
        let ours = crate::common::parse_npy(&std::fs::read(&npy).unwrap());
        let committed = if two.code == 0 { 3 } else { 2 };
        assert_same(&format!("trial {trial}: tas"), &ours.data, &oracle(&local[..committed], "tas"));
    }
}

/// A non-finite attribute (the bare token `NaN` in the node's `zarr.json`) is read back from the
/// repository by the append and kept: the appended repository equals a fresh scan's.
#[test]
fn a_nan_attribute_survives_an_append() {
    let dir = tempfile::tempdir().unwrap();
    let mut series = monthly(2001..=2001, Some(10), false)[..4].to_vec();
    for f in &mut series {
        f.tas_numbers = vec![("valid_nan", f64::NAN)];
    }
    let files = write_series(dir.path(), &series);
    let (repo, fresh) = (dir.path().join("appended.icechunk"), dir.path().join("fresh.icechunk"));
    scan_icechunk(&files[..2], &repo, &[], 0);
    let run = append(&repo, &files[2..], &[]);
    assert_eq!(run.code, 0, "append failed: {}", run.stderr);
    scan_icechunk(&files, &fresh, &[], 0);
    assert_same_contents(&repo, &fresh);
    assert!(contents(&repo, "main").contains("NaN"), "the attribute is kept");
    assert_values(&repo, "main", "tas", &files);
}
