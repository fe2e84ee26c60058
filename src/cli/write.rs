//! Writing a combined dataset where and as the command line says: `scan`'s output, and `merge`'s of
//! a sharded scan's parts.

use std::ffi::OsString;

use anyhow::bail;

use super::args::{CombineArgs, ScanArgs};
use super::Outcome;
use crate::formats::IcechunkOptions;
use crate::pipeline::{write_dataset, Format, Written};
use crate::store::StoreFormat;
use crate::VirtualDataset;

/// What to make of the scanned files, and where to write it (`scan`, and `merge` of a sharded scan).
pub(crate) struct Output<'a> {
    /// Where, in what format, and how the files are combined.
    pub(crate) combine: &'a CombineArgs,
    /// The scan options recorded in the store (for `append`).
    pub(crate) skip_unsupported: bool,
    pub(crate) max_slab_bytes: u64,
    /// Icechunk output: the branch and commit message (`None`: a new repository's `main`).
    pub(crate) branch: Option<&'a str>,
    pub(crate) message: Option<&'a str>,
    /// How an object-store output (an Icechunk repository or a store on S3) is reached.
    pub(crate) remote: crate::source::RemoteOptions,
    /// `--max-concurrent-requests`: remote files scanned, and uploads to an object-store output, at once.
    pub(crate) max_concurrent_requests: Option<u64>,
    /// Inputs an object-store output must not be nor contain, besides the sources (merge's parts).
    pub(crate) other_inputs: Vec<String>,
}

impl<'a> From<&'a ScanArgs> for Output<'a> {
    fn from(args: &'a ScanArgs) -> Self {
        Output {
            combine: &args.combine,
            skip_unsupported: args.skip_unsupported,
            max_slab_bytes: args.max_slab_mib << 20,
            branch: args.branch.as_deref(),
            message: args.message.as_deref(),
            remote: args.remote.options(),
            max_concurrent_requests: args.remote.max_concurrent_requests,
            other_inputs: Vec::new(),
        }
    }
}

impl Output<'_> {
    /// The library's view of the combine options (the concatenation dimensions given once).
    pub(crate) fn archive(&self) -> crate::pipeline::Archive {
        let mut archive = crate::pipeline::Archive::new(Vec::<OsString>::new())
            .drop_missing(self.combine.drop_missing)
            .first_global_attributes(self.combine.first_global_attributes)
            .skip_unsupported(self.skip_unsupported)
            .max_slab_bytes(self.max_slab_bytes)
            .remote(self.remote.clone())
            .max_concurrent_requests(super::args::scans_at_once(self.max_concurrent_requests));
        for dim in &self.combine.concat {
            archive = archive.concat_dim(dim.clone());
        }
        for variable in &self.combine.take_first {
            archive = archive.take_first(variable.clone());
        }
        archive
    }

    /// Where and in what format the library writes.
    fn pipeline_output(&self) -> crate::pipeline::Output {
        let format = match self.combine.format {
            // Sidecars are written per file by `cli/sidecars`; `write_combined` refuses them.
            StoreFormat::Native | StoreFormat::Dmrpp => Format::Native,
            StoreFormat::KerchunkJson => Format::KerchunkJson {
                url_prefixes: self.combine.url_prefix.to_vec(),
                inline_threshold: self.combine.inline_threshold.unwrap_or(0),
            },
            StoreFormat::KerchunkParquet => Format::KerchunkParquet(crate::formats::KerchunkParquetWriter {
                url_prefixes: self.combine.url_prefix.to_vec(),
                record_size: self.combine.record_size as usize,
                skip_unsupported: self.skip_unsupported,
                inline_threshold: self.combine.inline_threshold.unwrap_or(crate::formats::DEFAULT_INLINE_THRESHOLD),
            }),
            StoreFormat::Icechunk => Format::Icechunk(IcechunkOptions {
                branch: self.branch.unwrap_or("main").to_string(),
                message: self.message.map(str::to_string),
                commit_to_existing: self.branch.is_some() || self.message.is_some(),
                ..IcechunkOptions::default()
            }),
        };
        crate::pipeline::Output {
            location: self.combine.output.clone(),
            format,
            overwrite: self.combine.overwrite,
            remote: self.remote.clone(),
            max_concurrent_requests: super::args::requests_at_once(self.max_concurrent_requests),
            other_inputs: self.other_inputs.clone(),
        }
    }
}

