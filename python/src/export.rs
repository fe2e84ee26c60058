//! `vzarr.export`: a store (native, Icechunk, kerchunk) exported as kerchunk reference JSON or a
//! kerchunk Parquet reference set, locally or to an object store (the library's `export`, the GIL
//! released).

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use vzarr::export::{export_kerchunk, export_kerchunk_parquet, ExportError, KerchunkOptions, KerchunkParquetOptions};
use vzarr::read::OpenOptions;
use vzarr::source::RemoteOptions;
use vzarr::store::{OutputKind, RemoteOutput, UrlPrefix, WriteError};
use vzarr::trust::Authorization;

use crate::errors::{by_kind, guard, read_error, Error};

/// Source files (or objects) read at once while uploading an object-store output.
const UPLOADS_AT_ONCE: usize = 16;

/// What to write: kerchunk JSON or Parquet, with the options of each.
enum Format {
    Json(KerchunkOptions),
    Parquet(KerchunkParquetOptions),
}

/// Exports `store` at `output` as `format` (`kerchunk-json` or `kerchunk-parquet`); returns the report.
#[pyfunction]
#[pyo3(signature = (store, output, format="kerchunk-json", url_prefix=Vec::new(), record_size=None,
    skip_unsupported=false, overwrite=false, storage_options=None))]
#[allow(clippy::too_many_arguments)] // the Python keyword arguments, one each
pub(crate) fn export<'py>(
    py: Python<'py>,
    store: String,
    output: String,
    format: &str,
    url_prefix: Vec<String>,
    record_size: Option<usize>,
    skip_unsupported: bool,
    overwrite: bool,
    storage_options: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyDict>> {
    let url_prefixes = url_prefix
        .iter()
        .map(|p| p.parse::<UrlPrefix>().map_err(|e| PyValueError::new_err(format!("url_prefix {p:?}: {e}"))))
        .collect::<PyResult<Vec<_>>>()?;
    let format = match format {
        "kerchunk-json" if record_size.is_none() && !skip_unsupported => {
            Format::Json(KerchunkOptions { url_prefixes, overwrite })
        }
        "kerchunk-json" => {
            return Err(PyValueError::new_err("record_size and skip_unsupported go with format=\"kerchunk-parquet\""))
        }
        "kerchunk-parquet" => Format::Parquet(KerchunkParquetOptions {
            url_prefixes,
            record_size: match record_size {
                Some(0) => return Err(PyValueError::new_err("record_size must be at least 1")),
                Some(n) => n,
                None => vzarr::store::DEFAULT_RECORD_SIZE,
            },
            skip_unsupported,
            overwrite,
        }),
        other => {
            return Err(PyValueError::new_err(format!(
                "format {other:?}: one of \"kerchunk-json\", \"kerchunk-parquet\""
            )))
        }
    };
    let authorization = Authorization::from_user_config().map_err(|e| Error::new_err(format!("{store}: {e}")))?;
    let remote = crate::remote::remote_options(storage_options)?;
    let open = OpenOptions::new(authorization).with_remote(remote.clone());
    let report = guard("export", || {
        py.detach(|| {
            let runtime = vzarr::pipeline::runtime().map_err(|e| Error::new_err(format!("{store}: {e}")))?;
            runtime.block_on(async {
                let opened = vzarr::Store::open_with(&store, &open).await.map_err(read_error)?;
                opened.all_sources().await.map_err(read_error)?;
                write(&opened, &output, &format, &remote).await
            })
        })
    })?;
    let out = PyDict::new(py);
    out.set_item("output", &output)?;
    match report {
        Report::Json(r) => {
            out.set_item("metadata", r.metadata)?;
            out.set_item("references", r.references)?;
            out.set_item("inline", r.inline)?;
            out.set_item("bytes", r.bytes)?;
        }
        Report::Parquet(r) => {
            out.set_item("arrays", r.arrays)?;
            out.set_item("record_files", r.record_files)?;
            out.set_item("references", r.references)?;
            out.set_item("inline", r.inline)?;
            let left_out = PyList::empty(py);
            for warning in &r.left_out {
                let entry = PyDict::new(py);
                entry.set_item("variable", &warning.variable)?;
                entry.set_item("message", &warning.message)?;
                left_out.append(entry)?;
            }
            out.set_item("left_out", left_out)?;
        }
    }
    Ok(out)
}

/// What an export wrote.
enum Report {
    Json(vzarr::store::KerchunkReport),
    Parquet(vzarr::export::KerchunkParquetReport),
}

/// Writes the export of `store` at `output`: a local path directly, an object-store URL through a
/// private local copy published whole.
async fn write(store: &vzarr::Store, output: &str, format: &Format, remote: &RemoteOptions) -> PyResult<Report> {
    let is_remote = output.split_once("://").is_some_and(|(scheme, _)| scheme.len() > 1 && scheme != "file");
    if !is_remote {
        let local = output.strip_prefix("file://").unwrap_or(output);
        return export_to(store, std::path::Path::new(local), format).await;
    }
    let kind = match format {
        Format::Json(_) => OutputKind::KerchunkJson,
        Format::Parquet(_) => OutputKind::KerchunkParquet,
    };
    let overwrite = match format {
        Format::Json(o) => o.overwrite,
        Format::Parquet(o) => o.overwrite,
    };
    let mut inputs = vzarr::store::url_sources(&store.sources());
    inputs.push(store.location().to_string());
    let destination =
        RemoteOutput::begin(output, kind, overwrite, &inputs, remote, UPLOADS_AT_ONCE).await.map_err(write_error)?;
    // The private local copy is new: nothing there to overwrite.
    let local = match format {
        Format::Json(o) => Format::Json(KerchunkOptions { overwrite: false, ..o.clone() }),
        Format::Parquet(o) => Format::Parquet(KerchunkParquetOptions { overwrite: false, ..o.clone() }),
    };
    let report = export_to(store, destination.local_path(), &local).await?;
    destination.publish().await.map_err(write_error)?;
    Ok(report)
}

/// Exports `store` to the local path `path`.
async fn export_to(store: &vzarr::Store, path: &std::path::Path, format: &Format) -> PyResult<Report> {
    let failed = |e: ExportError| by_kind(e.kind(), e.to_string());
    Ok(match format {
        Format::Json(options) => Report::Json(export_kerchunk(store, path, options).await.map_err(failed)?),
        Format::Parquet(options) => {
            Report::Parquet(export_kerchunk_parquet(store, path, options).await.map_err(failed)?)
        }
    })
}

fn write_error(e: WriteError) -> PyErr {
    by_kind(e.kind(), e.to_string())
}
