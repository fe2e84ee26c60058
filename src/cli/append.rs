//! `vzarr append`: load a native store, rescan its last file(s), scan the new files, plan the
//! combined dataset (`crate::append`), and put it in place of the old store in one atomic exchange.
//!
//! An Icechunk repository (a directory holding one, or an object-store URL) is loaded from its branch
//! without touching the old sources (`read_branch`; the files read again are checked against their
//! references' checksums), planned the same way, and committed as one new snapshot holding only what
//! changed (`update_icechunk`): a refused append writes nothing, an interrupted one leaves the
//! previous snapshot the branch's tip.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};

use super::args::AppendArgs;
use super::progress::bar;
use super::scan::{history_line, input_files};
use super::Outcome;
use crate::append::{files_to_rescan, load_native, plan_append, recorded_options, AppendOptions};
use crate::read::blocking::BlockingStore;
use crate::scan::scan_files;
use crate::store::{
    looks_like_repository, read_branch, refresh_sources, update_icechunk, IcechunkOptions, NativeWriter, OutputKind,
    WriteOptions, Writer, STORE_INFO_FILE,
};
use crate::{ReadOptions, Selection, VirtualDataset};

pub(crate) fn run(args: AppendArgs) -> anyhow::Result<Outcome> {
    let store = &args.store;
    let name = store.display().to_string();
    if crate::source::is_url(&name) || looks_like_repository(store) {
        return run_icechunk(&args, &name);
    }
    if args.branch.is_some() || args.message.is_some() {
        bail!("{name}: --branch and --message apply to Icechunk repositories only");
    }
    if store.symlink_metadata().is_err() {
        bail!("{name}: no such store (vzarr scan writes it first)");
    }
    if !OutputKind::VzarrStore.owns(store) {
        bail!("{name}: not a native vzarr store (append extends a *.vzarr directory written by vzarr scan)");
    }
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    let remote = args.remote.options();
    let files = input_files(&args.inputs, args.files_from.as_deref(), &remote, runtime.handle())?;
    let _lock = lock_store(store, &name)?;
    let info_before = std::fs::read(store.join(STORE_INFO_FILE)).with_context(|| format!("{name}: reading"))?;
    let stored = load_native(store)?;
    let recorded = recorded_options(&stored, &name)?;
    let last = files_to_rescan(&stored, &recorded, &name)?;
    let reader = |path: &str, rows: u64| read_stored(store, path, rows, &remote);
    let dataset = scan_and_plan(&stored, &name, &files, &last, &args, runtime.handle(), &reader)?;
    if std::fs::read(store.join(STORE_INFO_FILE)).ok().as_deref() != Some(&info_before[..]) {
        bail!("{name}: changed while appending (another writer?); nothing was written, run the append again");
    }
    let info = NativeWriter
        .write(&dataset, store, &WriteOptions { overwrite: true })
        .with_context(|| format!("writing {name}"))?;
    report_result(&dataset, &name, files.len(), info.sources)?;
    Ok(if dataset.warnings.is_empty() { Outcome::Done } else { Outcome::Partial })
}

/// Rescans `last` (stored files), scans the new `files`, and plans the combined dataset.
fn scan_and_plan(
    stored: &VirtualDataset,
    name: &str,
    files: &[PathBuf],
    last: &[String],
    args: &AppendArgs,
    runtime: &tokio::runtime::Handle,
    reader: &crate::append::CoordinateReader<'_>,
) -> anyhow::Result<VirtualDataset> {
    let recorded = recorded_options(stored, name)?;
    let last: Vec<PathBuf> = last.iter().map(PathBuf::from).collect();
    let options =
        crate::ScanOptions { runtime: Some(runtime.clone()), remote: args.remote.options(), ..recorded.scan.clone() };
    let progress = bar((files.len() + last.len()) as u64, "scanning");
    let report = |done: usize, _refs: u64| progress.set_position(done as u64);
    let rescanned = scan_files(&last, &options, &report).context("rescanning the last stored file");
    let new = rescanned.and_then(|last| Ok((last, scan_files(files, &options, &report)?)));
    progress.finish_and_clear();
    let (last, new) = new?;
    let dims: Vec<String> = recorded.combine.dim_names();
    let append_options = AppendOptions {
        allow_gaps: args.allow_gaps,
        history: Some(history_line(stored.sources.len() + files.len(), &dims.join(", "))),
    };
    Ok(plan_append(stored, last, new, &append_options, name, reader)?)
}

