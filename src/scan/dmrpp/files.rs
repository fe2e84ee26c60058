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
use std::sync::Arc;

use crate::manifest::SourceFile;
use crate::scan::ScanOptions;
use crate::source::ByteSource;
use crate::trust::{container_of, Authorization};

/// The scan's sources: the data file (id 0) and the files chunks name, opened once each.
pub(super) struct Files<'a> {
    sidecar: String,
    authorization: Authorization,
    options: &'a ScanOptions,
    opened: Vec<(SourceFile, Arc<dyn ByteSource>)>,
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
    /// Opens the data file of the sidecar at `sidecar` (its dataset `href`).
    pub(super) fn open(sidecar: &str, href: Option<&str>, options: &'a ScanOptions) -> Result<Self, String> {
        let mut authorization = options.link_authorization.clone();
        authorization.extend([container_of(sidecar)]);
        let mut files = Files { sidecar: sidecar.to_string(), authorization, options, opened: Vec::new() };
        let location = data_location(sidecar, href)?;
        let opened = files.open_file(&location)?;
        files.opened.push(opened);
        Ok(files)
    }

    /// The fingerprints, in source id order.
    pub(super) fn sources(&self) -> Vec<SourceFile> {
        self.opened.iter().map(|(s, _)| s.clone()).collect()
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
        if let Some(i) = self.opened.iter().position(|(s, _)| s.location == location) {
            return Ok(i as u32);
        }
        if location == data_location(&self.sidecar, None).unwrap_or_default() {
            return Ok(0);
        }
        let opened = self.open_file(&location)?;
        self.opened.push(opened);
        Ok(self.opened.len() as u32 - 1)
    }

    /// `length` bytes at `offset` of source `source`.
    pub(super) fn read(&self, source: u32, offset: u64, length: u64) -> Result<Vec<u8>, String> {
        let (file, bytes) = self.opened.get(source as usize).ok_or_else(|| format!("no source {source}"))?;
        if offset.checked_add(length).is_none_or(|end| end > bytes.len()) {
            return Err(format!(
                "{}: bytes {offset}..+{length} lie past its end ({} bytes)",
                file.location,
                bytes.len()
            ));
        }
        bytes.read_range(offset, length).map(|b| b.to_vec()).map_err(|e| format!("{}: {e}", file.location))
    }

    /// Checks `location` against the authorization, then fingerprints and opens it.
    fn open_file(&self, location: &str) -> Result<(SourceFile, Arc<dyn ByteSource>), String> {
        self.authorization.check(location).map_err(|e| format!("data file {location}: {e}"))?;
        match crate::source::local_path(location) {
            Some(path) => {
                let path = std::path::absolute(&path).unwrap_or(path);
                let source = crate::source::fingerprint(&path).map_err(|e| format!("data file {location}: {e}"))?;
                Ok((source, crate::scan::open_local(&path).map_err(|e| e.to_string())?))
            }
            None => {
                let url = url::Url::parse(location).map_err(|e| format!("data file {location}: {e}"))?;
                crate::scan::open_object(&url, self.options).map_err(|e| format!("data file {e}"))
            }
        }
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
