//! `vzarr export`: a native store -> kerchunk reference JSON.

use anyhow::Context;

use super::args::ExportArgs;
use super::output::Target;
use super::Outcome;
use crate::export::{export_kerchunk, KerchunkOptions};
use crate::Store;

pub(crate) async fn run(args: ExportArgs) -> anyhow::Result<Outcome> {
    let store = Store::open_with(
        &args.store,
        &crate::read::OpenOptions::new(super::trust::authorization(&args.allow_source)?)
            .with_remote(args.remote.options()),
    )
    .await?;
    let target = Target::of(&args.kerchunk)?;
    // Every source is known before the output's checks (a repository names them in its manifests).
    store.all_sources().await?;
    let options = KerchunkOptions { url_prefixes: args.url_prefix, overwrite: args.overwrite };
    let context = || format!("exporting {} to {}", args.store, args.kerchunk.display());
    if let Some(url) = super::output::remote_url(&args.kerchunk) {
        let target = super::output::RemoteTarget {
            url,
            kind: crate::store::OutputKind::KerchunkJson,
            overwrite: args.overwrite,
            inputs: store_urls(&store),
            remote: args.remote.options(),
            max_concurrent: super::args::requests_at_once(args.remote.max_concurrent_requests),
        };
        let local = KerchunkOptions { overwrite: false, ..options };
        let export = |path: std::path::PathBuf| async move { Ok(export_kerchunk(&store, &path, &local).await?) };
        let report = target.write_async(export).await.with_context(context)?;
        outln!("{url}: {} metadata documents, {} chunk references", report.metadata, report.references);
        return Ok(Outcome::Done);
    }
    if !matches!(target, Target::File(_)) {
        // Written whole to a private temporary file first (an export that fails writes nothing),
        // then copied through.
        let dir = super::output::private_temp_dir()?;
        let staged = dir.join("refs.json");
        let result = async {
            let report = export_kerchunk(&store, &staged, &options).await.with_context(context)?;
            let mut file = std::fs::File::open(&staged).with_context(context)?;
            target.write_through(|out| std::io::copy(&mut file, out).map(|_| ()))?;
            anyhow::Ok(report)
        }
        .await;
        let _ = std::fs::remove_dir_all(&dir);
        let report = result?;
        eprintln!("{}: {} chunk references", args.kerchunk.display(), report.references);
        return Ok(Outcome::Done);
    }
    let report = export_kerchunk(&store, &args.kerchunk, &options).await.with_context(context)?;
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

/// The URLs an object-store output made from `store` must not be nor contain: the store's and its
/// sources'.
pub(crate) fn store_urls(store: &Store) -> Vec<String> {
    let mut urls = crate::store::url_sources(&store.sources());
    if crate::source::is_url(store.location()) {
        urls.push(store.location().to_string());
    }
    urls
}
