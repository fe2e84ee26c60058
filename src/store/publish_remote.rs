//! Publishing an output on an object store (`-o s3://bucket/stores/tas.vzarr`, `gs://`, `az://`):
//! the object-store counterpart of `store/publish`, for every output kind ([`OutputKind`]).
//!
//! The writers are unchanged: they write the output into a private local directory (published there
//! by `store/publish`), and [`RemoteOutput::publish`] uploads it. Object stores have no rename, so
//! atomicity comes from the order of the uploads and from conditional puts (`If-None-Match: *` for
//! [`PutMode::Create`], `If-Match: <etag>` for [`PutMode::Update`]; object_store 0.14 sends them on S3
//! by default, `aws_conditional_put=etag`, and on GCS and Azure natively):
//!
//! ```text
//! file kinds (kerchunk JSON, scan part)   one object, one conditional PUT (Create, or Update of the
//!                                         old object's ETag with --overwrite): atomic by nature
//! directory kinds (vzarr store, Zarr)     PREFIX/.vzarr-lock   Create: one writer at a time
//!                                         [overwrite] delete the visible document (old store hidden)
//!                                         every other object, concurrently (--max-concurrent-requests)
//!                                         the visible document, Create: the store appears
//!                                         delete objects of the old store the new one does not have
//!                                         delete the lock
//! ```
//!
//! The visible document is `vzarr.json` for a vzarr store (the reader opens it first) and the root
//! `zarr.json` for a materialized Zarr store: a reader never sees a store before all its parts are
//! there. The part names are fixed by the store format (readers of every vzarr version read
//! `tas/manifest.bin`), so a replacement cannot write the new parts beside the old ones: with
//! `--overwrite` the old store is hidden (its visible document deleted) before its parts are
//! overwritten, and the new one appears when complete. A reader therefore finds the old store, no
//! store, or the new store, never a mix (a reader that opened the old store before the switch and
//! opens an array after it fails on the manifest's binding to the metadata and source table). A
//! failed or interrupted write leaves the old store (failure before the switch) or no store, never a
//! half-written one that looks complete; what it uploaded is deleted where the failure allows.
//!
//! - Without `overwrite` an existing output is never replaced, checked before anything is written and
//!   again, atomically, by the conditional put of the lock and of the visible document: of several
//!   concurrent writers exactly one wins, the others fail with "already exists" or "being written".
//! - With `overwrite` only an output of the same kind is replaced (the rule of [`OutputKind::owns`],
//!   applied to the remote visible document); objects under the prefix without a visible document
//!   are someone's data and never replaced, unless a vzarr lock says they are the debris of a write
//!   that died.
//! - A lock is stale (taken over by the next writer, which then deletes the debris) when its writer
//!   ran on this host and its process is gone, or when it is older than `VZARR_LOCK_STALE_SECS`
//!   (default 3600 s). A writer checks that its lock is still its own before the store appears.
//! - An output that is, or is a prefix of, one of the input URLs is refused before anything is written.
//! - A file above [`SINGLE_PUT_MAX`] is uploaded in parts (multipart upload: still atomic, the object
//!   appears when complete); for a file kind this upload cannot be conditional, so the destination is
//!   checked just before it (a concurrent writer in between may be replaced).
//!
//! Memory: uploads stream from the local files, at most [`SINGLE_PUT_MAX`] per upload in flight.
//!
//! Test hooks (debug builds only): `VZARR_TEST_SINGLE_PUT_MAX=<bytes>` lowers [`SINGLE_PUT_MAX`]; `VZARR_TEST_CRASH_AT=<point>` kills the process at `remote-locked` (lock taken),
//! `remote-hidden` (old visible document deleted) or `remote-uploaded` (every part uploaded, the
//! visible document not yet).

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use object_store::path::{Path as ObjectPath, PathPart};
use object_store::{
    ObjectMeta, ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload, UpdateVersion, WriteMultipart,
};

use super::publish::{crash_point, process_alive, OutputKind};
use super::WriteError;
use crate::source::{store_for_url, RemoteOptions};

