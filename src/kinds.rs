//! The `kind()` of every public error ([`ErrorKind`]), in one place.
//!
//! Every match is exhaustive: a new variant of a public error does not compile until it is given
//! its kind here. Wrapping errors report the kind of the error they wrap. Nothing imports this
//! module: it only adds methods.

use crate::append::AppendError;
use crate::codec::{Blosc2ParamsError, SzipParamsError};
use crate::combine::CombineError;
use crate::compact::CompactError;
use crate::error_kind::ErrorKind;
use crate::export::ExportError;
use crate::parts::record::RecordError;
use crate::pipeline::{InputError, PipelineError, ShardError};
use crate::read::{ArrayDataError, ReadError};
use crate::scan::ScanError;
use crate::source::MemoryBudgetError;
#[cfg(feature = "icechunk")]
use crate::store::IcechunkError;
use crate::store::{StoreInfoError, WriteError};
use crate::trust::TrustError;

impl ReadError {
    /// What kind of failure this is.
    pub fn kind(&self) -> ErrorKind {
        match self {
            ReadError::NotFound { .. } | ReadError::NoSuchArray { .. } => ErrorKind::NotFound,
            ReadError::NotARepository { .. } | ReadError::Selection { .. } | ReadError::Output { .. } => {
                ErrorKind::InvalidInput
            }
            ReadError::Untrusted(e) => e.kind(),
            ReadError::SourceChanged { .. } => ErrorKind::SourceChanged,
            ReadError::Metadata { .. } | ReadError::Manifest { .. } | ReadError::Integrity { .. } => ErrorKind::Corrupt,
            ReadError::Decode { .. } => ErrorKind::Corrupt,
            ReadError::TooLarge { .. } => ErrorKind::TooLarge,
            ReadError::Store { .. } | ReadError::Repository { .. } | ReadError::ShortReply { .. } => ErrorKind::Io,
            ReadError::Source(_) | ReadError::Fetch { .. } => ErrorKind::Io,
        }
    }
}

impl PipelineError {
    /// What kind of failure this is: the kind of the stage's error it wraps.
    pub fn kind(&self) -> ErrorKind {
        match self {
            PipelineError::Options(_) | PipelineError::PartsDimensions { .. } => ErrorKind::InvalidInput,
            PipelineError::Inputs(e) => e.kind(),
            PipelineError::Scan(e) => e.kind(),
            PipelineError::Combine(e) => e.kind(),
            PipelineError::Write { source, .. } => source.kind(),
            #[cfg(feature = "icechunk")]
            PipelineError::Icechunk(e) => e.kind(),
            PipelineError::Store { .. } => ErrorKind::InvalidInput,
            PipelineError::Append(e) => e.kind(),
            PipelineError::Parts(e) => e.kind(),
            PipelineError::Compact(e) => e.kind(),
            PipelineError::PartCopy { .. } | PipelineError::Runtime(_) => ErrorKind::Io,
        }
    }
}

impl InputError {
    /// What kind of failure this is.
    pub fn kind(&self) -> ErrorKind {
        match self {
            InputError::NoMatch { .. } => ErrorKind::NotFound,
            InputError::Pattern { .. } | InputError::Url { .. } => ErrorKind::InvalidInput,
            InputError::Directory { .. } | InputError::Listing { .. } | InputError::Remote { .. } => ErrorKind::Io,
        }
    }
}

impl ScanError {
    /// What kind of failure this is.
    pub fn kind(&self) -> ErrorKind {
        match self {
            ScanError::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound => ErrorKind::NotFound,
            ScanError::Io { .. } | ScanError::Owned { .. } => ErrorKind::Io,
            ScanError::UnknownFormat { .. } | ScanError::Unsupported { .. } => ErrorKind::Unsupported,
            ScanError::Open { .. } | ScanError::Variable { .. } => ErrorKind::Corrupt,
        }
    }
}

impl CombineError {
    /// What kind of failure this is.
    pub fn kind(&self) -> ErrorKind {
        match self {
            CombineError::NoFiles | CombineError::Options(_) => ErrorKind::InvalidInput,
            CombineError::Owned { .. } => ErrorKind::Io,
            CombineError::Build { .. } => ErrorKind::Unsupported,
            CombineError::NoDimension { .. }
            | CombineError::MissingVariable { .. }
            | CombineError::Mismatch { .. }
            | CombineError::Attribute { .. }
            | CombineError::Overlap { .. }
            | CombineError::Coordinate { .. }
            | CombineError::Key { .. }
            | CombineError::Incomplete { .. }
            | CombineError::TwoGroups { .. } => ErrorKind::Mismatch,
        }
    }
}

