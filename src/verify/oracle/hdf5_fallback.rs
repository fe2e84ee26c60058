//! The oracle's second reader: libhdf5 itself, for HDF5 datasets libnetcdf does not list (enums and
//! complex compounds of files not written by libnetcdf: PyTables, h5py) and for fixed-length string
//! datasets, which libnetcdf shows as variable-length strings. Values are read with `H5Dread` into
//! the dataset's native type, so they compare byte for byte with vzarr's native-order reads: vzarr
//! stores enums as their integer type, complex compounds as Zarr complex types and fixed-length
//! strings as fixed-width bytes, whose native forms are libhdf5's native forms (a string type's
//! native form is itself: no conversion, the stored bytes with their padding). Compounds are read
//! into a memory type built in `hdf5_memory`: each member's native form, in file offset order, no padding (nested
//! compounds likewise), which is the layout of vzarr's `struct` elements in native byte order;
//! libhdf5 picks each member by name and converts it from the file's byte order itself; an array
//! member is read as an array of its base's memory type (a packed compound for an array of
//! compounds), whose bytes are those of the nested structs vzarr maps it to. A dataset of
//! an HDF5 array datatype (class 10) is shown as vzarr stores it: the array's dimensions (nested
//! arrays flattened) follow the dataset's, elements of its base type; libhdf5 reads the dataset's
//! boxes into the native array type, whose bytes are those elements in C order. Compounds with
//! variable-length string or object reference members are read by `hdf5_text_struct`.

use std::path::Path;

use hdf5_sys::h5d::{H5Dget_space, H5Dget_type, H5Dread};
use hdf5_sys::h5p::H5P_DEFAULT;
use hdf5_sys::h5s::{H5S_seloper_t, H5Sclose, H5Screate_simple, H5Sselect_hyperslab, H5S_ALL};
use hdf5_sys::h5t::{H5Tclose, H5Tget_size};

use super::hdf5_memory::{array_dims, error, memory_type, reference_paths};
use super::hdf5_text_struct::TextValues;

/// Largest read (bytes) the fallback makes in one call: verify reads slabs of about 64 MiB.
const MAX_READ_BYTES: u64 = 1 << 32;

/// A dataset of an HDF5 file, opened by libhdf5.
pub(crate) struct Hdf5Dataset {
    dataset: hdf5::Dataset,
    /// For a compound with string or reference members: all its elements in vzarr's layout and the
    /// bytes of one (`hdf5_text_struct`), read once; None for any other dataset.
    text: std::sync::OnceLock<Result<Option<TextValues>, String>>,
}

impl Hdf5Dataset {
    /// Opens dataset `path` (`grp/name`) of `file`.
    pub(crate) fn open(file: &Path, path: &str) -> Result<Self, netcdf::Error> {
        let file = hdf5::File::open(file).map_err(error)?;
        let dataset = file.dataset(path).map_err(error)?;
        Ok(Hdf5Dataset { dataset, text: std::sync::OnceLock::new() })
    }

    /// The bytes of each text field of a compound with string or reference members as laid out here
    /// (each as wide as its longest value in this dataset); empty for any other dataset.
    pub(crate) fn text_widths(&self) -> Vec<u32> {
        self.text_values().ok().flatten().map(|t| t.widths.clone()).unwrap_or_default()
    }

    /// The elements of a compound with string or reference members, in vzarr's layout, and the
    /// bytes of one; None for any other dataset.
    fn text_values(&self) -> Result<Option<&TextValues>, netcdf::Error> {
        let read = self
            .text
            .get_or_init(|| super::hdf5_text_struct::read_text_compound(&self.dataset).map_err(|e| e.to_string()));
        read.as_ref().map(Option::as_ref).map_err(|e| netcdf::Error::Str(e.clone()))
    }

    /// Whether the dataset holds fixed-length strings (`H5T_STRING`, not variable-length).
    pub(crate) fn is_fixed_length_string(&self) -> bool {
        use hdf5_sys::h5t::{H5T_class_t, H5Tget_class, H5Tis_variable_str};
        // SAFETY: `t` is a valid datatype id for the duration of the call.
        self.file_type_is(|t| unsafe { H5Tget_class(t) == H5T_class_t::H5T_STRING && H5Tis_variable_str(t) == 0 })
    }

    /// Whether the dataset holds compound or opaque elements (which libnetcdf reads in its native
    /// form, with C alignment padding; vzarr stores them as packed structs and raw bytes).
    pub(crate) fn is_compound_or_opaque(&self) -> bool {
        use hdf5_sys::h5t::{H5T_class_t, H5Tget_class};
        // SAFETY: `t` is a valid datatype id for the duration of the call.
        self.file_type_is(|t| unsafe { matches!(H5Tget_class(t), H5T_class_t::H5T_COMPOUND | H5T_class_t::H5T_OPAQUE) })
    }

