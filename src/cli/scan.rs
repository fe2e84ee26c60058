//! `vzarr scan`: expand inputs, scan (in parallel), combine along every `--concat` dimension (merging
//! files that hold different variables), write the store.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};

use super::args::{CombineArgs, ScanArgs, ScanFormat};
use super::progress::bar;
use super::Outcome;
use crate::combine::{combine, natural_cmp, CombineOptions};
use crate::scan::{scan_files, ScanOptions};
use crate::store::{
    write_icechunk, IcechunkOptions, KerchunkWriter, NativeWriter, OutputKind, StoreInfo, WriteOptions, Writer,
};
use crate::VirtualDataset;

pub(crate) fn run(args: ScanArgs) -> anyhow::Result<Outcome> {
    // Object-store inputs are listed and read on this runtime (remote reads block rayon workers on it).
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    let remote = args.remote.options();
    let files = input_files(&args.inputs, args.files_from.as_deref(), &remote, runtime.handle())?;
    let options = ScanOptions {
        skip_unsupported: args.skip_unsupported,
        max_slab_bytes: args.max_slab_mib << 20,
        concat_dims: args.combine.concat.iter().map(|d| d.name.clone()).collect(),
        runtime: Some(runtime.handle().clone()),
        remote: remote.clone(),
        max_concurrent_requests: args.remote.max_concurrent_requests as usize,
        ..ScanOptions::default()
    };
    if files.len() > 1 && args.combine.concat.is_empty() {
        bail!("{} input files given: combining several files needs --concat DIM", files.len());
    }
    if let Some(shard) = super::merge::shard_of(&args)? {
        return super::merge::scan_shard(&args, &files, shard, &options);
    }
    if let Some(url) =
        super::output::remote_url(&args.combine.output).filter(|_| args.combine.format != ScanFormat::Icechunk)
    {
        // An object-store output that will be refused is refused before the scan.
        let kind = if args.combine.format == ScanFormat::KerchunkJson {
            OutputKind::KerchunkJson
        } else {
            OutputKind::VzarrStore
        };
        let inputs = files.iter().map(|f| f.to_string_lossy().into_owned()).filter(|f| crate::source::is_url(f));
        let target = super::output::RemoteTarget {
            url,
            kind,
            overwrite: args.combine.overwrite,
            inputs: inputs.collect(),
            remote: remote.clone(),
            max_concurrent: args.remote.max_concurrent_requests as usize,
        };
        target.check(runtime.handle())?;
    }
    let progress = bar(files.len() as u64, "scanning");
    let report = |done: usize, refs: u64| {
        progress.set_position(done as u64);
        progress.set_message(format!("{refs} references"));
    };
    let scanned = scan_files(&files, &options, &report);
    progress.finish_and_clear();
    let outcome = combine_and_write(scanned?, files.len(), &Output::from(&args))?;
    print_fetched(&options.fetched)?;
    Ok(outcome)
}

/// What scanning remote objects cost: requests, and bytes fetched against the objects' sizes.
pub(crate) fn print_fetched(totals: &crate::source::FetchTotals) -> anyhow::Result<()> {
    let (objects, size, fetched) = (totals.objects(), totals.object_bytes(), totals.stats());
    if objects > 0 {
        let share = 100.0 * fetched.bytes as f64 / size.max(1) as f64;
        outln!(
            "read {objects} remote file(s) of {size} bytes: {} requests, {} bytes fetched ({share:.2}%)",
            fetched.requests,
            fetched.bytes
        );
    }
    Ok(())
}

/// What to make of the scanned files, and where to write it (`scan`, and `merge` of a sharded scan).
pub(crate) struct Output<'a> {
    /// Where, in what format, and how the files are combined.
    pub(crate) combine: &'a CombineArgs,
    /// The scan options recorded in the store (for `append`).
    pub(crate) skip_unsupported: bool,
    pub(crate) max_slab_bytes: u64,
    /// Icechunk output: the branch and commit message (`None`: a new repository's `main`).
    pub(crate) branch: Option<&'a str>,
    pub(crate) message: Option<&'a str>,
    /// How an object-store output (an Icechunk repository or a store on S3) is reached.
    pub(crate) remote: crate::source::RemoteOptions,
    /// Uploads in flight at once for an object-store output.
    pub(crate) max_concurrent_requests: usize,
    /// Inputs an object-store output must not be nor contain, besides the sources (merge's parts).
    pub(crate) other_inputs: Vec<String>,
}

impl<'a> From<&'a ScanArgs> for Output<'a> {
    fn from(args: &'a ScanArgs) -> Self {
        Output {
            combine: &args.combine,
            skip_unsupported: args.skip_unsupported,
            max_slab_bytes: args.max_slab_mib << 20,
            branch: args.branch.as_deref(),
            message: args.message.as_deref(),
            remote: args.remote.options(),
            max_concurrent_requests: args.remote.max_concurrent_requests as usize,
            other_inputs: Vec::new(),
        }
    }
}

