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
