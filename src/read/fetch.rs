//! Read step 2 (async I/O): fetch a batch's byte ranges through object_store, one `get_ranges` call
//! per file (object_store coalesces nearby ranges), at most `max_concurrent_requests` files at once.
//!
//! Before the first read of a source file its fingerprint (size, modification time) is compared with
//! the one recorded at scan time: references into a changed file would return wrong bytes.

use std::sync::Arc;

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use object_store::ObjectStoreExt;

use super::open::StoreInner;
use super::plan::{Batch, FileKey, FileRequest};
use super::{ReadError, ReadOptions};
use crate::source::ObjectLocation;

/// What a fetch needs that outlives the caller: shared store state and the array's own files.
#[derive(Debug, Clone)]
pub(crate) struct FetchContext {
    pub(crate) store: Arc<StoreInner>,
    pub(crate) array: String,
    pub(crate) owned: ObjectLocation,
    /// The manifest's binding, whose checksums store-owned bytes are checked against.
    pub(crate) binding: Option<Arc<crate::manifest::binding::Binding>>,
}

/// A batch with its bytes: `data[request][range]`.
#[derive(Debug)]
pub(crate) struct Fetched {
    pub(crate) batch: Batch,
    pub(crate) data: Vec<Vec<Bytes>>,
}

/// Fetches every range of `batch`.
pub(crate) async fn fetch_batch(ctx: FetchContext, batch: Batch, options: ReadOptions) -> Result<Fetched, ReadError> {
    let requests = batch.requests.clone();
    let data = futures::stream::iter(requests.into_iter().map(|request| fetch_file(&ctx, request, &options)))
        .buffered(options.max_concurrent_requests.max(1))
        .try_collect()
        .await?;
    Ok(Fetched { batch, data })
}

async fn fetch_file(ctx: &FetchContext, request: FileRequest, options: &ReadOptions) -> Result<Vec<Bytes>, ReadError> {
    let (location, name) = match request.file {
        FileKey::Owned => (ctx.owned.clone(), format!("{}/{}", ctx.store.location, ctx.array)),
        FileKey::Source(id) => {
            let (location, name) = ctx.store.source_location(id)?;
            if options.check_sources {
                ctx.store.check_source(id, &location).await?;
            }
            (location, name)
        }
    };
    let what = format!("{} byte ranges", request.ranges.len());
    let bytes = location.store.get_ranges(&location.path, &request.ranges).await.map_err(|source| {
        ReadError::Fetch { location: name.clone(), array: ctx.array.clone(), what, source: Box::new(source) }
    })?;
    for (got, want) in bytes.iter().zip(&request.ranges) {
        if matches!(request.file, FileKey::Owned) && got.len() as u64 == want.end - want.start {
            let binding = ctx.binding.as_deref();
            super::open::check_owned(binding, &ctx.store.location, &ctx.array, want.start, got)?;
        }
        if got.len() as u64 != want.end - want.start {
            return Err(ReadError::SourceChanged {
                location: name,
                reason: format!(
                    "short read at offset {}: {} of {} bytes",
                    want.start,
                    got.len(),
                    want.end - want.start
                ),
            });
        }
    }
    Ok(bytes)
}

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