/// Files up to this size are uploaded with one PUT; larger ones in parts of this size.
pub const SINGLE_PUT_MAX: u64 = 16 << 20;
/// The lock object of a directory output, below its prefix.
pub(crate) const LOCK_OBJECT: &str = ".vzarr-lock";
/// Default age after which a lock held by another host is stale.
const LOCK_STALE_DEFAULT: Duration = Duration::from_secs(3600);
/// Parts of a multipart upload in flight per file.
const PARTS_IN_FLIGHT: usize = 2;

/// An output being written for an object store: written locally at [`RemoteOutput::local_path`],
/// then uploaded by [`RemoteOutput::publish`]. The local copy is removed on drop.
#[derive(Debug)]
pub struct RemoteOutput {
    url: String,
    store: Arc<dyn ObjectStore>,
    path: ObjectPath,
    kind: OutputKind,
    overwrite: bool,
    max_concurrent: usize,
    temp: PathBuf,
    local: PathBuf,
}

/// The lock held while a directory output is uploaded.
struct Lock {
    path: ObjectPath,
    e_tag: Option<String>,
    /// A stale lock was taken over: objects under the prefix are a dead writer's debris.
    took_over: bool,
}

/// What the destination holds, as far as replacing it goes.
enum Existing {
    Nothing,
    /// An output of this kind (`overwrite` given), with its visible object's metadata.
    Output(ObjectMeta),
    /// Objects left by a write that died (its lock is there), no visible document.
    Debris,
}

impl RemoteOutput {
    /// Checks the destination `url` (absent, or replaceable with `overwrite`; not an input URL nor a
    /// prefix of one) and creates the private local directory the output is written in.
    ///
    /// # Errors
    /// [`WriteError::Exists`], [`WriteError::NotReplaceable`], [`WriteError::Input`],
    /// [`WriteError::Remote`] when the store cannot be reached, or [`WriteError::Io`].
    pub async fn begin(
        url: &str,
        kind: OutputKind,
        overwrite: bool,
        inputs: &[String],
        remote: &RemoteOptions,
        max_concurrent: usize,
    ) -> Result<Self, WriteError> {
        let url = url.trim_end_matches('/').to_string();
        check_inputs(&url, inputs)?;
        let invalid = |reason: String| WriteError::Io {
            path: PathBuf::from(&url),
            what: "parsing the URL".into(),
            source: std::io::Error::new(std::io::ErrorKind::InvalidInput, reason),
        };
        let parsed = url::Url::parse(&url).map_err(|e| invalid(e.to_string()))?;
        let (store, path) = store_for_url(&parsed, remote).map_err(|e| invalid(e.to_string()))?;
        if path.as_ref().is_empty() {
            return Err(invalid("names a bucket, not an object in it".into()));
        }
        let temp = private_dir().map_err(super::io_error(&std::env::temp_dir(), "creating a directory"))?;
        let name = path.filename().unwrap_or("output").to_string();
        let local = temp.join(name);
        let output =
            RemoteOutput { url, store, path, kind, overwrite, max_concurrent: max_concurrent.max(1), temp, local };
        output.existing(false).await?;
        Ok(output)
    }

    /// Where the writer writes the output (a path in a private directory, absent until written).
    #[must_use]
    pub fn local_path(&self) -> &Path {
        &self.local
    }

    /// The destination URL.
    #[must_use]
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Uploads the output written at [`RemoteOutput::local_path`] (see the module documentation).
    ///
    /// # Errors
    /// [`WriteError::Exists`] when another writer published first (without `overwrite`),
    /// [`WriteError::Busy`] when another writer holds the lock, [`WriteError::NotReplaceable`],
    /// [`WriteError::Remote`] or [`WriteError::Io`]. What was uploaded is removed where possible.
    pub async fn publish(self) -> Result<(), WriteError> {
        if self.kind.is_dir() {
            let lock = self.acquire_lock().await?;
            crash_point("remote-locked");
            let result = self.publish_tree(&lock).await;
            let _ = self.store.delete(&lock.path).await;
            result
        } else {
            self.publish_file().await
        }
    }

    fn remote_error(&self, what: &str) -> impl FnOnce(object_store::Error) -> WriteError {
        let url = self.url.clone();
        let what = what.to_string();
        move |source| WriteError::Remote { url, what, reason: summarize(&source) }
    }

