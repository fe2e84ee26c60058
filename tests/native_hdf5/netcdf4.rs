//! NetCDF-4 conventions the native reader applies as libnetcdf does, each checked against libnetcdf on
//! a file libnetcdf wrote: a variable named as a dimension it is not the coordinate of (stored as
//! `_nc4_non_coord_NAME`), and `char` variables, whose last dimension becomes the string length as in
//! NetCDF-3.

use std::path::{Path, PathBuf};

use vzarr::ScanOptions;

use crate::common::classic::NcChar;
use crate::common::{array_json, assert_store_matches_oracle, open_store, oracle_read, read, scan_to_store, Fixture};

fn write_non_coordinate(dir: &Path) -> PathBuf {
    let path = dir.join("non_coord.nc");
    let mut f = netcdf::create(&path).unwrap();
    f.add_dimension("x", 5).unwrap();
    f.add_dimension("y", 2).unwrap();
    // `x(y, x)` has the dimension's name without being its coordinate.
    let mut x = f.add_variable::<f32>("x", &["y", "x"]).unwrap();
    let values: Vec<f32> = (0..10).map(|i| i as f32 * 1.5 - 3.0).collect();
    x.put_values(&values, ..).unwrap();
    let mut y = f.add_variable::<i32>("y", &["y"]).unwrap();
    y.put_values(&[10, 20], ..).unwrap();
    path
}

fn write_chars(dir: &Path) -> PathBuf {
    let path = dir.join("chars.nc");
    let mut f = netcdf::create(&path).unwrap();
    f.add_dimension("station", 3).unwrap();
    f.add_dimension("strlen", 8).unwrap();
    let names: Vec<NcChar> = b"alpha\0\0\0beta\0\0\0\0gamma-3\0".iter().map(|&b| NcChar(b)).collect();
    f.add_variable::<NcChar>("name", &["station", "strlen"]).unwrap().put_values(&names, ..).unwrap();
    let mut chunked = f.add_variable::<NcChar>("chunked_name", &["station", "strlen"]).unwrap();
    chunked.set_chunking(&[2, 8]).unwrap();
    chunked.put_values(&names, ..).unwrap();
    let mut split = f.add_variable::<NcChar>("split_name", &["station", "strlen"]).unwrap();
    split.set_chunking(&[2, 4]).unwrap();
    split.put_values(&names, ..).unwrap();
    // Strings of one character, as xarray writes `S1` data: `char code(station, string1)`.
    f.add_dimension("string1", 1).unwrap();
    let codes: Vec<NcChar> = b"abc".iter().map(|&b| NcChar(b)).collect();
    f.add_variable::<NcChar>("code", &["station", "string1"]).unwrap().put_values(&codes, ..).unwrap();
    path
}

#[test]
fn a_variable_named_as_a_dimension_it_is_not_the_coordinate_of() {
    let fixture = Fixture::new(write_non_coordinate);
    let store = scan_to_store(&fixture.path, fixture.dir.path(), "s.vzarr", &ScanOptions::default());
    assert_store_matches_oracle(&fixture.path, &store);
}

#[test]
fn char_variables_fold_their_string_dimension() {
    let fixture = Fixture::new(write_chars);
    let store_path = scan_to_store(&fixture.path, fixture.dir.path(), "s.vzarr", &ScanOptions::default());
    let store = open_store(&store_path);
    for (name, folded) in [("name", true), ("chunked_name", true), ("split_name", false), ("code", false)] {
        let meta = array_json(&store_path, name);
        let theirs = oracle_read(&fixture.path, name, None);
        let ours = read(&store, name, "");
        assert_eq!(ours.bytes, theirs, "{name}: bytes equal libnetcdf's");
        if folded {
            // Contiguous, or chunks holding whole strings: one 8-byte string per station.
            assert_eq!(meta["shape"], serde_json::json!([3]), "{name}");
            assert_eq!(meta["dimension_names"], serde_json::json!(["station"]), "{name}");
            assert_eq!(meta["data_type"]["name"], "null_terminated_bytes", "{name}");
        } else if name == "code" {
            // One character a string: folded, `code(station)` of S1 would read in xarray as one
            // string of 3 characters (it stacks every S1 array's last dimension).
            assert_eq!(meta["shape"], serde_json::json!([3, 1]), "{name}");
            assert_eq!(meta["dimension_names"], serde_json::json!(["station", "string1"]), "{name}");
        } else {
            // Chunks that cut strings stay one character per element.
            assert_eq!(meta["shape"], serde_json::json!([3, 8]), "{name}");
        }
    }
}

