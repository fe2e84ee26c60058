//! Concatenation along time (issue 3): uneven files, interior partial chunks, per-file time units,
//! input order, and the errors. Every value is compared with libnetcdf reads of the source files.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::archives::{monthly, write_series_file, yearly, SeriesFile, TimeUnits};
use crate::common::fixtures::days_in_month;
use vzarr::read::blocking::BlockingStore;
use vzarr::read::ReadOptions;
use vzarr::Selection;

fn vzarr() -> Command {
    crate::common::vzarr_command()
}

/// Writes the files, scans them with `--concat time` (inputs in the given order), returns the store.
fn scan(dir: &Path, files: &[SeriesFile], extra: &[&str]) -> (PathBuf, Vec<PathBuf>) {
    let paths: Vec<PathBuf> = files.iter().map(|f| write_series_file(dir, f)).collect();
    let store = dir.join("out.vzarr");
    let out =
        vzarr().arg("scan").args(&paths).args(["--concat", "time", "-o"]).arg(&store).args(extra).output().unwrap();
    assert!(out.status.success(), "scan failed: {}", String::from_utf8_lossy(&out.stderr));
    (store, paths)
}

/// Raw native bytes of a whole variable, read by libnetcdf.
fn oracle(path: &Path, var: &str) -> Vec<u8> {
    crate::common::with_hdf5_files(|| {
        let file = netcdf::open(path).unwrap();
        let v = file.variable(var).unwrap();
        v.get_raw_values(..).unwrap()
    })
}

fn oracle_f64(path: &Path, var: &str) -> (Vec<f64>, String) {
    crate::common::with_hdf5_files(|| {
        let file = netcdf::open(path).unwrap();
        let v = file.variable(var).unwrap();
        let units = match v.attribute_value("units") {
            Some(Ok(netcdf::AttributeValue::Str(s))) => s,
            _ => String::new(),
        };
        (v.get_values::<f64, _>(..).unwrap(), units)
    })
}

fn read(store: &Path, var: &str) -> vzarr::ArrayData {
    let store = BlockingStore::open(store.to_str().unwrap(), &crate::common::trusted(store)).unwrap();
    let array = store.array(var).unwrap();
    array.read(&Selection::all(&array.reader().shape()), &ReadOptions::default()).unwrap()
}

/// Every variable equals the files' values: time-dependent ones concatenated in time order, the others
/// equal to the first file's.
fn assert_exact(store: &Path, in_time_order: &[PathBuf], vars: &[&str]) {
    for var in vars {
        let ours = read(store, var);
        let expected: Vec<u8> = if ["lat", "lon", "crs"].contains(var) {
            oracle(&in_time_order[0], var)
        } else {
            in_time_order.iter().flat_map(|p| oracle(p, var)).collect()
        };
        assert_eq!(ours.bytes.len(), expected.len(), "{var}: length");
        let first_diff = ours.bytes.iter().zip(&expected).position(|(a, b)| a != b);
        assert_eq!(first_diff, None, "{var}: first differing byte");
    }
}

fn store_json(store: &Path, file: &str) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(store.join(file)).unwrap()).unwrap()
}

/// The explicit edges of dimension `d` from a rectilinear zarr.json (run-length pairs expanded).
fn edges(meta: &serde_json::Value, d: usize) -> Vec<u64> {
    assert_eq!(meta["chunk_grid"]["name"], "rectilinear", "{meta}");
    let entry = &meta["chunk_grid"]["configuration"]["chunk_shapes"][d];
    let mut out = Vec::new();
    for item in entry.as_array().expect("explicit edges") {
        match item {
            serde_json::Value::Array(pair) => {
                out.extend(std::iter::repeat_n(pair[0].as_u64().unwrap(), pair[1].as_u64().unwrap() as usize))
            }
            v => out.push(v.as_u64().unwrap()),
        }
    }
    out
}

fn array_info<'a>(info: &'a serde_json::Value, path: &str) -> &'a serde_json::Value {
    info["arrays"].as_array().unwrap().iter().find(|a| a["path"] == path).unwrap()
}

