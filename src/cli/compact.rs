//! `vzarr compact`: fold runs of small chunks along a dimension into target-size chunks, in place
//! (`crate::compact`). Options that do not fit the store (a missing dimension, a target of 0 or
//! larger than the dimension) are usage errors (exit 2).

use super::args::CompactArgs;
use super::Outcome;
use crate::compact::{compact_store, describe_edges, CompactError, CompactOptions, CompactReport};
use crate::read::OpenOptions;

pub(crate) fn run(args: CompactArgs) -> anyhow::Result<Outcome> {
    let Some((dim, target)) = args.chunks.clone().or_else(|| args.dim.clone().zip(args.target)) else {
        errln!("error: compact needs --dim DIM --target N, or --chunks DIM=N");
        return Ok(Outcome::Usage);
    };
    let runtime = crate::pipeline::runtime()?;
    let mut open =
        OpenOptions::new(super::trust::authorization(&args.allow_source)?).with_remote(args.remote.options());
    open.branch.clone_from(&args.branch);
    let mut options = CompactOptions::new(dim, target, open);
    options.tail = args.tail;
    options.dry_run = args.dry_run;
    options.message.clone_from(&args.message);
    if let Some(max) = args.max_memory {
        options.max_memory = max;
    }
    let report = match compact_store(&args.store, &options, runtime.handle()) {
        Ok(report) => report,
        Err(e @ CompactError::Usage { .. }) => {
            errln!("error: {e}");
            return Ok(Outcome::Usage);
        }
        Err(e) => return Err(anyhow::Error::new(e).context(format!("compacting {}", args.store))),
    };
    print_report(&args.store, &options, &report)?;
    Ok(Outcome::Done)
}

fn print_report(store: &str, options: &CompactOptions, report: &CompactReport) -> anyhow::Result<()> {
    if report.arrays.is_empty() {
        outln!("{store}: nothing to fold along {} (target {}); nothing written", options.dim, options.target);
        return Ok(());
    }
    for array in &report.arrays {
        let (before, after) = (describe_edges(&array.before), describe_edges(&array.after));
        let written = if report.written { format!("; {} chunks written", array.chunks_written) } else { String::new() };
        outln!("{}: {}: {before} -> {after}{written}", array.path, options.dim);
    }
    match (&report.snapshot, report.written) {
        (Some((snapshot, branch)), _) => outln!("{store}: new snapshot {snapshot} on branch {branch}"),
        (None, true) => outln!("{store}: compacted {} arrays", report.arrays.len()),
        (None, false) => outln!("{store}: dry run: nothing written"),
    }
    Ok(())
}