    /// Whether the dataset holds old-style object references (`H5T_STD_REF_OBJ`), which vzarr stores as
    /// the paths of the objects they point at.
    pub(crate) fn is_object_reference(&self) -> bool {
        use hdf5_sys::h5t::{H5T_class_t, H5Tequal, H5Tget_class, H5T_STD_REF_OBJ};
        // SAFETY: `t` is a valid datatype id for the duration of the call; H5T_STD_REF_OBJ is a
        // predefined type of the initialized library.
        self.file_type_is(|t| unsafe {
            H5Tget_class(t) == H5T_class_t::H5T_REFERENCE && H5Tequal(t, *H5T_STD_REF_OBJ) > 0
        })
    }

    /// The path of the object each object reference of the dataset points at, in C order, as libhdf5
    /// names the dereferenced object (`H5Rdereference` then `H5Iget_name`, as h5py's `f[ref].name`);
    /// the empty string for a null reference.
    pub(crate) fn read_reference_names(&self) -> Result<Vec<String>, netcdf::Error> {
        use hdf5::ObjectReference1;
        if !self.is_object_reference() {
            return Err(error("the dataset holds no object references"));
        }
        let references = self.dataset.read_raw::<ObjectReference1>().map_err(error)?;
        // SAFETY: `ObjectReference1` is `repr(transparent)` over `hobj_ref_t`, a file address.
        let addresses: Vec<u64> = references.iter().map(|r| unsafe { std::mem::transmute_copy(r) }).collect();
        reference_paths(&self.dataset.file().map_err(error)?, &addresses)
    }

    /// Whether the dataset holds 2-byte floats (which vzarr stores as `float16`).
    pub(crate) fn is_half_float(&self) -> bool {
        use hdf5_sys::h5t::{H5T_class_t, H5Tget_class};
        // SAFETY: `t` is a valid datatype id for the duration of the call.
        self.file_type_is(|t| unsafe { H5Tget_class(t) == H5T_class_t::H5T_FLOAT && H5Tget_size(t) == 2 })
    }

    /// The dataset's element type as vzarr names it when it is a plain integer or float (an HDF5
    /// array, enum, compound or string type is none).
    pub(crate) fn numeric_type(&self) -> Option<crate::metadata::DataType> {
        use crate::metadata::DataType as D;
        use hdf5_sys::h5t::{H5T_class_t, H5T_sign_t, H5Tget_class, H5Tget_sign};
        let mut answer = None;
        // SAFETY: `t` is a valid datatype id for the duration of the call.
        self.file_type_is(|t| unsafe {
            let (class, size) = (H5Tget_class(t), H5Tget_size(t));
            let signed = H5Tget_sign(t) == H5T_sign_t::H5T_SGN_2;
            answer = match (class, size, signed) {
                (H5T_class_t::H5T_INTEGER, 1, true) => Some(D::Int8),
                (H5T_class_t::H5T_INTEGER, 1, false) => Some(D::UInt8),
                (H5T_class_t::H5T_INTEGER, 2, true) => Some(D::Int16),
                (H5T_class_t::H5T_INTEGER, 2, false) => Some(D::UInt16),
                (H5T_class_t::H5T_INTEGER, 4, true) => Some(D::Int32),
                (H5T_class_t::H5T_INTEGER, 4, false) => Some(D::UInt32),
                (H5T_class_t::H5T_INTEGER, 8, true) => Some(D::Int64),
                (H5T_class_t::H5T_INTEGER, 8, false) => Some(D::UInt64),
                (H5T_class_t::H5T_FLOAT, 2, _) => Some(D::Float16),
                (H5T_class_t::H5T_FLOAT, 4, _) => Some(D::Float32),
                (H5T_class_t::H5T_FLOAT, 8, _) => Some(D::Float64),
                _ => None,
            };
            true
        });
        answer
    }

    /// `test` applied to the dataset's file type (false when libhdf5 cannot give it).
    fn file_type_is(&self, test: impl FnOnce(hdf5_sys::h5i::hid_t) -> bool) -> bool {
        let _guard = hdf5_sys::LOCK.lock();
        // SAFETY: the type id is created here and closed before returning.
        unsafe {
            let file_type = H5Dget_type(self.dataset.id());
            if file_type < 0 {
                return false;
            }
            let answer = test(file_type);
            H5Tclose(file_type);
            answer
        }
    }

