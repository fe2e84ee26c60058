//! The one way vzarr puts an output in place: stage it in a hidden sibling, then publish it in one
//! atomic step. Every writer uses it: the native store, kerchunk JSON (scan and export), `materialize`
//! and `read -o x.npy`.
//!
//! ```text
//! dir/.NAME.tmp-PID-NANOS   staging (file or directory tree), written, then synced once (syncfs)
//! dir/NAME                  published: renameat2(RENAME_NOREPLACE), or RENAME_EXCHANGE to replace
//! ```
//!
//! - Every writer holds the output's lock (`store/lock`'s `OutputLock`, `.NAME.lock-`) from
//!   `begin` to `publish`: concurrent writers of the same output take turns.
//! - Without `overwrite`, publishing never replaces anything: of several concurrent writers of the
//!   same output exactly one wins, the others fail with "already exists" and remove their staging.
//! - With `overwrite`, the new output is exchanged with the old one in one step (a reader always finds
//!   one of them), then the old one, now at the staging name, is removed. Only an output of the same
//!   kind is replaced ([`OutputKind::owns`]: a vzarr store, a Zarr v3 store, a kerchunk JSON file, a
//!   `.npy` file), never an ordinary directory or file of the user's.
//! - An output that is, or contains, one of the inputs is refused before anything is written.
//! - Staging names carry the writer's PID: the next writer of the same output removes the staging left
//!   by a process that no longer exists (a crash or kill -9), and puts back an old output that a
//!   crashed fallback replacement had moved aside.
//!
//! Fallbacks where `renameat2` or its flags are unsupported (old kernels, some network file systems):
//! a file is published without replacing with `link(2)` (fails when the name exists) and replaced with
//! `rename(2)` (atomic for files). A directory is published with `rename(2)`, which refuses to replace a
//! non-empty directory (and a published output never is empty), and replaced in two renames (old moved
//! aside to `.NAME.old-PID-NANOS`, new moved in): not atomic, a reader can find nothing in between, but
//! no data is lost: a crash in between leaves the old output aside, and the next writer puts it back.
//!
//! `renameat2` and `syncfs` are Linux calls; elsewhere publishing always takes the fallbacks and syncs
//! file by file. Test hooks (debug builds only, [`crate::test_hooks`]): crash points `begun`, `staged`,
//! `exchanged`, `moved-aside`, and forcing the fallbacks.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::WriteError;

/// What kind of output is written: decides what an existing destination must be to be replaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum OutputKind {
    /// A native `*.vzarr` directory (recognised by its `vzarr.json` with `"format": "vzarr"`).
    VzarrStore,
    /// A Zarr v3 directory store (recognised by its root `zarr.json` with `"zarr_format": 3`).
    ZarrStore,
    /// A kerchunk reference JSON file (recognised by its start, `{"version":`).
    KerchunkJson,
    /// A NumPy `.npy` file (recognised by its magic, `\x93NUMPY`).
    Npy,
    /// A partial scan result of `scan --shard` (recognised by its magic, `VZPART`).
    ScanPart,
    /// A kerchunk Parquet reference set (a directory, recognised by its `.zmetadata` with a
    /// `record_size`).
    KerchunkParquet,
    /// A DMR++ sidecar (recognised by its start, `<?xml`, and the DMR++ namespace in its first 4 KiB).
    Dmrpp,
}

impl OutputKind {
    pub(crate) fn is_dir(self) -> bool {
        matches!(self, OutputKind::VzarrStore | OutputKind::ZarrStore | OutputKind::KerchunkParquet)
    }

