//! [`Archive`]: inputs and how to combine them, scanned and combined in one call.

use std::ffi::OsString;
use std::path::PathBuf;

use super::PipelineError;
use crate::combine::{combine, CombineOptions, ConcatDim};
use crate::dataset::VirtualDataset;
use crate::parts::{inputs_digest, PartHeader, PartScanOptions, Shard};
use crate::scan::dmrpp::{with_sidecars, Sidecars};
use crate::scan::{scan_files, ScanOptions};
use crate::source::{FetchTotals, RemoteOptions};
use crate::trust::Authorization;

/// An archive to virtualize: its inputs, the dimensions its files are concatenated along (given
/// once), and the scan and combine options. Every setter documents its default.
#[derive(Debug, Clone)]
pub struct Archive {
    inputs: Vec<OsString>,
    concat: Vec<ConcatDim>,
    take_first: Vec<String>,
    drop_missing: bool,
    first_global_attributes: bool,
    skip_unsupported: bool,
    max_slab_bytes: u64,
    remote: RemoteOptions,
    max_concurrent_requests: usize,
    history: bool,
    link_authorization: Authorization,
    sidecars: Sidecars,
    owned_budget: crate::dataset::OwnedBytesBudget,
}

/// What [`Archive::scan`] produced.
#[derive(Debug, Clone)]
pub struct ScannedArchive {
    /// The combined dataset (one file's, when a single file was given without `concat`).
    pub dataset: VirtualDataset,
    /// The files scanned, in the order they were combined from.
    pub files: Vec<PathBuf>,
    /// Remote objects scanned and the requests and bytes it took.
    pub fetched: std::sync::Arc<FetchTotals>,
    /// How many files were scanned from their sidecars ([`Archive::sidecars`]).
    pub from_sidecars: usize,
}

impl Archive {
    /// An archive of these paths, URLs or glob patterns (local, or object-store URL patterns such as
    /// `s3://bucket/cmip/*.nc`), with no concatenation dimension yet.
    pub fn new<I, S>(inputs: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        let scan = ScanOptions::default();
        Archive {
            inputs: inputs.into_iter().map(Into::into).collect(),
            concat: Vec::new(),
            take_first: Vec::new(),
            drop_missing: false,
            first_global_attributes: false,
            skip_unsupported: scan.skip_unsupported,
            max_slab_bytes: scan.max_slab_bytes,
            remote: RemoteOptions::default(),
            max_concurrent_requests: scan.max_concurrent_requests,
            history: true,
            link_authorization: scan.link_authorization.clone(),
            sidecars: Sidecars::None,
            owned_budget: scan.owned_budget,
        }
    }

    /// Adds a concatenation dimension, outermost first: `DIM` (an existing dimension, files ordered
    /// by its coordinate), `DIM=attr:NAME` or `DIM=path:REGEX` (a new dimension keyed by a global
    /// attribute or by a capture group over the file name).
    ///
    /// # Errors
    /// [`PipelineError::Options`] for a spec that does not parse.
    pub fn concat(mut self, spec: &str) -> Result<Self, PipelineError> {
        self.concat.push(spec.parse().map_err(PipelineError::Options)?);
        Ok(self)
    }

    /// The same archive over other inputs.
    #[must_use]
    pub fn with_inputs<I, S>(mut self, inputs: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        self.inputs = inputs.into_iter().map(Into::into).collect();
        self
    }

    /// Adds a concatenation dimension given as a value.
    #[must_use]
    pub fn concat_dim(mut self, dim: ConcatDim) -> Self {
        self.concat.push(dim);
        self
    }

    /// Takes this variable (one without the concatenation dimensions) from the first file even where
    /// it differs in others. Default: every such variable must be identical in every file.
    #[must_use]
    pub fn take_first(mut self, variable: impl Into<String>) -> Self {
        self.take_first.push(variable.into());
        self
    }

    /// Leaves out (with a warning) variables missing from some files. Default: false (an error).
    #[must_use]
    pub fn drop_missing(mut self, drop: bool) -> Self {
        self.drop_missing = drop;
        self
    }

