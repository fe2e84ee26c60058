//! Synchronous wrappers for callers without an async runtime: each call runs the async API to
//! completion on a small runtime owned by the wrapper (built once per [`BlockingStore`]).

use std::sync::Arc;

use super::StoreInfo;
use super::{ArrayData, ArrayReader, ReadError, ReadOptions, Store};
use crate::grid::Selection;
use crate::manifest::SourceTable;

/// A [`Store`] with a blocking API.
#[derive(Debug, Clone)]
pub struct BlockingStore {
    runtime: Arc<tokio::runtime::Runtime>,
    store: Store,
}

/// An [`ArrayReader`] with a blocking API.
#[derive(Debug)]
pub struct BlockingArray {
    runtime: Arc<tokio::runtime::Runtime>,
    array: ArrayReader,
}

impl BlockingStore {
    /// Opens the store at `location` (path or URL), reading sources only where `authorization`
    /// allows (as [`Store::open`]).
    ///
    /// # Errors
    /// As [`Store::open`]; also [`ReadError::Store`] when the runtime cannot be started.
    pub fn open(
        location: impl Into<crate::source::Location>,
        authorization: &crate::trust::Authorization,
    ) -> Result<Self, ReadError> {
        Self::open_with(location, &super::OpenOptions::new(authorization.clone()))
    }

    /// Opens the store at `location` as `options` say (as [`Store::open_with`]).
    ///
    /// # Errors
    /// As [`Store::open_with`]; also [`ReadError::Store`] when the runtime cannot be started.
    pub fn open_with(
        location: impl Into<crate::source::Location>,
        options: &super::OpenOptions,
    ) -> Result<Self, ReadError> {
        let location = location.into();
        let runtime =
            tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().map_err(|e| {
                ReadError::Store { location: location.name(), what: "starting I/O runtime".into(), source: e.into() }
            })?;
        let store = runtime.block_on(Store::open_with(location, options))?;
        Ok(BlockingStore { runtime: Arc::new(runtime), store })
    }

    /// Which kind of store this is ([`Store::kind`]).
    pub fn kind(&self) -> super::StoreFormat {
        self.store.kind()
    }

    /// The store summary.
    pub fn info(&self) -> &StoreInfo {
        self.store.info()
    }

    /// The source files known now ([`Store::sources`]).
    pub fn sources(&self) -> std::sync::Arc<SourceTable> {
        self.store.sources()
    }

    /// Every source file ([`Store::all_sources`]).
    ///
    /// # Errors
    /// As [`Store::all_sources`].
    pub fn all_sources(&self) -> Result<std::sync::Arc<SourceTable>, ReadError> {
        self.runtime.block_on(self.store.all_sources())
    }

    /// The `zarr.json` document of the group or array at `path` (`""`: the root group).
    ///
    /// # Errors
    /// As [`Store::node_metadata`].
    pub fn node_metadata(&self, path: &str) -> Result<bytes::Bytes, ReadError> {
        self.runtime.block_on(self.store.node_metadata(path))
    }

    /// Opens an array.
    ///
    /// # Errors
    /// As [`Store::array`].
    pub fn array(&self, path: &str) -> Result<BlockingArray, ReadError> {
        let array = self.runtime.block_on(self.store.array(path))?;
        Ok(BlockingArray { runtime: self.runtime.clone(), array })
    }

    /// The async store, for mixing with async code.
    pub fn as_async(&self) -> &Store {
        &self.store
    }
}

impl BlockingArray {
    /// The array reader.
    pub fn reader(&self) -> &ArrayReader {
        &self.array
    }

    /// Reads `selection`.
    ///
    /// # Errors
    /// As [`ArrayReader::read`].
    pub fn read(&self, selection: &Selection, options: &ReadOptions) -> Result<ArrayData, ReadError> {
        self.runtime.block_on(self.array.read(selection, options))
    }

    /// Reads the selected strings of a `string` array.
    ///
    /// # Errors
    /// As [`ArrayReader::read_strings`].
    pub fn read_strings(&self, selection: &Selection) -> Result<Vec<String>, ReadError> {
        self.runtime.block_on(self.array.read_strings(selection))
    }

    /// The stored (encoded) bytes of the chunk at grid coordinates `coords`: what a Zarr store holds at
    /// the chunk's key; `None` for a chunk never written or coordinates outside the grid.
    ///
    /// # Errors
    /// As [`ArrayReader::entries`] and [`ArrayReader::stored_chunk`].
    pub fn stored_chunk_at(&self, coords: &[u64]) -> Result<Option<bytes::Bytes>, ReadError> {
        let grid = &self.array.metadata().chunk_grid;
        let inside =
            coords.len() == grid.dims().len() && coords.iter().zip(grid.dims()).all(|(&c, d)| c < d.num_chunks());
        if !inside {
            return Ok(None);
        }
        let linear = grid.linear_index(coords);
        self.runtime.block_on(async {
            match self.array.entries(linear..linear + 1).await?.first() {
                Some(entry) => self.array.stored_chunk(entry).await,
                None => Ok(None),
            }
        })
    }

    /// Reads `selection` into `out`.
    ///
    /// # Errors
    /// As [`ArrayReader::read_into`].
    pub fn read_into(&self, selection: &Selection, out: &mut [u8], options: &ReadOptions) -> Result<(), ReadError> {
        self.runtime.block_on(self.array.read_into(selection, out, options))
    }
}