    /// The document that makes a directory kind visible to readers, written last on object stores:
    /// `vzarr.json` of a vzarr store, the root `zarr.json` of a Zarr v3 store; `None` for files.
    pub(crate) fn visible_document(self) -> Option<&'static str> {
        match self {
            OutputKind::VzarrStore => Some(super::STORE_INFO_FILE),
            OutputKind::ZarrStore => Some("zarr.json"),
            OutputKind::KerchunkParquet => Some(".zmetadata"),
            _ => None,
        }
    }

    /// Whether `head` (the first bytes of the file, or of the directory kind's
    /// [`visible_document`](Self::visible_document)) shows an output of this kind: the rule of
    /// [`OutputKind::owns`], applied to bytes (an object on an object store).
    pub(crate) fn owns_document(self, head: &[u8]) -> bool {
        match self {
            OutputKind::VzarrStore => compact_starts_with(head, b"{\"format\":\"vzarr\""),
            OutputKind::ZarrStore => crate::metadata::from_text(head).ok().is_some_and(|doc| doc["zarr_format"] == 3),
            OutputKind::KerchunkJson => compact_starts_with(head, b"{\"version\":"),
            OutputKind::Npy => compact_starts_with(head, b"\x93NUMPY"),
            OutputKind::ScanPart => compact_starts_with(head, b"VZPART\0\0"),
            OutputKind::KerchunkParquet => is_zmetadata(head),
            OutputKind::Dmrpp => is_dmrpp(head),
        }
    }

    pub(crate) fn describe(self) -> &'static str {
        match self {
            OutputKind::VzarrStore => "a vzarr store",
            OutputKind::ZarrStore => "a Zarr v3 store",
            OutputKind::KerchunkJson => "a kerchunk reference file",
            OutputKind::Npy => "a .npy file",
            OutputKind::ScanPart => "a vzarr scan part",
            OutputKind::KerchunkParquet => "a kerchunk Parquet reference set",
            OutputKind::Dmrpp => "a DMR++ sidecar",
        }
    }

    /// Whether the existing `path` is an output of this kind (never follows a symbolic link).
    #[must_use]
    pub fn owns(self, path: &Path) -> bool {
        let Ok(meta) = path.symlink_metadata() else { return false };
        if meta.is_dir() != self.is_dir() || meta.file_type().is_symlink() {
            return false;
        }
        match self {
            OutputKind::VzarrStore => starts_with_compact(&path.join(super::STORE_INFO_FILE), b"{\"format\":\"vzarr\""),
            OutputKind::ZarrStore => std::fs::read(path.join("zarr.json"))
                .ok()
                .and_then(|b| crate::metadata::from_text(&b).ok())
                .is_some_and(|doc| doc["zarr_format"] == 3),
            OutputKind::KerchunkJson => starts_with_compact(path, b"{\"version\":"),
            OutputKind::Npy => starts_with_compact(path, b"\x93NUMPY"),
            OutputKind::ScanPart => starts_with_compact(path, b"VZPART\0\0"),
            OutputKind::KerchunkParquet => std::fs::read(path.join(".zmetadata")).is_ok_and(|b| is_zmetadata(&b)),
            OutputKind::Dmrpp => head_of(path).is_some_and(|head| is_dmrpp(&head)),
        }
    }
}

/// Whether `bytes` are a kerchunk Parquet `.zmetadata`: JSON with `metadata` and `record_size`.
fn is_zmetadata(bytes: &[u8]) -> bool {
    let doc: Option<serde_json::Value> = crate::metadata::from_text(bytes).ok();
    doc.is_some_and(|doc| doc.get("metadata").is_some_and(serde_json::Value::is_object) && doc["record_size"].is_u64())
}

/// Whether `head` starts a DMR++ document: `<?xml`, and the DMR++ namespace soon after.
fn is_dmrpp(head: &[u8]) -> bool {
    const NAMESPACE: &[u8] = b"http://xml.opendap.org/dap/dmrpp/";
    compact_starts_with(head, b"<?xml") && head.windows(NAMESPACE.len()).any(|w| w == NAMESPACE)
}

/// The first 4 KiB of `file`.
fn head_of(file: &Path) -> Option<Vec<u8>> {
    use std::io::Read;
    let mut head = Vec::new();
    std::fs::File::open(file).and_then(|f| f.take(4096).read_to_end(&mut head)).ok()?;
    Some(head)
}