    fn child(&self, relative: &str) -> ObjectPath {
        relative.split('/').filter(|p| !p.is_empty()).fold(self.path.clone(), |p, part| match PathPart::parse(part) {
            Ok(raw) => p.join(raw),
            Err(_) => p.join(part),
        })
    }

    /// The object whose presence makes the output visible.
    fn visible(&self) -> ObjectPath {
        match self.kind.visible_document() {
            Some(name) => self.child(name),
            None => self.path.clone(),
        }
    }

    async fn head(&self, path: &ObjectPath) -> Result<Option<ObjectMeta>, WriteError> {
        match self.store.head(path).await {
            Ok(meta) => Ok(Some(meta)),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(self.remote_error("checking the destination")(e)),
        }
    }

    /// What is at the destination, refusing what must not be replaced. `took_over`: this writer took
    /// over a stale lock (objects under the prefix are debris).
    async fn existing(&self, took_over: bool) -> Result<Existing, WriteError> {
        let display = || PathBuf::from(&self.url);
        let visible = self.visible();
        if let Some(meta) = self.head(&visible).await? {
            if !self.overwrite {
                return Err(WriteError::Exists { path: display() });
            }
            let limit = if self.kind.is_dir() { 1 << 20 } else { 4096 };
            let head = self.store.get_range(&visible, 0..meta.size.min(limit)).await;
            let head = head.map_err(self.remote_error("reading the destination"))?;
            if !self.kind.owns_document(&head) {
                return Err(WriteError::NotReplaceable { path: display(), kind: self.kind.describe() });
            }
            return Ok(Existing::Output(meta));
        }
        if !self.kind.is_dir() {
            return Ok(Existing::Nothing);
        }
        let lock = self.child(LOCK_OBJECT);
        let mut listing = self.store.list(Some(&self.path));
        let mut any = false;
        while let Some(meta) = listing.try_next().await.map_err(self.remote_error("listing the destination"))? {
            if meta.location != lock {
                any = true;
                break;
            }
        }
        if !any {
            return Ok(Existing::Nothing);
        }
        if took_over || self.head(&lock).await?.is_some() {
            return Ok(Existing::Debris);
        }
        if self.overwrite {
            Err(WriteError::NotReplaceable { path: display(), kind: self.kind.describe() })
        } else {
            Err(WriteError::Exists { path: display() })
        }
    }

    /// A file kind: one conditional PUT (or a multipart upload of a large file).
    async fn publish_file(&self) -> Result<(), WriteError> {
        let size = std::fs::metadata(&self.local).map_err(super::io_error(&self.local, "reading"))?.len();
        for _ in 0..5 {
            let mode = match self.existing(false).await? {
                Existing::Output(meta) => PutMode::Update(UpdateVersion { e_tag: meta.e_tag, version: meta.version }),
                Existing::Nothing | Existing::Debris => PutMode::Create,
            };
            let result = if size <= single_put_max() {
                let bytes = std::fs::read(&self.local).map_err(super::io_error(&self.local, "reading"))?;
                self.store.put_opts(&self.path, PutPayload::from(bytes), PutOptions::from(mode)).await.map(|_| ())
            } else {
                upload_parts(self.store.as_ref(), &self.path, &self.local).await
            };
            match result {
                Ok(()) => return Ok(()),
                Err(object_store::Error::AlreadyExists { .. }) if !self.overwrite => {
                    return Err(WriteError::Exists { path: PathBuf::from(&self.url) })
                }
                // The destination changed between the check and the put: check again.
                Err(object_store::Error::AlreadyExists { .. } | object_store::Error::Precondition { .. }) => {}
                Err(e) => return Err(self.remote_error("uploading")(e)),
            }
        }
        Err(WriteError::Exists { path: PathBuf::from(&self.url) })
    }

