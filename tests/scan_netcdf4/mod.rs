//! NetCDF-4 fixtures scanned through the library API: every variable read whole through the store
//! equals libnetcdf's read of the source file bit for bit, and each array's `zarr.json` agrees with
//! what libnetcdf reports (shape, data type, dimension names).

use std::path::Path;

use crate::common::*;

#[test]
fn monthly_deflate_shuffle_every_variable_equals_libnetcdf() {
    let f = Fixture::new(|d| fixtures::write_monthly(d, &fixtures::Monthly::new(2023, 2)));
    scan_and_compare(&f);
    let store = f.join("store.vzarr");
    let tas = array_json(&store, "tas");
    let codecs: Vec<&str> = tas["codecs"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(codecs, ["bytes", "numcodecs.shuffle", "numcodecs.zlib"]);
    assert_eq!(tas["chunk_grid"]["configuration"]["chunk_shape"], serde_json::json!([28, 9, 12]));
    // Contiguous coordinates and the scalar crs are there too (checked by the comparison above).
    assert_eq!(array_json(&store, "crs")["shape"], serde_json::json!([]));
}

#[test]
fn monthly_uncompressed_ten_day_chunks_with_short_last_chunk_equal_libnetcdf() {
    let f = Fixture::new(|d| fixtures::write_monthly(d, &fixtures::monthly_uncompressed_10_days(2024, 1)));
    scan_and_compare(&f);
    let tas = array_json(&f.join("store.vzarr"), "tas");
    // 31 days in chunks of 10: the fourth chunk holds one valid day.
    assert_eq!(tas["shape"], serde_json::json!([31, 18, 36]));
    assert_eq!(tas["chunk_grid"]["configuration"]["chunk_shape"], serde_json::json!([10, 9, 12]));
    assert_eq!(tas["codecs"].as_array().unwrap().len(), 1, "uncompressed: bytes codec only: {}", tas["codecs"]);
}

#[test]
fn kitchen_sink_every_type_group_and_scalar_equals_libnetcdf() {
    let f = Fixture::new(fixtures::write_kitchen_sink);
    scan_and_compare(&f);
    let store = f.join("store.vzarr");
    for group in ["model", "model/diagnostics"] {
        let meta: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(store.join(group).join("zarr.json")).unwrap()).unwrap();
        assert_eq!(meta["node_type"], "group", "{group}");
        assert_eq!(meta["zarr_format"], 3, "{group}");
    }
    let types: Vec<String> = oracle_variables(&f.path).iter().filter_map(|v| v.data_type.map(String::from)).collect();
    for t in ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float32", "float64"] {
        assert!(types.iter().any(|x| x == t), "the fixture covers {t}");
    }
}

#[test]
fn big_endian_variables_keep_their_byte_order_and_read_as_native_values() {
    let f = Fixture::new(fixtures::write_kitchen_sink);
    let store = scan_fixture(&f);
    for var in ["big_endian", "big_endian_contiguous"] {
        let meta = array_json(&store, var);
        assert_eq!(meta["codecs"][0]["name"], "bytes", "{var}");
        assert_eq!(meta["codecs"][0]["configuration"]["endian"], "big", "{var}");
        let ours = read(&open_store(&store), var, "");
        assert_same_elements(var, &ours.bytes, &oracle_read(&f.path, var, None), ours.data_type.size());
    }
}

#[test]
fn unwritten_chunks_read_as_the_fill_value() {
    let f = Fixture::new(fixtures::write_kitchen_sink);
    let store_path = scan_fixture(&f);
    let store = open_store(&store_path);
    let summary = store.info().arrays.iter().find(|a| a.path == "sparse").expect("sparse in vzarr.json").clone();
    assert!(summary.stats.missing > 0, "sparse has unwritten chunks: {summary:?}");
    assert_eq!(array_json(&store_path, "sparse")["fill_value"], -999.0);

    let ours = read(&store, "sparse", "");
    let theirs = oracle_read(&f.path, "sparse", None);
    assert_same_elements("sparse", &ours.bytes, &theirs, 4);
    // The comparison covers both written values and the fill value.
    let values = ours.to_vec::<f32>().unwrap();
    assert!(values.contains(&-999.0) && values.contains(&2.0), "{values:?}");
}

/// Set in the environment of the child process of
/// [`scanning_on_a_fresh_thread_prints_no_hdf5_diagnostics`].
const DIAG_CHILD: &str = "VZARR_TEST_DIAG_CHILD";

/// The child half of the test below: does nothing unless run by it. libnetcdf is initialised on this
/// thread (writing the fixture), then a file is scanned on a new thread.
#[test]
fn diag_child_scan_on_a_second_thread() {
    let Some(dir) = std::env::var_os(DIAG_CHILD) else { return };
    let path = fixtures::write_kitchen_sink(Path::new(&dir));
    std::thread::spawn(move || vzarr::scan_file(&path, &vzarr::ScanOptions::default()).map(|_| ()))
        .join()
        .expect("scan thread")
        .expect("scan");
}

