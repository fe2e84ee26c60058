//! The lock that serializes the commands that rewrite a local store in place (append, compaction):
//! an exclusive `flock` on the store's directory.

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
