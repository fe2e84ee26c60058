//! `vzarr materialize`: a native store -> a real Zarr v3 directory store (chunk bytes copied).

use anyhow::Context;

use super::args::MaterializeArgs;
use super::progress::bar;
use super::Outcome;
use vzarr::store::{materialize, MaterializeOptions};
use vzarr::Store;

pub(crate) async fn run(args: MaterializeArgs) -> anyhow::Result<Outcome> {
    let store = Store::open(&args.store).await?;
    let total: u64 = store.info().arrays.iter().map(|a| a.stats.referenced + a.stats.owned).sum();
    let progress = bar(total, "copying chunks");
    let options = MaterializeOptions { overwrite: args.overwrite, max_concurrent_chunks: args.jobs.max(1) };
    let result = materialize(&store, &args.output, &options, &|n| progress.inc(n)).await;
    progress.finish_and_clear();
    let report = result.with_context(|| format!("materializing {} to {}", args.store, args.output.display()))?;
    outln!(
        "{}: {} arrays, {} chunk files ({} bytes)",
        args.output.display(),
        report.arrays,
        report.chunks,
        report.bytes
    );
    Ok(Outcome::Done)
}