fn write_layouts(dir: &Path) -> PathBuf {
    let path = dir.join("layouts.nc");
    let mut f = netcdf::create(&path).unwrap();
    f.add_unlimited_dimension("time").unwrap();
    f.add_dimension("x", 6).unwrap();
    let mut chunked = f.add_variable::<f32>("chunked", &["time", "x"]).unwrap();
    chunked.set_chunking(&[1, 3]).unwrap();
    chunked.put_values(&[1.5f32; 12], (0..2, 0..6)).unwrap();
    // Fixed dimensions and no filter: libnetcdf stores it contiguous.
    let mut whole = f.add_variable::<f64>("whole", &["x"]).unwrap();
    whole.put_values(&[2.5f64; 6], ..).unwrap();
    path
}

/// What xarray's netCDF4 engine reports as `chunksizes`, `contiguous` and `unlimited_dims` is
/// recorded from the file (the notes `source_layout` and `unlimited_dims`), equal to libnetcdf's
/// `nc_inq_var_chunking` and `nc_inq_unlimdims`.
#[test]
fn source_layout_and_unlimited_dimensions_are_recorded_as_libnetcdf_reports_them() {
    let fixture = Fixture::new(write_layouts);
    let store = scan_to_store(&fixture.path, fixture.dir.path(), "s.vzarr", &ScanOptions::default());
    let file = netcdf::open(&fixture.path).unwrap();
    for name in ["chunked", "whole"] {
        let var = file.variable(name).unwrap();
        let layout = match var.chunking().unwrap() {
            Some(chunks) => serde_json::json!({ "chunks": chunks }),
            None => serde_json::json!("contiguous"),
        };
        let unlimited: Vec<String> = var.dimensions().iter().filter(|d| d.is_unlimited()).map(|d| d.name()).collect();
        let notes = &array_json(&store, name)["vzarr"];
        assert_eq!(notes["source_layout"], layout, "{name}");
        assert_eq!(
            notes.get("unlimited_dims").cloned().unwrap_or(serde_json::json!([])),
            serde_json::json!(unlimited),
            "{name}"
        );
    }
    assert_eq!(
        array_json(&store, "chunked")["vzarr"]["unlimited_dims"],
        serde_json::json!(["time"]),
        "the case checked"
    );
    assert_store_matches_oracle(&fixture.path, &store);
}

fn write_odd_names(dir: &Path) -> PathBuf {
    let path = dir.join("names.nc");
    let mut f = netcdf::create(&path).unwrap();
    f.add_dimension("n", 3).unwrap();
    f.add_variable::<i32>("c", &["n"]).unwrap().put_values(&[1, 2, 3], ..).unwrap();
    f.add_variable::<f64>("manifest.bin", &["n"]).unwrap().put_values(&[0.5, 1.5, 2.5], ..).unwrap();
    let mut g = f.add_group("g").unwrap();
    g.add_variable::<i32>("c", &["n"]).unwrap().put_values(&[4, 5, 6], ..).unwrap();
    g.add_variable::<i16>("a\\b", &["n"]).unwrap().put_values(&[-1i16, -2, -3], ..).unwrap();
    g.add_variable::<u8>("Καλημέρα", &["n"]).unwrap().put_values(&[7u8, 8, 9], ..).unwrap();
    path
}

/// Names Zarr v3 allows round-trip: `c` (at the root and in a group), a name of a vzarr file, a backslash,
/// non-ASCII letters; every value read back equals libnetcdf's.
#[test]
fn names_zarr_allows_are_stored_and_read_back() {
    let fixture = Fixture::new(write_odd_names);
    let store = scan_to_store(&fixture.path, fixture.dir.path(), "s.vzarr", &ScanOptions::default());
    assert_store_matches_oracle(&fixture.path, &store);
}

/// One month of a station file: `time` (unlimited), `label(time)` strings written for `labelled`
/// records only (the rest read as the empty string), and `station(station)` names.
fn write_strings(dir: &Path, month: u32, records: usize, labelled: usize) -> PathBuf {
    let path = dir.join(format!("strings_{month:02}.nc"));
    let mut f = netcdf::create(&path).unwrap();
    f.add_unlimited_dimension("time").unwrap();
    f.add_dimension("station", 2).unwrap();
    let mut time = f.add_variable::<f64>("time", &["time"]).unwrap();
    time.put_attribute("units", "days since 2000-01-01").unwrap();
    let days: Vec<f64> = (0..records).map(|i| f64::from(month) * 100.0 + i as f64).collect();
    time.put_values(&days, ..).unwrap();
    let mut label = f.add_string_variable("label", &["time"]).unwrap();
    for i in 0..labelled {
        let text = if i == 1 { String::new() } else { format!("Καλημέρα {month}/{i}") };
        label.put_string(&text, [i]).unwrap();
    }
    let mut station = f.add_string_variable("station", &["station"]).unwrap();
    station.put_string("Αθήνα", [0]).unwrap();
    station.put_string("Oslo", [1]).unwrap();
    path
}

fn libnetcdf_strings(file: &Path, var: &str) -> Vec<String> {
    let f = netcdf::open(file).unwrap();
    let v = f.variable(var).unwrap();
    let n = v.dimensions()[0].len();
    (0..n).map(|i| v.get_string([i]).unwrap()).collect()
}

