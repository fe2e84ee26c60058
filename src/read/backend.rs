//! The reading side of a store format, the twin of the writers' `Writer` (`store/`).
//!
//! Every format vzarr reads as a store implements [`StoreBackend`] once, in its folder of
//! `formats/`: the native store (`formats/native/read`), an Icechunk repository's branch
//! (`formats/icechunk/read`), a kerchunk reference document (`formats/kerchunk/read`) and a kerchunk
//! Parquet reference set (`formats/parquet/read`, served as the references' view). A backend serves its nodes' `zarr.json` and, per array,
//! a [`ChunkIndex`]: the array's chunk entries and its store-owned chunk bytes. What is shared by
//! every format lives here too, in [`StoreInner`]: the location, the summary ([`StoreInfo`]), the source
//! registry, the authorization, and the source checks' memory. The read pipeline (`read/open`,
//! `read/plan`, `read/fetch`, `read/decode`) sees only these two traits.
//!
//! Adding a store format is one implementation of each trait and one line in the registry
//! (`formats`), which picks the backend once from the typed [`Location`](crate::source::Location).

use std::collections::{HashMap, HashSet};
use std::fmt::Debug;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use bytes::Bytes;

use super::sources::SourceRegistry;
use super::ReadError;
use super::{StoreFormat, StoreInfo};
use crate::manifest::{ChunkEntry, SourceFile};
use crate::metadata::ArrayMetadata;
use crate::source::{resolve_with, DirectoryAlias, Location, ObjectLocation, RemoteOptions};
use crate::trust::Authorization;

/// The kinds of store vzarr reads: [`StoreFormat`] by its former name.
pub type StoreKind = StoreFormat;

/// A store format opened for reading: what it holds beside the shared [`StoreInner`].
#[async_trait]
pub(crate) trait StoreBackend: Debug + Send + Sync {
    /// Which kind of store this is.
    fn kind(&self) -> StoreFormat;

    /// The `zarr.json` bytes of node `path` (`""` for the root group), exactly as stored, checked to
    /// be one JSON document.
    async fn node_metadata(&self, store: &StoreInner, path: &str) -> Result<Bytes, ReadError>;

    /// Array `path`'s metadata and chunk index (`path` is one of the summary's arrays).
    async fn array(&self, store: &StoreInner, path: &str) -> Result<(ArrayMetadata, Arc<dyn ChunkIndex>), ReadError>;

    /// Checks source `id` (recorded as `file`, reached at `location`) before its first read: that it
    /// is still the file the store was written from. Called once per source and store.
    async fn check_source(
        &self,
        store: &StoreInner,
        id: u32,
        file: SourceFile,
        location: &ObjectLocation,
    ) -> Result<(), ReadError>;
}

/// One array's chunk entries and store-owned chunks, as its store format keeps them.
#[async_trait]
pub(crate) trait ChunkIndex: Debug + Send + Sync {
    /// Entries for linear chunk indices `range` (clipped to the grid), loading only what they need.
    async fn entries(&self, store: &StoreInner, array: &str, range: Range<u64>) -> Result<Vec<ChunkEntry>, ReadError>;

    /// The entry of every linear chunk index of `linear`, in order.
    async fn entries_at(&self, store: &StoreInner, array: &str, linear: &[u64]) -> Result<Vec<ChunkEntry>, ReadError>;

    /// The bytes of the store-owned chunks at `ranges` (their entries' offsets and lengths), in
    /// order, each checked as the format allows (a native store of format 2: its checksums), at most
    /// `concurrent` requests at once.
    async fn owned_chunks(
        &self,
        store: &StoreInner,
        array: &str,
        ranges: &[Range<u64>],
        concurrent: usize,
    ) -> Result<Vec<Bytes>, ReadError>;
}

/// What opening a store of some format gives: its summary, its sources and its backend.
#[derive(Debug)]
pub(crate) struct Opened {
    /// The store's summary.
    pub(crate) info: StoreInfo,
    /// The sources known at opening.
    pub(crate) sources: SourceRegistry,
    /// The format's reading side.
    pub(crate) backend: Arc<dyn StoreBackend>,
}