    /// Whether the dataset's fill time is "never": libhdf5 leaves the elements of chunks never written
    /// as the caller's buffer held them (netCDF's `NOFILL` variables are such datasets).
    pub(crate) fn fill_time_never(&self) -> bool {
        use hdf5_sys::h5d::{H5D_fill_time_t, H5Dget_create_plist};
        use hdf5_sys::h5p::{H5Pclose, H5Pget_fill_time};
        let _guard = hdf5_sys::LOCK.lock();
        // SAFETY: the property list is created here and closed before returning; the fill time is
        // written into a local.
        unsafe {
            let plist = H5Dget_create_plist(self.dataset.id());
            if plist < 0 {
                return false;
            }
            let mut time = H5D_fill_time_t::H5D_FILL_TIME_IFSET;
            let status = H5Pget_fill_time(plist, &mut time);
            H5Pclose(plist);
            status >= 0 && time == H5D_fill_time_t::H5D_FILL_TIME_NEVER
        }
    }

    /// The first filter of the dataset's pipeline this libhdf5 cannot apply (no plugin for it), as
    /// `filter 305 (LZO)`: a source the oracle cannot decode, which `verify` reports as not provable
    /// here rather than as a difference.
    pub(crate) fn missing_filter(&self) -> Option<String> {
        use hdf5_sys::h5d::H5Dget_create_plist;
        use hdf5_sys::h5p::{H5Pclose, H5Pget_filter2, H5Pget_nfilters};
        use hdf5_sys::h5z::H5Zfilter_avail;
        let _guard = hdf5_sys::LOCK.lock();
        // SAFETY: the property list is created here and closed before returning; H5Pget_filter2
        // writes at most `name.len()` bytes of the name and no client values (`cd_nelmts` 0).
        unsafe {
            let plist = H5Dget_create_plist(self.dataset.id());
            if plist < 0 {
                return None;
            }
            let mut missing = None;
            for i in 0..H5Pget_nfilters(plist).clamp(0, 64) as u32 {
                let (mut flags, mut values, mut config) = (0u32, 0usize, 0u32);
                let mut name = [0 as std::ffi::c_char; 128];
                let id = H5Pget_filter2(
                    plist,
                    i,
                    &mut flags,
                    &mut values,
                    std::ptr::null_mut(),
                    name.len(),
                    name.as_mut_ptr(),
                    &mut config,
                );
                if id >= 0 && H5Zfilter_avail(id) <= 0 {
                    let name = std::ffi::CStr::from_ptr(name.as_ptr()).to_string_lossy().into_owned();
                    missing = Some(filter_description(id, &name));
                    break;
                }
            }
            H5Pclose(plist);
            missing
        }
    }

    /// The dataset's current extent (libhdf5's dataspace dimensions).
    pub(crate) fn extent(&self) -> Vec<u64> {
        self.dataset.shape().iter().map(|&n| n as u64).collect()
    }

    /// The dataset's shape and the size of one element of its native type; for an array datatype,
    /// the array's dimensions appended and the size of one element of its base type.
    pub(crate) fn shape(&self) -> Result<(Vec<u64>, usize), netcdf::Error> {
        let mut shape: Vec<u64> = self.dataset.shape().iter().map(|&n| n as u64).collect();
        if let Some(text) = self.text_values()? {
            return Ok((shape, text.size));
        }
        let _guard = hdf5_sys::LOCK.lock();
        // SAFETY: both type ids are created here and closed before returning.
        let (size, dims) = unsafe {
            let file_type = H5Dget_type(self.dataset.id());
            if file_type < 0 {
                return Err(error("H5Dget_type failed"));
            }
            let native = memory_type(file_type);
            let dims = array_dims(file_type);
            H5Tclose(file_type);
            if native < 0 {
                return Err(error("no native form of the dataset's type"));
            }
            let size = H5Tget_size(native);
            H5Tclose(native);
            (size, dims)
        };
        let count = dims.iter().product::<u64>().max(1) as usize;
        shape.extend(dims);
        Ok((shape, size / count))
    }

    /// Reads `counts` indices from `starts` along every axis (everything for a scalar), in native
    /// byte order and C order; for an array datatype the axes include the array's (see [`shape`]).
    ///
    /// [`shape`]: Hdf5Dataset::shape
    pub(crate) fn read_box(&self, starts: &[u64], counts: &[u64]) -> Result<Vec<u8>, netcdf::Error> {
        let (shape, size) = self.shape()?;
        let rank = self.dataset.shape().len();
        if shape.is_empty() {
            return self.read(None);
        }
        let inside = starts.len() == shape.len()
            && counts.len() == shape.len()
            && starts.iter().zip(counts).zip(&shape).all(|((&s, &c), &n)| s.checked_add(c).is_some_and(|e| e <= n));
        if !inside {
            return Err(error(format!("box {starts:?} + {counts:?} is outside the dataset's shape {shape:?}")));
        }
        let slab = (rank > 0).then(|| (&starts[..rank], &counts[..rank]));
        let read = self.read(slab)?;
        if starts[rank..].iter().zip(&counts[rank..]).zip(&shape[rank..]).all(|((&s, &c), &n)| s == 0 && c == n) {
            return Ok(read);
        }
        // Part of an array datatype's elements: the box out of the whole elements read.
        use crate::ndcopy::{copy_box, DimCopy};
        let read_shape: Vec<u64> = counts[..rank].iter().chain(&shape[rank..]).copied().collect();
        let dims: Vec<DimCopy> = (0..shape.len())
            .map(|d| DimCopy {
                src_start: if d < rank { 0 } else { starts[d] },
                src_step: 1,
                dst_start: 0,
                count: counts[d],
            })
            .collect();
        let mut out = vec![0u8; counts.iter().product::<u64>() as usize * size];
        copy_box(&read, &read_shape, &mut out, counts, &dims, size);
        Ok(out)
    }

