//! `vzarr.compact`: runs of small chunks along a dimension folded into target-size chunks, in place
//! (the library's `compact::compact_store`, the GIL released).

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use vzarr::chunking::ChunkLength;
use vzarr::pipeline::{compact_store, CompactError, CompactOptions};
use vzarr::read::Authorization;
use vzarr::read::OpenOptions;

use crate::errors::{guard, read_error, Error};

/// Compacts the native store or Icechunk repository `store` along `dim` to chunks of `target` (a
/// number of elements, or text: `"30"`, `"month"`, `"season"`, `"year"`, `"day"`, a duration such as
/// `"10d"`, or `"by:VAR"`); returns the report (per array: edges before and after, chunks written).
#[pyfunction]
#[pyo3(signature = (store, dim, target, tail=false, dry_run=false, storage_options=None, branch=None, message=None))]
#[allow(clippy::too_many_arguments)] // the Python keyword arguments, one each
pub(crate) fn compact<'py>(
    py: Python<'py>,
    store: String,
    dim: String,
    target: &Bound<'py, PyAny>,
    tail: bool,
    dry_run: bool,
    storage_options: Option<&Bound<'py, PyDict>>,
    branch: Option<String>,
    message: Option<String>,
) -> PyResult<Bound<'py, PyDict>> {
    let authorization = Authorization::from_user_config().map_err(|e| Error::new_err(format!("{store}: {e}")))?;
    let mut open = OpenOptions::new(authorization).with_remote(crate::remote::remote_options(storage_options)?);
    open.branch = branch;
    let target: ChunkLength = match target.extract::<u64>() {
        Ok(n) => ChunkLength::Elements(n),
        Err(_) => {
            let text: String = target.extract().map_err(|_| PyValueError::new_err("target: a number or a text"))?;
            text.parse().map_err(|e: String| PyValueError::new_err(format!("target: {e}")))?
        }
    };
    let mut options = CompactOptions::new(dim, target, open);
    options.tail = tail;
    options.dry_run = dry_run;
    options.message = message;
    let report = guard("compact", || {
        py.detach(|| {
            let runtime = vzarr::pipeline::runtime();
            let runtime = runtime.map_err(|e| Error::new_err(format!("{store}: {e}")))?;
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

/// The options of a regular copy from the Python keywords (each length a number, a calendar unit or
/// `by:VAR`, as text; one that does not parse, or 0, is a `ValueError`).
fn regular_options(
    chunks: Vec<(String, String)>,
    shards: Option<Vec<(String, String)>>,
    format: &str,
    max_memory: Option<u64>,
    overwrite: bool,
) -> PyResult<vzarr::export::RegularOptions> {
    let parse = |what: &str, lengths: Vec<(String, String)>| -> PyResult<Vec<(String, ChunkLength)>> {
        lengths
            .into_iter()
            .map(|(dim, text)| match text.parse::<ChunkLength>() {
                Ok(length) => Ok((dim, length)),
                Err(e) => Err(PyValueError::new_err(format!("{what}: {dim}={e}"))),
            })
            .collect()
    };
    let chunks = parse("chunks", chunks)?;
    let shards = shards.map(|s| parse("shards", s)).transpose()?;
    let mut options = vzarr::export::RegularOptions::new(chunks);
    options.shards = shards;
    options.overwrite = overwrite;
    options.format = match format {
        "zarr" => vzarr::export::RegularFormat::Zarr,
        "icechunk" => vzarr::export::RegularFormat::Icechunk,
        other => return Err(PyValueError::new_err(format!("format={other:?}: expected \"zarr\" or \"icechunk\""))),
    };
    if let Some(max) = max_memory {
        options.max_memory = max;
    }
    Ok(options)
}

/// Writes `store` as a copy with regular chunk grids (`chunks`: length per dimension name): a Zarr
/// v3 store (sharded with `shards`) or an Icechunk repository; `update` brings an Icechunk copy up to
/// date after an append. Returns the report.
#[pyfunction]
#[pyo3(signature = (store, output, chunks, max_memory=None, overwrite=false, storage_options=None, shards=None,
    format="zarr", update=false, branch=None, message=None, codec=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn materialize<'py>(
    py: Python<'py>,
    store: String,
    output: String,
    chunks: Vec<(String, String)>,
    max_memory: Option<u64>,
    overwrite: bool,
    storage_options: Option<&Bound<'py, PyDict>>,
    shards: Option<Vec<(String, String)>>,
    format: &str,
    update: bool,
    branch: Option<String>,
    message: Option<String>,
    codec: Option<String>,
) -> PyResult<Bound<'py, PyDict>> {
    if update && (format != "icechunk" || !chunks.is_empty() || shards.is_some() || overwrite) {
        return Err(PyValueError::new_err(
            "update=True updates an Icechunk copy (format=\"icechunk\") in its own chunks: no chunks, shards or overwrite",
        ));
    }
    if !update && chunks.is_empty() {
        return Err(PyValueError::new_err("chunks: name at least one dimension"));
    }
    let authorization = Authorization::from_user_config().map_err(|e| Error::new_err(format!("{store}: {e}")))?;
    let remote = crate::remote::remote_options(storage_options)?;
    let open = OpenOptions::new(authorization).with_remote(remote.clone());
    let mut options = regular_options(chunks, shards, format, max_memory, overwrite)?;
    options.remote = remote;
    options.codec = codec.map(|c| c.parse::<vzarr::dataset::Recode>()).transpose().map_err(PyValueError::new_err)?;
    if let Some(branch) = branch {
        options.branch = branch;
    }
    options.message = message;
    let (report, committed) = guard("materialize", || {
        py.detach(|| {
            let runtime = vzarr::pipeline::runtime();
            let runtime = runtime.map_err(|e| Error::new_err(format!("{store}: {e}")))?;
            runtime.block_on(async {
                let opened = vzarr::Store::open_with(&store, &open).await.map_err(read_error)?;
                let written = if update {
                    vzarr::export::materialize_update(&opened, &output, &options, &|_| {}).await
                } else {
                    let path = std::path::Path::new(&output);
                    vzarr::export::materialize_regular(&opened, path, &options, &|_| {}).await.map(|r| (r, true))
                };
                written.map_err(|e| Error::new_err(e.to_string()))
            })
        })
    })?;
    let out = PyDict::new(py);
    out.set_item("output", &output)?;
    out.set_item("arrays", report.arrays)?;
    out.set_item("chunks", report.chunks)?;
    out.set_item("bytes", report.bytes)?;
    out.set_item("committed", committed)?;
    Ok(out)
}
