//! Issue 26: HDF5 object references as strings of their targets' paths, region references, null
//! dataspaces, the HDF5 time class, bitfields as unsigned integers and a user attribute named
//! `_NCPROPERTIES`, on files h5py,
//! PyTables and netCDF4-python write (`tests/python/make_special_types.py`). Expected values come from
//! libhdf5 and libnetcdf reading the same files, never from the generator.

use std::path::{Path, PathBuf};

use vzarr::dataset::DataType;
use vzarr::ScanOptions;

use crate::common::{open_store, read, scan, scan_to_store, with_hdf5_files};

/// The fixtures, written by `make_special_types.py` into `dir` (None without the Python environment).
pub(super) fn fixtures(dir: &Path) -> Option<PathBuf> {
    super::python_fixtures("make_special_types.py", dir, &[], "the special type tests")
}

/// The path libhdf5 gives the object each object reference of `dataset` points at (dereferenced,
/// then named, as h5py's `f[ref].name`); "" for a null reference.
fn reference_names(file: &Path, dataset: &str) -> Vec<String> {
    with_hdf5_files(|| {
        let f = hdf5::File::open(file).unwrap();
        let refs = f.dataset(dataset).unwrap().read_raw::<hdf5::ObjectReference1>().unwrap();
        refs.iter().map(|r| name_of(&f, r)).collect()
    })
}

/// The paths of the targets of object-reference attribute `name` of `object`, by libhdf5.
fn attribute_reference_names(file: &Path, object: &str, name: &str) -> Vec<String> {
    with_hdf5_files(|| {
        let f = hdf5::File::open(file).unwrap();
        let attr = match f.dataset(object) {
            Ok(ds) => ds.attr(name).unwrap(),
            Err(_) => f.group(object).unwrap().attr(name).unwrap(),
        };
        attr.read_raw::<hdf5::ObjectReference1>().unwrap().iter().map(|r| name_of(&f, r)).collect()
    })
}

fn name_of(f: &hdf5::File, reference: &hdf5::ObjectReference1) -> String {
    use hdf5::ObjectReference;
    // SAFETY: `ObjectReference1` is `repr(transparent)` over a file address.
    let address: u64 = unsafe { std::mem::transmute_copy(reference) };
    if address == 0 {
        return String::new();
    }
    match reference.dereference(f).unwrap() {
        hdf5::ReferencedObject::Group(g) => g.name(),
        hdf5::ReferencedObject::Dataset(d) => d.name(),
        hdf5::ReferencedObject::Datatype(_) => panic!("a reference to a datatype"),
    }
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

/// Object references (1-d, chunked 2-d, scalar, with null references) read back as the paths
/// libhdf5 dereferences them to, reference attributes likewise, `verify` compares them through
/// libhdf5, and region references are refused with their reason.
#[test]
fn object_references_are_the_paths_libhdf5_dereferences_them_to() {
    let dir = tempfile::tempdir().unwrap();
    let Some(fx) = fixtures(dir.path()) else { return };
    let file = fx.join("references.h5");
    let err = scan(&file, &ScanOptions::default()).unwrap_err().to_string();
    assert!(err.contains("references.h5: regions: cannot reference elements of dataset region references"), "{err}");
    let options = ScanOptions { skip_unsupported: true, ..ScanOptions::default() };
    let dataset = scan(&file, &options).unwrap();
    let warnings: Vec<String> = dataset.warnings.iter().map(|w| format!("{}: {}", w.variable, w.message)).collect();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].starts_with("regions: left out: cannot reference elements of dataset region"), "{warnings:?}");
    let store_path = scan_to_store(&file, dir.path(), "refs.vzarr", &options);
    let store = open_store(&store_path);
    for name in ["refs", "refs_2d", "one_ref"] {
        let array = store.array(name).unwrap();
        assert_eq!(array.reader().metadata().data_type, DataType::String, "{name}");
        let all = vzarr::grid::Selection::all(&array.reader().shape());
        let theirs = reference_names(&file, name);
        assert!(theirs.iter().any(|n| n.starts_with('/')), "{name}: {theirs:?}");
        assert_eq!(array.read_strings(&all).unwrap(), theirs, "{name}");
    }
    let target = store.array("target").unwrap().reader().metadata().attributes.clone();
    let names: Vec<serde_json::Value> =
        attribute_reference_names(&file, "target", "see_also").into_iter().map(Into::into).collect();
    assert_eq!(target["see_also"], serde_json::Value::Array(names));
    let root = crate::common::array_json(&store_path, "grp");
    let first = attribute_reference_names(&file, "grp", "first");
    assert_eq!(root["attributes"]["first"], first[0].as_str(), "{root}");
    assert_eq!(read(&store, "target", "").bytes, crate::common::hdf5_oracle::read_native(&file, "target", 24));
    let run = crate::common::cli_expect(&["verify".as_ref(), store_path.as_os_str()], 0);
    for name in ["refs", "refs_2d", "one_ref"] {
        assert!(run.stdout.contains(&format!("ok   {name}: ")), "{name}: {}", run.stdout);
    }
    // zarr-python reads the kerchunk export's strings as h5py names the references' targets.
    let Some(python) = crate::interop::python() else { return };
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/check_hdf5.py");
    let stdout = super::python_check_on_export(&python, &script, &store_path, &file);
    for name in ["refs", "refs_2d", "one_ref"] {
        assert!(stdout.contains(&format!("{name} reference paths")), "{name}: {stdout}");
    }
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

