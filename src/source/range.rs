//! Byte ranges of one source object: the trait every scanner reads through, with a local-file
//! implementation (positional reads) and one over any `object_store` store (local, S3, GCS, Azure,
//! HTTP), so one scanner serves local and remote archives alike.
//!
//! Reads never allocate more than the caller asked for, and a caller never asks for more than
//! [`ByteSource::len`] allows: a range past the end is a [`RangeError::PastEnd`] naming the object.

use std::os::unix::fs::FileExt;
use std::sync::Arc;

use bytes::Bytes;
use object_store::path::Path as ObjectPath;
use object_store::ObjectStore;

/// `length` bytes at `offset` as a range, `bytes a..b`, or in words when the end would pass 2^64 (a
/// damaged reference's range is never printed wrapped).
pub(crate) fn span(offset: u64, length: u64) -> String {
    match offset.checked_add(length) {
        Some(end) => format!("bytes {offset}..{end}"),
        None => format!("{length} bytes at offset {offset} (past 2^64)"),
    }
}

/// A failed range read, naming the object.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RangeError {
    /// The server answered with fewer bytes than the range asked for, on every attempt.
    #[error("{location}: {}: the server sent {got} bytes, fewer than asked for", span(*offset, *length))]
    ShortReply {
        /// The object.
        location: String,
        /// First byte asked for.
        offset: u64,
        /// Bytes asked for.
        length: u64,
        /// Bytes sent on the last attempt.
        got: u64,
    },
    /// The object changed while it was read: the server refused the ETag it gave first.
    #[error("{location}: changed while it was being read (its ETag no longer matches); nothing was kept")]
    Changed {
        /// The object.
        location: String,
    },
    /// The range ends past the end of the object.
    #[error("{location}: {length} bytes at offset {offset} lie past the end of the file ({size} bytes)")]
    PastEnd {
        /// The object.
        location: String,
        /// First byte asked for.
        offset: u64,
        /// Bytes asked for.
        length: u64,
        /// The object's size.
        size: u64,
    },
    /// A local read failed.
    #[error("{location}: cannot read {length} bytes at offset {offset}: {source}")]
    Io {
        /// The object.
        location: String,
        /// First byte asked for.
        offset: u64,
        /// Bytes asked for.
        length: u64,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The object store refused or failed the request.
    #[error("{location}: cannot read {length} bytes at offset {offset}: {source}")]
    Store {
        /// The object.
        location: String,
        /// First byte asked for.
        offset: u64,
        /// Bytes asked for.
        length: u64,
        /// The store's error.
        source: object_store::Error,
    },
}

/// Random access to the bytes of one immutable object.
pub trait ByteSource: Send + Sync {
    /// The object's location as shown in messages (a path or a URL).
    fn location(&self) -> &str;

    /// The object's size in bytes.
    fn len(&self) -> u64;

    /// Whether the object is empty.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Reads `length` bytes at `offset`.
    ///
    /// # Errors
    /// [`RangeError::PastEnd`] when the range does not lie inside the object; otherwise the I/O or
    /// store error.
    fn read_range(&self, offset: u64, length: u64) -> Result<Bytes, RangeError>;

    /// Reads several `(offset, length)` ranges: one round of concurrent requests where the
    /// object is remote, one read after another by default.
    ///
    /// # Errors
    /// As [`ByteSource::read_range`], for the first range that fails.
    fn read_ranges(&self, ranges: &[(u64, u64)]) -> Result<Vec<Bytes>, RangeError> {
        ranges.iter().map(|&(offset, length)| self.read_range(offset, length)).collect()
    }

    /// Says that `(offset, length)` ranges are about to be read, so that a caching source can fetch
    /// those it lacks together, in one round of requests. Returns whether the source fetches ahead
    /// at all: sources without a cache (and caches of local files) ignore the hint and return
    /// false, so that callers need not work out further ranges (an empty list asks only that).
    ///
    /// # Errors
    /// As [`ByteSource::read_range`].
    fn prefetch(&self, ranges: &[(u64, u64)]) -> Result<bool, RangeError> {
        let _ = ranges;
        Ok(false)
    }

    /// `length` bytes at `offset` if they can be had without a request (a cache holding them);
    /// `None` otherwise.
    fn read_cached(&self, offset: u64, length: u64) -> Option<Bytes> {
        let _ = (offset, length);
        None
    }
}

