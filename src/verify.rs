//! Proof against the source: read every array through the store (manifest, byte ranges, codecs) and
//! compare it bit for bit with the same values read by libnetcdf from the original files.
//!
//! Needs feature `verify` (links libnetcdf, libhdf5 and libhdf4).
//!
//! `verify/oracle/` is the only place that opens source files with their native libraries; there
//! libnetcdf is the oracle, deliberately independent of vzarr's own decoding. The comparison asks it
//! through `backend::Backend`, in this process or in a `vzarr-oracle` worker process (`worker`); the
//! `vzarr` command uses the worker alone, so that its own process links none of the C libraries.
//! Sources on object
//! stores and HTTP servers are read by the oracle from temporary local copies, one source at a time
//! (`remote`, `copies`).

mod backend;
mod boxes;
mod copies;
mod keys;
mod opens;
mod oracle;
mod protocol;
mod remote;
mod strings;
mod text_layout;
mod worker;

pub use backend::OracleError;
#[cfg(debug_assertions)]
pub(crate) use opens::oracle_opens;
pub use oracle::serve_oracle;

use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

use backend::Backend;
use boxes::{comparison_boxes, split_at_extent};

use crate::ndcopy::unravel;

use crate::cftime::{Calendar, TimeUnits};
use crate::dataset::{ConcatDimInfo, SourceBox};
use crate::grid::{DimSelection, Selection};
use crate::read::{ReadError, ReadOptions, Store};

/// Values with their `units` and `calendar` attributes, as an oracle reads a time coordinate.
pub(crate) type TimeValues = (Vec<f64>, Option<String>, Option<String>);

/// The oracle note of an array of a store that references no source file (a kerchunk document whose
/// every chunk is inline): its values are the document's own, with no other copy to compare with.
const NO_SOURCE: &str = "nothing to compare: the store references no source file, every chunk is inline";

/// The verdict for one array.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ArrayVerdict {
    /// Array path.
    pub path: String,
    /// Elements compared.
    pub elements: u64,
    /// Elements whose bits differ.
    pub mismatches: u64,
    /// The first difference, described (`index [3, 4, 5]: store 0x.., source 0x..`).
    pub first_mismatch: Option<String>,
    /// Why the array could not be compared at all.
    pub error: Option<String>,
    /// Elements not compared because the source leaves them undefined: chunks never written of a
    /// dataset whose fill time is "never" (netCDF's `NOFILL`), which libhdf5 leaves as the caller's
    /// buffer held them and vzarr reads as the fill value.
    #[serde(default)]
    pub undefined_in_source: u64,
    /// The oracle, when not the source's own library: `szip decoded by libaec` for szip data sets of
    /// HDF4 files, which Debian's libhdf4 cannot decode (libhdf4 locates and describes their elements).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oracle: Option<String>,
    /// Why the array cannot be proven on this machine, though nothing differs: the source uses a
    /// filter the oracle's libhdf5 has no plugin for (`not provable here: libhdf5 has no filter 305
    /// (LZO); set HDF5_PLUGIN_PATH`). Not a difference: `vzarr verify` exits 4, not 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unprovable: Option<String>,
}

impl ArrayVerdict {
    /// True when every element matched.
    pub fn ok(&self) -> bool {
        self.mismatches == 0 && self.error.is_none() && self.unprovable.is_none()
    }

    /// True when nothing differs and nothing failed, but the array could not be proven here
    /// ([`ArrayVerdict::unprovable`]).
    pub fn unprovable_here(&self) -> bool {
        self.mismatches == 0 && self.error.is_none() && self.unprovable.is_some()
    }
}

/// Compares every array of `store` with its source files.
///
/// `progress(path, done_elements, total_elements)` is called as the comparison advances.
///
/// # Errors
/// [`ReadError`] only when the store itself cannot be used; per-array failures are reported in the
/// verdicts.
pub async fn verify_store(
    store: &Store,
    options: &ReadOptions,
    progress: &(dyn Fn(&str, u64, u64) + Sync),
) -> Result<Vec<ArrayVerdict>, ReadError> {
    verify_store_with_oracle(store, options, &OracleMode::InProcess, progress).await
}

