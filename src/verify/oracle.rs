//! The oracle: a variable of a source file read through libnetcdf (which reads HDF5 through libhdf5),
//! or through libhdf5 itself for HDF5 datasets libnetcdf does not list, or through libhdf4 for HDF4
//! files (libmfhdfalt: libhdf4 built without its netCDF-2 API, see `hdf4`).
//!
//! Everything under `verify/oracle/` calls the C libraries; the rest of `verify` does not. It runs in
//! the `vzarr-oracle` worker (`serve`), or in this process for [`crate::verify::OracleMode::InProcess`].

mod hdf4;
mod hdf5_fallback;
mod hdf5_memory;
mod hdf5_text_struct;
mod netcdf_lookup;
mod serve;

pub use serve::serve_oracle;

use std::collections::VecDeque;
use std::sync::Arc;

use netcdf::{Extent, Extents};

use super::backend::{Backend, Hdf5Facts, OracleError, LIBAEC};
use hdf5_fallback::Hdf5Dataset;
use netcdf_lookup::with_variable;

/// Source files kept open at once by [`OracleFiles`].
const OPEN_FILES: usize = 16;

/// The most recently used source files, open: verifying 20,000 variables of one file opens it once
/// (opening a NetCDF-4 file reads all of its metadata, so one open per variable is quadratic).
#[derive(Default)]
pub(crate) struct OracleFiles {
    open: VecDeque<(String, Arc<netcdf::File>)>,
}

impl OracleFiles {
    /// Dataset `path` of the HDF5 file at `location`, read by libhdf5 alone (what the oracle falls
    /// back to when libnetcdf crashed on the file).
    pub(crate) fn hdf5_variable(&mut self, location: &str, path: &str) -> Result<OracleVariable, netcdf::Error> {
        netcdf_lookup::check_path(path)?;
        let local = crate::source::local_path(location).unwrap_or_else(|| location.into());
        let dataset = Hdf5Dataset::open(&local, path)?;
        Ok(OracleVariable { file: None, path: path.to_string(), hdf5: Some(dataset), hdf4: None, local: None })
    }

    /// The first filter of dataset `path` of the HDF5 file at `location` that this libhdf5 cannot
    /// apply (`filter 305 (LZO)`), if any.
    pub(crate) fn missing_filter(&mut self, location: &str, path: &str) -> Option<String> {
        let local = crate::source::local_path(location)?;
        Hdf5Dataset::open(&local, path).ok()?.missing_filter()
    }

    /// Variable `path` (`grp/var`) of the file at `location`, opening the file unless it is open.
    pub(crate) fn variable(&mut self, location: &str, path: &str) -> Result<OracleVariable, netcdf::Error> {
        netcdf_lookup::check_path(path)?;
        let local = crate::source::local_path(location).unwrap_or_else(|| location.into());
        if matches!(crate::scan::detect_format(&local), Ok(crate::scan::FileFormat::Hdf4)) {
            let hdf4 = Some(hdf4::Hdf4Dataset::open(&local, path)?);
            return Ok(OracleVariable { file: None, path: path.to_string(), hdf5: None, hdf4, local: None });
        }
        let file = match self.file(location) {
            Ok(file) => file,
            // libnetcdf refuses some whole HDF5 files (an external link to a missing file, a dataset
            // with a null dataspace): libhdf5 reads their datasets.
            Err(refused) => {
                let dataset = Hdf5Dataset::open(&local, path).map_err(|_| refused)?;
                return Ok(OracleVariable {
                    file: None,
                    path: path.to_string(),
                    hdf5: Some(dataset),
                    hdf4: None,
                    local: None,
                });
            }
        };
        let local = crate::source::local_path(location);
        let mut oracle = OracleVariable { file: Some(file), path: path.to_string(), hdf5: None, hdf4: None, local };
        use netcdf::types::{FloatType, NcVariableType};
        match oracle.read(|var| match var.vartype() {
            NcVariableType::String => Ok(Some(Hdf5Dataset::is_fixed_length_string as fn(&Hdf5Dataset) -> bool)),
            NcVariableType::Float(FloatType::F32) => Ok(Some(Hdf5Dataset::is_half_float as fn(&Hdf5Dataset) -> bool)),
            NcVariableType::Compound(_) | NcVariableType::Opaque(_) => {
                Ok(Some(Hdf5Dataset::is_compound_or_opaque as fn(&Hdf5Dataset) -> bool))
            }
            _ => Ok(None),
        }) {
            Err(missing) => {
                // A dataset libnetcdf does not list (an enum or complex compound of a plain HDF5 file):
                // libhdf5 reads it.
                let local = crate::source::local_path(location).ok_or(missing)?;
                oracle.hdf5 = Some(Hdf5Dataset::open(&local, path)?);
            }
            Ok(Some(shown_otherwise)) => {
                // libnetcdf shows an HDF5 fixed-length string dataset as netCDF strings (pointers),
                // a half-float one as float32 and compounds with C alignment padding; vzarr stores
                // fixed-width strings, float16 and packed structs, which libhdf5 reads as they are.
                let local = crate::source::local_path(location);
                let dataset = local.and_then(|local| Hdf5Dataset::open(&local, path).ok());
                oracle.hdf5 = dataset.filter(shown_otherwise);
            }
            Ok(None) => {}
        }
        Ok(oracle)
    }
}

