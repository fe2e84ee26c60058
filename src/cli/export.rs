//! `vzarr export`: a native store -> kerchunk reference JSON.

use anyhow::Context;

use super::args::ExportArgs;
use super::output::Target;
use super::Outcome;
use vzarr::store::{export_kerchunk, KerchunkOptions};
use vzarr::Store;

pub(crate) async fn run(args: ExportArgs) -> anyhow::Result<Outcome> {
    let store = Store::open(&args.store, &super::trust::authorization(&args.allow_source)?).await?;
    let target = Target::of(&args.kerchunk)?;
    let options = KerchunkOptions { url_prefixes: args.url_prefix, overwrite: args.overwrite };
    let context = || format!("exporting {} to {}", args.store, args.kerchunk.display());
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
