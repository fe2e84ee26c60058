//! `vzarr export`: a native store, Icechunk repository or kerchunk document -> kerchunk reference JSON
//! or a kerchunk Parquet reference set.

use anyhow::Context;

use super::args::ExportArgs;
use super::output::Target;
use super::Outcome;
use crate::export::{export_kerchunk, export_kerchunk_parquet, KerchunkOptions, KerchunkParquetOptions};
use crate::Store;

pub(crate) async fn run(args: ExportArgs) -> anyhow::Result<Outcome> {
    if args.kerchunk_parquet.is_none() && (args.record_size.is_some() || args.skip_unsupported) {
        errln!("error: --record-size and --skip-unsupported go with --kerchunk-parquet");
        return Ok(Outcome::Usage);
    }
    let store = Store::open_with(
        &args.store,
        &crate::read::OpenOptions::new(super::trust::authorization(&args.allow_source)?)
            .with_remote(args.remote.options()),
    )
    .await?;
    // Every source is known before the output's checks (a repository names them in its manifests).
    store.all_sources().await?;
    // A source changed since the scan is refused, as every command that reads refuses it.
    store.set_check_sources(!args.no_check_sources);
    store.check_readable_sources().await?;
    let Some(kerchunk) = args.kerchunk.clone() else { return parquet(args, store).await };
    let target = Target::of(&kerchunk)?;
    let options = KerchunkOptions {
        url_prefixes: args.url_prefix.clone(),
        overwrite: args.overwrite,
        inline_threshold: args.inline_threshold.unwrap_or(0),
    };
    let context = || format!("exporting {} to {}", args.store, kerchunk.display());
    if let Some(url) = super::output::remote_url(&kerchunk) {
        let target = remote_target(url, crate::store::OutputKind::KerchunkJson, &args, &store);
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
        errln!("{}: {} chunk references", kerchunk.display(), report.references);
        return Ok(Outcome::Done);
    }
    let report = export_kerchunk(&store, &kerchunk, &options).await.with_context(context)?;
    outln!(
        "{}: {} metadata documents, {} chunk references, {} inline chunks ({} bytes)",
        kerchunk.display(),
        report.metadata,
        report.references,
        report.inline,
        report.bytes
    );
    Ok(Outcome::Done)
}

/// `vzarr export --kerchunk-parquet`: the reference set written in a staging directory and published
/// whole, locally or on an object store.
async fn parquet(args: ExportArgs, store: Store) -> anyhow::Result<Outcome> {
    let destination = args.kerchunk_parquet.clone().unwrap_or_default();
    if !matches!(Target::of(&destination)?, Target::File(_)) {
        errln!("error: --kerchunk-parquet {}: a reference set is a directory, not a stream", destination.display());
        return Ok(Outcome::Usage);
    }
    let options = KerchunkParquetOptions {
        url_prefixes: args.url_prefix.clone(),
        record_size: args.record_size.map_or(Ok(crate::formats::DEFAULT_RECORD_SIZE), usize::try_from)?,
        skip_unsupported: args.skip_unsupported,
        overwrite: args.overwrite,
        inline_threshold: args.inline_threshold.unwrap_or(crate::formats::DEFAULT_INLINE_THRESHOLD),
    };
    let context = || format!("exporting {} to {}", args.store, destination.display());
    let (shown, report) = if let Some(url) = super::output::remote_url(&destination) {
        let target = remote_target(url, crate::store::OutputKind::KerchunkParquet, &args, &store);
        let local = KerchunkParquetOptions { overwrite: false, ..options };
        let export =
            |path: std::path::PathBuf| async move { Ok(export_kerchunk_parquet(&store, &path, &local).await?) };
        (url.to_string(), target.write_async(export).await.with_context(context)?)
    } else {
        let report = export_kerchunk_parquet(&store, &destination, &options).await.with_context(context)?;
        (destination.display().to_string(), report)
    };
    for warning in &report.left_out {
        errln!("warning: {}: {}", warning.variable, warning.message);
    }
    outln!(
        "{shown}: {} arrays in {} reference files: {} chunk references, {} inline chunks",
        report.arrays,
        report.record_files,
        report.references,
        report.inline
    );
    Ok(if report.left_out.is_empty() { Outcome::Done } else { Outcome::Partial })
}

/// The object-store destination `url` of an export of `store`, as `args` set it up.
fn remote_target<'a>(
    url: &'a str,
    kind: crate::store::OutputKind,
    args: &ExportArgs,
    store: &Store,
) -> super::output::RemoteTarget<'a> {
    super::output::RemoteTarget {
        url,
        kind,
        overwrite: args.overwrite,
        inputs: crate::export::store_urls(store),
        remote: args.remote.options(),
        max_concurrent: super::args::requests_at_once(args.remote.max_concurrent_requests),
    }
}
