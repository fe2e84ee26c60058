//! The write path (issue 14, items 11-15): `--overwrite` replaces only an output of the same kind and
//! never an input; kill -9 at injected points of publishing leaves either the old or the new output at
//! the destination and staging that the next writer removes; of concurrent writers exactly one wins.
//! Each runs with `renameat2` and with the fallbacks (`VZARR_TEST_NO_RENAMEAT2=1`).

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::Stdio;

use crate::common::classic::{write_mixed, write_single_short};
use crate::common::*;

fn os(s: impl AsRef<OsStr>) -> OsString {
    s.as_ref().to_os_string()
}

/// `vzarr args` with extra environment variables.
fn vzarr_env(args: &[OsString], env: &[(&str, &str)]) -> Run {
    let mut command = crate::common::vzarr_command();
    command.args(args).env_remove("RUST_BACKTRACE").stdout(Stdio::piped());
    for (k, v) in env {
        command.env(k, v);
    }
    run(command)
}

fn scan_args(source: &Path, store: &Path, overwrite: bool) -> Vec<OsString> {
    let mut args = vec![os("scan"), os(source), os("-o"), os(store)];
    if overwrite {
        args.push(os("--overwrite"));
    }
    args
}

/// Hidden entries (staging, old outputs) in `dir`.
fn hidden(dir: &Path) -> Vec<String> {
    dir_entries(dir).into_iter().filter(|n| n.starts_with('.') && !is_lock(n)).collect()
}

/// An output's lock file (`.NAME.lock-`): a killed writer leaves it (empty, unlocked), and the next
/// writer of the output takes it over and removes it.
fn is_lock(name: &str) -> bool {
    name.ends_with(".lock-")
}

/// The arrays listed by `info --json`, sorted.
fn arrays(store: &Path) -> Vec<String> {
    let run = cli_expect(&[os("info"), os(store), os("--json")], 0);
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let mut names: Vec<String> =
        doc["arrays"].as_array().unwrap().iter().map(|a| a["path"].as_str().unwrap().to_string()).collect();
    names.sort();
    names
}

/// Two NetCDF-3 files with different variables, in one directory.
fn two_sources() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let mixed = write_mixed(dir.path(), "mixed.nc", netcdf::Options::CLASSIC, 3);
    let short = write_single_short(dir.path(), 5);
    (dir, mixed, short)
}

const MODES: [&[(&str, &str)]; 2] = [&[], &[("VZARR_TEST_NO_RENAMEAT2", "1")]];

#[test]
fn overwrite_refuses_an_ordinary_directory_or_file() {
    let (dir, mixed, _) = two_sources();
    let user = dir.path().join("results");
    std::fs::create_dir(&user).unwrap();
    std::fs::write(user.join("thesis.tex"), b"precious").unwrap();
    let run = cli(&scan_args(&mixed, &user, true));
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.contains("is not a vzarr store"), "{}", run.stderr);
    assert_eq!(std::fs::read(user.join("thesis.tex")).unwrap(), b"precious");

    let notes = dir.path().join("notes.json");
    std::fs::write(&notes, b"{\"mine\": true}").unwrap();
    let mut args = scan_args(&mixed, &notes, true);
    args.extend([os("--format"), os("kerchunk-json")]);
    let run = cli(&args);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.contains("is not a kerchunk reference file"), "{}", run.stderr);
    assert_eq!(std::fs::read(&notes).unwrap(), b"{\"mine\": true}");
    assert!(hidden(dir.path()).is_empty(), "{:?}", hidden(dir.path()));
}

/// An input named through a symbolic link to a file inside the output is the output's own too (each
/// input's directory is resolved once, links on their own).
#[test]
fn an_input_linked_into_the_output_is_refused() {
    let (dir, mixed, _) = two_sources();
    let store = dir.path().join("s.vzarr");
    cli_expect(&scan_args(&mixed, &store, false), 0);
    let inside = store.join("copy.nc");
    std::fs::copy(&mixed, &inside).unwrap();
    let link = dir.path().join("link.nc");
    std::os::unix::fs::symlink(&inside, &link).unwrap();
    let run = cli(&scan_args(&link, &store, true));
    assert!(run.code == 1 && run.stderr.contains("is or contains the input"), "{}", run.stderr);
    assert!(inside.is_file());
}

#[test]
fn an_output_that_is_or_contains_an_input_is_refused() {
    let (dir, mixed, _) = two_sources();
    let before = std::fs::read(&mixed).unwrap();
    let run = cli(&scan_args(&mixed, &mixed, true));
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.contains("is or contains the input"), "{}", run.stderr);
    assert_eq!(std::fs::read(&mixed).unwrap(), before, "the input is intact");
    // A store holding an input file, and a store materialized onto itself.
    let store = dir.path().join("s.vzarr");
    cli_expect(&scan_args(&mixed, &store, false), 0);
    let inside = store.join("copy.nc");
    std::fs::copy(&mixed, &inside).unwrap();
    let run = cli(&scan_args(&inside, &store, true));
    assert!(run.code == 1 && run.stderr.contains("is or contains the input"), "{}", run.stderr);
    assert!(inside.is_file());
    let run = cli(&[os("materialize"), os(&store), os(&store), os("--overwrite")]);
    assert!(run.code == 1 && run.stderr.contains("is or contains the input"), "{}", run.stderr);
    cli_expect(&[os("verify"), os(&store)], 0);
}