impl OracleFiles {
    /// The file at `location` opened by libnetcdf: the open one, or opened now (and kept among the
    /// [`OPEN_FILES`] most recently used).
    fn file(&mut self, location: &str) -> Result<Arc<netcdf::File>, netcdf::Error> {
        if let Some(i) = self.open.iter().position(|(l, _)| l == location) {
            let entry = self.open.remove(i).ok_or_else(|| netcdf::Error::Str("oracle cache".into()))?;
            let file = entry.1.clone();
            self.open.push_front(entry);
            return Ok(file);
        }
        quiet_hdf5();
        let local = crate::source::local_path(location).unwrap_or_else(|| location.into());
        let file = Arc::new(netcdf::open(&local)?);
        crate::verify::opens::add_opens(1);
        self.open.push_front((location.to_string(), file.clone()));
        self.open.truncate(OPEN_FILES);
        Ok(file)
    }

    /// Global attribute `name` of the file at `location`, read by libnetcdf from the file as it is
    /// open for its variables, as JSON.
    fn global_attribute(&mut self, location: &str, name: &str) -> Option<serde_json::Value> {
        crate::source::local_path(location)?;
        let file = self.file(location).ok()?;
        quiet_hdf5();
        let value = file.attribute(name)?.value().ok()?;
        attribute_json(value)
    }

    /// Closes the file at `location` if it is open (before its temporary copy is removed: an open
    /// file keeps its disk space).
    pub(crate) fn forget(&mut self, location: &str) {
        self.open.retain(|(l, _)| l != location);
        hdf4::forget(location);
    }
}

/// An open source variable.
pub(crate) struct OracleVariable {
    /// The file opened by libnetcdf; None for an HDF4 file, or when libnetcdf refused it and libhdf5
    /// reads the dataset.
    file: Option<Arc<netcdf::File>>,
    path: String,
    /// The dataset, read by libhdf5, when libnetcdf does not list the variable.
    hdf5: Option<Hdf5Dataset>,
    /// The data set of an HDF4 file, read by libhdf4.
    hdf4: Option<hdf4::Hdf4Dataset>,
    /// The local file libnetcdf opened: libhdf5 reads the dataset from it where libnetcdf refuses
    /// this one variable (`Index exceeds dimension bound`), as for files libnetcdf refuses whole.
    local: Option<std::path::PathBuf>,
}

impl OracleVariable {
    /// `netcdf`'s answer, or where libnetcdf refused, `hdf5` applied to the dataset as libhdf5 reads it
    /// (libnetcdf's refusal stands when libhdf5 cannot open the dataset: a NetCDF-3 file).
    fn or_hdf5<T>(
        &self,
        netcdf: Result<T, netcdf::Error>,
        hdf5: impl FnOnce(&Hdf5Dataset) -> Result<T, netcdf::Error>,
    ) -> Result<T, netcdf::Error> {
        let refused = match netcdf {
            Ok(answer) => return Ok(answer),
            Err(refused) => refused,
        };
        let Some(dataset) = self.local.as_ref().and_then(|local| Hdf5Dataset::open(local, &self.path).ok()) else {
            return Err(refused);
        };
        hdf5(&dataset).map_err(|e| netcdf::Error::Str(format!("libnetcdf: {refused}; then {e}")))
    }

