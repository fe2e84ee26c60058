//! The `vzarr` command: parse arguments, run one subcommand, map the outcome to an exit code.
//!
//! Exit codes: 0 success; 1 failure (bad input, I/O error, or `verify` found differences);
//! 2 usage error; 3 finished, but variables were left out (`--skip-unsupported`).

mod cli;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let args = cli::args::Cli::parse();
    match cli::run(args) {
        Ok(outcome) => ExitCode::from(outcome as u8),
        Err(err) => {
            eprintln!("error: {}", cli::describe(&err));
            ExitCode::from(1)
        }
    }
}
