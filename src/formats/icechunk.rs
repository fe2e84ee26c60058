//! Icechunk repositories as output: a [`VirtualDataset`] committed as one new snapshot.
//!
//! The Icechunk store format: its writer (this module, `icechunk/write`, `icechunk/update`), its
//! reader (`icechunk/read`: a branch opened lazily as a store) and the digests both check.
//!
//! Writing: like `formats/native`. Input: a virtual dataset and a repository location
//! (a local directory or an `s3://bucket/prefix` URL); output: one new snapshot on a branch of an
//! Icechunk repository (format spec v2, which stores rectilinear chunk grids), created when absent.
//! What the snapshot holds:
//! - every group's and array's `zarr.json` as vzarr writes it, except that a regular dimension of a
//!   rectilinear grid is written as the run `[[size, count]]` instead of the bare `size` (the same
//!   edges; Icechunk 2.3 accepts only lists there);
//! - every chunk in a source file as a virtual reference `(url, offset, length)` with the file's
//!   modification time as checksum ([`location`]), so Icechunk refuses to read a changed source;
//! - store-owned chunks (cropped interior partial chunks, new-dimension coordinates) as ordinary
//!   Icechunk chunks;
//! - in the repository config, one virtual chunk container per source directory: a reader
//!   authorizes those prefixes (`authorize_virtual_chunk_access`) and nothing else.
//!
//! Reading a branch back lives in `icechunk/read` (`read_icechunk` turns a branch back into a
//! [`VirtualDataset`]; `read_branch` reads it without touching the sources); [`update_icechunk`] commits a
//! changed dataset on top of it, writing only what changed (`vzarr append`; see `icechunk/update`).
//!
//! [`write_icechunk`] commits a whole dataset as one snapshot: the new content replaces the
//! branch's whole content (nodes absent from the dataset are gone from it; history keeps them).
//! Writes are atomic; the references go into manifests vzarr builds itself, at most
//! [`IcechunkOptions::manifest_chunks`] chunks each, bypassing Icechunk's in-memory change set:
//! see `icechunk/write`, `icechunk/snapshot` and `icechunk/manifests`.

mod digest;
mod location;
mod manifests;
mod nodes;
mod object;
mod read;
mod snapshot;
mod transaction_log;
mod update;
mod write;

use crate::dataset::VirtualDataset;
use crate::source::RemoteOptions;
use crate::store::ArrayInfo;
use crate::store::{one_line, IcechunkError};

pub(crate) use digest::{chunks_digest, references_digest};
pub use location::looks_like_repository;
pub(crate) use location::storage;
pub(crate) use read::{detect, open, read_branch_in, refresh_sources};
pub use read::{read_branch, read_icechunk};

/// The snapshot property holding the dataset's summary (the native store's `vzarr.json`).
///
/// Needs feature `icechunk`.
pub const SUMMARY_PROPERTY: &str = "vzarr";

pub use manifests::DEFAULT_MANIFEST_CHUNKS;

/// A branch's dataset as the repository records it, without touching any source (for `append`,
/// which must work with the old source files moved away): what `read_branch` returns and
/// [`update_icechunk`] commits on top of.
///
/// Needs feature `icechunk`.
#[derive(Debug, Clone)]
pub struct StoredBranch {
    /// The dataset. Its sources carry no size (0) and, as modification time, the references'
    /// checksum (whole seconds) when they have one: `formats/icechunk/read` refreshes the files read again.
    pub dataset: VirtualDataset,
    /// The snapshot read (the branch's tip when it was read).
    pub snapshot: String,
    /// Per source id: its virtual chunk URL.
    pub(crate) urls: Vec<String>,
    /// Per source id: the references' checksum (seconds since the epoch).
    pub(crate) checksums: Vec<Option<u32>>,
}

/// Options of [`write_icechunk`].
///
/// Needs feature `icechunk`.
#[derive(Debug, Clone)]
pub struct IcechunkOptions {
    /// The branch the snapshot is committed to. Default: `main`. In a new repository another
    /// branch is created at the snapshot (and `main` keeps the empty initial snapshot).
    pub branch: String,
    /// The commit message. Default: `vzarr <version>: N arrays from M files`.
    pub message: Option<String>,
    /// Commit to the repository when it exists already. Default: false (an existing repository is
    /// an error, [`IcechunkError::Exists`]).
    pub commit_to_existing: bool,
    /// How object stores (the repository's and the sources') are reached. Default: credentials
    /// from the environment.
    pub remote: RemoteOptions,
    /// Most chunks in one manifest: an array with more gets one manifest per run of whole rows
    /// along its first axis (one row when a row alone has more). Bounds the memory of a write
    /// (a few batches of manifests at a time) and of a reader (a manifest is loaded whole).
    /// Default: [`DEFAULT_MANIFEST_CHUNKS`].
    pub manifest_chunks: u64,
}

