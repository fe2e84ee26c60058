//! Source locations written as URLs by the reference formats (kerchunk JSON and Parquet, DMR++
//! sidecars) and their exports: [`location_url`], with the `--url-prefix OLD=NEW` rules
//! ([`UrlPrefix`]) that rewrite them.

use std::path::Path;
use std::str::FromStr;

use crate::manifest::SourceTable;
use crate::source::Location;
use crate::store::WriteError;

/// One `--url-prefix OLD=NEW` rule: a source location (or its `file://` URL) starting with `from`
/// is written with `to` in place of that prefix, e.g. `/archive/` -> `s3://bucket/archive/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UrlPrefix {
    /// The prefix to replace.
    pub from: String,
    /// What replaces it.
    pub to: String,
}

/// A source location that cannot be written as a URL, or a URL prefix rule that is malformed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum UrlError {
    /// A source file location cannot be written as a URL.
    #[error("{location}: cannot be written as a URL: {reason}")]
    Location {
        /// The location as stored.
        location: String,
        /// Why.
        reason: String,
    },
    /// A URL prefix rule is not of the form `OLD=NEW`.
    #[error("url prefix {value:?}: {reason}")]
    Prefix {
        /// The rule as given.
        value: String,
        /// What is wrong.
        reason: String,
    },
}

impl FromStr for UrlPrefix {
    type Err = UrlError;

    /// Parses `OLD=NEW` (split at the first `=`; `OLD` must not be empty).
    fn from_str(value: &str) -> Result<Self, UrlError> {
        let bad = |reason: &str| UrlError::Prefix { value: value.to_string(), reason: reason.into() };
        let (from, to) = value.split_once('=').ok_or_else(|| bad("expected OLD=NEW"))?;
        if from.is_empty() {
            return Err(bad("the prefix to replace is empty"));
        }
        Ok(UrlPrefix { from: from.to_string(), to: to.to_string() })
    }
}

/// The URL of every source file, by source id.
///
/// # Errors
/// [`UrlError::Location`] for a relative local path (stores hold absolute ones).
pub fn source_urls(sources: &SourceTable, prefixes: &[UrlPrefix]) -> Result<Vec<String>, UrlError> {
    sources.iter().map(|file| location_url(&file.location, prefixes)).collect()
}

/// [`source_urls`] for a reference writer writing to `destination`: a location that has no URL is
/// the write's error.
pub(crate) fn written_source_urls(
    sources: &SourceTable,
    prefixes: &[UrlPrefix],
    destination: &Path,
) -> Result<Vec<String>, WriteError> {
    source_urls(sources, prefixes).map_err(|e| WriteError::Io {
        path: destination.to_path_buf(),
        what: "building source URLs".into(),
        source: std::io::Error::new(std::io::ErrorKind::InvalidInput, e.to_string()),
    })
}

/// The URL written for a source `location`: the first matching [`UrlPrefix`] rule applied to the
/// location as stored or to its `file://` URL; otherwise the URL as stored, or `file://` followed by
/// the absolute local path.
///
/// The path is not percent-encoded: fsspec's local filesystem strips `file://` and uses the rest as
/// the path, so `file:///a%20b.nc` would name a file called `a%20b.nc` (kerchunk writes paths the same
/// way).
///
/// # Errors
/// [`UrlError::Location`] when a local path is not absolute, or names a file whose name is not
/// UTF-8 and no rule maps it.
pub fn location_url(location: &str, prefixes: &[UrlPrefix]) -> Result<String, UrlError> {
    let url = match Location::parse(location) {
        Location::Url(url) => url,
        Location::Local(path) if path.is_absolute() => format!("file://{location}"),
        Location::Local(_) => {
            return Err(UrlError::Location {
                location: location.to_string(),
                reason: "not an absolute local path".into(),
            })
        }
    };
    for rule in prefixes {
        for form in [location, url.as_str()] {
            if let Some(rest) = form.strip_prefix(&rule.from) {
                return Ok(format!("{}{rest}", rule.to));
            }
        }
    }
    if crate::source::local_path(location).is_some_and(|path| path.to_str().is_none()) {
        return Err(UrlError::Location {
            location: location.to_string(),
            reason: "the file name is not UTF-8, which kerchunk JSON cannot name for fsspec (map it with a URL \
                     prefix, or read it through the native store)"
                .into(),
        });
    }
    Ok(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_become_file_urls_or_are_rewritten() {
        assert_eq!(location_url("/data/a b.nc", &[]).unwrap(), "file:///data/a b.nc");
        assert_eq!(location_url("s3://b/a.nc", &[]).unwrap(), "s3://b/a.nc");
        assert!(location_url("relative.nc", &[]).is_err());
        let rules: Vec<UrlPrefix> =
            vec!["/archive/=s3://bucket/archive/".parse().unwrap(), "file:///other/=https://h/".parse().unwrap()];
        assert_eq!(location_url("/archive/x/a.nc", &rules).unwrap(), "s3://bucket/archive/x/a.nc");
        assert_eq!(location_url("/other/a.nc", &rules).unwrap(), "https://h/a.nc");
        assert_eq!(location_url("/elsewhere/a.nc", &rules).unwrap(), "file:///elsewhere/a.nc");
        assert!("no-equals".parse::<UrlPrefix>().is_err());
        assert!("=x".parse::<UrlPrefix>().is_err());
    }
}