/// A kerchunk JSON document written whole to a private temporary file (a scan that fails writes
/// nothing), then copied through `target` (standard output or a special file, which stays what it
/// was).
fn write_through(
    dataset: &VirtualDataset,
    out: &Output<'_>,
    target: &super::output::Target,
) -> anyhow::Result<Written> {
    let dir = super::output::private_temp_dir()?;
    let staged = dir.join("refs.json");
    let result = (|| {
        let output = crate::pipeline::Output { location: staged.clone(), overwrite: false, ..out.pipeline_output() };
        let written = write_dataset(dataset, &output)?;
        let mut file = std::fs::File::open(&staged)?;
        target.write_through(|sink| std::io::copy(&mut file, sink).map(|_| ()))?;
        anyhow::Ok(written)
    })();
    let _ = std::fs::remove_dir_all(&dir);
    result
}

/// Writes the combined dataset and reports what was written.
pub(crate) fn write_combined(dataset: VirtualDataset, out: &Output<'_>) -> anyhow::Result<Outcome> {
    if out.combine.format == StoreFormat::Dmrpp {
        bail!("--format dmrpp writes one sidecar per scanned file, not a combined dataset: use it with `vzarr scan`");
    }
    if out.combine.format != StoreFormat::Icechunk && (out.branch.is_some() || out.message.is_some()) {
        bail!("--branch and --message apply to --format icechunk only");
    }
    let target = match out.combine.format {
        StoreFormat::KerchunkJson => Some(super::output::Target::of(&out.combine.output)?),
        _ => None,
    };
    let through = target.as_ref().is_some_and(|t| !matches!(t, super::output::Target::File(_)));
    let written = match target {
        // A FIFO, a character device (`/dev/null`) or `-`: written through, as `export --kerchunk` does
        // (and the summary goes to standard error, which the document does not).
        Some(target) if through => write_through(&dataset, out, &target)?,
        _ => write_dataset(&dataset, &out.pipeline_output())?,
    };
    // As for every store scan writes: its sources' containers join the user's trust list.
    super::trust::trust_written(&written.source_containers());
    print_notes(&dataset);
    // Arrays a writer left out (kerchunk Parquet: grids Zarr v2 cannot express).
    let left_out =
        written.store_info().map_or(&[][..], |info| &info.warnings[dataset.warnings.len().min(info.warnings.len())..]);
    for warning in left_out {
        errln!("warning: {warning}");
    }
    let (refs, owned) = (written.references(), written.owned_chunks());
    match &written {
        Written::Store(info) => {
            let owned_bytes: u64 = info.arrays.iter().map(|a| a.stats.owned_bytes).sum();
            let rewritten: u64 = info.arrays.iter().map(|a| a.rewritten_chunks).sum();
            let line = format!(
                "{}: {} arrays from {} file(s): {refs} chunk references, {owned} store-owned chunks ({owned_bytes} bytes; {rewritten} rewritten)",
                out.combine.output.display(),
                info.arrays.len(),
                info.sources
            );
            if through {
                errln!("{line}");
            } else {
                outln!("{line}");
            }
        }
        Written::Icechunk(info) => {
            outln!(
                "{}: {} snapshot {} on branch {}: {} arrays from {} file(s): {refs} virtual references, {owned} store-owned chunks",
                info.repo,
                if info.created { "new repository," } else { "new" },
                info.snapshot,
                info.branch,
                info.arrays.len(),
                info.sources
            );
            outln!("virtual chunk containers to authorize when reading: {}", info.containers.join(" "));
        }
    }
    Ok(if dataset.warnings.is_empty() && left_out.is_empty() { Outcome::Done } else { Outcome::Partial })
}

fn print_notes(dataset: &VirtualDataset) {
    for warning in &dataset.warnings {
        errln!("warning: {warning}");
    }
    for gap in &dataset.provenance.gaps {
        errln!("note: gap: {gap}");
    }
    for array in &dataset.arrays {
        if let Some(why) = &array.metadata.notes.copied_chunks {
            errln!("note: {}: chunks are {why}", array.path);
        }
    }
}
