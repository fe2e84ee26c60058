//! `scan`, `merge` and `append`: files scanned, combined and written in one call each (the library's
//! `pipeline`), with the GIL released; reports as dicts. `scan_shard` writes one part of a sharded
//! scan (for `merge`), `expand_inputs` gives the file list every shard of a run shares.

use pyo3::prelude::*;
use pyo3::types::PyDict;
use vzarr::dataset::VirtualDataset;
use vzarr::formats::IcechunkOptions;
use vzarr::pipeline::Shard;
use vzarr::pipeline::{runtime, write_dataset, AppendTo, Archive, Format, Output, PipelineError, Written};
use vzarr::scan::Sidecars;

use crate::errors::{guard, pipeline_error, Error};

/// Where and how `scan` and `merge` write.
struct Target {
    output: String,
    format: Format,
    overwrite: bool,
    trust_sources: bool,
}

impl Target {
    #[allow(clippy::too_many_arguments)] // the Python keyword arguments it checks, one each
    fn new(
        output: String,
        format: &str,
        overwrite: bool,
        branch: Option<String>,
        message: Option<String>,
        trust_sources: bool,
        inline_threshold: Option<u64>,
        skip_unsupported: bool,
    ) -> PyResult<Self> {
        let kerchunk = matches!(format, "kerchunk-json" | "kerchunk-parquet");
        if inline_threshold.is_some() && !kerchunk {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "inline_threshold applies to format=\"kerchunk-json\" and \"kerchunk-parquet\" only",
            ));
        }
        let format = match format.parse::<vzarr::formats::StoreFormat>() {
            Ok(vzarr::formats::StoreFormat::Native) => Format::Native,
            Ok(vzarr::formats::StoreFormat::KerchunkJson) => {
                Format::KerchunkJson { url_prefixes: Vec::new(), inline_threshold: inline_threshold.unwrap_or(0) }
            }
            Ok(vzarr::formats::StoreFormat::KerchunkParquet) => {
                Format::KerchunkParquet(vzarr::formats::KerchunkParquetWriter {
                    inline_threshold: inline_threshold.unwrap_or(vzarr::formats::DEFAULT_INLINE_THRESHOLD),
                    // As the command line does: what Zarr v2 cannot say is left out with a warning.
                    skip_unsupported,
                    ..vzarr::formats::KerchunkParquetWriter::default()
                })
            }
            Ok(vzarr::formats::StoreFormat::Icechunk) => Format::Icechunk(IcechunkOptions {
                branch: branch.clone().unwrap_or_else(|| "main".into()),
                message: message.clone(),
                commit_to_existing: branch.is_some() || message.is_some(),
                ..IcechunkOptions::default()
            }),
            _ => {
                return Err(pyo3::exceptions::PyValueError::new_err(format!(
                    "format {format:?}: expected \"native\", \"kerchunk-json\", \"kerchunk-parquet\" or \"icechunk\""
                )))
            }
        };
        if (branch.is_some() || message.is_some()) && !matches!(format, Format::Icechunk(_)) {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "branch and message apply to format=\"icechunk\" only",
            ));
        }
        Ok(Target { output, format, overwrite, trust_sources })
    }

    /// Writes `dataset` (with the archive's remote options) and returns the report.
    fn write<'py>(
        &self,
        py: Python<'py>,
        archive: &Archive,
        dataset: &VirtualDataset,
        files: usize,
        other_inputs: Vec<String>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let out = Output {
            overwrite: self.overwrite,
            remote: archive.remote_options().clone(),
            other_inputs,
            ..Output::new(&self.output, self.format.clone())
        };
        let (written, trusted) = guard("write", || {
            let written = py.detach(|| write_dataset(dataset, &out)).map_err(pipeline_error)?;
            // As the command line does: the sources' containers join the user's trust list, so the
            // store opens without allow_sources.
            let trusted = if self.trust_sources { trust(&written.source_containers())? } else { Vec::new() };
            Ok((written, trusted))
        })?;
        let report = PyDict::new(py);
        report.set_item("output", &self.output)?;
        report.set_item("files", files)?;
        report.set_item("arrays", written.arrays().len())?;
        report.set_item("references", written.references())?;
        report.set_item("owned_chunks", written.owned_chunks())?;
        // The scan's warnings, and the writer's: arrays an output cannot hold, left out by skip_unsupported.
        let warnings = written.store_info().map_or(&dataset.warnings, |info| &info.warnings);
        report.set_item("warnings", warnings.iter().map(ToString::to_string).collect::<Vec<_>>())?;
        report.set_item("source_containers", written.source_containers())?;
        report.set_item("trusted", trusted)?;
        if let Written::Icechunk(info) = &written {
            report.set_item("snapshot", &info.snapshot)?;
            report.set_item("branch", &info.branch)?;
        }
        Ok(report)
    }
}