    /// Keeps the first file's global attributes where files differ. Default: false (those that
    /// differ are dropped).
    #[must_use]
    pub fn first_global_attributes(mut self, keep: bool) -> Self {
        self.first_global_attributes = keep;
        self
    }

    /// Leaves out (with a warning in the dataset) variables vzarr cannot virtualize. Default: false
    /// (the scan fails naming the file and variable).
    #[must_use]
    pub fn skip_unsupported(mut self, skip: bool) -> Self {
        self.skip_unsupported = skip;
        self
    }

    /// Contiguous variables larger than this are referenced as slabs of at most this many bytes.
    /// Default: 16 MiB.
    #[must_use]
    pub fn max_slab_bytes(mut self, bytes: u64) -> Self {
        self.max_slab_bytes = bytes;
        self
    }

    /// How object-store inputs are reached. Default: [`RemoteOptions::default`] (credentials and
    /// endpoints from the environment).
    #[must_use]
    pub fn remote(mut self, remote: RemoteOptions) -> Self {
        self.remote = remote;
        self
    }

    /// Object-store inputs scanned at once. Default: [`DEFAULT_SCANS_IN_FLIGHT`](crate::scan::DEFAULT_SCANS_IN_FLIGHT).
    #[must_use]
    pub fn max_concurrent_requests(mut self, n: usize) -> Self {
        self.max_concurrent_requests = n.max(1);
        self
    }

    /// Whether combining prepends vzarr's line to the root `history` attribute (CF 2.6.2). Default: true.
    #[must_use]
    pub fn history(mut self, add: bool) -> Self {
        self.history = add;
        self
    }

    /// The containers, besides each scanned file's own, that HDF5 external links and HDF4 external
    /// files may lead into. Default: none (only the scanned file's own container).
    #[must_use]
    pub fn link_authorization(mut self, authorization: Authorization) -> Self {
        self.link_authorization = authorization;
        self
    }

    /// Which sidecars are read in place of the files they describe: with [`Sidecars::Dmrpp`] a file
    /// with a `<file>.dmrpp` beside it is scanned from that sidecar. Default: [`Sidecars::None`].
    #[must_use]
    pub fn sidecars(mut self, sidecars: Sidecars) -> Self {
        self.sidecars = sidecars;
        self
    }

    /// The concatenation dimensions, outermost first.
    pub fn concat_dims(&self) -> &[ConcatDim] {
        &self.concat
    }

    /// The inputs as given.
    pub fn inputs(&self) -> &[OsString] {
        &self.inputs
    }

    /// How object-store inputs are reached.
    pub fn remote_options(&self) -> &RemoteOptions {
        &self.remote
    }

    /// The files the inputs name, expanded and in natural order.
    ///
    /// # Errors
    /// [`PipelineError::Inputs`] for a pattern that is invalid, matches nothing or cannot be listed.
    pub fn files(&self, runtime: &tokio::runtime::Handle) -> Result<Vec<PathBuf>, PipelineError> {
        Ok(crate::inputs::expand_inputs(&self.inputs, &self.remote, runtime)?)
    }

    /// Counts the chunk bytes the scan copies into the store in `budget` (past it they spill).
    /// Default: [`ScanOptions`]' (what `VZARR_OWNED_MEMORY` sets, else 64 MiB).
    pub fn owned_budget(mut self, budget: crate::dataset::OwnedBytesBudget) -> Self {
        self.owned_budget = budget;
        self
    }

    /// The budget of the chunk bytes copied into the store ([`Archive::owned_budget`]).
    pub fn owned_budget_of(&self) -> &crate::dataset::OwnedBytesBudget {
        &self.owned_budget
    }

