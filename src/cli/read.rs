//! `vzarr read`: one variable (or a selection) to a NumPy `.npy` file, written atomically.

use std::io::Write;

use anyhow::Context;

use super::args::ReadArgs;
use super::Outcome;
use vzarr::grid::Selection;
use vzarr::read::{ReadOptions, Store};

pub(crate) async fn run(args: ReadArgs) -> anyhow::Result<Outcome> {
    let store = Store::open(&args.store).await?;
    let array = store.array(&args.variable).await?;
    let selection = Selection::parse(&args.select, &array.shape())
        .with_context(|| format!("{}: {}: selection {:?}", args.store, args.variable, args.select))?;
    let data = array.read(&selection, &ReadOptions::default()).await?;
    let tmp = args.output.with_extension(format!("npy.tmp-{}", std::process::id()));
    let written = std::fs::File::create(&tmp).and_then(|file| {
        let mut out = std::io::BufWriter::new(file);
        data.write_npy(&mut out)?;
        out.flush()?;
        out.get_ref().sync_all()
    });
    if let Err(e) = written.and_then(|()| std::fs::rename(&tmp, &args.output)) {
        let _ = std::fs::remove_file(&tmp);
        return Err(e).with_context(|| format!("{}: writing", args.output.display()));
    }
    eprintln!("{}: {} {:?} -> {}", args.variable, data.data_type, data.shape, args.output.display());
    Ok(Outcome::Done)
}