impl Default for IcechunkOptions {
    fn default() -> Self {
        IcechunkOptions {
            branch: "main".into(),
            message: None,
            commit_to_existing: false,
            remote: RemoteOptions::default(),
            manifest_chunks: DEFAULT_MANIFEST_CHUNKS,
        }
    }
}

/// What [`write_icechunk`] committed.
///
/// Needs feature `icechunk`.
#[derive(Debug, Clone, PartialEq)]
pub struct IcechunkInfo {
    /// The repository location.
    pub repo: String,
    /// The branch committed to.
    pub branch: String,
    /// The new snapshot's id.
    pub snapshot: String,
    /// Whether the repository was created.
    pub created: bool,
    /// The virtual chunk container prefixes the references need (to authorize when reading).
    pub containers: Vec<String>,
    /// Number of source files.
    pub sources: u64,
    /// Per array: chunk counts.
    pub arrays: Vec<ArrayInfo>,
    /// Manifests written (an append writes only those it changes).
    pub manifests: u64,
}

/// Commits `dataset` to the Icechunk repository at `repo` (a local directory or an
/// `s3://bucket/prefix` URL), creating the repository when it does not exist: one new snapshot.
///
/// The branch moves in one step from its previous snapshot to the new one (compare-and-swap: a
/// concurrent commit to the branch makes this call fail rather than lose either).
///
/// # Errors
/// [`IcechunkError`] naming the repository, node or source; the branch is left unchanged.
///
/// Needs feature `icechunk`.
pub async fn write_icechunk(
    dataset: &VirtualDataset,
    repo: &str,
    options: &IcechunkOptions,
) -> Result<IcechunkInfo, IcechunkError> {
    write::write(dataset, repo, options).await
}

/// An Icechunk repository as a [`Writer`](crate::store::Writer): each write commits one new snapshot
/// ([`write_icechunk`]) to the repository at the destination (a local directory, or an `s3://` URL
/// given as a path). [`WriteOptions::overwrite`](crate::store::WriteOptions::overwrite) commits to an
/// existing repository. The [`StoreInfo`](crate::store::StoreInfo) returned is the snapshot's summary,
/// with the virtual chunk containers a reader must authorize as its source containers.
///
/// A blocking call: inside a multi-threaded tokio runtime it blocks in place; elsewhere it runs on a
/// runtime of its own (not inside a current-thread runtime).
///
/// Needs feature `icechunk`.
#[derive(Debug, Clone, Default)]
pub struct IcechunkWriter {
    /// Branch, message and manifest size ([`IcechunkOptions::commit_to_existing`] is also set by
    /// `overwrite`).
    pub options: IcechunkOptions,
}

impl crate::store::Writer for IcechunkWriter {
    fn write(
        &self,
        dataset: &VirtualDataset,
        destination: &std::path::Path,
        options: &crate::store::WriteOptions,
    ) -> Result<crate::store::StoreInfo, crate::store::WriteError> {
        let repo = destination.to_string_lossy().into_owned();
        let options = IcechunkOptions {
            commit_to_existing: self.options.commit_to_existing || options.overwrite,
            ..self.options.clone()
        };
        let commit = write_icechunk(dataset, &repo, &options);
        let committed = match tokio::runtime::Handle::try_current() {
            Ok(handle) if handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
                tokio::task::block_in_place(|| handle.block_on(commit))
            }
            _ => tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .map_err(|source| crate::store::WriteError::Io {
                    path: destination.to_path_buf(),
                    what: "starting the I/O runtime".into(),
                    source,
                })?
                .block_on(commit),
        };
        let info = committed.map_err(|e| crate::store::WriteError::Icechunk(Box::new(e)))?;
        let mut summary = crate::store::StoreInfo::of(dataset, "icechunk", info.arrays);
        summary.source_containers = info.containers;
        Ok(summary)
    }
}

/// Commits `dataset` as one new snapshot on `options.branch` of the repository at `repo`, on top
/// of `stored` (the branch as `read::read_branch` read it), recording only the nodes and chunks that
/// differ from it. Fails, writing nothing, when the branch has moved since `stored` was read.
///
/// # Errors
/// [`IcechunkError`] naming the repository, node or source; the branch is left unchanged.
///
/// Needs feature `icechunk`.
pub async fn update_icechunk(
    stored: &StoredBranch,
    dataset: &VirtualDataset,
    repo: &str,
    options: &IcechunkOptions,
) -> Result<IcechunkInfo, IcechunkError> {
    update::update(stored, dataset, repo, options).await
}