/// The archive of `inputs` combined along `concat` with these options.
fn archive(
    inputs: &[String],
    concat: &[String],
    take_first: Vec<String>,
    drop_missing: bool,
    storage_options: Option<&Bound<'_, PyDict>>,
) -> PyResult<Archive> {
    // As the command line does: HDF5 external links and DMR++ data files may lead into the containers
    // the user trusts (the trust list and VZARR_ALLOW_SOURCES), besides the inputs' own.
    let links = vzarr::read::Authorization::from_user_config().map_err(|e| Error::new_err(e.to_string()))?;
    let mut archive = Archive::new(inputs)
        .drop_missing(drop_missing)
        .remote(crate::remote::remote_options(storage_options)?)
        .link_authorization(links);
    for spec in concat {
        archive = archive.concat(spec).map_err(pipeline_error)?;
    }
    for variable in take_first {
        archive = archive.take_first(variable);
    }
    Ok(archive)
}

/// Scans `inputs`, combines them along `concat` and writes `output` as `format` (`native`,
/// `kerchunk-json` or `icechunk`); returns the report.
#[pyfunction]
#[pyo3(signature = (inputs, concat, output, format, overwrite, skip_unsupported, take_first, drop_missing,
    storage_options=None, branch=None, message=None, trust_sources=true, progress=false, sidecars=None,
    inline_threshold=None))]
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
    progress: bool,
    sidecars: Option<&str>,
    inline_threshold: Option<u64>,
) -> PyResult<Bound<'py, PyDict>> {
    let target =
        Target::new(output, format, overwrite, branch, message, trust_sources, inline_threshold, skip_unsupported)?;
    let archive = archive(&inputs, &concat, take_first, drop_missing, storage_options)?
        .skip_unsupported(skip_unsupported)
        .sidecars(sidecars_option(sidecars)?);
    // With `progress`, a line on standard error that counts the files scanned and references found.
    let report = |done: usize, references: u64| {
        if progress {
            eprint!("\rvzarr: scanned {done} files, {references} references");
        }
    };
    let scanned = guard("scan", || {
        py.detach(|| -> Result<_, PipelineError> {
            let runtime = runtime()?;
            let scanned = archive.scan_on(runtime.handle(), &report);
            if progress {
                eprintln!();
            }
            scanned
        })
        .map_err(pipeline_error)
    })?;
    let report = target.write(py, &archive, &scanned.dataset, scanned.files.len(), Vec::new())?;
    report.set_item("from_sidecars", scanned.from_sidecars)?;
    Ok(report)
}

/// The `sidecars` keyword: none, or `"dmrpp"`.
fn sidecars_option(sidecars: Option<&str>) -> PyResult<Sidecars> {
    match sidecars {
        None => Ok(Sidecars::None),
        Some("dmrpp") => Ok(Sidecars::Dmrpp),
        Some(other) => Err(pyo3::exceptions::PyValueError::new_err(format!("sidecars {other:?}: expected \"dmrpp\""))),
    }
}

/// The files `inputs` name (patterns expanded, in natural order, as every shard of a run must be
/// given them), refused at once when several files have no concatenation dimension.
#[pyfunction]
#[pyo3(signature = (inputs, concat, storage_options=None))]
pub(crate) fn expand_inputs(
    py: Python<'_>,
    inputs: Vec<String>,
    concat: Vec<String>,
    storage_options: Option<&Bound<'_, PyDict>>,
) -> PyResult<Vec<String>> {
    let archive = archive(&inputs, &concat, Vec::new(), false, storage_options)?;
    let files = guard("scan", || {
        py.detach(|| -> Result<_, PipelineError> {
            let runtime = runtime()?;
            let files = archive.files(runtime.handle())?;
            archive.check_file_count(files.len())?;
            Ok(files)
        })
        .map_err(pipeline_error)
    })?;
    Ok(files.iter().map(|f| f.to_string_lossy().into_owned()).collect())
}

