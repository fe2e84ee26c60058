//! File format detection by content (the HDF5 file format specification: HDF5 signature and user block;
//! section 5: the `CDF` magic of the classic formats; section 15: the HDF4 signature; section 17: a DMR++
//! sidecar's XML).

use std::path::Path;
use std::sync::Arc;

use super::{ScanError, ScanOptions};
use crate::dataset::VirtualDataset;
use crate::manifest::SourceFile;
use crate::source::{ByteSource, RangeError};

/// The formats vzarr recognises.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum FileFormat {
    /// HDF5, including NetCDF-4.
    Hdf5,
    /// NetCDF-3: classic (CDF-1), 64-bit offset (CDF-2) or 64-bit data (CDF-5).
    Netcdf3,
    /// HDF4 (scientific data sets of the SD interface, HDF-EOS2).
    Hdf4,
    /// A DMR++ sidecar (OPeNDAP's XML chunk manifest of an HDF5, NetCDF-4 or HDF4 file).
    Dmrpp,
}

impl std::fmt::Display for FileFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            FileFormat::Hdf5 => "HDF5/NetCDF-4",
            FileFormat::Netcdf3 => "NetCDF-3",
            FileFormat::Hdf4 => "HDF4",
            FileFormat::Dmrpp => "DMR++",
        })
    }
}

const HDF5_SIGNATURE: &[u8; 8] = b"\x89HDF\r\n\x1a\n";

/// Scans a file of one format read through `bytes`, whose fingerprint is `source`, into a dataset
/// whose only source is id 0.
type ScanFn = fn(&Path, Arc<dyn ByteSource>, SourceFile, &ScanOptions) -> Result<VirtualDataset, ScanError>;

/// Finds a format further into a file than its first bytes.
type FindFn = fn(&dyn ByteSource) -> Result<bool, RangeError>;

/// One input format, as the registry knows it: how its files are told by their bytes, and how one is
/// scanned. Nothing outside `scan/` names a reader's types.
pub(crate) struct InputFormat {
    /// The format.
    pub(crate) format: FileFormat,
    /// Whether a file's first bytes (up to 1 KiB) show this format.
    at_start: fn(&[u8]) -> bool,
    /// Whether the format shows further into the file (HDF5: after a user block).
    further: Option<FindFn>,
    /// Scans a file of the format.
    pub(crate) scan: ScanFn,
}

/// The input formats, in the order a file's first bytes are matched against them: the binary
/// signatures first, then DMR++'s XML (an HDF5 file's attribute may well name the DMR++ namespace),
/// then what only shows further in. Adding an input format is one reader folder and one line here.
static INPUT_FORMATS: &[InputFormat] = &[
    InputFormat {
        format: FileFormat::Hdf5,
        at_start: |head| head.starts_with(HDF5_SIGNATURE),
        further: Some(hdf5_after_user_block),
        scan: super::hdf5::scan_hdf5,
    },
    InputFormat {
        format: FileFormat::Hdf4,
        at_start: |head| head.starts_with(&super::hdf4::SIGNATURE),
        further: None,
        scan: super::hdf4::scan_hdf4,
    },
    InputFormat {
        format: FileFormat::Netcdf3,
        at_start: |head| head.len() >= 4 && head.starts_with(b"CDF") && matches!(head[3], 1 | 2 | 5),
        further: None,
        scan: super::netcdf3::scan_netcdf3,
    },
    InputFormat {
        format: FileFormat::Dmrpp,
        at_start: super::dmrpp::looks_like_dmrpp,
        further: None,
        // A sidecar's fingerprint is its data file's, taken by the DMR++ scanner itself.
        scan: |path, bytes, _, options| super::dmrpp::scan_dmrpp(path, bytes.as_ref(), options),
    },
];

/// An HDF5 signature after a user block: at byte 512, 1024, 2048, ... (HDF5 file format
/// specification, "Superblock").
fn hdf5_after_user_block(source: &dyn ByteSource) -> Result<bool, RangeError> {
    let mut offset = 512u64;
    while offset + 8 <= source.len() {
        if source.read_range(offset, 8)?.as_ref() == HDF5_SIGNATURE {
            return Ok(true);
        }
        offset *= 2;
    }
    Ok(false)
}

/// The input format of the object `source` reads; `path` names it in errors.
///
/// # Errors
/// [`ScanError::Io`] when the bytes cannot be read; [`ScanError::UnknownFormat`] when no format
/// matches.
pub(crate) fn input_format_of(path: &Path, source: &dyn ByteSource) -> Result<&'static InputFormat, ScanError> {
    let len = source.len();
    let io = |e: RangeError| ScanError::Io { path: path.to_path_buf(), source: std::io::Error::other(e) };
    let head = source.read_range(0, len.min(1024)).map_err(io)?;
    if let Some(input) = INPUT_FORMATS.iter().find(|f| (f.at_start)(head.as_ref())) {
        return Ok(input);
    }
    for input in INPUT_FORMATS {
        if let Some(further) = input.further {
            if further(source).map_err(io)? {
                return Ok(input);
            }
        }
    }
    let reason = if len < 8 {
        format!("only {len} bytes long")
    } else {
        "no HDF5 signature, no CDF magic, no HDF4 signature and no DMR++ XML".to_string()
    };
    Err(ScanError::UnknownFormat { path: path.to_path_buf(), reason })
}

/// Reads an object's magic bytes through its byte source and names its format; `path` names it in
/// errors.
///
/// # Errors
/// [`ScanError::Io`] when the bytes cannot be read; [`ScanError::UnknownFormat`] when no signature
/// matches.
pub fn detect_format_of(path: &Path, source: &dyn ByteSource) -> Result<FileFormat, ScanError> {
    input_format_of(path, source).map(|input| input.format)
}

/// Reads the file's magic bytes and names its format.
///
/// # Errors
/// [`ScanError::Io`] when the file cannot be read; [`ScanError::UnknownFormat`] when no signature
/// matches (the message says what the file starts with).
pub fn detect_format(path: &Path) -> Result<FileFormat, ScanError> {
    detect_format_of(path, super::open_local(path)?.as_ref())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn detected(bytes: &[u8]) -> Result<FileFormat, ScanError> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("file");
        std::fs::write(&path, bytes).unwrap();
        detect_format(&path)
    }

    /// Binary formats are told by their first bytes, before the head is read as text: an HDF5 file
    /// whose first KiB names the DMR++ namespace (in an attribute, say) is HDF5, not a sidecar.
    #[test]
    fn signatures_come_before_the_dmrpp_text() {
        let mut hdf5 = HDF5_SIGNATURE.to_vec();
        hdf5.extend(b"\0\0 attribute: http://xml.opendap.org/dap/dmrpp/1.0.0# ");
        hdf5.resize(2048, 0);
        assert_eq!(detected(&hdf5).unwrap(), FileFormat::Hdf5);
        let mut blank_block = vec![0u8; 512];
        blank_block.extend(HDF5_SIGNATURE);
        blank_block.resize(1024, 0);
        assert_eq!(detected(&blank_block).unwrap(), FileFormat::Hdf5, "a user block, then the signature");
        assert_eq!(detected(b"CDF\x01\0\0\0\0\0\0\0\0").unwrap(), FileFormat::Netcdf3);
        assert_eq!(detected(&[0x0e, 0x03, 0x13, 0x01, 0, 0, 0, 0]).unwrap(), FileFormat::Hdf4);
        assert_eq!(detected(b"<?xml version=\"1.0\"?><Dataset/>").unwrap(), FileFormat::Dmrpp);
        assert!(detected(b"nothing we know").is_err());
    }
}
