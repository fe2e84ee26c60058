//! `vzarr.export`: a store (native, Icechunk, kerchunk) exported as kerchunk reference JSON or a
//! kerchunk Parquet reference set, locally or to an object store (the library's `export`, the GIL
//! released).

use std::path::Path;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use vzarr::export::{export_kerchunk, export_kerchunk_parquet, KerchunkOptions, KerchunkParquetOptions};
use vzarr::formats::StoreFormat;
use vzarr::formats::UrlPrefix;
use vzarr::formats::{OutputKind, RemoteOutput};
use vzarr::read::Authorization;
use vzarr::read::OpenOptions;
use vzarr::read::RemoteOptions;

use crate::errors::{by_kind, guard, read_error, Error};

/// Objects uploaded at once to an object-store output.
const UPLOADS_AT_ONCE: usize = 16;

/// What to write: a [`StoreFormat`] with the options of each but `overwrite`.
enum Export {
    Json { url_prefixes: Vec<UrlPrefix>, inline_threshold: u64 },
    Parquet { url_prefixes: Vec<UrlPrefix>, record_size: usize, skip_unsupported: bool, inline_threshold: u64 },
}

/// What an export wrote.
enum Report {
    Json(vzarr::formats::KerchunkReport),
    Parquet(vzarr::export::KerchunkParquetReport),
}

/// Exports `store` at `output` as `format` (`kerchunk-json` or `kerchunk-parquet`); returns the report.
#[pyfunction]
#[pyo3(signature = (store, output, format="kerchunk-json", url_prefix=Vec::new(), record_size=None,
    skip_unsupported=false, overwrite=false, storage_options=None, inline_threshold=None))]
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
    inline_threshold: Option<u64>,
) -> PyResult<Bound<'py, PyDict>> {
    let url_prefixes = url_prefix
        .iter()
        .map(|p| p.parse::<UrlPrefix>().map_err(|e| PyValueError::new_err(format!("url_prefix {p:?}: {e}"))))
        .collect::<PyResult<Vec<_>>>()?;
    let export = match format.parse::<StoreFormat>() {
        Ok(StoreFormat::KerchunkJson) if record_size.is_none() && !skip_unsupported => {
            // Zarr v3 keys say a rectilinear grid: nothing is inlined unless asked.
            Export::Json { url_prefixes, inline_threshold: inline_threshold.unwrap_or(0) }
        }
        Ok(StoreFormat::KerchunkJson) => {
            return Err(PyValueError::new_err("record_size and skip_unsupported go with format=\"kerchunk-parquet\""))
        }
        Ok(StoreFormat::KerchunkParquet) => Export::Parquet {
            url_prefixes,
            record_size: match record_size {
                Some(0) => return Err(PyValueError::new_err("record_size must be at least 1")),
                size => size.unwrap_or(vzarr::formats::DEFAULT_RECORD_SIZE),
            },
            skip_unsupported,
            inline_threshold: inline_threshold.unwrap_or(vzarr::formats::DEFAULT_INLINE_THRESHOLD),
        },
        _ => {
            return Err(PyValueError::new_err(format!(
                "format {format:?}: one of \"kerchunk-json\", \"kerchunk-parquet\""
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
                write(&opened, &output, &export, overwrite, &remote).await
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

/// Writes the export of `store` at `output`: a local path (or `file://` URL) directly, an
/// object-store URL through a private local copy published whole.
async fn write(
    store: &vzarr::Store,
    output: &str,
    export: &Export,
    overwrite: bool,
    remote: &RemoteOptions,
) -> PyResult<Report> {
    let local = output.strip_prefix("file://").unwrap_or(output);
    if !vzarr::read::is_url(local) {
        return export_to(store, Path::new(local), export, overwrite).await;
    }
    let kind = match export {
        Export::Json { .. } => OutputKind::KerchunkJson,
        Export::Parquet { .. } => OutputKind::KerchunkParquet,
    };
    // Every source is known before the destination's checks (a repository names them in its manifests).
    store.all_sources().await.map_err(read_error)?;
    let inputs = vzarr::export::store_urls(store);
    let failed = |e: vzarr::formats::WriteError| by_kind(e.kind(), e.to_string());
    let destination =
        RemoteOutput::begin(output, kind, overwrite, &inputs, remote, UPLOADS_AT_ONCE).await.map_err(failed)?;
    // The private local copy is new: nothing there to overwrite.
    let report = export_to(store, destination.local_path(), export, false).await?;
    destination.publish().await.map_err(failed)?;
    Ok(report)
}

/// Exports `store` to the local path `path`.
async fn export_to(store: &vzarr::Store, path: &Path, export: &Export, overwrite: bool) -> PyResult<Report> {
    let failed = |e: vzarr::export::ExportError| by_kind(e.kind(), e.to_string());
    Ok(match export {
        Export::Json { url_prefixes, inline_threshold } => {
            let options =
                KerchunkOptions { url_prefixes: url_prefixes.clone(), overwrite, inline_threshold: *inline_threshold };
            Report::Json(export_kerchunk(store, path, &options).await.map_err(failed)?)
        }
        Export::Parquet { url_prefixes, record_size, skip_unsupported, inline_threshold } => {
            let options = KerchunkParquetOptions {
                url_prefixes: url_prefixes.clone(),
                record_size: *record_size,
                skip_unsupported: *skip_unsupported,
                overwrite,
                inline_threshold: *inline_threshold,
            };
            Report::Parquet(export_kerchunk_parquet(store, path, &options).await.map_err(failed)?)
        }
    })
}