/// Bitfield datasets (1 to 8 bytes, both byte orders, chunked with filters, contiguous, scalar),
/// bitfield compound members and bitfield attributes, as h5py writes them and as PyTables writes
/// booleans, read as the unsigned integers of their size: every value equals libhdf5's read into the
/// native bitfield type, `verify` passes, nothing is left out, and zarr-python reads the export as
/// h5py reads the file.
#[test]
fn bitfields_are_unsigned_integers_as_libhdf5_reads_them() {
    use crate::common::hdf5_oracle::{attr_native, read_member, read_native};
    let dir = tempfile::tempdir().unwrap();
    let Some(fx) = fixtures(dir.path()) else { return };
    let file = fx.join("bitfields.h5");
    let dataset = scan(&file, &ScanOptions::default()).expect("bitfields are no error");
    assert!(dataset.warnings.is_empty(), "{:?}", dataset.warnings);
    let store_path = scan_to_store(&file, dir.path(), "bitfields.vzarr", &ScanOptions::default());
    let store = open_store(&store_path);
    for (name, data_type, elements) in [
        ("b8", DataType::UInt8, 50),
        ("b16be", DataType::UInt16, 30),
        ("b32", DataType::UInt32, 12),
        ("b64", DataType::UInt64, 1),
    ] {
        assert_eq!(type_class(&file, name), hdf5_sys::h5t::H5T_class_t::H5T_BITFIELD, "{name} is a bitfield");
        let ours = read(&store, name, "");
        assert_eq!(ours.data_type, data_type, "{name}");
        assert_eq!(ours.bytes, read_native(&file, name, elements * data_type.size()), "{name}");
    }
    let records = read(&store, "records", "");
    let DataType::Struct(s) = records.data_type else { panic!("records: {:?}", records.data_type) };
    let types: Vec<DataType> = s.fields().iter().map(|f| f.data_type).collect();
    assert_eq!(types, [DataType::UInt16, DataType::Int16, DataType::Float32]);
    for (offset, field) in s.offsets() {
        let size = field.data_type.size();
        let ours: Vec<u8> =
            records.bytes.chunks_exact(s.size()).flat_map(|e| e[offset..offset + size].to_vec()).collect();
        assert_eq!(Some(ours), read_member(&file, "records", &[&field.name], 6), "records.{}", field.name);
    }
    let attrs = store.array("b8").unwrap().reader().metadata().attributes.clone();
    assert_eq!(attrs["mask"], u64::from(attr_native(&file, "b8", "mask")[0]));
    let masks: Vec<u64> = attr_native(&file, "b8", "masks")
        .chunks_exact(2)
        .map(|b| u64::from(u16::from_ne_bytes([b[0], b[1]])))
        .collect();
    assert_eq!(attrs["masks"], serde_json::json!(masks));
    let run = crate::common::cli_expect(&["verify".as_ref(), store_path.as_os_str()], 0);
    for name in ["b8", "b16be", "b32", "b64", "records"] {
        assert!(run.stdout.contains(&format!("ok   {name}: ")), "{name}: {}", run.stdout);
    }
    // PyTables booleans: an array, a table column and an attribute.
    let file = fx.join("booleans.h5");
    let dataset = scan(&file, &ScanOptions::default()).expect("PyTables booleans are no error");
    assert!(dataset.warnings.is_empty(), "{:?}", dataset.warnings);
    let booleans = scan_to_store(&file, dir.path(), "booleans.vzarr", &ScanOptions::default());
    let store = open_store(&booleans);
    assert_eq!(read(&store, "flags", "").bytes, read_native(&file, "flags", 10));
    let attrs = store.array("flags").unwrap().reader().metadata().attributes.clone();
    assert_eq!(attrs["checked"], u64::from(attr_native(&file, "flags", "checked")[0]));
    let table = read(&store, "tbl", "");
    let ok: Vec<u8> = table.bytes.chunks_exact(9).map(|row| row[0]).collect();
    assert_eq!(Some(ok), read_member(&file, "tbl", &["ok"], 9));
    crate::common::cli_expect(&["verify".as_ref(), booleans.as_os_str()], 0);
    // zarr-python reads the kerchunk exports as h5py reads the files (h5py too reads bitfields as
    // unsigned integers).
    let Some(python) = crate::interop::python() else { return };
    let scripts = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python");
    let stdout =
        super::python_check_on_export(&python, &scripts.join("check_hdf5.py"), &store_path, &fx.join("bitfields.h5"));
    for name in ["b8", "b16be", "b32", "b64"] {
        assert!(stdout.contains(&format!("{name} values")), "{name}: {stdout}");
    }
    std::fs::remove_file(store_path.with_extension("json")).unwrap();
    let stdout = super::python_check_on_export(
        &python,
        &scripts.join("check_structs.py"),
        &store_path,
        &fx.join("bitfields.h5"),
    );
    assert!(stdout.contains("ok   records zarr-python"), "{stdout}");
    let stdout = super::python_check_on_export(&python, &scripts.join("check_structs.py"), &booleans, &file);
    assert!(stdout.contains("ok   tbl zarr-python"), "{stdout}");
}

