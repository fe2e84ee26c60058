//! `vzarr read`: one variable (or a selection) to a NumPy `.npy` file, published atomically
//! (`store/publish`); an existing `.npy` file is replaced only with `--overwrite`. `-o -` writes to
//! standard output, and an existing FIFO or character device is written through (`cli/output`).

use std::io::Write;

use anyhow::Context;

use super::args::ReadArgs;
use super::output::Target;
use super::Outcome;
use crate::export::store_inputs;
use crate::grid::Selection;
use crate::read::ReadOptions;
use crate::store::{OutputKind, Staged};

pub(crate) async fn run(args: ReadArgs) -> anyhow::Result<Outcome> {
    let store = args.open.open().await?;
    let array = store.array(&args.variable).await?;
    let selection = Selection::parse(&args.select, &array.shape())
        .with_context(|| format!("{}: {}: selection {:?}", args.open.name(), args.variable, args.select))?;
    let mut options = ReadOptions {
        max_concurrent_requests: super::args::requests_at_once(args.open.remote.max_concurrent_requests),
        check_sources: !args.open.no_check_sources,
        ..ReadOptions::default()
    };
    if let Some(limit) = args.max_memory {
        options.max_memory = limit;
    }
    let data = array.read(&selection, &options).await?;
    let target = Target::of(&args.output)?;
    if !matches!(target, Target::File(_)) {
        target.write_through(|out| data.write_npy(out))?;
        errln!("{}: {} {:?} -> {}", args.variable, data.data_type, data.shape, args.output.display());
        return Ok(Outcome::Done);
    }
    let inputs = store_inputs(&store);
    let staged = Staged::begin(&args.output, OutputKind::Npy, args.overwrite, &inputs)?;
    let written = std::fs::File::create(staged.path()).and_then(|file| {
        let mut out = std::io::BufWriter::new(file);
        data.write_npy(&mut out)?;
        out.flush()
    });
    written.with_context(|| format!("{}: writing", args.output.display()))?;
    staged.publish()?;
    errln!("{}: {} {:?} -> {}", args.variable, data.data_type, data.shape, args.output.display());
    Ok(Outcome::Done)
}