    /// The options every file is scanned with: the concatenation dimensions among them.
    pub fn scan_options(&self, runtime: &tokio::runtime::Handle) -> ScanOptions {
        ScanOptions {
            skip_unsupported: self.skip_unsupported,
            max_slab_bytes: self.max_slab_bytes,
            concat_dims: self.concat.iter().map(|d| d.name.clone()).collect(),
            runtime: Some(runtime.clone()),
            remote: self.remote.clone(),
            max_concurrent_requests: self.max_concurrent_requests,
            link_authorization: self.link_authorization.clone(),
            owned_budget: self.owned_budget.clone(),
            ..ScanOptions::default()
        }
    }

    /// Expands the inputs, scans every file (in parallel) and combines them, on a runtime of its own.
    ///
    /// # Errors
    /// [`PipelineError`] naming the input, file, variable or option that failed.
    pub fn scan(&self) -> Result<ScannedArchive, PipelineError> {
        let runtime = super::runtime()?;
        self.scan_on(runtime.handle(), &|_, _| {})
    }

    /// [`Archive::scan`] on the caller's runtime (object-store inputs are read there; call it from
    /// outside the runtime's threads), calling `progress(files_done, references)` after each file.
    ///
    /// # Errors
    /// As [`Archive::scan`].
    pub fn scan_on(
        &self,
        runtime: &tokio::runtime::Handle,
        progress: &(dyn Fn(usize, u64) + Sync),
    ) -> Result<ScannedArchive, PipelineError> {
        let files = self.files(runtime)?;
        self.scan_files_on(runtime, files, progress)
    }

    /// [`Archive::scan_on`] over `files`, this archive's inputs already expanded
    /// ([`Archive::files`]: a caller that checks the files before scanning expands them once).
    ///
    /// # Errors
    /// As [`Archive::scan`].
    pub fn scan_files_on(
        &self,
        runtime: &tokio::runtime::Handle,
        files: Vec<PathBuf>,
        progress: &(dyn Fn(usize, u64) + Sync),
    ) -> Result<ScannedArchive, PipelineError> {
        self.check_file_count(files.len())?;
        let options = self.scan_options(runtime);
        let (scanned_paths, from_sidecars) = with_sidecars(&files, self.sidecars, &options);
        let scanned = scan_files(&scanned_paths, &options, progress)?;
        let dataset = self.combine(scanned, files.len())?;
        Ok(ScannedArchive { dataset, files, fetched: options.fetched, from_sidecars })
    }

    /// Scans shard `shard`'s slice of `files` (this archive's inputs, expanded: every shard of a run
    /// must be given the same list) into a part for [`Archive::merge_parts_on`]: the per-file scans,
    /// not combined, with the header that ties the part to its run. Combine options (`take_first`,
    /// `drop_missing`, ...) apply when the parts are merged.
    ///
    /// # Errors
    /// [`PipelineError::Scan`] naming the file that failed.
    pub fn scan_shard_on(
        &self,
        runtime: &tokio::runtime::Handle,
        files: &[PathBuf],
        shard: Shard,
        progress: &(dyn Fn(usize, u64) + Sync),
    ) -> Result<ScannedShard, PipelineError> {
        let range = shard.range(files.len());
        let locations: Vec<String> = files.iter().map(|f| recorded_location(f)).collect();
        let options = self.scan_options(runtime);
        let header = PartHeader {
            shard: shard.index,
            count: shard.count,
            inputs: files.len() as u64,
            first: range.start as u64,
            files: range.len() as u64,
            inputs_digest: inputs_digest(&locations),
            scan: PartScanOptions {
                concat_dims: options.concat_dims.clone(),
                skip_unsupported: options.skip_unsupported,
                max_slab_bytes: options.max_slab_bytes,
                digest_max_bytes: options.digest_max_bytes,
            },
            generator: concat!("vzarr ", env!("CARGO_PKG_VERSION")).into(),
        };
        let files = files[range].to_vec();
        let (scanned_paths, from_sidecars) = with_sidecars(&files, self.sidecars, &options);
        let datasets = scan_files(&scanned_paths, &options, progress)?;
        Ok(ScannedShard { header, datasets, files, fetched: options.fetched, from_sidecars })
    }

