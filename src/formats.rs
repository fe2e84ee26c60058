//! Stage 3-5, the store formats: one folder per format, each holding the format's layout contract,
//! its writer (a [`Writer`]), its reader (a store backend of `read/`) and its
//! export, so that a format's two sides change together:
//!
//! | folder | format | writer | reader | export |
//! | --- | --- | --- | --- | --- |
//! | `native/` | the native `*.vzarr` store | [`NativeWriter`] | manifests a block at a time | (copies: `export/materialize`) |
//! | `kerchunk/` | kerchunk reference JSON | [`KerchunkWriter`] | Zarr v3 or v2 keys | [`export_kerchunk`] |
//! | `parquet/` | kerchunk Parquet reference sets | [`KerchunkParquetWriter`] | record files as needed | [`export_kerchunk_parquet`] |
//! | `icechunk/` | Icechunk repositories | [`IcechunkWriter`], [`update_icechunk`] | a branch, lazily | (copies: `export/materialize`) |
//! | `dmrpp/` | DMR++ sidecars (OPeNDAP) | [`DmrppWriter`] | (an input format: `scan/dmrpp`) | |
//!
//! `inline` serves both kerchunk writers: a small array whose grid is rectilinear (Zarr v2 cannot say
//! it) is written as one inline chunk of its decoded values ([`DEFAULT_INLINE_THRESHOLD`]).
//!
//! This module is the formats' registry on the reading side too: [`Store::open_with`] picks a
//! store's format once, from its typed [`Location`], and opens it with that format's reader:
//!
//! - with a branch: an Icechunk repository (a native store there is told apart in the error);
//! - a local regular file, or a URL ending in `.json`: a kerchunk reference document;
//! - a local directory holding `.zmetadata`, or a URL ending in `.parq`/`.parquet`: a kerchunk
//!   Parquet reference set;
//! - a local directory holding an Icechunk repository: that repository's `main` branch;
//! - a URL: a native store, else (when it has no `vzarr.json`) an Icechunk repository; when neither
//!   opens, the error says why each did not;
//! - anything else: a native store.
//!
//! A local store whose name is not UTF-8 (object_store paths are UTF-8) is reached through a
//! descriptor of its directory, held as long as the store.
//!
//! The formats depend on `read/` (the backend traits they implement, the [`Store`] their exports
//! walk) and `store/` (the writers' contract, publishing); `read/` does not depend on them.

mod dmrpp;
mod exports;
#[cfg(feature = "icechunk")]
mod icechunk;
mod inline;
mod kerchunk;
mod native;
#[cfg(feature = "kerchunk-parquet")]
mod parquet;
mod urls;

pub use dmrpp::{sidecar_name, DmrppWriter};
// The writers' contract every format keeps (`store/`): the trait, its options and error, the one
// format enum, the summary and publishing.
#[cfg(feature = "icechunk")]
pub use crate::store::IcechunkError;
pub use crate::store::{
    url_sources, ArrayInfo, BlockDigests, OutputKind, RemoteOutput, Staged, StoreFormat, StoreInfo, UnknownFormat,
    WriteError, WriteOptions, Writer, SINGLE_PUT_MAX, STORE_FORMAT_VERSION, STORE_INFO_FILE,
};
#[cfg(any(feature = "kerchunk-parquet", feature = "icechunk"))]
pub(crate) use exports::groups_of;
pub(crate) use exports::{checked_nodes, staged};
pub use exports::{store_inputs, store_urls, ExportError};
#[cfg(feature = "icechunk")]
pub(crate) use icechunk::{chunks_digest, read_branch_in, references_digest, refresh_sources, storage};
#[cfg(feature = "icechunk")]
pub use icechunk::{
    looks_like_repository, read_branch, read_icechunk, update_icechunk, write_icechunk, IcechunkInfo, IcechunkOptions,
    IcechunkWriter, StoredBranch, DEFAULT_MANIFEST_CHUNKS, SUMMARY_PROPERTY,
};
pub(crate) use inline::dataset_store;
#[cfg(feature = "kerchunk-parquet")]
pub(crate) use inline::too_large as too_large_to_inline;
pub use inline::DEFAULT_INLINE_THRESHOLD;
pub(crate) use inline::{candidate as inline_candidate, inline_rectilinear, inlined_metadata, read_whole};
pub(crate) use kerchunk::RefsWriter;
pub use kerchunk::{export_kerchunk, KerchunkOptions, KerchunkReport, KerchunkWriter, KERCHUNK_VERSION};
pub(crate) use native::layout::{check_node_path, node_file, MANIFEST_FILE, OWNED_FILE, SOURCES_FILE};
pub(crate) use native::write_file;
pub use native::NativeWriter;
#[cfg(feature = "kerchunk-parquet")]
pub use parquet::{
    export_kerchunk_parquet, KerchunkParquetOptions, KerchunkParquetReport, KerchunkParquetWriter, DEFAULT_RECORD_SIZE,
    ZMETADATA,
};
pub use urls::{location_url, source_urls, UrlError, UrlPrefix};