/// Whether the first 4 KiB of `file`, whitespace removed, start with `prefix`.
fn starts_with_compact(file: &Path, prefix: &[u8]) -> bool {
    use std::io::Read;
    let mut head = Vec::new();
    let read = std::fs::File::open(file).and_then(|f| f.take(4096).read_to_end(&mut head));
    read.is_ok() && compact_starts_with(&head, prefix)
}

/// Whether `head`, whitespace removed, starts with `prefix`.
fn compact_starts_with(head: &[u8], prefix: &[u8]) -> bool {
    head.iter().filter(|b| !b.is_ascii_whitespace()).take(prefix.len()).eq(prefix.iter())
}

/// An output being written: its hidden staging path, published with [`Staged::publish`], removed on
/// drop otherwise.
#[derive(Debug)]
pub struct Staged {
    staging: PathBuf,
    destination: PathBuf,
    kind: OutputKind,
    overwrite: bool,
    done: bool,
    /// The output's lock, held from before the destination is looked at until it is published
    /// (dropped after the staging is removed: fields drop after `drop` runs).
    _lock: super::lock::OutputLock,
}

impl Staged {
    /// Checks the destination (absent, or replaceable with `overwrite`; not an input and not
    /// containing one), removes the staging left by dead processes, and creates the staging directory
    /// (directory kinds; a file kind's staging file is created by the caller at [`Staged::path`]).
    ///
    /// # Errors
    /// [`WriteError::Exists`], [`WriteError::NotReplaceable`], [`WriteError::Input`], or
    /// [`WriteError::Io`] when the staging directory cannot be created.
    pub fn begin(
        destination: &Path,
        kind: OutputKind,
        overwrite: bool,
        inputs: &[PathBuf],
    ) -> Result<Staged, WriteError> {
        check_inputs(destination, inputs)?;
        let lock_path = destination.with_file_name(sibling_prefix(destination, "lock"));
        let lock = super::lock::OutputLock::acquire(&lock_path).map_err(io_error(&lock_path, "locking the output"))?;
        clean_stale(destination);
        check_destination(destination, kind, overwrite)?;
        let staging = sibling(destination, "tmp", std::process::id());
        if kind.is_dir() {
            std::fs::create_dir(&staging).map_err(io_error(&staging, "creating the staging directory"))?;
        }
        let destination = destination.to_path_buf();
        let staged = Staged { staging, destination, kind, overwrite, done: false, _lock: lock };
        crash_point("begun");
        Ok(staged)
    }

