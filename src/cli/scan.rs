//! `vzarr scan`: expand inputs, scan (in parallel), combine along every `--concat` dimension (merging
//! files that hold different variables), write the store.

use anyhow::{bail, Context};

use super::args::{ScanArgs, ScanFormat};
use super::progress::bar;
use super::Outcome;
use vzarr::combine::{combine, natural_cmp, CombineOptions};
use vzarr::scan::{scan_files, ScanOptions};
use vzarr::store::{KerchunkWriter, NativeWriter, WriteOptions, Writer};

pub(crate) fn run(args: ScanArgs) -> anyhow::Result<Outcome> {
    let files = expand_inputs(&args.inputs)?;
    let options = ScanOptions {
        skip_unsupported: args.skip_unsupported,
        max_slab_bytes: args.max_slab_mib.max(1) << 20,
        concat_dims: args.concat.iter().map(|d| d.name.clone()).collect(),
        ..ScanOptions::default()
    };
    if files.len() > 1 && args.concat.is_empty() {
        bail!("{} input files given: combining several files needs --concat DIM", files.len());
    }
    let progress = bar(files.len() as u64, "scanning");
    let report = |done: usize, refs: u64| {
        progress.set_position(done as u64);
        progress.set_message(format!("{refs} references"));
    };
    let scanned = scan_files(&files, &options, &report);
    progress.finish_and_clear();
    let mut scanned = scanned?;
    let dataset = if args.concat.is_empty() {
        scanned.pop().context("no input file")?
    } else {
        let names: Vec<String> = args.concat.iter().map(|d| d.name.clone()).collect();
        let options = CombineOptions {
            dims: args.concat.clone(),
            take_first: args.take_first.clone(),
            drop_missing: args.drop_missing,
            history: Some(history_line(files.len(), &names.join(", "))),
            first_global_attributes: args.first_global_attributes,
        };
        combine(scanned, &options)?
    };
    let writer: Box<dyn Writer> = match args.format {
        ScanFormat::Native => Box::new(NativeWriter),
        ScanFormat::KerchunkJson => Box::new(KerchunkWriter { url_prefixes: args.url_prefix.clone() }),
    };
    let info = writer
        .write(&dataset, &args.output, &WriteOptions { overwrite: args.overwrite })
        .with_context(|| format!("writing {}", args.output.display()))?;
    for warning in &dataset.warnings {
        eprintln!("warning: {warning}");
    }
    for gap in &dataset.provenance.gaps {
        eprintln!("note: gap: {gap}");
    }
    let refs: u64 = info.arrays.iter().map(|a| a.stats.referenced).sum();
    let owned: u64 = info.arrays.iter().map(|a| a.stats.owned).sum();
    let owned_bytes: u64 = info.arrays.iter().map(|a| a.stats.owned_bytes).sum();
    let rewritten: u64 = info.arrays.iter().map(|a| a.rewritten_chunks).sum();
    outln!(
        "{}: {} arrays from {} file(s): {refs} chunk references, {owned} store-owned chunks ({owned_bytes} bytes; {rewritten} rewritten)",
        args.output.display(),
        info.arrays.len(),
        info.sources
    );
    Ok(if dataset.warnings.is_empty() { Outcome::Done } else { Outcome::Partial })
}

fn history_line(files: usize, dim: &str) -> String {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    format!(
        "{secs} (seconds since 1970-01-01): vzarr {}: virtualized {files} files along {dim}",
        env!("CARGO_PKG_VERSION")
    )
}

/// Files named directly, plus the matches of glob patterns, in natural order; duplicates removed.
pub(crate) fn expand_inputs(inputs: &[String]) -> anyhow::Result<Vec<std::path::PathBuf>> {
    let mut files = Vec::new();
    for input in inputs {
        if input.contains(['*', '?', '[']) {
            let matches: Vec<_> = glob::glob(input)
                .with_context(|| format!("{input}: invalid glob pattern"))?
                .collect::<Result<_, _>>()
                .with_context(|| format!("{input}: reading matches"))?;
            if matches.is_empty() {
                bail!("{input}: no files match");
            }
            files.extend(matches);
        } else {
            files.push(input.into());
        }
    }
    files.sort_by(|a, b| natural_cmp(&a.to_string_lossy(), &b.to_string_lossy()));
    files.dedup();
    Ok(files)
}
