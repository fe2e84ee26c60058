//! `verify` of a store whose sources are on object stores or HTTP servers: source by source, each
//! copied to a temporary local file ([`super::copies`]) that libnetcdf reads, every array's part from
//! that source compared, then the copy closed and removed before the next source is fetched. Each
//! source is downloaded once, whatever the number of arrays, and disk use stays at one source.

use super::copies::copy_source;
use super::{finish, verify_array, ArrayVerdict, Layout, Oracle};
use crate::read::{ArrayReader, ReadOptions, Store};

/// Compares every array of `store` with its sources, one source at a time (see the module docs).
/// Failures (a source that cannot be copied included) are reported in the verdicts of the arrays
/// they concern.
pub(super) async fn verify_by_source(
    store: &Store,
    options: &ReadOptions,
    files: &mut Oracle,
    progress: &(dyn Fn(&str, u64, u64) + Sync),
) -> Vec<ArrayVerdict> {
    let mut verdicts: Vec<ArrayVerdict> = store.info().arrays.iter().map(|a| ArrayVerdict::new(&a.path)).collect();
    let mut arrays: Vec<Option<ArrayReader>> = Vec::with_capacity(verdicts.len());
    for verdict in &mut verdicts {
        match store.array(&verdict.path).await {
            Ok(array) => arrays.push(Some(array)),
            Err(e) => {
                verdict.error = Some(e.to_string());
                arrays.push(None);
            }
        }
    }
    let dir = std::env::temp_dir();
    let layout = Layout::of(store);
    for (id, source) in (0u32..).zip(store.sources().iter()) {
        // A local source (in a store that also has remote ones) is read where it is.
        let copy = if crate::source::local_path(&source.location).is_some() {
            Ok(None)
        } else {
            progress(&format!("copying {}", source.location), 0, 0);
            copy_source(store, id, &dir).await.map(Some).map_err(|e| one_line(&e.to_string()))
        };
        match &copy {
            Ok(Some(c)) => files.set_copy(&source.location, Ok(c.path().to_path_buf())),
            Ok(None) => {}
            Err(e) => files.set_copy(&source.location, Err(e.clone())),
        }
        for (array, verdict) in arrays.iter().zip(&mut verdicts) {
            let Some(array) = array.as_ref().filter(|_| verdict.error.is_none()) else { continue };
            if let Err(e) = verify_array(store, array, (options, &layout), (files, Some(id)), progress, verdict).await {
                // Without a copy the oracle fails for every array from this source: say why once.
                verdict.error = Some(copy.as_ref().err().cloned().unwrap_or_else(|| one_line(&e.to_string())));
            }
        }
        files.forget_copy();
        drop(copy);
    }
    for (array, verdict) in arrays.iter().zip(&mut verdicts) {
        if let Some(array) = array {
            finish(array, verdict);
        }
    }
    verdicts
}

/// A message on one line (an object store's error may carry the server's multi-line XML document).
fn one_line(message: &str) -> String {
    message.split_whitespace().collect::<Vec<_>>().join(" ").replace(": : ", ": ")
}
