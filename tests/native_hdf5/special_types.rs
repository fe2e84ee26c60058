//! Issue 26 on files h5py, PyTables and netCDF4-python write (`tests/python/make_special_types.py`):
//! null dataspaces, the HDF5 time class and a user attribute named `_NCPROPERTIES`. Expected values
//! come from libhdf5 and libnetcdf reading the same files, never from the generator.

use std::path::{Path, PathBuf};

use vzarr::ScanOptions;

use crate::common::{open_store, read, scan, scan_to_store, with_hdf5_files};

/// The fixtures, written by `make_special_types.py` into `dir` (None without the Python environment).
fn fixtures(dir: &Path) -> Option<PathBuf> {
    let Some(python) = crate::interop::python() else {
        eprintln!("notice: no Python with h5py (run tests/python/setup.sh); the special type tests not run");
        return None;
    };
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/make_special_types.py");
    let run = crate::common::run({
        let mut c = std::process::Command::new(python);
        c.arg(script).arg(dir);
        c
    });
    assert_eq!(run.code, 0, "make_special_types.py: {}", run.stderr);
    Some(dir.to_path_buf())
}

/// The HDF5 datatype class of `dataset`, by libhdf5.
fn type_class(file: &Path, dataset: &str) -> hdf5_sys::h5t::H5T_class_t {
    with_hdf5_files(|| {
        let ds = hdf5::File::open(file).unwrap().dataset(dataset).unwrap();
        let _lock = hdf5_sys::LOCK.lock();
        // SAFETY: the type id is created and closed here.
        unsafe {
            let t = hdf5_sys::h5d::H5Dget_type(ds.id());
            let class = hdf5_sys::h5t::H5Tget_class(t);
            hdf5_sys::h5t::H5Tclose(t);
            class
        }
    })
}

/// A dataset of null dataspace (`h5py.Empty`) is left out with a warning naming file and dataset,
/// not an error; the rest reads as libhdf5 reads it and verifies.
#[test]
fn null_dataspaces_are_left_out_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let Some(fx) = fixtures(dir.path()) else { return };
    let file = fx.join("null.h5");
    let null = with_hdf5_files(|| {
        let ds = hdf5::File::open(&file).unwrap().dataset("empty").unwrap();
        ds.space().unwrap().is_null()
    });
    assert!(null, "libhdf5 sees a null dataspace");
    let dataset = scan(&file, &ScanOptions::default()).expect("a null dataspace is no error");
    let arrays: Vec<&str> = dataset.arrays.iter().map(|a| a.path.as_str()).collect();
    assert_eq!(arrays, ["data"]);
    let warnings: Vec<String> = dataset.warnings.iter().map(ToString::to_string).collect();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains("null.h5") && warnings[0].contains("empty: left out: a null dataspace"),
        "{warnings:?}"
    );
    let store_path = scan_to_store(&file, dir.path(), "null.vzarr", &ScanOptions::default());
    let store = open_store(&store_path);
    assert_eq!(read(&store, "data", "").bytes, crate::common::hdf5_oracle::read_native(&file, "data", 10));
    let run = crate::common::cli_expect(&["verify".as_ref(), store_path.as_os_str()], 0);
    assert!(run.stdout.contains("ok   data: 5 elements equal"), "{}", run.stdout);
}

/// Datasets of the HDF5 time class (PyTables time arrays, and a table with a time column) are
/// refused with a one-line reason, and left out under `--skip-unsupported`.
#[test]
fn time_class_datasets_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let Some(fx) = fixtures(dir.path()) else { return };
    let file = fx.join("times.h5");
    for name in ["earr32", "earr64"] {
        assert_eq!(type_class(&file, name), hdf5_sys::h5t::H5T_class_t::H5T_TIME, "{name} is of the time class");
    }
    let err = scan(&file, &ScanOptions::default()).unwrap_err().to_string();
    assert!(err.contains("times.h5: ") && err.contains("the HDF5 time type"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    let options = ScanOptions { skip_unsupported: true, ..ScanOptions::default() };
    let dataset = scan(&file, &options).unwrap();
    let arrays: Vec<&str> = dataset.arrays.iter().map(|a| a.path.as_str()).collect();
    assert_eq!(arrays, ["plain"]);
    let mut refused: Vec<String> = dataset.warnings.iter().map(|w| w.variable.clone()).collect();
    refused.sort();
    assert_eq!(refused, ["earr32", "earr64", "tbl"]);
    for w in &dataset.warnings {
        assert!(w.message.contains("the HDF5 time type (datatype class 2"), "{w}");
    }
    let store_path = scan_to_store(&file, dir.path(), "times.vzarr", &options);
    let store = open_store(&store_path);
    assert_eq!(read(&store, "plain", "").bytes, crate::common::hdf5_oracle::read_native(&file, "plain", 16));
}

/// A user attribute named `_NCPROPERTIES` is kept (on the root and on a variable) with the value
/// libnetcdf reads; only libnetcdf's own `_NCProperties` is hidden.
#[test]
fn a_user_attribute_named_ncproperties_in_capitals_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let Some(fx) = fixtures(dir.path()) else { return };
    let file = fx.join("ncproperties.nc");
    let (root, var, hidden) = with_hdf5_files(|| {
        let f = netcdf::open(&file).unwrap();
        let text = |a: Option<netcdf::Attribute<'_>>| match a.unwrap().value().unwrap() {
            netcdf::AttributeValue::Str(s) => s,
            other => panic!("{other:?}"),
        };
        let root = text(f.attribute("_NCPROPERTIES"));
        let var = text(f.variable("v").unwrap().attribute("_NCPROPERTIES"));
        (root, var, f.attribute("_NCProperties").is_some())
    });
    assert!(hidden, "libnetcdf wrote its _NCProperties");
    let store_path = scan_to_store(&file, dir.path(), "nc.vzarr", &ScanOptions::default());
    let group = crate::common::array_json(&store_path, "");
    assert_eq!(group["attributes"]["_NCPROPERTIES"], root.as_str(), "{group}");
    assert!(group["attributes"].get("_NCProperties").is_none(), "{group}");
    let store = open_store(&store_path);
    let attrs = store.array("v").unwrap().reader().metadata().attributes.clone();
    assert_eq!(attrs["_NCPROPERTIES"], var.as_str());
    assert!(!attrs.contains_key("_NCProperties"));
}
