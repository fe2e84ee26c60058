//! Test hygiene (issue 14, item 20): tests that read files through libnetcdf on their own threads
//! print none of libhdf5's error stacks (`HDF5-DIAG`) and the process ends without libhdf5's
//! "infinite loop closing library" (identifiers still open at exit).

use crate::common::run;

/// Runs `tests` of this test binary in a child process; returns its stderr.
fn stderr_of(tests: &[&str]) -> String {
    let mut command = std::process::Command::new(std::env::current_exe().unwrap());
    command.args(tests).args(["--exact", "--test-threads=2"]).stdout(std::process::Stdio::piped());
    let child = run(command);
    assert!(child.code == 0, "child run failed:\n{}\n{}", child.stdout, child.stderr);
    assert!(child.stdout.contains(&format!("{} passed", tests.len())), "{}", child.stdout);
    child.stderr
}

#[test]
fn oracle_reads_on_test_threads_print_no_hdf5_diagnostics() {
    // NetCDF-4 files read by libnetcdf on test threads (libnetcdf probes absent attributes), and
    // stores verified by the binary.
    let stderr =
        stderr_of(&["concat::different_calendars", "cli::read_writes_npy_files_with_the_right_shape_dtype_and_values"]);
    assert!(!stderr.contains("HDF5-DIAG"), "HDF5 error stacks printed:\n{stderr}");
    assert!(!stderr.contains("infinite loop"), "libhdf5 could not close at exit:\n{stderr}");
}

/// Test hooks (`VZARR_TEST_*` environment variables) are read in `src/test_hooks.rs` only, and there
/// only in debug builds; the command line's counters are printed under `cfg(debug_assertions)`. So a
/// release build contains none.
#[test]
fn test_hooks_are_read_only_where_release_builds_compile_them_out() {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut pending = vec![src.clone()];
    let mut readers = Vec::new();
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            for (n, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or_default();
                if code.contains("\"VZARR_TEST_") {
                    readers.push((path.strip_prefix(&src).unwrap().display().to_string(), n, text.clone()));
                }
            }
        }
    }
    assert!(!readers.is_empty(), "the hooks exist");
    for (file, line, text) in readers {
        let lines: Vec<&str> = text.lines().collect();
        match file.as_str() {
            "test_hooks.rs" => {
                // Each reading function is compiled out or short-circuited in release builds.
                let before = lines[..=line].iter().rev().take(4).any(|l| l.contains("debug_assertions"));
                assert!(before, "src/test_hooks.rs:{}: hook read without a debug_assertions guard", line + 1);
            }
            "cli.rs" => {
                let guarded = lines[..line].iter().rev().take(3).any(|l| l.contains("#[cfg(debug_assertions)]"));
                assert!(guarded, "src/cli.rs:{}: counters printed without #[cfg(debug_assertions)]", line + 1);
            }
            other => panic!("src/{other}:{}: reads a VZARR_TEST_ hook outside src/test_hooks.rs", line + 1),
        }
    }
}
