//! Data sets whose bytes lie in an external file (`SDsetexternalfile`): the file is found where
//! libhdf4 finds it and fingerprinted as one more source of the scan, and its bytes are referenced
//! like contiguous data of the HDF4 file (input: the name an external element stores; output: a
//! source id of the dataset's source table).
//!
//! libhdf4 (`HXIbuildfilename` in `hextelt.c`) opens an absolute name that exists as it is; otherwise
//! it looks for the name (an absolute one cut to its last component) in the directories set by
//! `HXsetdir`, then in those of the `HDFEXTDIR` environment variable (colon-separated), then relative
//! to the working directory. vzarr looks for the name, an absolute one cut to its last component, in
//! the HDF4 file's own directory where libhdf4 looks in `HXsetdir`'s (`verify`'s oracle sets
//! `HXsetdir` to that directory, so both read the same file), then in `HDFEXTDIR`'s, and never
//! relative to the working directory, so a scan does not depend on where it runs. For an object-store
//! source the name is resolved against the object's URL and fingerprinted with a HEAD request.
//!
//! A file names its external files itself, and a scan authorizes the directories of its sources for
//! reading: so an external file must lie inside the directory it is found from. An absolute name is
//! never opened as it is, a name with `..` is refused, and a local file reached through a symbolic
//! link out of the directory is refused, so a crafted file cannot make vzarr reference (and trust)
//! `/home/user/.ssh/id_rsa`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::errors::Hdf4Error;
use crate::manifest::{SourceFile, SourceTable};
use crate::scan::ScanOptions;
use crate::source::ByteSource;

/// Where the external files named by one HDF4 file are looked for, and those already found.
pub(crate) struct ExternalFiles {
    base: Base,
    /// Source ids by the name the file stores.
    found: HashMap<String, u32>,
}

/// What external names are resolved against.
enum Base {
    /// The directory of a local HDF4 file.
    Local(PathBuf),
    /// The URL of an HDF4 object of an object store.
    Remote { url: url::Url, options: Box<ScanOptions> },
}

impl ExternalFiles {
    /// The external files of the HDF4 file at `path` (a local path, or the URL of an object whose
    /// bytes are read through `options.runtime`).
    pub(crate) fn new(path: &Path, options: &ScanOptions) -> Self {
        let text = path.to_string_lossy();
        let remote = crate::source::Location::from(path).is_remote();
        let base = match url::Url::parse(&text) {
            Ok(url) if remote => Base::Remote { url, options: Box::new(options.clone()) },
            _ => Base::Local(path.parent().map(Path::to_path_buf).unwrap_or_default()),
        };
        ExternalFiles { base, found: HashMap::new() }
    }

    /// The id in `sources` of the external file `name`, its fingerprint added the first time.
    ///
    /// # Errors
    /// [`Hdf4Error::External`] when the file is not found or its fingerprint cannot be taken.
    pub(crate) fn source(&mut self, name: &str, sources: &mut SourceTable) -> Result<u32, Hdf4Error> {
        if let Some(&id) = self.found.get(name) {
            return Ok(id);
        }
        let fingerprint = match &self.base {
            Base::Local(dir) => local(dir, name)?,
            Base::Remote { url, options } => remote(url, name, options)?,
        };
        let existing = sources.iter().position(|s| s.location == fingerprint.location);
        let id = match existing {
            Some(existing) => existing as u32,
            None => sources.push(fingerprint),
        };
        self.found.insert(name.to_string(), id);
        Ok(id)
    }
}

/// The bytes of the external file at `location` (as [`ExternalFiles::source`] fingerprinted it: a
/// local path, or an object's URL read through `options.runtime`).
///
/// # Errors
/// [`OpenError`] naming the file when it cannot be opened.
pub(crate) fn open(location: &str, options: &ScanOptions) -> Result<Arc<dyn ByteSource>, OpenError> {
    if let Some(local) = crate::source::local_path(location) {
        return crate::scan::open_local(&local).map_err(|e| OpenError::Local(Box::new(e)));
    }
    let url = url::Url::parse(location).map_err(|source| OpenError::Url { location: location.to_string(), source })?;
    crate::scan::open_object(&url, options).map(|(_, bytes)| bytes).map_err(|e| OpenError::Object(Box::new(e)))
}