/// The error for a node a backend does not hold.
pub(crate) fn no_node(store: &StoreInner, path: &str, where_: &str) -> ReadError {
    ReadError::Store {
        location: store.location.clone(),
        what: format!("node {path:?}"),
        source: format!("not in {where_}").into(),
    }
}

/// State shared by a store's readers and their fetch tasks.
#[derive(Debug)]
pub(crate) struct StoreInner {
    /// The store location as given (path or URL), for messages.
    pub(crate) location: String,
    /// The store location, as classified when it was opened.
    pub(crate) address: Location,
    pub(crate) info: StoreInfo,
    /// The array paths of `info`, for constant-time lookups (`info` on 20,000 arrays stays linear).
    pub(crate) array_paths: HashSet<String>,
    pub(crate) sources: SourceRegistry,
    /// The containers the reader trusts: every source is checked against them before it is read.
    pub(crate) authorization: Authorization,
    /// How the store's and its sources' object stores are reached.
    pub(crate) remote: RemoteOptions,
    /// The format's reading side.
    pub(crate) backend: Arc<dyn StoreBackend>,
    resolved: Mutex<HashMap<u32, ObjectLocation>>,
    checked: Mutex<HashSet<u32>>,
    /// Whether sources are checked before they are read (default true;
    /// [`Store::set_check_sources`](super::Store::set_check_sources)).
    check_sources: AtomicBool,
    /// The descriptor a local store whose name is not UTF-8 is reached through, held as long as the
    /// store.
    _alias: Option<DirectoryAlias>,
}

impl StoreInner {
    /// A store at `location` (named `name`) as `opened` gives it, read as `options` say; `alias` is
    /// the directory descriptor it is reached through, if any.
    pub(crate) fn new(
        location: &Location,
        name: &str,
        opened: Opened,
        options: &super::OpenOptions,
        alias: Option<DirectoryAlias>,
    ) -> Self {
        let Opened { info, sources, backend } = opened;
        StoreInner {
            location: name.to_string(),
            address: location.clone(),
            array_paths: info.arrays.iter().map(|a| a.path.clone()).collect(),
            info,
            sources,
            authorization: options.authorization.clone(),
            remote: options.remote.clone(),
            backend,
            resolved: Mutex::default(),
            checked: Mutex::default(),
            check_sources: AtomicBool::new(options.check_sources),
            _alias: alias,
        }
    }

    pub(crate) fn source(&self, id: u32) -> Result<SourceFile, ReadError> {
        self.sources.get(id).ok_or_else(|| ReadError::Store {
            location: self.location.clone(),
            what: format!("source id {id}"),
            source: format!("not in the source table of {} files", self.sources.len()).into(),
        })
    }

    /// The object location and display name of source `id`, resolved once.
    pub(crate) fn source_location(&self, id: u32) -> Result<(ObjectLocation, String), ReadError> {
        let file = self.source(id)?;
        let mut resolved = self.resolved.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(loc) = resolved.get(&id) {
            return Ok((loc.clone(), file.location.clone()));
        }
        let authorized = self.authorization.check(&file.location)?;
        let loc = resolve_with(&authorized.location, &self.remote)?;
        resolved.insert(id, loc.clone());
        Ok((loc, file.location))
    }

    /// Whether sources are checked before they are read ([`Store::set_check_sources`](super::Store::set_check_sources)).
    pub(crate) fn checks_sources(&self) -> bool {
        self.check_sources.load(Ordering::Relaxed)
    }

    /// Turns the source checks on or off.
    pub(crate) fn set_check_sources(&self, check: bool) {
        self.check_sources.store(check, Ordering::Relaxed);
    }

    /// Checks source `id` as its store format does ([`StoreBackend::check_source`]: a native store
    /// compares size, ETag and modification time with the scan's), once per store.
    pub(crate) async fn check_source(&self, id: u32, location: &ObjectLocation) -> Result<(), ReadError> {
        if !self.checks_sources() || self.checked.lock().unwrap_or_else(|e| e.into_inner()).contains(&id) {
            return Ok(());
        }
        let file = self.source(id)?;
        self.backend.check_source(self, id, file, location).await?;
        self.checked.lock().unwrap_or_else(|e| e.into_inner()).insert(id);
        Ok(())
    }
}
