//! Bad input to `vzarr scan`: one clear line on stderr naming the file (and the variable where there
//! is one), a non-zero exit, no panic, and nothing written: no store, no hidden staging directory.

use std::path::{Path, PathBuf};

use crate::common::*;

/// Scans `source` into `dir/out.vzarr` with `extra` flags; returns the run and asserts the directory
/// listing did not change.
fn scan_leaves_nothing(source: &Path, dir: &Path, extra: &[&str]) -> Run {
    let before = dir_entries(dir);
    let store = dir.join("out.vzarr");
    let mut args: Vec<&std::ffi::OsStr> = vec!["scan".as_ref(), source.as_os_str(), "-o".as_ref(), store.as_os_str()];
    args.extend(extra.iter().map(std::ffi::OsStr::new));
    let run = cli(&args);
    assert!(!store.exists(), "{}: a store was written", source.display());
    assert_eq!(dir_entries(dir), before, "{}: leftovers in the output directory", source.display());
    run
}

/// One line on stderr, containing every one of `needles`; exit 1; no panic.
fn assert_one_clear_line(run: &Run, needles: &[&str]) {
    assert_eq!(run.code, 1, "exit code; stderr:\n{}", run.stderr);
    assert!(!run.stderr.contains("panicked") && !run.stderr.contains("RUST_BACKTRACE"), "{}", run.stderr);
    let lines = run.stderr_lines();
    assert_eq!(lines.len(), 1, "exactly one line on stderr:\n{}", run.stderr);
    for needle in needles {
        assert!(lines[0].contains(needle), "{needle:?} missing from: {}", lines[0]);
    }
}

#[test]
fn truncated_hdf5_file() {
    let f = Fixture::new(fixtures::write_kitchen_sink);
    let truncated = f.join("truncated.nc");
    let bytes = std::fs::read(&f.path).unwrap();
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
    let run = scan_leaves_nothing(&truncated, f.dir.path(), &[]);
    assert_one_clear_line(&run, &["truncated.nc"]);
}

#[test]
fn truncated_plain_hdf5_file_keeping_only_the_superblock() {
    let f = Fixture::new(fixtures::write_plain_hdf5);
    let truncated = f.join("short.h5");
    let bytes = std::fs::read(&f.path).unwrap();
    std::fs::write(&truncated, &bytes[..3000]).unwrap();
    let run = scan_leaves_nothing(&truncated, f.dir.path(), &[]);
    assert_one_clear_line(&run, &["short.h5"]);
}

#[test]
fn text_file_is_not_hdf5_or_netcdf() {
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("notes.nc");
    std::fs::write(&text, "these are notes, not a NetCDF file\n".repeat(40)).unwrap();
    let run = scan_leaves_nothing(&text, dir.path(), &[]);
    assert_one_clear_line(&run, &["notes.nc", "not an HDF5, NetCDF or HDF4 file"]);
}

#[test]
fn empty_file() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.nc");
    std::fs::write(&empty, b"").unwrap();
    let run = scan_leaves_nothing(&empty, dir.path(), &[]);
    assert_one_clear_line(&run, &["empty.nc"]);
}

#[test]
fn nonexistent_path() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.nc");
    let run = scan_leaves_nothing(&missing, dir.path(), &[]);
    assert_one_clear_line(&run, &["missing.nc"]);
}

#[test]
fn glob_matching_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let pattern = dir.path().join("*.nc");
    let run = scan_leaves_nothing(&pattern, dir.path(), &[]);
    assert_one_clear_line(&run, &["*.nc"]);
}

#[test]
fn unsupported_filter_names_the_variable_and_the_filter() {
    let f = Fixture::new(fixtures::write_unsupported_filter);
    let run = scan_leaves_nothing(&f.path, f.dir.path(), &[]);
    assert_one_clear_line(&run, &["unsupported_filter.h5", "bitshuffle_data", "32008"]);
}

#[test]
fn skip_unsupported_writes_the_store_without_the_variable_and_exits_3() {
    let f = Fixture::new(fixtures::write_partly_unsupported);
    let store = f.join("skip.vzarr");
    let run =
        cli(&["scan".as_ref(), f.path.as_os_str(), "-o".as_ref(), store.as_os_str(), "--skip-unsupported".as_ref()]);
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert!(store.join("zarr.json").is_file(), "the store is written");
    let warnings: Vec<&str> = run.stderr_lines().into_iter().filter(|l| l.contains("warning")).collect();
    assert_eq!(warnings.len(), 1, "{}", run.stderr);
    assert!(warnings[0].contains("bitshuffle_data") && warnings[0].contains("32008"), "{}", warnings[0]);

    let info = cli_expect(&["info".as_ref(), store.as_os_str(), "--json".as_ref()], 0);
    let doc: serde_json::Value = serde_json::from_str(&info.stdout).unwrap();
    let arrays: Vec<&str> = doc["arrays"].as_array().unwrap().iter().map(|a| a["path"].as_str().unwrap()).collect();
    assert_eq!(arrays, ["good"]);
    assert!(doc["warnings"][0].as_str().unwrap().contains("bitshuffle_data"), "{}", doc["warnings"]);
    cli_expect(&["verify".as_ref(), store.as_os_str()], 0);
}

