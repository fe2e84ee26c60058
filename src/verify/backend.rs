//! What `verify` asks of its oracle, and the oracle's failures: the seam between the comparison
//! (pure Rust, in the `vzarr` process) and the C libraries that read the sources. Two backends answer:
//! `oracle::OracleFiles` in this process, and `worker::WorkerOracle`, a `vzarr-oracle` child process.
//! The `vzarr` binary uses only the second, so it does not link libnetcdf, libhdf5 or libhdf4.

use crate::metadata::DataType;

use super::TimeValues;

/// Why the oracle gave no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OracleError {
    /// libnetcdf, libhdf5 or libhdf4 refused or failed: its message.
    #[error("{0}")]
    Library(String),
    /// The oracle worker failed: it could not start, died, timed out or answered what is not understood.
    #[error("{0}")]
    Worker(String),
    /// A remote source without a local copy for the oracle to read: why there is none.
    #[error("{0}")]
    NoLocalCopy(String),
    /// A value the oracle read that verify cannot use (units that do not parse).
    #[error("{0}")]
    Value(String),
}

/// What libhdf5 tells of the HDF5 dataset behind a netCDF-4 variable.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Hdf5Facts {
    /// libhdf5 leaves the never-written chunks undefined (fill time "never", netCDF's `NOFILL`).
    pub(crate) fill_time_never: bool,
    /// The dataset's extent, when read through libnetcdf: a variable shorter than its unlimited
    /// dimension has an extent smaller than its netCDF shape.
    pub(crate) extent: Option<Vec<u64>>,
    /// For a compound with string or reference members: the bytes of each text field in the
    /// oracle's layout (each as wide as its longest value in this file; the store's may be wider when
    /// files were combined).
    #[serde(default)]
    pub(crate) text_widths: Vec<u32>,
}

/// The questions verify asks about variable `path` of the local file `local` (never a URL: a remote
/// source is asked about through its local copy).
pub(crate) trait Backend {
    /// Closes `local` if it is open (before its temporary copy is removed: an open file keeps its
    /// disk space).
    fn forget(&mut self, local: &str);

    /// The values in the box `counts` from `starts` (C order, native endian), or all of them when
    /// `starts` is empty.
    fn read(&mut self, local: &str, path: &str, starts: &[u64], counts: &[u64]) -> Result<Vec<u8>, OracleError>;

    /// The strings of a `string` variable (or the paths a dataset of object references points to).
    fn read_strings(&mut self, local: &str, path: &str) -> Result<Vec<String>, OracleError>;

    /// The element type when it is a plain number; `None` for every other type and where the
    /// library cannot tell.
    fn numeric_type(&mut self, local: &str, path: &str) -> Option<DataType>;

    /// The shape and element size in bytes.
    fn shape(&mut self, local: &str, path: &str) -> Result<(Vec<u64>, usize), OracleError>;

    /// What libhdf5 tells of the HDF5 dataset behind the variable.
    fn hdf5_facts(&mut self, local: &str, path: &str) -> Result<Hdf5Facts, OracleError>;

    /// The oracle of the variable when not its file's own library (`szip decoded by libaec`).
    fn other_oracle(&mut self, local: &str, path: &str) -> Option<&'static str>;

    /// A filter of the dataset this libhdf5 lacks (`filter 305 (LZO)`), if any.
    fn missing_filter(&mut self, local: &str, path: &str) -> Option<String>;

    /// The values converted to f64 by the library, with the `units` and `calendar` attributes.
    fn read_f64(&mut self, local: &str, path: &str) -> Result<TimeValues, OracleError>;

    /// Global attribute `name` of the file, as JSON (text and numbers; one-element lists as their
    /// element); None when absent or of another type.
    fn global_attribute(&mut self, local: &str, name: &str) -> Option<serde_json::Value>;
}

/// The oracle a verdict names for an HDF4 szip data set, whose values libaec decodes (Debian's
/// libhdf4 has no szip).
pub(crate) const LIBAEC: &str = "szip decoded by libaec";