/// Combines the per-file scans (in input order) along every `--concat` dimension and writes the store.
pub(crate) fn combine_and_write(
    mut scanned: Vec<VirtualDataset>,
    files: usize,
    out: &Output<'_>,
) -> anyhow::Result<Outcome> {
    let dataset = if out.combine.concat.is_empty() {
        scanned.pop().context("no input file")?
    } else {
        let names: Vec<String> = out.combine.concat.iter().map(|d| d.name.clone()).collect();
        let options = CombineOptions {
            dims: out.combine.concat.to_vec(),
            take_first: out.combine.take_first.to_vec(),
            drop_missing: out.combine.drop_missing,
            history: Some(history_line(files, &names.join(", "))),
            first_global_attributes: out.combine.first_global_attributes,
        };
        let mut dataset = combine(scanned, &options)?;
        if let Some(recipe) = &mut dataset.provenance.recipe {
            recipe.skip_unsupported = out.skip_unsupported;
            recipe.max_slab_bytes = Some(out.max_slab_bytes);
        }
        dataset
    };
    if out.combine.format == ScanFormat::Icechunk {
        return scan_to_icechunk(out, &dataset);
    }
    if out.branch.is_some() || out.message.is_some() {
        bail!("--branch and --message apply to --format icechunk only");
    }
    let writer: Box<dyn Writer> = match out.combine.format {
        ScanFormat::Native | ScanFormat::Icechunk => Box::new(NativeWriter),
        ScanFormat::KerchunkJson => Box::new(KerchunkWriter { url_prefixes: out.combine.url_prefix.to_vec() }),
    };
    let info = write_output(writer.as_ref(), &dataset, out)
        .with_context(|| format!("writing {}", out.combine.output.display()))?;
    super::trust::trust_written(&info.source_containers);
    print_notes(&dataset);
    let refs: u64 = info.arrays.iter().map(|a| a.stats.referenced).sum();
    let owned: u64 = info.arrays.iter().map(|a| a.stats.owned).sum();
    let owned_bytes: u64 = info.arrays.iter().map(|a| a.stats.owned_bytes).sum();
    let rewritten: u64 = info.arrays.iter().map(|a| a.rewritten_chunks).sum();
    outln!(
        "{}: {} arrays from {} file(s): {refs} chunk references, {owned} store-owned chunks ({owned_bytes} bytes; {rewritten} rewritten)",
        out.combine.output.display(),
        info.arrays.len(),
        info.sources
    );
    Ok(if dataset.warnings.is_empty() { Outcome::Done } else { Outcome::Partial })
}

/// Writes `dataset` with `writer` at the output path, or for an object-store URL, locally first and
/// then uploaded (`store/publish_remote`).
fn write_output(writer: &dyn Writer, dataset: &VirtualDataset, out: &Output<'_>) -> anyhow::Result<StoreInfo> {
    let Some(url) = super::output::remote_url(&out.combine.output) else {
        return Ok(writer.write(dataset, &out.combine.output, &WriteOptions { overwrite: out.combine.overwrite })?);
    };
    let kind =
        if out.combine.format == ScanFormat::KerchunkJson { OutputKind::KerchunkJson } else { OutputKind::VzarrStore };
    let mut inputs = crate::store::url_sources(&dataset.sources);
    inputs.extend(out.other_inputs.iter().cloned());
    let target = super::output::RemoteTarget {
        url,
        kind,
        overwrite: out.combine.overwrite,
        inputs,
        remote: out.remote.clone(),
        max_concurrent: out.max_concurrent_requests,
    };
    target.write(|local| Ok(writer.write(dataset, local, &WriteOptions::default())?))
}

/// `--format icechunk`: one new snapshot of the repository at `--output`.
fn scan_to_icechunk(out: &Output<'_>, dataset: &VirtualDataset) -> anyhow::Result<Outcome> {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    let repo = out.combine.output.to_string_lossy().into_owned();
    let options = IcechunkOptions {
        branch: out.branch.unwrap_or("main").to_string(),
        message: out.message.map(str::to_string),
        commit_to_existing: out.branch.is_some() || out.message.is_some() || out.combine.overwrite,
        remote: out.remote.clone(),
        ..IcechunkOptions::default()
    };
    let info = runtime.block_on(write_icechunk(dataset, &repo, &options))?;
    // As for every store scan writes: its sources' containers join the user's trust list.
    super::trust::trust_written(&crate::trust::containers_of(&dataset.sources));
    print_notes(dataset);
    let refs: u64 = info.arrays.iter().map(|a| a.stats.referenced).sum();
    let owned: u64 = info.arrays.iter().map(|a| a.stats.owned).sum();
    outln!(
        "{repo}: {} snapshot {} on branch {}: {} arrays from {} file(s): {refs} virtual references, {owned} store-owned chunks",
        if info.created { "new repository," } else { "new" },
        info.snapshot,
        info.branch,
        info.arrays.len(),
        info.sources
    );
    outln!("virtual chunk containers to authorize when reading: {}", info.containers.join(" "));
    Ok(if dataset.warnings.is_empty() { Outcome::Done } else { Outcome::Partial })
}

