//! A store's location as the user names it, classified once where it enters the library (the command
//! line, the Python package, opening a store): a local path or a URL. Code past that edge matches on [`Location`] instead of asking of a string whether it is a URL.

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::path::{Path, PathBuf};

/// Where a store (a native store, an Icechunk repository, a reference document) lies.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Location {
    /// A local path, relative or absolute, as given; its name need not be UTF-8.
    Local(PathBuf),
    /// A URL: `s3://`, `gs://`, `az://`, `https://`, `file://`, `memory://`.
    Url(String),
}

impl Location {
    /// Classifies `text`: a URL when it starts with a scheme (`s3://`), else a local path.
    pub fn parse(text: &str) -> Self {
        match super::is_url(text) {
            true => Location::Url(text.to_string()),
            false => Location::Local(PathBuf::from(text)),
        }
    }

    /// Classifies an operating-system name: a URL only when it is UTF-8 and starts with a scheme.
    pub fn from_os_str(name: &OsStr) -> Self {
        match name.to_str() {
            Some(text) => Self::parse(text),
            None => Location::Local(PathBuf::from(name)),
        }
    }

    /// Whether this is a URL.
    pub fn is_url(&self) -> bool {
        matches!(self, Location::Url(_))
    }

    /// The URL, for a URL.
    pub fn as_url(&self) -> Option<&str> {
        match self {
            Location::Url(url) => Some(url),
            Location::Local(_) => None,
        }
    }

    /// Whether this is a URL of an object store or server (any scheme but `file://`).
    pub fn is_remote(&self) -> bool {
        self.as_url().is_some_and(|url| !url.starts_with("file://"))
    }

    /// The local path, for a local location.
    pub fn local_path(&self) -> Option<&Path> {
        match self {
            Location::Local(path) => Some(path),
            Location::Url(_) => None,
        }
    }

    /// The location as UTF-8 text: the URL, or the path as given; `None` for a path that is not UTF-8.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Location::Local(path) => path.to_str(),
            Location::Url(url) => Some(url),
        }
    }

    /// The location for messages (lossy where a path is not UTF-8).
    pub fn name(&self) -> String {
        match self {
            Location::Local(path) => path.to_string_lossy().into_owned(),
            Location::Url(url) => url.clone(),
        }
    }

    /// Whether the location ends with `suffix` (a URL's or a path's last characters, e.g. `.json`).
    pub fn ends_with(&self, suffix: &str) -> bool {
        match self {
            Location::Local(path) => path.as_os_str().as_encoded_bytes().ends_with(suffix.as_bytes()),
            Location::Url(url) => url.ends_with(suffix),
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

impl From<&str> for Location {
    fn from(text: &str) -> Self {
        Location::parse(text)
    }
}

impl From<&String> for Location {
    fn from(text: &String) -> Self {
        Location::parse(text)
    }
}

impl From<String> for Location {
    fn from(text: String) -> Self {
        Location::parse(&text)
    }
}

impl From<&OsStr> for Location {
    fn from(name: &OsStr) -> Self {
        Location::from_os_str(name)
    }
}

impl From<OsString> for Location {
    fn from(name: OsString) -> Self {
        Location::from_os_str(&name)
    }
}

impl From<&Path> for Location {
    fn from(path: &Path) -> Self {
        Location::from_os_str(path.as_os_str())
    }
}

impl From<PathBuf> for Location {
    fn from(path: PathBuf) -> Self {
        Location::from_os_str(path.as_os_str())
    }
}

impl From<&PathBuf> for Location {
    fn from(path: &PathBuf) -> Self {
        Location::from_os_str(path.as_os_str())
    }
}

impl From<&Location> for Location {
    fn from(location: &Location) -> Self {
        location.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::Location;

    #[test]
    fn urls_and_paths_are_told_apart_once() {
        assert!(Location::parse("s3://bucket/store.vzarr").is_url());
        assert!(Location::parse("https://host/refs.json").ends_with(".json"));
        assert!(!Location::parse("stores/tas.vzarr").is_url());
        assert!(!Location::parse("c:/odd").is_url(), "a one-letter scheme is a drive, not a URL");
        assert_eq!(Location::parse("a/b").local_path(), Some(std::path::Path::new("a/b")));
        assert_eq!(Location::parse("s3://b/k").as_url(), Some("s3://b/k"));
        assert!(Location::parse("s3://b/k").is_remote() && !Location::parse("file:///a").is_remote());
    }

    #[test]
    fn a_name_that_is_not_utf8_is_a_local_path() {
        use std::os::unix::ffi::OsStrExt;
        let name = std::ffi::OsStr::from_bytes(b"s3://st\xf6re");
        let location = Location::from(name);
        assert!(!location.is_url());
        assert_eq!(location.as_str(), None);
        assert_eq!(location.name(), "s3://st\u{fffd}re");
    }
}
