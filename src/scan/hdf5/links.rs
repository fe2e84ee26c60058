//! External links (`H5Lcreate_external`, h5py's `ExternalLink`): a link in one HDF5 file naming a
//! group or dataset of another. libhdf5, libnetcdf and h5py follow them, so the linked objects are part
//! of the file as netCDF shows it; vzarr follows them too and references their chunks in the file they
//! lie in (input: the file scanned and the link names the reader meets; output: the files opened, each
//! one more source of the scan, source 0 being the file scanned).
//!
//! A link's file name is resolved as libhdf5 resolves it by default (`H5F__prefix_open_file`): an
//! absolute name as it is, a relative one against the directory of the file holding the link (for an
//! object-store source, against the object's URL). vzarr does not look in the directories of the
//! `HDF5_EXT_PREFIX` environment variable or a link-access property list, nor relative to the working
//! directory (libhdf5's last resort), so a scan does not depend on where it runs.
//!
//! A file names its links itself, and a store's sources are trusted by the containers they lie in: a
//! linked file is opened only when it lies inside the directory (or object-store prefix) of the file
//! scanned, or inside a container of [`ScanOptions::link_authorization`] (the command line passes the
//! user's trust list), checked as a reader checks sources ([`Authorization::check`]: symbolic links
//! resolved, regular files only). A link that cannot be followed (an untrusted, missing or unreadable
//! file, a missing object, a cycle) leaves its object out, as libhdf5 leaves a dangling link's object
//! absent, with a warning naming the link.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};

use hdf5_reader::{ExternalLinkResolver, Hdf5File, OpenOptions};

use super::RangeStorage;
use crate::manifest::SourceFile;
use crate::scan::ScanOptions;
use crate::source::ByteSource;
use crate::trust::{container_of, Authorization, TrustError};