impl AppendError {
    /// What kind of failure this is.
    pub fn kind(&self) -> ErrorKind {
        match self {
            AppendError::Store { .. } => ErrorKind::Corrupt,
            AppendError::NotAppendable { .. } | AppendError::NoFiles => ErrorKind::InvalidInput,
            AppendError::AlreadyStored { .. } => ErrorKind::InvalidInput,
            AppendError::Changed { .. } => ErrorKind::SourceChanged,
            AppendError::Combine(e) => e.kind(),
            AppendError::NotAfter { .. } | AppendError::Gap { .. } | AppendError::Mismatch { .. } => {
                ErrorKind::Mismatch
            }
            AppendError::Build { .. } => ErrorKind::Unsupported,
            AppendError::Owned { .. } => ErrorKind::Io,
        }
    }
}

impl WriteError {
    /// What kind of failure this is.
    pub fn kind(&self) -> ErrorKind {
        match self {
            WriteError::Exists { .. } => ErrorKind::AlreadyExists,
            WriteError::NotReplaceable { .. } | WriteError::Input { .. } | WriteError::BadName { .. } => {
                ErrorKind::InvalidInput
            }
            WriteError::Io { .. } | WriteError::Owned { .. } | WriteError::Remote { .. } => ErrorKind::Io,
            WriteError::Busy { .. } => ErrorKind::Busy,
            WriteError::Manifest { .. } => ErrorKind::Unsupported,
            #[cfg(feature = "icechunk")]
            WriteError::Icechunk(e) => e.kind(),
        }
    }
}

#[cfg(feature = "icechunk")]
impl IcechunkError {
    /// What kind of failure this is.
    pub fn kind(&self) -> ErrorKind {
        match self {
            IcechunkError::Exists { .. } => ErrorKind::AlreadyExists,
            IcechunkError::NotRepository { .. } => ErrorKind::InvalidInput,
            IcechunkError::NoBranch { .. } => ErrorKind::NotFound,
            IcechunkError::Location { .. } => ErrorKind::SourceChanged,
            IcechunkError::Node { .. } => ErrorKind::Corrupt,
            IcechunkError::Repository { .. } => ErrorKind::Io,
        }
    }
}

impl TrustError {
    /// What kind of failure this is.
    pub fn kind(&self) -> ErrorKind {
        match self {
            TrustError::Unauthorized { .. } | TrustError::NotRegular { .. } | TrustError::PseudoFileSystem { .. } => {
                ErrorKind::NotAuthorized
            }
            TrustError::BadLocation { .. } => ErrorKind::InvalidInput,
            TrustError::Resolve { .. } | TrustError::List { .. } | TrustError::NoConfigDir => ErrorKind::Io,
        }
    }
}

impl CompactError {
    /// What kind of failure this is.
    pub fn kind(&self) -> ErrorKind {
        match self {
            CompactError::Usage { .. } => ErrorKind::InvalidInput,
            CompactError::Store { .. } => ErrorKind::Corrupt,
            CompactError::Load(e) => e.kind(),
            CompactError::Read(e) => e.kind(),
            CompactError::Encode { .. } | CompactError::Build { .. } => ErrorKind::Unsupported,
            CompactError::Write { source, .. } => source.kind(),
            #[cfg(feature = "icechunk")]
            CompactError::Icechunk(e) => e.kind(),
        }
    }
}

impl ExportError {
    /// What kind of failure this is.
    pub fn kind(&self) -> ErrorKind {
        match self {
            ExportError::Read(e) => e.kind(),
            ExportError::Write(e) => e.kind(),
            ExportError::Url(_) | ExportError::Node { .. } => ErrorKind::Unsupported,
        }
    }
}

impl ShardError {
    /// What kind of failure this is.
    pub fn kind(&self) -> ErrorKind {
        match self {
            ShardError::Spec(_) | ShardError::NoShard(_) | ShardError::NoCount(_) => ErrorKind::InvalidInput,
            ShardError::Io { .. } => ErrorKind::Io,
            ShardError::Corrupt { .. } => ErrorKind::Corrupt,
            ShardError::Mismatch(_) => ErrorKind::Mismatch,
            ShardError::Write(e) => e.kind(),
        }
    }
}

