//! `vzarr materialize`: a native store -> a real Zarr v3 directory store (chunk bytes copied), with
//! `--shards` packed into `sharding_indexed` shards; with `--chunks`, a regular copy (a Zarr v3
//! store, sharded or not, local or on an object store, or an Icechunk repository), and `--update`
//! of such a repository after an append.

use anyhow::Context;

use super::args::{MaterializeArgs, MaterializeFormat, ShardsArg};
use super::progress::bar;
use super::Outcome;
use crate::export::{materialize, ArrayLayout, MaterializeOptions, Sharding};
use crate::grid::ChunkGrid;
use crate::Store;

pub(crate) async fn run(args: MaterializeArgs) -> anyhow::Result<Outcome> {
    let store = Store::open_with(
        &args.store,
        &crate::read::OpenOptions::new(super::trust::authorization(&args.allow_source)?)
            .with_remote(args.remote.options()),
    )
    .await?;
    store.set_check_sources(!args.no_check_sources);
    store.all_sources().await?;
    if args.update {
        return update(&store, &args).await;
    }
    if let Some(chunks) = &args.chunks {
        return regular(&store, &args, chunks.0.clone()).await;
    }
    let shards = match &args.shards {
        Some(ShardsArg::Named(_)) => {
            errln!("error: --shards DIM=N,.. needs --chunks (without it, --shards is `file` or a shape N,N,..)");
            return Ok(Outcome::Usage);
        }
        Some(ShardsArg::Layout(spec)) => Some(spec.clone()),
        None => None,
    };
    if args.max_memory.is_some() {
        errln!("error: --max-memory needs --chunks or --update");
        return Ok(Outcome::Usage);
    }
    let total: u64 = store.info().arrays.iter().map(|a| a.stats.referenced + a.stats.owned).sum();
    let progress = bar(total, "copying chunks");
    let options = MaterializeOptions {
        overwrite: args.overwrite,
        max_concurrent_chunks: args.jobs.max(1),
        shards,
        max_concurrent_shards: args.shard_jobs.max(1),
    };
    let result = match super::output::remote_url(&args.output) {
        Some(url) => {
            let target = super::output::RemoteTarget {
                url,
                kind: crate::store::OutputKind::ZarrStore,
                overwrite: args.overwrite,
                inputs: crate::export::store_urls(&store),
                remote: args.remote.options(),
                max_concurrent: super::args::requests_at_once(args.remote.max_concurrent_requests),
            };
            let local = MaterializeOptions { overwrite: false, ..options.clone() };
            let (store, progress) = (&store, &progress);
            let copy = |path: std::path::PathBuf| async move {
                Ok(materialize(store, &path, &local, &|n| progress.inc(n)).await?)
            };
            target.write_async(copy).await
        }
        None => Ok(materialize(&store, &args.output, &options, &|n| progress.inc(n)).await?),
    };
    progress.finish_and_clear();
    let report = result.with_context(|| format!("materializing {} to {}", args.store, args.output.display()))?;
    if options.shards.is_some() {
        for layout in &report.layouts {
            outln!("{}", describe(layout));
        }
    }
    let sharded = report.layouts.iter().filter(|l| matches!(l.sharding, Sharding::Sharded(_))).count();
    let shards = if options.shards.is_some() { format!(", {sharded} sharded") } else { String::new() };
    outln!(
        "{}: {} arrays{shards}, {} chunks in {} objects ({} bytes)",
        args.output.display(),
        report.arrays,
        report.chunks,
        report.objects,
        report.bytes
    );
    Ok(Outcome::Done)
}

/// The options of a regular copy or update from the arguments.
fn regular_options(
    args: &MaterializeArgs,
    chunks: Vec<(String, crate::chunking::ChunkLength)>,
) -> crate::export::RegularOptions {
    let mut options = crate::export::RegularOptions::new(chunks);
    options.overwrite = args.overwrite;
    options.codec = args.codec;
    if let Some(max) = args.max_memory {
        options.max_memory = max;
    }
    if let Some(ShardsArg::Named(shards)) = &args.shards {
        options.shards = Some(shards.clone());
    }
    if args.format == MaterializeFormat::Icechunk {
        options.format = crate::export::RegularFormat::Icechunk;
    }
    if let Some(branch) = &args.branch {
        options.branch = branch.clone();
    }
    options.message = args.message.clone();
    options.remote = args.remote.options();
    options
}

