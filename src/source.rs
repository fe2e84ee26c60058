//! Source files: fingerprints taken at scan time, and resolution of a stored location (an absolute
//! path or a URL) to an `object_store` store and object path for reading.
//!
//! Locations are kept as given: absolute local paths for local files (`file://` URLs for the few whose
//! names are not UTF-8), URLs (`s3://`, `gs://`, `az://`, `https://`) otherwise.

mod bytes_path;
mod cache;
mod directory_alias;
mod location;
mod pseudo_fs;
mod range;
mod remote;
mod spill;

pub(crate) use bytes_path::{local_path, location_for_path, BytesPathStore};
pub use cache::{CacheOptions, CachedSource, FetchStats, FetchTotals};
pub(crate) use directory_alias::DirectoryAlias;
pub use location::Location;
pub(crate) use pseudo_fs::pseudo_file_system;
#[cfg(test)]
pub(crate) use range::check_range;
pub(crate) use range::short_range_reply;
pub(crate) use range::ObjectSource;
pub use range::{ByteSource, LocalFile, RangeError};
pub(crate) use remote::describe_error;
pub use remote::{store_for_url, RemoteError, RemoteOptions};
pub use spill::{owned_bytes_budget, owned_bytes_budget_from_env, MemoryBudgetError, MEMORY_BUDGET_VAR};

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use object_store::local::LocalFileSystem;
use object_store::path::Path as ObjectPath;
use object_store::ObjectStore;

use crate::manifest::SourceFile;

/// A location that cannot be turned into an object store address.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SourceError {
    /// The location is not a valid path or URL, or its scheme is not available.
    #[error("{location}: cannot resolve location: {source}")]
    Resolve {
        /// The location as stored.
        location: String,
        /// Why.
        source: object_store::Error,
    },
    /// The URL does not parse.
    #[error("{location}: invalid URL: {source}")]
    Url {
        /// The location as stored.
        location: String,
        /// Why.
        source: url::ParseError,
    },
}

/// Takes the fingerprint (size, modification time) of a local file, stored under its absolute path
/// (a `file://` URL when the path is not UTF-8, see `location_for_path`).
///
/// # Errors
/// The I/O error from reading the file's metadata.
pub fn fingerprint(absolute: &Path) -> std::io::Result<SourceFile> {
    let location = location_for_path(absolute);
    let meta = std::fs::metadata(absolute)?;
    let mtime_ns = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .and_then(|d| i64::try_from(d.as_nanos()).ok());
    Ok(SourceFile::new(location, meta.len(), mtime_ns))
}

/// The fingerprint of a remote object from its metadata (a HEAD request): size, last-modified time
/// and the ETag when the server gave one.
pub(crate) fn object_fingerprint(location: &str, meta: &object_store::ObjectMeta) -> SourceFile {
    SourceFile::new(location, meta.size, meta.last_modified.timestamp_nanos_opt()).with_etag(meta.e_tag.clone())
}

/// An object store and the path of one object in it.
#[derive(Debug, Clone)]
pub(crate) struct ObjectLocation {
    /// The store holding the object.
    pub store: Arc<dyn ObjectStore>,
    /// The object's path in the store.
    pub path: ObjectPath,
}

/// What kind of file `meta` describes, as messages name it (`FIFO`, `directory`, ...).
pub(crate) fn file_kind(meta: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    if t.is_file() {
        "regular file"
    } else if t.is_fifo() {
        "FIFO"
    } else if t.is_char_device() || t.is_block_device() {
        "device"
    } else if t.is_socket() {
        "socket"
    } else if t.is_dir() {
        "directory"
    } else if t.is_symlink() {
        "symbolic link"
    } else {
        "special file"
    }
}

fn local_store() -> Arc<dyn ObjectStore> {
    static LOCAL: OnceLock<Arc<dyn ObjectStore>> = OnceLock::new();
    LOCAL.get_or_init(|| Arc::new(LocalFileSystem::new())).clone()
}

fn bytes_path_store() -> Arc<dyn ObjectStore> {
    static STORE: OnceLock<Arc<dyn ObjectStore>> = OnceLock::new();
    STORE.get_or_init(|| Arc::new(BytesPathStore)).clone()
}

/// True when `location` is a URL (`scheme://...`) rather than a local path.
pub fn is_url(location: &str) -> bool {
    location
        .split_once("://")
        .is_some_and(|(scheme, _)| scheme.len() > 1 && scheme.chars().all(|c| c.is_ascii_alphanumeric() || c == '+'))
}

/// The URLs among `paths` (inputs as expanded: local paths and URLs), as text: what an
/// object-store output made from them must not be nor contain.
pub(crate) fn urls_of(paths: &[std::path::PathBuf]) -> Vec<String> {
    paths.iter().filter_map(|p| Location::from(p).as_url().map(str::to_string)).collect()
}

