//! `vzarr scan FILES --format dmrpp -o DIR`: one DMR++ sidecar per input file, `DIR/<file name>.dmrpp`
//! ([`crate::pipeline::Archive::write_sidecars_on`]: each from that file's own scan, nothing combined).

use super::args::ScanArgs;
use super::progress::bar;
use super::Outcome;
use crate::formats::DmrppWriter;
use crate::pipeline::Archive;
use crate::store::WriteOptions;

/// Scans the archive's files and writes each one's sidecar into the `--output` directory.
pub(crate) fn run(args: &ScanArgs, archive: &Archive, runtime: &tokio::runtime::Handle) -> anyhow::Result<Outcome> {
    let files = archive.files(runtime)?;
    let progress = bar(files.len() as u64, "scanning");
    let report = |done: usize, refs: u64| {
        progress.set_position(done as u64);
        progress.set_message(format!("{refs} references"));
    };
    let writer = DmrppWriter { url_prefixes: args.combine.url_prefix.clone() };
    let options = WriteOptions { overwrite: args.combine.overwrite };
    let written = archive.write_sidecars_on(runtime, &files, &args.combine.output, &writer, &options, &report);
    progress.finish_and_clear();
    let written = written?;
    let mut outcome = Outcome::Done;
    for sidecar in &written.sidecars {
        for warning in &sidecar.info.warnings {
            errln!("warning: {warning}");
            outcome = Outcome::Partial;
        }
        outln!("{}: {} variables", sidecar.path.display(), sidecar.info.arrays.len());
    }
    super::trust::trust_written(&crate::trust::containers_of_locations(
        written.sidecars.iter().map(|s| s.source.as_str()),
    ));
    Ok(outcome)
}
