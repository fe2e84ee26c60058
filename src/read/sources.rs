//! The source files an opened store's references point into, by source id.
//!
//! A native store lists them all in `sources.bin`, read at open: the table is fixed. An Icechunk
//! repository names its sources only in its manifests (each virtual reference carries its URL), so
//! the table of a repository grows as the manifests a read needs are loaded: a source gets the next
//! id the first time a loaded reference names it, recorded as the references describe it (no size;
//! the checksum's time or ETag), and its fingerprint replaces that record when it is first read.
//! Where vzarr wrote the repository or reference document, its summary lists the sources in the
//! scan's order: the registry starts with them ([`SourceRegistry::seeded`]), so that ids are the
//! scan's, which the summary's provenance uses (verify compares each box with its source by id).

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
    /// Per id: whether the source is still as the summary named it (seeded), not yet as a reference
    /// describes it.
    seeded: Vec<bool>,
}

impl SourceRegistry {
    /// The fixed table of a native store.
    pub(crate) fn fixed(table: SourceTable) -> Self {
        SourceRegistry { table: RwLock::new(Arc::new(table)), urls: Mutex::default() }
    }

    /// A growing registry that starts with `urls` as sources `0..`, each recorded as `record` gives it
    /// until a reference names it (then as that reference describes it). `urls` naming one URL twice
    /// cannot be ids in order: the registry then starts empty, numbering sources as met.
    pub(crate) fn seeded(urls: &[String], record: impl Fn(&str) -> SourceFile) -> Self {
        let registry = SourceRegistry::default();
        let distinct: std::collections::HashSet<&str> = urls.iter().map(String::as_str).collect();
        if distinct.len() != urls.len() {
            return registry;
        }
        {
            let mut ids = registry.urls.lock().unwrap_or_else(|e| e.into_inner());
            let mut table = registry.table.write().unwrap_or_else(|e| e.into_inner());
            for url in urls {
                let Ok(id) = Arc::make_mut(&mut table).try_push(record(url)) else { break };
                ids.ids.insert(url.clone(), id);
                ids.urls.push((url.clone(), None));
                ids.seeded.push(true);
            }
        }
        registry
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
            if std::mem::take(&mut urls.seeded[id as usize]) {
                // The first reference to a source the summary named: recorded as it describes it.
                let mut table = self.table.write().unwrap_or_else(|e| e.into_inner());
                Arc::make_mut(&mut table).replace(id, record(url, checksum, etag));
            }
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
        urls.seeded.push(false);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn record(url: &str, _: Option<u32>, etag: Option<&str>) -> SourceFile {
        SourceFile::new(url, 0, None).with_etag(etag.map(str::to_string))
    }

    #[test]
    fn seeded_sources_keep_the_summary_ids_and_take_the_first_references_record() {
        let urls = vec!["file:///a/x.h5".to_string(), "file:///a/y.h5".to_string()];
        let registry = SourceRegistry::seeded(&urls, |url| SourceFile::new(url, 0, None));
        assert_eq!(registry.len(), 2);
        // References met in another order get the summary's ids, not the order they are met in.
        assert_eq!(registry.id_of("file:///a/y.h5", Some(7), Some("e1"), record), Ok(1));
        assert_eq!(registry.get(1).and_then(|f| f.etag), Some("e1".to_string()));
        assert_eq!(registry.id_of("file:///a/y.h5", Some(5), Some("e2"), record), Ok(1));
        assert_eq!(registry.get(1).and_then(|f| f.etag), Some("e1".to_string()), "the first reference's record stays");
        assert_eq!(registry.url(1), Some(("file:///a/y.h5".to_string(), Some(5))));
        assert_eq!(registry.id_of("file:///a/x.h5", None, None, record), Ok(0));
        // A source the summary does not name comes after its sources.
        assert_eq!(registry.id_of("file:///a/z.h5", None, None, record), Ok(2));
    }

    #[test]
    fn a_summary_naming_a_source_twice_is_not_used() {
        let urls = vec!["file:///a/x.h5".to_string(), "file:///a/x.h5".to_string()];
        let registry = SourceRegistry::seeded(&urls, |url| SourceFile::new(url, 0, None));
        assert_eq!(registry.len(), 0);
        assert_eq!(registry.id_of("file:///a/x.h5", None, None, record), Ok(0));
    }
}