    /// A directory kind, under the lock: every part, then the visible document, then the old store's
    /// leftovers.
    async fn publish_tree(&self, lock: &Lock) -> Result<(), WriteError> {
        let existing = self.existing(lock.took_over).await?;
        let visible = self.visible();
        let mut before: HashSet<ObjectPath> = self
            .store
            .list(Some(&self.path))
            .map_ok(|meta| meta.location)
            .try_collect()
            .await
            .map_err(self.remote_error("listing the destination"))?;
        before.remove(&lock.path);
        let files = local_files(&self.local)?;
        let visible_name = self.kind.visible_document().unwrap_or_default();
        let parts: Vec<&String> = files.iter().filter(|f| f.as_str() != visible_name).collect();
        if let Existing::Output(_) = existing {
            self.store.delete(&visible).await.map_err(self.remote_error("hiding the old store"))?;
            crash_point("remote-hidden");
        }
        let mut written: HashSet<ObjectPath> = parts.iter().map(|f| self.child(f)).collect();
        let result = async {
            futures::stream::iter(parts.iter().map(|f| self.upload(f)))
                .buffer_unordered(self.max_concurrent)
                .try_collect::<Vec<()>>()
                .await?;
            crash_point("remote-uploaded");
            self.check_lock(lock).await?;
            let bytes = std::fs::read(self.local.join(visible_name))
                .map_err(super::io_error(&self.local.join(visible_name), "reading"))?;
            let put = self.store.put_opts(&visible, PutPayload::from(bytes), PutOptions::from(PutMode::Create)).await;
            match put {
                Ok(_) => Ok(()),
                Err(object_store::Error::AlreadyExists { .. }) => {
                    Err(WriteError::Exists { path: PathBuf::from(&self.url) })
                }
                Err(e) => Err(self.remote_error("publishing")(e)),
            }
        }
        .await;
        written.insert(visible.clone());
        let leftovers: Vec<ObjectPath> = match &result {
            // The old store's objects the new one does not have.
            Ok(()) => before.difference(&written).cloned().collect(),
            // Nothing of ours is visible: remove what was uploaded and the hidden old store or debris.
            Err(_) => {
                written.remove(&visible);
                written.union(&before).filter(|p| **p != visible).cloned().collect()
            }
        };
        self.delete_all(leftovers).await;
        result
    }

    /// Uploads one local file of the tree (relative path `file`).
    async fn upload(&self, file: &String) -> Result<(), WriteError> {
        let local = self.local.join(file);
        let path = self.child(file);
        let size = std::fs::metadata(&local).map_err(super::io_error(&local, "reading"))?.len();
        let result = if size <= single_put_max() {
            let bytes = std::fs::read(&local).map_err(super::io_error(&local, "reading"))?;
            self.store.put(&path, PutPayload::from(bytes)).await.map(|_| ())
        } else {
            upload_parts(self.store.as_ref(), &path, &local).await
        };
        result.map_err(self.remote_error(&format!("uploading {file}")))
    }

    async fn delete_all(&self, paths: Vec<ObjectPath>) {
        let store = &self.store;
        futures::stream::iter(paths.into_iter().map(|p| async move { store.delete(&p).await }))
            .buffer_unordered(self.max_concurrent)
            .for_each(|_| async {})
            .await;
    }

    /// Takes the output's lock: a conditional create, or the conditional takeover of a stale lock.
    async fn acquire_lock(&self) -> Result<Lock, WriteError> {
        let path = self.child(LOCK_OBJECT);
        let body = lock_body();
        let busy = |holder: String| WriteError::Busy { url: self.url.clone(), holder, lock: LOCK_OBJECT };
        for _ in 0..3 {
            let create = PutOptions::from(PutMode::Create);
            match self.store.put_opts(&path, PutPayload::from(body.clone()), create).await {
                Ok(r) => return Ok(Lock { path, e_tag: r.e_tag, took_over: false }),
                Err(object_store::Error::AlreadyExists { .. }) => {}
                Err(e) => return Err(self.remote_error("taking the write lock")(e)),
            }
            let Some(meta) = self.head(&path).await? else { continue };
            let holder = match self.store.get(&path).await {
                Ok(got) => got.bytes().await.map(|b| String::from_utf8_lossy(&b).into_owned()).unwrap_or_default(),
                Err(_) => continue,
            };
            if !lock_stale(&holder, meta.last_modified.timestamp()) {
                return Err(busy(holder));
            }
            let update = PutMode::Update(UpdateVersion { e_tag: meta.e_tag.clone(), version: meta.version.clone() });
            match self.store.put_opts(&path, PutPayload::from(body.clone()), PutOptions::from(update)).await {
                Ok(r) => return Ok(Lock { path, e_tag: r.e_tag, took_over: true }),
                Err(object_store::Error::Precondition { .. } | object_store::Error::AlreadyExists { .. }) => {
                    return Err(busy(holder))
                }
                Err(e) => return Err(self.remote_error("taking over a stale write lock")(e)),
            }
        }
        Err(busy("a writer that keeps taking and releasing it".into()))
    }

