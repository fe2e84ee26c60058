//! Stage 0, inputs -> files: the paths, URLs and glob patterns a user names, expanded into the files to
//! scan, in natural order ([`expand_inputs`]).
//!
//! Local patterns are matched one path component at a time (`inputs/glob_walk`), so names that are not
//! UTF-8 are found too; object-store URL patterns (`s3://bucket/cmip/*.nc`) list the bucket below the
//! pattern's literal prefix. HTTP servers have no listing: their URLs are taken as given.

mod glob_walk;

use std::ffi::OsString;
use std::path::PathBuf;

use crate::combine::natural_cmp;
use crate::source::{RemoteError, RemoteOptions};

/// Inputs that could not be expanded into files.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InputError {
    /// A glob pattern that does not parse.
    #[error("{pattern}: invalid glob pattern: {source}")]
    Pattern {
        /// The pattern.
        pattern: String,
        /// Why it does not parse.
        source: glob::PatternError,
    },
    /// A pattern that matches nothing (`what`: `files` or `objects`).
    #[error("{pattern}: no {what} match")]
    NoMatch {
        /// The pattern.
        pattern: String,
        /// `files` for a local pattern, `objects` for an object-store one.
        what: &'static str,
    },
    /// A directory on a pattern's way that exists but cannot be read.
    #[error("{}: reading the directory: {source}", path.display())]
    Directory {
        /// The directory.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A URL pattern that cannot be listed: no object key, an invalid URL, or an HTTP server.
    #[error("{pattern}: {reason}")]
    Url {
        /// The pattern.
        pattern: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The object store's listing failed (not found, access denied, ...).
    #[error("{pattern}: listing {prefix}: {reason}")]
    Listing {
        /// The pattern.
        pattern: String,
        /// The listed prefix.
        prefix: String,
        /// The store's error in one line (not found, access denied, ...: without the XML document
        /// servers append to their error responses).
        reason: String,
    },
    /// No object store can be built for the pattern's URL.
    #[error(transparent)]
    Remote(#[from] RemoteError),
}

/// Files named directly, plus the matches of glob patterns, in natural order; duplicates removed. An
/// argument naming an existing path is that path, even when it contains `*`, `?` or `[`; only other
/// arguments (which must be UTF-8) are glob patterns. Object-store URL globs (`s3://bucket/cmip/*.nc`)
/// are listed on `runtime`; other URLs are taken as given (HTTP has no listing).
///
/// # Errors
/// [`InputError`] naming the pattern that is invalid, matches nothing, or cannot be listed.
pub(crate) fn expand_inputs(
    inputs: &[OsString],
    remote: &RemoteOptions,
    runtime: &tokio::runtime::Handle,
) -> Result<Vec<PathBuf>, InputError> {
    let mut files = Vec::new();
    for input in inputs {
        let path = PathBuf::from(input);
        let text = input.to_str();
        let pattern = text.filter(|s| s.contains(['*', '?', '[']));
        let url = text.filter(|s| crate::source::is_url(s));
        match (url, pattern) {
            (Some(url), Some(_)) => files.extend(list_url_matches(url, remote, runtime)?),
            (Some(_), None) => files.push(path),
            (None, Some(pattern)) if path.symlink_metadata().is_err() => files.extend(glob_matches(pattern)?),
            _ => files.push(path),
        }
    }
    files.sort_by(|a, b| natural_cmp(&a.to_string_lossy(), &b.to_string_lossy()));
    files.dedup();
    Ok(files)
}

/// The objects of an object store matching a URL glob: the prefix up to the first pattern character
/// is listed, and every key is matched against the pattern (`*` stops at `/`).
fn list_url_matches(
    pattern: &str,
    remote: &RemoteOptions,
    runtime: &tokio::runtime::Handle,
) -> Result<Vec<PathBuf>, InputError> {
    use futures::TryStreamExt;
    let bad = |reason: &str| InputError::Url { pattern: pattern.to_string(), reason: reason.to_string() };
    let (scheme, rest) = pattern.split_once("://").ok_or_else(|| bad("not a URL"))?;
    let (bucket, key_pattern) = rest.split_once('/').ok_or_else(|| bad("no object key"))?;
    if matches!(scheme, "http" | "https") {
        return Err(bad("HTTP servers have no listing: give each URL"));
    }
    let base = url::Url::parse(&format!("{scheme}://{bucket}/")).map_err(|e| bad(&format!("invalid URL: {e}")))?;
    let (store, _) = crate::source::store_for_url(&base, remote)?;
    let literal = &key_pattern[..key_pattern.find(['*', '?', '[']).unwrap_or(key_pattern.len())];
    let directory = literal.rsplit_once('/').map_or("", |(dir, _)| dir);
    let prefix = object_store::path::Path::from(directory);
    let listed: Vec<object_store::ObjectMeta> =
        runtime.block_on(store.list(Some(&prefix)).try_collect()).map_err(|e| InputError::Listing {
            pattern: pattern.to_string(),
            prefix: format!("{scheme}://{bucket}/{directory}"),
            reason: crate::source::describe_error(&e),
        })?;
    let glob = glob::Pattern::new(key_pattern)
        .map_err(|source| InputError::Pattern { pattern: pattern.to_string(), source })?;
    let options = glob::MatchOptions { require_literal_separator: true, ..glob::MatchOptions::new() };
    let matches: Vec<PathBuf> = listed
        .iter()
        .filter(|meta| glob.matches_with(meta.location.as_ref(), options))
        .map(|meta| PathBuf::from(format!("{scheme}://{bucket}/{}", meta.location)))
        .collect();
    if matches.is_empty() {
        return Err(InputError::NoMatch { pattern: pattern.to_string(), what: "objects" });
    }
    Ok(matches)
}

fn glob_matches(pattern: &str) -> Result<Vec<PathBuf>, InputError> {
    let matches = glob_walk::matches(pattern)?;
    if matches.is_empty() {
        return Err(InputError::NoMatch { pattern: pattern.to_string(), what: "files" });
    }
    Ok(matches)
}
