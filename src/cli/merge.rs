//! Sharded scans: `vzarr scan --shard I/N` (or a job-array task) writes a part; `vzarr merge` combines
//! the parts into the store one `scan` over all inputs would have written.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};

use super::args::{MergeArgs, ScanArgs};
use super::progress::bar;
use super::write::{write_combined, Output};
use super::Outcome;
use crate::parts::{shard_from_env, Shard};
use crate::pipeline::Archive;

/// The shard this scan is: `--shard`, else the job-array task's (printed with its origin), else none.
pub(crate) fn shard_of(args: &ScanArgs) -> anyhow::Result<Option<Shard>> {
    if args.no_shard {
        return Ok(None);
    }
    if let Some(shard) = args.shard {
        outln!("shard {shard} (--shard)");
        return Ok(Some(shard));
    }
    let env = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    match shard_from_env(&env, args.shard_count)? {
        Some((shard, source)) => {
            outln!("shard {shard} ({source})");
            Ok(Some(shard))
        }
        None if args.shard_count.is_some() => {
            bail!("--shard-count given but no job-array index found (SLURM_ARRAY_TASK_ID, JOB_COMPLETION_INDEX, AWS_BATCH_JOB_ARRAY_INDEX): pass --shard I/N")
        }
        None => Ok(None),
    }
}

/// Scans the shard's slice of `files` (all inputs of `archive`, expanded) and writes its part.
pub(crate) fn scan_shard(
    args: &ScanArgs,
    archive: &Archive,
    files: &[PathBuf],
    shard: Shard,
    runtime: &tokio::runtime::Handle,
) -> anyhow::Result<Outcome> {
    let merge_only = [
        ("--take-first", !args.combine.take_first.is_empty()),
        ("--drop-missing", args.combine.drop_missing),
        ("--first-global-attributes", args.combine.first_global_attributes),
        ("--url-prefix", !args.combine.url_prefix.is_empty()),
        ("--format", args.combine.format != crate::store::StoreFormat::Native),
    ];
    if let Some((flag, _)) = merge_only.iter().find(|(_, given)| *given) {
        bail!("{flag} applies when the parts are combined: give it to `vzarr merge`, not to a sharded scan");
    }
    let range = shard.range(files.len());
    let destination = part_path(&args.combine.output, shard)?;
    outln!("shard {shard}: inputs {}..{} of {}", range.start, range.end, files.len());
    let progress = bar(range.len() as u64, "scanning");
    let report = |done: usize, refs: u64| {
        progress.set_position(done as u64);
        progress.set_message(format!("{refs} references"));
    };
    let part = archive.scan_shard_on(runtime, files, shard, &report);
    progress.finish_and_clear();
    let part = part?;
    let write = |local: &Path| Ok(part.write(local)?);
    match super::output::remote_url(&destination) {
        Some(url) => super::output::RemoteTarget {
            url,
            kind: crate::store::OutputKind::ScanPart,
            // A retried task replaces its part, as locally.
            overwrite: true,
            inputs: crate::source::urls_of(files),
            remote: args.remote.options(),
            max_concurrent: super::args::requests_at_once(args.remote.max_concurrent_requests),
        }
        .write(write),
        None => write(&destination),
    }
    .with_context(|| format!("writing {}", destination.display()))?;
    outln!(
        "{}: shard {shard}: {} file(s), {} chunk entries",
        destination.display(),
        part.files.len(),
        part.references()
    );
    for warning in part.datasets.iter().flat_map(|d| &d.warnings) {
        errln!("warning: {warning}");
    }
    Ok(Outcome::Done)
}

/// `--output` itself, or `part-IIIII-of-NNNNN.vzpart` inside it when it is a directory or ends in `/`
/// (created if missing, so that every task of an array can be given the same directory).
fn part_path(output: &Path, shard: Shard) -> anyhow::Result<PathBuf> {
    let slash = output.as_os_str().to_string_lossy().ends_with('/');
    let name = format!("part-{:05}-of-{:05}.vzpart", shard.index, shard.count);
    if let Some(url) = super::output::remote_url(output) {
        // An object-store prefix is a "directory" when it ends in `/` (nothing to create).
        return Ok(PathBuf::from(if slash { format!("{url}{name}") } else { url.to_string() }));
    }
    if !slash && !output.is_dir() {
        return Ok(output.to_path_buf());
    }
    if slash {
        std::fs::create_dir_all(output)
            .with_context(|| format!("{}: creating the parts directory", output.display()))?;
    }
    Ok(output.join(name))
}

pub(crate) fn run(args: MergeArgs) -> anyhow::Result<Outcome> {
    // Multi-threaded: object-store listing and reads block on its handle, which a current-thread
    // runtime cannot drive.
    let runtime = crate::pipeline::runtime()?;
    let remote = args.remote.options();
    let mut out = Output {
        combine: &args.combine,
        skip_unsupported: false,
        max_slab_bytes: 0,
        branch: None,
        message: None,
        remote,
        max_concurrent_requests: args.remote.max_concurrent_requests,
        other_inputs: Vec::new(),
    };
    let archive = out.archive().with_inputs(args.parts.clone());
    let progress = bar(0, "reading parts");
    let report = |done: u64, total: u64| {
        progress.set_length(total);
        progress.set_position(done);
    };
    let merged = archive.merge_parts_on(runtime.handle(), &report);
    progress.finish_and_clear();
    let merged = merged?;
    if let Some(recipe) = &merged.dataset.provenance.recipe {
        out.skip_unsupported = recipe.skip_unsupported;
        out.max_slab_bytes = recipe.max_slab_bytes.unwrap_or_default();
    }
    out.other_inputs = merged.part_urls;
    write_combined(merged.dataset, &out)
}
