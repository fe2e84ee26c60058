//! The state an opened store's readers and fetch tasks share: its location and summary, its
//! sources (resolved, authorized and checked against their fingerprints once each), and what it serves
//! (a native store's files, a repository's branch, a reference document).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use object_store::ObjectStoreExt;

use super::sources::SourceRegistry;
use super::ReadError;
use crate::manifest::binding::Binding;
use crate::manifest::SourceFile;
use crate::source::{resolve_with, ObjectLocation, RemoteOptions};
use crate::store::StoreInfo;
use crate::trust::Authorization;

/// State shared by a store's readers and their fetch tasks.
#[derive(Debug)]
pub(crate) struct StoreInner {
    /// The store location as given (path or URL), for messages.
    pub(crate) location: String,
    pub(crate) root: ObjectLocation,
    pub(crate) info: StoreInfo,
    /// The array paths of `info`, for constant-time lookups (`info` on 20,000 arrays stays linear).
    pub(crate) array_paths: HashSet<String>,
    pub(crate) sources: SourceRegistry,
    /// SHA-256 of `sources.bin` as read, compared with each manifest's binding.
    pub(crate) sources_digest: [u8; 32],
    /// The containers the reader trusts: every source is checked against them before it is read.
    pub(crate) authorization: Authorization,
    /// How the store's and its sources' object stores are reached.
    pub(crate) remote: RemoteOptions,
    pub(crate) resolved: Mutex<HashMap<u32, ObjectLocation>>,
    pub(crate) checked: Mutex<HashSet<u32>>,
    /// Whether sources are checked against their fingerprints before they are read (default true;
    /// [`Store::set_check_sources`](super::Store::set_check_sources)).
    pub(crate) check_sources: std::sync::atomic::AtomicBool,
    /// What the store's files depend on (a directory descriptor the store is reached through),
    /// kept alive with the last clone of the store.
    #[cfg_attr(not(feature = "icechunk"), allow(dead_code))]
    pub(crate) view: Option<Arc<dyn std::any::Any + Send + Sync>>,
    /// The branch of an Icechunk repository the store serves (its chunks read lazily).
    #[cfg(feature = "icechunk")]
    pub(crate) repository: Option<Arc<super::repository::RepositoryView>>,
    /// The reference document the store serves (read whole).
    pub(crate) references: Option<Arc<super::references::ReferenceView>>,
}

impl StoreInner {
    /// A store at `location` (its root object `root`) summarised by `info`, its sources `sources`,
    /// read as `options` say; it serves a native store's files until a view is set.
    pub(crate) fn new(
        location: &str,
        root: ObjectLocation,
        info: StoreInfo,
        sources: SourceRegistry,
        options: &super::OpenOptions,
    ) -> Self {
        StoreInner {
            location: location.to_string(),
            root,
            array_paths: info.arrays.iter().map(|a| a.path.clone()).collect(),
            info,
            sources,
            sources_digest: [0; 32],
            authorization: options.authorization.clone(),
            remote: options.remote.clone(),
            resolved: Mutex::default(),
            checked: Mutex::default(),
            check_sources: std::sync::atomic::AtomicBool::new(options.check_sources),
            view: None,
            #[cfg(feature = "icechunk")]
            repository: None,
            references: None,
        }
    }

    /// The object at `parts` (slash-separated node names and a file name) below the store's root.
    /// Names are taken as they are (non-ASCII letters, backslashes), as the writer wrote them; only a
    /// name object_store cannot hold raw (control characters) is percent-encoded.
    pub(crate) fn child(&self, parts: &str) -> ObjectLocation {
        let path = parts.split('/').filter(|p| !p.is_empty()).fold(self.root.path.clone(), |p, part| {
            match object_store::path::PathPart::parse(part) {
                Ok(raw) => p.join(raw),
                Err(_) => p.join(part),
            }
        });
        ObjectLocation { store: self.root.store.clone(), path }
    }

    pub(crate) fn source(&self, id: u32) -> Result<SourceFile, ReadError> {
        self.sources.get(id).ok_or_else(|| ReadError::Store {
            location: self.location.clone(),
            what: format!("source id {id}"),
            source: format!("not in the source table of {} files", self.sources.len()).into(),
        })
    }

    /// The store's sources.
    #[cfg_attr(not(feature = "icechunk"), allow(dead_code))]
    pub(crate) fn sources(&self) -> &SourceRegistry {
        &self.sources
    }

    /// Whether the store serves an Icechunk repository's branch.
    pub(crate) fn is_repository(&self) -> bool {
        #[cfg(feature = "icechunk")]
        {
            self.repository.is_some()
        }
        #[cfg(not(feature = "icechunk"))]
        {
            false
        }
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

    /// Whether sources are checked against their fingerprints ([`Store::set_check_sources`](super::Store::set_check_sources)).
    pub(crate) fn checks_sources(&self) -> bool {
        self.check_sources.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Compares source `id`'s fingerprint (size, ETag, modification time: [`SourceFile::changed_since`])
    /// with the scan's, once per store.
    pub(crate) async fn check_source(&self, id: u32, location: &ObjectLocation) -> Result<(), ReadError> {
        if !self.check_sources.load(std::sync::atomic::Ordering::Relaxed) {
            return Ok(());
        }
        if self.checked.lock().unwrap_or_else(|e| e.into_inner()).contains(&id) {
            return Ok(());
        }
        let file = self.source(id)?;
        if self.references.is_some() {
            // A reference document records no fingerprint of its sources: nothing to compare.
            return Ok(());
        }
        if self.is_repository() {
            return self.check_repository_source(id, file).await;
        }
        let meta = location.store.head(&location.path).await.map_err(|source| ReadError::Fetch {
            location: file.location.clone(),
            array: String::new(),
            what: "file metadata".into(),
            source: Box::new(source),
        })?;
        let now = crate::source::object_fingerprint(&file.location, &meta);
        if let Some(reason) = file.changed_since(&now) {
            return Err(ReadError::SourceChanged { location: file.location.clone(), reason });
        }
        self.checked.lock().unwrap_or_else(|e| e.into_inner()).insert(id);
        Ok(())
    }

    /// Checks a repository's source `id` (recorded as `file`) against its references' checksum:
    /// refused when modified after the repository was written. Its fingerprint now replaces the
    /// record, so later reads carry it as their precondition.
    async fn check_repository_source(&self, id: u32, file: SourceFile) -> Result<(), ReadError> {
        #[cfg(feature = "icechunk")]
        {
            let Some((url, seconds)) = self.sources.url(id) else { return Ok(()) };
            let now = crate::store::fingerprint(&url, seconds, &self.remote)
                .await
                .map_err(|e| super::repository::repository_error(&self.location, &e.to_string()))?;
            self.sources.replace(id, SourceFile { location: file.location, ..now });
            self.checked.lock().unwrap_or_else(|e| e.into_inner()).insert(id);
        }
        #[cfg(not(feature = "icechunk"))]
        let _ = (id, file);
        Ok(())
    }
}

/// Checks store-owned bytes read at `offset` against the manifest's checksums (stores of format 2;
/// older ones carry none).
pub(crate) fn check_owned(
    binding: Option<&Binding>,
    store: &str,
    array: &str,
    offset: u64,
    bytes: &[u8],
) -> Result<(), ReadError> {
    match binding {
        None => Ok(()),
        Some(b) => b.check_owned(offset, bytes).map_err(|reason| ReadError::Integrity {
            location: store.to_string(),
            array: array.to_string(),
            reason,
        }),
    }
}