/// Why an external file fingerprinted at scan could not be opened to read its values back.
#[derive(Debug, thiserror::Error)]
pub(crate) enum OpenError {
    /// A local file.
    #[error("external file {0}")]
    Local(#[source] Box<crate::scan::ScanError>),
    /// A location that is no URL.
    #[error("external file {location}: {source}")]
    Url {
        /// The location.
        location: String,
        /// Why it does not parse.
        source: url::ParseError,
    },
    /// An object-store object.
    #[error("external file {0}")]
    Object(#[source] Box<crate::scan::ObjectError>),
}

fn error(name: &str, reason: impl Into<String>) -> Hdf4Error {
    Hdf4Error::External { name: name.to_string(), reason: reason.into() }
}

/// The last component of an absolute name, the name itself otherwise; refused when it climbs out of
/// its directory (`..`) or is empty.
fn relative_part(name: &str) -> Result<&str, Hdf4Error> {
    let relative = if name.starts_with('/') { name.rsplit('/').next().unwrap_or_default() } else { name };
    if relative.is_empty() || relative.split('/').any(|part| part == "..") {
        return Err(error(
            name,
            "names a file outside the HDF4 file's directory (vzarr reads external files only there)",
        ));
    }
    Ok(relative)
}

/// The fingerprint of external file `name` of an HDF4 file in `dir`.
fn local(dir: &Path, name: &str) -> Result<SourceFile, Hdf4Error> {
    let relative = relative_part(name)?;
    let mut dirs = vec![dir.to_path_buf()];
    if let Some(more) = std::env::var_os("HDFEXTDIR") {
        let more = more.to_string_lossy().into_owned();
        dirs.extend(more.split(':').filter(|d| !d.is_empty()).map(PathBuf::from));
    }
    let Some(base) = dirs.iter().find(|d| d.join(relative).is_file()) else {
        let looked: Vec<String> = dirs.iter().map(|d| d.join(relative).display().to_string()).collect();
        return Err(error(name, format!("not found (looked for {})", looked.join(", "))));
    };
    let found = base.join(relative);
    let io = |e: std::io::Error| error(name, format!("{}: {e}", found.display()));
    let real = std::fs::canonicalize(&found).map_err(io)?;
    if !real.starts_with(std::fs::canonicalize(base).map_err(io)?) {
        let reason = format!("{} leads out of {} (a symbolic link)", found.display(), base.display());
        return Err(error(name, reason));
    }
    let absolute = std::path::absolute(&found).map_err(io)?;
    crate::source::fingerprint(&absolute).map_err(io)
}

/// The fingerprint of external file `name` of the HDF4 object at `url` (a HEAD request).
fn remote(url: &url::Url, name: &str, options: &ScanOptions) -> Result<SourceFile, Hdf4Error> {
    let target = url.join(relative_part(name)?).map_err(|e| error(name, format!("not a path next to {url}: {e}")))?;
    let Some(runtime) = &options.runtime else {
        return Err(error(name, format!("{target}: reading it needs ScanOptions::runtime")));
    };
    let (store, object) =
        crate::source::store_for_url(&target, &options.remote).map_err(|e| error(name, format!("{target}: {e}")))?;
    use object_store::ObjectStoreExt;
    let meta = runtime.block_on(store.head(&object)).map_err(|e| match e {
        object_store::Error::NotFound { .. } => error(name, format!("not found ({target})")),
        e => error(name, format!("{target}: {e}")),
    })?;
    Ok(crate::source::object_fingerprint(target.as_str(), &meta))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absolute_names_are_looked_for_by_their_last_component() {
        assert_eq!(relative_part("/data/run1/ext.bin").unwrap(), "ext.bin");
        assert_eq!(relative_part("sub/ext.bin").unwrap(), "sub/ext.bin");
        for outside in ["../secret", "sub/../../secret", "/data/"] {
            assert!(relative_part(outside).is_err(), "{outside}");
        }
    }

    #[test]
    fn files_out_of_the_directory_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let inner = dir.path().join("inner");
        std::fs::create_dir(&inner).unwrap();
        std::fs::write(dir.path().join("secret"), b"s").unwrap();
        std::os::unix::fs::symlink(dir.path().join("secret"), inner.join("link.bin")).unwrap();
        let err = local(&inner, "link.bin").unwrap_err().to_string();
        assert!(err.contains("leads out of"), "{err}");
        let err = local(&inner, "../secret").unwrap_err().to_string();
        assert!(err.contains("outside the HDF4 file's directory"), "{err}");
        // An absolute name is looked for by its last component, in the directory only.
        let absolute = dir.path().join("secret").display().to_string();
        assert!(local(&inner, &absolute).unwrap_err().to_string().contains("not found"));
    }

    #[test]
    fn a_missing_local_file_names_where_it_was_looked_for() {
        let dir = tempfile::tempdir().unwrap();
        let err = local(dir.path(), "nowhere.bin").unwrap_err().to_string();
        assert!(err.contains("nowhere.bin") && err.contains("not found"), "{err}");
        assert!(err.contains(&dir.path().join("nowhere.bin").display().to_string()), "{err}");
    }

    #[test]
    fn a_file_next_to_the_hdf4_file_is_found_once() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("ext.bin"), [0u8; 8]).unwrap();
        let mut files = ExternalFiles::new(&dir.path().join("x.hdf"), &ScanOptions::default());
        let mut sources = SourceTable::new();
        sources.push(SourceFile::new("x.hdf", 100, None));
        assert_eq!(files.source("ext.bin", &mut sources).unwrap(), 1);
        assert_eq!(files.source("ext.bin", &mut sources).unwrap(), 1);
        assert_eq!(files.source(&dir.path().join("ext.bin").display().to_string(), &mut sources).unwrap(), 1);
        assert_eq!(sources.len(), 2);
        assert_eq!(sources.get(1).unwrap().size, 8);
    }
}