const ALL_VARS: [&str; 6] = ["tas", "time", "time_bnds", "lat", "lon", "crs"];

#[test]
fn monthly_files_of_2023_and_2024_get_month_length_edges() {
    let dir = tempfile::tempdir().unwrap();
    let files = monthly(2023..=2024, None, true);
    let (store, paths) = scan(dir.path(), &files, &[]);
    let month_lengths: Vec<u64> =
        (2023..=2024).flat_map(|y| (1..=12).map(move |m| days_in_month(y, m) as u64)).collect();
    assert!(month_lengths.contains(&29), "the archive includes 29 February 2024");
    assert_eq!(edges(&store_json(&store, "tas/zarr.json"), 0), month_lengths);
    assert_exact(&store, &paths, &ALL_VARS);
}

#[test]
fn yearly_files_chunked_by_61_days_read_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let files = yearly(2000..=2003, 61);
    let (store, paths) = scan(dir.path(), &files, &[]);
    assert_exact(&store, &paths, &ALL_VARS);
    // 366 = 6*61 and 365 = 5*61 + 60: the last chunk of 2001 and 2002 is partial and interior; it is
    // rewritten for each of the 2 x 2 lat/lon chunks. 2003's last chunk ends the array and stays.
    let info = store_json(&store, "vzarr.json");
    assert_eq!(array_info(&info, "tas")["rewritten_chunks"], 2 * 4);
    let e = edges(&store_json(&store, "tas/zarr.json"), 0);
    assert_eq!(e, [vec![61; 6], vec![61; 5], vec![60], vec![61; 5], vec![60], vec![61; 6]].concat());
}

#[test]
fn time_chunk_of_10_is_exact_compressed_or_not() {
    for compress in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let files = monthly(2023..=2023, Some(10), compress);
        let (store, paths) = scan(dir.path(), &files, &[]);
        assert_exact(&store, &paths, &ALL_VARS);
        let info = store_json(&store, "vzarr.json");
        let tas = array_info(&info, "tas");
        if compress {
            assert!(tas["stats"]["owned"].as_u64().unwrap() > 0, "compressed partial chunks are rewritten");
        } else {
            // Uncompressed, partial along the leading dimension: referenced by their valid prefix.
            assert_eq!(tas["stats"]["owned"], 0, "{tas}");
        }
        let e = edges(&store_json(&store, "tas/zarr.json"), 0);
        assert_eq!(&e[..4], [10, 10, 10, 1], "January: 10, 10, 10, 1");
    }
}

#[test]
fn per_file_time_units_are_reencoded_to_the_first_files() {
    let dir = tempfile::tempdir().unwrap();
    let mut files = monthly(2023..=2023, None, true);
    files.truncate(6);
    for f in &mut files {
        f.units = TimeUnits::HoursSinceStart;
    }
    let (store, paths) = scan(dir.path(), &files, &[]);
    assert_exact(&store, &paths, &["tas", "lat", "lon", "crs"]);
    let first_day = files[0].first_day;
    let mut expected = Vec::new();
    let mut expected_bounds = Vec::new();
    for (f, p) in files.iter().zip(&paths) {
        let (hours, units) = oracle_f64(p, "time");
        assert!(units.starts_with("hours since"), "{units}");
        // Instant in hours since the first file's start.
        expected.extend(hours.iter().map(|h| h + 24.0 * (f.first_day - first_day) as f64));
        let (bounds, _) = oracle_f64(p, "time_bnds");
        expected_bounds.extend(bounds.iter().map(|h| h + 24.0 * (f.first_day - first_day) as f64));
    }
    assert_eq!(read(&store, "time").to_f64_vec(), expected);
    assert_eq!(read(&store, "time_bnds").to_f64_vec(), expected_bounds);
    let out = vzarr().arg("verify").arg(&store).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
}