    /// The hidden path to write the output at.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.staging
    }

    /// Makes the staged output durable (one `syncfs`) and puts it at the destination in one step.
    ///
    /// # Errors
    /// [`WriteError::Exists`] when another writer published first (without `overwrite`),
    /// [`WriteError::NotReplaceable`] when what is now at the destination is not of this kind, or
    /// [`WriteError::Io`]. The staging is removed on error.
    pub fn publish(mut self) -> Result<(), WriteError> {
        sync_tree(&self.staging)?;
        crash_point("staged");
        if self.overwrite {
            self.publish_or_replace()?;
        } else {
            self.publish_new()?;
        }
        self.done = true;
        if let Some(parent) = parent_dir(&self.destination) {
            let _ = std::fs::File::open(parent).and_then(|d| d.sync_all());
        }
        Ok(())
    }

    /// Replaces the destination, or publishes where there is none; retried a few times when
    /// concurrent writers make the destination appear or vanish in between.
    fn publish_or_replace(&mut self) -> Result<(), WriteError> {
        let mut attempts = 0;
        loop {
            let result = if self.destination.symlink_metadata().is_ok() { self.replace() } else { self.publish_new() };
            match result {
                Err(WriteError::Exists { .. }) if attempts < 5 => attempts += 1,
                other => return other,
            }
        }
    }

    fn publish_new(&mut self) -> Result<(), WriteError> {
        let exists = || WriteError::Exists { path: self.destination.clone() };
        match rename_noreplace(&self.staging, &self.destination) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return Err(exists()),
            Err(e) if !unsupported(&e) => return Err(io_error(&self.destination, "publishing")(e)),
            Err(_) => {}
        }
        let result = if self.kind.is_dir() {
            // rename(2) refuses to replace a non-empty directory, and a published store never is empty.
            std::fs::rename(&self.staging, &self.destination)
        } else {
            std::fs::hard_link(&self.staging, &self.destination).and_then(|()| std::fs::remove_file(&self.staging))
        };
        match result {
            Ok(()) => Ok(()),
            Err(e) if matches!(e.raw_os_error(), Some(libc::EEXIST | libc::ENOTEMPTY | libc::EISDIR)) => Err(exists()),
            Err(e) => Err(io_error(&self.destination, "publishing")(e)),
        }
    }

    fn replace(&mut self) -> Result<(), WriteError> {
        check_destination(&self.destination, self.kind, true)?;
        match rename_exchange(&self.staging, &self.destination) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return self.publish_new(),
            Err(e) if unsupported(&e) => return self.replace_in_two_steps(),
            Err(e) => return Err(io_error(&self.destination, "replacing")(e)),
        }
        // The staging path now holds what was at the destination: make sure it was ours to remove.
        if !self.kind.owns(&self.staging) {
            let _ = rename_exchange(&self.staging, &self.destination);
            return Err(not_replaceable(&self.destination, self.kind));
        }
        crash_point("exchanged");
        remove_any(&self.staging);
        Ok(())
    }

    /// The fallback replacement: atomic for files, two renames for directories.
    fn replace_in_two_steps(&mut self) -> Result<(), WriteError> {
        if !self.kind.is_dir() {
            return std::fs::rename(&self.staging, &self.destination).map_err(io_error(&self.destination, "replacing"));
        }
        let exists = || WriteError::Exists { path: self.destination.clone() };
        let old = sibling(&self.destination, "old", std::process::id());
        match std::fs::rename(&self.destination, &old) {
            Ok(()) => {}
            // Another writer moved it first: try again.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(exists()),
            Err(e) => return Err(io_error(&self.destination, "moving the old output aside")(e)),
        }
        crash_point("moved-aside");
        if let Err(e) = std::fs::rename(&self.staging, &self.destination) {
            // Put the old output back; if another writer's output took its place, the old one is obsolete.
            if std::fs::rename(&old, &self.destination).is_err() {
                remove_any(&old);
            }
            if matches!(e.raw_os_error(), Some(libc::EEXIST | libc::ENOTEMPTY)) {
                return Err(exists());
            }
            return Err(io_error(&self.destination, "moving the new output into place")(e));
        }
        remove_any(&old);
        Ok(())
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if !self.done {
            remove_any(&self.staging);
        }
    }
}

fn io_error(path: &Path, what: &str) -> impl FnOnce(std::io::Error) -> WriteError {
    super::io_error(path, what)
}

/// Looks at a destination that is not an output of the kind written before refusing it.
const CHECK_ATTEMPTS: usize = 5;

fn not_replaceable(path: &Path, kind: OutputKind) -> WriteError {
    WriteError::NotReplaceable { path: path.to_path_buf(), kind: kind.describe() }
}

