//! `vzarr scan`: expand inputs, scan (in parallel), combine along every `--concat` dimension (merging
//! files that hold different variables), write the store.

use std::ffi::OsString;
use std::path::PathBuf;

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
        max_slab_bytes: args.max_slab_mib << 20,
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

/// Files named directly, plus the matches of glob patterns, in natural order; duplicates removed. An
/// argument naming an existing path is that path, even when it contains `*`, `?` or `[`; only other
/// arguments (which must be UTF-8) are glob patterns.
pub(crate) fn expand_inputs(inputs: &[OsString]) -> anyhow::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for input in inputs {
        let path = PathBuf::from(input);
        let pattern = input.to_str().filter(|s| s.contains(['*', '?', '[']));
        match pattern {
            Some(pattern) if path.symlink_metadata().is_err() => files.extend(glob_matches(pattern)?),
            _ => files.push(path),
        }
    }
    files.sort_by(|a, b| natural_cmp(&a.to_string_lossy(), &b.to_string_lossy()));
    files.dedup();
    Ok(files)
}

fn glob_matches(pattern: &str) -> anyhow::Result<Vec<PathBuf>> {
    let matches: Vec<_> = glob::glob(pattern)
        .with_context(|| format!("{pattern}: invalid glob pattern"))?
        .collect::<Result<_, _>>()
        .with_context(|| format!("{pattern}: reading matches"))?;
    if matches.is_empty() {
        bail!("{pattern}: no files match");
    }
    Ok(matches)
}
