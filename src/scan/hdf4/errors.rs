//! Errors of the HDF4 reader: one line each, naming the object (tag, ref) and what was wrong.

/// Something in an HDF4 file the reader cannot use. Messages are one line, without the file name (the
/// caller's [`ScanError`](crate::scan::ScanError) adds it).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum Hdf4Error {
    /// Reading bytes of the file failed (or the range lies past its end).
    #[error("reading {what}: {source}")]
    Read {
        /// What was being read.
        what: String,
        /// The byte source's error.
        source: Box<crate::source::RangeError>,
    },
    /// A structure of the file is malformed: truncated, inconsistent or out of range.
    #[error("{what}: {reason}")]
    Malformed {
        /// The structure (`DD block at 294`, `vdata 12`, ...).
        what: String,
        /// What is wrong with it.
        reason: String,
    },
    /// An object the file refers to is absent from its data descriptors.
    #[error("{what} refers to tag {tag} ref {reference}, which the file does not have")]
    Missing {
        /// The referring structure.
        what: String,
        /// The missing object's tag.
        tag: u16,
        /// The missing object's reference number.
        reference: u16,
    },
    /// The external file holding a data set's bytes cannot be found or fingerprinted.
    #[error("external file {name:?}: {reason}")]
    External {
        /// The file's name as the HDF4 file stores it.
        name: String,
        /// What failed (where it was looked for, the I/O error).
        reason: String,
    },
    /// Compressed elements that do not decode (a coder vzarr lacks, corrupt data): like
    /// [`Hdf4Error::Unsupported`], the variable is left out under `skip_unsupported`.
    #[error("{0}")]
    Decode(#[source] super::decode::DecodeError),
    /// A chunk's compressed elements that do not decode, as [`Hdf4Error::Decode`].
    #[error("{what}: {source}")]
    DecodeChunk {
        /// The chunk.
        what: String,
        /// Why.
        source: super::decode::DecodeError,
    },
    /// A number type with no Zarr data type (an unsupported variable).
    #[error("{0}")]
    NumberType(#[from] super::sds::NumberTypeError),
    /// The file uses a feature this reader does not implement.
    #[error("{0}")]
    Unsupported(String),
    /// A chunk vzarr copies into the store could not be kept (the spill file failed).
    #[error("keeping a copied chunk: {0}")]
    Owned(#[from] crate::dataset::OwnedBytesError),
}

impl Hdf4Error {
    /// A [`Hdf4Error::Malformed`] for `what`.
    pub(crate) fn malformed(what: impl Into<String>, reason: impl Into<String>) -> Self {
        Hdf4Error::Malformed { what: what.into(), reason: reason.into() }
    }
}