/// Where libnetcdf, the oracle, runs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum OracleMode {
    /// In this process (a corrupt source can hang it: libhdf5 has endless loops on some corruptions).
    #[default]
    InProcess,
    /// In a child process, `program` (see `verify/worker`), killed when a request is not answered
    /// within `timeout`: the array's verdict then says which file timed out.
    Worker {
        /// The program to start: the `vzarr-oracle` binary, which runs [`serve_oracle`].
        program: PathBuf,
        /// Longest wait for one answer (one slab of at most 32 MiB).
        timeout: Duration,
    },
}

/// [`verify_store`] with the oracle run as `mode` says.
///
/// # Errors
/// [`ReadError`] only when the store itself cannot be used, or a source is not authorized
/// ([`ReadError::Untrusted`]: libnetcdf would open it); per-array failures (a source that timed out
/// included) are reported in the verdicts.
pub async fn verify_store_with_oracle(
    store: &Store,
    options: &ReadOptions,
    mode: &OracleMode,
    progress: &(dyn Fn(&str, u64, u64) + Sync),
) -> Result<Vec<ArrayVerdict>, ReadError> {
    let backend: Box<dyn Backend> = match mode {
        OracleMode::InProcess => Box::new(oracle::OracleFiles::default()),
        OracleMode::Worker { program, timeout } => Box::new(worker::WorkerOracle::new(program.clone(), *timeout)),
    };
    verify_with(store, options, backend, progress).await
}

/// [`verify_store`] with the oracle in a worker process, the program `oracle` (the `vzarr-oracle`
/// binary), as [`OracleMode::Worker`] does. Unlike [`verify_store_with_oracle`], nothing here calls
/// the C libraries: a program that verifies only this way links none of them.
///
/// # Errors
/// As [`verify_store_with_oracle`].
pub async fn verify_store_in_worker(
    store: &Store,
    options: &ReadOptions,
    (oracle, timeout): (PathBuf, Duration),
    progress: &(dyn Fn(&str, u64, u64) + Sync),
) -> Result<Vec<ArrayVerdict>, ReadError> {
    verify_with(store, options, Box::new(worker::WorkerOracle::new(oracle, timeout)), progress).await
}

async fn verify_with(
    store: &Store,
    options: &ReadOptions,
    backend: Box<dyn Backend>,
    progress: &(dyn Fn(&str, u64, u64) + Sync),
) -> Result<Vec<ArrayVerdict>, ReadError> {
    // libnetcdf opens the sources by their stored paths: every one must be authorized first (a
    // repository names them in its manifests, all read first).
    let sources = store.all_sources().await?;
    store.authorize_sources()?;
    let mut files = Oracle { backend, copy: None };
    if sources.iter().any(|f| crate::source::local_path(&f.location).is_none()) {
        return Ok(remote::verify_by_source(store, options, &mut files, progress).await);
    }
    let layout = Layout::of(store);
    let mut verdicts = Vec::new();
    for info in &store.info().arrays {
        let mut verdict = ArrayVerdict::new(&info.path);
        let part = async {
            let array = store.array(&info.path).await?;
            verify_array(store, &array, (options, &layout), (&mut files, None), progress, &mut verdict).await?;
            finish(&array, &mut verdict);
            Ok::<_, ReadError>(())
        };
        if let Err(e) = part.await {
            verdict.error = Some(e.to_string());
        }
        verdicts.push(verdict);
    }
    Ok(verdicts)
}

impl ArrayVerdict {
    /// Nothing compared yet.
    fn new(path: &str) -> Self {
        let path = path.to_string();
        ArrayVerdict {
            path,
            elements: 0,
            mismatches: 0,
            first_mismatch: None,
            error: None,
            undefined_in_source: 0,
            oracle: None,
            unprovable: None,
        }
    }
}

/// The concatenation dimensions and the sources' boxes, indexed for lookups by source and by array.
struct Layout {
    dims: Vec<ConcatDimInfo>,
    boxes: Vec<SourceBox>,
    /// The boxes of each source, by index into `boxes`.
    by_source: std::collections::HashMap<u32, Vec<usize>>,
    /// The first box holding each array (an array without a concatenation dimension is compared with
    /// that file alone).
    first_holder: std::collections::HashMap<String, usize>,
}