/// Datasets of HDF5 array datatypes (h5py and PyTables: contiguous, chunked with filters, scalar,
/// nested arrays, arrays of compounds and of fixed-length strings, unwritten chunks with a fill value)
/// are arrays of the base type with the array's dimensions appended, named `<name>_dim<k>`, chunked
/// as in the file with those dimensions whole: values equal libhdf5's read of the same file, `verify`
/// passes, an array of variable-length strings is refused with its reason, and zarr-python and
/// xarray read the export as h5py reads the file (dataset axes, then the array's).
#[test]
fn array_datatypes_are_arrays_of_their_base_type_with_the_array_dimensions_appended() {
    use crate::common::hdf5_oracle::{read_member, read_native};
    let dir = tempfile::tempdir().unwrap();
    let Some(fx) = fixtures(dir.path()) else { return };
    let file = fx.join("arrays.h5");
    let err = scan(&file, &ScanOptions::default()).unwrap_err().to_string();
    assert!(
        err.contains("arrays.h5: vlen_strings: cannot reference elements of an array type of variable-length strings"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    let options = ScanOptions { skip_unsupported: true, ..ScanOptions::default() };
    let dataset = scan(&file, &options).unwrap();
    let refused: Vec<&str> = dataset.warnings.iter().map(|w| w.variable.as_str()).collect();
    assert_eq!(refused, ["vlen_strings"]);
    let store_path = scan_to_store(&file, dir.path(), "arrays.vzarr", &options);
    let store = open_store(&store_path);
    // (dataset, store shape, chunk shape when chunked, the dimension names the array type adds)
    type Case = (&'static str, &'static [u64], Option<&'static [u64]>, &'static [&'static str]);
    let expected: [Case; 5] = [
        ("contiguous", &[4, 5, 3], None, &["contiguous_dim0"]),
        ("chunked", &[10, 2, 3], Some(&[4, 2, 3]), &["chunked_dim0", "chunked_dim1"]),
        ("scalar", &[4], None, &["scalar_dim0"]),
        ("nested", &[5, 2, 3], None, &["nested_dim0", "nested_dim1"]),
        ("strings", &[3, 2], None, &["strings_dim0"]),
    ];
    for (name, shape, chunks, added) in expected {
        assert_eq!(type_class(&file, name), hdf5_sys::h5t::H5T_class_t::H5T_ARRAY, "{name} is of an array type");
        let array = store.array(name).unwrap();
        let metadata = array.reader().metadata().clone();
        assert_eq!(array.reader().shape(), shape, "{name}");
        let names = metadata.dimension_names.clone().unwrap();
        assert_eq!(names[names.len() - added.len()..], *added, "{name}: {names:?}");
        if let Some(chunks) = chunks {
            assert_eq!(metadata.chunk_grid.chunk_shape(&vec![0; shape.len()]), chunks, "{name}");
        }
        let ours = read(&store, name, "");
        let len = ours.bytes.len();
        assert_eq!(ours.bytes, read_native(&file, name, len), "{name}");
    }
    // An array of compounds: member by member, as libhdf5 converts each.
    let records = read(&store, "of_struct", "");
    assert_eq!(records.shape, [6, 3]);
    let DataType::Struct(s) = records.data_type else { panic!("of_struct: {:?}", records.data_type) };
    for (offset, field) in s.offsets() {
        let size = field.data_type.size();
        let ours: Vec<u8> =
            records.bytes.chunks_exact(s.size()).flat_map(|e| e[offset..offset + size].to_vec()).collect();
        assert_eq!(Some(ours), read_member(&file, "of_struct", &[&field.name], 18), "of_struct.{}", field.name);
    }
    let run = crate::common::cli_expect(&["verify".as_ref(), store_path.as_os_str()], 0);
    for name in ["contiguous", "chunked", "scalar", "nested", "of_struct", "strings"] {
        assert!(run.stdout.contains(&format!("ok   {name}: ")), "{name}: {}", run.stdout);
    }
    // PyTables array atoms: unwritten chunks read as the atom's default in every position.
    let atoms = fx.join("array_atoms.h5");
    let atoms_store = scan_to_store(&atoms, dir.path(), "atoms.vzarr", &ScanOptions::default());
    let opened = open_store(&atoms_store);
    let sparse = read(&opened, "sparse", "");
    assert_eq!((sparse.shape.as_slice(), sparse.bytes.len()), (&[12, 2][..], 96));
    assert_eq!(sparse.bytes, read_native(&atoms, "sparse", 96));
    assert_eq!(sparse.bytes[..4], (-9i32).to_ne_bytes(), "an unwritten chunk reads as the default");
    assert_eq!(read(&opened, "mdatom", "").bytes, read_native(&atoms, "mdatom", 7 * 5 * 3 * 8));
    crate::common::cli_expect(&["verify".as_ref(), atoms_store.as_os_str()], 0);
    let Some(python) = crate::interop::python() else { return };
    let scripts = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python");
    let stdout = super::python_check_on_export(&python, &scripts.join("check_hdf5.py"), &store_path, &file);
    for name in ["contiguous", "chunked", "scalar", "nested"] {
        assert!(stdout.contains(&format!("{name} values")), "{name}: {stdout}");
    }
    std::fs::remove_file(store_path.with_extension("json")).unwrap();
    let stdout = super::python_check_on_export(&python, &scripts.join("check_structs.py"), &store_path, &file);
    for name in ["contiguous", "chunked", "scalar", "nested", "of_struct", "strings"] {
        assert!(stdout.contains(&format!("ok   {name} zarr-python")), "{name}: {stdout}");
    }
    let stdout = super::python_check_on_export(&python, &scripts.join("check_hdf5.py"), &atoms_store, &atoms);
    assert!(stdout.contains("sparse values") && stdout.contains("mdatom values"), "{stdout}");
}

/// The bytes libhdf5 reads for attribute `name` of dataset `object` (the root when empty), in the
/// attribute's own file type (fixed-size types only).
fn attribute_bytes(file: &Path, object: &str, name: &str) -> Vec<u8> {
    with_hdf5_files(|| {
        let f = hdf5::File::open(file).unwrap();
        let attr = if object.is_empty() { f.attr(name) } else { f.dataset(object).unwrap().attr(name) }.unwrap();
        let elements = attr.size();
        let _lock = hdf5_sys::LOCK.lock();
        // SAFETY: the type id is created and closed here; the buffer holds every element.
        unsafe {
            let t = hdf5_sys::h5a::H5Aget_type(attr.id());
            let mut buf = vec![0u8; elements * hdf5_sys::h5t::H5Tget_size(t)];
            assert!(hdf5_sys::h5a::H5Aread(attr.id(), t, buf.as_mut_ptr().cast()) >= 0, "H5Aread {name}");
            hdf5_sys::h5t::H5Tclose(t);
            buf
        }
    })
}

/// The sequences libhdf5 reads for variable-length attribute `name` of `object` (root when empty).
fn attribute_sequences<T: hdf5::H5Type + Copy>(file: &Path, object: &str, name: &str) -> Vec<Vec<T>> {
    with_hdf5_files(|| {
        let f = hdf5::File::open(file).unwrap();
        let attr = if object.is_empty() { f.attr(name) } else { f.dataset(object).unwrap().attr(name) }.unwrap();
        let seqs = attr.read_raw::<hdf5::types::VarLenArray<T>>().unwrap();
        seqs.iter().map(|s| s.as_slice().to_vec()).collect()
    })
}

/// Issue 41: attributes of variable-length sequences, array types, opaque values and strings that
/// are not UTF-8, which vzarr used to leave out, are kept as h5py shows them: sequences and array
/// types as nested lists (their values and shapes libhdf5's), opaque values and non-UTF-8 strings
/// as the base64 of the bytes libhdf5 reads, noted as such in the array's `vzarr` field. A group has
/// no such field: its base64 attributes are left out with a warning, its lists kept.
#[test]
fn attributes_of_sequences_arrays_opaque_and_non_utf8_text_are_kept() {
    use serde_json::{json, Value};
    let dir = tempfile::tempdir().unwrap();
    let Some(fx) = fixtures(dir.path()) else { return };
    let file = fx.join("attribute_types.h5");
    let dataset = scan(&file, &ScanOptions::default()).unwrap();
    let warnings: Vec<String> = dataset.warnings.iter().map(|w| format!("{}: {}", w.variable, w.message)).collect();
    assert!(warnings.is_empty(), "every attribute kept: {warnings:?}");
    let store_path = scan_to_store(&file, dir.path(), "attrs.vzarr", &ScanOptions::default());
    let store = open_store(&store_path);
    let metadata = store.array("d").unwrap().reader().metadata().clone();
    let attrs = &metadata.attributes;
    let ints = attribute_sequences::<i32>(&file, "d", "seq");
    assert_eq!(ints.iter().map(Vec::len).collect::<Vec<_>>(), [3, 0, 1], "the fixture's sequences");
    assert_eq!(attrs["seq"], json!(ints));
    let floats = attribute_sequences::<f64>(&file, "d", "seq_f8");
    let floats: Vec<Vec<Value>> =
        floats.iter().map(|s| s.iter().map(|&v| vzarr::dataset::float_attribute(v)).collect()).collect();
    assert_eq!(attrs["seq_f8"], json!(floats));
    let shorts: Vec<i16> =
        attribute_bytes(&file, "d", "grid").chunks_exact(2).map(|b| i16::from_le_bytes([b[0], b[1]])).collect();
    let rows: Vec<Vec<Vec<i16>>> =
        shorts.chunks_exact(6).map(|m| m.chunks_exact(3).map(<[i16]>::to_vec).collect()).collect();
    assert_eq!(attrs["grid"], json!(rows), "int16[2][3] per element, shape kept");
    assert_eq!(attrs["quad"], json!(attribute_bytes(&file, "d", "quad")));
    let base64 = |bytes: &[u8]| Value::from(base64_text(bytes));
    let blobs: Vec<Value> = attribute_bytes(&file, "d", "blob").chunks_exact(4).map(base64).collect();
    assert_eq!(attrs["blob"], json!(blobs));
    assert_eq!(attrs["one_blob"], base64(&attribute_bytes(&file, "d", "one_blob")));
    let latin = attribute_bytes(&file, "d", "latin");
    assert!(std::str::from_utf8(&latin).is_err());
    assert_eq!(attrs["latin"], base64(&latin));
    let vlen: Vec<Value> = with_hdf5_files(|| {
        let f = hdf5::File::open(&file).unwrap();
        let strings = f.dataset("d").unwrap().attr("latin_vlen").unwrap().read_raw::<hdf5::types::VarLenAscii>();
        strings.unwrap().iter().map(|s| base64(s.as_bytes())).collect()
    });
    assert_eq!(attrs["latin_vlen"], json!(vlen));
    assert_eq!(attrs["plain"], "text stays text");
    let doc = vzarr::dataset::from_text(&store.node_metadata("d").unwrap()).unwrap();
    let encoded: Vec<&str> = ["blob", "latin", "latin_vlen", "one_blob"].to_vec();
    let noted = doc["vzarr"]["attribute_encodings"].as_object().unwrap();
    assert_eq!(noted.keys().map(String::as_str).collect::<Vec<_>>(), encoded, "{doc}");
    assert!(noted.values().all(|v| v == "base64"), "{doc}");
    let root: Value = serde_json::from_slice(&store.node_metadata("").unwrap()).unwrap();
    assert_eq!(root["attributes"]["seq"], json!(attribute_sequences::<i32>(&file, "", "seq")));
    let shorts: Vec<i16> =
        attribute_bytes(&file, "", "grid").chunks_exact(2).map(|b| i16::from_le_bytes([b[0], b[1]])).collect();
    let rows: Vec<Vec<i16>> = shorts.chunks_exact(3).map(<[i16]>::to_vec).collect();
    assert_eq!(root["attributes"]["grid"], json!(rows));
    // A group's bytes are base64 too, noted in the group's own `vzarr` field.
    assert_eq!(root["attributes"]["blob"], base64(&attribute_bytes(&file, "", "blob")), "{root}");
    assert_eq!(root["vzarr"]["attribute_encodings"], json!({"blob": "base64"}), "{root}");
    // Read back from a kerchunk JSON export, the group keeps its note and its bytes.
    let refs = dir.path().join("attrs_refs.json");
    let args = ["scan".as_ref(), file.as_os_str(), "--format".as_ref(), "kerchunk-json".as_ref(), "-o".as_ref()];
    crate::common::cli_expect(&[&args[..], &[refs.as_os_str()]].concat(), 0);
    let trusted = vzarr::read::Authorization::new([format!("{}/", file.parent().unwrap().display())]);
    let refs_store = vzarr::read::blocking::BlockingStore::open(refs.to_str().unwrap(), &trusted).unwrap();
    let from_refs: Value = serde_json::from_slice(&refs_store.node_metadata("").unwrap()).unwrap();
    assert_eq!(from_refs["vzarr"], root["vzarr"], "{from_refs}");
    assert_eq!(from_refs["attributes"]["blob"], root["attributes"]["blob"], "{from_refs}");
    // zarr-python reads them through the kerchunk export as h5py reads the file.
    let Some(python) = crate::interop::python() else { return };
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/check_hdf5.py");
    let stdout = super::python_check_on_export(&python, &script, &store_path, &file);
    assert!(stdout.contains("d special attributes: 8 attributes"), "{stdout}");
    assert!(stdout.contains("/ special attributes: 3 attributes"), "{stdout}");
    // Appending reads the store back: the group's note survives a load and a rewrite.
    let loaded = vzarr::pipeline::load_native(&store_path, &Default::default()).unwrap();
    let root_group = loaded.groups.iter().find(|g| g.path.is_empty()).unwrap();
    assert_eq!(root_group.attribute_encodings.get("blob").map(String::as_str), Some("base64"));
}

/// Standard base64 with padding (RFC 4648), as the test's own encoder.
fn base64_text(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}
