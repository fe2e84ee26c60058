//! `scan`: inputs scanned, combined and written in one call (the library's `pipeline`), with the GIL
//! released; the report as a dict.

use pyo3::prelude::*;
use pyo3::types::PyDict;
use vzarr::pipeline::{write_dataset, Archive, Format, Output, Written};
use vzarr::store::IcechunkOptions;

use crate::errors::{guard, pipeline_error, Error};

/// Scans `inputs`, combines them along `concat` and writes `output` as `format` (`native`,
/// `kerchunk-json` or `icechunk`); returns the report.
#[pyfunction]
#[pyo3(signature = (inputs, concat, output, format, overwrite, skip_unsupported, take_first, drop_missing,
    storage_options=None, branch=None, message=None, trust_sources=true))]
#[allow(clippy::too_many_arguments)] // the Python keyword arguments, one each
pub(crate) fn scan<'py>(
    py: Python<'py>,
    inputs: Vec<String>,
    concat: Vec<String>,
    output: String,
    format: &str,
    overwrite: bool,
    skip_unsupported: bool,
    take_first: Vec<String>,
    drop_missing: bool,
    storage_options: Option<&Bound<'py, PyDict>>,
    branch: Option<String>,
    message: Option<String>,
    trust_sources: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let remote = crate::remote::remote_options(storage_options)?;
    let format = match format {
        "native" => Format::Native,
        "kerchunk-json" => Format::KerchunkJson { url_prefixes: Vec::new() },
        "icechunk" => Format::Icechunk(IcechunkOptions {
            branch: branch.clone().unwrap_or_else(|| "main".into()),
            message: message.clone(),
            commit_to_existing: branch.is_some() || message.is_some(),
            ..IcechunkOptions::default()
        }),
        other => {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "format {other:?}: expected \"native\", \"kerchunk-json\" or \"icechunk\""
            )))
        }
    };
    if (branch.is_some() || message.is_some()) && !matches!(format, Format::Icechunk(_)) {
        return Err(pyo3::exceptions::PyValueError::new_err("branch and message apply to format=\"icechunk\" only"));
    }
    let mut archive =
        Archive::new(&inputs).skip_unsupported(skip_unsupported).drop_missing(drop_missing).remote(remote.clone());
    for spec in &concat {
        archive = archive.concat(spec).map_err(pipeline_error)?;
    }
    for variable in take_first {
        archive = archive.take_first(variable);
    }
    let out = Output { overwrite, remote, ..Output::new(&output, format) };
    let (scanned, written, trusted) = guard("scan", || {
        py.detach(|| {
            let scanned = archive.scan()?;
            let written = write_dataset(&scanned.dataset, &out)?;
            Ok((scanned, written))
        })
        .map_err(pipeline_error)
        .and_then(|(scanned, written)| {
            // As the command line does: the sources' containers join the user's trust list, so the
            // store opens without allow_sources.
            let trusted = if trust_sources { trust(&written.source_containers())? } else { Vec::new() };
            Ok((scanned, written, trusted))
        })
    })?;
    let report = PyDict::new(py);
    report.set_item("output", &output)?;
    report.set_item("files", scanned.files.len())?;
    report.set_item("arrays", written.arrays().len())?;
    report.set_item("references", written.references())?;
    report.set_item("owned_chunks", written.owned_chunks())?;
    report.set_item("warnings", scanned.dataset.warnings.iter().map(ToString::to_string).collect::<Vec<_>>())?;
    report.set_item("source_containers", written.source_containers())?;
    report.set_item("trusted", trusted)?;
    if let Written::Icechunk(info) = &written {
        report.set_item("snapshot", &info.snapshot)?;
        report.set_item("branch", &info.branch)?;
    }
    Ok(report)
}

/// Adds `containers` to the user's trust list; returns those that were new.
fn trust(containers: &[String]) -> PyResult<Vec<String>> {
    use vzarr::trust::TrustList;
    let path = TrustList::default_path().map_err(|e| Error::new_err(e.to_string()))?;
    TrustList::add(&path, containers).map_err(|e| Error::new_err(e.to_string()))
}