impl Layout {
    fn of(store: &Store) -> Self {
        let (dims, boxes) = boxes(store);
        let mut by_source: std::collections::HashMap<u32, Vec<usize>> = Default::default();
        let mut first_holder = std::collections::HashMap::new();
        for (i, b) in boxes.iter().enumerate() {
            by_source.entry(b.source).or_default().push(i);
            for a in &b.arrays {
                first_holder.entry(a.clone()).or_insert(i);
            }
        }
        Layout { dims, boxes, by_source, first_holder }
    }

    /// The boxes holding `path` that are compared: every one when `concatenated`, else the first;
    /// with `only`, those of that source alone.
    fn holders<'a>(&'a self, path: &'a str, concatenated: bool, only: Option<u32>) -> Vec<&'a SourceBox> {
        if !concatenated {
            let first = self.first_holder.get(path).map(|&i| &self.boxes[i]);
            return first.filter(|b| only.is_none_or(|id| b.source == id)).into_iter().collect();
        }
        let holds = |b: &&SourceBox| b.arrays.iter().any(|a| a == path);
        match only {
            None => self.boxes.iter().filter(holds).collect(),
            Some(id) => {
                let mine = self.by_source.get(&id).map(Vec::as_slice).unwrap_or_default();
                mine.iter().map(|&i| &self.boxes[i]).filter(holds).collect()
            }
        }
    }
}

/// Once every source has been compared: an array some of whose elements no source provided fails.
fn finish(array: &crate::read::ArrayReader, verdict: &mut ArrayVerdict) {
    let total: u64 = array.shape().iter().product();
    let no_source = verdict.oracle.as_deref() == Some(NO_SOURCE);
    if verdict.elements < total && verdict.error.is_none() && verdict.unprovable.is_none() && !no_source {
        let what = if array.metadata().data_type == crate::metadata::DataType::String { "strings" } else { "elements" };
        verdict.error = Some(format!("{} of {total} {what} have a source to compare with", verdict.elements));
    }
}

