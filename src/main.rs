//! The `vzarr` command: parse arguments, run one subcommand, map the outcome to an exit code.
//!
//! Exit codes: 0 success; 1 failure (bad input, I/O error, or `verify` found differences);
//! 2 usage error; 3 finished, but variables were left out (`--skip-unsupported`).

mod cli;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    // vzarr only reads source files: libhdf5's advisory file locks add nothing but failures (on NFS and
    // Lustre, or when a lock was inherited by another process). Set before any thread or HDF5 call.
    if std::env::var_os("HDF5_USE_FILE_LOCKING").is_none() {
        std::env::set_var("HDF5_USE_FILE_LOCKING", "FALSE");
    }
    let args = cli::args::Cli::parse();
    let result = cli::run(args);
    if std::env::var_os("VZARR_TEST_COUNTERS").is_some_and(|v| v == "1") {
        // For tests that check work grows linearly: syncs per store, source opens per verify.
        eprintln!("counters: syncs={} oracle_opens={}", vzarr::store::sync_count(), vzarr::verify::oracle_opens());
    }
    match result {
        Ok(outcome) => ExitCode::from(outcome as u8),
        Err(err) if cli::is_broken_pipe(&err) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {}", cli::describe(&err));
            ExitCode::from(1)
        }
    }
}
