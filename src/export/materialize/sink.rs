//! Where a materialized store's objects go: whole objects put by key, the seam for other destinations.
//!
//! `materialize` produces every object (a `zarr.json`, a chunk, a shard) whole and in memory, then
//! hands it to an [`ObjectSink`] under its Zarr key (`tas/zarr.json`, `tas/c/0/1/2`). The local sink
//! writes the object as a file under the staging directory (publishing syncs the tree once); an object store sink (the
//! remote-archives issue) would `put` it, which is why objects are never appended to or rewritten.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::export::ExportError;
use crate::formats::write_file;
use crate::store::{io_error, WriteError};

/// A destination of whole objects.
pub(crate) trait ObjectSink: Send + Sync + std::fmt::Debug {
    /// Stores `bytes` as object `key` (each key is put once).
    ///
    /// # Errors
    /// [`WriteError`] naming the object.
    fn put(&self, key: &str, bytes: &[u8]) -> Result<(), WriteError>;
}

/// Objects as files under a directory (the staging directory of a local destination).
#[derive(Debug)]
pub(crate) struct DirSink {
    root: PathBuf,
}

impl DirSink {
    /// A sink writing under `root`, which is created.
    ///
    /// # Errors
    /// [`WriteError::Io`] when `root` cannot be created.
    pub(crate) fn create(root: &Path) -> Result<Self, WriteError> {
        std::fs::create_dir_all(root).map_err(io_error(root, "creating directory"))?;
        Ok(DirSink { root: root.to_path_buf() })
    }
}

impl ObjectSink for DirSink {
    fn put(&self, key: &str, bytes: &[u8]) -> Result<(), WriteError> {
        let path = self.root.join(key);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(io_error(dir, "creating directory"))?;
        }
        write_file(&path, bytes)
    }
}

/// Puts `bytes` as `key` on tokio's blocking pool; returns the bytes written.
pub(crate) async fn put<B>(sink: &Arc<dyn ObjectSink>, key: String, bytes: B) -> Result<u64, ExportError>
where
    B: AsRef<[u8]> + Send + 'static,
{
    let sink = sink.clone();
    let len = bytes.as_ref().len() as u64;
    let task = tokio::task::spawn_blocking(move || sink.put(&key, bytes.as_ref()));
    match task.await {
        Ok(Ok(())) => Ok(len),
        Ok(Err(e)) => Err(e.into()),
        Err(join) => Err(ExportError::Write(WriteError::Io {
            path: PathBuf::from("<materialize>"),
            what: "writing an object".into(),
            source: std::io::Error::other(join),
        })),
    }
}