#[test]
fn skip_unsupported_with_nothing_left_still_writes_an_empty_store() {
    let f = Fixture::new(fixtures::write_unsupported_filter);
    let store = f.join("skip.vzarr");
    let run =
        cli(&["scan".as_ref(), f.path.as_os_str(), "-o".as_ref(), store.as_os_str(), "--skip-unsupported".as_ref()]);
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert!(run.stderr.contains("warning") && run.stderr.contains("bitshuffle_data"), "{}", run.stderr);
    let info = cli_expect(&["info".as_ref(), store.as_os_str(), "--json".as_ref()], 0);
    let doc: serde_json::Value = serde_json::from_str(&info.stdout).unwrap();
    assert_eq!(doc["arrays"], serde_json::json!([]));
}

#[test]
fn reading_a_missing_variable_or_a_bad_selection_is_one_line() {
    let f = Fixture::new(fixtures::write_kitchen_sink);
    let store = f.join("ks.vzarr");
    cli_expect(&["scan".as_ref(), f.path.as_os_str(), "-o".as_ref(), store.as_os_str()], 0);
    let out = f.join("x.npy");
    let run = cli(&["read".as_ref(), store.as_os_str(), "nope".as_ref(), "-o".as_ref(), out.as_os_str()]);
    assert_one_clear_line(&run, &["nope"]);
    let run = cli(&[
        "read".as_ref(),
        store.as_os_str(),
        "i8".as_ref(),
        "--select=9".as_ref(),
        "-o".as_ref(),
        out.as_os_str(),
    ]);
    assert_one_clear_line(&run, &["i8", "9"]);
    assert!(!out.exists(), "no .npy written on error");
    assert!(dir_entries(f.dir.path()).iter().all(|n| !n.contains(".npy")), "no temporary .npy left");
}

#[test]
fn opening_something_that_is_not_a_store_is_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let run = cli(&["info".as_ref(), dir.path().as_os_str()]);
    assert_one_clear_line(&run, &[&dir.path().display().to_string()]);
    let run = cli(&["verify".as_ref(), dir.path().join("absent.vzarr").as_os_str()]);
    assert_one_clear_line(&run, &["absent.vzarr"]);
}

/// A plain HDF5 file (superblock version 0) whose last bytes are a contiguous dataset's data, cut
/// short by 8 bytes with the superblock's end-of-file address patched to match: libhdf5 opens it, but
/// the dataset's data runs past the end of the file.
fn write_cut_contiguous(dir: &Path) -> PathBuf {
    let whole = dir.join("whole.h5");
    with_hdf5_files(|| {
        let file = hdf5::File::create(&whole).unwrap();
        let values: Vec<f64> = (0..1024).map(|i| f64::from(i) * 0.5).collect();
        file.new_dataset_builder().with_data(&values).create("x").unwrap();
    });
    let mut bytes = std::fs::read(&whole).unwrap();
    let dataset = scan(&whole, &vzarr::ScanOptions::default()).unwrap();
    let vzarr::dataset::ChunkEntry::Source { offset, length, .. } = dataset.arrays[0].chunks.entry(0) else {
        panic!("contiguous dataset not referenced");
    };
    assert_eq!(offset + length, bytes.len() as u64, "the fixture needs the data at the end of the file");
    assert_eq!(&bytes[..9], b"\x89HDF\r\n\x1a\n\x00", "superblock version 0");
    bytes.truncate(bytes.len() - 8);
    let eof = (bytes.len() as u64).to_le_bytes();
    bytes[40..48].copy_from_slice(&eof);
    let cut = dir.join("cut.h5");
    std::fs::write(&cut, bytes).unwrap();
    cut
}

#[test]
fn a_chunk_past_the_end_of_the_file_is_refused_at_scan() {
    let dir = tempfile::tempdir().unwrap();
    let cut = write_cut_contiguous(dir.path());
    let run = scan_leaves_nothing(&cut, dir.path(), &[]);
    assert_one_clear_line(&run, &["cut.h5", "x", "past the end"]);
}
