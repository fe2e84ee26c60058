//! A UTF-8 name for a local directory whose own name is not UTF-8. Stores and repositories are
//! reached through object_store, whose paths are UTF-8; Linux names are bytes, and `scan` writes a
//! store under any name. Such a directory is opened, and reached as `/proc/self/fd/N` while the
//! alias lives. Only what lies inside the directory can be reached that way (reading a store,
//! committing to an Icechunk repository), not the directory's own entry in its parent.

use std::ffi::OsStr;
use std::path::Path;

/// An open directory and the UTF-8 path that names it while this value lives.
#[derive(Debug)]
pub(crate) struct DirectoryAlias {
    path: String,
    _directory: std::fs::File,
}

impl DirectoryAlias {
    /// Opens the directory `name` names.
    ///
    /// # Errors
    /// The I/O error when it cannot be opened, or an error saying it is not a directory.
    pub(crate) fn open(name: &OsStr) -> std::io::Result<Self> {
        use std::os::fd::AsRawFd;
        let directory = std::fs::File::open(Path::new(name))?;
        if !directory.metadata()?.is_dir() {
            return Err(std::io::Error::other("not a directory"));
        }
        Ok(DirectoryAlias { path: format!("/proc/self/fd/{}", directory.as_raw_fd()), _directory: directory })
    }

    /// The UTF-8 path of the directory (`/proc/self/fd/N`).
    pub(crate) fn path(&self) -> &str {
        &self.path
    }

    /// `text` with this alias replaced by `name` (lossy): messages name the directory as given.
    pub(crate) fn unalias(&self, text: &str, name: &OsStr) -> String {
        text.replace(&self.path, &name.to_string_lossy())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_directory_named_in_bytes_is_reached_through_its_alias() {
        use std::os::unix::ffi::OsStrExt;
        let dir = tempfile::tempdir().unwrap();
        let odd = dir.path().join(std::ffi::OsStr::from_bytes(b"st\xf6re"));
        std::fs::create_dir(&odd).unwrap();
        std::fs::write(odd.join("vzarr.json"), b"{}").unwrap();
        let alias = super::DirectoryAlias::open(odd.as_os_str()).unwrap();
        assert_eq!(std::fs::read(format!("{}/vzarr.json", alias.path())).unwrap(), b"{}");
        let message = alias.unalias(&format!("{}: broken", alias.path()), odd.as_os_str());
        assert_eq!(message, format!("{}: broken", odd.to_string_lossy()));
        assert!(super::DirectoryAlias::open(odd.join("vzarr.json").as_os_str()).is_err());
    }
}
