//! Where things are, in Icechunk's terms: the repository's storage, each source file's virtual chunk
//! location (a URL), the virtual chunk containers covering them, and the checksum that makes Icechunk
//! refuse a source changed since the scan.
//!
//! - A local source `/data/a b.nc` is the URL `file:///data/a%20b.nc` (Icechunk parses `file://`
//!   locations as URLs, so the path is percent-encoded); URLs are kept as given.
//! - Containers: one per source directory (`file:///data/`, `s3://bucket/cmip/`), dropping those
//!   inside another one, so a reader authorizes exactly the prefixes the sources live under.
//! - Checksum: [`Checksum::LastModified`] in whole seconds, rounded up. Icechunk asks the store for
//!   the bytes "if unmodified since" that second; rounding down would refuse a file modified at
//!   `12:00:00.5` that never changed.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use icechunk::config::{HttpConfig, S3Options};
use icechunk::format::manifest::{Checksum, SecondsSinceEpoch};
use icechunk::virtual_chunks::VirtualChunkContainer;
use icechunk::{ObjectStoreConfig, Storage};

use super::IcechunkError;
use crate::manifest::SourceFile;
use crate::source::{Location, RemoteOptions};

/// The virtual chunk URL of a source location (an absolute local path or a URL).
///
/// # Errors
/// [`IcechunkError::Location`] for a relative local path.
pub(crate) fn source_url(location: &str) -> Result<String, IcechunkError> {
    if Location::parse(location).is_url() {
        // A local path that is not UTF-8 is recorded as a percent-encoded `file://` URL, which
        // Icechunk's containers (UTF-8 prefixes) never match.
        let local = crate::source::local_path(location);
        if local.is_some_and(|path| path.to_str().is_none()) {
            let reason = "its path is not valid UTF-8, which Icechunk's virtual references cannot name \
                          (rename it, or write a native store)";
            return Err(IcechunkError::Location { location: location.to_string(), reason: reason.into() });
        }
        return Ok(location.to_string());
    }
    url::Url::from_file_path(location).map(String::from).map_err(|()| IcechunkError::Location {
        location: location.to_string(),
        reason: "not an absolute local path".into(),
    })
}

/// The directory prefix of a URL (up to and including its last `/`).
fn directory_of(url: &str) -> &str {
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    match url[after_scheme..].rfind('/') {
        Some(i) => &url[..after_scheme + i + 1],
        None => url,
    }
}

/// The container prefixes covering `urls`: each URL's directory, without those inside another.
pub(crate) fn container_prefixes<'a>(urls: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let dirs: BTreeSet<String> = urls.into_iter().map(|u| directory_of(u).to_string()).collect();
    let mut kept: Vec<String> = Vec::new();
    // Sorted order puts a prefix right before everything it covers.
    for dir in dirs {
        if !kept.last().is_some_and(|prefix| dir.starts_with(prefix.as_str())) {
            kept.push(dir);
        }
    }
    kept
}

/// The virtual chunk container for `prefix`, reading through the object store its scheme names,
/// configured from the environment as vzarr's own reads are.
///
/// # Errors
/// [`IcechunkError::Location`] for a scheme Icechunk cannot read virtual chunks from.
pub(crate) fn container(prefix: &str, remote: &RemoteOptions) -> Result<VirtualChunkContainer, IcechunkError> {
    let bad = |reason: String| IcechunkError::Location { location: prefix.to_string(), reason };
    let scheme = prefix.split_once("://").map_or("", |(s, _)| s);
    let store = match scheme {
        "file" => {
            let url = url::Url::parse(prefix).map_err(|e| bad(e.to_string()))?;
            let path = url.to_file_path().map_err(|()| bad("not a local path".into()))?;
            ObjectStoreConfig::LocalFileSystem(path)
        }
        "s3" | "s3a" => ObjectStoreConfig::S3(s3_options(remote)),
        #[cfg(feature = "gcp")]
        "gs" | "gcs" => ObjectStoreConfig::Gcs(std::collections::HashMap::new()),
        #[cfg(feature = "azure")]
        "az" | "abfs" | "abfss" => ObjectStoreConfig::Azure(std::collections::HashMap::new()),
        "http" | "https" => ObjectStoreConfig::Http(HttpConfig::default()),
        other => return Err(bad(format!("Icechunk cannot read virtual chunks from {other}:// locations"))),
    };
    VirtualChunkContainer::new(prefix.to_string(), store).map_err(bad)
}