/// libhdf5 (thread-safe build) keeps its error-printing switch per thread, and libnetcdf silences it
/// only on the thread that initialised it; a scan on any other thread must still not print HDF5's
/// internal error stacks (libnetcdf probes for optional attributes that usually do not exist).
#[test]
fn scanning_on_a_fresh_thread_prints_no_hdf5_diagnostics() {
    let dir = tempfile::tempdir().unwrap();
    let mut command = std::process::Command::new(std::env::current_exe().unwrap());
    command
        .args(["--exact", "scan_netcdf4::diag_child_scan_on_a_second_thread", "--nocapture", "--test-threads=1"])
        .env(DIAG_CHILD, dir.path())
        .stdout(std::process::Stdio::piped());
    let child = run(command);
    assert!(
        child.code == 0 && child.stdout.contains("1 passed"),
        "child run failed:\n{}\n{}",
        child.stdout,
        child.stderr
    );
    let stderr = &child.stderr;
    assert!(!stderr.contains("HDF5-DIAG"), "HDF5 error stacks printed by a scan:\n{stderr}");
}

/// The async API on a caller's runtime, reading into a caller's buffer.
#[test]
fn async_api_reads_into_a_caller_buffer() {
    let f = Fixture::new(|d| fixtures::write_monthly(d, &fixtures::Monthly::new(2023, 6)));
    let store_path = scan_fixture(&f);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let (buffer, shape) = runtime.block_on(async {
        let store =
            vzarr::Store::open(store_path.to_str().unwrap(), &crate::common::trusted(&store_path)).await.unwrap();
        let tas = store.array("tas").await.unwrap();
        let selection = vzarr::Selection::parse("2:25:2,4:,-7", &tas.shape()).unwrap();
        let shape = selection.out_shape();
        let mut buffer = vec![0u8; shape.iter().product::<u64>() as usize * 4];
        tas.read_into(&selection, &mut buffer, &vzarr::ReadOptions::default()).await.unwrap();
        (buffer, shape)
    });
    assert_eq!(shape, [12, 14]);
    let theirs = oracle_read(&f.path, "tas", Some(vec![range(2, 25, 2), range(4, 18, 1), netcdf::Extent::Index(29)]));
    assert_same_elements("tas[2:25:2,4:,-7]", &buffer, &theirs, 4);
}

/// Issue 26: a variable whose HDF5 dataset is shorter than its unlimited dimension along a second
/// axis too (`temp(time, time)` written as 2 x 3 while `time` is 3, as compliance-checker's
/// `bad_missing_data.nc`). libnetcdf reads the row past the dataset as the fill value when asked for
/// it alone, but a read of the whole variable returns memory it never wrote there; `verify` cuts its
/// comparison boxes at the HDF5 extent, so it reports no false difference, and the store equals
/// libnetcdf's reads of each part.
#[test]
fn variables_shorter_than_their_dimension_verify_against_reads_cut_at_the_extent() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("short.nc");
    with_hdf5_files(|| {
        let mut f = netcdf::create(&file).unwrap();
        f.add_unlimited_dimension("time").unwrap();
        let mut temp = f.add_variable::<i32>("temp", &["time", "time"]).unwrap();
        temp.set_fill_value(-999i32).unwrap();
        temp.put_values(&[1, 0, 1, 1, 1, 0], (0..2, 0..3)).unwrap();
    });
    let store_path = scan_to_store(&file, dir.path(), "s.vzarr", &vzarr::ScanOptions::default());
    let store = open_store(&store_path);
    let inside = oracle_read(&file, "temp", Some(vec![range(0, 2, 1), all(3)]));
    let past = oracle_read(&file, "temp", Some(vec![range(2, 3, 1), all(3)]));
    assert_same_elements("temp rows 0-1", &read(&store, "temp", "0:2,:").bytes, &inside, 4);
    assert_same_elements("temp row 2", &read(&store, "temp", "2:3,:").bytes, &past, 4);
    let run = cli_expect(&["verify".as_ref(), store_path.as_os_str()], 0);
    assert!(run.stdout.contains("ok   temp: 9 elements equal"), "{}", run.stdout);
}

