//! `vzarr scan FILES --format dmrpp -o DIR`: one DMR++ sidecar per input file, `DIR/<file name>.dmrpp`,
//! each from that file's own scan (nothing is combined). The scan is the same as for any other format,
//! so writing sidecars for an archive costs what scanning it does.

use anyhow::{bail, Context};

use super::args::ScanArgs;
use super::progress::bar;
use super::Outcome;
use crate::formats::{sidecar_name, DmrppWriter};
use crate::scan::{scan_files, ScanOptions};
use crate::store::{WriteOptions, Writer};

/// Scans `files` and writes each one's sidecar into the `--output` directory (created when missing).
pub(crate) fn run(args: &ScanArgs, files: &[std::path::PathBuf], options: &ScanOptions) -> anyhow::Result<Outcome> {
    let dir = &args.combine.output;
    if super::output::remote_url(dir).is_some() {
        bail!("{}: --format dmrpp writes sidecars into a local directory", dir.display());
    }
    if dir.exists() && !dir.is_dir() {
        bail!("{}: --format dmrpp writes into a directory, and this is not one", dir.display());
    }
    let progress = bar(files.len() as u64, "scanning");
    let report = |done: usize, refs: u64| {
        progress.set_position(done as u64);
        progress.set_message(format!("{refs} references"));
    };
    let scanned = scan_files(files, options, &report);
    progress.finish_and_clear();
    let scanned = scanned?;
    std::fs::create_dir_all(dir).with_context(|| format!("{}: creating the output directory", dir.display()))?;
    let writer = DmrppWriter { url_prefixes: args.combine.url_prefix.clone() };
    let write_options = WriteOptions { overwrite: args.combine.overwrite };
    let mut outcome = Outcome::Done;
    for dataset in &scanned {
        let location = dataset.sources.get(0).map(|s| s.location.as_str()).unwrap_or_default();
        let destination = dir.join(sidecar_name(location));
        let info = writer.write(dataset, &destination, &write_options)?;
        for warning in &info.warnings {
            errln!("warning: {warning}");
            outcome = Outcome::Partial;
        }
        outln!("{}: {} variables", destination.display(), info.arrays.len());
    }
    super::trust::trust_written(&crate::trust::containers_of_locations(
        scanned.iter().flat_map(|d| d.sources.iter().map(|s| s.location.as_str())),
    ));
    Ok(outcome)
}