/// Compares `array` with its sources (only source `only`, when given), adding to `verdict`.
async fn verify_array(
    store: &Store,
    array: &crate::read::ArrayReader,
    (options, layout): (&ReadOptions, &Layout),
    (files, only): (&mut Oracle, Option<u32>),
    progress: &(dyn Fn(&str, u64, u64) + Sync),
    verdict: &mut ArrayVerdict,
) -> Result<(), ReadError> {
    let path = array.path();
    let shape = array.shape();
    let total: u64 = shape.iter().product();
    let element_size = array.metadata().element_size() as u64;
    let dims = &layout.dims;
    if let Some(k) = dims.iter().position(|d| d.name == path && d.key != "coordinate") {
        return keys::verify_keys(store, array, (&dims[k], k), layout, (files, only), verdict).await;
    }
    if array.metadata().data_type == crate::metadata::DataType::String {
        return strings::verify_strings(store, array, layout, (files, only), verdict).await;
    }
    let names = array.metadata().dimension_names.clone().unwrap_or_default();
    let reencoded = store.info().provenance.reencoded.iter().any(|p| p == path);
    // Store axes of new dimensions lead; the file's axes follow.
    let lead = names.iter().take_while(|n| dims.iter().any(|d| d.name == **n && d.key != "coordinate")).count();
    let concatenated = names.iter().any(|n| dims.iter().any(|d| d.name == *n));
    // An array without any concatenation dimension was taken from one file: compare with that one.
    // Where the oracle finds no such variable there, a single-file array whose chunks lie in
    // another file of the store (a DMR++ sidecar's companion, BES's `_mvs.h5` for variables the
    // data file lacks) is compared with that file.
    let single_file = !concatenated && store.sources().len() >= 2;
    for b in layout.holders(path, concatenated, only) {
        let Some(location) = store.sources().get(b.source).map(|f| f.location.clone()) else {
            // A reference document naming no source file (every chunk inline): the document is the
            // data, and no library holds another copy to compare with. Never an empty path handed
            // to libnetcdf.
            verdict.oracle = Some(NO_SOURCE.into());
            return Ok(());
        };
        let (select, base) = box_selection(&shape, &names, dims, b, lead);
        let file_shape: Vec<u64> = (lead..shape.len()).map(|a| Selection(select.clone()).counts()[a]).collect();
        let mut found = look_up(files, &location, array);
        if found.is_err() && single_file {
            let own = referenced_source(array).await?.filter(|&s| s != b.source);
            if let Some(companion) = own.and_then(|s| store.sources().get(s).map(|f| f.location.clone())) {
                if let Ok(there) = look_up(files, &companion, array) {
                    found = Ok(there);
                }
            }
        }
        let (location, path, theirs) = match found {
            Ok(found) => found,
            Err(e) => return unprovable_or(files, &location, path, e, verdict),
        };
        let hdf5 = files.hdf5_facts(&location, path);
        // A compound's text fields may be narrower in this file than in the store (files combined).
        let text = match text_layout::source_text_layout(array, &hdf5.text_widths) {
            Ok(text) => text,
            Err(reason) => {
                verdict.error = Some(format!("{location}: {reason}"));
                return Ok(());
            }
        };
        let source_size = text.map_or(element_size, |(narrow, _)| narrow.size() as u64);
        if let Some(reason) = shape_mismatch(&file_shape, source_size, &theirs) {
            verdict.error = Some(format!("{location}: {reason}"));
            return Ok(());
        }
        if let Some(other) = files.other_oracle(&location, path) {
            verdict.oracle = Some(other.to_string());
        }
        if let Some(reason) = type_mismatch(array.metadata().data_type, files.numeric_type(&location, path), reencoded)
        {
            verdict.error = Some(format!("{location}: {path}: {reason}"));
            return Ok(());
        }
        if reencoded {
            let ours = array.read(&Selection(select.clone()), options).await?;
            let first = base.get(lead).copied().unwrap_or(0);
            compare_instants(store, &ours, files, (&location, path), first, verdict)
                .map_err(|e| oracle_error(&location, path, e))?;
            continue;
        }
        let undefined_unwritten = hdf5.fill_time_never;
        // libnetcdf reads a box that straddles the end of a variable's HDF5 dataset wrongly (past the
        // extent it may return memory it never wrote, where it reads the fill value for a box wholly
        // past it): boxes are cut at the extent.
        let boxes = comparison_boxes(&file_shape, element_size)
            .flat_map(|(starts, counts)| split_at_extent(starts, counts, hdf5.extent.as_deref()));
        for (starts, counts) in boxes {
            let mut sel = select.clone();
            for (k, (&start, &count)) in starts.iter().zip(&counts).enumerate() {
                let b = base[lead + k];
                sel[lead + k] = DimSelection::Range { start: b + start, stop: b + start + count, step: 1 };
            }
            let sel = Selection(sel);
            let ours = array.read(&sel, options).await?;
            // A 0-d array may be a netCDF string folded from a one-dimensional char variable: all of it.
            let mut theirs = match files.read(&location, path, &starts, &counts) {
                Ok(theirs) => theirs,
                Err(e) => return unprovable_or(files, &location, path, e, verdict),
            };
            if let Some((narrow, wide)) = text {
                let Some(widened) = narrow.widened(&theirs, wide) else {
                    verdict.error = Some(format!("{location}: the source's values do not fit the store's struct"));
                    return Ok(());
                };
                theirs = widened;
            }
            if undefined_unwritten {
                // Elements the source leaves undefined take the store's values: not compared.
                let skipped = take_unwritten(array, &sel, &ours.bytes, &mut theirs, element_size as usize).await?;
                verdict.undefined_in_source += skipped;
            }
            let origin: Vec<u64> = base[lead..].iter().zip(&starts).map(|(b, s)| b + s).collect();
            compare(&ours.bytes, &theirs, element_size as usize, &counts, &origin, verdict);
            progress(array.path(), verdict.elements, total);
        }
    }
    Ok(())
}

/// Where the oracle found an array's variable: the file, the path there, and its shape as the
/// oracle gives it.
type Found<'a> = (String, &'a str, (Vec<u64>, usize));

