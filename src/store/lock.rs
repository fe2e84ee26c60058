//! The locks of local outputs, each an exclusive `flock`:
//!
//! - [`lock`]: the commands that rewrite a store in place (append, compaction) lock the store's
//!   directory, and a second one fails at once.
//! - [`OutputLock`]: every command that publishes an output (scan, export, materialize, merge,
//!   compaction's copy, `read -o`) holds a lock file beside it, `.NAME.lock-`, from before it looks at
//!   the destination until it has published (the staging of `store/publish` holds it). A second writer of
//!   the same output waits for the first, then finds the output the first published (and fails with
//!   "already exists", or replaces it with `--overwrite`): resumable work in progress beside the
//!   output (`materialize`'s `DEST.partial`) is never written by two processes at once. The file is
//!   removed by its holder; one left by a killed process is taken over by the next writer.

use std::path::Path;

/// Why a store could not be locked (the caller names the store).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub(crate) struct LockRefused {
    /// What happened, in a few words.
    pub(crate) reason: String,
}

/// An exclusive lock on the store directory, held until the process ends or the lock is dropped: a
/// second append of the same store fails at once instead of losing one of the two updates. The lock
/// is on the directory's inode, which the append replaces: after locking, the path must still name
/// the locked directory (else a previous append just replaced it, and the new one is locked).
pub(crate) fn lock(store: &Path) -> Result<std::fs::File, LockRefused> {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::MetadataExt;
    let refuse = |reason: String| LockRefused { reason };
    for _ in 0..10 {
        let dir = std::fs::File::open(store).map_err(|e| refuse(format!("opening: {e}")))?;
        // SAFETY: flock on a descriptor this function owns; no memory is passed.
        if unsafe { libc::flock(dir.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            let err = std::io::Error::last_os_error();
            if err.raw_os_error() == Some(libc::EWOULDBLOCK) {
                return Err(refuse(
                    "another append to this store is running, or a compaction; nothing was written".into(),
                ));
            }
            return Err(refuse(format!("locking: {err}")));
        }
        let same = std::fs::metadata(store).map(|m| m.ino()).ok() == dir.metadata().map(|m| m.ino()).ok();
        if same {
            return Ok(dir);
        }
    }
    Err(refuse("replaced repeatedly while locking it; nothing was written".into()))
}

/// An exclusive lock on the lock file `path`, held until dropped (then the file is removed).
#[derive(Debug)]
pub(crate) struct OutputLock {
    file: std::fs::File,
    path: std::path::PathBuf,
}

impl OutputLock {
    /// Locks `path` (created if absent), waiting for another holder to finish. The lock is on the
    /// file's inode, which a holder removes when done: after locking, the path must still name the
    /// locked file (else it is locked again, afresh).
    ///
    /// # Errors
    /// The I/O error of creating or locking the file.
    pub(crate) fn acquire(path: &Path) -> std::io::Result<Self> {
        use std::os::fd::AsRawFd;
        use std::os::unix::fs::MetadataExt;
        loop {
            let file = std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(path)?;
            // SAFETY: flock on a descriptor this function owns; no memory is passed.
            while unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } != 0 {
                let err = std::io::Error::last_os_error();
                if err.kind() != std::io::ErrorKind::Interrupted {
                    return Err(err);
                }
            }
            let same = std::fs::metadata(path).map(|m| m.ino()).ok() == file.metadata().map(|m| m.ino()).ok();
            if same {
                return Ok(OutputLock { file, path: path.to_path_buf() });
            }
        }
    }
}

impl Drop for OutputLock {
    fn drop(&mut self) {
        use std::os::unix::fs::MetadataExt;
        // Removed while still held: a writer waiting on this inode then finds the path gone and
        // locks a new file.
        let same = std::fs::metadata(&self.path).map(|m| m.ino()).ok() == self.file.metadata().map(|m| m.ino()).ok();
        if same {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_output_lock_waits_for_its_holder_and_removes_its_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".out.lock-");
        let first = OutputLock::acquire(&path).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let waiter = {
            let path = path.clone();
            std::thread::spawn(move || {
                let second = OutputLock::acquire(&path).unwrap();
                tx.send(()).unwrap();
                drop(second);
            })
        };
        std::thread::sleep(std::time::Duration::from_millis(100));
        assert!(rx.try_recv().is_err(), "the second lock waits");
        drop(first);
        rx.recv_timeout(std::time::Duration::from_secs(10)).unwrap();
        waiter.join().unwrap();
        assert!(!path.exists(), "the lock file is removed");
    }
}
