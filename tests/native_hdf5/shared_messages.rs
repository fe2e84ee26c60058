//! Issue 26, files the HDF5 reader refused: attributes and datasets of committed (shared) datatypes, a
//! shared object header message table (datatypes and dataspaces of attributes held in it), and
//! `DIMENSION_LIST` attributes that are truncated, have an empty entry or name a dataset that is no
//! dimension scale. Fixtures by `tests/python/make_special_types.py`; expected values come from
//! libhdf5 and libnetcdf reading the same files.

use std::path::Path;

use serde_json::json;
use vzarr::ScanOptions;

use crate::common::hdf5_oracle::{attr_native, attr_numbers, read_native};
use crate::common::{array_json, cli_expect, open_store, read, scan_to_store};

/// The fixtures in `dir` (None without the Python environment).
fn fixtures(dir: &Path) -> Option<std::path::PathBuf> {
    super::special_types::fixtures(dir)
}

/// `vzarr verify` passes on the store and names every array `ok`.
fn verified(store: &Path, arrays: &[&str]) {
    let run = cli_expect(&["verify".as_ref(), store.as_os_str()], 0);
    for name in arrays {
        assert!(run.stdout.contains(&format!("ok   {name}: ")), "{name}: {}", run.stdout);
    }
}

/// Committed atomic, compound and enum types, one in a group, used by attributes (root, group,
/// datasets) and datasets: values as libhdf5 reads them, attributes as their non-shared equivalents.
#[test]
fn committed_datatypes_read_like_their_inline_equivalents() {
    let dir = tempfile::tempdir().unwrap();
    let Some(fx) = fixtures(dir.path()) else { return };
    let file = fx.join("committed.h5");
    let store_path = scan_to_store(&file, dir.path(), "committed.vzarr", &ScanOptions::default());
    let store = open_store(&store_path);
    assert_eq!(read(&store, "d", "").bytes, read_native(&file, "d", 12));
    assert_eq!(read(&store, "g", "").bytes, read_native(&file, "g", 20), "big-endian float32 committed in /types");
    assert_eq!(read(&store, "e", "").bytes, read_native(&file, "e", 3));
    let root = array_json(&store_path, "");
    let a: Vec<f64> = attr_numbers(&file, "/", "a");
    assert_eq!(root["attributes"]["a"], json!(a.iter().map(|v| *v as i64).collect::<Vec<_>>()), "{root}");
    let types = array_json(&store_path, "types");
    assert_eq!(types["attributes"]["levels"], json!([10, 20]), "{types}");
    let d = array_json(&store_path, "d");
    assert_eq!(d["attributes"]["scale"], json!(attr_numbers(&file, "d", "scale")[0]), "{d}");
    let g = array_json(&store_path, "g");
    let e = attr_native(&file, "g", "e");
    assert_eq!(g["attributes"]["e"], json!(e), "enum attribute of a committed enum type: {g}");
    assert_eq!(g["attributes"]["c"], json!({"a": 5, "b": 6.0}), "compound attribute: {g}");
    verified(&store_path, &["c", "d", "e", "g"]);
}

/// Committed compound and enum types (libnetcdf reads the file), twelve attributes of them in dense
/// storage: the attributes libhdf5 lists, with their values.
#[test]
fn dense_attributes_of_committed_types() {
    let dir = tempfile::tempdir().unwrap();
    let Some(fx) = fixtures(dir.path()) else { return };
    let file = fx.join("committed_dense.h5");
    let store_path = scan_to_store(&file, dir.path(), "dense.vzarr", &ScanOptions::default());
    let e = array_json(&store_path, "e");
    let attributes = e["attributes"].as_object().unwrap();
    for i in 0..12 {
        assert_eq!(attributes[&format!("c{i:02}")], json!({"a": i, "b": f64::from(i) * 1.5}), "{e}");
    }
    assert_eq!(attributes["e"], json!([-1, 1, 1]), "{e}");
    // libhdf5 lists the same attributes (the system's libnetcdf 4.9.0 lists neither variable: their
    // types are committed in other groups; netCDF4-python's newer libnetcdf lists them, in this order).
    let mut theirs: Vec<String> =
        crate::common::with_hdf5_files(|| hdf5::File::open(&file).unwrap().dataset("e").unwrap().attr_names().unwrap());
    let mut ours: Vec<String> = attributes.keys().filter(|k| !k.starts_with("flag_")).cloned().collect();
    theirs.sort();
    ours.sort();
    assert_eq!(ours, theirs);
    let store = open_store(&store_path);
    assert_eq!(read(&store, "e", "").bytes, read_native(&file, "e", 4));
    verified(&store_path, &["c", "e"]);
}

