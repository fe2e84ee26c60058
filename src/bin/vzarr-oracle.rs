//! `vzarr-oracle`: the oracle of `vzarr verify`, which starts it as a child process. It reads the
//! source files with libnetcdf, libhdf5 and libhdf4 and answers requests on stdin/stdout until stdin
//! closes ([`vzarr::verify::serve_oracle`]); `vzarr` itself links none of those libraries.

use std::io::{BufWriter, Write};
use std::process::ExitCode;

fn main() -> ExitCode {
    // The oracle only reads source files: libhdf5's advisory file locks add nothing but failures (on
    // NFS and Lustre). Set before any thread or HDF5 call.
    if std::env::var_os("HDF5_USE_FILE_LOCKING").is_none() {
        std::env::set_var("HDF5_USE_FILE_LOCKING", "FALSE");
    }
    let served = vzarr::verify::serve_oracle(std::io::stdin().lock(), BufWriter::new(std::io::stdout().lock()));
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "vzarr-oracle: {e}");
            ExitCode::FAILURE
        }
    }
}