impl Store {
    /// Opens the store at `location`: a local path (relative or absolute) or a URL. Its sources are
    /// read only where `authorization` allows ([`Authorization::check`](crate::trust::Authorization::check),
    /// at the first read of each source); [`Authorization::from_user_config`](crate::trust::Authorization::from_user_config)
    /// gives what the command line trusts.
    ///
    /// # Errors
    /// [`ReadError::Store`] when `vzarr.json` or `sources.bin` is missing or invalid, or the store was
    /// written by a newer, incompatible vzarr.
    pub async fn open(
        location: impl Into<Location>,
        authorization: &crate::trust::Authorization,
    ) -> Result<Self, ReadError> {
        Self::open_with(location, &OpenOptions::new(authorization.clone())).await
    }

    /// Opens the store at `location` (a local path, relative or absolute and not necessarily UTF-8,
    /// or a URL; classified once as a [`Location`]) as `options` say: a native store, an Icechunk
    /// repository (a directory holding one, a URL where no native store is, or any location when
    /// [`OpenOptions::branch`] is given; feature `icechunk`; read lazily, a manifest at a time), a
    /// kerchunk reference document (a file, or a URL ending in `.json`; read whole) or a kerchunk
    /// Parquet reference set. All are read through the same [`ArrayReader`](crate::read::ArrayReader);
    /// [`Store::kind`] says which it is.
    ///
    /// # Errors
    /// As [`Store::open`]; [`ReadError::Repository`] when a repository or its branch cannot be read;
    /// [`ReadError::NotFound`] saying why each kind of store tried did not open.
    pub async fn open_with(location: impl Into<Location>, options: &OpenOptions) -> Result<Self, ReadError> {
        open(&location.into(), options).await
    }
}

use futures::future::BoxFuture;

use crate::read::{OpenOptions, Opened, ReadError, Store, StoreInner};
use crate::source::{DirectoryAlias, Location};

/// A store's location as the registry hands it to a format's reader: classified once, here.
#[derive(Debug)]
pub(crate) struct Address {
    /// The location as given.
    pub(crate) location: Location,
    /// How it is named in messages.
    pub(crate) name: String,
    /// The location as UTF-8 text: the URL or the path as given (a local path whose name is not
    /// UTF-8: its directory's alias).
    pub(crate) text: String,
}

impl Address {
    /// The location as object stores reach it: the URL, or the absolute local path.
    ///
    /// # Errors
    /// [`ReadError::Store`] when a relative path cannot be made absolute.
    pub(crate) fn absolute(&self) -> Result<String, ReadError> {
        match &self.location {
            Location::Url(_) => Ok(self.text.clone()),
            Location::Local(_) => std::path::absolute(&self.text).map(|p| p.display().to_string()).map_err(|e| {
                ReadError::Store { location: self.name.clone(), what: "resolving path".into(), source: e.into() }
            }),
        }
    }
}

/// What a format's reader makes of a location before reading anything remote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Detect {
    /// The location holds this format (by its name, or by what the local file system shows).
    Yes,
    /// It may: only opening it tells.
    Probe,
    /// It may, and its name suggests it (a URL ending in `.icechunk`): probed before the others, so
    /// that opening it asks for nothing of another format.
    #[cfg_attr(not(feature = "icechunk"), allow(dead_code))]
    Named,
    /// It does not.
    No,
}

impl Detect {
    /// [`Detect::Yes`] when `recognised`, else [`Detect::No`]: the answer of a format that its name
    /// or its local files alone tell.
    pub(crate) fn yes_if(recognised: bool) -> Self {
        if recognised {
            Detect::Yes
        } else {
            Detect::No
        }
    }
}

/// Opens a format's store at an address.
type OpenFn = for<'a> fn(&'a Address, &'a OpenOptions) -> BoxFuture<'a, Result<Opened, ReadError>>;

