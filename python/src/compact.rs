//! `vzarr.compact`: runs of small chunks along a dimension folded into target-size chunks, in place
//! (the library's `compact::compact_store`, the GIL released).

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use vzarr::compact::{compact_store, CompactError, CompactOptions};
use vzarr::read::OpenOptions;
use vzarr::trust::Authorization;

use crate::errors::{guard, read_error, Error};

/// Compacts the native store or Icechunk repository `store` along `dim` to chunks of `target`;
/// returns the report (per array: edges before and after, chunks written).
#[pyfunction]
#[pyo3(signature = (store, dim, target, tail=false, dry_run=false, storage_options=None, branch=None, message=None))]
#[allow(clippy::too_many_arguments)] // the Python keyword arguments, one each
pub(crate) fn compact<'py>(
    py: Python<'py>,
    store: String,
    dim: String,
    target: u64,
    tail: bool,
    dry_run: bool,
    storage_options: Option<&Bound<'py, PyDict>>,
    branch: Option<String>,
    message: Option<String>,
) -> PyResult<Bound<'py, PyDict>> {
    let authorization = Authorization::from_user_config().map_err(|e| Error::new_err(format!("{store}: {e}")))?;
    let mut open = OpenOptions::new(authorization).with_remote(crate::remote::remote_options(storage_options)?);
    open.branch = branch;
    let mut options = CompactOptions::new(dim, target, open);
    options.tail = tail;
    options.dry_run = dry_run;
    options.message = message;
    let report = guard("compact", || {
        py.detach(|| {
            let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build();
            let runtime = runtime.map_err(|e| Error::new_err(format!("{store}: starting I/O runtime: {e}")))?;
            compact_store(&store, &options, runtime.handle()).map_err(compact_error)
        })
    })?;
    let out = PyDict::new(py);
    out.set_item("store", &store)?;
    out.set_item("written", report.written)?;
    let arrays = PyList::empty(py);
    for array in &report.arrays {
        let item = PyDict::new(py);
        item.set_item("path", &array.path)?;
        item.set_item("before", &array.before)?;
        item.set_item("after", &array.after)?;
        item.set_item("chunks_written", array.chunks_written)?;
        arrays.append(item)?;
    }
    out.set_item("arrays", arrays)?;
    if let Some((snapshot, branch)) = &report.snapshot {
        out.set_item("snapshot", snapshot)?;
        out.set_item("branch", branch)?;
    }
    Ok(out)
}

/// Usage errors are `ValueError`; read errors keep their classes (a changed source is
/// `vzarr.SourceChanged`); the rest is `vzarr.Error`.
fn compact_error(e: CompactError) -> PyErr {
    match e {
        CompactError::Usage { .. } => PyValueError::new_err(e.to_string()),
        CompactError::Read(e) => read_error(*e),
        e => Error::new_err(e.to_string()),
    }
}

/// Writes `store` as a Zarr v3 directory store with regular chunk grids (`chunks`: length per
/// dimension name); returns the report.
#[pyfunction]
#[pyo3(signature = (store, output, chunks, max_memory=None, overwrite=false, storage_options=None))]
pub(crate) fn materialize<'py>(
    py: Python<'py>,
    store: String,
    output: String,
    chunks: Vec<(String, u64)>,
    max_memory: Option<u64>,
    overwrite: bool,
    storage_options: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyDict>> {
    if let Some((dim, _)) = chunks.iter().find(|(_, n)| *n == 0) {
        return Err(PyValueError::new_err(format!("chunks: {dim}=0: a chunk length must be at least 1")));
    }
    let authorization = Authorization::from_user_config().map_err(|e| Error::new_err(format!("{store}: {e}")))?;
    let open = OpenOptions::new(authorization).with_remote(crate::remote::remote_options(storage_options)?);
    let mut options = vzarr::export::RegularOptions::new(chunks);
    options.overwrite = overwrite;
    if let Some(max) = max_memory {
        options.max_memory = max;
    }
    let report = guard("materialize", || {
        py.detach(|| {
            let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build();
            let runtime = runtime.map_err(|e| Error::new_err(format!("{store}: starting I/O runtime: {e}")))?;
            runtime.block_on(async {
                let opened = vzarr::Store::open_with(&store, &open).await.map_err(read_error)?;
                let path = std::path::Path::new(&output);
                vzarr::export::materialize_regular(&opened, path, &options, &|_| {})
                    .await
                    .map_err(|e| Error::new_err(e.to_string()))
            })
        })
    })?;
    let out = PyDict::new(py);
    out.set_item("output", &output)?;
    out.set_item("arrays", report.arrays)?;
    out.set_item("chunks", report.chunks)?;
    out.set_item("bytes", report.bytes)?;
    Ok(out)
}