/// Attribute types JSON cannot carry are kept in `zarr.json`'s extension field `"vzarr"`: every
/// numeric attribute's type, as libnetcdf reads it back, except the `int64` and `float64` JSON numbers
/// read as; a char array's `_FillValue` (which xarray's Zarr backend fails on) is withheld there, with
/// libnetcdf's value. Checked on a netCDF-4 and a classic (netCDF-3) file, both written by libnetcdf.
#[test]
fn attribute_types_and_withheld_fill_values_follow_libnetcdf() {
    use netcdf::AttributeValue as A;
    let dir = tempfile::tempdir().unwrap();
    for (name, options) in [("types4.nc", netcdf::Options::NETCDF4), ("types3.nc", netcdf::Options::CLASSIC)] {
        let file = dir.path().join(name);
        let classic = options.bits() == netcdf::Options::CLASSIC.bits();
        with_hdf5_files(|| {
            let mut f = netcdf::create_with(&file, options).unwrap();
            f.add_dimension("x", 3).unwrap();
            f.add_dimension("n", 4).unwrap();
            let mut v = f.add_variable::<i16>("packed", &["x"]).unwrap();
            v.put_attribute("scale_factor", 0.01f32).unwrap();
            v.put_attribute("add_offset", 273.15f32).unwrap();
            v.put_attribute("valid_range", vec![-100i16, 100]).unwrap();
            v.put_attribute("flag", 3i8).unwrap();
            v.put_attribute("count", 7i32).unwrap();
            v.put_attribute("weight", 0.5f64).unwrap();
            v.put_attribute("units", "K").unwrap();
            if !classic {
                v.put_attribute("mask", 200u8).unwrap();
                v.put_attribute("wide", vec![1u16, 2]).unwrap();
                v.put_attribute("id", 5u32).unwrap();
                v.put_attribute("big", 1i64 << 40).unwrap();
                v.put_attribute("ubig", 1u64 << 63).unwrap();
            }
            let mut code = f.add_variable::<classic::NcChar>("code", &["x", "n"]).unwrap();
            code.put_attribute("_FillValue", "e").unwrap();
            code.put_attribute("long_name", "a label").unwrap();
            f.enddef().unwrap();
            f.variable_mut("packed").unwrap().put_values(&[1i16, 2, 3], ..).unwrap();
            let mut code = f.variable_mut("code").unwrap();
            let text: Vec<classic::NcChar> = b"ab\0\0cd\0\0efgh".iter().map(|&b| classic::NcChar(b)).collect();
            code.put_values(&text, ..).unwrap();
        });
        let store = scan_to_store(&file, dir.path(), &format!("{name}.vzarr"), &vzarr::ScanOptions::default());
        let source = netcdf::open(&file).unwrap();
        for var in ["packed", "code"] {
            let meta = array_json(&store, var);
            let notes = &meta["vzarr"];
            let attrs = source.variable(var).unwrap();
            let mut expected = serde_json::Map::new();
            for a in attrs.attributes() {
                let t = match a.value().unwrap() {
                    A::Schar(_) | A::Schars(_) => "int8",
                    A::Uchar(_) | A::Uchars(_) => "uint8",
                    A::Short(_) | A::Shorts(_) => "int16",
                    A::Ushort(_) | A::Ushorts(_) => "uint16",
                    A::Int(_) | A::Ints(_) => "int32",
                    A::Uint(_) | A::Uints(_) => "uint32",
                    A::Ulonglong(_) | A::Ulonglongs(_) => "uint64",
                    A::Float(_) | A::Floats(_) => "float32",
                    _ => continue, // text, int64 and float64: what JSON reads back as
                };
                if !(var == "code" && a.name() == "_FillValue") {
                    expected.insert(a.name().to_string(), t.into());
                }
            }
            let types = notes.get("attribute_types").cloned().unwrap_or_else(|| serde_json::json!({}));
            assert_eq!(types, serde_json::Value::Object(expected), "{name} {var}: {meta}");
            // Both variables have notes (types, a withheld `_FillValue`): Zarr readers may ignore them.
            assert_eq!(notes["must_understand"], false, "{name} {var}");
        }
        let code = array_json(&store, "code");
        assert!(code["attributes"].get("_FillValue").is_none(), "{name}: withheld: {code}");
        let fill = match source.variable("code").unwrap().attribute_value("_FillValue").unwrap().unwrap() {
            A::Str(s) => s,
            A::Schar(c) => (c as u8 as char).to_string(),
            A::Uchar(c) => (c as char).to_string(),
            other => panic!("{name}: libnetcdf's char _FillValue: {other:?}"),
        };
        assert_eq!(code["vzarr"]["withheld_attributes"]["_FillValue"], fill, "{name}");
        // Zarr readers may ignore the field (`must_understand: false`): zarrs opens and reads the
        // materialized copy as libnetcdf reads the file.
        let copy = dir.path().join(format!("{name}.zarr"));
        cli_expect(&["materialize".as_ref(), store.as_os_str(), copy.as_os_str()], 0);
        let ours = crate::interop::zarrs_read(&crate::interop::zarrs_array(&copy, "packed"));
        assert_same_elements(name, &ours, &oracle_read(&file, "packed", None), 2);
    }
}