    /// Refuses several files without a concatenation dimension (before any is scanned).
    ///
    /// # Errors
    /// [`PipelineError::Options`].
    pub fn check_file_count(&self, files: usize) -> Result<(), PipelineError> {
        if files > 1 && self.concat.is_empty() {
            return Err(PipelineError::Options(format!(
                "{files} input files given: combining several files needs a concatenation dimension (--concat DIM)"
            )));
        }
        Ok(())
    }

    /// Combines per-file scans (in input order; `files` counts the archive's files, for the history
    /// line) along the concatenation dimensions, recording the scan options for later appends.
    ///
    /// # Errors
    /// [`PipelineError::Combine`], or [`PipelineError::Options`] for no dataset.
    pub fn combine(&self, mut scanned: Vec<VirtualDataset>, files: usize) -> Result<VirtualDataset, PipelineError> {
        if self.concat.is_empty() {
            return scanned.pop().ok_or_else(|| PipelineError::Options("no input file".into()));
        }
        let names: Vec<String> = self.concat.iter().map(|d| d.name.clone()).collect();
        let options = CombineOptions {
            dims: self.concat.clone(),
            take_first: self.take_first.clone(),
            drop_missing: self.drop_missing,
            history: self.history.then(|| history_line(files, &names.join(", "))),
            first_global_attributes: self.first_global_attributes,
        };
        let mut dataset = combine(scanned, &options)?;
        if let Some(recipe) = &mut dataset.provenance.recipe {
            recipe.skip_unsupported = self.skip_unsupported;
            recipe.max_slab_bytes = Some(self.max_slab_bytes);
        }
        Ok(dataset)
    }
}

/// What [`Archive::scan_shard_on`] produced: one shard's part of a sharded scan.
#[derive(Debug, Clone)]
pub struct ScannedShard {
    /// The part's header: which shard of how many, of which inputs, scanned how.
    pub header: PartHeader,
    /// The shard's files' scans, in input order (not combined).
    pub datasets: Vec<VirtualDataset>,
    /// The shard's files.
    pub files: Vec<PathBuf>,
    /// Remote objects scanned and the requests and bytes it took.
    pub fetched: std::sync::Arc<FetchTotals>,
    /// Files scanned from their DMR++ sidecars instead of themselves ([`Archive::sidecars`]).
    pub from_sidecars: usize,
}

impl ScannedShard {
    /// Writes the part to the local file `path` (atomically: a part is complete or absent).
    ///
    /// # Errors
    /// [`PipelineError::Parts`] when it cannot be written.
    pub fn write(&self, path: &std::path::Path) -> Result<(), PipelineError> {
        Ok(crate::parts::write_part(path, &self.header, &self.datasets)?)
    }

    /// The chunk entries of the shard's files.
    pub fn references(&self) -> usize {
        self.datasets.iter().flat_map(|d| &d.arrays).map(|a| a.chunks.len()).sum()
    }
}

/// An input as recorded for the inputs' digest: local paths made absolute, URLs as given.
fn recorded_location(file: &std::path::Path) -> String {
    match crate::source::Location::from(file) {
        crate::source::Location::Url(url) => url,
        crate::source::Location::Local(_) => std::path::absolute(file)
            .map_or_else(|_| file.to_string_lossy().into_owned(), |p| p.to_string_lossy().into_owned()),
    }
}

/// The root `history` line. Its time is `SOURCE_DATE_EPOCH` when set (reproducible outputs: a merged
/// sharded scan and a single scan are then the same bytes), else now.
pub(crate) fn history_line(files: usize, dim: &str) -> String {
    let epoch = std::env::var("SOURCE_DATE_EPOCH").ok().and_then(|s| s.trim().parse::<u64>().ok());
    let now = || std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let secs = epoch.unwrap_or_else(now);
    format!(
        "{secs} (seconds since 1970-01-01): vzarr {}: virtualized {files} files along {dim}",
        env!("CARGO_PKG_VERSION")
    )
}
