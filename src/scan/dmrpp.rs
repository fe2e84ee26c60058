//! The DMR++ scanner (OPeNDAP BES's `dmrpp_module`, what `get_dmrpp` writes beside a granule;
//! REFERENCE section 17): a sidecar `X.h5.dmrpp` already lists where every chunk of `X.h5` lies,
//! so scanning it costs one read of the XML and one look at the data file's fingerprint instead of
//! a walk of the file's B-trees.
//!
//! Input: the sidecar's bytes and location. Output: the same single-file [`VirtualDataset`] the
//! HDF5 (or HDF4) scanner gives for the data file: source 0 is the data file (`dmrpp/files`:
//! resolved from `dmrpp:href`, authorized, fingerprinted from the object itself), and every
//! variable is translated as those scanners translate the same dataset. `dmrpp/xml` parses under
//! limits (no DTD, bounded depth and count) and lists chunks straight into `dmrpp/chunk_list`'s compact
//! table as it meets them (no element or allocation per chunk), `dmrpp/model` reads groups, dimensions and attributes,
//! `dmrpp/chunks` the storage, `dmrpp/elements` the element types, `dmrpp/special_struct` the
//! elements of structures with string members BES writes into the sidecar, `dmrpp/translate` builds
//! the arrays, `dmrpp/values` reads back what combining needs (concatenation coordinates, digests,
//! trimmed last chunks) through the data file, and `dmrpp/check` compares a sidecar with a scan of
//! its file (`vzarr check-sidecars`).
//!
//! What a sidecar cannot say, or vzarr cannot reference, is refused per variable (an error, or a
//! warning under `skip_unsupported`): structures with string-array or structure members (and
//! padded ones not stored in chunks), strings whose length is not given, filters other than deflate, shuffle and fletcher32.
//! Padded structures stored in chunks are repacked as the HDF5 scanner repacks them
//! (`dmrpp/translate`: each listed chunk read from the data file).

mod attributes;
#[cfg(feature = "cli")]
pub(crate) mod check;
mod chunk_list;
mod chunks;
mod elements;
pub(crate) mod files;
mod heap_string;
mod model;
mod special_struct;
mod string_kind;
mod translate;
mod types;
mod values;
mod xml;

pub(crate) use files::{with_sidecars, Sidecars};

use std::collections::HashMap;
use std::path::Path;

use super::{unsupported, BoxError, ScanError, ScanOptions};
use crate::dataset::{ScanWarning, VirtualDataset};
use crate::source::ByteSource;
use files::Files;
use translate::Refusal;

/// Largest sidecar read (a granule of 10^6 chunks is about 100 MB of XML).
pub(crate) const MAX_SIDECAR_BYTES: u64 = 1 << 30;

/// Whether `head` (a file's first bytes) is to be read as a DMR++ document: it starts with markup
/// (`<`, after a byte-order mark and blanks; no HDF5, NetCDF or HDF4 file does), or names the DMR++
/// namespace after a line of other text (as some of BES's own test sidecars do).
pub(crate) fn looks_like_dmrpp(head: &[u8]) -> bool {
    let text = String::from_utf8_lossy(head);
    let trimmed = text.trim_start_matches('\u{feff}').trim_start();
    trimmed.starts_with('<') || text.contains("xml.opendap.org/dap/dmrpp")
}

/// State shared by the variables of one sidecar.
struct Context<'a> {
    /// The sidecar, as messages name it.
    path: &'a Path,
    options: &'a ScanOptions,
    files: Files<'a>,
    enumerations: &'a HashMap<String, &'a xml::Element>,
    /// Every variable of the sidecar (for the char stacking rule).
    variables: &'a [model::DmrVariable<'a>],
}

impl Context<'_> {
    fn variable_error(&self, var: &str, what: &str, why: impl Into<BoxError>) -> ScanError {
        ScanError::Variable {
            path: self.path.to_path_buf(),
            variable: var.into(),
            what: what.into(),
            source: why.into(),
        }
    }

    fn owned_error(&self, var: &str, source: crate::dataset::OwnedBytesError) -> ScanError {
        ScanError::Owned { path: self.path.to_path_buf(), variable: var.into(), source: Box::new(source) }
    }
}

/// Scans the sidecar whose bytes `bytes` gives; `path` is its local path or URL (which names it in
/// messages and locates the data file).
///
/// # Errors
/// [`ScanError`] naming the sidecar: malformed XML, a data file that cannot be found, authorized or
/// opened, and any variable's problem (those vzarr cannot represent only without `skip_unsupported`).
pub(crate) fn scan_dmrpp(
    path: &Path,
    bytes: &dyn ByteSource,
    options: &ScanOptions,
) -> Result<VirtualDataset, ScanError> {
    let open =
        |why: BoxError| ScanError::Open { path: path.to_path_buf(), format: super::FileFormat::Dmrpp, source: why };
    if bytes.len() > MAX_SIDECAR_BYTES {
        let why = format!("{} bytes, more than the {MAX_SIDECAR_BYTES} a sidecar may have", bytes.len());
        return Err(open(why.into()));
    }
    let text = bytes
        .read_range(0, bytes.len())
        .map_err(|e| ScanError::Io { path: path.into(), source: std::io::Error::other(e) })?;
    let root = xml::parse(&text).map_err(|e| open(e.into()))?;
    let dmr = model::read_dmr(&root).map_err(|e| open(e.into()))?;
    let location = path.to_string_lossy();
    let files = Files::open(&location, root.attr("dmrpp:href"), options).map_err(|e| open(e.into()))?;
    let mut ctx = Context { path, options, files, enumerations: &dmr.enumerations, variables: &dmr.variables };
    let mut dataset = VirtualDataset { groups: dmr.groups.clone(), ..VirtualDataset::default() };
    let mut warnings = Vec::new();
    for (object, name, why) in &dmr.dropped {
        let message = format!("attribute {name} left out: cannot represent {why}");
        warnings.push(ScanWarning { file: location.to_string(), variable: object.clone(), message });
    }
    for var in &dmr.variables {
        match translate::translate(&mut ctx, var) {
            Ok(mut array) => {
                values::complete(&ctx, &mut array)?;
                dataset.arrays.push(array);
            }
            Err(Refusal::Unsupported(why)) => unsupported(path, &var.path, why.to_string(), options, &mut warnings)?,
            Err(Refusal::Error(ScanError::Variable { variable, what, source, .. })) if options.skip_unsupported => {
                unsupported(path, &variable, format!("{what}: {source}"), options, &mut warnings)?;
            }
            Err(Refusal::Error(e)) => return Err(e),
        }
    }
    for dim in &options.concat_dims {
        let coordinate = values::concat_coordinate(&ctx, &dataset.arrays, dim)
            .map_err(|why| ctx.variable_error(dim, "reading the concatenation coordinate", why))?;
        dataset.concat.extend(coordinate);
    }
    for source in ctx.files.sources().map_err(|e| open(e.into()))? {
        dataset.sources.push(source);
    }
    dataset.warnings = warnings;
    Ok(dataset)
}