impl MemoryBudgetError {
    /// What kind of failure this is: always [`ErrorKind::InvalidInput`].
    pub fn kind(&self) -> ErrorKind {
        ErrorKind::InvalidInput
    }
}

impl ArrayDataError {
    /// What kind of failure this is: always [`ErrorKind::InvalidInput`] (the type or shape asked for).
    pub fn kind(&self) -> ErrorKind {
        match self {
            ArrayDataError::WrongType { .. } | ArrayDataError::Shape(_) => ErrorKind::InvalidInput,
        }
    }
}

impl StoreInfoError {
    /// What kind of failure this is.
    pub fn kind(&self) -> ErrorKind {
        match self {
            StoreInfoError::Json(_) => ErrorKind::Corrupt,
            StoreInfoError::NotVzarr { .. } => ErrorKind::InvalidInput,
            StoreInfoError::Newer { .. } => ErrorKind::Unsupported,
        }
    }
}

impl Blosc2ParamsError {
    /// What kind of failure this is: always [`ErrorKind::Unsupported`] (parameters the filter refuses).
    pub fn kind(&self) -> ErrorKind {
        match self {
            Blosc2ParamsError::TooFew { .. }
            | Blosc2ParamsError::Rank { .. }
            | Blosc2ParamsError::Dimensions { .. } => ErrorKind::Unsupported,
        }
    }
}

impl SzipParamsError {
    /// What kind of failure this is: always [`ErrorKind::Unsupported`] (parameters libaec refuses).
    pub fn kind(&self) -> ErrorKind {
        match self {
            SzipParamsError::Count { .. }
            | SzipParamsError::BitsPerPixel { .. }
            | SzipParamsError::PixelsPerBlock { .. }
            | SzipParamsError::PixelsPerScanline { .. } => ErrorKind::Unsupported,
        }
    }
}

impl RecordError {
    /// What kind of failure this is: [`ErrorKind::Corrupt`] for a record that does not decode.
    pub fn kind(&self) -> ErrorKind {
        match self {
            RecordError::EncodeMetadata(_) | RecordError::MetadataTooLong | RecordError::EncodeEntries { .. } => {
                ErrorKind::Unsupported
            }
            RecordError::CopyOwned { .. } | RecordError::Owned { .. } => ErrorKind::Io,
            RecordError::Truncated { .. }
            | RecordError::Malformed { .. }
            | RecordError::CountTooLarge { .. }
            | RecordError::LengthTooLarge { .. }
            | RecordError::Metadata(_)
            | RecordError::Sources(_)
            | RecordError::Trailing { .. }
            | RecordError::ArrayMetadata { .. }
            | RecordError::Entries { .. }
            | RecordError::EntryCount { .. }
            | RecordError::TailCount { .. }
            | RecordError::Outside { .. } => ErrorKind::Corrupt,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrapping_errors_report_the_kind_they_wrap() {
        let exists = || WriteError::Exists { path: "out.vzarr".into() };
        assert_eq!(exists().kind(), ErrorKind::AlreadyExists);
        let write = PipelineError::Write { output: "out.vzarr".into(), source: exists() };
        assert_eq!(write.kind(), ErrorKind::AlreadyExists);
        let compact = CompactError::Write { store: "s".into(), source: exists() };
        assert_eq!(compact.kind(), ErrorKind::AlreadyExists);
        let no_match = PipelineError::Inputs(InputError::NoMatch { pattern: "*.nc".into(), what: "files" });
        assert_eq!(no_match.kind(), ErrorKind::NotFound);
        let append = PipelineError::Append(AppendError::Combine(CombineError::NoFiles));
        assert_eq!(append.kind(), ErrorKind::InvalidInput);
    }

    #[test]
    fn a_missing_file_is_not_found_and_a_text_file_unsupported() {
        let dir = tempfile::tempdir().unwrap();
        let options = crate::scan::ScanOptions::default();
        let missing = crate::scan::scan_file(&dir.path().join("missing.nc"), &options).unwrap_err();
        assert_eq!(missing.kind(), ErrorKind::NotFound, "{missing}");
        let text = dir.path().join("notes.nc");
        std::fs::write(&text, "not a netCDF file, just words").unwrap();
        let unknown = crate::scan::scan_file(&text, &options).unwrap_err();
        assert_eq!(unknown.kind(), ErrorKind::Unsupported, "{unknown}");
    }
}
