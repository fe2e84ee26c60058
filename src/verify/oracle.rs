//! The oracle: a variable of a source file read through libnetcdf (which reads HDF5 through libhdf5),
//! or through libhdf5 itself for HDF5 datasets libnetcdf does not list, or through libhdf4 for HDF4
//! files (libmfhdfalt: libhdf4 built without its netCDF-2 API, see `hdf4_oracle`).

use std::collections::VecDeque;
use std::sync::Arc;

use netcdf::{Extent, Extents};

use super::hdf5_fallback::Hdf5Dataset;
use super::netcdf_lookup::with_variable;

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
        super::netcdf_lookup::check_path(path)?;
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
        super::netcdf_lookup::check_path(path)?;
        let local = crate::source::local_path(location).unwrap_or_else(|| location.into());
        if matches!(crate::scan::detect_format(&local), Ok(crate::scan::FileFormat::Hdf4)) {
            let hdf4 = Some(super::hdf4_oracle::Hdf4Dataset::open(&local, path)?);
            return Ok(OracleVariable { file: None, path: path.to_string(), hdf5: None, hdf4, local: None });
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
                let local = crate::source::local_path(location).unwrap_or_else(|| location.into());
                let file = match netcdf::open(&local) {
                    Ok(file) => Arc::new(file),
                    // libnetcdf refuses some whole HDF5 files (an external link to a missing file, a
                    // dataset with a null dataspace): libhdf5 reads their datasets.
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
                super::opens::add_opens(1);
                self.open.push_front((location.to_string(), file.clone()));
                self.open.truncate(OPEN_FILES);
                file
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
    /// Closes the file at `location` if it is open (before its temporary copy is removed: an open
    /// file keeps its disk space).
    pub(crate) fn forget(&mut self, location: &str) {
        self.open.retain(|(l, _)| l != location);
        super::hdf4_oracle::forget(location);
    }
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

/// An open source variable.
pub(crate) struct OracleVariable {
    /// The file opened by libnetcdf; None for an HDF4 file, or when libnetcdf refused it and libhdf5
    /// reads the dataset.
    file: Option<Arc<netcdf::File>>,
    path: String,
    /// The dataset, read by libhdf5, when libnetcdf does not list the variable.
    hdf5: Option<Hdf5Dataset>,
    /// The data set of an HDF4 file, read by libhdf4.
    hdf4: Option<super::hdf4_oracle::Hdf4Dataset>,
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
        crate::verify::quiet_hdf5();
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
    pub(crate) fn read_f64(&self) -> Result<super::TimeValues, netcdf::Error> {
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
