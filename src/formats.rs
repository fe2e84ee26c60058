//! Stage 3-5, the store formats: one folder per format, each holding the format's layout contract,
//! its writer (a [`Writer`](crate::store::Writer)), its reader (a store backend of `read/`) and its
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
mod kerchunk;
mod native;
#[cfg(feature = "kerchunk-parquet")]
mod parquet;
mod urls;

pub use dmrpp::{sidecar_name, DmrppWriter};
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

use crate::read::{OpenOptions, Opened, ReadError, Store, StoreInner};
use crate::source::{DirectoryAlias, Location};

/// Opens the store at `location` as `options` say.
async fn open(location: &Location, options: &OpenOptions) -> Result<Store, ReadError> {
    let name = location.name();
    let (address, alias) = match location.as_str() {
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
    let opened = open_format(location, &address, &name, options).await?;
    Ok(Store::from_inner(StoreInner::new(&name, opened, options, alias)))
}

/// Opens the store at `address` (`location` as UTF-8 text, or its directory's alias) in the format
/// its location says, named `name` in messages.
async fn open_format(
    location: &Location,
    address: &str,
    name: &str,
    options: &OpenOptions,
) -> Result<Opened, ReadError> {
    if options.branch.is_none() && kerchunk::read::looks_like_references(location) {
        return kerchunk::read::open(address, name, options).await;
    }
    #[cfg(feature = "kerchunk-parquet")]
    if options.branch.is_none() && parquet::looks_like_parquet_refs(location) {
        return parquet::open(address, options).await;
    }
    #[cfg(feature = "icechunk")]
    {
        let local_repository = location.local_path().is_some_and(icechunk::looks_like_repository);
        if local_repository || options.branch.is_some() {
            let branch = options.branch.as_deref().unwrap_or("main");
            return match icechunk::open(address, name, branch, options).await {
                Err(e) if !local_repository && native::open(address, name, options).await.is_ok() => {
                    Err(ReadError::NotARepository { location: name.to_string(), reason: cause(&e) })
                }
                other => other,
            };
        }
        if location.is_url() {
            return match native::open(address, name, options).await {
                Err(ReadError::NotFound { location, what }) => {
                    icechunk::open(address, name, "main", options).await.map_err(|repository| {
                        let what = format!(
                            "{what}; not {} either: {}",
                            crate::store::StoreFormat::Icechunk,
                            cause(&repository)
                        );
                        ReadError::NotFound { location, what }
                    })
                }
                other => other,
            };
        }
    }
    native::open(address, name, options).await
}

/// An error's cause in one line, without the location it starts with.
#[cfg(feature = "icechunk")]
fn cause(error: &ReadError) -> String {
    match error {
        ReadError::Repository { source, .. } => crate::store::one_line(&source.to_string()),
        other => crate::store::one_line(&other.to_string()),
    }
}
