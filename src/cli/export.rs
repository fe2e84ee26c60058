//! `vzarr export`: a native store -> kerchunk reference JSON.

use anyhow::Context;

use super::args::ExportArgs;
use super::Outcome;
use vzarr::store::{export_kerchunk, KerchunkOptions};
use vzarr::Store;

pub(crate) async fn run(args: ExportArgs) -> anyhow::Result<Outcome> {
    let store = Store::open(&args.store, &super::trust::authorization(&args.allow_source)?).await?;
    let options = KerchunkOptions { url_prefixes: args.url_prefix, overwrite: args.overwrite };
    let report = export_kerchunk(&store, &args.kerchunk, &options)
        .await
        .with_context(|| format!("exporting {} to {}", args.store, args.kerchunk.display()))?;
    outln!(
        "{}: {} metadata documents, {} chunk references, {} inline chunks ({} bytes)",
        args.kerchunk.display(),
        report.metadata,
        report.references,
        report.inline,
        report.bytes
    );
    Ok(Outcome::Done)
}
