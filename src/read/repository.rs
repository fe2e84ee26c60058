//! Icechunk repositories opened through [`Store::open_with`](super::Store::open_with): the branch's
//! nodes and chunk references are read (sources fingerprinted and checked against the references'
//! checksums, unless source checks are off) and written as a native store in a private temporary
//! directory, which the returned store serves and removes when its last clone is dropped. Reads,
//! `info` and `verify` then behave exactly as on a native store.
//!
//! The whole branch is read at open: seconds for 10^7 references. Reading only the manifests a
//! selection touches is the next step for large repositories.

use std::path::PathBuf;
use std::sync::Arc;

use super::{OpenOptions, ReadError, Store};
use crate::store::{one_line, read_branch, read_icechunk, NativeWriter, WriteOptions, Writer};

/// A directory removed on drop.
struct TemporaryView(PathBuf);

impl Drop for TemporaryView {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The store serving `branch` of the repository at `location`.
///
/// # Errors
/// [`ReadError::Repository`] when the repository, the branch or a source cannot be read.
pub(crate) async fn open_repository(location: &str, branch: &str, options: &OpenOptions) -> Result<Store, ReadError> {
    // The repository's own errors name it already: the prefix is not repeated.
    let failed = |source: crate::read::BoxError| {
        let text = one_line(&source.to_string());
        let text = text.strip_prefix(&format!("{location}: ")).map_or(text.clone(), str::to_string);
        ReadError::Repository { location: location.to_string(), source: text.into() }
    };
    let dataset = if options.check_sources {
        read_icechunk(location, branch, &options.remote).await
    } else {
        read_branch(location, branch, &options.remote).await.map(|stored| stored.dataset)
    }
    .map_err(|e| failed(e.into()))?;
    let view = TemporaryView(private_temp_dir().map_err(|e| failed(e.into()))?);
    let native = view.0.join("view.vzarr");
    NativeWriter.write(&dataset, &native, &WriteOptions::default()).map_err(|e| failed(e.into()))?;
    let store = Store::open_native(&native.display().to_string(), options).await?;
    Ok(store.into_view_of(location, Arc::new(view)))
}

/// A new directory only this user can enter, under the system's temporary directory.
fn private_temp_dir() -> std::io::Result<PathBuf> {
    use std::os::unix::fs::DirBuilderExt;
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    let dir = std::env::temp_dir().join(format!("vzarr-icechunk-{}-{nanos}", std::process::id()));
    std::fs::DirBuilder::new().mode(0o700).create(&dir)?;
    Ok(dir)
}