#[test]
fn kill_9_while_staging_leaves_nothing_that_the_next_run_does_not_clean() {
    for env in MODES {
        let (dir, mixed, short) = two_sources();
        let store = dir.path().join("s.vzarr");
        for point in ["begun", "staged"] {
            let run = vzarr_env(&scan_args(&mixed, &store, false), &[env, &[("VZARR_TEST_CRASH_AT", point)]].concat());
            assert_eq!(run.code, -1, "{point}: killed\n{}", run.stderr);
            assert!(!store.exists(), "{point}: nothing published");
            assert_eq!(hidden(dir.path()).len(), 1, "{point}: the staging of the dead process");
        }
        cli_expect(&scan_args(&mixed, &store, false), 0);
        assert!(hidden(dir.path()).is_empty(), "stale staging removed: {:?}", hidden(dir.path()));
        assert!(!dir_entries(dir.path()).iter().any(|n| is_lock(n)), "the dead writer's lock file removed");
        // Killed before publishing a replacement: the old store stays, intact.
        let old = arrays(&store);
        let run = vzarr_env(&scan_args(&short, &store, true), &[env, &[("VZARR_TEST_CRASH_AT", "staged")]].concat());
        assert_eq!(run.code, -1, "{}", run.stderr);
        assert_eq!(arrays(&store), old);
        cli_expect(&[os("verify"), os(&store)], 0);
    }
}

#[test]
fn kill_9_during_a_replacement_leaves_the_old_or_the_new_store() {
    let (dir, mixed, short) = two_sources();
    let store = dir.path().join("s.vzarr");
    cli_expect(&scan_args(&mixed, &store, false), 0);
    let old = arrays(&store);
    // renameat2(RENAME_EXCHANGE): killed after the exchange, the new store is in place.
    let run = vzarr_env(&scan_args(&short, &store, true), &[("VZARR_TEST_CRASH_AT", "exchanged")]);
    assert_eq!(run.code, -1, "{}", run.stderr);
    let new = arrays(&store);
    let reference = dir.path().join("reference").join("short.vzarr");
    std::fs::create_dir(reference.parent().unwrap()).unwrap();
    cli_expect(&scan_args(&short, &reference, false), 0);
    assert!(new == arrays(&reference) && new != old, "the new store is in place: {new:?}");
    cli_expect(&[os("verify"), os(&store)], 0);
    assert_eq!(hidden(dir.path()).len(), 1, "the old store, at the staging name");
    // Fallback (two renames): killed in between, the old store is aside; the next run puts it back.
    let fallback = [("VZARR_TEST_NO_RENAMEAT2", "1")];
    let run = vzarr_env(
        &scan_args(&mixed, &store, true),
        &[&fallback[..], &[("VZARR_TEST_CRASH_AT", "moved-aside")]].concat(),
    );
    assert_eq!(run.code, -1, "{}", run.stderr);
    assert!(!store.exists(), "the fallback is not atomic: nothing at the destination in between");
    let run = vzarr_env(&[os("scan"), os(&short), os("-o"), os(&store)], &fallback);
    assert_eq!(run.code, 1, "the old store was put back, so this finds it: {}", run.stderr);
    assert!(run.stderr.contains("already exists"), "{}", run.stderr);
    assert_eq!(arrays(&store), new, "the store moved aside is back, intact");
    assert!(hidden(dir.path()).is_empty(), "{:?}", hidden(dir.path()));
    cli_expect(&scan_args(&mixed, &store, true), 0);
    assert_eq!(arrays(&store), old);
    cli_expect(&[os("verify"), os(&store)], 0);
}

/// Starts 8 scans of `source` to `store` at once; returns their runs.
fn eight_writers(source: &Path, store: &Path, overwrite: bool, env: &[(&str, &str)]) -> Vec<Run> {
    let children: Vec<_> = {
        let _exclusive = no_hdf5_files_open();
        (0..8)
            .map(|_| {
                let mut command = crate::common::vzarr_command();
                command.args(scan_args(source, store, overwrite)).envs(env.iter().copied());
                command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
                command.spawn().expect("starting vzarr")
            })
            .collect()
    };
    children
        .into_iter()
        .map(|child| {
            let out = child.wait_with_output().unwrap();
            Run {
                code: out.status.code().unwrap_or(-1),
                stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
                stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            }
        })
        .collect()
}

#[test]
fn of_eight_concurrent_writers_exactly_one_wins() {
    for env in MODES {
        let (dir, mixed, _) = two_sources();
        let store = dir.path().join("s.vzarr");
        let runs = eight_writers(&mixed, &store, false, env);
        let won = runs.iter().filter(|r| r.code == 0).count();
        assert_eq!(won, 1, "{env:?}: {runs:#?}");
        for lost in runs.iter().filter(|r| r.code != 0) {
            assert!(lost.code == 1 && lost.stderr.contains("already exists"), "{env:?}: {}", lost.stderr);
        }
        assert!(hidden(dir.path()).is_empty(), "{env:?}: {:?}", hidden(dir.path()));
        cli_expect(&[os("verify"), os(&store)], 0);
        // With --overwrite every writer replaces the store in turn, and a complete store remains.
        let runs = eight_writers(&mixed, &store, true, env);
        assert!(runs.iter().all(|r| r.code == 0), "{env:?}: {runs:#?}");
        assert!(hidden(dir.path()).is_empty(), "{env:?}: {:?}", hidden(dir.path()));
        cli_expect(&[os("verify"), os(&store)], 0);
    }
}
