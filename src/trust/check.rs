//! [`Authorization`]: the containers a reader trusts, and the check every source passes before it
//! is read.

use std::path::{Path, PathBuf};

use super::container::container_of;
use crate::source::{local_path, Location};

/// Environment variable naming extra trusted containers, separated by commas (`:` occurs in URLs).
pub const ALLOW_ENV: &str = "VZARR_ALLOW_SOURCES";

/// A source that may not be read, or a trust list that cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TrustError {
    /// The source lies outside every authorized container.
    #[error(
        "{location}: source container {container} is not authorized (after reviewing it, add it to the \
         trust list or to {ALLOW_ENV})"
    )]
    Unauthorized {
        /// The source as stored (and, if different, the file it resolves to).
        location: String,
        /// The container it lies in.
        container: String,
    },
    /// The source cannot be resolved (missing file, unreadable directory).
    #[error("{location}: cannot resolve source: {source}")]
    Resolve {
        /// The source as stored.
        location: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The source is not a regular file (FIFO, device, socket, directory).
    #[error("{location}: source is a {kind}, not a regular file: refusing to read it")]
    NotRegular {
        /// The resolved file.
        location: String,
        /// What it is.
        kind: &'static str,
    },
    /// The source lives on a kernel pseudo file system (procfs, sysfs, ...).
    #[error("{location}: source is on {fs}, a kernel pseudo file system: refusing to read it")]
    PseudoFileSystem {
        /// The resolved file.
        location: String,
        /// The file system's name.
        fs: &'static str,
    },
    /// The location is not acceptable as a source (dot segments in a URL, not UTF-8).
    #[error("{location}: invalid source location: {reason}")]
    BadLocation {
        /// The source as stored.
        location: String,
        /// Why.
        reason: String,
    },
    /// The trust list could not be found, read or updated.
    #[error("{}: trust list: {what}: {source}", path.display())]
    List {
        /// The trust list file (or its directory).
        path: PathBuf,
        /// What failed.
        what: &'static str,
        /// The I/O error.
        source: std::io::Error,
    },
    /// No configuration directory: neither `XDG_CONFIG_HOME` nor `HOME` is set to an absolute path.
    #[error("cannot locate the trust list: set XDG_CONFIG_HOME or HOME to an absolute path")]
    NoConfigDir,
}

/// The containers a reader trusts. Empty (the default) trusts nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Authorization {
    containers: Vec<String>,
    /// Each local container as given and resolved (symbolic links), taken once when added: a check
    /// compares paths only, whatever the length of the trust list.
    local: Vec<(PathBuf, Option<PathBuf>)>,
}

/// A source that passed [`Authorization::check`]: the location to read (for a local file, its
/// resolved path, so that the file checked is the file read).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Authorized {
    /// Path or URL to read.
    pub location: String,
}

impl Authorization {
    /// Trusts `containers` (directories, `s3://bucket/prefix/`, `https://host/path/`). Each is
    /// taken as a directory prefix: a missing trailing `/` is added; relative paths are made
    /// absolute against the current directory.
    pub fn new<S: AsRef<str>>(containers: impl IntoIterator<Item = S>) -> Self {
        let mut auth = Authorization::default();
        auth.extend(containers);
        auth
    }

    /// Adds containers (normalized as in [`Authorization::new`]).
    pub fn extend<S: AsRef<str>>(&mut self, containers: impl IntoIterator<Item = S>) {
        for c in containers {
            let c = normalize(c.as_ref());
            if !c.is_empty() && !self.containers.contains(&c) {
                if let Some(path) = local_path(&c) {
                    let resolved = std::fs::canonicalize(&path).ok();
                    self.local.push((path, resolved));
                }
                self.containers.push(c);
            }
        }
    }

    /// The trusted containers, normalized.
    pub fn containers(&self) -> &[String] {
        &self.containers
    }

    /// Whether `container` (as recorded in a store) lies inside a trusted container.
    pub fn covers(&self, container: &str) -> bool {
        let container = normalize(container);
        if Location::parse(&container).is_remote() {
            return self.containers.iter().any(|c| container.starts_with(c.as_str()));
        }
        let path = local_path(&container).unwrap_or_else(|| PathBuf::from(&container));
        let resolved = std::fs::canonicalize(&path).unwrap_or(path);
        self.covers_path(&resolved)
    }

    /// Checks that source `location` may be read: inside a trusted container (after resolving
    /// symlinks for local files), a regular file, not on a kernel pseudo file system. Nothing is
    /// opened.
    ///
    /// # Errors
    /// [`TrustError`] naming the source and, when unauthorized, its container.
    pub fn check(&self, location: &str) -> Result<Authorized, TrustError> {
        match local_path(location) {
            Some(path) => self.check_local(location, &path),
            None => self.check_url(location),
        }
    }