    /// Fails when another writer took the lock over (it found this one stale).
    async fn check_lock(&self, lock: &Lock) -> Result<(), WriteError> {
        let Some(ours) = &lock.e_tag else { return Ok(()) };
        let meta = self.head(&lock.path).await?;
        if meta.as_ref().and_then(|m| m.e_tag.as_ref()) == Some(ours) {
            return Ok(());
        }
        Err(WriteError::Busy {
            url: self.url.clone(),
            holder: "a writer that took over this one's lock".into(),
            lock: LOCK_OBJECT,
        })
    }
}

impl Drop for RemoteOutput {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.temp);
    }
}

/// An object store's error in a few words: the server's `<Code>` and `<Message>` when its reply
/// has them (`NoSuchBucket: The specified bucket does not exist`), else what the error kind says.
fn summarize(e: &object_store::Error) -> String {
    let text = e.to_string();
    let tag = |name: &str| {
        let start = text.find(&format!("<{name}>"))? + name.len() + 2;
        let end = start + text[start..].find(&format!("</{name}>"))?;
        Some(text[start..end].trim_start_matches("<![CDATA[").trim_end_matches("]]>").trim().to_string())
    };
    if let Some(code) = tag("Code") {
        return match tag("Message") {
            Some(message) => format!("{code}: {message}"),
            None => code,
        };
    }
    match e {
        object_store::Error::NotFound { .. } => "not found".into(),
        object_store::Error::PermissionDenied { .. } => "access denied".into(),
        object_store::Error::Unauthenticated { .. } => "not authenticated (check the credentials)".into(),
        object_store::Error::NotImplemented { .. } => {
            "not supported by this object store (vzarr needs conditional writes to publish here)".into()
        }
        _ => text.replace('\n', " "),
    }
}

/// The URL locations among `sources` (what a remote output must not be, nor contain).
#[must_use]
pub fn url_sources(sources: &crate::manifest::SourceTable) -> Vec<String> {
    sources.iter().filter_map(|s| crate::source::Location::parse(&s.location).as_url().map(str::to_string)).collect()
}

/// Refuses an output URL that is one of `inputs` or a prefix (a "directory") holding one.
fn check_inputs(url: &str, inputs: &[String]) -> Result<(), WriteError> {
    let dir = format!("{url}/");
    for input in inputs {
        let input_trimmed = input.trim_end_matches('/');
        if input_trimmed == url || input.starts_with(&dir) {
            return Err(WriteError::Input { path: PathBuf::from(url), input: PathBuf::from(input) });
        }
    }
    Ok(())
}

/// Uploads `local` to `path` in parts of [`SINGLE_PUT_MAX`] bytes (the object appears when complete).
async fn upload_parts(store: &dyn ObjectStore, path: &ObjectPath, local: &Path) -> object_store::Result<()> {
    use std::io::Read;
    let to_store = |e: std::io::Error| object_store::Error::Generic { store: "vzarr", source: Box::new(e) };
    let mut file = std::fs::File::open(local).map_err(to_store)?;
    let upload = store.put_multipart_opts(path, Default::default()).await?;
    let chunk = usize::try_from(single_put_max()).unwrap_or(usize::MAX);
    let mut writer = WriteMultipart::new_with_chunk_size(upload, chunk);
    let mut buffer = vec![0u8; chunk];
    loop {
        if let Err(e) = writer.wait_for_capacity(PARTS_IN_FLIGHT).await {
            let _ = writer.abort().await;
            return Err(e);
        }
        let n = match file.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) => {
                let _ = writer.abort().await;
                return Err(to_store(e));
            }
        };
        writer.write(&buffer[..n]);
    }
    writer.finish().await.map(|_| ())
}