/// Scans shard `index` of `count` of `inputs` (expanded here unless `expanded`: then they are the
/// run's whole file list, in order) and writes its part to the local file `part`; returns the report.
#[pyfunction]
#[pyo3(signature = (inputs, concat, part, index, count, skip_unsupported, storage_options=None,
    sidecars=None, expanded=false))]
#[allow(clippy::too_many_arguments)] // the Python keyword arguments, one each
pub(crate) fn scan_shard<'py>(
    py: Python<'py>,
    inputs: Vec<String>,
    concat: Vec<String>,
    part: std::path::PathBuf,
    index: u32,
    count: u32,
    skip_unsupported: bool,
    storage_options: Option<&Bound<'py, PyDict>>,
    sidecars: Option<&str>,
    expanded: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let shard = Shard::new(index, count).map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))?;
    let archive = archive(&inputs, &concat, Vec::new(), false, storage_options)?
        .skip_unsupported(skip_unsupported)
        .sidecars(sidecars_option(sidecars)?);
    let scanned = guard("scan", || {
        py.detach(|| -> Result<_, PipelineError> {
            let runtime = runtime()?;
            let files = if expanded {
                inputs.iter().map(std::path::PathBuf::from).collect()
            } else {
                archive.files(runtime.handle())?
            };
            let scanned = archive.scan_shard_on(runtime.handle(), &files, shard, &|_, _| {})?;
            scanned.write(&part)?;
            Ok(scanned)
        })
        .map_err(pipeline_error)
    })?;
    let report = PyDict::new(py);
    report.set_item("output", part.to_string_lossy())?;
    report.set_item("shard", (index, count))?;
    report.set_item("first", scanned.header.first)?;
    report.set_item("inputs", scanned.header.inputs)?;
    report.set_item("files", scanned.files.len())?;
    report.set_item("references", scanned.references())?;
    let warnings = scanned.datasets.iter().flat_map(|d| &d.warnings).map(ToString::to_string);
    report.set_item("warnings", warnings.collect::<Vec<_>>())?;
    report.set_item("from_sidecars", scanned.from_sidecars)?;
    Ok(report)
}

/// Merges the scan parts `parts` (files, globs or URLs of `vzarr scan --shard` parts) along `concat`
/// and writes `output`; returns the report.
#[pyfunction]
#[pyo3(signature = (parts, concat, output, format, overwrite, take_first, drop_missing,
    storage_options=None, branch=None, message=None, trust_sources=true, inline_threshold=None))]
#[allow(clippy::too_many_arguments)] // the Python keyword arguments, one each
pub(crate) fn merge<'py>(
    py: Python<'py>,
    parts: Vec<String>,
    concat: Vec<String>,
    output: String,
    format: &str,
    overwrite: bool,
    take_first: Vec<String>,
    drop_missing: bool,
    storage_options: Option<&Bound<'py, PyDict>>,
    branch: Option<String>,
    message: Option<String>,
    trust_sources: bool,
    inline_threshold: Option<u64>,
) -> PyResult<Bound<'py, PyDict>> {
    let target = Target::new(output, format, overwrite, branch, message, trust_sources, inline_threshold, false)?;
    let archive = archive(&parts, &concat, take_first, drop_missing, storage_options)?;
    let merged = guard("merge", || {
        py.detach(|| -> Result<_, PipelineError> {
            let runtime = runtime()?;
            archive.merge_parts_on(runtime.handle(), &|_, _| {})
        })
        .map_err(pipeline_error)
    })?;
    let files = usize::try_from(merged.inputs).unwrap_or(usize::MAX);
    target.write(py, &archive, &merged.dataset, files, merged.part_urls)
}

