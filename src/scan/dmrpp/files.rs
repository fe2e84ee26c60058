//! The files a DMR++ sidecar's chunks lie in (input: the sidecar's location and its `dmrpp:href`
//! attributes; output: the scan's sources, each fingerprinted from the data object itself and
//! readable for the values a scan reads).
//!
//! An absolute URL (`s3://`, `https://`, `file://`) is taken as given. Anything else, a relative
//! path, an absolute path (BES resolves those against its own data root, unknown here) or BES's
//! placeholder (`OPeNDAP_DMRpp_DATA_ACCESS_URL`), means the file the sidecar describes: the
//! sidecar's own location without `.dmrpp`. A chunk's own `href` (BES's "missing variables" file)
//! that is not a URL names a file next to the sidecar. Every file must pass the authorization: the
//! sidecar's container, or one of [`ScanOptions::link_authorization`] (the user's trust list): the
//! sidecar is untrusted input and must not point a scan at any file it likes.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use crate::manifest::SourceFile;
use crate::scan::ScanOptions;
use crate::source::ByteSource;
use crate::trust::{container_of, Authorization};

/// The scan's sources: the data file (id 0) and the files chunks name, opened once each.
pub(super) struct Files<'a> {
    sidecar: String,
    authorization: Authorization,
    options: &'a ScanOptions,
    opened: Vec<DataFile>,
}

/// One file chunks lie in: its location, authorized; opened (fingerprinted and readable) at once
/// when local, on first use when an object: its first read is one ranged GET whose answer carries
/// the object's size and ETag, so a sidecar scan costs no HEAD request of its data file (a file never
/// read is fingerprinted by a HEAD request when the scan's sources are taken).
struct DataFile {
    location: String,
    opened: OnceLock<(SourceFile, Arc<dyn ByteSource>)>,
}

impl DataFile {
    fn opened(location: String, opened: (SourceFile, Arc<dyn ByteSource>)) -> Self {
        DataFile { location, opened: OnceLock::from(opened) }
    }
}

/// The data file a sidecar at `sidecar` (path or URL) with `href` describes.
///
/// # Errors
/// When `href` is not a URL and the sidecar's name does not end in `.dmrpp`.
pub(crate) fn data_location(sidecar: &str, href: Option<&str>) -> Result<String, String> {
    if let Some(href) = href.map(str::trim).filter(|h| crate::source::is_url(h)) {
        return Ok(href.to_string());
    }
    let stripped = sidecar.strip_suffix(".dmrpp").filter(|s| !s.is_empty() && !s.ends_with('/'));
    stripped.map(str::to_string).ok_or_else(|| {
        "cannot tell the data file: dmrpp:href is not a URL and the sidecar's name does not end in .dmrpp".into()
    })
}

impl<'a> Files<'a> {
    /// Authorizes (and, when local, opens) the data file of the sidecar at `sidecar` (its dataset
    /// `href`).
    pub(super) fn open(sidecar: &str, href: Option<&str>, options: &'a ScanOptions) -> Result<Self, String> {
        let mut authorization = options.link_authorization.clone();
        authorization.extend([container_of(sidecar)]);
        let mut files = Files { sidecar: sidecar.to_string(), authorization, options, opened: Vec::new() };
        let location = data_location(sidecar, href)?;
        let file = files.add(location)?;
        files.opened.push(file);
        Ok(files)
    }

    /// The fingerprints, in source id order (objects not read yet fingerprinted by a HEAD request).
    pub(super) fn sources(&self) -> Result<Vec<SourceFile>, String> {
        self.opened.iter().map(|file| self.file(file).map(|(s, _)| s.clone())).collect()
    }

    /// The source id of a chunk with `href` (none: the data file).
    pub(super) fn source_of(&mut self, href: Option<&str>) -> Result<u32, String> {
        let Some(href) = href.map(str::trim).filter(|h| !h.is_empty()) else { return Ok(0) };
        let location = if crate::source::is_url(href) {
            href.to_string()
        } else {
            let name = href.rsplit('/').next().unwrap_or(href);
            match self.sidecar.rsplit_once('/') {
                Some((dir, _)) => format!("{dir}/{name}"),
                None => name.to_string(),
            }
        };
        if let Some(i) = self.opened.iter().position(|f| f.location == location) {
            return Ok(i as u32);
        }
        if location == data_location(&self.sidecar, None).unwrap_or_default() {
            return Ok(0);
        }
        let file = self.add(location)?;
        self.opened.push(file);
        Ok(self.opened.len() as u32 - 1)
    }

    /// `length` bytes at `offset` of source `source`.
    pub(super) fn read(&self, source: u32, offset: u64, length: u64) -> Result<Vec<u8>, String> {
        let file = self.opened.get(source as usize).ok_or_else(|| format!("no source {source}"))?;
        if file.opened.get().is_none() && length > 0 {
            if let Some(bytes) = self.open_at(file, offset, length)? {
                return Ok(bytes);
            }
        }
        let (fingerprint, bytes) = self.file(file)?;
        if offset.checked_add(length).is_none_or(|end| end > bytes.len()) {
            return Err(format!(
                "{}: bytes {offset}..+{length} lie past its end ({} bytes)",
                fingerprint.location,
                bytes.len()
            ));
        }
        bytes.read_range(offset, length).map(|b| b.to_vec()).map_err(|e| format!("{}: {e}", fingerprint.location))
    }