    fn read<T>(&self, f: impl FnOnce(&netcdf::Variable<'_>) -> Result<T, netcdf::Error>) -> Result<T, netcdf::Error> {
        // libhdf5 keeps its error-printing switch per thread: the reading thread may not be the opening one.
        quiet_hdf5();
        let file = self.file.as_ref().ok_or_else(|| netcdf::Error::Str("libnetcdf cannot open the file".into()))?;
        with_variable(file, &self.path, f)?.ok_or_else(|| netcdf::Error::Str(format!("no variable {}", self.path)))
    }

    /// Reads `counts` indices from `starts` along the first dimensions and everything along the
    /// others (everything for a scalar), as native-endian bytes in C order.
    pub(crate) fn read_box(&self, starts: &[u64], counts: &[u64]) -> Result<Vec<u8>, netcdf::Error> {
        if let Some(dataset) = &self.hdf4 {
            return dataset.read_box(starts, counts);
        }
        if let Some(dataset) = &self.hdf5 {
            return dataset.read_box(starts, counts);
        }
        let netcdf = self.read(|var| {
            let dims = var.dimensions();
            if dims.is_empty() {
                return var.get_raw_values(..);
            }
            if starts.len() != counts.len() || starts.len() > dims.len() {
                return Err(netcdf::Error::Str(format!("a box of rank {} for rank {}", starts.len(), dims.len())));
            }
            // Dimensions the box leaves out (a char variable's string length, folded into the
            // store's elements) are read whole.
            let extents: Vec<Extent> = dims
                .iter()
                .enumerate()
                .map(|(d, dim)| match (starts.get(d), counts.get(d)) {
                    (Some(&s), Some(&c)) => (s as usize..(s + c) as usize).into(),
                    _ => (0..dim.len()).into(),
                })
                .collect();
            var.get_raw_values(Extents::from(extents))
        });
        self.or_hdf5(netcdf, |dataset| dataset.read_box(starts, counts))
    }

    /// The variable's shape and element size in bytes, as libnetcdf reports them.
    pub(crate) fn shape(&self) -> Result<(Vec<u64>, usize), netcdf::Error> {
        if let Some(dataset) = &self.hdf4 {
            return dataset.shape();
        }
        if let Some(dataset) = &self.hdf5 {
            return dataset.shape();
        }
        let netcdf = self.read(|var| {
            let dims = var.dimensions().iter().map(|d| d.len() as u64).collect();
            Ok((dims, var.vartype().size()))
        });
        self.or_hdf5(netcdf, Hdf5Dataset::shape)
    }

    /// The variable's element type in the source, as vzarr names it, when it is a plain number
    /// (an integer or a float); `None` for every other type (text, compounds, enums, opaque) and
    /// where the library cannot tell. verify compares a store's type with it: bytes alone do not tell
    /// a float32 from an int32.
    pub(crate) fn numeric_type(&self) -> Option<crate::metadata::DataType> {
        if let Some(dataset) = &self.hdf4 {
            return dataset.numeric_type();
        }
        if let Some(dataset) = &self.hdf5 {
            return dataset.numeric_type();
        }
        use crate::metadata::DataType as D;
        use netcdf::types::{FloatType, IntType, NcVariableType};
        self.read(|var| {
            Ok(match var.vartype() {
                NcVariableType::Int(int) => Some(match int {
                    IntType::I8 => D::Int8,
                    IntType::U8 => D::UInt8,
                    IntType::I16 => D::Int16,
                    IntType::U16 => D::UInt16,
                    IntType::I32 => D::Int32,
                    IntType::U32 => D::UInt32,
                    IntType::I64 => D::Int64,
                    IntType::U64 => D::UInt64,
                }),
                NcVariableType::Float(FloatType::F32) => Some(D::Float32),
                NcVariableType::Float(FloatType::F64) => Some(D::Float64),
                _ => None,
            })
        })
        .ok()
        .flatten()
    }

    /// What libhdf5 tells of the HDF5 dataset behind this variable, from one open of it (none for
    /// NetCDF-3 and HDF4 files, or whenever libhdf5 cannot tell).
    pub(crate) fn hdf5_facts(&self, location: &str) -> Hdf5Facts {
        if let Some(dataset) = &self.hdf5 {
            // Read through libhdf5 already: its shape is the extent.
            let text_widths = dataset.text_widths();
            return Hdf5Facts { fill_time_never: dataset.fill_time_never(), extent: None, text_widths };
        }
        if self.hdf4.is_some() {
            return Hdf5Facts::default();
        }
        let opened = crate::source::local_path(location).and_then(|local| Hdf5Dataset::open(&local, &self.path).ok());
        opened.map_or_else(Hdf5Facts::default, |d| Hdf5Facts {
            fill_time_never: d.fill_time_never(),
            extent: Some(d.extent()),
            text_widths: Vec::new(),
        })
    }

    /// The whole variable, as native-endian bytes.
    pub(crate) fn read_all(&self) -> Result<Vec<u8>, netcdf::Error> {
        if let Some(dataset) = &self.hdf4 {
            return dataset.read_all();
        }
        if let Some(dataset) = &self.hdf5 {
            return dataset.read_all();
        }
        self.or_hdf5(self.read(|var| var.get_raw_values(..)), Hdf5Dataset::read_all)
    }

    /// Every string of a netCDF `string` variable, in C order; for a dataset of object references
    /// (which libnetcdf does not list), the paths libhdf5 dereferences them to.
    pub(crate) fn read_strings(&self) -> Result<Vec<String>, netcdf::Error> {
        if let Some(dataset) = &self.hdf5 {
            return dataset.read_reference_names();
        }
        self.read(|var| {
            let shape: Vec<u64> = var.dimensions().iter().map(|d| d.len() as u64).collect();
            let total: u64 = shape.iter().product();
            if total > crate::metadata::MAX_STRING_ELEMENTS {
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
    pub(crate) fn read_f64(&self) -> Result<crate::verify::TimeValues, netcdf::Error> {
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

impl From<netcdf::Error> for OracleError {
    fn from(e: netcdf::Error) -> Self {
        OracleError::Library(e.to_string())
    }
}

impl Backend for OracleFiles {
    fn forget(&mut self, local: &str) {
        OracleFiles::forget(self, local);
    }

    fn read(&mut self, local: &str, path: &str, starts: &[u64], counts: &[u64]) -> Result<Vec<u8>, OracleError> {
        let variable = self.variable(local, path)?;
        Ok(if starts.is_empty() { variable.read_all()? } else { variable.read_box(starts, counts)? })
    }

    fn read_strings(&mut self, local: &str, path: &str) -> Result<Vec<String>, OracleError> {
        Ok(self.variable(local, path)?.read_strings()?)
    }

    fn numeric_type(&mut self, local: &str, path: &str) -> Option<crate::metadata::DataType> {
        self.variable(local, path).ok()?.numeric_type()
    }

    fn shape(&mut self, local: &str, path: &str) -> Result<(Vec<u64>, usize), OracleError> {
        Ok(self.variable(local, path)?.shape()?)
    }

    fn hdf5_facts(&mut self, local: &str, path: &str) -> Result<Hdf5Facts, OracleError> {
        Ok(self.variable(local, path)?.hdf5_facts(local))
    }

    fn other_oracle(&mut self, local: &str, path: &str) -> Option<&'static str> {
        other_oracle(local, path)
    }

    fn missing_filter(&mut self, local: &str, path: &str) -> Option<String> {
        OracleFiles::missing_filter(self, local, path)
    }

    fn read_f64(&mut self, local: &str, path: &str) -> Result<crate::verify::TimeValues, OracleError> {
        Ok(self.variable(local, path)?.read_f64()?)
    }

    fn global_attribute(&mut self, local: &str, name: &str) -> Option<serde_json::Value> {
        OracleFiles::global_attribute(self, local, name)
    }
}

/// The oracle of `path` of `location` when not the source's own library: libaec for the szip data
/// sets of HDF4 files, which Debian's libhdf4 cannot decode.
fn other_oracle(location: &str, path: &str) -> Option<&'static str> {
    let local = crate::source::local_path(location)?;
    if !matches!(crate::scan::detect_format(&local), Ok(crate::scan::FileFormat::Hdf4)) {
        return None;
    }
    let dataset = hdf4::Hdf4Dataset::open(&local, path).ok()?;
    dataset.decoded_by_libaec().then_some(LIBAEC)
}

/// Turns off libhdf5's printing of error stacks on the calling thread (libhdf5 keeps that setting per
/// thread; vzarr reports errors itself, and libnetcdf probes for optional attributes that are absent).
fn quiet_hdf5() {
    ::hdf5::silence_errors(true);
}

/// A text or numeric attribute as JSON (one-element lists as their element); None for others.
fn attribute_json(value: netcdf::AttributeValue) -> Option<serde_json::Value> {
    use netcdf::AttributeValue as A;
    use serde_json::Value;
    fn one<T: Clone>(v: &[T]) -> Option<T> {
        (v.len() == 1).then(|| v[0].clone())
    }
    Some(match value {
        A::Str(s) => Value::from(s),
        A::Strs(v) => Value::from(one(&v)?),
        A::Uchar(v) => Value::from(v),
        A::Schar(v) => Value::from(v),
        A::Ushort(v) => Value::from(v),
        A::Short(v) => Value::from(v),
        A::Uint(v) => Value::from(v),
        A::Int(v) => Value::from(v),
        A::Ulonglong(v) => Value::from(v),
        A::Longlong(v) => Value::from(v),
        A::Float(v) => Value::from(f64::from(v)),
        A::Double(v) => Value::from(v),
        A::Ints(v) => Value::from(one(&v)?),
        A::Shorts(v) => Value::from(one(&v)?),
        A::Longlongs(v) => Value::from(one(&v)?),
        A::Doubles(v) => Value::from(one(&v)?),
        A::Floats(v) => Value::from(f64::from(one(&v)?)),
        _ => return None,
    })
}
