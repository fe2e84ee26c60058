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

use hdf5_reader::{Hdf5File, OpenOptions};

use crate::manifest::SourceFile;
use crate::scan::hdf5::{RangeStorage, MAX_READ_BYTES};
use crate::scan::ScanOptions;
use crate::source::ByteSource;
use crate::trust::{container_of, Authorization, TrustError};

/// Why a file a sidecar's chunks lie in cannot be found, authorized, opened or read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum FilesError {
    /// Neither `dmrpp:href` nor the sidecar's name tells the data file.
    #[error("cannot tell the data file: dmrpp:href is not a URL and the sidecar's name does not end in .dmrpp")]
    NoDataFile,
    /// A chunk names a source the scan does not have.
    #[error("no source {0}")]
    NoSource(u32),
    /// A range past the end of the file.
    #[error("{location}: bytes {offset}..+{length} lie past its end ({size} bytes)")]
    PastEnd {
        /// The file.
        location: String,
        /// The range's start.
        offset: u64,
        /// Its length.
        length: u64,
        /// The file's size.
        size: u64,
    },
    /// Reading a range failed.
    #[error("{location}: {source}")]
    Read {
        /// The file.
        location: String,
        /// The byte source's error.
        source: Box<crate::source::RangeError>,
    },
    /// The data file's object could not be opened.
    #[error("data file {0}")]
    Object(#[source] Box<crate::scan::ObjectError>),
    /// A local file could not be opened.
    #[error("{0}")]
    Local(#[source] Box<crate::scan::ScanError>),
    /// Something else about the data file named.
    #[error("data file {location}: {problem}")]
    DataFile {
        /// The file.
        location: String,
        /// What failed.
        #[source]
        problem: Box<DataFileProblem>,
    },
}

/// What failed about a data file (after its location in the message).
#[derive(Debug, thiserror::Error)]
pub(crate) enum DataFileProblem {
    /// Its location is no URL.
    #[error("{0}")]
    Url(#[source] url::ParseError),
    /// A range past 2^64.
    #[error("bytes {offset}..+{length} pass 2^64")]
    Overflow {
        /// The range's start.
        offset: u64,
        /// Its length.
        length: u64,
    },
    /// No runtime to read an object through.
    #[error("reading it needs ScanOptions::runtime")]
    NoRuntime,
    /// No store can be built for its URL.
    #[error("{0}")]
    Store(#[source] crate::source::RemoteError),
    /// The store has no such object.
    #[error("not found")]
    NotFound,
    /// The request failed (the store's error in one line: not a `source`, whose full text would be
    /// repeated after it).
    #[error("{}", crate::source::describe_error(.0))]
    Request(object_store::Error),
    /// It lies outside the places a sidecar may point at. Not a `source`: the command line's hint
    /// for an untrusted store (`--allow-source`) was never given for a sidecar's data file.
    #[error("{0}")]
    Untrusted(TrustError),
    /// It could not be fingerprinted.
    #[error("{0}")]
    Fingerprint(#[source] std::io::Error),
}

impl FilesError {
    fn data_file(location: &str, problem: DataFileProblem) -> Self {
        FilesError::DataFile { location: location.to_string(), problem: Box::new(problem) }
    }
}

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
    /// The file opened by the HDF5 reader, once asked for (None: not an HDF5 file).
    hdf5: OnceLock<Option<Hdf5File>>,
}

impl DataFile {
    fn new(location: String) -> Self {
        DataFile { location, opened: OnceLock::new(), hdf5: OnceLock::new() }
    }

    fn opened(location: String, opened: (SourceFile, Arc<dyn ByteSource>)) -> Self {
        DataFile { opened: OnceLock::from(opened), ..DataFile::new(location) }
    }
}

/// The data file a sidecar at `sidecar` (path or URL) with `href` describes.
///
/// # Errors
/// When `href` is not a URL and the sidecar's name does not end in `.dmrpp`.
pub(crate) fn data_location(sidecar: &str, href: Option<&str>) -> Result<String, FilesError> {
    if let Some(href) = href.map(str::trim).filter(|h| crate::source::Location::parse(h).is_url()) {
        return Ok(href.to_string());
    }
    let stripped = sidecar.strip_suffix(".dmrpp").filter(|s| !s.is_empty() && !s.ends_with('/'));
    stripped.map(str::to_string).ok_or(FilesError::NoDataFile)
}

impl<'a> Files<'a> {
    /// Authorizes (and, when local, opens) the data file of the sidecar at `sidecar` (its dataset
    /// `href`).
    pub(super) fn open(sidecar: &str, href: Option<&str>, options: &'a ScanOptions) -> Result<Self, FilesError> {
        let mut authorization = options.link_authorization.clone();
        authorization.extend([container_of(sidecar)]);
        let mut files = Files { sidecar: sidecar.to_string(), authorization, options, opened: Vec::new() };
        let location = data_location(sidecar, href)?;
        let file = files.add(location)?;
        files.opened.push(file);
        Ok(files)
    }

    /// The fingerprints, in source id order (objects not read yet fingerprinted by a HEAD request).
    pub(super) fn sources(&self) -> Result<Vec<SourceFile>, FilesError> {
        self.opened.iter().map(|file| self.file(file).map(|(s, _)| s.clone())).collect()
    }

    /// The source id of a chunk with `href` (none: the data file).
    pub(super) fn source_of(&mut self, href: Option<&str>) -> Result<u32, FilesError> {
        let Some(href) = href.map(str::trim).filter(|h| !h.is_empty()) else { return Ok(0) };
        let location = if crate::source::Location::parse(href).is_url() {
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

    /// Source `source` opened by the HDF5 reader, once for the scan (what a sidecar leaves out and
    /// only the file's own metadata says); None when it is not an HDF5 file.
    pub(super) fn hdf5(&self, source: u32) -> Result<Option<Hdf5File>, FilesError> {
        let file = self.opened.get(source as usize).ok_or(FilesError::NoSource(source))?;
        if let Some(opened) = file.hdf5.get() {
            return Ok(opened.clone());
        }
        let bytes = self.file(file)?.1.clone();
        let options = OpenOptions::default().with_max_read_bytes(MAX_READ_BYTES);
        let opened = Hdf5File::from_storage_with_options(Arc::new(RangeStorage(bytes)), options).ok();
        Ok(file.hdf5.get_or_init(|| opened).clone())
    }

    /// `length` bytes at `offset` of source `source`.
    pub(super) fn read(&self, source: u32, offset: u64, length: u64) -> Result<Vec<u8>, FilesError> {
        let file = self.opened.get(source as usize).ok_or(FilesError::NoSource(source))?;
        if file.opened.get().is_none() && length > 0 {
            if let Some(bytes) = self.open_at(file, offset, length)? {
                return Ok(bytes);
            }
        }
        let (fingerprint, bytes) = self.file(file)?;
        if offset.checked_add(length).is_none_or(|end| end > bytes.len()) {
            let (location, size) = (fingerprint.location.clone(), bytes.len());
            return Err(FilesError::PastEnd { location, offset, length, size });
        }
        bytes
            .read_range(offset, length)
            .map(|b| b.to_vec())
            .map_err(|e| FilesError::Read { location: fingerprint.location.clone(), source: Box::new(e) })
    }

    /// `file`, opened (an object not read yet: fingerprinted by a HEAD request now).
    fn file<'f>(&self, file: &'f DataFile) -> Result<&'f (SourceFile, Arc<dyn ByteSource>), FilesError> {
        if let Some(opened) = file.opened.get() {
            return Ok(opened);
        }
        let url = url::Url::parse(&file.location)
            .map_err(|e| FilesError::data_file(&file.location, DataFileProblem::Url(e)))?;
        let opened = crate::scan::open_object(&url, self.options).map_err(|e| FilesError::Object(Box::new(e)))?;
        Ok(file.opened.get_or_init(|| opened))
    }

    /// Opens the object `file` with one ranged GET of `length` bytes at `offset`, which it returns;
    /// `None` when the server refuses the range (past the object's end: [`Files::read`] then says
    /// so from the object's size).
    fn open_at(&self, file: &DataFile, offset: u64, length: u64) -> Result<Option<Vec<u8>>, FilesError> {
        let named = |problem| FilesError::data_file(&file.location, problem);
        let end = offset.checked_add(length).ok_or_else(|| named(DataFileProblem::Overflow { offset, length }))?;
        let url = url::Url::parse(&file.location).map_err(|e| named(DataFileProblem::Url(e)))?;
        let Some(runtime) = self.options.runtime.as_ref() else {
            return Err(named(DataFileProblem::NoRuntime));
        };
        let (store, path) =
            crate::source::store_for_url(&url, &self.options.remote).map_err(|e| named(DataFileProblem::Store(e)))?;
        let got = runtime.block_on(async {
            let options = object_store::GetOptions { range: Some((offset..end).into()), ..Default::default() };
            let got = store.get_opts(&path, options).await?;
            let meta = got.meta.clone();
            Ok::<_, object_store::Error>((meta, got.bytes().await?))
        });
        let (meta, bytes) = match got {
            Ok(got) => got,
            Err(object_store::Error::NotFound { .. }) => return Err(named(DataFileProblem::NotFound)),
            Err(e) if e.to_string().contains("416") || e.to_string().contains("Range Not Satisfiable") => {
                return Ok(None)
            }
            Err(e) => return Err(named(DataFileProblem::Request(e))),
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
    fn add(&self, location: String) -> Result<DataFile, FilesError> {
        let named = |problem| FilesError::data_file(&location, problem);
        self.authorization.check(&location).map_err(|e| named(DataFileProblem::Untrusted(e)))?;
        let Some(path) = crate::source::local_path(&location) else {
            return Ok(DataFile::new(location));
        };
        let path = std::path::absolute(&path).unwrap_or(path);
        let source = crate::source::fingerprint(&path).map_err(|e| named(DataFileProblem::Fingerprint(e)))?;
        let bytes = crate::scan::open_local(&path).map_err(|e| FilesError::Local(Box::new(e)))?;
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
    if crate::source::Location::parse(text).is_remote() {
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
