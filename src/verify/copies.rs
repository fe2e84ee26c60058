//! Temporary local copies of remote sources for the oracle. libnetcdf and libhdf5 open files by path,
//! so `verify` downloads a source on an object store or HTTP server (streamed, never held in memory)
//! to a file in the temporary directory, lets the oracle read it, and removes it before the next one:
//! one copy at a time, so disk use is bounded by the largest source. A copy is removed when it is
//! dropped, so also when the download, the comparison or the command fails.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use futures::StreamExt;

use crate::read::{ReadError, Store};

/// A temporary file holding a copy of a source, removed on drop.
#[derive(Debug)]
pub(crate) struct LocalCopy {
    path: PathBuf,
}

impl LocalCopy {
    /// Creates a new, empty file in `dir` whose name ends with `name`'s last component (so that
    /// messages from libnetcdf still say which file), never replacing an existing one.
    pub(crate) fn create(dir: &Path, name: &str) -> std::io::Result<(Self, std::fs::File)> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let base: String = name
            .rsplit('/')
            .next()
            .unwrap_or_default()
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
            .take(100)
            .collect();
        loop {
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            let path = dir.join(format!("vzarr-verify-{}-{n}-{base}", std::process::id()));
            match std::fs::File::options().write(true).create_new(true).open(&path) {
                Ok(file) => return Ok((LocalCopy { path }, file)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// The copy's path.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for LocalCopy {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Copies source `id` of `store` (authorized, and checked against its fingerprint unless the store's
/// checks are off) into a new file in `dir`, streaming it.
///
/// # Errors
/// [`ReadError::Untrusted`] / [`ReadError::SourceChanged`] from the checks, [`ReadError::Fetch`] when
/// the object cannot be read, [`ReadError::SourceChanged`] when it does not hold the scanned size,
/// [`ReadError::Store`] when the local file cannot be written (the partial copy is removed).
pub(crate) async fn copy_source(store: &Store, id: u32, dir: &Path) -> Result<LocalCopy, ReadError> {
    let (location, name) = store.checked_source(id).await?;
    let expected = store.sources().get(id).map(|f| f.size);
    let fetch_error = |e: object_store::Error| ReadError::Store {
        location: name.clone(),
        what: "copying it for libnetcdf".into(),
        source: crate::source::describe_error(&e).into(),
    };
    let local_error = |e: std::io::Error| ReadError::Store {
        location: name.clone(),
        what: format!("writing a local copy for libnetcdf in {}", dir.display()),
        source: e.into(),
    };
    let got = object_store::ObjectStoreExt::get(&location.store, &location.path).await.map_err(fetch_error)?;
    let (copy, file) = LocalCopy::create(dir, &name).map_err(local_error)?;
    let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
    let mut stream = got.into_stream();
    let mut written = 0u64;
    while let Some(bytes) = stream.next().await {
        let bytes = bytes.map_err(fetch_error)?;
        written += bytes.len() as u64;
        if expected.is_some_and(|size| written > size) {
            break;
        }
        out.write_all(&bytes).map_err(local_error)?;
    }
    out.flush().map_err(local_error)?;
    if let Some(size) = expected.filter(|&size| size != written) {
        let reason = format!("size was {size} bytes, its copy has {written}");
        return Err(ReadError::SourceChanged { location: name, reason });
    }
    Ok(copy)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_are_new_files_removed_on_drop() {
        let dir = std::env::temp_dir().join(format!("vzarr-copies-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (a, mut file) = LocalCopy::create(&dir, "s3://bucket/dir/tas 2023?.nc").unwrap();
        file.write_all(b"x").unwrap();
        let (b, _) = LocalCopy::create(&dir, "s3://bucket/dir/tas 2023?.nc").unwrap();
        assert_ne!(a.path(), b.path());
        assert!(a.path().file_name().unwrap().to_str().unwrap().ends_with("-tas2023.nc"));
        assert_eq!(std::fs::read(a.path()).unwrap(), b"x");
        let paths = [a.path().to_path_buf(), b.path().to_path_buf()];
        drop((a, b));
        assert!(paths.iter().all(|p| !p.exists()));
        std::fs::remove_dir(&dir).unwrap();
    }
}
