//! `parse_file`: one HDF5, NetCDF-4, NetCDF-3 or HDF4 file (or a DMR++ sidecar of one) scanned into the parts of a VirtualiZarr
//! `ManifestStore` (python/vzarr/virtualizarr.py assembles them): per array its `zarr.json` and its
//! chunk references as packed columns (kind, offset, length: no Python object per chunk), store-owned
//! chunks as bytes. Safe to call from many threads: the scan holds no lock and releases the GIL.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};
use vzarr::dataset::ChunkEntry;
use vzarr::dataset::{Hdf5Links, LinkTarget, VirtualDataset};
use vzarr::read::RemoteOptions;
use vzarr::scan::{scan_file, scan_url, ScanOptions};

use crate::errors::{guard, Error, ScanError};

/// A chunk the file never wrote.
const MISSING: u8 = 0;
/// A chunk referenced in the file.
const REFERENCED: u8 = 1;
/// A chunk vzarr holds itself (bytes inlined in the manifest).
const INLINED: u8 = 2;

/// Scans the file at `url` (a path, `file://` URL or object-store URL) and returns
/// `{"groups": [(path, attributes JSON)], "arrays": [...], "sources": [...], "warnings": [...]}`;
/// each array is a dict with `path`, `zarr_json` (text), `grid_shape`, `kinds` (u8 per chunk),
/// `sources` (little-endian u32 per chunk: the index in `sources` of the file a referenced chunk
/// lies in), `offsets` and `lengths` (little-endian u64 per chunk, row-major) and `inlined` (a dict
/// of linear index to bytes). With `hdf5_links`, a single HDF5 file also gives its groups' `links` (see [`links`]) and
/// `reference_attributes` (group path, name: the group attributes holding object references, as
/// absolute paths). `sources` lists the files chunks lie in, as the scan located them:
/// the scanned file first, then the targets of its HDF5 external links.
#[pyfunction]
#[pyo3(signature = (url, skip_unsupported, storage_options=None, hdf5_links=false))]
pub(crate) fn parse_file<'py>(
    py: Python<'py>,
    url: String,
    skip_unsupported: bool,
    storage_options: Option<&Bound<'py, PyDict>>,
    hdf5_links: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let remote = crate::remote::remote_options(storage_options)?;
    let options = ScanOptions {
        skip_unsupported,
        record_hdf5_links: hdf5_links,
        remote: remote.clone(),
        ..ScanOptions::default()
    };
    let dataset = guard("parse", || py.detach(|| scan_one(&url, options, &remote)).map_err(scan_error))?;
    dataset_parts(py, &url, &dataset)
}

/// Scans `inputs` (paths, globs or URLs) and combines them along `concat` (vzarr's `--concat` specs)
/// in Rust, then returns the combined dataset's parts as `parse_file` returns one file's (each
/// array's `sources` index the combined `sources`, in which the first file comes first).
#[pyfunction]
#[pyo3(signature = (inputs, concat, skip_unsupported, storage_options=None))]
pub(crate) fn parse_archive<'py>(
    py: Python<'py>,
    inputs: Vec<String>,
    concat: Vec<String>,
    skip_unsupported: bool,
    storage_options: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyDict>> {
    let mut archive = vzarr::pipeline::Archive::new(&inputs)
        .skip_unsupported(skip_unsupported)
        .history(false)
        .remote(crate::remote::remote_options(storage_options)?);
    for spec in &concat {
        archive = archive.concat(spec).map_err(crate::errors::pipeline_error)?;
    }
    let scanned = guard("parse", || {
        py.detach(|| -> Result<_, vzarr::pipeline::PipelineError> {
            let runtime = vzarr::pipeline::runtime()?;
            archive.scan_on(runtime.handle(), &|_, _| {})
        })
        .map_err(crate::errors::pipeline_error)
    })?;
    let first = inputs.first().cloned().unwrap_or_default();
    dataset_parts(py, &first, &scanned.dataset)
}

