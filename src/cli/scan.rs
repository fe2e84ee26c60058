//! `vzarr scan`: expand inputs, scan (in parallel), combine along every `--concat` dimension (merging
//! files that hold different variables), write the store.

use std::ffi::OsString;
use std::path::Path;

use anyhow::Context;

use super::args::{ScanArgs, SidecarKind};
use super::progress::bar;
use super::write::{write_combined, Output};
use super::Outcome;
use crate::scan::dmrpp::Sidecars;
use crate::store::OutputKind;
use crate::store::StoreFormat;

pub(crate) fn run(args: ScanArgs) -> anyhow::Result<Outcome> {
    // Object-store inputs are listed and read on this runtime (remote reads block rayon workers on it).
    let runtime = crate::pipeline::runtime()?;
    let mut inputs = args.inputs.clone();
    if let Some(list) = args.files_from.as_deref() {
        inputs.extend(read_list(list)?);
    }
    // HDF5 external links may lead into the containers the user trusts, besides the inputs' own.
    let sidecars = match args.sidecars {
        Some(SidecarKind::Dmrpp) => Sidecars::Dmrpp,
        None => Sidecars::None,
    };
    let archive = Output::from(&args)
        .archive()
        .with_inputs(inputs)
        .link_authorization(super::trust::authorization(&[])?)
        .sidecars(sidecars);
    if args.combine.format == StoreFormat::Dmrpp {
        // One sidecar per file: nothing is combined.
        return super::sidecars::run(&args, &archive, runtime.handle());
    }
    let files = archive.files(runtime.handle())?;
    archive.check_file_count(files.len())?;
    if let Some(shard) = super::merge::shard_of(&args)? {
        return super::merge::scan_shard(&args, &archive, &files, shard, runtime.handle());
    }
    if let Some(url) =
        super::output::remote_url(&args.combine.output).filter(|_| args.combine.format != StoreFormat::Icechunk)
    {
        // An object-store output that will be refused is refused before the scan.
        let kind = args.combine.format.output_kind().unwrap_or(OutputKind::VzarrStore);
        let inputs = crate::source::urls_of(&files);
        let target = super::output::RemoteTarget {
            url,
            kind,
            overwrite: args.combine.overwrite,
            inputs,
            remote: args.remote.options(),
            max_concurrent: super::args::requests_at_once(args.remote.max_concurrent_requests),
        };
        target.check(runtime.handle())?;
    }
    let progress = bar(files.len() as u64, "scanning");
    let report = |done: usize, refs: u64| {
        progress.set_position(done as u64);
        progress.set_message(format!("{refs} references"));
    };
    let scanned = archive.scan_files_on(runtime.handle(), files, &report);
    progress.finish_and_clear();
    let scanned = scanned?;
    if args.sidecars.is_some() {
        outln!(
            "scanned {} of {} file(s) from their DMR++ sidecars (<file>.dmrpp), the others from the files",
            scanned.from_sidecars,
            scanned.files.len()
        );
    }
    let outcome = write_combined(scanned.dataset, &Output::from(&args))?;
    print_fetched(&scanned.fetched)?;
    Ok(outcome)
}

/// What scanning remote objects cost: requests, and bytes fetched against the objects' sizes.
pub(crate) fn print_fetched(totals: &crate::source::FetchTotals) -> anyhow::Result<()> {
    let (objects, size, fetched) = (totals.objects(), totals.object_bytes(), totals.stats());
    if objects > 0 {
        let share = 100.0 * fetched.bytes as f64 / size.max(1) as f64;
        outln!(
            "read {objects} remote file(s) of {size} bytes: {} requests in {:.1} round trips per file, {} bytes \
             fetched ({share:.2}%)",
            fetched.requests,
            fetched.rounds as f64 / objects as f64,
            fetched.bytes
        );
    }
    Ok(())
}

/// The files of the command line's inputs and of `--files-from`, expanded
/// ([`crate::inputs::expand_inputs`]): what `append` adds.
pub(crate) fn input_files(
    inputs: &[OsString],
    files_from: Option<&Path>,
    remote: &crate::source::RemoteOptions,
    runtime: &tokio::runtime::Handle,
) -> anyhow::Result<Vec<std::path::PathBuf>> {
    let mut inputs = inputs.to_vec();
    if let Some(list) = files_from {
        inputs.extend(read_list(list)?);
    }
    Ok(crate::inputs::expand_inputs(&inputs, remote, runtime)?)
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
