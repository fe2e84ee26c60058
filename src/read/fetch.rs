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

use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};

use super::inner::{check_owned, StoreInner};
use super::plan::{Batch, FileKey, FileRequest};
use super::{ReadError, ReadOptions};
use crate::manifest::binding::Binding;
use crate::source::ObjectLocation;

/// What a fetch needs that outlives the caller: shared store state and the array's own files.
#[derive(Debug, Clone)]
pub(crate) struct FetchContext {
    pub(crate) store: Arc<StoreInner>,
    pub(crate) array: String,
    /// Where the array's store-owned chunks are read.
    pub(crate) owned: OwnedChunks,
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
            let fetch = async |location: &ObjectLocation, name: &str| {
                let target = Target { location, name, array: &ctx.array, condition: Condition::default() };
                get_ranges(&target, &request.ranges, concurrent).await
            };
            return ctx.owned.read(&ctx.store, &ctx.array, &request.ranges, fetch).await;
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

/// Ranges of one object less than this many bytes apart are fetched with one GET (as object_store's
/// own coalescing does).
pub(crate) const COALESCE_GAP: u64 = 1 << 20;

/// Attempts at a range whose reply is shorter than asked for.
const SHORT_REPLY_ATTEMPTS: usize = 3;

/// The precondition every ranged GET of a source carries: the object must still be the one scanned.
#[derive(Debug, Clone, Default)]
struct Condition {
    etag: Option<String>,
    unmodified_since: Option<chrono::DateTime<chrono::Utc>>,
}

impl Condition {
    fn of(file: &crate::manifest::SourceFile) -> Self {
        let etag = file.etag.clone();
        // Last-Modified has whole seconds: the scan's time rounded up still admits the scanned object.
        let seconds = |ns: i64| ns.div_euclid(1_000_000_000) + i64::from(ns.rem_euclid(1_000_000_000) != 0);
        let unmodified_since = match etag {
            None => file.mtime_ns.and_then(|ns| chrono::DateTime::from_timestamp(seconds(ns), 0)),
            Some(_) => None,
        };
        Condition { etag, unmodified_since }
    }
}

/// The object a fetch reads, with names for messages.
struct Target<'a> {
    location: &'a ObjectLocation,
    name: &'a str,
    array: &'a str,
    condition: Condition,
}

/// The bytes of every range of one object, in order: nearby ranges merged, the merged requests
/// `concurrent` at a time, each conditional and length-checked ([`get_checked`]).
async fn get_ranges(
    target: &Target<'_>,
    ranges: &[std::ops::Range<u64>],
    concurrent: usize,
) -> Result<Vec<Bytes>, ReadError> {
    let mut order: Vec<usize> = (0..ranges.len()).collect();
    order.sort_by_key(|&i| ranges[i].start);
    let mut merged: Vec<std::ops::Range<u64>> = Vec::new();
    for &i in &order {
        let r = &ranges[i];
        match merged.last_mut() {
            Some(last) if r.start <= last.end.saturating_add(COALESCE_GAP) => last.end = last.end.max(r.end),
            _ => merged.push(r.clone()),
        }
    }
    let requests: Vec<_> = merged.iter().map(|r| get_checked(target, r.clone())).collect();
    let fetched: Vec<Bytes> = futures::stream::iter(requests).buffered(concurrent.max(1)).try_collect().await?;
    Ok(ranges
        .iter()
        .map(|r| {
            if r.start >= r.end {
                return Bytes::new();
            }
            // Every range lies inside exactly one merged range, whose bytes have its full length.
            let m = merged.partition_point(|m| m.end < r.end).min(merged.len() - 1);
            let start = usize::try_from(r.start.saturating_sub(merged[m].start)).unwrap_or(usize::MAX);
            let end = start.saturating_add(usize::try_from(r.end - r.start).unwrap_or(usize::MAX));
            fetched[m].slice(start.min(fetched[m].len())..end.min(fetched[m].len()))
        })
        .collect())
}