/// Every shareable message in the shared object header message table, as a list (3 datasets) and as
/// a B-tree (60 more): values and attributes as libhdf5 reads them.
#[test]
fn shared_object_header_message_table() {
    let dir = tempfile::tempdir().unwrap();
    let Some(fx) = fixtures(dir.path()) else { return };
    let file = fx.join("sohm.h5");
    let store_path = scan_to_store(&file, dir.path(), "sohm.vzarr", &ScanOptions::default());
    let store = open_store(&store_path);
    let root = array_json(&store_path, "");
    assert_eq!(root["attributes"], json!({"title": "shared messages", "levels": [0, 1, 2, 3]}), "{root}");
    for i in 0..3 {
        let name = format!("v{i}");
        assert_eq!(read(&store, &name, "").bytes, read_native(&file, &name, 48), "{name}");
        let v = array_json(&store_path, &name);
        let scale = attr_numbers(&file, &name, "scale");
        assert_eq!(v["attributes"], json!({"units": "K", "scale": scale, "flag": i}), "{v}");
    }
    for i in [0, 23, 59] {
        let name = format!("many/d{i:02}");
        assert_eq!(read(&store, &name, "").bytes, read_native(&file, &name, 2 * (i + 1)), "{name}");
        let counts = attr_native(&file, &name, "counts");
        assert_eq!(array_json(&store_path, &name)["attributes"]["counts"], json!(counts), "{name}");
    }
    verified(&store_path, &["v0", "v2", "many/d59"]);
}

/// `DIMENSION_LIST` shorter than the rank, with an empty entry, naming a dataset that is no scale,
/// longer than the rank: no error; axes whose entry names a scale keep it, the others are named as
/// libnetcdf names an axis without a scale (libnetcdf itself gives them an invalid dimension id and
/// netCDF4-python cannot open the file), values as libhdf5 reads them.
#[test]
fn broken_dimension_lists_fall_back_to_phony_naming() {
    let dir = tempfile::tempdir().unwrap();
    let Some(fx) = fixtures(dir.path()) else { return };
    let file = fx.join("dimension_lists.h5");
    let store_path = scan_to_store(&file, dir.path(), "dims.vzarr", &ScanOptions::default());
    let store = open_store(&store_path);
    for name in ["short", "empty_entry", "not_a_scale", "long"] {
        assert_eq!(array_json(&store_path, name)["dimension_names"], json!(["x", "y"]), "{name}");
        assert_eq!(read(&store, name, "").bytes, read_native(&file, name, 48), "{name}");
    }
    // No scale on either axis: new phony dimensions (7 and 5 long), the second shared with `plain`.
    assert_eq!(array_json(&store_path, "odd")["dimension_names"], json!(["phony_dim_2", "phony_dim_3"]));
    assert_eq!(array_json(&store_path, "plain")["dimension_names"], json!(["phony_dim_3"]));
    verified(&store_path, &["short", "empty_entry", "not_a_scale", "long", "odd", "plain"]);
}

/// A dimension scale reached through a soft link from another group, and scales whose `NAME` is no
/// netCDF name: dimensions named as libnetcdf names them (after the scale's link, per group).
#[test]
fn scales_through_soft_links_and_with_any_name() {
    let dir = tempfile::tempdir().unwrap();
    let Some(fx) = fixtures(dir.path()) else { return };
    let file = fx.join("scales.h5");
    let store_path = scan_to_store(&file, dir.path(), "scales.vzarr", &ScanOptions::default());
    let theirs = crate::common::oracle_variables(&file);
    assert_eq!(theirs.len(), 6, "libnetcdf's variables");
    for var in theirs {
        let names: Vec<&str> = var.dims.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(array_json(&store_path, &var.path)["dimension_names"], json!(names), "{}", var.path);
    }
    verified(&store_path, &["v", "w", "xs", "g/x"]);
}