/// Checks that `offset..offset + length` lies inside an object of `size` bytes.
///
/// # Errors
/// [`RangeError::PastEnd`] otherwise (also when the end overflows).
pub(crate) fn check_range(location: &str, offset: u64, length: u64, size: u64) -> Result<(), RangeError> {
    match offset.checked_add(length) {
        Some(end) if end <= size => Ok(()),
        _ => Err(RangeError::PastEnd { location: location.to_string(), offset, length, size }),
    }
}

/// A local file read with positional reads (no seek, shareable across threads).
#[derive(Debug)]
pub struct LocalFile {
    location: String,
    file: std::fs::File,
    size: u64,
}

impl LocalFile {
    /// Opens a regular file. FIFOs, devices and sockets are refused before they are opened for
    /// reading, so a crafted path cannot make the scan hang.
    ///
    /// # Errors
    /// The I/O error of `stat` or `open`; `InvalidInput` for anything but a regular file.
    pub fn open(path: &std::path::Path) -> std::io::Result<Self> {
        let meta = std::fs::metadata(path)?;
        if !meta.is_file() {
            return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a regular file"));
        }
        // procfs and sysfs files are regular files of size 0 whose contents are made when read.
        if let Some(fs) = super::pseudo_file_system(path) {
            let reason = format!("on {fs}, a kernel pseudo file system, not an archive file");
            return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, reason));
        }
        let file = std::fs::File::open(path)?;
        let size = file.metadata()?.len();
        Ok(LocalFile { location: path.display().to_string(), file, size })
    }

    /// The open file, for readers that take a `std::fs::File`.
    pub(crate) fn into_file(self) -> std::fs::File {
        self.file
    }
}

impl ByteSource for LocalFile {
    fn location(&self) -> &str {
        &self.location
    }

    fn len(&self) -> u64 {
        self.size
    }

    fn read_range(&self, offset: u64, length: u64) -> Result<Bytes, RangeError> {
        check_range(&self.location, offset, length, self.size)?;
        let mut buf = vec![0u8; length as usize];
        self.file.read_exact_at(&mut buf, offset).map_err(|source| RangeError::Io {
            location: self.location.clone(),
            offset,
            length,
            source,
        })?;
        Ok(Bytes::from(buf))
    }
}

/// An object in any `object_store` store, read with ranged GETs on a tokio runtime the caller owns.
pub(crate) struct ObjectSource {
    location: String,
    store: Arc<dyn ObjectStore>,
    path: ObjectPath,
    size: u64,
    runtime: tokio::runtime::Handle,
    etag: Option<String>,
}

impl std::fmt::Debug for ObjectSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObjectSource").field("location", &self.location).field("size", &self.size).finish()
    }
}

impl ObjectSource {
    /// A source over `path` in `store`, whose size is known (from a listing or a HEAD request).
    /// Reads block the calling thread on `runtime`; call them from outside the runtime's own
    /// threads (e.g. from rayon or `spawn_blocking`).
    pub(crate) fn new(
        location: String,
        store: Arc<dyn ObjectStore>,
        path: ObjectPath,
        size: u64,
        runtime: tokio::runtime::Handle,
    ) -> Self {
        ObjectSource { location, store, path, size, runtime, etag: None }
    }

    /// Every read asks for this version of the object (`If-Match: etag`): an object replaced while
    /// it is read fails with [`RangeError::Changed`] instead of mixing two versions.
    #[must_use]
    pub(crate) fn with_etag(mut self, etag: Option<String>) -> Self {
        self.etag = etag;
        self
    }
}

/// Attempts at a range whose reply is shorter than asked for.
const SHORT_REPLY_ATTEMPTS: usize = 3;

/// The bytes a ranged GET got, when object_store refused its reply for covering less than the range
/// (a 206 whose `Content-Range` ends early): such a reply is asked again like a short body.
/// object_store's error type for it is private; its message is `Requested A..B, got C..D`.
pub(crate) fn short_range_reply(error: &object_store::Error) -> Option<u64> {
    let object_store::Error::Generic { source, .. } = error else { return None };
    let text = source.to_string();
    let got = text.strip_prefix("Requested ")?.split_once(", got ")?.1;
    let (start, end) = got.split_once("..")?;
    let (start, end): (u64, u64) = (start.trim().parse().ok()?, end.trim().parse().ok()?);
    end.checked_sub(start)
}

impl ByteSource for ObjectSource {
    fn location(&self) -> &str {
        &self.location
    }