/// The array's variable in the file at `location`, under the array's path or the path the scan
/// recorded for it ([`dataset_named`]): (location, path, the oracle's shape), or the first error.
fn look_up<'a>(
    files: &mut Oracle,
    location: &str,
    array: &'a crate::read::ArrayReader,
) -> Result<Found<'a>, OracleError> {
    let first = match files.shape(location, array.path()) {
        Ok(theirs) => return Ok((location.to_string(), array.path(), theirs)),
        Err(e) => e,
    };
    match dataset_named(array).map(|p| (p, files.shape(location, p))) {
        Some((named, Ok(theirs))) => Ok((location.to_string(), named, theirs)),
        _ => Err(first),
    }
}

/// The source file the first referenced chunk of `array` lies in (among its first 4096 chunks;
/// None when none of them is referenced).
async fn referenced_source(array: &crate::read::ArrayReader) -> Result<Option<u32>, ReadError> {
    let n = array.metadata().chunk_grid.num_chunks().min(4096);
    let entries = array.entries(0..n).await?;
    Ok(entries.iter().find_map(|e| match e {
        crate::manifest::ChunkEntry::Source { source, .. } => Some(*source),
        _ => None,
    }))
}

/// The path the scan recorded for the array's variable in its source, when it named the array
/// otherwise (a DMR++ sidecar's DAP name, `Data_Fields/temperature` for the HDF5 dataset
/// `Data Fields/temperature`). Used only when the source has no variable at the array's path.
fn dataset_named(array: &crate::read::ArrayReader) -> Option<&str> {
    array.metadata().notes.source_path.as_deref().filter(|p| *p != array.path())
}

/// Why a store array of type `ours` cannot be proven equal to a source variable of the plain
/// numeric type `theirs`: equal bytes of another type are other values (an int32 of 1065353216 is
/// no float32 1.0). Arrays whose values vzarr re-encodes (time coordinates) and types that are not
/// plain numbers on either side are compared by their own rules.
fn type_mismatch(
    ours: crate::metadata::DataType,
    theirs: Option<crate::metadata::DataType>,
    reencoded: bool,
) -> Option<String> {
    use crate::metadata::DataType as D;
    let numeric = |t: D| {
        matches!(
            t,
            D::Int8
                | D::UInt8
                | D::Int16
                | D::UInt16
                | D::Int32
                | D::UInt32
                | D::Int64
                | D::UInt64
                | D::Float16
                | D::Float32
                | D::Float64
        )
    };
    let theirs = theirs?;
    if reencoded || !numeric(ours) || ours == theirs {
        return None;
    }
    let name = |t: D| t.to_json().as_str().map_or_else(|| t.to_json().to_string(), str::to_string);
    Some(format!("the store's data type {} is not the source's {}", name(ours), name(theirs)))
}

/// The oracle of `path` in the source at `location` when it is not the source's library: libaec for
/// an szip data set of a local HDF4 file whose libhdf4 has no szip decoder.
/// The oracle, in this process or in a worker, and the local copy it reads for a remote source.
struct Oracle {
    backend: Box<dyn Backend>,
    /// A remote source's location and its local copy (or why there is none).
    copy: Option<(String, Result<PathBuf, String>)>,
}

impl Oracle {
    /// The local file the oracle opens for `location`: its copy for the current remote source, the
    /// location itself for a local one. A remote source without a copy is an error: libnetcdf is
    /// never handed a URL.
    fn local(&self, location: &str) -> Result<String, OracleError> {
        match &self.copy {
            Some((url, copy)) if url == location => {
                copy.as_ref().map(|p| p.display().to_string()).map_err(|e| OracleError::NoLocalCopy(e.clone()))
            }
            _ if crate::source::local_path(location).is_none() => {
                Err(OracleError::NoLocalCopy("no local copy of this remote source".into()))
            }
            _ => Ok(location.to_string()),
        }
    }

    /// Reads `location` from now on from `copy` (or fails with the reason there is none).
    fn set_copy(&mut self, location: &str, copy: Result<PathBuf, String>) {
        self.copy = Some((location.to_string(), copy));
    }