/// One store format's reading side, as the registry knows it.
struct Reader {
    /// The format.
    format: StoreFormat,
    /// Whether a location holds it.
    detect: fn(&Location) -> Detect,
    /// Opens it.
    open: OpenFn,
}

/// The readers, in the order they are asked: the first that says [`Detect::Yes`] opens the
/// location; when none does, those that said [`Detect::Named`] or [`Detect::Probe`] are opened, the
/// named first, else in this order, until one finds its store. Adding a store format is one line here.
static READERS: &[Reader] = &[
    Reader { format: StoreFormat::KerchunkJson, detect: kerchunk::detect, open: |a, o| Box::pin(kerchunk::open(a, o)) },
    #[cfg(feature = "kerchunk-parquet")]
    Reader {
        format: StoreFormat::KerchunkParquet,
        detect: parquet::detect,
        open: |a, o| Box::pin(parquet::open(a, o)),
    },
    Reader { format: StoreFormat::Native, detect: native::detect, open: |a, o| Box::pin(native::open(a, o)) },
    #[cfg(feature = "icechunk")]
    Reader {
        format: StoreFormat::Icechunk,
        detect: icechunk::detect,
        open: |a, o| Box::pin(icechunk::open(&a.text, &a.name, "main", o)),
    },
];

/// Opens the store at `location` as `options` say.
async fn open(location: &Location, options: &OpenOptions) -> Result<Store, ReadError> {
    let name = location.name();
    let (text, alias) = match location.as_str() {
        Some(text) => (text.to_string(), None),
        None => {
            let path = location.local_path().unwrap_or(std::path::Path::new(""));
            let alias = DirectoryAlias::open(path.as_os_str()).map_err(|e| ReadError::Store {
                location: name.clone(),
                what: "opening its directory".into(),
                source: e.into(),
            })?;
            (alias.path().to_string(), Some(alias))
        }
    };
    let address = Address { location: location.clone(), name, text };
    let opened = open_format(&address, options).await?;
    Ok(Store::from_inner(StoreInner::new(&address.location, &address.name, opened, options, alias)))
}

/// Opens the store at `address` with the reader the registry picks ([`READERS`]); a branch names an
/// Icechunk repository ([`open_branch`]).
async fn open_format(address: &Address, options: &OpenOptions) -> Result<Opened, ReadError> {
    #[cfg(feature = "icechunk")]
    if let Some(branch) = options.branch.as_deref() {
        return open_branch(address, branch, options).await;
    }
    // Detection stops at the first format that recognises the location (each asks the file system).
    let (mut named, mut probes) = (Vec::new(), Vec::new());
    for reader in READERS {
        match (reader.detect)(&address.location) {
            Detect::Yes => return (reader.open)(address, options).await,
            Detect::Named => named.push(reader),
            Detect::Probe => probes.push(reader),
            Detect::No => {}
        }
    }
    named.append(&mut probes);
    let probes = named;
    let mut not_found: Option<(String, String)> = None;
    for reader in probes {
        match ((reader.open)(address, options).await, not_found.take()) {
            (Err(ReadError::NotFound { location, what }), None) => not_found = Some((location, what)),
            (Err(error), Some((location, what))) => {
                let what = format!("{what}; not {} either: {}", reader.format, cause(&error));
                return Err(ReadError::NotFound { location, what });
            }
            (other, _) => return other,
        }
    }
    let (location, what) = not_found.unwrap_or_else(|| (address.name.clone(), "no store format there".into()));
    Err(ReadError::NotFound { location, what })
}

/// Opens branch `branch` of the Icechunk repository at `address`; when there is none but a native
/// store is there, the error says so.
#[cfg(feature = "icechunk")]
async fn open_branch(address: &Address, branch: &str, options: &OpenOptions) -> Result<Opened, ReadError> {
    let local_repository = address.location.local_path().is_some_and(icechunk::looks_like_repository);
    match icechunk::open(&address.text, &address.name, branch, options).await {
        Err(e) if !local_repository && native::open(address, options).await.is_ok() => {
            Err(ReadError::NotARepository { location: address.name.clone(), reason: cause(&e) })
        }
        other => other,
    }
}

/// An error's cause in one line, without the location it starts with.
fn cause(error: &ReadError) -> String {
    match error {
        ReadError::Repository { source, .. } => crate::store::one_line(&source.to_string()),
        other => crate::store::one_line(&other.to_string()),
    }
}