/// The parts of `dataset` as Python objects (see `parse_file`); `url` names it in errors.
fn dataset_parts<'py>(py: Python<'py>, url: &str, dataset: &VirtualDataset) -> PyResult<Bound<'py, PyDict>> {
    let out = PyDict::new(py);
    let groups = PyList::empty(py);
    for group in &dataset.groups {
        let attributes = serde_json::to_string(&group.attributes).map_err(|e| Error::new_err(e.to_string()))?;
        groups.append((group.path.as_str(), attributes))?;
    }
    out.set_item("groups", groups)?;
    let arrays = PyList::empty(py);
    for array in &dataset.arrays {
        let n = array.chunks.len();
        let (mut kinds, mut sources, mut offsets, mut lengths) =
            (Vec::with_capacity(n), Vec::with_capacity(n * 4), Vec::with_capacity(n * 8), Vec::with_capacity(n * 8));
        let inlined = PyDict::new(py);
        // The one source every chunk is referenced from, if there is one (the everyday array):
        // Python then fills the paths with one assignment instead of comparing every chunk's.
        let (mut first_source, mut one_source) = (None, n > 0);
        for (linear, entry) in array.chunks.iter().enumerate() {
            one_source &=
                matches!(entry, ChunkEntry::Source { source, .. } if *first_source.get_or_insert(source) == source);
            let (kind, source, offset, length) = match entry {
                ChunkEntry::Missing => (MISSING, 0, 0, 0),
                ChunkEntry::Source { source, offset, length } => (REFERENCED, source, offset, length),
                ChunkEntry::Owned { offset, length } => {
                    let bytes = array
                        .chunks
                        .owned_chunk(offset, length)
                        .map_err(|e| Error::new_err(format!("{url}: {}: owned chunk: {e}", array.path)))?;
                    inlined.set_item(linear, PyBytes::new(py, &bytes))?;
                    (INLINED, 0, 0, length)
                }
            };
            kinds.push(kind);
            sources.extend_from_slice(&source.to_le_bytes());
            offsets.extend_from_slice(&offset.to_le_bytes());
            lengths.extend_from_slice(&length.to_le_bytes());
        }
        let item = PyDict::new(py);
        item.set_item("path", &array.path)?;
        item.set_item("zarr_json", array.metadata.to_text())?;
        item.set_item("grid_shape", array.metadata.chunk_grid.grid_shape())?;
        item.set_item("kinds", PyBytes::new(py, &kinds))?;
        item.set_item("sources", PyBytes::new(py, &sources))?;
        item.set_item("offsets", PyBytes::new(py, &offsets))?;
        item.set_item("lengths", PyBytes::new(py, &lengths))?;
        item.set_item("inlined", inlined)?;
        item.set_item("uniform_source", first_source.filter(|_| one_source))?;
        arrays.append(item)?;
    }
    out.set_item("arrays", arrays)?;
    out.set_item("sources", dataset.sources.iter().map(|f| f.location.as_str()).collect::<Vec<_>>())?;
    out.set_item("warnings", dataset.warnings.iter().map(ToString::to_string).collect::<Vec<_>>())?;
    out.set_item("data_url", data_url(url, dataset))?;
    out.set_item("links", links(&dataset.hdf5_links))?;
    out.set_item("reference_attributes", &dataset.hdf5_links.reference_attributes)?;
    Ok(out)
}

/// A single HDF5 file's links as `(group path, name, kind, target, path)` tuples: kind `hard`
/// (target: `file:address`, the same for every name of an object), `soft` (target: the path as
/// written) or `external` (target: the file as written, path: the object's path in it).
fn links(links: &Hdf5Links) -> Vec<(&str, &str, &'static str, String, &str)> {
    links
        .links
        .iter()
        .map(|(group, name, target)| match target {
            LinkTarget::Hard { file, address } => {
                (group.as_str(), name.as_str(), "hard", format!("{file}:{address}"), "")
            }
            LinkTarget::Soft(path) => (group.as_str(), name.as_str(), "soft", path.clone(), ""),
            LinkTarget::External { file, path } => {
                (group.as_str(), name.as_str(), "external", file.clone(), path.as_str())
            }
        })
        .collect()
}

/// The URL of the file the chunks lie in when it is not `url` itself (a DMR++ sidecar's data file),
/// as a URL (`file://` for a local file); None for a file scanned itself.
fn data_url(url: &str, dataset: &VirtualDataset) -> Option<String> {
    let location = &dataset.sources.get(0)?.location;
    if vzarr::read::Location::parse(location).is_url() {
        return (location != url).then(|| location.clone());
    }
    let input = match url::Url::parse(url).ok().filter(|u| u.scheme() == "file") {
        Some(u) => u.to_file_path().ok()?,
        None => std::path::absolute(url).ok()?,
    };
    let path = std::path::Path::new(location);
    (input != path).then(|| url::Url::from_file_path(path).ok().map(String::from)).flatten()
}

/// Scans one file named by a path, a `file://` URL or an object-store URL.
fn scan_one(url: &str, options: ScanOptions, remote: &RemoteOptions) -> Result<VirtualDataset, vzarr::ScanError> {
    let io = |e: std::io::Error| vzarr::ScanError::Io { path: url.into(), source: e };
    if let Some(path) = url::Url::parse(url).ok().filter(|u| u.scheme() == "file").and_then(|u| u.to_file_path().ok()) {
        return scan_file(&path, &options);
    }
    if !vzarr::read::Location::parse(url).is_url() {
        return scan_file(std::path::Path::new(url), &options);
    }
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().map_err(io)?;
    let options = ScanOptions { runtime: Some(runtime.handle().clone()), ..options };
    scan_url(url, &options, remote, runtime.handle()).map(|scan| scan.dataset)
}

/// A variable vzarr cannot reference is `NotImplementedError`, as VirtualiZarr's parsers raise it;
/// anything else is `vzarr.ScanError`.
fn scan_error(e: vzarr::ScanError) -> PyErr {
    match e {
        vzarr::ScanError::Unsupported { .. } => pyo3::exceptions::PyNotImplementedError::new_err(e.to_string()),
        e => ScanError::new_err(e.to_string()),
    }
}