    /// Closes the current copy (so that removing it frees its space) and forgets it.
    fn forget_copy(&mut self) {
        if let Some((_, Ok(path))) = self.copy.take() {
            self.backend.forget(&path.display().to_string());
        }
    }

    /// The values of variable `path` of `location` in the box `counts` from `starts` (C order), or
    /// all of them when `starts` is empty.
    fn read(&mut self, location: &str, path: &str, starts: &[u64], counts: &[u64]) -> Result<Vec<u8>, OracleError> {
        let location = &self.local(location)?;
        self.backend.read(location, path, starts, counts)
    }

    /// The strings of `string` variable `path` of `location`.
    fn read_strings(&mut self, location: &str, path: &str) -> Result<Vec<String>, OracleError> {
        let location = &self.local(location)?;
        self.backend.read_strings(location, path)
    }

    /// The element type of `path` of `location` when it is a plain number.
    fn numeric_type(&mut self, location: &str, path: &str) -> Option<crate::metadata::DataType> {
        let location = &self.local(location).ok()?;
        self.backend.numeric_type(location, path)
    }

    /// The shape and element size of `path` of `location`.
    fn shape(&mut self, location: &str, path: &str) -> Result<(Vec<u64>, usize), OracleError> {
        let location = &self.local(location)?;
        self.backend.shape(location, path)
    }

    /// What libhdf5 tells of the HDF5 dataset behind `path` of `location` (nothing when the oracle
    /// cannot tell: NetCDF-3, HDF4, libhdf5 refusing the file).
    fn hdf5_facts(&mut self, location: &str, path: &str) -> backend::Hdf5Facts {
        let Ok(location) = self.local(location) else { return backend::Hdf5Facts::default() };
        self.backend.hdf5_facts(&location, path).unwrap_or_default()
    }

    /// The oracle of `path` of `location` when not the source's own library, asked where the oracle
    /// runs: libhdf4 opens the file in the worker only.
    fn other_oracle(&mut self, location: &str, path: &str) -> Option<&'static str> {
        let location = self.local(location).ok()?;
        self.backend.other_oracle(&location, path)
    }

    /// A filter of dataset `path` of `location` that the oracle's libhdf5 lacks, if any.
    fn missing_filter(&mut self, location: &str, path: &str) -> Option<String> {
        let location = self.local(location).ok()?;
        self.backend.missing_filter(&location, path)
    }

    /// The values of `path` of `location` as f64, with their `units` and `calendar`.
    fn read_f64(&mut self, location: &str, path: &str) -> Result<TimeValues, OracleError> {
        let location = &self.local(location)?;
        self.backend.read_f64(location, path)
    }

    /// Global attribute `name` of the file of `location` (its copy for the current remote source).
    fn global_attribute(&mut self, location: &str, name: &str) -> Option<serde_json::Value> {
        let location = self.local(location).ok()?;
        self.backend.global_attribute(&location, name)
    }
}

/// The selection of the store array that `b`'s file provides (new dimensions, the first `lead`
/// axes, indexed; existing ones ranged), and the first index along every axis.
fn box_selection(
    shape: &[u64],
    names: &[String],
    dims: &[ConcatDimInfo],
    b: &SourceBox,
    lead: usize,
) -> (Vec<DimSelection>, Vec<u64>) {
    let mut base = vec![0u64; shape.len()];
    let mut select: Vec<DimSelection> =
        shape.iter().map(|&n| DimSelection::Range { start: 0, stop: n, step: 1 }).collect();
    for (k, d) in dims.iter().enumerate() {
        let Some(axis) = names.iter().position(|n| *n == d.name) else { continue };
        let Some(&(start, count)) = b.ranges.get(k) else { continue };
        base[axis] = start;
        select[axis] = if axis < lead {
            DimSelection::Index(start)
        } else {
            DimSelection::Range { start, stop: start + count, step: 1 }
        };
    }
    (select, base)
}

