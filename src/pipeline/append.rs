//! Appending new files to a store ([`Archive::append_to`]): a native store is loaded, its last file(s)
//! rescanned, the new files scanned, the combined dataset planned (`crate::append`) and put in place of
//! the old store in one atomic exchange, under a lock that refuses a concurrent append. An Icechunk
//! repository is loaded from its branch without touching the old sources (the files read again are
//! checked against their references' checksums) and gets one new snapshot holding only what changed: a
//! refused append writes nothing, an interrupted one leaves the previous snapshot the branch's tip.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use super::{Archive, PipelineError};
use crate::append::{files_to_rescan, load_native, plan_append, recorded_options, AppendOptions, CoordinateReader};
use crate::dataset::VirtualDataset;
use crate::formats::NativeWriter;
use crate::grid::Selection;
use crate::read::blocking::BlockingStore;
use crate::read::{OpenOptions, ReadOptions};
use crate::scan::scan_files;
use crate::source::DirectoryAlias;
use crate::store::{OutputKind, WriteOptions, Writer, STORE_INFO_FILE};
use crate::trust::Authorization;

/// How [`Archive::append_to`] appends. Every field documents its default.
#[derive(Debug, Clone, Default)]
pub struct AppendTo {
    /// Accept new files that open a gap in a store that has none. Default: false (refused).
    pub allow_gaps: bool,
    /// Icechunk repositories: the branch committed to. Default: `main`.
    pub branch: Option<String>,
    /// Icechunk repositories: the commit message. Default: `vzarr append:` and the new files' names.
    pub message: Option<String>,
    /// Keep a grid along this dimension (`("time", month)`): the appended steps fold into the last
    /// stored chunk until it holds a whole period (month, season, year, day, a duration, a group of
    /// `by:VAR`, or a number of steps), then into the next, in the same atomic write or commit.
    /// Only the last stored period and the new steps are read. Default: `None` (the new files'
    /// chunks are added as they are).
    pub chunks: Option<(String, crate::chunking::ChunkLength)>,
}

/// What [`Archive::append_to`] did.
#[derive(Debug, Clone)]
pub struct Appended {
    /// The store's dataset after the append.
    pub dataset: VirtualDataset,
    /// New files appended.
    pub files: usize,
    /// Source files in the store after the append.
    pub sources: u64,
    /// Icechunk repositories: the new snapshot and its branch.
    pub snapshot: Option<(String, String)>,
    /// The containers (location prefixes) holding the store's sources after the append, which a
    /// reader must authorize: the new files' among them.
    pub source_containers: Vec<String>,
    /// With [`AppendTo::chunks`]: every array whose chunks were folded to keep the grid, its edges
    /// before the fold (the appended chunks added as they are) and after.
    pub folds: Vec<crate::compact::ArrayFold>,
}

/// The appended dataset with its steps folded into the grid `options.chunks` asks for.
fn keep_grid(
    dataset: VirtualDataset,
    stored: &VirtualDataset,
    options: &AppendTo,
    store: &str,
    runtime: &tokio::runtime::Handle,
) -> Result<(VirtualDataset, Vec<crate::compact::ArrayFold>), PipelineError> {
    let Some((dim, length)) = &options.chunks else { return Ok((dataset, Vec::new())) };
    // The dimension's extent before the append: only its last period is read again.
    let stored_extent = stored
        .arrays
        .iter()
        .filter_map(|a| {
            let axis = a.metadata.dimension_names.as_ref()?.iter().position(|n| n == dim)?;
            Some(a.metadata.shape()[axis])
        })
        .max()
        .unwrap_or(0);
    Ok(crate::compact::fold_appended(dataset, dim, length, stored_extent, store, runtime).map_err(Box::new)?)
}

