//! The native HDF5 reader against libhdf5, on the h5py fixtures of every format bound
//! (`fixtures/hdf5/make_fixtures.py`: libver earliest, v110, v112, v114, latest = HDF5 2.0, and a user
//! block): every chunk reference the scan finds equals libhdf5's by-coordinate lookup (offset, length,
//! and missing where libhdf5 has none), and every value read through the store equals libhdf5's read.
//! The HDF5 2.0 file, which Debian's libhdf5 1.10 cannot open, is compared with its v114 twin (same
//! generator, same values) read by libhdf5, and with h5py itself in the Python check.

mod hostile;
mod legacy;
mod netcdf4;

use std::path::{Path, PathBuf};

use vzarr::manifest::ChunkEntry;
use vzarr::{ScanOptions, VirtualDataset};

use crate::common::hdf5_oracle::{chunk_at, chunk_shape, dataset_paths, libhdf5_opens, read_native};
use crate::common::{open_store, read, scan, scan_to_store};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/hdf5").join(name)
}

const READABLE_BY_LIBHDF5: [&str; 5] =
    ["libver_earliest.h5", "libver_v110.h5", "libver_v112.h5", "libver_v114.h5", "userblock.h5"];

/// Checks every chunk of every chunked dataset of `file` against libhdf5; returns how many chunks
/// were compared.
fn assert_chunks_match_libhdf5(file: &Path, dataset: &VirtualDataset) -> usize {
    let mut compared = 0;
    for path in dataset_paths(file) {
        let Some(chunk) = chunk_shape(file, &path) else { continue };
        let array = dataset.array(&path).unwrap_or_else(|| panic!("{}: {path} not scanned", file.display()));
        let grid = &array.metadata.chunk_grid;
        assert_eq!(grid.grid_shape().len(), chunk.len(), "{path}: rank");
        for linear in 0..grid.num_chunks() {
            let coords = grid.chunk_coords(linear);
            let origin: Vec<u64> = coords.iter().zip(&chunk).map(|(c, n)| c * n).collect();
            let theirs = chunk_at(file, &path, &origin);
            let ours = array.chunks.entries[linear as usize];
            match (ours, theirs) {
                (ChunkEntry::Missing, None) => {}
                (ChunkEntry::Source { offset, length, .. }, Some(lib)) if lib.filter_mask == 0 => {
                    assert_eq!(
                        (offset, length),
                        (lib.offset, lib.length),
                        "{}: {path}: chunk {origin:?}",
                        file.display()
                    );
                }
                other => panic!("{}: {path}: chunk {origin:?}: vzarr vs libhdf5: {other:?}", file.display()),
            }
            compared += 1;
        }
    }
    compared
}

/// Reads every array of the store made from `scanned_file` whole and compares it with libhdf5's read of
/// the same dataset in `oracle_file`.
fn assert_values_match_libhdf5(scanned_file: &Path, oracle_file: &Path) {
    let dir = tempfile::tempdir().unwrap();
    let store_path = scan_to_store(scanned_file, dir.path(), "s.vzarr", &ScanOptions::default());
    let store = open_store(&store_path);
    let paths = dataset_paths(oracle_file);
    assert!(paths.len() > 20, "{}: fixture has datasets", oracle_file.display());
    for path in paths {
        let ours = read(&store, &path, "");
        let theirs = read_native(oracle_file, &path, ours.bytes.len());
        assert!(ours.bytes == theirs, "{}: {path}: values differ from libhdf5's", scanned_file.display());
    }
}

#[test]
fn chunk_references_equal_libhdf5s_for_every_format_bound() {
    for name in READABLE_BY_LIBHDF5 {
        let file = fixture(name);
        assert!(libhdf5_opens(&file), "{name}");
        let dataset = scan(&file, &ScanOptions::default()).unwrap_or_else(|e| panic!("{e}"));
        let compared = assert_chunks_match_libhdf5(&file, &dataset);
        // The v110+ files hold the 2048-chunk paged fixed array.
        assert!(compared > if name.contains("v1") { 2000 } else { 50 }, "{name}: {compared} chunks compared");
    }
}

#[test]
fn values_equal_libhdf5s_for_every_format_bound() {
    for name in READABLE_BY_LIBHDF5 {
        assert_values_match_libhdf5(&fixture(name), &fixture(name));
    }
}

#[test]
fn hdf5_2_format_is_read_without_libhdf5() {
    let latest = fixture("libver_latest.h5");
    // Debian's libhdf5 1.10 cannot open what HDF5 2.0 writes with libver="latest": the reason the
    // scanner is native. (Where a newer libhdf5 opens it, it is its own oracle.)
    let oracle = if libhdf5_opens(&latest) { latest.clone() } else { fixture("libver_v114.h5") };
    assert_values_match_libhdf5(&latest, &oracle);
}

