//! Local files whose names are not UTF-8.
//!
//! A Linux file name is bytes. Source locations are text, and `object_store`'s local store maps its
//! (UTF-8) object paths to file names through URL encoding that escapes `%` itself, so it cannot name
//! such a file. vzarr stores these locations as `file://` URLs (percent-encoded bytes, exactly as
//! [`url::Url::from_file_path`] writes them) and reads them through [`BytesPathStore`], a read-only
//! store whose object paths keep the percent escapes and are decoded back to the file's exact bytes.
//! Every other local file keeps its plain absolute path as its location.

use std::ffi::OsStr;
use std::fmt;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use async_trait::async_trait;
use futures::stream::BoxStream;
use futures::StreamExt;
use object_store::path::Path as ObjectPath;
use object_store::{
    Attributes, CopyOptions, Extensions, GetOptions, GetResult, GetResultPayload, ListResult, MultipartUpload,
    ObjectMeta, ObjectStore, PutMultipartOptions, PutOptions, PutPayload, PutResult,
};

const STORE: &str = "vzarr local files (non-UTF-8 names)";

/// The location stored for the local file at `absolute`: the path itself when it is UTF-8, else its
/// `file://` URL.
pub(crate) fn location_for_path(absolute: &Path) -> String {
    match absolute.to_str() {
        Some(text) => text.to_string(),
        None => url::Url::from_file_path(absolute)
            .map(String::from)
            .unwrap_or_else(|()| absolute.to_string_lossy().into_owned()),
    }
}

/// The local file a stored location names: a plain path, or the exact bytes of a `file://` URL.
/// `None` for other URLs.
pub(crate) fn local_path(location: &str) -> Option<PathBuf> {
    if !super::is_url(location) {
        return Some(PathBuf::from(location));
    }
    url::Url::parse(location).ok().filter(|u| u.scheme() == "file").and_then(|u| u.to_file_path().ok())
}

/// The object path under which [`BytesPathStore`] reads the file at `url` (a `file://` URL).
pub(crate) fn object_path(url: &url::Url) -> Result<ObjectPath, object_store::path::Error> {
    ObjectPath::parse(url.path())
}

/// A read-only store of local files addressed by percent-encoded byte paths (see the module docs).
#[derive(Debug, Default)]
pub(crate) struct BytesPathStore;

impl fmt::Display for BytesPathStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(STORE)
    }
}

fn file_path(location: &ObjectPath) -> PathBuf {
    let mut bytes = vec![b'/'];
    bytes.extend(percent_encoding::percent_decode_str(location.as_ref()));
    PathBuf::from(OsStr::from_bytes(&bytes))
}

fn io_error(location: &ObjectPath, source: std::io::Error) -> object_store::Error {
    if source.kind() == std::io::ErrorKind::NotFound {
        return object_store::Error::NotFound { path: location.to_string(), source: source.into() };
    }
    object_store::Error::Generic { store: STORE, source: source.into() }
}

fn read_only(operation: &str) -> object_store::Error {
    object_store::Error::NotImplemented { operation: operation.into(), implementer: STORE.into() }
}

#[async_trait]
impl ObjectStore for BytesPathStore {
    async fn put_opts(&self, _: &ObjectPath, _: PutPayload, _: PutOptions) -> object_store::Result<PutResult> {
        Err(read_only("put"))
    }

    async fn put_multipart_opts(
        &self,
        _: &ObjectPath,
        _: PutMultipartOptions,
    ) -> object_store::Result<Box<dyn MultipartUpload>> {
        Err(read_only("put_multipart"))
    }

    async fn get_opts(&self, location: &ObjectPath, options: GetOptions) -> object_store::Result<GetResult> {
        if options.version.is_some() {
            return Err(read_only("versioned get"));
        }
        let path = file_path(location);
        // Refuse FIFOs and devices before opening them, as every local source read does.
        let file = super::LocalFile::open(&path).map_err(|e| io_error(location, e))?.into_file();
        let meta = file.metadata().map_err(|e| io_error(location, e))?;
        let last_modified = meta.modified().map_err(|e| io_error(location, e))?.into();
        let meta =
            ObjectMeta { location: location.clone(), last_modified, size: meta.len(), e_tag: None, version: None };
        // If-Unmodified-Since and the other preconditions, against the file as it is now.
        options.check_preconditions(&meta)?;
        let range = match &options.range {
            Some(range) => range
                .as_range(meta.size)
                .map_err(|e| object_store::Error::Generic { store: STORE, source: e.into() })?,
            None => 0..meta.size,
        };
        Ok(GetResult {
            payload: GetResultPayload::File(file, path),
            meta,
            range,
            attributes: Attributes::default(),
            extensions: Extensions::default(),
        })
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, object_store::Result<ObjectPath>>,
    ) -> BoxStream<'static, object_store::Result<ObjectPath>> {
        locations.map(|_| Err(read_only("delete"))).boxed()
    }

    fn list(&self, _: Option<&ObjectPath>) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        futures::stream::once(async { Err(read_only("list")) }).boxed()
    }

    async fn list_with_delimiter(&self, _: Option<&ObjectPath>) -> object_store::Result<ListResult> {
        Err(read_only("list"))
    }

    async fn copy_opts(&self, _: &ObjectPath, _: &ObjectPath, _: CopyOptions) -> object_store::Result<()> {
        Err(read_only("copy"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use object_store::ObjectStoreExt;

    #[test]
    fn utf8_paths_stay_paths_and_byte_names_round_trip() {
        assert_eq!(location_for_path(Path::new("/data/a b%.nc")), "/data/a b%.nc");
        let odd = Path::new(OsStr::from_bytes(b"/data/caf\xe9 100%.nc"));
        let location = location_for_path(odd);
        assert_eq!(location, "file:///data/caf%E9%20100%25.nc");
        assert_eq!(local_path(&location).as_deref(), Some(odd));
        assert_eq!(local_path("/data/a.nc").as_deref(), Some(Path::new("/data/a.nc")));
        assert_eq!(local_path("s3://bucket/a.nc"), None);
        let url = url::Url::parse(&location).unwrap();
        assert_eq!(file_path(&object_path(&url).unwrap()), odd);
    }

    #[test]
    fn reads_ranges_and_metadata_of_byte_named_files() {
        let dir = tempfile::tempdir().unwrap();
        let mut name = dir.path().as_os_str().as_bytes().to_vec();
        name.extend_from_slice(b"/r\xe9sum\xe9.bin");
        let path = PathBuf::from(OsStr::from_bytes(&name));
        std::fs::write(&path, b"0123456789").unwrap();
        let url = url::Url::parse(&location_for_path(&path)).unwrap();
        let location = object_path(&url).unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let store = BytesPathStore;
        let (meta, ranges) = runtime.block_on(async {
            let meta = store.head(&location).await.unwrap();
            let ranges = store.get_ranges(&location, &[2..5, 8..10]).await.unwrap();
            (meta, ranges)
        });
        assert_eq!(meta.size, 10);
        assert_eq!(ranges, vec![bytes::Bytes::from_static(b"234"), bytes::Bytes::from_static(b"89")]);
        let missing = ObjectPath::parse("nowhere/%E9.bin").unwrap();
        let err = runtime.block_on(store.head(&missing)).unwrap_err();
        assert!(matches!(err, object_store::Error::NotFound { .. }), "{err}");
        assert!(runtime.block_on(store.put(&location, PutPayload::from_static(b"x"))).is_err());
    }
}