impl Archive {
    /// Appends the archive's inputs (new files after the store's end along its concatenation
    /// dimension) to the store at `store`: a native store directory, or an Icechunk repository (a
    /// directory holding one, or an object-store URL). The store's recorded scan and combine options
    /// apply; the archive gives the inputs and how object stores are reached. `progress(files_done)`
    /// is called as files are scanned.
    ///
    /// # Errors
    /// [`PipelineError::Store`] for a missing or busy store, [`PipelineError::Append`] for files that
    /// do not follow the store's end, and the scan and write errors; nothing is written on error.
    pub fn append_to(
        &self,
        store: &(impl AsRef<OsStr> + ?Sized),
        options: &AppendTo,
        runtime: &tokio::runtime::Handle,
        progress: &(dyn Fn(usize) + Sync),
    ) -> Result<Appended, PipelineError> {
        let path = Path::new(store.as_ref());
        let name = path.to_string_lossy().into_owned();
        let store = name.as_str();
        let refuse = |reason: &str| PipelineError::Store { store: store.to_string(), reason: reason.to_string() };
        // A local store whose name is not UTF-8 is read (and an Icechunk repository committed to)
        // through a descriptor of its directory: object_store paths are UTF-8.
        let alias = match path.to_str() {
            Some(_) => None,
            None => Some(DirectoryAlias::open(path.as_os_str()).map_err(|e| refuse(&format!("opening: {e}")))?),
        };
        let location = alias.as_ref().map_or(store, DirectoryAlias::path);
        #[cfg(feature = "icechunk")]
        {
            let at = crate::source::Location::parse(location);
            if at.is_url() || at.local_path().is_some_and(crate::formats::looks_like_repository) {
                return self.append_to_repository(&at, location, options, runtime, progress).map_err(
                    |e| match &alias {
                        Some(alias) => refuse(&alias.unalias(&e.to_string(), path.as_os_str())),
                        None => e,
                    },
                );
            }
        }
        if options.branch.is_some() || options.message.is_some() {
            return Err(refuse("a branch and message apply to Icechunk repositories only"));
        }
        if path.symlink_metadata().is_err() {
            return Err(refuse("no such store (scan writes it first)"));
        }
        if !OutputKind::VzarrStore.owns(path) {
            return Err(refuse("not a native vzarr store (append extends a *.vzarr directory that scan wrote)"));
        }
        let files = self.files(runtime)?;
        let _lock = lock_store(path, store)?;
        let info_before = std::fs::read(path.join(STORE_INFO_FILE))
            .map_err(|e| PipelineError::Store { store: store.to_string(), reason: format!("reading: {e}") })?;
        let stored = load_native(path, self.owned_budget_of())?;
        let recorded = recorded_options(&stored, store)?;
        let last = files_to_rescan(&stored, &recorded, store)?;
        let remote = self.remote_options().clone();
        let reader = |array: &str, rows: u64| {
            let rows = read_rows(location, None, array, rows, &remote);
            rows.map_err(|e| alias.as_ref().map_or(e.clone(), |a| a.unalias(&e, path.as_os_str())))
        };
        let dataset = self.scan_and_plan(&stored, store, &files, &last, options, runtime, &reader, progress)?;
        let (dataset, folds) = keep_grid(dataset, &stored, options, store, runtime)?;
        if std::fs::read(path.join(STORE_INFO_FILE)).ok().as_deref() != Some(&info_before[..]) {
            return Err(refuse("changed while appending (another writer?); nothing was written, run the append again"));
        }
        let info = NativeWriter
            .write(&dataset, path, &WriteOptions { overwrite: true })
            .map_err(|source| PipelineError::Write { output: store.to_string(), source })?;
        Ok(Appended {
            dataset,
            files: files.len(),
            sources: info.sources,
            snapshot: None,
            source_containers: info.source_containers,
            folds,
        })
    }

    /// [`Archive::append_to`] for an Icechunk repository: one new commit on the branch.
    #[cfg(feature = "icechunk")]
    fn append_to_repository(
        &self,
        at: &crate::source::Location,
        repo: &str,
        options: &AppendTo,
        runtime: &tokio::runtime::Handle,
        progress: &(dyn Fn(usize) + Sync),
    ) -> Result<Appended, PipelineError> {
        use crate::formats::{read_branch_in, refresh_sources};
        use crate::formats::{update_icechunk, IcechunkOptions};
        let files = self.files(runtime)?;
        // A local repository is locked like a native store: Icechunk's compare-and-swap of the branch
        // is not atomic on a local file system, and two appends could both "succeed" with one commit
        // lost. On object stores the branch moves by a conditional write; a lost race is refused.
        let _lock = match at.local_path() {
            Some(path) => Some(lock_store(path, repo)?),
            None => None,
        };
        let remote = self.remote_options().clone();
        let branch = options.branch.clone().unwrap_or_else(|| "main".into());
        let mut stored = runtime.block_on(read_branch_in(repo, &branch, &remote, self.owned_budget_of()))?;
        let recorded = recorded_options(&stored.dataset, repo)?;
        let last = files_to_rescan(&stored.dataset, &recorded, repo)?;
        runtime.block_on(refresh_sources(&mut stored, &last, &remote))?;
        let reader = |array: &str, rows: u64| read_rows(repo, Some(&branch), array, rows, &remote);
        let dataset = self.scan_and_plan(&stored.dataset, repo, &files, &last, options, runtime, &reader, progress)?;
        let (dataset, folds) = keep_grid(dataset, &stored.dataset, options, repo, runtime)?;
        let commit = IcechunkOptions {
            branch,
            message: Some(options.message.clone().unwrap_or_else(|| append_message(&files))),
            commit_to_existing: true,
            remote,
            ..IcechunkOptions::default()
        };
        let info = runtime.block_on(update_icechunk(&stored, &dataset, repo, &commit))?;
        Ok(Appended {
            dataset,
            files: files.len(),
            sources: info.sources,
            snapshot: Some((info.snapshot, info.branch)),
            source_containers: info.containers,
            folds,
        })
    }

