//! The `vzarr` command: see [`vzarr::cli`] for its subcommands and exit codes.

use std::process::ExitCode;

fn main() -> ExitCode {
    // vzarr only reads source files: libhdf5's advisory file locks add nothing but failures (on NFS and
    // Lustre, or when a lock was inherited by another process). Set before any thread or HDF5 call.
    if std::env::var_os("HDF5_USE_FILE_LOCKING").is_none() {
        std::env::set_var("HDF5_USE_FILE_LOCKING", "FALSE");
    }
    ExitCode::from(vzarr::cli::run_command_line(std::env::args_os()))
}
