//! The HDF4 scanner, without libhdf4: vzarr reads the data descriptors (`hdf4/dd`), the SD model of
//! scientific data sets (`hdf4/sds`, on vgroups and vdatas: `hdf4/vobjects`) and special elements
//! (`hdf4/special`) itself, through the same byte-range trait as the other scanners (local files and
//! object stores alike), and references the stored bytes (`hdf4/array`).
//!
//! - Each data set becomes an array named after it, with its dimension names, attributes
//!   (`scale_factor`, `add_offset`, `_FillValue`, `valid_range`, `units`, ...) and fill value; file
//!   attributes go on the root group; dimension scales are one-dimensional coordinate arrays.
//! - Contiguous data is referenced as slabs, chunked data one reference per chunk of the chunk table,
//!   deflate as `numcodecs.zlib`, linked blocks of whole rows one reference per block. Other linked
//!   blocks, RLE, skipping Huffman, NBIT and szip are decoded and stored by the store. Data in an
//!   external file is referenced in that file, one more source of the dataset (`hdf4/external`);
//!   combining reads such files' digests and coordinates there (`hdf4/combining`). Coders vzarr
//!   does not decode are refused per variable (left out with a warning under `skip_unsupported`);
//!   raster images (GR, JPEG among their compressions) are left out with a warning.
//! - HDF-EOS2 structural metadata (`StructMetadata.0`) names the dimensions of grid and swath fields,
//!   adds their projection as attributes and gives geographic grids `XDim`/`YDim` coordinates
//!   (`hdf4/eos`).
//! - Vgroups of the V interface are groups, with their attributes, and a data set a vgroup holds is
//!   an array of its group (`hdf4/groups`); data sets no vgroup holds, and those of HDF-EOS2 grids and
//!   swaths, stay at the root, as the SD interface lists them.
//! - Hostile files: every length is checked against the file size before anything is allocated,
//!   chains of DD blocks and of linked blocks are followed with visited sets, and a malformed
//!   structure is a one-line error naming it.
//!
//! Format: the HDF4 Specification and Developer's Guide (version 4.2).

mod array;
mod combining;
mod cursor;
mod dd;
mod decode;
mod eos;
mod errors;
mod external;
mod groups;
mod sds;
mod special;
mod vobjects;

use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;

pub(crate) use errors::Hdf4Error;

use super::{unsupported, FileFormat, ScanError, ScanOptions};
use crate::dataset::{GroupNode, VirtualDataset};
use crate::manifest::SourceFile;
use crate::source::ByteSource;

pub(crate) use array::default_fill as sd_default_fill;
pub(crate) use dd::SIGNATURE;
#[cfg(feature = "verify")]
pub(crate) use eos::geo_coordinates;
#[cfg(feature = "verify")]
pub(crate) use sds::NumberType;