/// Resolves a stored location (absolute path or URL) to a store and object path, reaching object
/// stores with the environment's configuration ([`RemoteOptions::default`]).
///
/// # Errors
/// As [`resolve_with`].
#[cfg(test)]
pub(crate) fn resolve(location: &str) -> Result<ObjectLocation, SourceError> {
    resolve_with(location, &RemoteOptions::default())
}

/// The absolute local path `location` with its `.` and `..` components resolved as the kernel
/// resolves them (the directory a `..` ends is canonicalized, so a link before it is followed), or
/// lexically where that directory does not exist: every command takes `/a/b/../c` as `/a/c`, as
/// the file system does (`object_store` refuses `..`).
pub(crate) fn normalize_local(location: &str) -> std::borrow::Cow<'_, str> {
    use std::path::Component;
    let path = Path::new(location);
    let dotted = location.split('/').any(|c| c == "." || c == "..");
    if !dotted {
        return location.into();
    }
    let components: Vec<Component<'_>> = path.components().collect();
    let last_parent = components.iter().rposition(|c| *c == Component::ParentDir);
    let (mut out, rest) = match last_parent {
        Some(k) => {
            let prefix: PathBuf = components[..=k].iter().collect();
            match std::fs::canonicalize(&prefix) {
                Ok(resolved) => (resolved, &components[k + 1..]),
                Err(_) => (PathBuf::new(), &components[..]),
            }
        }
        None => (PathBuf::new(), &components[..]),
    };
    for component in rest {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    match out.to_str() {
        Some(text) => text.to_string().into(),
        None => location.into(),
    }
}

/// Resolves a stored location (absolute path or URL) to a store and object path; object stores are
/// configured from the environment (credentials, endpoint), then from `remote`.
///
/// # Errors
/// [`SourceError`] when the location is not a valid absolute path or URL, or names a scheme this build
/// cannot reach.
pub(crate) fn resolve_with(location: &str, remote: &RemoteOptions) -> Result<ObjectLocation, SourceError> {
    if !is_url(location) {
        let normalized = normalize_local(location);
        let path = match ObjectPath::from_absolute_path(Path::new(normalized.as_ref())) {
            Ok(path) => path,
            // A name `object_store` will not parse (control characters in it): read through the
            // store of exact byte paths, as a name that is not UTF-8 is.
            Err(refused) => {
                let bad = |source: object_store::Error| SourceError::Resolve { location: location.to_string(), source };
                let url = url::Url::from_file_path(Path::new(normalized.as_ref())).map_err(|()| bad(refused.into()))?;
                let path = bytes_path::object_path(&url).map_err(|e| bad(e.into()))?;
                return Ok(ObjectLocation { store: bytes_path_store(), path });
            }
        };
        return Ok(ObjectLocation { store: local_store(), path });
    }
    let url =
        url::Url::parse(location).map_err(|source| SourceError::Url { location: location.to_string(), source })?;
    if url.scheme() == "file" {
        let file = url.to_file_path().map_err(|()| SourceError::Resolve {
            location: location.to_string(),
            source: object_store::Error::Generic { store: "file", source: "not a local file URL".into() },
        })?;
        if let Some(path) = file.to_str() {
            return resolve_with(path, remote);
        }
        let path = bytes_path::object_path(&url)
            .map_err(|e| SourceError::Resolve { location: location.to_string(), source: e.into() })?;
        return Ok(ObjectLocation { store: bytes_path_store(), path });
    }
    let (store, path) = remote::store_for_url(&url, remote).map_err(|e| SourceError::Resolve {
        location: location.to_string(),
        source: object_store::Error::Generic { store: "vzarr", source: e.into() },
    })?;
    Ok(ObjectLocation { store, path })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_and_paths_are_told_apart() {
        assert!(is_url("s3://bucket/key.nc"));
        assert!(is_url("file:///data/a.nc"));
        assert!(!is_url("/data/a.nc"));
        assert!(!is_url("/data/odd://name.nc"));
    }

    #[test]
    fn dot_dot_resolves_as_the_file_system_does() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir(root.join("a")).unwrap();
        let dotted = format!("{}/a/../b/./c.nc", root.display());
        assert_eq!(normalize_local(&dotted), format!("{}/b/c.nc", root.display()));
        assert_eq!(normalize_local("/nowhere/x/../y"), "/nowhere/y");
        assert_eq!(normalize_local("/plain/path"), "/plain/path");
        assert!(resolve(&dotted).is_ok());
        assert!(resolve("/tmp/o\u{1b}[2J.vzarr").is_ok(), "a control character in a name");
    }

    #[test]
    fn file_urls_resolve_like_paths() {
        let a = resolve("/tmp/some file.nc").unwrap();
        let b = resolve("file:///tmp/some%20file.nc").unwrap();
        assert_eq!(a.path, b.path);
        assert!(resolve("relative/path.nc").is_err());
    }
}
