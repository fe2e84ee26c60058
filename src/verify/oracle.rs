//! The oracle: a variable of a source file read through libnetcdf (which reads HDF5 through libhdf5).

use netcdf::{Extent, Extents};

/// An open source variable.
pub(crate) struct OracleVariable {
    file: netcdf::File,
    path: String,
}

impl OracleVariable {
    /// Opens `path` (`grp/var`) in the file at `location`.
    pub(crate) fn open(location: &str, path: &str) -> Result<Self, netcdf::Error> {
        let file = netcdf::open(location)?;
        let oracle = OracleVariable {
            file,
            path: path.to_string(),
        };
        oracle.with_variable(|_| Ok(()))?;
        Ok(oracle)
    }

    fn with_variable<T>(
        &self,
        f: impl FnOnce(&netcdf::Variable<'_>) -> Result<T, netcdf::Error>,
    ) -> Result<T, netcdf::Error> {
        let missing = || netcdf::Error::Str(format!("no variable {}", self.path));
        let (groups, name) = self.path.rsplit_once('/').unwrap_or(("", &self.path));
        if groups.is_empty() {
            let var = self.file.variable(name).ok_or_else(missing)?;
            return f(&var);
        }
        let root = self.file.root().ok_or_else(missing)?;
        let segments: Vec<&str> = groups.split('/').collect();
        in_group(&root, &segments, name, f)?.ok_or_else(missing)
    }
}

/// Runs `f` on variable `name` of the group reached from `group` through `segments`.
fn in_group<T>(
    group: &netcdf::Group<'_>,
    segments: &[&str],
    name: &str,
    f: impl FnOnce(&netcdf::Variable<'_>) -> Result<T, netcdf::Error>,
) -> Result<Option<T>, netcdf::Error> {
    match segments.split_first() {
        None => group.variable(name).map(|v| f(&v)).transpose(),
        Some((first, rest)) => match group.group(first) {
            Some(child) => in_group(&child, rest, name, f),
            None => Ok(None),
        },
    }
}

impl OracleVariable {
    /// Reads rows `[start, start + rows)` of the first dimension (everything for a scalar), as
    /// native-endian bytes.
    pub(crate) fn read_rows(&mut self, start: u64, rows: u64) -> Result<Vec<u8>, netcdf::Error> {
        self.with_variable(|var| {
            let dims = var.dimensions();
            if dims.is_empty() {
                return var.get_raw_values(..);
            }
            let mut extents: Vec<Extent> = dims.iter().map(|d| (0..d.len()).into()).collect();
            extents[0] = (start as usize..(start + rows) as usize).into();
            var.get_raw_values(Extents::from(extents))
        })
    }
}