/// Scans the HDF4 file whose bytes `bytes` gives (local or from an object store); `path` names it in
/// messages and `source` is its fingerprint (the dataset's source 0).
///
/// # Errors
/// [`ScanError::Open`] when the file's structure cannot be read; [`ScanError::Unsupported`] or
/// [`ScanError::Variable`] naming a data set that cannot be virtualized (the first left out with a
/// warning under `options.skip_unsupported`).
pub(crate) fn scan_hdf4(
    path: &Path,
    bytes: Arc<dyn ByteSource>,
    source: SourceFile,
    options: &ScanOptions,
) -> Result<VirtualDataset, ScanError> {
    let file = bytes.as_ref();
    let open = |e: Hdf4Error| ScanError::Open { path: path.to_path_buf(), format: FileFormat::Hdf4, source: e.into() };
    let index = dd::read_index(file).map_err(open)?;
    let sd = sds::read_sd(file, &index).map_err(open)?;
    let mut dataset = VirtualDataset::default();
    dataset.sources.push(source);
    let attributes = sd.attributes.iter().map(|a| (a.name.clone(), a.to_json())).collect();
    dataset.groups.push(GroupNode::new(String::new(), attributes));
    let placement = groups::place(&sd.vgroups, &sd.var_of).map_err(open)?;
    for (group, refs) in &placement.groups {
        let attributes = sds::vgroup_attributes(file, &index, refs).map_err(open)?;
        let attributes = attributes.iter().map(|a| (a.name.clone(), a.to_json())).collect();
        dataset.groups.push(GroupNode::new(group.clone(), attributes));
    }
    add_datasets(path, (file, &index), sd.datasets, &placement, options, &mut dataset)?;
    left_out_objects(path, file, &index, &mut dataset, options)?;
    eos::apply(&mut dataset).map_err(|(variable, source)| ScanError::Owned {
        path: path.to_path_buf(),
        variable,
        source: Box::new(source),
    })?;
    let table = dataset.sources.clone();
    let mut sources = combining::Sources::new(file, &table, options);
    for array in &mut dataset.arrays {
        combining::add_digest(&mut sources, options, array);
        combining::add_tails(path, &mut sources, options, array)?;
    }
    for dim in &options.concat_dims {
        let coordinate =
            combining::concat_coordinate(&mut sources, &dataset.arrays, dim).map_err(|e| ScanError::Variable {
                path: path.to_path_buf(),
                variable: dim.clone(),
                what: "reading the concatenation coordinate".into(),
                source: Box::new(e),
            })?;
        dataset.concat.extend(coordinate);
    }
    Ok(dataset)
}

/// The arrays of data sets `datasets` (name, `Var0.0` ref, read), each in its vgroup's group.
fn add_datasets(
    path: &Path,
    (file, index): (&dyn ByteSource, &dd::DdIndex),
    datasets: Vec<(String, u16, Result<sds::Sds, Hdf4Error>)>,
    placement: &groups::Placement,
    options: &ScanOptions,
    dataset: &mut VirtualDataset,
) -> Result<(), ScanError> {
    let mut names: std::collections::HashSet<String> = placement.groups.iter().map(|(g, _)| g.clone()).collect();
    let mut externals = external::ExternalFiles::new(path, options);
    for (name, var, read) in datasets {
        let name = placement.of_var.get(&var).map_or(name.clone(), |group| format!("{group}/{name}"));
        let sources = &mut dataset.sources;
        let mut external = |file_name: &str| externals.source(file_name, sources);
        let built = read.and_then(|sds| array::build(file, index, &sds, options, &mut external));
        match built {
            Ok(_) if names.contains(&name) => {
                let problem = "a second data set or a vgroup of this name (vzarr keeps the first)".to_string();
                unsupported(path, &name, problem, options, &mut dataset.warnings)?;
            }
            Ok(mut array) => {
                array.path = name.clone();
                names.insert(name);
                dataset.arrays.push(array);
            }
            Err(Hdf4Error::Unsupported(problem)) => unsupported(path, &name, problem, options, &mut dataset.warnings)?,
            Err(e @ (Hdf4Error::Decode(_) | Hdf4Error::DecodeChunk { .. } | Hdf4Error::NumberType(_))) => {
                unsupported(path, &name, e.to_string(), options, &mut dataset.warnings)?;
            }
            Err(Hdf4Error::Owned(source)) => {
                return Err(ScanError::Owned { path: path.to_path_buf(), variable: name, source: Box::new(source) });
            }
            Err(e) => {
                let what = match e {
                    Hdf4Error::External { .. } => "finding its external file",
                    _ => "reading its HDF4 structure",
                };
                let source = e.into();
                return Err(ScanError::Variable {
                    path: path.to_path_buf(),
                    variable: name,
                    what: what.into(),
                    source,
                });
            }
        }
    }
    Ok(())
}