#[test]
fn shuffled_inputs_give_the_same_store() {
    let dir = tempfile::tempdir().unwrap();
    let files = monthly(2023..=2023, Some(10), true);
    let (ordered, _) = scan(&dir.path().join("a").tap_mkdir(), &files, &[]);
    let mut shuffled_files = files.clone();
    shuffled_files.reverse();
    shuffled_files.swap(2, 7);
    let dir_b = dir.path().join("b").tap_mkdir();
    let (shuffled, _) = scan(&dir_b, &shuffled_files, &[]);
    for var in ALL_VARS {
        for file in ["zarr.json", "manifest.bin"] {
            // The manifests' bindings differ by the source table digest only (the stores' sources
            // are in different directories).
            let a = without_sources_digest(std::fs::read(ordered.join(var).join(file)).unwrap(), file);
            let b = without_sources_digest(std::fs::read(shuffled.join(var).join(file)).unwrap(), file);
            assert!(a == b, "{var}/{file} differs with shuffled input");
        }
        assert_eq!(read(&ordered, var), read(&shuffled, var));
    }
}

/// A manifest's bytes with the source table digest of its binding zeroed (other files as they are).
fn without_sources_digest(mut bytes: Vec<u8>, file: &str) -> Vec<u8> {
    if file == "manifest.bin" {
        let end = vzarr::testing::ManifestHeader::parse(&bytes).unwrap().index_range().end as usize;
        bytes[end + 40..end + 72].fill(0);
        bytes[end + 92..end + 96].fill(0);
    }
    bytes
}

trait TapMkdir {
    fn tap_mkdir(self) -> Self;
}

impl TapMkdir for PathBuf {
    fn tap_mkdir(self) -> Self {
        std::fs::create_dir_all(&self).unwrap();
        self
    }
}

/// Scans and expects failure: one line on stderr naming `file_hint`, exit 1, nothing written.
fn assert_refused(files: &[SeriesFile], file_hint: &str, problem_hint: &str) {
    let dir = tempfile::tempdir().unwrap();
    let paths: Vec<PathBuf> = files.iter().map(|f| write_series_file(dir.path(), f)).collect();
    let store = dir.path().join("out.vzarr");
    let out = vzarr().arg("scan").args(&paths).args(["--concat", "time", "-o"]).arg(&store).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
    assert!(stderr.contains(file_hint) && stderr.contains(problem_hint), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().extension().is_none_or(|x| x != "nc"))
        .collect();
    assert!(leftovers.is_empty(), "nothing written: {leftovers:?}");
}

#[test]
fn other_dimension_length_differs() {
    let mut files = monthly(2023..=2023, None, true);
    files.truncate(3);
    files[2].ny = 11;
    assert_refused(&files, "tas_202303.nc", "lat");
}

#[test]
fn variable_missing_in_one_file() {
    let mut files = monthly(2023..=2023, None, true);
    files.truncate(3);
    files[0].with_pr = true;
    files[1].with_pr = true;
    assert_refused(&files, "tas_202303.nc", "pr");
}

#[test]
fn overlapping_times() {
    let mut files = monthly(2023..=2023, None, true);
    files.truncate(3);
    files[2].first_day = files[1].first_day + 5;
    assert_refused(&files, "tas_202303.nc", "overlap");
}

#[test]
fn different_calendars() {
    let mut files = monthly(2023..=2023, None, true);
    files.truncate(3);
    files[1].calendar = "noleap";
    assert_refused(&files, "tas_202302.nc", "calendar");
}

#[test]
fn a_variable_taken_once_must_be_identical_unless_take_first() {
    let mut files = monthly(2023..=2023, None, true);
    files.truncate(3);
    files[1].lat_shift = 0.25;
    assert_refused(&files, "tas_202302.nc", "lat: its data differs");
    let dir = tempfile::tempdir().unwrap();
    let (store, paths) = scan(dir.path(), &files, &["--take-first", "lat"]);
    assert_exact(&store, &paths, &["tas", "lat", "lon", "crs"]);
}
