//! Picking a store's format once, from its typed [`Location`], and opening it with that format's
//! [`StoreBackend`](super::backend::StoreBackend):
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

use super::backend::StoreInner;
use super::backend::{self, Opened};
use super::{OpenOptions, ReadError, Store};
use crate::source::{DirectoryAlias, Location};

/// Opens the store at `location` as `options` say.
pub(crate) async fn open(location: &Location, options: &OpenOptions) -> Result<Store, ReadError> {
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
    if options.branch.is_none() && super::references::looks_like_references(location) {
        return super::references::open(address, name, options).await;
    }
    #[cfg(feature = "kerchunk-parquet")]
    if options.branch.is_none() && super::parquet_refs::looks_like_parquet_refs(location) {
        return super::parquet_refs::open(address, options).await;
    }
    #[cfg(feature = "icechunk")]
    {
        let local_repository = location.local_path().is_some_and(crate::store::looks_like_repository);
        if local_repository || options.branch.is_some() {
            let branch = options.branch.as_deref().unwrap_or("main");
            return match super::repository::open(address, name, branch, options).await {
                Err(e) if !local_repository && backend::native::open(address, name, options).await.is_ok() => {
                    Err(ReadError::NotARepository { location: name.to_string(), reason: cause(&e) })
                }
                other => other,
            };
        }
        if location.is_url() {
            return match backend::native::open(address, name, options).await {
                Err(ReadError::NotFound { location, what }) => {
                    super::repository::open(address, name, "main", options).await.map_err(|repository| {
                        let what =
                            format!("{what}; not {} either: {}", backend::StoreKind::Icechunk, cause(&repository));
                        ReadError::NotFound { location, what }
                    })
                }
                other => other,
            };
        }
    }
    backend::native::open(address, name, options).await
}

/// An error's cause in one line, without the location it starts with.
#[cfg(feature = "icechunk")]
fn cause(error: &ReadError) -> String {
    match error {
        ReadError::Repository { source, .. } => crate::store::one_line(&source.to_string()),
        other => crate::store::one_line(&other.to_string()),
    }
}