/// netCDF-4 `string` variables are stored by the store (`string`, `vlen-utf8`) and read back as
/// libnetcdf reads them, also concatenated along time and where a variable is shorter than its
/// unlimited dimension; `verify` compares them with libnetcdf's.
#[test]
fn string_variables_are_stored_and_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let files = [write_strings(dir.path(), 1, 3, 3), write_strings(dir.path(), 2, 4, 2)];
    let store = dir.path().join("s.vzarr");
    let text = |p: &Path| p.display().to_string();
    let mut args = vec!["scan".to_string()];
    args.extend(files.iter().map(|f| text(f)));
    args.extend(["--concat".into(), "time".into(), "-o".into(), text(&store)]);
    crate::common::cli_expect(&args, 0);
    let opened = open_store(&store);
    for (var, expected) in [
        ("label", files.iter().flat_map(|f| libnetcdf_strings(f, "label")).collect::<Vec<_>>()),
        ("station", libnetcdf_strings(&files[0], "station")),
    ] {
        let array = opened.array(var).unwrap();
        let all = vzarr::grid::Selection::all(&array.reader().shape());
        assert_eq!(array.read_strings(&all).unwrap(), expected, "{var}");
        assert_eq!(array_json(&store, var)["data_type"], "string", "{var}");
    }
    assert!(libnetcdf_strings(&files[1], "label")[3].is_empty(), "unwritten records read as empty strings");
    let run = crate::common::cli_expect(&["verify".to_string(), text(&store)], 0);
    assert!(run.stdout.contains("ok   label: 7 elements equal"), "{}", run.stdout);
}

/// Writes (with netCDF4-python, as the netcdf crate cannot write enum values) a file that declares a
/// compound, an enum and a vlen type and has one enum variable.
fn write_user_types(python: &Path, dir: &Path) -> PathBuf {
    let path = dir.join("user_types.nc");
    let script = "import sys, netCDF4, numpy as np\n\
        f = netCDF4.Dataset(sys.argv[1], 'w')\n\
        f.createCompoundType(np.dtype([('a', 'i4'), ('b', 'f8')]), 'pair_t')\n\
        f.createVLType(np.int32, 'vl_t')\n\
        cloud_t = f.createEnumType(np.uint8, 'cloud_t', {'clear': 0, 'cumulus': 1, 'alto stratus': 2})\n\
        f.createDimension('x', 3)\n\
        f.createVariable('x', 'f4', ('x',))[:] = [1, 2, 3]\n\
        f.createVariable('cloud', cloud_t, ('x',))[:] = [0, 2, 1]\n\
        f.close()\n";
    let run = crate::common::run({
        let mut c = std::process::Command::new(python);
        c.args(["-c", script]).arg(&path);
        c
    });
    assert_eq!(run.code, 0, "{}", run.stderr);
    path
}

/// A NetCDF-4 file that declares user-defined types scans whole; an enum variable is its integer type
/// with the members as CF flags (as libnetcdf describes the type), values equal libnetcdf's, and
/// `verify` passes.
#[test]
fn declared_types_and_enums_of_netcdf4_files() {
    let Some(python) = crate::interop::python() else {
        eprintln!("notice: no Python with netCDF4 (run tests/python/setup.sh); the enum check not run");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let file = write_user_types(&python, dir.path());
    let store = scan_to_store(&file, dir.path(), "s.vzarr", &ScanOptions::default());
    let opened = open_store(&store);
    for var in ["x", "cloud"] {
        assert_eq!(read(&opened, var, "").bytes, oracle_read(&file, var, None), "{var}");
    }
    let (names, values) = {
        let f = netcdf::open(&file).unwrap();
        let netcdf::types::NcVariableType::Enum(e) = f.variable("cloud").unwrap().vartype() else {
            panic!("libnetcdf sees no enum")
        };
        let netcdf::types::EnumTypeValues::U8(values) = e.fieldvalues else { panic!("not a u8 enum") };
        (e.fieldnames, values)
    };
    let attrs = &array_json(&store, "cloud")["attributes"];
    assert_eq!(attrs["flag_values"], serde_json::json!(values));
    let meanings: Vec<String> = names.iter().map(|n| n.replace(' ', "_")).collect();
    assert_eq!(attrs["flag_meanings"], meanings.join(" "));
    assert_eq!(array_json(&store, "cloud")["data_type"], "uint8");
    // The members themselves, for vzarr's xarray engine (libnetcdf's names, not the flags' spelling).
    let members: serde_json::Map<String, serde_json::Value> =
        names.iter().zip(&values).map(|(n, v)| (n.clone(), (*v).into())).collect();
    assert_eq!(array_json(&store, "cloud")["vzarr"]["enum"], serde_json::Value::Object(members));
    let text = store.display().to_string();
    crate::common::cli_expect(&["verify", &text], 0);
}