/// Why the file an external link names was not opened.
#[derive(Debug, thiserror::Error)]
pub(super) enum LinkError {
    /// The link names no file.
    #[error("the link names no file")]
    NoFile,
    /// A name that does not join the URL of the file holding the link.
    #[error("{name}: not a path: {source}")]
    NotAPath {
        /// The link's file name.
        name: String,
        /// Why it does not join.
        source: url::ParseError,
    },
    /// The file lies outside the places links may lead.
    #[error("{0}")]
    Untrusted(#[source] Box<TrustError>),
    /// A local file could not be fingerprinted.
    #[error("{location}: {source}")]
    Fingerprint {
        /// The file.
        location: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A local file could not be opened.
    #[error("{0}")]
    Local(#[source] Box<crate::scan::ScanError>),
    /// An object-store object could not be opened.
    #[error("{0}")]
    Object(#[source] Box<crate::scan::ObjectError>),
    /// The file does not open as HDF5.
    #[error("{location}: {source}")]
    Hdf5 {
        /// The file.
        location: String,
        /// The reader's error.
        source: Box<hdf5_reader::error::Error>,
    },
}

/// One file of a scan: the file scanned (index 0) or a file an external link led to.
#[derive(Clone)]
pub(super) struct LinkedFile {
    /// Its fingerprint: the source it is in the scan's table (same index).
    pub(super) source: SourceFile,
    /// Its bytes.
    pub(super) bytes: Arc<dyn ByteSource>,
    /// The opened file.
    pub(super) file: Hdf5File,
    /// Its location, symbolic links resolved: two links naming one file share it.
    key: String,
}

/// An external link that was not followed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct UnresolvedLink {
    /// The link's name in its group.
    pub(super) name: String,
    /// `file:object` as the link stores them.
    pub(super) target: String,
    /// Why it was not followed.
    pub(super) why: String,
}

/// The files of one scan, and the links not followed since [`LinkedFiles::take_unresolved`].
pub(super) struct LinkedFiles {
    registry: Arc<Registry>,
}

struct Registry {
    /// Where linked files may lie.
    authorization: Authorization,
    /// How remote objects are reached (`runtime`, `remote`).
    options: ScanOptions,
    max_read_bytes: usize,
    files: Mutex<Vec<LinkedFile>>,
    unresolved: Mutex<Vec<UnresolvedLink>>,
}

/// What a link's file name is resolved against: the file holding the link.
#[derive(Clone)]
enum Base {
    /// The path of a local file.
    Local(PathBuf),
    /// The URL of an object-store object.
    Remote(url::Url),
}

/// `hdf5-reader`'s resolver for the links of one file (each file resolves names against itself).
struct Resolver {
    base: Base,
    /// Weak: the registry holds the files, whose contexts hold their resolvers.
    registry: Weak<Registry>,
}

impl LinkedFiles {
    /// Opens the file scanned (`path`, whose bytes are `bytes` and fingerprint `source`) with a
    /// resolver that follows its external links.
    ///
    /// # Errors
    /// The reader's error when the file does not open as HDF5.
    pub(super) fn open(
        path: &Path,
        bytes: Arc<dyn ByteSource>,
        source: SourceFile,
        options: &ScanOptions,
        max_read_bytes: usize,
    ) -> Result<Self, hdf5_reader::error::Error> {
        let base = Base::of(path);
        let mut authorization = options.link_authorization.clone();
        authorization.extend([container_of(&base.location())]);
        let registry = Arc::new(Registry {
            authorization,
            options: options.clone(),
            max_read_bytes,
            files: Mutex::new(Vec::new()),
            unresolved: Mutex::new(Vec::new()),
        });
        let file = registry.open_file(base.clone(), bytes.clone())?;
        let key = base.key();
        registry.lock_files().push(LinkedFile { source, bytes, file, key });
        Ok(LinkedFiles { registry })
    }

    /// The file scanned.
    pub(super) fn main(&self) -> Hdf5File {
        self.registry.lock_files()[0].file.clone()
    }

    /// Every file opened so far, the file scanned first (index = source id).
    pub(super) fn files(&self) -> Vec<LinkedFile> {
        self.registry.lock_files().clone()
    }

    /// The index of the file whose storage is `storage` (an object's `storage()`).
    pub(super) fn index_of(&self, storage: &dyn hdf5_reader::Storage) -> Option<usize> {
        self.registry.lock_files().iter().position(|f| std::ptr::addr_eq(f.file.storage(), storage))
    }

    /// The links not followed since the last call.
    pub(super) fn take_unresolved(&self) -> Vec<UnresolvedLink> {
        std::mem::take(&mut *self.registry.unresolved.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

impl Registry {
    fn lock_files(&self) -> std::sync::MutexGuard<'_, Vec<LinkedFile>> {
        self.files.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Opens the HDF5 file `bytes` located at `base`, its own links resolved against it.
    fn open_file(self: &Arc<Self>, base: Base, bytes: Arc<dyn ByteSource>) -> hdf5_reader::error::Result<Hdf5File> {
        let resolver = Resolver { base, registry: Arc::downgrade(self) };
        let open = OpenOptions::default()
            .with_max_read_bytes(self.max_read_bytes)
            .with_external_link_resolver(Arc::new(resolver));
        Hdf5File::from_storage_with_options(Arc::new(RangeStorage(bytes)), open)
    }

    /// The file at `location` (a link's name resolved): one opened before, else checked against the
    /// authorization, fingerprinted, opened and added.
    fn linked(self: &Arc<Self>, location: &str) -> Result<Hdf5File, LinkError> {
        let authorized = self.authorization.check(location).map_err(|e| LinkError::Untrusted(Box::new(e)))?;
        let target = Base::of(Path::new(&authorized.location));
        let key = target.key();
        if let Some(known) = self.lock_files().iter().find(|f| f.key == key) {
            return Ok(known.file.clone());
        }
        let (source, bytes) = match &target {
            Base::Local(_) => open_local(&authorized.location)?,
            Base::Remote(url) => {
                crate::scan::open_object(url, &self.options).map_err(|e| LinkError::Object(Box::new(e)))?
            }
        };
        let file = self
            .open_file(target, bytes.clone())
            .map_err(|source| LinkError::Hdf5 { location: location.to_string(), source: Box::new(source) })?;
        self.lock_files().push(LinkedFile { source, bytes, file: file.clone(), key });
        Ok(file)
    }
}

impl Base {
    /// The base of a file given as a local path or (for an object-store object) its URL.
    fn of(path: &Path) -> Self {
        let text = path.to_string_lossy();
        let remote = crate::source::Location::from(path).is_remote();
        match url::Url::parse(&text) {
            Ok(url) if remote => Base::Remote(url),
            _ => Base::Local(crate::source::local_path(&text).unwrap_or_else(|| path.to_path_buf())),
        }
    }

    /// The location of the file itself.
    fn location(&self) -> String {
        match self {
            Base::Local(path) => crate::source::location_for_path(path),
            Base::Remote(url) => url.to_string(),
        }
    }

    /// The location identifying the file (a local path with symbolic links resolved).
    fn key(&self) -> String {
        match self {
            Base::Local(path) => std::fs::canonicalize(path).unwrap_or_else(|_| path.clone()).display().to_string(),
            Base::Remote(url) => url.to_string(),
        }
    }

    /// Where a link's file name `name` leads: an absolute name as it is, a relative one next to this
    /// file.
    fn target(&self, name: &str) -> Result<String, LinkError> {
        if name.is_empty() {
            return Err(LinkError::NoFile);
        }
        match self {
            Base::Local(path) => {
                let dir = path.parent().unwrap_or(Path::new("/"));
                Ok(crate::source::location_for_path(&dir.join(name)))
            }
            Base::Remote(url) => url
                .join(name)
                .map(String::from)
                .map_err(|source| LinkError::NotAPath { name: name.to_string(), source }),
        }
    }
}

impl ExternalLinkResolver for Resolver {
    fn resolve_external_link(&self, filename: &str) -> hdf5_reader::error::Result<Option<Hdf5File>> {
        // hdf5-reader's error for a resolver holds text.
        let other = |e: LinkError| hdf5_reader::error::Error::Other(e.to_string());
        let over = || hdf5_reader::error::Error::Other("the scan is over".into());
        let registry = self.registry.upgrade().ok_or_else(over)?;
        let location = self.base.target(filename).map_err(other)?;
        registry.linked(&location).map(Some).map_err(other)
    }

    fn unresolved_external_link(
        &self,
        _group: &hdf5_reader::group::Group,
        name: &str,
        filename: &str,
        path: &str,
        error: &hdf5_reader::error::Error,
    ) {
        let Some(registry) = self.registry.upgrade() else { return };
        let link = UnresolvedLink { name: name.into(), target: format!("{filename}:{path}"), why: error.to_string() };
        registry.unresolved.lock().unwrap_or_else(|e| e.into_inner()).push(link);
    }
}

/// The fingerprint and bytes of the local file at `location` (an authorized, resolved path).
fn open_local(location: &str) -> Result<(SourceFile, Arc<dyn ByteSource>), LinkError> {
    let path = crate::source::local_path(location).unwrap_or_else(|| PathBuf::from(location));
    let source = crate::source::fingerprint(&path)
        .map_err(|source| LinkError::Fingerprint { location: location.to_string(), source })?;
    Ok((source, crate::scan::open_local(&path).map_err(|e| LinkError::Local(Box::new(e)))?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_resolve_next_to_the_linking_file_or_as_they_are() {
        let local = Base::of(Path::new("/data/run/a.h5"));
        assert_eq!(local.target("b.h5").unwrap(), "/data/run/b.h5");
        assert_eq!(local.target("sub/b.h5").unwrap(), "/data/run/sub/b.h5");
        assert_eq!(local.target("/elsewhere/b.h5").unwrap(), "/elsewhere/b.h5");
        assert!(local.target("").is_err());
        let remote = Base::of(Path::new("s3://bucket/run/a.h5"));
        assert_eq!(remote.target("b.h5").unwrap(), "s3://bucket/run/b.h5");
        assert_eq!(remote.target("/other/b.h5").unwrap(), "s3://bucket/other/b.h5");
    }

    #[test]
    fn files_outside_the_trusted_containers_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let inner = dir.path().join("inner");
        std::fs::create_dir(&inner).unwrap();
        std::fs::write(dir.path().join("secret.h5"), b"s").unwrap();
        std::os::unix::fs::symlink(dir.path().join("secret.h5"), inner.join("link.h5")).unwrap();
        let registry = Arc::new(Registry {
            authorization: Authorization::new([container_of(&inner.join("a.h5").display().to_string())]),
            options: ScanOptions::default(),
            max_read_bytes: 1 << 20,
            files: Mutex::new(Vec::new()),
            unresolved: Mutex::new(Vec::new()),
        });
        let base = Base::Local(inner.join("a.h5"));
        for name in ["link.h5", "../secret.h5", &dir.path().join("secret.h5").display().to_string()] {
            let err = registry.linked(&base.target(name).unwrap()).err().unwrap().to_string();
            assert!(err.contains("not authorized"), "{name}: {err}");
        }
        let err = registry.linked(&base.target("missing.h5").unwrap()).err().unwrap().to_string();
        assert!(err.contains("No such file"), "{err}");
    }
}