    /// The box `counts` from `starts` of the whole dataset's elements `values` (`size` bytes each).
    fn cut(&self, values: &[u8], size: usize, starts: &[u64], counts: &[u64]) -> Vec<u8> {
        use crate::ndcopy::{copy_box, DimCopy};
        let shape = self.extent();
        let dims: Vec<DimCopy> = (0..shape.len())
            .map(|d| DimCopy { src_start: starts[d], src_step: 1, dst_start: 0, count: counts[d] })
            .collect();
        let mut out = vec![0u8; counts.iter().product::<u64>() as usize * size];
        copy_box(values, &shape, &mut out, counts, &dims, size);
        out
    }

    /// The whole dataset, in native byte order.
    pub(crate) fn read_all(&self) -> Result<Vec<u8>, netcdf::Error> {
        self.read(None)
    }

    fn read(&self, slab: Option<(&[u64], &[u64])>) -> Result<Vec<u8>, netcdf::Error> {
        if let Some(text) = self.text_values()? {
            return Ok(match slab {
                None => text.bytes.clone(),
                Some((starts, counts)) => self.cut(&text.bytes, text.size, starts, counts),
            });
        }
        let elements: u64 = match slab {
            Some((_, counts)) => counts.iter().product(),
            None => self.dataset.shape().iter().map(|&n| n as u64).product(),
        };
        let _guard = hdf5_sys::LOCK.lock();
        // SAFETY: every id is created here and closed before returning; the buffer holds `elements`
        // values of the native type's size, checked against MAX_READ_BYTES before allocating, and the
        // memory space selects exactly `elements` values.
        unsafe {
            let file_type = H5Dget_type(self.dataset.id());
            if file_type < 0 {
                return Err(error("H5Dget_type failed"));
            }
            let native = memory_type(file_type);
            H5Tclose(file_type);
            if native < 0 {
                return Err(error("no native form of the dataset's type"));
            }
            let size = H5Tget_size(native) as u64;
            let bytes = elements.checked_mul(size).filter(|&b| b <= MAX_READ_BYTES);
            let Some(bytes) = bytes else {
                H5Tclose(native);
                return Err(error(format!("{elements} elements of {size} bytes is more than verify reads at once")));
            };
            let mut out = vec![0u8; bytes as usize];
            let (memory, file_space) = match slab {
                None => (H5S_ALL, H5S_ALL),
                Some((starts, counts)) => {
                    let space = H5Dget_space(self.dataset.id());
                    let rank = counts.len() as i32;
                    H5Sselect_hyperslab(
                        space,
                        H5S_seloper_t::H5S_SELECT_SET,
                        starts.as_ptr(),
                        std::ptr::null(),
                        counts.as_ptr(),
                        std::ptr::null(),
                    );
                    (H5Screate_simple(rank, counts.as_ptr(), std::ptr::null()), space)
                }
            };
            let status = H5Dread(self.dataset.id(), native, memory, file_space, H5P_DEFAULT, out.as_mut_ptr().cast());
            if slab.is_some() {
                H5Sclose(memory);
                H5Sclose(file_space);
            }
            H5Tclose(native);
            if status < 0 {
                return Err(error("H5Dread failed"));
            }
            Ok(out)
        }
    }
}

/// `filter ID (NAME)`: the registered filter's usual name, else the name the file records.
fn filter_description(id: i32, recorded: &str) -> String {
    let known = match id {
        305 => "LZO",
        307 => "bzip2",
        32000 => "LZF",
        32001 => "blosc",
        32004 => "LZ4",
        32008 => "bitshuffle",
        32013 => "zfp",
        32015 => "Zstandard",
        32026 => "blosc2",
        _ => "",
    };
    let name = if known.is_empty() { recorded.trim() } else { known };
    if name.is_empty() {
        format!("filter {id}")
    } else {
        format!("filter {id} ({name})")
    }
}
