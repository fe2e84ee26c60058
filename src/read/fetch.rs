//! Read step 2 (async I/O): fetch a batch's byte ranges through object_store: per file, ranges less
//! than [`COALESCE_GAP`] apart are merged into one ranged GET, at most `max_concurrent_requests` files
//! at once.
//!
//! Before the first read of a source file its fingerprint (size, modification time, ETag) is compared
//! with the one recorded at scan time: references into a changed file would return wrong bytes. Every
//! ranged GET of a source then carries the recorded ETag as `If-Match` (or, without one, the recorded
//! modification time as `If-Unmodified-Since`), so an object replaced after that check is refused by
//! the server (412: [`ReadError::SourceChanged`]) instead of read. A reply shorter than the range asked
//! for is asked again, then refused naming the object and the range; it never reaches a slice.

use std::sync::Arc;

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};

use super::backend::{ChunkIndex, StoreInner};
use super::objects::{get_ranges, Condition, Target};
use super::plan::{Batch, FileKey, FileRequest};
use super::{ReadError, ReadOptions};

/// What a fetch needs that outlives the caller: shared store state and the array's own files.
#[derive(Debug, Clone)]
pub(crate) struct FetchContext {
    pub(crate) store: Arc<StoreInner>,
    pub(crate) array: String,
    /// The array's chunk index, which reads its store-owned chunks.
    pub(crate) index: Arc<dyn ChunkIndex>,
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
    let concurrent = options.max_concurrent_requests;
    let (location, name) = match request.file {
        FileKey::Owned => {
            return ctx.index.owned_chunks(&ctx.store, &ctx.array, &request.ranges, concurrent).await;
        }
        FileKey::Source(id) => {
            let (location, name) = ctx.store.source_location(id)?;
            if options.check_sources {
                ctx.store.check_source(id, &location).await?;
            }
            (location, name)
        }
    };
    // Sources read as they are now (`check_sources` off) carry no precondition either.
    let condition = match request.file {
        FileKey::Source(id) if options.check_sources && ctx.store.checks_sources() => {
            Condition::of(&ctx.store.source(id)?)
        }
        _ => Condition::default(),
    };
    let target = Target { location: &location, name: &name, array: &ctx.array, condition };
    let bytes = get_ranges(&target, &request.ranges, concurrent).await?;
    for (got, want) in bytes.iter().zip(&request.ranges) {
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