    /// `file`, opened (an object not read yet: fingerprinted by a HEAD request now).
    fn file<'f>(&self, file: &'f DataFile) -> Result<&'f (SourceFile, Arc<dyn ByteSource>), String> {
        if let Some(opened) = file.opened.get() {
            return Ok(opened);
        }
        let url = url::Url::parse(&file.location).map_err(|e| format!("data file {}: {e}", file.location))?;
        let opened = crate::scan::open_object(&url, self.options).map_err(|e| format!("data file {e}"))?;
        Ok(file.opened.get_or_init(|| opened))
    }

    /// Opens the object `file` with one ranged GET of `length` bytes at `offset`, which it returns;
    /// `None` when the server refuses the range (past the object's end: [`Files::read`] then says
    /// so from the object's size).
    fn open_at(&self, file: &DataFile, offset: u64, length: u64) -> Result<Option<Vec<u8>>, String> {
        let named = |e: String| format!("data file {}: {e}", file.location);
        let end = offset.checked_add(length).ok_or_else(|| named(format!("bytes {offset}..+{length} pass 2^64")))?;
        let url = url::Url::parse(&file.location).map_err(|e| named(e.to_string()))?;
        let Some(runtime) = self.options.runtime.as_ref() else {
            return Err(named("reading it needs ScanOptions::runtime".into()));
        };
        let (store, path) =
            crate::source::store_for_url(&url, &self.options.remote).map_err(|e| named(e.to_string()))?;
        let got = runtime.block_on(async {
            let options = object_store::GetOptions { range: Some((offset..end).into()), ..Default::default() };
            let got = store.get_opts(&path, options).await?;
            let meta = got.meta.clone();
            Ok::<_, object_store::Error>((meta, got.bytes().await?))
        });
        let (meta, bytes) = match got {
            Ok(got) => got,
            Err(object_store::Error::NotFound { .. }) => return Err(named("not found".into())),
            Err(e) if e.to_string().contains("416") || e.to_string().contains("Range Not Satisfiable") => {
                return Ok(None)
            }
            Err(e) => return Err(named(crate::source::describe_error(&e))),
        };
        if bytes.len() as u64 != length {
            return Ok(None); // past the end: said from the object's size
        }
        let fingerprint = crate::source::object_fingerprint(url.as_str(), &meta);
        let object = crate::source::ObjectSource::new(url.to_string(), store, path, meta.size, runtime.clone())
            .with_etag(meta.e_tag.clone());
        let cached = crate::source::CachedSource::new(Arc::new(object), crate::source::CacheOptions::remote());
        let _ = file.opened.set((fingerprint, Arc::new(cached)));
        Ok(Some(bytes.to_vec()))
    }

    /// Checks `location` against the authorization and opens it when local (an object is opened on
    /// first use).
    fn add(&self, location: String) -> Result<DataFile, String> {
        self.authorization.check(&location).map_err(|e| format!("data file {location}: {e}"))?;
        let Some(path) = crate::source::local_path(&location) else {
            return Ok(DataFile { location, opened: OnceLock::new() });
        };
        let path = std::path::absolute(&path).unwrap_or(path);
        let source = crate::source::fingerprint(&path).map_err(|e| format!("data file {location}: {e}"))?;
        let bytes = crate::scan::open_local(&path).map_err(|e| e.to_string())?;
        Ok(DataFile::opened(location, (source, bytes)))
    }
}

/// Which sidecars a scan reads in place of the files they describe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Sidecars {
    /// None: every file is scanned itself. The default.
    #[default]
    None,
    /// DMR++: `<file>.dmrpp`, where it exists.
    Dmrpp,
}

/// The files to scan for `files`: with [`Sidecars::Dmrpp`], `<file>.dmrpp` where it exists (checked
/// in parallel, one HEAD request per object-store file), else the file itself; and how many
/// sidecars were found.
pub(crate) fn with_sidecars(files: &[PathBuf], sidecars: Sidecars, options: &ScanOptions) -> (Vec<PathBuf>, usize) {
    use rayon::prelude::*;
    if sidecars == Sidecars::None {
        return (files.to_vec(), 0);
    }
    let found: Vec<Option<PathBuf>> = files.par_iter().map(|f| sidecar_of(f, options)).collect();
    let count = found.iter().flatten().count();
    let paths = files.iter().zip(found).map(|(file, sidecar)| sidecar.unwrap_or_else(|| file.clone())).collect();
    (paths, count)
}

/// The sidecar of `file` (`<file>.dmrpp`), when one exists: a local file, or an object answering a
/// HEAD request (through `options.runtime`).
pub(crate) fn sidecar_of(file: &Path, options: &ScanOptions) -> Option<PathBuf> {
    let text = file.to_str()?;
    let sidecar = format!("{text}.dmrpp");
    if crate::source::is_url(text) && !text.starts_with("file://") {
        let url = url::Url::parse(&sidecar).ok()?;
        return crate::scan::open_object(&url, options).ok().map(|_| PathBuf::from(sidecar));
    }
    let path = PathBuf::from(&sidecar);
    path.is_file().then_some(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hrefs_resolve_as_bes_writes_them() {
        let s = "/data/g/a.h5.dmrpp";
        assert_eq!(data_location(s, Some("data/dmrpp/a.h5")).unwrap(), "/data/g/a.h5");
        assert_eq!(data_location(s, Some("OPeNDAP_DMRpp_DATA_ACCESS_URL")).unwrap(), "/data/g/a.h5");
        assert_eq!(data_location(s, Some("/elsewhere/a.h5")).unwrap(), "/data/g/a.h5");
        assert_eq!(data_location(s, Some("s3://b/x.h5")).unwrap(), "s3://b/x.h5");
        assert_eq!(data_location("https://h/p/a.nc4.dmrpp", None).unwrap(), "https://h/p/a.nc4");
        assert!(data_location("/data/a.xml", None).is_err());
        assert!(data_location("/data/.dmrpp", None).is_err());
    }
}