fn print_notes(dataset: &VirtualDataset) {
    for warning in &dataset.warnings {
        eprintln!("warning: {warning}");
    }
    for gap in &dataset.provenance.gaps {
        eprintln!("note: gap: {gap}");
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

/// The files of the command line's inputs and of `--files-from` (see [`expand_inputs`]).
pub(crate) fn input_files(
    inputs: &[OsString],
    files_from: Option<&Path>,
    remote: &crate::source::RemoteOptions,
    runtime: &tokio::runtime::Handle,
) -> anyhow::Result<Vec<PathBuf>> {
    let mut inputs = inputs.to_vec();
    if let Some(list) = files_from {
        inputs.extend(read_list(list)?);
    }
    expand_inputs(&inputs, remote, runtime)
}

/// Files named directly, plus the matches of glob patterns, in natural order; duplicates removed. An
/// argument naming an existing path is that path, even when it contains `*`, `?` or `[`; only other
/// arguments (which must be UTF-8) are glob patterns. Object-store URL globs (`s3://bucket/cmip/*.nc`)
/// are listed on `runtime`; other URLs are taken as given (HTTP has no listing).
pub(crate) fn expand_inputs(
    inputs: &[OsString],
    remote: &crate::source::RemoteOptions,
    runtime: &tokio::runtime::Handle,
) -> anyhow::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for input in inputs {
        let path = PathBuf::from(input);
        let text = input.to_str();
        let pattern = text.filter(|s| s.contains(['*', '?', '[']));
        let url = text.filter(|s| crate::source::is_url(s));
        match (url, pattern) {
            (Some(url), Some(_)) => files.extend(list_url_matches(url, remote, runtime)?),
            (Some(_), None) => files.push(path),
            (None, Some(pattern)) if path.symlink_metadata().is_err() => files.extend(glob_matches(pattern)?),
            _ => files.push(path),
        }
    }
    files.sort_by(|a, b| natural_cmp(&a.to_string_lossy(), &b.to_string_lossy()));
    files.dedup();
    Ok(files)
}

/// The inputs listed in `list` (`-`: standard input), one a line; blank lines are skipped.
fn read_list(list: &std::path::Path) -> anyhow::Result<Vec<OsString>> {
    use std::io::Read;
    let mut text = String::new();
    if list.as_os_str() == "-" {
        std::io::stdin().read_to_string(&mut text).context("reading the input list from standard input")?;
    } else {
        text = std::fs::read_to_string(list).with_context(|| format!("{}: reading the input list", list.display()))?;
    }
    Ok(text.lines().map(str::trim).filter(|l| !l.is_empty()).map(OsString::from).collect())
}

/// The objects of an object store matching a URL glob: the prefix up to the first pattern character
/// is listed, and every key is matched against the pattern (`*` stops at `/`).
fn list_url_matches(
    pattern: &str,
    remote: &crate::source::RemoteOptions,
    runtime: &tokio::runtime::Handle,
) -> anyhow::Result<Vec<PathBuf>> {
    use futures::TryStreamExt;
    let (scheme, rest) = pattern.split_once("://").context("not a URL")?;
    let (bucket, key_pattern) = rest.split_once('/').with_context(|| format!("{pattern}: no object key"))?;
    if matches!(scheme, "http" | "https") {
        bail!("{pattern}: HTTP servers have no listing: give each URL (or --files-from)");
    }
    let base = url::Url::parse(&format!("{scheme}://{bucket}/")).with_context(|| format!("{pattern}: invalid URL"))?;
    let (store, _) = crate::source::store_for_url(&base, remote)?;
    let literal = &key_pattern[..key_pattern.find(['*', '?', '[']).unwrap_or(key_pattern.len())];
    let directory = literal.rsplit_once('/').map_or("", |(dir, _)| dir);
    let prefix = object_store::path::Path::from(directory);
    let listed: Vec<object_store::ObjectMeta> =
        runtime.block_on(store.list(Some(&prefix)).try_collect()).map_err(|e| {
            anyhow::anyhow!("{pattern}: listing {scheme}://{bucket}/{directory}: {}", crate::source::describe_error(&e))
        })?;
    let glob = glob::Pattern::new(key_pattern).with_context(|| format!("{pattern}: invalid glob pattern"))?;
    let options = glob::MatchOptions { require_literal_separator: true, ..glob::MatchOptions::new() };
    let matches: Vec<PathBuf> = listed
        .iter()
        .filter(|meta| glob.matches_with(meta.location.as_ref(), options))
        .map(|meta| PathBuf::from(format!("{scheme}://{bucket}/{}", meta.location)))
        .collect();
    if matches.is_empty() {
        bail!("{pattern}: no objects match");
    }
    Ok(matches)
}

fn glob_matches(pattern: &str) -> anyhow::Result<Vec<PathBuf>> {
    let matches = super::glob_walk::matches(pattern)?;
    if matches.is_empty() {
        bail!("{pattern}: no files match");
    }
    Ok(matches)
}
