//! [`Output`] and [`write_dataset`]: a combined dataset written as a native store, kerchunk JSON or an
//! Icechunk repository, at a local path or an object-store URL.

use std::path::{Path, PathBuf};

use super::PipelineError;
use crate::dataset::VirtualDataset;
#[cfg(feature = "icechunk")]
use crate::formats::{IcechunkInfo, IcechunkOptions};
use crate::formats::{KerchunkWriter, NativeWriter, UrlPrefix};
#[cfg(feature = "icechunk")]
use crate::source::DirectoryAlias;
use crate::source::RemoteOptions;
use crate::store::{OutputKind, RemoteOutput, StoreFormat, StoreInfo, WriteOptions, Writer};

/// What to write.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Format {
    /// A native store (`*.vzarr`): Zarr v3 metadata plus the binary chunk manifest.
    Native,
    /// kerchunk reference JSON; `url_prefixes` rewrite source locations (`OLD=NEW`, first match wins).
    KerchunkJson {
        /// The rewrites, in order.
        url_prefixes: Vec<UrlPrefix>,
        /// Rectilinear arrays of at most this many decoded bytes are inlined
        /// ([`KerchunkWriter::inline_threshold`]; 0 inlines nothing).
        inline_threshold: u64,
    },
    /// One new snapshot of an Icechunk repository (created when missing).
    #[cfg(feature = "icechunk")]
    Icechunk(IcechunkOptions),
    /// A kerchunk Parquet reference set (a directory; Zarr v2 metadata, `refs.N.parq` per array).
    #[cfg(feature = "kerchunk-parquet")]
    KerchunkParquet(crate::formats::KerchunkParquetWriter),
}

impl Format {
    /// The writer of this format's files, configured as it says. An Icechunk repository is committed
    /// to, not written as files: [`write_dataset`] commits it, and this is its [`Writer`] form.
    pub fn writer(&self) -> Box<dyn Writer> {
        match self {
            Format::Native => Box::new(NativeWriter),
            Format::KerchunkJson { url_prefixes, inline_threshold } => {
                Box::new(KerchunkWriter { url_prefixes: url_prefixes.clone(), inline_threshold: *inline_threshold })
            }
            #[cfg(feature = "icechunk")]
            Format::Icechunk(options) => Box::new(crate::formats::IcechunkWriter { options: options.clone() }),
            #[cfg(feature = "kerchunk-parquet")]
            Format::KerchunkParquet(writer) => Box::new(writer.clone()),
        }
    }

    /// The store format this writes.
    pub fn store_format(&self) -> StoreFormat {
        match self {
            Format::Native => StoreFormat::Native,
            Format::KerchunkJson { .. } => StoreFormat::KerchunkJson,
            #[cfg(feature = "icechunk")]
            Format::Icechunk(_) => StoreFormat::Icechunk,
            #[cfg(feature = "kerchunk-parquet")]
            Format::KerchunkParquet(_) => StoreFormat::KerchunkParquet,
        }
    }
}

/// Where and how [`write_dataset`] writes.
#[derive(Debug, Clone)]
pub struct Output {
    /// A local path or an object-store URL (`s3://bucket/stores/tas.vzarr`).
    pub location: PathBuf,
    /// What to write there.
    pub format: Format,
    /// Replace an existing output of the same kind (never another file or directory). Default: false.
    /// For Icechunk: commit to an existing repository.
    pub overwrite: bool,
    /// How an object-store output is reached. Default: the environment's configuration.
    pub remote: RemoteOptions,
    /// Objects uploaded at once to an object-store output. Default: 16.
    pub max_concurrent_requests: usize,
    /// Inputs an object-store output must not be nor contain, besides the dataset's sources (the parts
    /// of a merge). Default: none.
    pub other_inputs: Vec<String>,
}

impl Output {
    /// An output at `location` in `format`, every other setting default.
    pub fn new(location: impl Into<PathBuf>, format: Format) -> Self {
        Output {
            location: location.into(),
            format,
            overwrite: false,
            remote: RemoteOptions::default(),
            max_concurrent_requests: 16,
            other_inputs: Vec::new(),
        }
    }

    /// The object-store URL of the output, `None` for a local path.
    pub fn url(&self) -> Option<&str> {
        match crate::source::Location::from(&self.location) {
            crate::source::Location::Url(_) => self.location.to_str(),
            crate::source::Location::Local(_) => None,
        }
    }

    /// The kind of output a native or kerchunk output is (what it may replace).
    fn kind(&self) -> OutputKind {
        self.format.store_format().output_kind().unwrap_or(OutputKind::VzarrStore)
    }

    /// Refuses at once an object-store destination that [`write_dataset`] would refuse (exists without
    /// `overwrite`, is or holds one of `inputs`), so a long scan is not wasted. Local outputs and
    /// Icechunk repositories are checked when written.
    ///
    /// # Errors
    /// [`PipelineError::Write`] with the destination's refusal.
    pub fn check_on(&self, runtime: &tokio::runtime::Handle, inputs: &[String]) -> Result<(), PipelineError> {
        if self.is_icechunk() {
            return Ok(());
        }
        let Some(url) = self.url() else { return Ok(()) };
        let begun = runtime.block_on(RemoteOutput::begin(
            url,
            self.kind(),
            self.overwrite,
            inputs,
            &self.remote,
            self.max_concurrent_requests,
        ));
        begun.map(drop).map_err(|source| PipelineError::Write { output: url.to_string(), source })
    }

    fn is_icechunk(&self) -> bool {
        self.format.store_format() == StoreFormat::Icechunk
    }
}

