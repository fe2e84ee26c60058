//! Reads of objects: a store's own files (`vzarr.json`, `sources.bin`, `zarr.json`, manifests,
//! reference documents) whole or one byte range, errors naming the store; and many ranges of one
//! object (sources, `owned.bin`): nearby ranges merged into one GET, each reply's length checked,
//! a source's GETs conditional on it being the object scanned.

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
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

/// Ranges of one object less than this many bytes apart are fetched with one GET (as object_store's
/// own coalescing does).
pub(crate) const COALESCE_GAP: u64 = 1 << 20;

/// Attempts at a range whose reply is shorter than asked for.
const SHORT_REPLY_ATTEMPTS: usize = 3;

/// The precondition every ranged GET of a source carries: the object must still be the one scanned.
#[derive(Debug, Clone, Default)]
pub(crate) struct Condition {
    etag: Option<String>,
    unmodified_since: Option<chrono::DateTime<chrono::Utc>>,
}

impl Condition {
    pub(crate) fn of(file: &crate::manifest::SourceFile) -> Self {
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
pub(crate) struct Target<'a> {
    pub(crate) location: &'a ObjectLocation,
    pub(crate) name: &'a str,
    pub(crate) array: &'a str,
    pub(crate) condition: Condition,
}

/// The bytes of every range of one object, in order: nearby ranges merged, the merged requests
/// `concurrent` at a time, each conditional and length-checked ([`get_checked`]).
pub(crate) async fn get_ranges(
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

/// The bytes of every range of the store's own object `location` (an array's `owned.bin`), named
/// `name` in messages: merged and length-checked as source reads are, with no precondition.
pub(crate) async fn get_owned_ranges(
    location: &ObjectLocation,
    name: &str,
    array: &str,
    ranges: &[std::ops::Range<u64>],
    concurrent: usize,
) -> Result<Vec<Bytes>, ReadError> {
    let target = Target { location, name, array, condition: Condition::default() };
    get_ranges(&target, ranges, concurrent).await
}