    /// Checks that a reference to `location` may be published (an export writes references, it does
    /// not read them): as [`Authorization::check`], except that a local file that no longer exists
    /// (an archive moved to object storage, exported with `--url-prefix`) is checked by its path alone,
    /// which must not contain `.` or `..` components.
    ///
    /// # Errors
    /// As [`Authorization::check`].
    pub fn check_reference(&self, location: &str) -> Result<(), TrustError> {
        match self.check(location) {
            Err(TrustError::Resolve { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                let path = local_path(location).unwrap_or_else(|| PathBuf::from(location));
                let plain = path
                    .components()
                    .all(|c| matches!(c, std::path::Component::RootDir | std::path::Component::Normal(_)));
                if plain && self.covers_path(&path) {
                    return Ok(());
                }
                Err(TrustError::Unauthorized { location: location.to_string(), container: container_of(location) })
            }
            other => other.map(|_| ()),
        }
    }

    fn check_url(&self, location: &str) -> Result<Authorized, TrustError> {
        let after_scheme = location.find("://").map_or(location, |i| &location[i + 3..]);
        let dot = |s: &str| matches!(s.to_ascii_lowercase().as_str(), "." | ".." | "%2e" | "%2e%2e" | ".%2e" | "%2e.");
        if after_scheme.split('/').any(dot) {
            let reason = "`.` or `..` path segments are not allowed in source URLs".to_string();
            return Err(TrustError::BadLocation { location: location.to_string(), reason });
        }
        if self.containers.iter().any(|c| location.starts_with(c.as_str())) {
            return Ok(Authorized { location: location.to_string() });
        }
        Err(TrustError::Unauthorized { location: location.to_string(), container: container_of(location) })
    }

    fn check_local(&self, location: &str, path: &Path) -> Result<Authorized, TrustError> {
        let resolved = std::fs::canonicalize(path)
            .map_err(|source| TrustError::Resolve { location: location.to_string(), source })?;
        // A path that is not UTF-8 is read by its `file://` URL (see `source::location_for_path`).
        let text = crate::source::location_for_path(&resolved);
        let shown = if text == location { location.to_string() } else { format!("{location} (-> {text})") };
        if !self.covers_path(&resolved) {
            let container = container_of(&resolved.to_string_lossy());
            return Err(TrustError::Unauthorized { location: shown, container });
        }
        regular_file(&resolved, &shown)?;
        Ok(Authorized { location: text })
    }

    /// Whether a resolved local path lies inside a trusted local container (compared both as
    /// given and resolved, component by component).
    fn covers_path(&self, resolved: &Path) -> bool {
        self.local.iter().any(|(given, real)| {
            resolved.starts_with(given) || real.as_ref().is_some_and(|real| resolved.starts_with(real))
        })
    }
}

/// Refuses anything but a regular file on an ordinary file system, from metadata alone.
fn regular_file(resolved: &Path, shown: &str) -> Result<(), TrustError> {
    let meta = std::fs::symlink_metadata(resolved)
        .map_err(|source| TrustError::Resolve { location: shown.to_string(), source })?;
    let kind = Some(crate::source::file_kind(&meta)).filter(|_| !meta.file_type().is_file());
    if let Some(kind) = kind {
        return Err(TrustError::NotRegular { location: shown.to_string(), kind });
    }
    if let Some(fs) = crate::source::pseudo_file_system(resolved) {
        return Err(TrustError::PseudoFileSystem { location: shown.to_string(), fs });
    }
    Ok(())
}

/// A container as stored: local paths absolute with a trailing `/`, URLs with a trailing `/`.
fn normalize(container: &str) -> String {
    let container = container.trim();
    if container.is_empty() {
        return String::new();
    }
    let mut c = match Location::parse(container) {
        Location::Url(url) => url,
        Location::Local(path) => {
            std::path::absolute(&path).map_or_else(|_| container.to_string(), |p| p.display().to_string())
        }
    };
    if !c.ends_with('/') {
        c.push('/');
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_sources_need_a_trusted_directory() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.nc");
        std::fs::write(&file, b"x").unwrap();
        let location = file.to_str().unwrap();
        let err = Authorization::default().check(location).unwrap_err();
        assert!(matches!(&err, TrustError::Unauthorized { container, .. } if container.ends_with('/')), "{err}");
        assert!(err.to_string().contains("VZARR_ALLOW_SOURCES"), "{err}");
        let auth = Authorization::new([dir.path().to_str().unwrap()]);
        assert!(auth.check(location).is_ok());
        // A sibling whose name starts with the trusted directory's is not inside it.
        let sibling = std::path::PathBuf::from(format!("{}x", dir.path().display()));
        std::fs::create_dir(&sibling).unwrap();
        std::fs::write(sibling.join("a.nc"), b"x").unwrap();
        let err = auth.check(sibling.join("a.nc").to_str().unwrap()).unwrap_err();
        std::fs::remove_dir_all(&sibling).unwrap();
        assert!(matches!(err, TrustError::Unauthorized { .. }), "{err}");
    }

    #[test]
    fn urls_are_matched_by_prefix_without_dot_segments() {
        let auth = Authorization::new(["s3://bucket/data"]);
        assert!(auth.check("s3://bucket/data/a.nc").is_ok());
        assert!(auth.check("s3://bucket/database/a.nc").is_err());
        assert!(auth.check("s3://bucket/data/../secret/a.nc").is_err());
        assert!(auth.check("s3://bucket/data/%2E%2E/secret/a.nc").is_err());
        assert!(auth.check("https://bucket/data/a.nc").is_err());
    }

    #[test]
    fn pseudo_and_special_files_are_refused_even_when_trusted() {
        let auth = Authorization::new(["/"]);
        for (path, want) in [("/proc/self/environ", "procfs"), ("/dev/null", "device")] {
            let err = auth.check(path).unwrap_err();
            assert!(err.to_string().contains(want), "{err}");
        }
        if Path::new("/sys/kernel").exists() {
            let err = auth.check("/sys/kernel/uevent_seqnum").unwrap_err();
            assert!(err.to_string().contains("sysfs"), "{err}");
        }
    }
}