/// What [`write_dataset`] wrote.
#[derive(Debug, Clone)]
#[non_exhaustive]
#[allow(clippy::large_enum_variant)] // one value per write: boxing would buy nothing
pub enum Written {
    /// A native store or kerchunk JSON, with its summary.
    Store(StoreInfo),
    /// An Icechunk commit.
    #[cfg(feature = "icechunk")]
    Icechunk(IcechunkInfo),
}

impl Written {
    /// The containers (location prefixes) holding the sources, which a reader must authorize.
    pub fn source_containers(&self) -> Vec<String> {
        match self {
            Written::Store(info) => info.source_containers.clone(),
            #[cfg(feature = "icechunk")]
            Written::Icechunk(info) => info.containers.clone(),
        }
    }

    /// Per-array summaries.
    pub fn arrays(&self) -> &[crate::store::ArrayInfo] {
        match self {
            Written::Store(info) => &info.arrays,
            #[cfg(feature = "icechunk")]
            Written::Icechunk(info) => &info.arrays,
        }
    }

    /// The summary of a native store or kerchunk file; `None` for an Icechunk commit.
    pub fn store_info(&self) -> Option<&StoreInfo> {
        match self {
            Written::Store(info) => Some(info),
            #[cfg(feature = "icechunk")]
            Written::Icechunk(_) => None,
        }
    }

    /// Chunk references written (into source files).
    pub fn references(&self) -> u64 {
        self.arrays().iter().map(|a| a.stats.referenced).sum()
    }

    /// Chunks the output holds itself (rewritten partial chunks, small arrays, strings).
    pub fn owned_chunks(&self) -> u64 {
        self.arrays().iter().map(|a| a.stats.owned).sum()
    }
}

/// Writes `dataset` as `output` says, on a runtime of its own when the output is on an object store
/// or an Icechunk repository. Atomic: on error nothing is left at the destination (an Icechunk branch
/// is unchanged).
///
/// # Errors
/// [`PipelineError::Write`] (or `Icechunk`) naming the output and why.
pub fn write_dataset(dataset: &VirtualDataset, output: &Output) -> Result<Written, PipelineError> {
    if output.url().is_none() && !output.is_icechunk() {
        return write_local(dataset, output, &output.location, output.overwrite).map(Written::Store);
    }
    let runtime = super::runtime()?;
    write_dataset_on(dataset, output, runtime.handle())
}

/// [`write_dataset`] on the caller's runtime (call it from outside the runtime's threads).
///
/// # Errors
/// As [`write_dataset`].
pub fn write_dataset_on(
    dataset: &VirtualDataset,
    output: &Output,
    runtime: &tokio::runtime::Handle,
) -> Result<Written, PipelineError> {
    #[cfg(feature = "icechunk")]
    if let Format::Icechunk(options) = &output.format {
        let options = IcechunkOptions {
            commit_to_existing: options.commit_to_existing || output.overwrite,
            remote: output.remote.clone(),
            ..options.clone()
        };
        if output.location.to_str().is_none() {
            return write_icechunk_not_utf8(dataset, &output.location, &options, runtime);
        }
        let repo = output.location.to_string_lossy().into_owned();
        let info = runtime.block_on(crate::formats::write_icechunk(dataset, &repo, &options))?;
        return Ok(Written::Icechunk(info));
    }
    let Some(url) = output.url() else {
        return write_local(dataset, output, &output.location, output.overwrite).map(Written::Store);
    };
    let failed = |source| PipelineError::Write { output: url.to_string(), source };
    let mut inputs = crate::store::url_sources(&dataset.sources);
    inputs.extend(output.other_inputs.iter().cloned());
    let staged = runtime
        .block_on(RemoteOutput::begin(
            url,
            output.kind(),
            output.overwrite,
            &inputs,
            &output.remote,
            output.max_concurrent_requests,
        ))
        .map_err(failed)?;
    let info = write_local(dataset, output, staged.local_path(), false)?;
    runtime.block_on(staged.publish()).map_err(failed)?;
    Ok(Written::Store(info))
}

/// An Icechunk repository at a local path that is not UTF-8, written through a descriptor of its
/// directory ([`DirectoryAlias`]; created here when missing, and removed again if the write fails).
#[cfg(feature = "icechunk")]
fn write_icechunk_not_utf8(
    dataset: &VirtualDataset,
    location: &Path,
    options: &IcechunkOptions,
    runtime: &tokio::runtime::Handle,
) -> Result<Written, PipelineError> {
    let name = location.to_string_lossy().into_owned();
    let refuse = |reason: String| PipelineError::Store { store: name.clone(), reason };
    let created = std::fs::create_dir(location).is_ok();
    let alias = DirectoryAlias::open(location.as_os_str()).map_err(|e| refuse(format!("opening: {e}")))?;
    match runtime.block_on(crate::formats::write_icechunk(dataset, alias.path(), options)) {
        Ok(mut info) => {
            info.repo.clone_from(&name);
            Ok(Written::Icechunk(info))
        }
        Err(e) => {
            if created {
                let _ = std::fs::remove_dir_all(location);
            }
            Err(refuse(alias.unalias(&e.to_string(), location.as_os_str()).replacen(&format!("{name}: "), "", 1)))
        }
    }
}

fn write_local(
    dataset: &VirtualDataset,
    output: &Output,
    path: &Path,
    overwrite: bool,
) -> Result<StoreInfo, PipelineError> {
    output
        .format
        .writer()
        .write(dataset, path, &WriteOptions { overwrite })
        .map_err(|source| PipelineError::Write { output: output.location.display().to_string(), source })
}