/// S3 options from the standard environment variables (region, endpoint, plain HTTP), then the
/// store configuration `remote` gives (`aws_region`, `aws_endpoint`, `aws_allow_http`, as the
/// other S3 readers and writers take them: Python's `storage_options`), path-style when an endpoint
/// is given (S3-compatible servers).
pub(crate) fn s3_options(remote: &RemoteOptions) -> S3Options {
    let env = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let configured = |key: &str| remote_config(remote, key);
    let endpoint_url = configured("aws_endpoint")
        .or_else(|| configured("aws_endpoint_url"))
        .or_else(|| env("AWS_ENDPOINT_URL_S3"))
        .or_else(|| env("AWS_ENDPOINT_URL"));
    let virtual_hosted = configured("aws_virtual_hosted_style_request")
        .or_else(|| env("AWS_VIRTUAL_HOSTED_STYLE_REQUEST"))
        .is_some_and(|v| v.eq_ignore_ascii_case("true"));
    let mut options = S3Options::default();
    options.region = configured("aws_region").or_else(|| env("AWS_REGION")).or_else(|| env("AWS_DEFAULT_REGION"));
    options.force_path_style = endpoint_url.is_some() && !virtual_hosted;
    options.endpoint_url = endpoint_url;
    options.anonymous = remote.anonymous;
    options.allow_http = configured("aws_allow_http")
        .or_else(|| configured("allow_http"))
        .or_else(|| env("AWS_ALLOW_HTTP"))
        .is_some_and(|v| v.eq_ignore_ascii_case("true"));
    options.requester_pays = remote.requester_pays;
    options
}

/// The last value `remote`'s store configuration gives `key` (later entries override earlier ones).
fn remote_config(remote: &RemoteOptions, key: &str) -> Option<String> {
    remote.config.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v.clone()).filter(|v| !v.is_empty())
}

/// The credentials of a repository on S3: none for anonymous access, the key pair `remote`'s store
/// configuration gives (`aws_access_key_id`, `aws_secret_access_key`, `aws_session_token`), else the
/// environment's (variables, profile, instance metadata).
#[cfg(feature = "aws")]
fn s3_credentials(remote: &RemoteOptions) -> icechunk::config::S3Credentials {
    use icechunk::config::{S3Credentials, S3StaticCredentials};
    if remote.anonymous {
        return S3Credentials::Anonymous;
    }
    match (remote_config(remote, "aws_access_key_id"), remote_config(remote, "aws_secret_access_key")) {
        (Some(access_key_id), Some(secret_access_key)) => S3Credentials::Static(S3StaticCredentials {
            access_key_id,
            secret_access_key,
            session_token: remote_config(remote, "aws_session_token"),
            expires_after: None,
        }),
        _ => S3Credentials::FromEnv,
    }
}

/// The checksum recorded with every reference into `file`: its modification time in whole
/// seconds, rounded up; `None` when unknown or outside Icechunk's range (1970..2106).
pub(crate) fn checksum(file: &SourceFile) -> Option<Checksum> {
    let ns = file.mtime_ns?;
    let seconds = ns.div_euclid(1_000_000_000) + i64::from(ns.rem_euclid(1_000_000_000) != 0);
    u32::try_from(seconds).ok().map(|s| Checksum::LastModified(SecondsSinceEpoch(s)))
}

/// The storage of the repository at `repo`: a local directory, or an `s3://bucket/prefix` URL.
///
/// # Errors
/// [`IcechunkError::Repository`] when the storage cannot be configured or the scheme is not
/// supported.
#[cfg_attr(not(feature = "aws"), allow(unused_variables))]
pub(crate) async fn storage(
    repo: &str,
    remote: &RemoteOptions,
) -> Result<Arc<dyn Storage + Send + Sync>, IcechunkError> {
    let failed =
        |what: &str, e: String| IcechunkError::Repository { repo: repo.to_string(), what: what.into(), reason: e };
    if let Some(repo) = local_path(repo) {
        let path = std::path::absolute(&repo).map_err(|e| failed("resolving the path", e.to_string()))?;
        return icechunk::new_local_filesystem_storage(&path)
            .await
            .map_err(|e| failed("opening the local storage", e.to_string()));
    }
    let url = url::Url::parse(repo).map_err(|e| failed("parsing the URL", e.to_string()))?;
    match url.scheme() {
        #[cfg(feature = "aws")]
        "s3" | "s3a" => {
            let bucket = url.host_str().unwrap_or_default().to_string();
            let prefix = url.path().trim_matches('/').to_string();
            icechunk::new_s3_object_store_storage(
                s3_options(remote),
                bucket,
                (!prefix.is_empty()).then_some(prefix),
                Some(s3_credentials(remote)),
                Vec::new(),
                Vec::new(),
            )
            .await
            .map_err(|e| failed("opening the S3 storage", e.to_string()))
        }
        other => {
            Err(failed("opening", format!("repositories on {other}:// are not supported (a local path or s3://)")))
        }
    }
}

/// The local directory of a repository location, when it is one.
pub(crate) fn local_path(repo: &str) -> Option<PathBuf> {
    Location::parse(repo).local_path().map(Path::to_path_buf)
}