/// Absent, or (with `overwrite`) an output of `kind`. A destination that stops being one while it
/// is looked at (a concurrent writer's two-step replacement moves it aside, then puts its own in
/// place) is looked at again, a few times, before it is called not replaceable.
fn check_destination(destination: &Path, kind: OutputKind, overwrite: bool) -> Result<(), WriteError> {
    for _ in 0..CHECK_ATTEMPTS {
        if destination.symlink_metadata().is_err() {
            return Ok(());
        }
        if !overwrite {
            return Err(WriteError::Exists { path: destination.to_path_buf() });
        }
        if kind.owns(destination) {
            return Ok(());
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    Err(not_replaceable(destination, kind))
}

/// Refuses a destination that is one of `inputs` or a directory containing one.
fn check_inputs(destination: &Path, inputs: &[PathBuf]) -> Result<(), WriteError> {
    // Nothing there (not even a symbolic link): no input is it or lies inside it, and the inputs
    // need not be looked at (a new output of a store of 10^6 sources costs no 10^6 `lstat`s).
    if destination.symlink_metadata().is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound) {
        return Ok(());
    }
    let Some(destination_real) = real_path(destination) else { return Ok(()) };
    // Each directory is resolved once: a store's 10^4 sources in one directory cost 10^4 `lstat`s,
    // not 6 * 10^4 `readlink`s (0.05-0.5 s of `vzarr read` of one chunk).
    let mut directories = std::collections::HashMap::new();
    for input in inputs {
        let Some(input_real) = real_path_in(input, &mut directories) else { continue };
        if input_real.starts_with(&destination_real) {
            return Err(WriteError::Input { path: destination.to_path_buf(), input: input.clone() });
        }
    }
    Ok(())
}

/// The absolute path with every existing directory resolved (symbolic links followed), the last
/// component kept as given when it does not exist.
fn real_path(path: &Path) -> Option<PathBuf> {
    if let Ok(real) = std::fs::canonicalize(path) {
        return Some(real);
    }
    let absolute = std::path::absolute(path).ok()?;
    let name = absolute.file_name()?;
    Some(std::fs::canonicalize(absolute.parent()?).ok()?.join(name))
}

/// [`real_path`] of `path`, resolving its directory through `directories` (each directory's real
/// path, resolved once) when `path` itself is no symbolic link.
fn real_path_in(path: &Path, directories: &mut std::collections::HashMap<PathBuf, Option<PathBuf>>) -> Option<PathBuf> {
    let absolute = std::path::absolute(path).ok()?;
    let plain = std::fs::symlink_metadata(&absolute).is_ok_and(|m| !m.file_type().is_symlink());
    let last_is_name = matches!(absolute.components().next_back(), Some(std::path::Component::Normal(_)));
    match (absolute.parent(), absolute.file_name()) {
        (Some(parent), Some(name)) if plain && last_is_name => {
            let real = directories.entry(parent.to_path_buf()).or_insert_with(|| std::fs::canonicalize(parent).ok());
            Some(real.as_ref()?.join(name))
        }
        _ => real_path(path),
    }
}

fn parent_dir(path: &Path) -> Option<&Path> {
    match path.parent() {
        Some(p) if p.as_os_str().is_empty() => Some(Path::new(".")),
        other => other,
    }
}

/// `.NAME.TAG-PID-NANOS` next to `path`.
fn sibling(path: &Path, tag: &str, pid: u32) -> PathBuf {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    let mut name = sibling_prefix(path, tag);
    name.push(format!("{pid}-{nanos}"));
    path.with_file_name(name)
}

/// Longest output name kept whole in sibling names: `.NAME.TAG-PID-NANOS` must fit the 255-byte name
/// limit of common file systems, and the tag, PID and time take up to 37 bytes.
const MAX_NAME_IN_SIBLING: usize = 200;

/// `.NAME.TAG-`: the start of every sibling name of `path` with `tag`. A name longer than
/// [`MAX_NAME_IN_SIBLING`] bytes is shortened to its start, `~` and a hash of the whole name.
fn sibling_prefix(path: &Path, tag: &str) -> OsString {
    let full = path.file_name().unwrap_or_else(|| OsStr::new("output")).as_bytes();
    let mut name = b".".to_vec();
    if full.len() <= MAX_NAME_IN_SIBLING {
        name.extend_from_slice(full);
    } else {
        // FNV-1a: stable across builds, so any vzarr finds the staging another one left.
        let hash = full.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3));
        name.extend_from_slice(&full[..MAX_NAME_IN_SIBLING - 17]);
        name.extend_from_slice(format!("~{hash:016x}").as_bytes());
    }
    name.extend_from_slice(format!(".{tag}-").as_bytes());
    OsString::from_vec(name)
}

