//! The oracle: a variable of a source file read through libnetcdf (which reads HDF5 through libhdf5),
//! or through libhdf5 itself for HDF5 datasets libnetcdf does not list, or through libhdf4 for HDF4
//! files (with the `hdf4-oracle` feature).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use netcdf::{Extent, Extents};

use super::hdf5_fallback::Hdf5Dataset;
use super::netcdf_lookup::with_variable;

/// Source files kept open at once by [`OracleFiles`].
const OPEN_FILES: usize = 16;

/// Source files opened by the oracle in this process (for tests: `verify` opens each source once,
/// not once per variable).
static OPENS: AtomicU64 = AtomicU64::new(0);

/// Number of source files the oracle opened in this process and in the oracle workers it ended.
pub(crate) fn oracle_opens() -> u64 {
    OPENS.load(Ordering::Relaxed)
}

/// Counts `n` files opened by an oracle worker.
pub(crate) fn add_opens(n: u64) {
    OPENS.fetch_add(n, Ordering::Relaxed);
}

/// The most recently used source files, open: verifying 20,000 variables of one file opens it once
/// (opening a NetCDF-4 file reads all of its metadata, so one open per variable is quadratic).
#[derive(Default)]
pub(crate) struct OracleFiles {
    open: VecDeque<(String, Arc<netcdf::File>)>,
}

impl OracleFiles {
    /// Variable `path` (`grp/var`) of the file at `location`, opening the file unless it is open.
    pub(crate) fn variable(&mut self, location: &str, path: &str) -> Result<OracleVariable, netcdf::Error> {
        let local = crate::source::local_path(location).unwrap_or_else(|| location.into());
        if is_hdf4(&local) {
            #[cfg(feature = "hdf4-oracle")]
            {
                let hdf4 = Some(super::hdf4_oracle::Hdf4Dataset::open(&local, path)?);
                return Ok(OracleVariable { file: None, path: path.to_string(), hdf5: None, hdf4 });
            }
            #[cfg(not(feature = "hdf4-oracle"))]
            return Err(netcdf::Error::Str(
                "an HDF4 source: libnetcdf cannot read it; vzarr reads it with libhdf4 when built with the \
                 hdf4-oracle feature"
                    .into(),
            ));
        }
        let file = match self.open.iter().position(|(l, _)| l == location) {
            Some(i) => {
                let entry = self.open.remove(i).ok_or_else(|| netcdf::Error::Str("oracle cache".into()))?;
                let file = entry.1.clone();
                self.open.push_front(entry);
                file
            }
            None => {
                crate::verify::quiet_hdf5();
                let path = crate::source::local_path(location).unwrap_or_else(|| location.into());
                let file = Arc::new(netcdf::open(path)?);
                OPENS.fetch_add(1, Ordering::Relaxed);
                self.open.push_front((location.to_string(), file.clone()));
                self.open.truncate(OPEN_FILES);
                file
            }
        };
        let mut oracle = OracleVariable {
            file: Some(file),
            path: path.to_string(),
            hdf5: None,
            #[cfg(feature = "hdf4-oracle")]
            hdf4: None,
        };
        if let Err(missing) = oracle.read(|_| Ok(())) {
            // A dataset libnetcdf does not list (an enum or complex compound of a plain HDF5 file):
            // libhdf5 reads it.
            let local = crate::source::local_path(location).ok_or(missing)?;
            oracle.hdf5 = Some(Hdf5Dataset::open(&local, path)?);
        }
        Ok(oracle)
    }
}

impl OracleFiles {
    /// Closes the file at `location` if it is open (before its temporary copy is removed: an open
    /// file keeps its disk space).
    pub(crate) fn forget(&mut self, location: &str) {
        self.open.retain(|(l, _)| l != location);
    }
}

/// Whether the file at `path` starts with the HDF4 signature.
fn is_hdf4(path: &std::path::Path) -> bool {
    use std::io::Read;
    let mut magic = [0u8; 4];
    std::fs::File::open(path).and_then(|mut f| f.read_exact(&mut magic)).is_ok() && magic == [0x0e, 0x03, 0x13, 0x01]
}

/// Values with their `units` and `calendar` attributes.
pub(crate) type TimeValues = (Vec<f64>, Option<String>, Option<String>);