/// Appends `inputs` to the native store or Icechunk repository `store`; returns the report. `chunks`
/// (dimension, length as text: `("time", "month")`) keeps the store's grid along the dimension.
#[pyfunction]
#[pyo3(signature = (store, inputs, allow_gaps, storage_options=None, branch=None, message=None, trust_sources=true, chunks=None))]
#[allow(clippy::too_many_arguments)] // the Python keyword arguments, one each
pub(crate) fn append<'py>(
    py: Python<'py>,
    store: String,
    inputs: Vec<String>,
    allow_gaps: bool,
    storage_options: Option<&Bound<'py, PyDict>>,
    branch: Option<String>,
    message: Option<String>,
    trust_sources: bool,
    chunks: Option<(String, String)>,
) -> PyResult<Bound<'py, PyDict>> {
    let archive = Archive::new(&inputs).remote(crate::remote::remote_options(storage_options)?);
    let chunks = match chunks {
        Some((dim, length)) => {
            let length =
                length.parse().map_err(|e: String| pyo3::exceptions::PyValueError::new_err(format!("chunks: {e}")))?;
            Some((dim, length))
        }
        None => None,
    };
    let options = AppendTo { allow_gaps, branch, message, chunks };
    let appended = guard("append", || {
        py.detach(|| -> Result<_, PipelineError> {
            let runtime = runtime()?;
            archive.append_to(&store, &options, runtime.handle(), &|_| {})
        })
        .map_err(pipeline_error)
    })?;
    let trusted = if trust_sources { trust(&appended.source_containers)? } else { Vec::new() };
    let report = PyDict::new(py);
    report.set_item("store", &store)?;
    report.set_item("source_containers", &appended.source_containers)?;
    report.set_item("trusted", trusted)?;
    report.set_item("files", appended.files)?;
    report.set_item("sources", appended.sources)?;
    report.set_item("warnings", appended.dataset.warnings.iter().map(ToString::to_string).collect::<Vec<_>>())?;
    if let Some((snapshot, branch)) = &appended.snapshot {
        report.set_item("snapshot", snapshot)?;
        report.set_item("branch", branch)?;
    }
    Ok(report)
}

/// Adds `containers` to the user's trust list; returns those that were new.
fn trust(containers: &[String]) -> PyResult<Vec<String>> {
    use vzarr::read::TrustList;
    let path = TrustList::default_path().map_err(|e| Error::new_err(e.to_string()))?;
    TrustList::add(&path, containers).map_err(|e| Error::new_err(e.to_string()))
}

/// Scans every file of `inputs` and writes its DMR++ sidecar into the local directory `output`
/// (`output/<file name>.dmrpp`; nothing is combined); returns the report.
#[pyfunction]
#[pyo3(signature = (inputs, output, overwrite, skip_unsupported, storage_options=None, trust_sources=true))]
pub(crate) fn write_sidecars<'py>(
    py: Python<'py>,
    inputs: Vec<String>,
    output: String,
    overwrite: bool,
    skip_unsupported: bool,
    storage_options: Option<&Bound<'py, PyDict>>,
    trust_sources: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let archive = archive(&inputs, &[], Vec::new(), false, storage_options)?.skip_unsupported(skip_unsupported);
    let writer = vzarr::formats::DmrppWriter::default();
    let options = vzarr::WriteOptions { overwrite };
    let (written, trusted) = guard("scan", || {
        let written = py
            .detach(|| -> Result<_, PipelineError> {
                let runtime = runtime()?;
                let files = archive.files(runtime.handle())?;
                archive.write_sidecars_on(
                    runtime.handle(),
                    &files,
                    std::path::Path::new(&output),
                    &writer,
                    &options,
                    &|_, _| {},
                )
            })
            .map_err(pipeline_error)?;
        let locations = written.sidecars.iter().map(|s| s.source.as_str());
        let containers = vzarr::read::containers_of_locations(locations);
        let trusted = if trust_sources { trust(&containers)? } else { Vec::new() };
        Ok((written, (containers, trusted)))
    })?;
    let infos = || written.sidecars.iter().flat_map(|s| &s.info.arrays);
    let report = PyDict::new(py);
    report.set_item("output", &output)?;
    report.set_item("files", written.sidecars.len())?;
    report.set_item("arrays", infos().count())?;
    report.set_item("references", infos().map(|a| a.stats.referenced).sum::<u64>())?;
    report.set_item("owned_chunks", infos().map(|a| a.stats.owned).sum::<u64>())?;
    report.set_item("warnings", written.warnings().collect::<Vec<_>>())?;
    report.set_item("source_containers", trusted.0)?;
    report.set_item("trusted", trusted.1)?;
    report.set_item(
        "sidecars",
        written.sidecars.iter().map(|s| s.path.to_string_lossy().into_owned()).collect::<Vec<_>>(),
    )?;
    Ok(report)
}
