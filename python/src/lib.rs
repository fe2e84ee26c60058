//! The `vzarr._vzarr` extension module: vzarr's Rust library for Python. The Python package
//! (`python/vzarr/`) builds its API on it: `vzarr.scan`, `vzarr.open`, `vzarr.Store`,
//! `vzarr.Array`, the xarray backend and the zarr-python store.

// ReadError and PipelineError are the library's own types, returned once per call: boxing them at the
// binding boundary would buy nothing.
#![allow(clippy::result_large_err)]

mod compact;
mod errors;
mod export;
mod parse;
mod remote;
mod scan;
mod store;

use pyo3::prelude::*;

/// Runs the `vzarr` command line with `argv` (program name first) and returns its exit code: the
/// `vzarr` command the wheel installs.
#[pyfunction]
fn run_cli(py: Python<'_>, argv: Vec<String>) -> u8 {
    py.detach(|| vzarr::cli::run_command_line(argv))
}

#[pymodule]
fn _vzarr(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_function(wrap_pyfunction!(scan::scan, m)?)?;
    m.add_function(wrap_pyfunction!(scan::merge, m)?)?;
    m.add_function(wrap_pyfunction!(scan::scan_shard, m)?)?;
    m.add_function(wrap_pyfunction!(scan::expand_inputs, m)?)?;
    m.add_function(wrap_pyfunction!(scan::append, m)?)?;
    m.add_function(wrap_pyfunction!(scan::write_sidecars, m)?)?;
    m.add_function(wrap_pyfunction!(compact::compact, m)?)?;
    m.add_function(wrap_pyfunction!(compact::materialize, m)?)?;
    m.add_function(wrap_pyfunction!(export::export, m)?)?;
    m.add_function(wrap_pyfunction!(run_cli, m)?)?;
    m.add_function(wrap_pyfunction!(parse::parse_file, m)?)?;
    m.add_function(wrap_pyfunction!(parse::parse_archive, m)?)?;
    m.add_class::<store::Store>()?;
    m.add_class::<store::Array>()?;
    m.add("Error", py.get_type::<errors::Error>())?;
    m.add("NotFound", py.get_type::<errors::NotFound>())?;
    m.add("NotAuthorized", py.get_type::<errors::NotAuthorized>())?;
    m.add("SourceChanged", py.get_type::<errors::SourceChanged>())?;
    m.add("SelectionError", py.get_type::<errors::SelectionError>())?;
    m.add("ScanError", py.get_type::<errors::ScanError>())?;
    m.add("AlreadyExists", py.get_type::<errors::AlreadyExists>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
