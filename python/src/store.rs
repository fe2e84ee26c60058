//! `_Store` and `_Array`: an opened vzarr store and its arrays, read in Rust with the GIL released.
//! The Python classes `vzarr.Store` and `vzarr.Array` (python/vzarr/_store.py) wrap them.

use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyByteArrayMethods, PyBytes, PyDict};
use vzarr::dataset::DataType;
use vzarr::grid::{DimSelection, Selection};
use vzarr::read::blocking::{BlockingArray, BlockingStore};
use vzarr::read::Authorization;
use vzarr::read::{OpenOptions, ReadOptions};

use crate::errors::{guard, read_error, Error, SelectionError};

/// An opened native store.
#[pyclass(frozen, module = "vzarr._vzarr")]
pub(crate) struct Store {
    store: BlockingStore,
    /// The containers its sources may be read from: the user's trust list at opening, the
    /// environment's and `allow_sources` (what a copy of the store re-opened elsewhere needs).
    trusted: Vec<String>,
}

#[pymethods]
impl Store {
    /// Opens the store at `location` (a path or URL; an Icechunk repository's `branch`), reading
    /// sources inside the user's trust list, `VZARR_ALLOW_SOURCES` and `allow_sources`.
    #[staticmethod]
    #[pyo3(signature = (location, allow_sources, storage_options=None, check_sources=true, branch=None))]
    fn open(
        py: Python<'_>,
        location: String,
        allow_sources: Vec<String>,
        storage_options: Option<&Bound<'_, PyDict>>,
        check_sources: bool,
        branch: Option<String>,
    ) -> PyResult<Self> {
        let remote = crate::remote::remote_options(storage_options)?;
        guard("open", || {
            let mut authorization =
                Authorization::from_user_config().map_err(|e| Error::new_err(format!("{location}: {e}")))?;
            authorization.extend(&allow_sources);
            let trusted = authorization.containers().to_vec();
            let mut options = OpenOptions::new(authorization).with_remote(remote).with_check_sources(check_sources);
            options.branch = branch;
            let store = py.detach(|| BlockingStore::open_with(&location, &options)).map_err(read_error)?;
            Ok(Store { store, trusted })
        })
    }

    /// The containers the store's sources may be read from, as authorized at opening.
    #[getter]
    fn trusted(&self) -> Vec<String> {
        self.trusted.clone()
    }

    /// The location it was opened from.
    #[getter]
    fn location(&self) -> String {
        self.store.as_async().location().to_string()
    }

    /// The store's summary (`vzarr.json`) as JSON text.
    fn info_json(&self) -> PyResult<String> {
        serde_json::to_string(self.store.info()).map_err(|e| Error::new_err(e.to_string()))
    }

    /// Array paths, in the store's order.
    fn array_paths(&self) -> Vec<String> {
        self.store.info().arrays.iter().map(|a| a.path.clone()).collect()
    }

    /// Group paths, the root (`""`) first.
    fn group_paths(&self) -> Vec<String> {
        self.store.info().groups.clone()
    }

    /// The `zarr.json` document of the group or array at `path` (`""`: the root group).
    fn node_metadata<'py>(&self, py: Python<'py>, path: String) -> PyResult<Bound<'py, PyBytes>> {
        let bytes = guard("node metadata", || py.detach(|| self.store.node_metadata(&path)).map_err(read_error))?;
        Ok(PyBytes::new(py, &bytes))
    }

    /// The array at `path`.
    fn array(&self, py: Python<'_>, path: String) -> PyResult<Array> {
        guard("array", || {
            let array = py.detach(|| self.store.array(&path)).map_err(read_error)?;
            Ok(Array { array })
        })
    }
}

/// One array of a store.
#[pyclass(frozen, module = "vzarr._vzarr")]
pub(crate) struct Array {
    array: BlockingArray,
}

#[pymethods]
impl Array {
    /// The array's path in the store.
    #[getter]
    fn path(&self) -> String {
        self.array.reader().path().to_string()
    }

    /// Elements along every dimension.
    #[getter]
    fn shape(&self) -> Vec<u64> {
        self.array.reader().shape()
    }

    /// The element type: a NumPy dtype string (`"<f4"`, `"|S8"`, `"|b1"`, `"|V4"`), a structured
    /// dtype's field list (`"[('a', '<i4'), ('b', '<f8')]"`), or `"str"` for variable-length strings.
    #[getter]
    fn dtype(&self) -> String {
        numpy_dtype(self.array.reader().metadata().data_type)
    }

    /// The dimension names (`None` when the array has none).
    #[getter]
    fn dims(&self) -> Option<Vec<String>> {
        self.array.reader().metadata().dimension_names.clone()
    }

    /// The array's `zarr.json` document as JSON text (attributes, fill value, codecs, chunk grid).
    fn metadata_json(&self) -> String {
        // As the store writes it: non-finite attributes as bare `NaN` tokens Python's `json` reads.
        self.array.reader().metadata().to_text()
    }