    /// Rescans `last` (stored files), scans the new `files`, and plans the combined dataset.
    #[allow(clippy::too_many_arguments)] // one call site per store kind, each argument distinct
    fn scan_and_plan(
        &self,
        stored: &VirtualDataset,
        name: &str,
        files: &[PathBuf],
        last: &[String],
        options: &AppendTo,
        runtime: &tokio::runtime::Handle,
        reader: &CoordinateReader<'_>,
        progress: &(dyn Fn(usize) + Sync),
    ) -> Result<VirtualDataset, PipelineError> {
        let recorded = recorded_options(stored, name)?;
        let last: Vec<PathBuf> = last.iter().map(PathBuf::from).collect();
        let scan = crate::ScanOptions {
            runtime: Some(runtime.clone()),
            remote: self.remote_options().clone(),
            max_concurrent_requests: self.scan_options(runtime).max_concurrent_requests,
            ..recorded.scan.clone()
        };
        let report = |done: usize, _refs: u64| progress(done);
        let last = scan_files(&last, &scan, &report)?;
        let new = scan_files(files, &scan, &report)?;
        let dims: Vec<String> = recorded.combine.dim_names();
        let append = AppendOptions {
            allow_gaps: options.allow_gaps,
            history: Some(super::archive::history_line(stored.sources.len() + files.len(), &dims.join(", "))),
        };
        Ok(plan_append(stored, last, new, &append, name, reader)?)
    }
}

/// The default commit message: `vzarr append:` and the new files' names (the first ten).
#[cfg(feature = "icechunk")]
fn append_message(files: &[PathBuf]) -> String {
    let names: Vec<String> = files
        .iter()
        .take(10)
        .map(|f| f.file_name().map_or_else(|| f.display().to_string(), |n| n.to_string_lossy().into_owned()))
        .collect();
    let more = if files.len() > 10 { format!(" and {} more", files.len() - 10) } else { String::new() };
    format!("vzarr append: {}{more}", names.join(", "))
}

/// The first `rows` rows of an array of the store (a repository's `branch`), read through the store
/// with the user's trust list (its sources must be in place).
fn read_rows(
    store: &str,
    branch: Option<&str>,
    array: &str,
    rows: u64,
    remote: &crate::source::RemoteOptions,
) -> Result<Vec<f64>, String> {
    if rows == 0 {
        return Ok(Vec::new());
    }
    let authorization = Authorization::from_user_config().map_err(|e| e.to_string())?;
    let mut options = OpenOptions::new(authorization).with_remote(remote.clone());
    options.branch = branch.map(str::to_string);
    let opened = BlockingStore::open_with(store, &options).map_err(|e| e.to_string())?;
    let reader = opened.array(array).map_err(|e| e.to_string())?;
    let selection = Selection::parse(&format!("0:{rows}"), &reader.reader().shape()).map_err(|e| e.to_string())?;
    let data = reader.read(&selection, &ReadOptions::default()).map_err(|e| e.to_string())?;
    Ok(data.to_f64_vec())
}

/// [`lock`](crate::store::lock) as an append reports it.
fn lock_store(store: &Path, name: &str) -> Result<std::fs::File, PipelineError> {
    crate::store::lock(store).map_err(|e| PipelineError::Store { store: name.to_string(), reason: e.reason })
}