/// An open source variable.
pub(crate) struct OracleVariable {
    /// The file, open in libnetcdf (`None` for an HDF4 file).
    file: Option<Arc<netcdf::File>>,
    path: String,
    /// The dataset, read by libhdf5, when libnetcdf does not list the variable.
    hdf5: Option<Hdf5Dataset>,
    /// The data set of an HDF4 file, read by libhdf4.
    #[cfg(feature = "hdf4-oracle")]
    hdf4: Option<super::hdf4_oracle::Hdf4Dataset>,
}

impl OracleVariable {
    fn read<T>(&self, f: impl FnOnce(&netcdf::Variable<'_>) -> Result<T, netcdf::Error>) -> Result<T, netcdf::Error> {
        // libhdf5 keeps its error-printing switch per thread: the reading thread may not be the opening one.
        crate::verify::quiet_hdf5();
        let file =
            self.file.as_ref().ok_or_else(|| netcdf::Error::Str(format!("{}: not a netCDF variable", self.path)))?;
        with_variable(file, &self.path, f)?.ok_or_else(|| netcdf::Error::Str(format!("no variable {}", self.path)))
    }

    /// Reads `[start, start + count)` along dimension `dim` and everything along the others (everything
    /// for a scalar), as native-endian bytes.
    pub(crate) fn read_slab(&self, dim: usize, start: u64, count: u64) -> Result<Vec<u8>, netcdf::Error> {
        #[cfg(feature = "hdf4-oracle")]
        if let Some(dataset) = &self.hdf4 {
            return dataset.read_slab(dim, start, count);
        }
        if let Some(dataset) = &self.hdf5 {
            return dataset.read_slab(dim, start, count);
        }
        self.read(|var| {
            let dims = var.dimensions();
            if dims.is_empty() {
                return var.get_raw_values(..);
            }
            let mut extents: Vec<Extent> = dims.iter().map(|d| (0..d.len()).into()).collect();
            extents[dim] = (start as usize..(start + count) as usize).into();
            var.get_raw_values(Extents::from(extents))
        })
    }

    /// The variable's shape and element size in bytes, as libnetcdf reports them.
    pub(crate) fn shape(&self) -> Result<(Vec<u64>, usize), netcdf::Error> {
        #[cfg(feature = "hdf4-oracle")]
        if let Some(dataset) = &self.hdf4 {
            return dataset.shape();
        }
        if let Some(dataset) = &self.hdf5 {
            return dataset.shape();
        }
        self.read(|var| {
            let dims = var.dimensions().iter().map(|d| d.len() as u64).collect();
            Ok((dims, var.vartype().size()))
        })
    }

    /// The whole variable, as native-endian bytes.
    pub(crate) fn read_all(&self) -> Result<Vec<u8>, netcdf::Error> {
        #[cfg(feature = "hdf4-oracle")]
        if let Some(dataset) = &self.hdf4 {
            return dataset.read_all();
        }
        if let Some(dataset) = &self.hdf5 {
            return dataset.read_all();
        }
        self.read(|var| var.get_raw_values(..))
    }

    /// Every string of a netCDF `string` variable, in C order.
    pub(crate) fn read_strings(&self) -> Result<Vec<String>, netcdf::Error> {
        self.read(|var| {
            let shape: Vec<u64> = var.dimensions().iter().map(|d| d.len() as u64).collect();
            let total: u64 = shape.iter().product();
            if total > crate::read::MAX_STRING_ELEMENTS {
                return Err(netcdf::Error::Str(format!("{total} strings are more than verify compares")));
            }
            if shape.is_empty() {
                return Ok(vec![var.get_string(..)?]);
            }
            (0..total)
                .map(|i| {
                    let index: Vec<usize> = crate::ndcopy::unravel(i, &shape).iter().map(|&x| x as usize).collect();
                    var.get_string(index.as_slice())
                })
                .collect()
        })
    }

    /// The variable's values converted to f64 by libnetcdf, with its `units` and `calendar` attributes.
    pub(crate) fn read_f64(&self) -> Result<TimeValues, netcdf::Error> {
        #[cfg(feature = "hdf4-oracle")]
        if let Some(dataset) = &self.hdf4 {
            return dataset.read_f64();
        }
        self.read(|var| {
            let text = |name: &str| match var.attribute_value(name) {
                Some(Ok(netcdf::AttributeValue::Str(s))) => Some(s),
                _ => None,
            };
            Ok((var.get_values::<f64, _>(..)?, text("units"), text("calendar")))
        })
    }
}