    /// Per dimension, the number of elements in each chunk that lie inside the array (the
    /// rectilinear grid's edges, the last one cut at the array's end).
    #[getter]
    fn chunks(&self) -> Vec<Vec<u64>> {
        let grid = &self.array.reader().metadata().chunk_grid;
        grid.dims().iter().map(|d| (0..d.num_chunks()).map(|c| d.valid(c)).collect()).collect()
    }

    /// Reads `selection` (one entry per leading dimension: an index, or `(start, stop, step)`) into
    /// `out`, a bytearray of exactly the selection's bytes (C order, native byte order), with the
    /// GIL released. `out` must not be shared with other threads during the call (the Python wrapper
    /// makes a fresh one and wraps it in a NumPy array afterwards, without copying).
    fn read_into(&self, py: Python<'_>, selection: Vec<Bound<'_, PyAny>>, out: Bound<'_, PyByteArray>) -> PyResult<()> {
        let selection = self.selection(&selection)?;
        let (ptr, len) = (out.data() as usize, out.len());
        guard("read", || {
            py.detach(|| {
                // SAFETY: `out` holds `len` bytes at `ptr` and is referenced by this call for its whole
                // duration; the wrapper owns it alone, so nothing resizes it while the GIL is released.
                let bytes = unsafe { std::slice::from_raw_parts_mut(ptr as *mut u8, len) };
                self.array.read_into(&selection, bytes, &ReadOptions::default())
            })
            .map_err(read_error)
        })
    }

    /// Reads `selection` of a string array (`dtype` `"str"` or `"|S<n>"`) as a list of str, in C
    /// order.
    fn read_strings(&self, py: Python<'_>, selection: Vec<Bound<'_, PyAny>>) -> PyResult<Vec<String>> {
        let selection = self.selection(&selection)?;
        guard("read", || py.detach(|| self.array.read_strings(&selection)).map_err(read_error))
    }

    /// Reads `selection` of a fixed-width array (`|S<n>` included) and returns its bytes (C order,
    /// native byte order).
    fn read_bytes<'py>(&self, py: Python<'py>, selection: Vec<Bound<'py, PyAny>>) -> PyResult<Bound<'py, PyBytes>> {
        let selection = self.selection(&selection)?;
        let data =
            guard("read", || py.detach(|| self.array.read(&selection, &ReadOptions::default())).map_err(read_error))?;
        Ok(PyBytes::new(py, &data.bytes))
    }

    /// The stored (encoded) bytes of chunk `coords`, `None` for a chunk never written: what a Zarr
    /// store holds at the chunk's key.
    fn chunk_bytes<'py>(&self, py: Python<'py>, coords: Vec<u64>) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let bytes = guard("chunk", || py.detach(|| self.array.stored_chunk_at(&coords)).map_err(read_error))?;
        Ok(bytes.map(|b| PyBytes::new(py, &b)))
    }
}

impl Array {
    /// The [`Selection`] of Python's per-dimension entries: an int, or a `(start, stop, step)` tuple
    /// (already clamped to the dimension by the caller, step >= 1).
    fn selection(&self, entries: &[Bound<'_, PyAny>]) -> PyResult<Selection> {
        let mut dims = Vec::with_capacity(entries.len());
        for entry in entries {
            if let Ok(index) = entry.extract::<u64>() {
                dims.push(DimSelection::Index(index));
            } else {
                let (start, stop, step): (u64, u64, u64) = entry.extract()?;
                dims.push(DimSelection::Range { start, stop, step });
            }
        }
        let shape = self.array.reader().shape();
        Selection::new(dims, &shape).map_err(|e| SelectionError::new_err(format!("{}: {e}", self.path())))
    }
}

/// The NumPy dtype string of a data type.
fn numpy_dtype(data_type: DataType) -> String {
    let native = if cfg!(target_endian = "little") { '<' } else { '>' };
    match data_type {
        DataType::Bool => "|b1".into(),
        DataType::Int8 => "|i1".into(),
        DataType::UInt8 => "|u1".into(),
        DataType::Int16 => format!("{native}i2"),
        DataType::Int32 => format!("{native}i4"),
        DataType::Int64 => format!("{native}i8"),
        DataType::UInt16 => format!("{native}u2"),
        DataType::UInt32 => format!("{native}u4"),
        DataType::UInt64 => format!("{native}u8"),
        DataType::Float32 => format!("{native}f4"),
        DataType::Float64 => format!("{native}f8"),
        DataType::Complex64 => format!("{native}c8"),
        DataType::Complex128 => format!("{native}c16"),
        DataType::Float16 => format!("{native}f2"),
        DataType::FixedBytes(n) => format!("|S{n}"),
        DataType::RawBytes(n) => format!("|V{n}"),
        DataType::FixedUtf32(n) => format!("{native}U{}", n / 4),
        // A list of (name, type) pairs, as NumPy prints a structured dtype.
        DataType::Struct(s) => s.numpy_descr(),
        DataType::String => "str".into(),
        _ => "|V0".into(),
    }
}