/// Objects of other HDF4 interfaces the scan does not read: raster images (GR, DFR8, DF24) and
/// vdata tables are a warning; numeric data groups with no SD data set (written by the old DFSD interface) are
/// unsupported, as a data set would be.
fn left_out_objects(
    path: &Path,
    file: &dyn ByteSource,
    index: &dd::DdIndex,
    dataset: &mut VirtualDataset,
    options: &ScanOptions,
) -> Result<(), ScanError> {
    const DFTAG_RIG: u16 = 306;
    const DFTAG_NDG: u16 = 720;
    let images = index.refs_of(DFTAG_RIG).count();
    if images > 0 {
        dataset.warnings.push(crate::dataset::ScanWarning {
            file: path.display().to_string(),
            variable: String::new(),
            message: format!(
                "{images} raster image(s) of the GR/DFR8/DF24 interfaces left out: vzarr reads SD data sets"
            ),
        });
    }
    let tables = user_vdatas(file, index);
    if tables > 0 {
        dataset.warnings.push(crate::dataset::ScanWarning {
            file: path.display().to_string(),
            variable: String::new(),
            message: format!("{tables} vdata table(s) of the VS interface left out: vzarr reads SD data sets"),
        });
    }
    if dataset.arrays.is_empty() && index.refs_of(DFTAG_NDG).next().is_some() {
        let problem = "numeric data groups without SD data sets (the DFSD interface) are not read".to_string();
        unsupported(path, "(DFSD data sets)", problem, options, &mut dataset.warnings)?;
    }
    Ok(())
}

/// Vdatas that are tables of the VS interface, not the SD model's own (attributes, dimension values,
/// markers, chunk tables); unreadable headers are not counted.
fn user_vdatas(file: &dyn ByteSource, index: &dd::DdIndex) -> usize {
    const SD_CLASSES: [&str; 6] = ["Attr0.0", "DimVal0.0", "DimVal0.1", "SDSVar", "CoordVar", "Var0.0"];
    index
        .refs_of(vobjects::DFTAG_VH)
        .filter_map(|r| vobjects::vdata(file, index, r).ok())
        .filter(|v| !SD_CLASSES.contains(&v.class.as_str()) && !v.class.starts_with("_HDF_CHK_TBL_"))
        .count()
}

/// Reads `length` bytes at `offset`, naming `what` in the error.
///
/// # Errors
/// [`Hdf4Error::Malformed`] when the range lies past the end of the file, [`Hdf4Error::Read`] when it
/// cannot be read.
pub(crate) fn read_exact(file: &dyn ByteSource, offset: u64, length: u64, what: &str) -> Result<Bytes, Hdf4Error> {
    let size = file.len();
    if offset.checked_add(length).is_none_or(|end| end > size) {
        let reason = format!("{length} bytes at offset {offset} lie past the end of the {size}-byte file");
        return Err(Hdf4Error::malformed(what, reason));
    }
    file.read_range(offset, length)
        .map_err(|source| Hdf4Error::Read { what: what.to_string(), source: Box::new(source) })
}

#[cfg(test)]
pub(crate) mod testing {
    //! An in-memory byte source for the reader's unit tests.

    use bytes::Bytes;

    use crate::source::{ByteSource, RangeError};

    /// Bytes in memory, named like a file.
    pub(crate) struct MemorySource {
        name: String,
        bytes: Bytes,
    }

    impl MemorySource {
        pub(crate) fn new(name: &str, bytes: Vec<u8>) -> Self {
            MemorySource { name: name.to_string(), bytes: Bytes::from(bytes) }
        }
    }

    impl ByteSource for MemorySource {
        fn location(&self) -> &str {
            &self.name
        }

        fn len(&self) -> u64 {
            self.bytes.len() as u64
        }

        fn read_range(&self, offset: u64, length: u64) -> Result<Bytes, RangeError> {
            crate::source::check_range(&self.name, offset, length, self.len())?;
            Ok(self.bytes.slice(offset as usize..(offset + length) as usize))
        }
    }
}
