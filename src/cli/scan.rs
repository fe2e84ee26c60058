//! `vzarr scan`: expand inputs, scan, write the store, report warnings.

use anyhow::{bail, Context};

use super::args::ScanArgs;
use super::Outcome;
use vzarr::scan::{scan_file, ScanOptions};
use vzarr::store::{NativeWriter, WriteOptions, Writer};

pub(crate) fn run(args: ScanArgs) -> anyhow::Result<Outcome> {
    let files = expand_inputs(&args.inputs)?;
    let options = ScanOptions {
        skip_unsupported: args.skip_unsupported,
        max_slab_bytes: args.max_slab_mib.max(1) << 20,
    };
    let [file] = files.as_slice() else {
        bail!(
            "{} input files given: combining several files needs --concat DIM",
            files.len()
        );
    };
    let dataset = scan_file(file, &options)?;
    let info = NativeWriter
        .write(
            &dataset,
            &args.output,
            &WriteOptions {
                overwrite: args.overwrite,
            },
        )
        .with_context(|| format!("writing {}", args.output.display()))?;
    for warning in &dataset.warnings {
        eprintln!("warning: {warning}");
    }
    let refs: u64 = info.arrays.iter().map(|a| a.stats.referenced).sum();
    let owned: u64 = info.arrays.iter().map(|a| a.stats.owned).sum();
    let rewritten: u64 = info.arrays.iter().map(|a| a.rewritten_chunks).sum();
    println!(
        "{}: {} arrays, {refs} chunk references, {owned} store-owned chunks ({rewritten} rewritten) from {} file(s)",
        args.output.display(),
        info.arrays.len(),
        info.sources
    );
    Ok(if dataset.warnings.is_empty() {
        Outcome::Done
    } else {
        Outcome::Partial
    })
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

/// Orders strings with digit runs compared as numbers (`f2` before `f10`).
pub(crate) fn natural_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    let (mut a, mut b) = (a, b);
    loop {
        match (a.chars().next(), b.chars().next()) {
            (None, None) => return std::cmp::Ordering::Equal,
            (None, _) => return std::cmp::Ordering::Less,
            (_, None) => return std::cmp::Ordering::Greater,
            (Some(x), Some(y)) if x.is_ascii_digit() && y.is_ascii_digit() => {
                let da = a.len() - a.trim_start_matches(|c: char| c.is_ascii_digit()).len();
                let db = b.len() - b.trim_start_matches(|c: char| c.is_ascii_digit()).len();
                let (na, nb) = (
                    a[..da].trim_start_matches('0'),
                    b[..db].trim_start_matches('0'),
                );
                let ord = na.len().cmp(&nb.len()).then_with(|| na.cmp(nb));
                if ord != std::cmp::Ordering::Equal {
                    return ord;
                }
                (a, b) = (&a[da..], &b[db..]);
            }
            (Some(x), Some(y)) => {
                if x != y {
                    return x.cmp(&y);
                }
                (a, b) = (&a[x.len_utf8()..], &b[y.len_utf8()..]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn natural_order_compares_numbers() {
        let mut v = vec!["f10.nc", "f2.nc", "f1.nc", "f02b.nc"];
        v.sort_by(|a, b| natural_cmp(a, b));
        assert_eq!(v, ["f1.nc", "f2.nc", "f02b.nc", "f10.nc"]);
    }
}