/// Whether `path` holds an Icechunk repository: Icechunk keeps a `repo` file at the root (format
/// spec v2), or (v1) a `refs` directory of `branch.NAME` / `tag.NAME` entries beside a `snapshots`
/// directory. A vzarr store (its `vzarr.json`) is never one, and neither is a Zarr store whose root
/// holds an array or group named `refs` (a directory of `zarr.json` and chunks).
///
/// Needs feature `icechunk`.
pub fn looks_like_repository(path: &Path) -> bool {
    if path.join("vzarr.json").is_file() {
        return false;
    }
    if path.join("repo").is_file() {
        return true;
    }
    let refs = path.join("refs");
    let named_refs = || {
        std::fs::read_dir(&refs).is_ok_and(|entries| {
            entries.flatten().any(|e| {
                let name = e.file_name();
                let name = name.to_string_lossy();
                e.path().is_dir() && (name.starts_with("branch.") || name.starts_with("tag."))
            })
        })
    };
    refs.is_dir() && path.join("snapshots").is_dir() && named_refs()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Python's `storage_options` (endpoint, region, plain HTTP, a key pair) reach the repository's
    /// S3 storage, as they reach every other S3 reader and writer.
    #[cfg(feature = "aws")]
    #[test]
    fn store_configuration_gives_the_s3_options_and_credentials() {
        let mut remote = RemoteOptions::default();
        for (k, v) in [
            ("aws_endpoint", "http://127.0.0.1:9000"),
            ("aws_allow_http", "true"),
            ("aws_region", "eu-west-1"),
            ("aws_access_key_id", "AK"),
            ("aws_secret_access_key", "SK"),
        ] {
            remote.config.push((k.into(), v.into()));
        }
        let options = s3_options(&remote);
        assert_eq!(options.endpoint_url.as_deref(), Some("http://127.0.0.1:9000"));
        assert_eq!(options.region.as_deref(), Some("eu-west-1"));
        assert!(options.allow_http && options.force_path_style);
        match s3_credentials(&remote) {
            icechunk::config::S3Credentials::Static(c) => {
                assert_eq!((c.access_key_id.as_str(), c.secret_access_key.as_str()), ("AK", "SK"));
            }
            other => panic!("expected the static key pair, got {other:?}"),
        }
        remote.anonymous = true;
        assert!(matches!(s3_credentials(&remote), icechunk::config::S3Credentials::Anonymous));
    }

    #[test]
    fn a_store_whose_root_holds_refs_is_no_repository() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("refs/c")).unwrap();
        std::fs::write(root.join("refs/zarr.json"), "{}").unwrap();
        assert!(!looks_like_repository(root), "a root array named refs");
        std::fs::create_dir_all(root.join("snapshots")).unwrap();
        assert!(!looks_like_repository(root), "arrays named refs and snapshots");
        std::fs::create_dir_all(root.join("refs/branch.main")).unwrap();
        assert!(looks_like_repository(root), "an Icechunk v1 layout");
        std::fs::write(root.join("vzarr.json"), "{}").unwrap();
        assert!(!looks_like_repository(root), "a vzarr store is never a repository");
        let v2 = tempfile::tempdir().unwrap();
        std::fs::write(v2.path().join("repo"), b"").unwrap();
        assert!(looks_like_repository(v2.path()), "an Icechunk v2 repository");
    }

    #[test]
    fn local_paths_become_percent_encoded_file_urls() {
        assert_eq!(source_url("/data/a b.nc").unwrap(), "file:///data/a%20b.nc");
        assert_eq!(source_url("s3://bucket/x.nc").unwrap(), "s3://bucket/x.nc");
        assert!(source_url("relative.nc").is_err());
    }

    #[test]
    fn paths_that_are_not_utf8_are_refused_by_name() {
        let error = source_url("file:///data/caf%E9.nc").unwrap_err().to_string();
        assert!(error.starts_with("file:///data/caf%E9.nc: cannot be referenced"), "{error}");
        assert!(error.contains("not valid UTF-8"), "{error}");
        assert_eq!(source_url("file:///data/caf%C3%A9.nc").unwrap(), "file:///data/caf%C3%A9.nc");
    }

    #[test]
    fn containers_are_source_directories_without_nested_ones() {
        let urls = ["file:///a/x.nc", "file:///a/b/y.nc", "file:///ab/z.nc", "s3://bkt/p/q.nc"];
        assert_eq!(container_prefixes(urls), vec!["file:///a/", "file:///ab/", "s3://bkt/p/"]);
    }

    #[test]
    fn last_modified_is_rounded_up_to_the_second() {
        let file = |mtime_ns| SourceFile::new("/x", 1, mtime_ns);
        let secs = |c: Option<Checksum>| match c {
            Some(Checksum::LastModified(SecondsSinceEpoch(s))) => Some(s),
            _ => None,
        };
        assert_eq!(secs(checksum(&file(Some(5_000_000_000)))), Some(5));
        assert_eq!(secs(checksum(&file(Some(5_000_000_001)))), Some(6));
        assert_eq!(secs(checksum(&file(Some(-1)))), Some(0));
        assert_eq!(secs(checksum(&file(Some(-2_000_000_000)))), None);
        assert_eq!(secs(checksum(&file(None))), None);
    }
}
