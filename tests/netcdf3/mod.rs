//! NetCDF-3 archives (issue 4): classic, 64-bit offset and 64-bit data files, record and non-record
//! variables, char variables, fill values, zero records, and concatenation of classic files. Every
//! variable read through vzarr equals libnetcdf's values of the same file, bit for bit.

use std::path::{Path, PathBuf};

use crate::common::classic::{write_mixed, write_monthly_classic, write_single_short, FORMATS};
use crate::common::{cli_expect, open_store, oracle_read, oracle_variables, read, scan_to_store};
use vzarr::ScanOptions;

/// Scans `file` and compares every variable with libnetcdf's read of it.
fn assert_exact(file: &Path, dir: &Path, options: &ScanOptions) -> PathBuf {
    let store_path = scan_to_store(file, dir, "nc3.vzarr", options);
    let store = open_store(&store_path);
    let vars = oracle_variables(file);
    assert!(!vars.is_empty());
    for var in &vars {
        let ours = read(&store, &var.path, "");
        let theirs = oracle_read(file, &var.path, None);
        assert_eq!(ours.bytes.len(), theirs.len(), "{}: {}", file.display(), var.path);
        assert!(ours.bytes == theirs, "{}: {} differs from libnetcdf", file.display(), var.path);
    }
    store_path
}

#[test]
fn every_format_and_variable_kind_reads_exactly() {
    for (tag, format) in FORMATS {
        let dir = tempfile::tempdir().unwrap();
        let file = write_mixed(dir.path(), &format!("mixed_{tag}.nc"), format, 5);
        let store = assert_exact(&file, dir.path(), &ScanOptions::default());
        assert_eq!(crate::common::array_json(&store, "name")["shape"], serde_json::json!([]));
        cli_expect(&["verify".to_string(), store.display().to_string()], 0);
    }
}

#[test]
fn zero_records() {
    for (tag, format) in FORMATS {
        let dir = tempfile::tempdir().unwrap();
        let file = write_mixed(dir.path(), &format!("empty_{tag}.nc"), format, 0);
        let store = assert_exact(&file, dir.path(), &ScanOptions::default());
        let temp = crate::common::array_json(&store, "temp");
        assert_eq!(temp["shape"], serde_json::json!([0, 4]));
    }
}

#[test]
fn a_single_short_record_variable_is_packed() {
    let dir = tempfile::tempdir().unwrap();
    let file = write_single_short(dir.path(), 7);
    let store = assert_exact(&file, dir.path(), &ScanOptions::default());
    let obs = crate::common::array_json(&store, "obs");
    assert_eq!(obs["codecs"][0]["configuration"]["endian"], "big");
}

#[test]
fn char_variables_are_fixed_width_strings() {
    let dir = tempfile::tempdir().unwrap();
    let file = write_mixed(dir.path(), "chars.nc", netcdf::Options::CLASSIC, 3);
    let store = assert_exact(&file, dir.path(), &ScanOptions::default());
    let station = crate::common::array_json(&store, "station");
    assert_eq!(
        station["data_type"],
        serde_json::json!({"name": "null_terminated_bytes", "configuration": {"length_bytes": 6}})
    );
    assert_eq!(station["shape"], serde_json::json!([4]));
    assert_eq!(station["dimension_names"], serde_json::json!(["x"]));
    let label = crate::common::array_json(&store, "label");
    assert_eq!(label["shape"], serde_json::json!([3]));
}

#[test]
fn large_non_record_variables_are_split_into_slabs() {
    let dir = tempfile::tempdir().unwrap();
    let file = write_monthly_classic(dir.path(), 2001, 1);
    // 31 x 6 x 8 floats = 5952 bytes per record variable; lat (24 bytes) split into slabs of 8 bytes.
    let options = ScanOptions { max_slab_bytes: 8, ..ScanOptions::default() };
    let store = assert_exact(&file, dir.path(), &options);
    let lat = crate::common::array_json(&store, "lat");
    assert_eq!(lat["chunk_grid"]["configuration"]["chunk_shape"], serde_json::json!([2]));
}

#[test]
fn twelve_monthly_classic_files_concatenate_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let files: Vec<PathBuf> = (1..=12).rev().map(|m| write_monthly_classic(dir.path(), 2001, m)).collect();
    let store = dir.path().join("year.vzarr");
    let mut args: Vec<String> = vec!["scan".into()];
    args.extend(files.iter().map(|f| f.display().to_string()));
    args.extend(["--concat".into(), "time".into(), "-o".into(), store.display().to_string()]);
    cli_expect(&args, 0);
    let in_order: Vec<&PathBuf> = files.iter().rev().collect();
    let opened = open_store(&store);
    for var in ["tas", "time"] {
        let ours = read(&opened, var, "");
        let theirs: Vec<u8> = in_order.iter().flat_map(|f| oracle_read(f, var, None)).collect();
        assert!(ours.bytes == theirs, "{var} differs from the files' values");
    }
    for var in ["lat", "lon"] {
        assert!(read(&opened, var, "").bytes == oracle_read(in_order[0], var, None), "{var}");
    }
    cli_expect(&["verify".to_string(), store.display().to_string()], 0);
}

/// Interleaved record variables whose records are larger than `--max-slab-mib` are split into slabs
/// along their first non-record dimension (issue 16: a 4 GB record was one chunk); every value equals
/// libnetcdf's.
#[test]
fn large_records_of_interleaved_variables_are_split_into_slabs() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big_records.nc");
    crate::common::with_hdf5_files(|| {
        let mut f = netcdf::create_with(&path, netcdf::Options::_64BIT_OFFSET).unwrap();
        f.add_unlimited_dimension("time").unwrap();
        f.add_dimension("y", 300).unwrap();
        f.add_dimension("x", 500).unwrap();
        f.add_variable::<f32>("big", &["time", "y", "x"]).unwrap();
        f.add_variable::<i32>("count", &["time"]).unwrap();
        f.enddef().unwrap();
        for r in 0..3usize {
            let values: Vec<f32> = (0..300 * 500).map(|i| (i + r * 7) as f32 * 0.25).collect();
            f.variable_mut("big").unwrap().put_values(&values, [r..r + 1, 0..300, 0..500]).unwrap();
            f.variable_mut("count").unwrap().put_values(&[r as i32 * 10], (r..r + 1,)).unwrap();
        }
    });
    let options = ScanOptions { max_slab_bytes: 128 << 10, ..ScanOptions::default() };
    let store = assert_exact(&path, dir.path(), &options);
    let meta = crate::common::array_json(&store, "big");
    // Records of 600,000 bytes in slabs of at most 128 KiB: 60 rows of 2000 bytes, 5 a record.
    assert_eq!(meta["chunk_grid"]["configuration"]["chunk_shape"], serde_json::json!([1, 60, 500]), "{meta}");
    let small = crate::common::array_json(&store, "count");
    assert_eq!(small["chunk_grid"]["configuration"]["chunk_shape"], serde_json::json!([1]), "{small}");
}