/// Removes the staging of dead writers of `destination`, and puts back an old output that a dead
/// writer had moved aside (fallback replacement) when nothing took its place.
fn clean_stale(destination: &Path) {
    let Some(parent) = parent_dir(destination) else { return };
    let Ok(entries) = std::fs::read_dir(parent) else { return };
    let tmp = sibling_prefix(destination, "tmp");
    let old = sibling_prefix(destination, "old");
    for entry in entries.flatten() {
        let name = entry.file_name();
        let (is_old, rest) = match (strip(&name, &tmp), strip(&name, &old)) {
            (Some(rest), _) => (false, rest),
            (_, Some(rest)) => (true, rest),
            _ => continue,
        };
        let pid = std::str::from_utf8(rest).ok().and_then(|r| r.split('-').next()?.parse::<u32>().ok());
        if pid.is_none_or(process_alive) {
            continue;
        }
        let path = entry.path();
        if is_old && destination.symlink_metadata().is_err() && std::fs::rename(&path, destination).is_ok() {
            continue;
        }
        remove_any(&path);
    }
}

fn strip<'a>(name: &'a OsStr, prefix: &OsStr) -> Option<&'a [u8]> {
    name.as_bytes().strip_prefix(prefix.as_bytes())
}

/// Whether process `pid` exists (a process we may not signal exists too).
pub(crate) fn process_alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else { return false };
    // SAFETY: signal 0 only checks for existence and permission.
    let result = unsafe { libc::kill(pid, 0) };
    result == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

fn remove_any(path: &Path) {
    match path.symlink_metadata() {
        Ok(meta) if meta.is_dir() => {
            let _ = std::fs::remove_dir_all(path);
        }
        Ok(_) => {
            let _ = std::fs::remove_file(path);
        }
        Err(_) => {}
    }
}

/// Syncs made by publishing, for tests (`vzarr` prints it with `VZARR_TEST_COUNTERS=1`).
static SYNCS: AtomicU64 = AtomicU64::new(0);

/// Number of sync calls (`syncfs`, `fsync`) made by [`Staged::publish`] in this process.
#[must_use]
#[cfg(all(feature = "cli", debug_assertions))]
pub(crate) fn sync_count() -> u64 {
    SYNCS.load(Ordering::Relaxed)
}

/// Makes everything under `path` durable: one `syncfs` of its file system (one call, however many
/// files the output has), or an `fsync` of every file where `syncfs` fails.
fn sync_tree(path: &Path) -> Result<(), WriteError> {
    let file = std::fs::File::open(path).map_err(io_error(path, "opening for sync"))?;
    SYNCS.fetch_add(1, Ordering::Relaxed);
    #[cfg(target_os = "linux")]
    // SAFETY: the descriptor is open for the duration of the call.
    if unsafe { libc::syncfs(std::os::fd::AsRawFd::as_raw_fd(&file)) } == 0 {
        return Ok(());
    }
    drop(file);
    fsync_each(path)
}

fn fsync_each(path: &Path) -> Result<(), WriteError> {
    let mut stack = vec![path.to_path_buf()];
    while let Some(next) = stack.pop() {
        let meta = next.symlink_metadata().map_err(io_error(&next, "syncing"))?;
        if meta.is_dir() {
            for entry in std::fs::read_dir(&next).map_err(io_error(&next, "syncing"))? {
                stack.push(entry.map_err(io_error(&next, "syncing"))?.path());
            }
        }
        SYNCS.fetch_add(1, Ordering::Relaxed);
        std::fs::File::open(&next).and_then(|f| f.sync_all()).map_err(io_error(&next, "syncing"))?;
    }
    Ok(())
}

fn unsupported(e: &std::io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EINVAL | libc::ENOSYS | libc::EOPNOTSUPP))
}