/// [`SINGLE_PUT_MAX`], or `VZARR_TEST_SINGLE_PUT_MAX` (a test hook, at least S3's 5 MiB part minimum).
fn single_put_max() -> u64 {
    crate::test_hooks::single_put_max().map_or(SINGLE_PUT_MAX, |n| n.max(5 << 20))
}

/// Every file below `root`, as slash-separated relative paths (a file kind: its name).
fn local_files(root: &Path) -> Result<Vec<String>, WriteError> {
    let mut files = Vec::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let entries = std::fs::read_dir(&dir).map_err(super::io_error(&dir, "listing"))?;
        for entry in entries {
            let path = entry.map_err(super::io_error(&dir, "listing"))?.path();
            if path.is_dir() {
                pending.push(path);
                continue;
            }
            let relative = path.strip_prefix(root).unwrap_or(&path);
            let text = relative.to_str().ok_or_else(|| WriteError::Io {
                path: path.clone(),
                what: "uploading".into(),
                source: std::io::Error::new(std::io::ErrorKind::InvalidData, "file name is not UTF-8"),
            })?;
            files.push(text.to_string());
        }
    }
    files.sort();
    Ok(files)
}

/// A new directory only this user can enter, under the system's temporary directory.
fn private_dir() -> std::io::Result<PathBuf> {
    use std::os::unix::fs::DirBuilderExt;
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    let dir = std::env::temp_dir().join(format!("vzarr-upload-{}-{nanos}", std::process::id()));
    std::fs::DirBuilder::new().mode(0o700).create(&dir)?;
    Ok(dir)
}

fn hostname() -> String {
    let mut buffer = [0u8; 256];
    // SAFETY: the buffer is writable for its length; the name is NUL-terminated on success.
    let result = unsafe { libc::gethostname(buffer.as_mut_ptr().cast(), buffer.len()) };
    if result != 0 {
        return String::new();
    }
    let end = buffer.iter().position(|b| *b == 0).unwrap_or(buffer.len());
    String::from_utf8_lossy(&buffer[..end]).into_owned()
}

/// The lock's content: `host=NAME pid=PID`, which tells the next writer whether it is stale.
fn lock_body() -> Vec<u8> {
    format!("host={} pid={}", hostname(), std::process::id()).into_bytes()
}

/// Whether a lock (`holder` as written by [`lock_body`]) belongs to a writer that is gone: a process
/// of this host that no longer exists, or a lock older than `VZARR_LOCK_STALE_SECS`.
fn lock_stale(holder: &str, modified_secs: i64) -> bool {
    let field = |name: &str| holder.split(' ').find_map(|f| f.strip_prefix(name)).map(str::to_string);
    let pid = field("pid=").and_then(|p| p.parse::<u32>().ok());
    if let (Some(host), Some(pid)) = (field("host="), pid) {
        if host == hostname() && !process_alive(pid) {
            return true;
        }
    }
    let stale_after = std::env::var("VZARR_LOCK_STALE_SECS")
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
        .map_or(LOCK_STALE_DEFAULT, Duration::from_secs);
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    u64::try_from(modified_secs).is_ok_and(|then| now.saturating_sub(then) > stale_after.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outputs_holding_an_input_are_refused() {
        let inputs = vec!["s3://b/archive/a.nc".to_string(), "s3://b/other".to_string()];
        assert!(check_inputs("s3://b/archive", &inputs).is_err());
        assert!(check_inputs("s3://b/archive/a.nc", &inputs).is_err());
        assert!(check_inputs("s3://b/other", &inputs).is_err());
        assert!(check_inputs("s3://b/arch", &inputs).is_ok());
        assert!(check_inputs("s3://b/archive2", &inputs).is_ok());
    }

    #[test]
    fn locks_of_dead_local_processes_are_stale() {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
        let meta = |age: i64| i64::try_from(now).unwrap() - age;
        let live = String::from_utf8(lock_body()).unwrap();
        assert!(!lock_stale(&live, meta(10)));
        assert!(lock_stale(&format!("host={} pid=2147483632", hostname()), meta(10)));
        assert!(!lock_stale("host=elsewhere pid=1", meta(10)));
        assert!(lock_stale("host=elsewhere pid=1", meta(7200)));
    }
}