/// `--chunks`: a regular copy (a Zarr v3 store, local or on an object store, or an Icechunk
/// repository).
async fn regular(
    store: &Store,
    args: &MaterializeArgs,
    chunks: Vec<(String, crate::chunking::ChunkLength)>,
) -> anyhow::Result<Outcome> {
    if let Some(ShardsArg::Layout(_)) = &args.shards {
        errln!("error: with --chunks, --shards takes shard lengths by dimension name, such as time=360");
        return Ok(Outcome::Usage);
    }
    let options = regular_options(args, chunks);
    bound_allocator(options.max_memory);
    let progress = bar(0, "writing chunks");
    let result = crate::export::materialize_regular(store, &args.output, &options, &|n| progress.inc(n)).await;
    progress.finish_and_clear();
    let report = result.with_context(|| format!("materializing {} to {}", args.store, args.output.display()))?;
    // `time=month`, `station=by:network`: the grid follows the calendar or the groups along them.
    let units: Vec<String> = options
        .chunks
        .iter()
        .chain(options.shards.iter().flatten())
        .filter(|(_, l)| l.elements().is_none())
        .map(|(d, l)| format!("{d}={l}"))
        .collect();
    let grids = match units.is_empty() {
        true => "regular chunk grids".to_string(),
        false => format!("chunk grids by {}", units.join(", ")),
    };
    let what = match (options.format, &options.shards) {
        (crate::export::RegularFormat::Icechunk, _) => format!("{grids}, one Icechunk commit"),
        (_, Some(_)) => format!("{grids} in shards"),
        _ => grids,
    };
    for layout in &report.layouts {
        if let Some(chunks) = &layout.intermediate {
            outln!(
                "{}: source and target chunks cross badly: copied through an intermediate array in chunks ({})",
                layout.path,
                join(chunks)
            );
        }
    }
    outln!(
        "{}: {} arrays, {} chunks written ({} bytes), {what}",
        args.output.display(),
        report.arrays,
        report.chunks,
        report.bytes
    );
    Ok(Outcome::Done)
}

/// `--update`: the chunks of an Icechunk regular copy that an append touched, in one commit.
async fn update(store: &Store, args: &MaterializeArgs) -> anyhow::Result<Outcome> {
    let options = regular_options(args, Vec::new());
    bound_allocator(options.max_memory);
    let repo = args.output.to_string_lossy().into_owned();
    let progress = bar(0, "writing chunks");
    let result = crate::export::materialize_update(store, &repo, &options, &|n| progress.inc(n)).await;
    progress.finish_and_clear();
    let (report, committed) = result.with_context(|| format!("updating {repo} from {}", args.store))?;
    if committed {
        outln!("{repo}: {} chunks rewritten ({} bytes) in one commit", report.chunks, report.bytes);
    } else {
        outln!("{repo}: up to date, nothing written");
    }
    Ok(Outcome::Done)
}

/// Keeps glibc's allocator from holding freed blocks per thread beyond `--max-memory`: it serves
/// blocks under its mmap threshold from per-thread arenas, which keep them when freed, and raises
/// that threshold (up to 32 MiB) to the size of every mapped block freed, so that each of the copy's
/// threads could keep a block-sized buffer. A fixed threshold of a 32nd of `max_memory` (128 KiB to
/// 32 MiB) maps larger buffers and returns them when freed: measured on the benchmark archive under
/// `--max-memory 32M`, a peak of 50 MiB instead of 133 MiB (23 MiB of it the binary itself).
fn bound_allocator(max_memory: u64) {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let threshold = (max_memory / 32).clamp(128 << 10, 32 << 20) as libc::c_int;
        // SAFETY: mallopt only sets a parameter of the allocator; called before the copy's threads
        // allocate anything large.
        unsafe { libc::mallopt(libc::M_MMAP_THRESHOLD, threshold) };
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    let _ = max_memory;
}

/// One line per array: `tas: 24 shards of (28..31, 10, 12), inner chunks (1, 5, 6)`, or the reason it
/// was written unsharded.
fn describe(layout: &ArrayLayout) -> String {
    let path = &layout.path;
    match &layout.sharding {
        Sharding::Sharded(shards) => {
            let padded = match layout.padded_chunks {
                0 => String::new(),
                n => format!(", {n} short last chunks padded to it and re-encoded"),
            };
            format!(
                "{path}: {} shards of {}, inner chunks ({}){padded}; {} objects written",
                shards.grid.num_chunks(),
                edges(&shards.grid),
                join(&shards.chunk_shape),
                layout.objects
            )
        }
        Sharding::Fallback(reason) => {
            format!("{path}: not sharded ({reason}); {} chunk files written", layout.objects)
        }
        Sharding::Unsharded => format!("{path}: {} chunk files written", layout.objects),
    }
}

/// `(28..31, 10, 12)`: each dimension's edge, or its range (as the chunks hold them) when the edges
/// vary.
fn edges(grid: &ChunkGrid) -> String {
    let dims: Vec<String> = grid
        .dims()
        .iter()
        .map(|d| match d.held_range() {
            Some((lo, hi)) if lo != hi => format!("{lo}..{hi}"),
            Some((lo, _)) => lo.to_string(),
            None => "0".into(),
        })
        .collect();
    format!("({})", dims.join(", "))
}

fn join(values: &[u64]) -> String {
    values.iter().map(u64::to_string).collect::<Vec<_>>().join(", ")
}