#[test]
fn dimension_scales_and_attributes_of_plain_hdf5() {
    use crate::common::hdf5_oracle::{attr_numbers, attr_strings};
    let file = fixture("libver_v114.h5");
    let dataset = scan(&file, &ScanOptions::default()).unwrap();
    let field = dataset.array("field").unwrap();
    // The generator attaches scale `y` to axis 0 and `x` to axis 1; their names are their NAME attributes.
    let scale_names = [attr_strings(&file, "y", "NAME"), attr_strings(&file, "x", "NAME")].concat();
    assert_eq!(field.metadata.dimension_names.clone().unwrap(), scale_names, "scales name the dimensions");
    let attributes = &field.metadata.attributes;
    assert_eq!(attributes["units"], attr_strings(&file, "field", "units")[0].as_str());
    assert_eq!(attributes["long_name"], serde_json::json!(attr_strings(&file, "field", "long_name")));
    assert_eq!(attributes["attr_19"], attr_numbers(&file, "field", "attr_19")[0], "dense attribute storage");
    assert!(!attributes.contains_key("DIMENSION_LIST"), "bookkeeping hidden");
    let root = &dataset.groups[0].attributes;
    assert_eq!(root["one_int"], attr_numbers(&file, "", "one_int")[0], "one-element attributes are scalars");
    let numbers: Vec<serde_json::Value> =
        attr_numbers(&file, "", "numbers").into_iter().map(vzarr::metadata::float_attribute).collect();
    assert_eq!(root["numbers"], serde_json::Value::Array(numbers), "non-finite floats as JSON names");
    assert_eq!(root["fixed"], attr_strings(&file, "", "fixed")[0].trim_end_matches('\0'));
    let links = crate::common::hdf5_oracle::dataset_paths(&file);
    assert!(links.iter().filter(|p| p.starts_with("many/links/")).all(|p| dataset.array(p).is_some()));
    assert_eq!(links.iter().filter(|p| p.starts_with("many/links/")).count(), 20, "dense link storage");
}

#[test]
fn types_without_a_zarr_form_are_named_per_variable() {
    let file = fixture("unsupported_types.h5");
    let err = scan(&file, &ScanOptions::default()).unwrap_err().to_string();
    assert!(err.contains("unsupported_types.h5: compound: cannot reference elements of compound type"), "{err}");
    let options = ScanOptions { skip_unsupported: true, ..ScanOptions::default() };
    let dataset = scan(&file, &options).unwrap();
    let arrays: Vec<&str> = dataset.arrays.iter().map(|a| a.path.as_str()).collect();
    assert_eq!(arrays, ["fine"]);
    let left_out: Vec<String> = dataset.warnings.iter().map(|w| format!("{}: {}", w.variable, w.message)).collect();
    for expected in [
        "compound: left out: cannot reference elements of compound type",
        "enum: left out: cannot reference elements of enum type",
        "opaque: left out: cannot reference elements of opaque type",
        "vlen_ints: left out: cannot reference elements of variable-length type",
        "vlen_strings: left out: cannot reference elements of variable-length string type",
    ] {
        assert!(left_out.iter().any(|w| w == expected), "{expected} in {left_out:?}");
    }
    let theirs = read_native(&file, "fine", 16);
    let dir = tempfile::tempdir().unwrap();
    let store = scan_to_store(&file, dir.path(), "s.vzarr", &options);
    assert_eq!(read(&open_store(&store), "fine", "").bytes, theirs);
}

/// h5py (libhdf5 2.0) agrees with vzarr on every fixture, the HDF5 2.0 one included: every chunk
/// reference of the kerchunk export and every value zarr-python reads through it
/// (`tests/python/check_hdf5.py`).
#[test]
fn h5py_agrees_on_every_fixture() {
    let Some(python) = crate::interop::python() else {
        eprintln!("notice: no Python with h5py (run tests/python/setup.sh); the h5py check not run");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/check_hdf5.py");
    for name in READABLE_BY_LIBHDF5.iter().chain(&["libver_latest.h5"]) {
        let source = fixture(name);
        let store = scan_to_store(&source, dir.path(), &format!("{name}.vzarr"), &ScanOptions::default());
        let refs = dir.path().join(format!("{name}.json"));
        let text = |p: &Path| p.display().to_string();
        crate::common::cli_expect(&["export".to_string(), text(&store), "--kerchunk".into(), text(&refs)], 0);
        let mut command = std::process::Command::new(&python);
        command.arg(&script).arg("--refs").arg(&refs).arg(&source).stdout(std::process::Stdio::piped());
        let run = crate::common::run(command);
        assert_eq!(run.code, 0, "check_hdf5.py {name}:\n{}\n{}", run.stdout, run.stderr);
        assert!(run.stdout.contains(" passed, 0 failed"), "{}", run.stdout);
    }
}