/// `renameat2(2)` with `flags`; an `EINVAL` error (unsupported, so the callers fall back) where the
/// call does not exist or the test hook forces the fallbacks.
#[cfg(target_os = "linux")]
fn renameat2(from: &Path, to: &Path, flags: libc::c_uint) -> std::io::Result<()> {
    use std::ffi::CString;
    if crate::test_hooks::renameat2_disabled() {
        return Err(std::io::Error::from_raw_os_error(libc::EINVAL));
    }
    let c = |p: &Path| CString::new(p.as_os_str().as_bytes()).map_err(std::io::Error::other);
    let (from, to) = (c(from)?, c(to)?);
    // SAFETY: both strings are NUL-terminated and live across the call.
    let result = unsafe { libc::renameat2(libc::AT_FDCWD, from.as_ptr(), libc::AT_FDCWD, to.as_ptr(), flags) };
    if result == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

#[cfg(not(target_os = "linux"))]
fn renameat2(_from: &Path, _to: &Path, _flags: libc::c_uint) -> std::io::Result<()> {
    Err(std::io::Error::from_raw_os_error(libc::EINVAL))
}

/// `renameat2`'s flags, as Linux defines them (the fallbacks run everywhere else).
const RENAME_NOREPLACE: libc::c_uint = 1;
const RENAME_EXCHANGE: libc::c_uint = 2;

fn rename_noreplace(from: &Path, to: &Path) -> std::io::Result<()> {
    renameat2(from, to, RENAME_NOREPLACE)
}

fn rename_exchange(from: &Path, to: &Path) -> std::io::Result<()> {
    renameat2(from, to, RENAME_EXCHANGE)
}

pub(crate) use crate::test_hooks::crash_point;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outputs_are_recognised_by_content_not_name() {
        let dir = tempfile::tempdir().unwrap();
        let npy = dir.path().join("a.npy");
        std::fs::write(&npy, b"\x93NUMPY\x01\x00").unwrap();
        assert!(OutputKind::Npy.owns(&npy));
        assert!(!OutputKind::KerchunkJson.owns(&npy));
        let refs = dir.path().join("refs.json");
        std::fs::write(&refs, b"{\"version\":1,\"refs\":{}}").unwrap();
        assert!(OutputKind::KerchunkJson.owns(&refs));
        let notes = dir.path().join("notes.json");
        std::fs::write(&notes, b"{\"mine\":1}").unwrap();
        assert!(!OutputKind::KerchunkJson.owns(&notes));
        assert!(!OutputKind::VzarrStore.owns(dir.path()));
        assert!(!OutputKind::ZarrStore.owns(dir.path()));
        std::fs::write(dir.path().join("zarr.json"), b"{\"zarr_format\":3,\"node_type\":\"group\"}").unwrap();
        assert!(OutputKind::ZarrStore.owns(dir.path()));
    }

    #[test]
    fn sibling_names_of_long_output_names_fit_the_name_limit() {
        let long = "x".repeat(255);
        let path = Path::new("/d").join(&long);
        let staging = sibling(&path, "tmp", u32::MAX);
        let name = staging.file_name().unwrap().as_bytes();
        assert!(name.len() <= 255, "{} bytes", name.len());
        assert!(name.starts_with(sibling_prefix(&path, "tmp").as_bytes()));
        let other = Path::new("/d").join(format!("{}y", &long[..254]));
        assert_ne!(sibling_prefix(&path, "tmp"), sibling_prefix(&other, "tmp"), "names differing at the end");
        let short = Path::new("/d/out.vzarr");
        assert_eq!(sibling_prefix(short, "old"), OsStr::new(".out.vzarr.old-"));
    }

    #[test]
    fn stale_staging_of_dead_processes_is_removed_and_live_ones_kept() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("out.vzarr");
        // PID 0x7fff_fff0 does not exist (above the kernel's pid_max).
        let dead = sibling(&dest, "tmp", 0x7fff_fff0);
        let live = sibling(&dest, "tmp", std::process::id());
        let other = dir.path().join(".other.vzarr.tmp-2147483632-1");
        for d in [&dead, &live, &other] {
            std::fs::create_dir(d).unwrap();
        }
        clean_stale(&dest);
        assert!(!dead.exists() && live.exists() && other.exists());
    }
}