    fn len(&self) -> u64 {
        self.size
    }

    fn read_range(&self, offset: u64, length: u64) -> Result<Bytes, RangeError> {
        self.runtime.block_on(self.get(offset, length))
    }

    fn read_ranges(&self, ranges: &[(u64, u64)]) -> Result<Vec<Bytes>, RangeError> {
        let gets = ranges.iter().map(|&(offset, length)| self.get(offset, length));
        self.runtime.block_on(futures::future::try_join_all(gets))
    }
}

impl ObjectSource {
    /// One ranged GET (asked again where the reply is short).
    async fn get(&self, offset: u64, length: u64) -> Result<Bytes, RangeError> {
        check_range(&self.location, offset, length, self.size)?;
        if length == 0 {
            return Ok(Bytes::new());
        }
        // A reply shorter than the range (a truncated body with a matching Content-Length) is asked
        // again, then refused naming the object and the range.
        let mut got = 0;
        for _ in 0..SHORT_REPLY_ATTEMPTS {
            let options = object_store::GetOptions {
                range: Some((offset..offset + length).into()),
                if_match: self.etag.clone(),
                ..Default::default()
            };
            let fetched = async {
                let reply = self.store.get_opts(&self.path, options).await?;
                reply.bytes().await
            }
            .await;
            let bytes = match fetched {
                Ok(bytes) => bytes,
                Err(e) if short_range_reply(&e).is_some() => {
                    got = short_range_reply(&e).unwrap_or(0);
                    continue;
                }
                Err(object_store::Error::Precondition { .. }) => {
                    return Err(RangeError::Changed { location: self.location.clone() })
                }
                Err(source) => {
                    return Err(RangeError::Store { location: self.location.clone(), offset, length, source })
                }
            };
            if bytes.len() as u64 == length {
                return Ok(bytes);
            }
            got = bytes.len() as u64;
        }
        Err(RangeError::ShortReply { location: self.location.clone(), offset, length, got })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_range_past_2_pow_64_is_never_printed_wrapped() {
        let short = RangeError::ShortReply { location: "f".into(), offset: u64::MAX, length: 64, got: 0 };
        assert_eq!(
            short.to_string(),
            "f: 64 bytes at offset 18446744073709551615 (past 2^64): the server sent 0 bytes, fewer than asked for"
        );
        assert_eq!(span(10, 5), "bytes 10..15");
    }

    #[test]
    fn replies_covering_less_than_the_range_are_recognised() {
        let error = |text: &str| object_store::Error::Generic { store: "S3", source: text.to_string().into() };
        assert_eq!(short_range_reply(&error("Requested 24890..62217, got 24890..43553")), Some(18663));
        assert_eq!(short_range_reply(&error("Access denied")), None);
        let not_found = object_store::Error::NotFound { path: "a".into(), source: "gone".into() };
        assert_eq!(short_range_reply(&not_found), None);
    }

    #[test]
    fn local_reads_are_bounded_by_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.bin");
        std::fs::write(&path, (0u8..100).collect::<Vec<_>>()).unwrap();
        let file = LocalFile::open(&path).unwrap();
        assert_eq!(file.len(), 100);
        assert_eq!(&file.read_range(10, 3).unwrap()[..], &[10, 11, 12]);
        let err = file.read_range(99, 2).unwrap_err();
        assert!(err.to_string().contains("past the end of the file (100 bytes)"), "{err}");
        assert!(file.read_range(u64::MAX, 2).is_err());
    }

    #[test]
    fn special_files_are_refused_without_opening_them() {
        let err = LocalFile::open(std::path::Path::new("/dev/null")).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
        let err = LocalFile::open(std::path::Path::new("/proc/self/environ")).unwrap_err();
        assert!(err.to_string().contains("procfs"), "{err}");
    }

    #[test]
    fn object_store_reads_match_local_reads() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.bin");
        std::fs::write(&path, (0u8..200).collect::<Vec<_>>()).unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let store: Arc<dyn ObjectStore> = Arc::new(object_store::local::LocalFileSystem::new());
        let object = ObjectPath::from_absolute_path(&path).unwrap();
        let source = ObjectSource::new(path.display().to_string(), store, object, 200, runtime.handle().clone());
        let local = LocalFile::open(&path).unwrap();
        assert_eq!(source.read_range(50, 100).unwrap(), local.read_range(50, 100).unwrap());
        assert!(source.read_range(150, 51).is_err());
    }
}
