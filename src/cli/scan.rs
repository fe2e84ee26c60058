//! `vzarr scan`: expand inputs, scan (in parallel), combine along every `--concat` dimension (merging
//! files that hold different variables), write the store.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};

use super::args::{CombineArgs, ScanArgs, ScanFormat};
use super::progress::bar;
use super::Outcome;
use crate::pipeline::{write_dataset, Format, Written};
use crate::scan::scan_files;
use crate::store::{IcechunkOptions, OutputKind};
use crate::VirtualDataset;

pub(crate) fn run(args: ScanArgs) -> anyhow::Result<Outcome> {
    // Object-store inputs are listed and read on this runtime (remote reads block rayon workers on it).
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    let remote = args.remote.options();
    let files = input_files(&args.inputs, args.files_from.as_deref(), &remote, runtime.handle())?;
    // The concatenation dimensions reach the scan and the combine from one place.
    let options = Output::from(&args).archive().scan_options(runtime.handle());
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

impl Output<'_> {
    /// The library's view of the combine options (the concatenation dimensions given once).
    pub(crate) fn archive(&self) -> crate::pipeline::Archive {
        let mut archive = crate::pipeline::Archive::new(Vec::<OsString>::new())
            .drop_missing(self.combine.drop_missing)
            .first_global_attributes(self.combine.first_global_attributes)
            .skip_unsupported(self.skip_unsupported)
            .max_slab_bytes(self.max_slab_bytes)
            .remote(self.remote.clone())
            .max_concurrent_requests(self.max_concurrent_requests);
        for dim in &self.combine.concat {
            archive = archive.concat_dim(dim.clone());
        }
        for variable in &self.combine.take_first {
            archive = archive.take_first(variable.clone());
        }
        archive
    }

    /// Where and in what format the library writes.
    fn pipeline_output(&self) -> crate::pipeline::Output {
        let format = match self.combine.format {
            ScanFormat::Native => Format::Native,
            ScanFormat::KerchunkJson => Format::KerchunkJson { url_prefixes: self.combine.url_prefix.to_vec() },
            ScanFormat::Icechunk => Format::Icechunk(IcechunkOptions {
                branch: self.branch.unwrap_or("main").to_string(),
                message: self.message.map(str::to_string),
                commit_to_existing: self.branch.is_some() || self.message.is_some(),
                ..IcechunkOptions::default()
            }),
        };
        crate::pipeline::Output {
            location: self.combine.output.clone(),
            format,
            overwrite: self.combine.overwrite,
            remote: self.remote.clone(),
            max_concurrent_requests: self.max_concurrent_requests,
            other_inputs: self.other_inputs.clone(),
        }
    }
}

/// Combines the per-file scans (in input order) along every `--concat` dimension and writes the store.
pub(crate) fn combine_and_write(
    scanned: Vec<VirtualDataset>,
    files: usize,
    out: &Output<'_>,
) -> anyhow::Result<Outcome> {
    write_combined(out.archive().combine(scanned, files)?, out)
}

/// Writes the combined dataset and reports what was written.
pub(crate) fn write_combined(dataset: VirtualDataset, out: &Output<'_>) -> anyhow::Result<Outcome> {
    if out.combine.format != ScanFormat::Icechunk && (out.branch.is_some() || out.message.is_some()) {
        bail!("--branch and --message apply to --format icechunk only");
    }
    let written = write_dataset(&dataset, &out.pipeline_output())?;
    // As for every store scan writes: its sources' containers join the user's trust list.
    super::trust::trust_written(&written.source_containers());
    print_notes(&dataset);
    let (refs, owned) = (written.references(), written.owned_chunks());
    match &written {
        Written::Store(info) => {
            let owned_bytes: u64 = info.arrays.iter().map(|a| a.stats.owned_bytes).sum();
            let rewritten: u64 = info.arrays.iter().map(|a| a.rewritten_chunks).sum();
            outln!(
                "{}: {} arrays from {} file(s): {refs} chunk references, {owned} store-owned chunks ({owned_bytes} bytes; {rewritten} rewritten)",
                out.combine.output.display(),
                info.arrays.len(),
                info.sources
            );
        }
        Written::Icechunk(info) => {
            outln!(
                "{}: {} snapshot {} on branch {}: {} arrays from {} file(s): {refs} virtual references, {owned} store-owned chunks",
                info.repo,
                if info.created { "new repository," } else { "new" },
                info.snapshot,
                info.branch,
                info.arrays.len(),
                info.sources
            );
            outln!("virtual chunk containers to authorize when reading: {}", info.containers.join(" "));
        }
    }
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

/// Files named directly and the matches of glob patterns (see [`crate::inputs::expand_inputs`]).
pub(crate) fn expand_inputs(
    inputs: &[OsString],
    remote: &crate::source::RemoteOptions,
    runtime: &tokio::runtime::Handle,
) -> anyhow::Result<Vec<PathBuf>> {
    Ok(crate::inputs::expand_inputs(inputs, remote, runtime)?)
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