/// One ranged GET with the target's precondition; a short reply is asked again, then refused.
async fn get_checked(target: &Target<'_>, range: std::ops::Range<u64>) -> Result<Bytes, ReadError> {
    let want = range.end - range.start;
    let mut got = 0;
    for _ in 0..SHORT_REPLY_ATTEMPTS {
        let options = object_store::GetOptions {
            range: Some(range.clone().into()),
            if_match: target.condition.etag.clone(),
            if_unmodified_since: target.condition.unmodified_since,
            ..Default::default()
        };
        let result = target.location.store.get_opts(&target.location.path, options).await;
        let bytes = match result {
            Ok(reply) => reply.bytes().await,
            Err(e) => Err(e),
        };
        let bytes = match bytes {
            Ok(bytes) => bytes,
            Err(e) if crate::source::short_range_reply(&e).is_some() => {
                got = crate::source::short_range_reply(&e).unwrap_or(0) as usize;
                continue;
            }
            Err(object_store::Error::Precondition { .. }) => {
                return Err(ReadError::SourceChanged {
                    location: target.name.to_string(),
                    reason: "the object was replaced since the scan (the server refused the recorded ETag or time)"
                        .into(),
                })
            }
            Err(source) => {
                return Err(ReadError::Fetch {
                    location: target.name.to_string(),
                    array: target.array.to_string(),
                    what: format!("bytes {}..{}", range.start, range.end),
                    source: Box::new(source),
                })
            }
        };
        if bytes.len() as u64 == want {
            return Ok(bytes);
        }
        got = bytes.len();
    }
    Err(ReadError::ShortReply { location: target.name.to_string(), start: range.start, end: range.end, got })
}

/// Where an array's store-owned chunks ([`ChunkEntry::Owned`]) are read.
#[derive(Debug, Clone)]
pub(crate) enum OwnedChunks {
    /// A native store's `owned.bin`, with the manifest's binding (store format 2) whose checksums
    /// the bytes are checked against.
    File {
        /// The `owned.bin` object.
        location: ObjectLocation,
        /// The manifest's binding.
        binding: Option<Arc<Binding>>,
    },
    /// A repository's inline chunks and chunk objects, by slot.
    #[cfg(feature = "icechunk")]
    Repository(Arc<super::repository::ArrayChunks>),
    /// A reference document's inline chunks, by index.
    Table(Arc<super::references::ReferenceTable>),
}

impl OwnedChunks {
    /// The bytes of the store-owned chunks at `ranges` (entry offsets and lengths), in order, each
    /// checked (native stores of format 2: against the manifest's checksums).
    pub(crate) async fn read(
        &self,
        store: &StoreInner,
        array: &str,
        ranges: &[Range<u64>],
        fetch: impl AsyncFnOnce(&ObjectLocation, &str) -> Result<Vec<Bytes>, ReadError>,
    ) -> Result<Vec<Bytes>, ReadError> {
        match self {
            OwnedChunks::File { location, binding } => {
                let name = format!("{}/{}", store.location, array);
                let bytes = fetch(location, &name).await?;
                for (got, want) in bytes.iter().zip(ranges) {
                    if got.len() as u64 != want.end - want.start {
                        let reason = format!(
                            "short read at offset {}: {} of {} bytes",
                            want.start,
                            got.len(),
                            want.end - want.start
                        );
                        return Err(ReadError::SourceChanged { location: name, reason });
                    }
                    check_owned(binding.as_deref(), &store.location, array, want.start, got)?;
                }
                Ok(bytes)
            }
            #[cfg(feature = "icechunk")]
            OwnedChunks::Repository(chunks) => {
                let mut out = Vec::with_capacity(ranges.len());
                for range in ranges {
                    let bytes = chunks
                        .owned_bytes(range.start)
                        .await
                        .map_err(|e| super::repository::repository_error(chunks.repo(), &e))?;
                    if bytes.len() as u64 != range.end - range.start {
                        let reason = format!(
                            "store-owned chunk {} holds {} bytes, its entry {}",
                            range.start,
                            bytes.len(),
                            range.end - range.start
                        );
                        return Err(super::repository::repository_error(chunks.repo(), &reason));
                    }
                    out.push(bytes);
                }
                Ok(out)
            }
            OwnedChunks::Table(table) => ranges
                .iter()
                .map(|range| {
                    let bytes =
                        table.owned.get(range.start as usize).filter(|b| b.len() as u64 == range.end - range.start);
                    bytes.cloned().ok_or_else(|| ReadError::Store {
                        location: store.location.clone(),
                        what: array.to_string(),
                        source: format!("no inline chunk {} of {} bytes", range.start, range.end - range.start).into(),
                    })
                })
                .collect(),
        }
    }
}
