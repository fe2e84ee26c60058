//! The oracle: a variable of a source file read through libnetcdf (which reads HDF5 through libhdf5).

use netcdf::{Extent, Extents};

use crate::scan::netcdf_meta::with_variable;

/// Values with their `units` and `calendar` attributes.
pub(crate) type TimeValues = (Vec<f64>, Option<String>, Option<String>);

/// An open source variable.
pub(crate) struct OracleVariable {
    file: netcdf::File,
    path: String,
}

impl OracleVariable {
    /// Opens `path` (`grp/var`) in the file at `location`.
    pub(crate) fn open(location: &str, path: &str) -> Result<Self, netcdf::Error> {
        crate::scan::quiet_hdf5();
        let file = netcdf::open(location)?;
        let oracle = OracleVariable { file, path: path.to_string() };
        oracle.read(|_| Ok(()))?;
        Ok(oracle)
    }

    /// Another variable of the same file.
    pub(crate) fn sibling(&self, path: &str) -> Result<OracleVariable, netcdf::Error> {
        let location = self.file.path()?;
        OracleVariable::open(&location.display().to_string(), path)
    }

    fn read<T>(&self, f: impl FnOnce(&netcdf::Variable<'_>) -> Result<T, netcdf::Error>) -> Result<T, netcdf::Error> {
        // libhdf5 keeps its error-printing switch per thread: the reading thread may not be the opening one.
        crate::scan::quiet_hdf5();
        with_variable(&self.file, &self.path, f)?
            .ok_or_else(|| netcdf::Error::Str(format!("no variable {}", self.path)))
    }

    /// Reads `[start, start + count)` along dimension `dim` and everything along the others (everything
    /// for a scalar), as native-endian bytes.
    pub(crate) fn read_slab(&self, dim: usize, start: u64, count: u64) -> Result<Vec<u8>, netcdf::Error> {
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

    /// The whole variable, as native-endian bytes.
    pub(crate) fn read_all(&self) -> Result<Vec<u8>, netcdf::Error> {
        self.read(|var| var.get_raw_values(..))
    }

    /// The variable's values converted to f64 by libnetcdf, with its `units` and `calendar` attributes.
    pub(crate) fn read_f64(&self) -> Result<TimeValues, netcdf::Error> {
        self.read(|var| {
            let text = |name: &str| match var.attribute_value(name) {
                Some(Ok(netcdf::AttributeValue::Str(s))) => Some(s),
                _ => None,
            };
            Ok((var.get_values::<f64, _>(..)?, text("units"), text("calendar")))
        })
    }
}