/// `vzarr append REPO`: one new commit on the branch (see the module docs).
fn run_icechunk(args: &AppendArgs, name: &str) -> anyhow::Result<Outcome> {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    let remote = args.remote.options();
    let files = input_files(&args.inputs, args.files_from.as_deref(), &remote, runtime.handle())?;
    let branch = args.branch.clone().unwrap_or_else(|| "main".into());
    let mut stored = runtime.block_on(read_branch(name, &branch, &remote))?;
    let recorded = recorded_options(&stored.dataset, name)?;
    let last = files_to_rescan(&stored.dataset, &recorded, name)?;
    runtime.block_on(refresh_sources(&mut stored, &last, &remote))?;
    let reader = |path: &str, rows: u64| read_repository(&runtime, name, &branch, path, rows, &remote);
    let dataset = scan_and_plan(&stored.dataset, name, &files, &last, args, runtime.handle(), &reader)?;
    let options = IcechunkOptions {
        branch,
        message: Some(args.message.clone().unwrap_or_else(|| append_message(&files))),
        commit_to_existing: true,
        remote,
        ..IcechunkOptions::default()
    };
    let info = runtime.block_on(update_icechunk(&stored, &dataset, name, &options))?;
    report_result(&dataset, name, files.len(), info.sources)?;
    outln!("{name}: new snapshot {} on branch {}", info.snapshot, info.branch);
    Ok(if dataset.warnings.is_empty() { Outcome::Done } else { Outcome::Partial })
}

/// The default commit message: `vzarr append:` and the new files' names (the first ten).
fn append_message(files: &[PathBuf]) -> String {
    let names: Vec<String> = files
        .iter()
        .take(10)
        .map(|f| f.file_name().map_or_else(|| f.display().to_string(), |n| n.to_string_lossy().into_owned()))
        .collect();
    let more = if files.len() > 10 { format!(" and {} more", files.len() - 10) } else { String::new() };
    format!("vzarr append: {}{more}", names.join(", "))
}

/// The first `rows` rows of an array on the repository's branch (its sources must be in place).
fn read_repository(
    runtime: &tokio::runtime::Runtime,
    repo: &str,
    branch: &str,
    path: &str,
    rows: u64,
    remote: &crate::source::RemoteOptions,
) -> Result<Vec<f64>, String> {
    if rows == 0 {
        return Ok(Vec::new());
    }
    runtime.block_on(async {
        let authorization = super::trust::authorization(&[]).map_err(|e| e.to_string())?;
        let opened = super::open::open_store(repo, Some(branch), &authorization, true, remote)
            .await
            .map_err(|e| e.to_string())?;
        let array = opened.store.array(path).await.map_err(|e| e.to_string())?;
        let selection = Selection::parse(&format!("0:{rows}"), &array.shape()).map_err(|e| e.to_string())?;
        let data = array.read(&selection, &ReadOptions::default()).await.map_err(|e| e.to_string())?;
        Ok(data.to_f64_vec())
    })
}

fn report_result(dataset: &VirtualDataset, name: &str, added: usize, sources: u64) -> anyhow::Result<()> {
    for warning in &dataset.warnings {
        eprintln!("warning: {warning}");
    }
    for gap in &dataset.provenance.gaps {
        eprintln!("note: gap: {gap}");
    }
    outln!("{name}: appended {added} file(s); {sources} files in the store");
    Ok(())
}

/// An exclusive lock on the store directory, held until the process ends or the lock is dropped: a
/// second append of the same store fails at once instead of losing one of the two updates. The lock
/// is on the directory's inode, which the append replaces: after locking, the path must still name
/// the locked directory (else a previous append just replaced it, and the new one is locked).
fn lock_store(store: &Path, name: &str) -> anyhow::Result<std::fs::File> {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::MetadataExt;
    for _ in 0..10 {
        let dir = std::fs::File::open(store).with_context(|| format!("{name}: opening"))?;
        // SAFETY: flock on a descriptor this function owns; no memory is passed.
        if unsafe { libc::flock(dir.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            let err = std::io::Error::last_os_error();
            if err.raw_os_error() == Some(libc::EWOULDBLOCK) {
                bail!("{name}: another append to this store is running; nothing was written");
            }
            return Err(err).with_context(|| format!("{name}: locking"));
        }
        let same = std::fs::metadata(store).map(|m| m.ino()).ok() == dir.metadata().map(|m| m.ino()).ok();
        if same {
            return Ok(dir);
        }
    }
    bail!("{name}: replaced repeatedly while locking it; nothing was written")
}

/// The first `rows` rows of a stored array, read through the store (its sources when referenced).
fn read_stored(store: &Path, path: &str, rows: u64, remote: &crate::source::RemoteOptions) -> Result<Vec<f64>, String> {
    if rows == 0 {
        return Ok(Vec::new());
    }
    let authorization = super::trust::authorization(&[]).map_err(|e| e.to_string())?;
    let options = crate::read::OpenOptions::new(authorization).with_remote(remote.clone());
    let opened = BlockingStore::open_with(&store.display().to_string(), &options).map_err(|e| e.to_string())?;
    let array = opened.array(path).map_err(|e| e.to_string())?;
    let selection = Selection::parse(&format!("0:{rows}"), &array.reader().shape()).map_err(|e| e.to_string())?;
    let data = array.read(&selection, &ReadOptions::default()).map_err(|e| e.to_string())?;
    Ok(data.to_f64_vec())
}
