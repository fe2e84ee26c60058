//! File format detection by content (the HDF5 file format specification: HDF5 signature and user block;
//! section 5: the `CDF` magic of the classic formats; section 15: the HDF4 signature; section 17: a DMR++
//! sidecar's XML).

use std::path::Path;

use super::ScanError;

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

/// Reads an object's magic bytes through its byte source and names its format; `path` names it in
/// errors.
///
/// # Errors
/// [`ScanError::Io`] when the bytes cannot be read; [`ScanError::UnknownFormat`] when no signature
/// matches.
pub fn detect_format_of(path: &Path, source: &dyn crate::source::ByteSource) -> Result<FileFormat, ScanError> {
    let len = source.len();
    let io =
        |e: crate::source::RangeError| ScanError::Io { path: path.to_path_buf(), source: std::io::Error::other(e) };
    let head = source.read_range(0, len.min(1024)).map_err(io)?;
    // A signature at byte 0 first: binary formats are told by their first bytes, without reading
    // their head as text (an HDF5 file's attribute may well name the DMR++ namespace).
    let start = head.get(..8.min(head.len())).unwrap_or_default();
    if start == HDF5_SIGNATURE {
        return Ok(FileFormat::Hdf5);
    }
    if start.starts_with(&super::hdf4::SIGNATURE) {
        return Ok(FileFormat::Hdf4);
    }
    if start.len() >= 4 && start.starts_with(b"CDF") && matches!(start[3], 1 | 2 | 5) {
        return Ok(FileFormat::Netcdf3);
    }
    if super::dmrpp::looks_like_dmrpp(head.as_ref()) {
        return Ok(FileFormat::Dmrpp);
    }
    let mut offset = 512u64;
    while offset + 8 <= len {
        let head = source.read_range(offset, 8).map_err(io)?;
        if head.as_ref() == HDF5_SIGNATURE {
            return Ok(FileFormat::Hdf5);
        }
        offset *= 2;
    }
    let reason = if len < 8 {
        format!("only {len} bytes long")
    } else {
        "no HDF5 signature, no CDF magic, no HDF4 signature and no DMR++ XML".to_string()
    };
    Err(ScanError::UnknownFormat { path: path.to_path_buf(), reason })
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
