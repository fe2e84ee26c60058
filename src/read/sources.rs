//! The source files an opened store's references point into, by source id.
//!
//! A native store lists them all in `sources.bin`, read at open: the table is fixed. An Icechunk
//! repository names its sources only in its manifests (each virtual reference carries its URL), so
//! the table of a repository grows as the manifests a read needs are loaded: a source gets the next
//! id the first time a loaded reference names it, recorded as the references describe it (no size;
//! the checksum's time or ETag), and its fingerprint replaces that record when it is first read.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};

use crate::manifest::{SourceFile, SourceTable};

/// The sources of an opened store: fixed (native) or growing as manifests load (repository).
#[derive(Debug, Default)]
pub(crate) struct SourceRegistry {
    table: RwLock<Arc<SourceTable>>,
    /// Repositories: the ids of the virtual chunk URLs met so far, and what each URL's references
    /// recorded.
    urls: Mutex<UrlIds>,
}

#[derive(Debug, Default)]
struct UrlIds {
    ids: HashMap<String, u32>,
    /// Per id: the virtual chunk URL, and the earliest modification time (seconds since the epoch)
    /// its references record.
    urls: Vec<(String, Option<u32>)>,
}

impl SourceRegistry {
    /// The fixed table of a native store.
    pub(crate) fn fixed(table: SourceTable) -> Self {
        SourceRegistry { table: RwLock::new(Arc::new(table)), urls: Mutex::default() }
    }

    /// The sources known now.
    pub(crate) fn table(&self) -> Arc<SourceTable> {
        self.table.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Source `id`, as recorded (or fingerprinted since).
    pub(crate) fn get(&self, id: u32) -> Option<SourceFile> {
        self.table.read().unwrap_or_else(|e| e.into_inner()).get(id).cloned()
    }

    /// Number of sources known now.
    pub(crate) fn len(&self) -> usize {
        self.table.read().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// The id of the source at virtual chunk URL `url` whose reference records `checksum` (seconds
    /// since the epoch) and `etag`, added as `record(url, ...)` gives it when new; the earliest
    /// checksum of all its references is kept.
    ///
    /// # Errors
    /// When the table is full (`u32::MAX` sources).
    pub(crate) fn id_of(
        &self,
        url: &str,
        checksum: Option<u32>,
        etag: Option<&str>,
        record: impl FnOnce(&str, Option<u32>, Option<&str>) -> SourceFile,
    ) -> Result<u32, String> {
        let mut urls = self.urls.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(&id) = urls.ids.get(url) {
            let slot = &mut urls.urls[id as usize].1;
            *slot = match (*slot, checksum) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            return Ok(id);
        }
        let mut table = self.table.write().unwrap_or_else(|e| e.into_inner());
        let id = Arc::make_mut(&mut table).try_push(record(url, checksum, etag)).map_err(|e| e.to_string())?;
        urls.ids.insert(url.to_string(), id);
        urls.urls.push((url.to_string(), checksum));
        Ok(id)
    }

    /// The virtual chunk URL of repository source `id` and the earliest modification time its
    /// references record.
    #[cfg_attr(not(feature = "icechunk"), allow(dead_code))]
    pub(crate) fn url(&self, id: u32) -> Option<(String, Option<u32>)> {
        self.urls.lock().unwrap_or_else(|e| e.into_inner()).urls.get(id as usize).cloned()
    }

    /// Replaces source `id`'s record by `file` (its fingerprint now).
    #[cfg_attr(not(feature = "icechunk"), allow(dead_code))]
    pub(crate) fn replace(&self, id: u32, file: SourceFile) {
        let mut table = self.table.write().unwrap_or_else(|e| e.into_inner());
        Arc::make_mut(&mut table).replace(id, file);
    }
}