/// The concatenation dimensions and every source's box; stores written before several dimensions
/// were supported are described the same way from their one-dimensional provenance.
fn boxes(store: &Store) -> (Vec<ConcatDimInfo>, Vec<SourceBox>) {
    let provenance = &store.info().provenance;
    if !provenance.boxes.is_empty() {
        return (provenance.concat_dims.clone(), provenance.boxes.clone());
    }
    let all: Vec<String> = store.info().arrays.iter().map(|a| a.path.clone()).collect();
    let Some(dim) = &provenance.concat_dim else {
        let source = provenance.parts.first().map_or(0, |p| p.source);
        return (Vec::new(), vec![SourceBox { source, ranges: Vec::new(), arrays: all }]);
    };
    let dims = vec![ConcatDimInfo { name: dim.clone(), key: "coordinate".into() }];
    // Every box lists every array; arrays without the dimension are compared with the first only.
    let boxes = provenance
        .parts
        .iter()
        .map(|p| SourceBox { source: p.source, ranges: vec![(p.start, p.length)], arrays: all.clone() })
        .collect();
    (dims, boxes)
}

/// Where the oracle failed on `path` of `location` because its libhdf5 lacks a filter of the dataset:
/// `verdict` says the array is not provable here; else the oracle's error `e`.
fn unprovable_or(
    files: &mut Oracle,
    location: &str,
    path: &str,
    e: OracleError,
    verdict: &mut ArrayVerdict,
) -> Result<(), ReadError> {
    match files.missing_filter(location, path) {
        Some(filter) => {
            verdict.unprovable = Some(format!("not provable here: libhdf5 has no {filter}; set HDF5_PLUGIN_PATH"));
            Ok(())
        }
        None => Err(oracle_error(location, path, e)),
    }
}

fn oracle_error(location: &str, path: &str, e: OracleError) -> ReadError {
    let local = crate::source::local_path(location);
    let hdf4 = local.is_some_and(|l| matches!(crate::scan::detect_format(&l), Ok(crate::scan::FileFormat::Hdf4)));
    let library = if hdf4 { "libhdf4" } else { "libnetcdf" };
    ReadError::Store {
        location: location.to_string(),
        what: format!("{path}: reading the source with {library}"),
        source: e.into(),
    }
}

/// Compares a re-encoded time coordinate as instants: the store's values in the store's units against
/// the file's values in the file's units.
fn compare_instants(
    store: &Store,
    ours: &crate::read::ArrayData,
    oracle: &mut Oracle,
    (location, path): (&str, &str),
    first: u64,
    verdict: &mut ArrayVerdict,
) -> Result<(), OracleError> {
    let (theirs, mut their_units, mut their_calendar) = oracle.read_f64(location, path)?;
    let provenance = &store.info().provenance;
    let coordinate = provenance
        .concat_dims
        .iter()
        .map(|d| &d.name)
        .find(|d| provenance.reencoded.contains(d))
        .or(provenance.concat_dim.as_ref())
        .cloned()
        .unwrap_or_default();
    if their_units.is_none() {
        // A bounds variable shares its coordinate's units (CF 7.1): read them from the same file.
        let (_, units, calendar) = oracle.read_f64(location, &coordinate)?;
        (their_units, their_calendar) = (units, calendar);
    }
    let (store_units, store_calendar) = store.info().provenance.units.clone().unwrap_or_default();
    let parse = |u: &str, c: &Option<String>| {
        Calendar::parse(c.as_deref())
            .and_then(|cal| TimeUnits::parse(u, cal))
            .map_err(|e| OracleError::Value(e.to_string()))
    };
    let ours_units = parse(&store_units, &store_calendar)?;
    let file_units = parse(&their_units.unwrap_or(store_units.clone()), &their_calendar.or(store_calendar.clone()))?;
    let values = ours.to_f64_vec();
    for (i, (a, b)) in values.iter().zip(&theirs).enumerate() {
        let (x, y) = (ours_units.instant(*a), file_units.instant(*b));
        // Instants are seconds since the calendar's day 0 (about 2e11); f64 resolves them to about
        // 3e-5 s, so a millisecond tolerance allows rounding and nothing else.
        if (x - y).abs() > 1e-3 {
            verdict.mismatches += 1;
            if verdict.first_mismatch.is_none() {
                verdict.first_mismatch =
                    Some(format!("{coordinate} index {}: store instant {x} s, source instant {y} s", first + i as u64));
            }
        }
    }
    if values.len() != theirs.len() {
        verdict.error.get_or_insert(format!("store gave {} values, source {}", values.len(), theirs.len()));
    }
    verdict.elements += values.len().min(theirs.len()) as u64;
    Ok(())
}

