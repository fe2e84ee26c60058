//! Reads of a store's own files (`vzarr.json`, `sources.bin`, `zarr.json`, manifests, reference
//! documents): whole objects or one byte range, errors naming the store.

use bytes::Bytes;
use object_store::ObjectStoreExt;

use super::ReadError;
use crate::source::ObjectLocation;

/// Fetches one whole object (store files: `vzarr.json`, `sources.bin`, `zarr.json`).
pub(crate) async fn fetch_all(location: &ObjectLocation, display: &str, what: &str) -> Result<Bytes, ReadError> {
    let store_error = |source: object_store::Error| ReadError::Store {
        location: display.to_string(),
        what: format!("reading {what}"),
        source: source.into(),
    };
    location.store.get(&location.path).await.map_err(store_error)?.bytes().await.map_err(store_error)
}

/// Fetches one byte range of an object (manifest header, index and blocks).
pub(crate) async fn fetch_range(
    location: &ObjectLocation,
    range: std::ops::Range<u64>,
    display: &str,
    what: &str,
) -> Result<Bytes, ReadError> {
    location.store.get_range(&location.path, range).await.map_err(|source| ReadError::Store {
        location: display.to_string(),
        what: format!("reading {what}"),
        source: source.into(),
    })
}
