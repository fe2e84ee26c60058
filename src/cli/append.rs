//! `vzarr append`: load a native store, rescan its last file(s), scan the new files, plan the
//! combined dataset (`crate::append`), and put it in place of the old store in one atomic exchange.
//!
//! An Icechunk repository (a directory holding one, or an object-store URL) is loaded from its branch
//! without touching the old sources (`read_branch`; the files read again are checked against their
//! references' checksums), planned the same way, and committed as one new snapshot holding only what
//! changed (`update_icechunk`): a refused append writes nothing, an interrupted one leaves the
//! previous snapshot the branch's tip.

use anyhow::Context;

use super::args::AppendArgs;
use super::progress::bar;
use super::scan::input_files;
use super::Outcome;
use crate::pipeline::{describe_edges, AppendTo, Archive};
use crate::VirtualDataset;

pub(crate) fn run(args: AppendArgs) -> anyhow::Result<Outcome> {
    let name = args.store.display().to_string();
    let runtime = crate::pipeline::runtime()?;
    let remote = args.remote.options();
    let files = input_files(&args.inputs, args.files_from.as_deref(), &remote, runtime.handle())?;
    let archive = Archive::new(&files)
        .remote(remote)
        .max_concurrent_requests(super::args::scans_at_once(args.remote.max_concurrent_requests));
    let options = AppendTo {
        allow_gaps: args.allow_gaps,
        branch: args.branch.clone(),
        message: args.message.clone(),
        chunks: args.chunks.clone(),
    };
    let progress = bar(files.len() as u64, "scanning");
    let appended =
        archive.append_to(&args.store, &options, runtime.handle(), &|done| progress.set_position(done as u64));
    progress.finish_and_clear();
    let appended = appended.with_context(|| format!("appending to {name}"))?;
    // As scan does: the sources' containers (the new files' among them) join the trust list, so the
    // store reads on without --allow-source.
    super::trust::trust_written(&appended.source_containers);
    report_result(&appended.dataset, &name, appended.files, appended.sources)?;
    if let Some((dim, _)) = &args.chunks {
        for fold in &appended.folds {
            let (before, after) = (describe_edges(&fold.before), describe_edges(&fold.after));
            outln!("{}: {dim}: {before} -> {after}; {} chunks written", fold.path, fold.chunks_written);
        }
    }
    if let Some((snapshot, branch)) = &appended.snapshot {
        outln!("{name}: new snapshot {snapshot} on branch {branch}");
        outln!("virtual chunk containers to authorize when reading: {}", appended.source_containers.join(" "));
    }
    Ok(if appended.dataset.warnings.is_empty() { Outcome::Done } else { Outcome::Partial })
}

fn report_result(dataset: &VirtualDataset, name: &str, added: usize, sources: u64) -> anyhow::Result<()> {
    for warning in &dataset.warnings {
        errln!("warning: {warning}");
    }
    for gap in &dataset.provenance.gaps {
        errln!("note: gap: {gap}");
    }
    outln!("{name}: appended {added} file(s); {sources} files in the store");
    Ok(())
}
