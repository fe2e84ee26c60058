//! The user's trust list: `$XDG_CONFIG_HOME/vzarr/trusted-sources` (else
//! `~/.config/vzarr/trusted-sources`), one container a line, `#` comments. Updates hold an
//! exclusive `flock` on a sibling lock file and replace the list atomically (temporary file,
//! `fsync`, `rename`), so concurrent `vzarr scan`s never lose each other's entries.

use std::io::Write;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

use super::check::{Authorization, TrustError, ALLOW_ENV};

/// File name of the trust list inside the `vzarr` configuration directory.
pub const TRUST_FILE: &str = "trusted-sources";

/// Largest trust list read (bytes); a longer one is an error, not an allocation.
const MAX_LIST_BYTES: u64 = 16 << 20;

/// The containers of a trust list file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrustList {
    containers: Vec<String>,
}

impl TrustList {
    /// Where the user's trust list is: `$XDG_CONFIG_HOME/vzarr/trusted-sources` when that variable
    /// holds an absolute path, else `$HOME/.config/vzarr/trusted-sources`.
    ///
    /// # Errors
    /// [`TrustError::NoConfigDir`] when neither variable gives an absolute directory.
    pub fn default_path() -> Result<PathBuf, TrustError> {
        let absolute = |var: &str| std::env::var_os(var).map(PathBuf::from).filter(|p| p.is_absolute());
        let base = absolute("XDG_CONFIG_HOME")
            .or_else(|| absolute("HOME").map(|h| h.join(".config")))
            .ok_or(TrustError::NoConfigDir)?;
        Ok(base.join("vzarr").join(TRUST_FILE))
    }

    /// Reads the list at `path`; a missing file is an empty list.
    ///
    /// # Errors
    /// [`TrustError::List`] when the file exists but cannot be read, is not UTF-8 or is too large.
    pub fn load(path: &Path) -> Result<Self, TrustError> {
        let error = |what, source| TrustError::List { path: path.to_path_buf(), what, source };
        let file = match std::fs::File::open(path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(TrustList::default()),
            Err(e) => return Err(error("reading", e)),
        };
        let mut text = String::new();
        use std::io::Read;
        file.take(MAX_LIST_BYTES + 1).read_to_string(&mut text).map_err(|e| error("reading", e))?;
        if text.len() as u64 > MAX_LIST_BYTES {
            return Err(error("reading", std::io::Error::other("larger than 16 MiB")));
        }
        let containers =
            text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')).map(str::to_string).collect();
        Ok(TrustList { containers })
    }

    /// The containers listed.
    pub fn containers(&self) -> &[String] {
        &self.containers
    }

    /// Adds `containers` (normalized as by [`Authorization::new`]) to the list at `path`, creating
    /// it and its directory as needed; returns those that were not yet covered by the list.
    ///
    /// # Errors
    /// [`TrustError::List`] when the directory, lock or list cannot be written.
    pub fn add<S: AsRef<str>>(path: &Path, containers: &[S]) -> Result<Vec<String>, TrustError> {
        let error = |what, source| TrustError::List { path: path.to_path_buf(), what, source };
        let dir = path.parent().unwrap_or(Path::new("."));
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| error("creating its directory", e))?;
        let lock_path = path.with_extension("lock");
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|e| error("opening the lock file", e))?;
        // SAFETY: flock on a file descriptor we own; released when `lock` is closed.
        if unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX) } != 0 {
            return Err(error("locking", std::io::Error::last_os_error()));
        }
        let mut list = TrustList::load(path)?;
        let current = Authorization::new(&list.containers);
        let mut added = Vec::new();
        for c in Authorization::new(containers).containers() {
            if !current.covers(c) && !added.contains(c) {
                added.push(c.clone());
            }
        }
        if added.is_empty() {
            return Ok(added);
        }
        list.containers.extend(added.iter().cloned());
        write_atomically(path, &list.render()).map_err(|e| error("writing", e))?;
        drop(lock);
        Ok(added)
    }

    fn render(&self) -> String {
        let mut text = String::from("# Source containers vzarr may read (one a line). See `vzarr trust --help`.\n");
        for c in &self.containers {
            text.push_str(c);
            text.push('\n');
        }
        text
    }
}

use std::os::unix::fs::DirBuilderExt;

fn write_atomically(path: &Path, text: &str) -> std::io::Result<()> {
    let tmp = path.with_extension(format!("tmp.{}", std::process::id()));
    let result = (|| {
        let mut file = std::fs::File::create(&tmp)?;
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

impl Authorization {
    /// The user's trust list plus the containers of [`ALLOW_ENV`]: what the command line uses
    /// before adding `--allow-source` flags.
    ///
    /// # Errors
    /// [`TrustError::List`] when the trust list exists but cannot be read. A missing list (and a
    /// missing configuration directory) trusts nothing from it.
    pub fn from_user_config() -> Result<Self, TrustError> {
        let mut auth = Authorization::default();
        if let Ok(path) = TrustList::default_path() {
            auth.extend(TrustList::load(&path)?.containers());
        }
        auth.extend(env_containers());
        Ok(auth)
    }
}

/// The containers named by [`ALLOW_ENV`].
fn env_containers() -> Vec<String> {
    std::env::var(ALLOW_ENV)
        .map(|v| v.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_string).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn add_keeps_existing_entries_and_skips_covered_ones() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("vzarr").join(TRUST_FILE);
        assert_eq!(TrustList::load(&path).unwrap(), TrustList::default());
        assert_eq!(TrustList::add(&path, &["/data/a", "s3://b/p/"]).unwrap(), ["/data/a/", "s3://b/p/"]);
        assert!(TrustList::add(&path, &["/data/a/sub/"]).unwrap().is_empty());
        assert_eq!(TrustList::add(&path, &["/data/b/"]).unwrap(), ["/data/b/"]);
        let list = TrustList::load(&path).unwrap();
        assert_eq!(list.containers(), ["/data/a/", "s3://b/p/", "/data/b/"]);
    }

    #[test]
    fn concurrent_adds_lose_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(TRUST_FILE);
        std::thread::scope(|s| {
            for i in 0..8 {
                let path = &path;
                s.spawn(move || TrustList::add(path, &[format!("/data/{i}/")]).unwrap());
            }
        });
        assert_eq!(TrustList::load(&path).unwrap().containers().len(), 8);
    }
}