/// Copies into `theirs` the store's values (`ours`, the read of `selection`) of the elements that
/// lie in chunks the store holds no data for (never written in the source); returns how many.
async fn take_unwritten(
    array: &crate::read::ArrayReader,
    selection: &Selection,
    ours: &[u8],
    theirs: &mut [u8],
    element_size: usize,
) -> Result<u64, ReadError> {
    let grid = &array.metadata().chunk_grid;
    let pieces =
        grid.pieces(selection).map_err(|source| ReadError::Selection { array: array.path().into(), source })?;
    let out_shape = selection.counts();
    let mut taken = 0u64;
    for span in grid.spans(&pieces) {
        let linear = grid.linear_index(&span.coords);
        if !matches!(array.entries(linear..linear + 1).await?.first(), Some(crate::manifest::ChunkEntry::Missing)) {
            continue;
        }
        // Every element of the span's box in the output, in C order.
        let counts: Vec<u64> = span.pieces.iter().map(|p| p.count).collect();
        let n: u64 = counts.iter().product();
        for i in 0..n {
            let index = unravel(i, &counts);
            let at = index
                .iter()
                .zip(&span.pieces)
                .zip(&out_shape)
                .fold(0u64, |acc, ((&k, piece), &extent)| acc * extent + piece.out_start + k);
            let range = at as usize * element_size..(at as usize + 1) * element_size;
            if let (Some(dst), Some(src)) = (theirs.get_mut(range.clone()), ours.get(range)) {
                dst.copy_from_slice(src);
                taken += 1;
            }
        }
    }
    Ok(taken)
}

fn compare(ours: &[u8], theirs: &[u8], element_size: usize, shape: &[u64], origin: &[u64], verdict: &mut ArrayVerdict) {
    let n = ours.len().min(theirs.len()) / element_size.max(1);
    if ours.len() != theirs.len() {
        verdict.error.get_or_insert(format!("store gave {} bytes, source {}", ours.len(), theirs.len()));
    }
    for i in 0..n {
        let (a, b) =
            (&ours[i * element_size..(i + 1) * element_size], &theirs[i * element_size..(i + 1) * element_size]);
        if a != b {
            verdict.mismatches += 1;
            if verdict.first_mismatch.is_none() {
                let index: Vec<u64> = unravel(i as u64, shape).iter().zip(origin).map(|(i, o)| i + o).collect();
                verdict.first_mismatch = Some(format!("index {index:?}: store {}, source {}", hex(a), hex(b)));
            }
        }
    }
    verdict.elements += n as u64;
}

/// Why a file's part of the store (`ours`: its shape in the store, element size) does not match the
/// variable in the file (`theirs`); `None` when it does. A 0-d store array may hold a netCDF string
/// folded from a one-dimensional char variable: only its element size is not compared.
fn shape_mismatch(ours: &[u64], element_size: u64, theirs: &(Vec<u64>, usize)) -> Option<String> {
    let (shape, size) = theirs;
    if ours.is_empty() && shape.len() <= 1 {
        return None;
    }
    // A netCDF char variable is stored as fixed-width strings: its last dimension is the element.
    let chars = shape.len() == ours.len() + 1 && shape.last().is_some_and(|n| n * *size as u64 == element_size);
    if chars && shape[..ours.len()] == *ours {
        return None;
    }
    if ours != shape.as_slice() {
        return Some(format!("the store gives this file's part shape {ours:?}, the file has {shape:?}"));
    }
    if element_size != *size as u64 {
        return Some(format!("the store has {element_size}-byte elements, the file {size}-byte ones"));
    }
    None
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().rev().map(|b| format!("{b:02x}")).collect::<String>().chars().fold(String::from("0x"), |mut s, c| {
        s.push(c);
        s
    })
}
