//! Store safety: an existing store is never clobbered without `--overwrite` and is replaced atomically
//! with it; a source file that changed after the scan is refused; `verify` really compares values.

use std::path::Path;

use crate::common::*;
use vzarr::{NativeWriter, ScanOptions, WriteOptions, Writer};

fn scan_args<'a>(source: &'a Path, store: &'a Path) -> Vec<&'a std::ffi::OsStr> {
    vec!["scan".as_ref(), source.as_os_str(), "-o".as_ref(), store.as_os_str()]
}

#[test]
fn scanning_onto_an_existing_store_fails_and_leaves_it_intact() {
    let ks = Fixture::new(fixtures::write_kitchen_sink);
    let monthly = Fixture::new(|d| fixtures::write_monthly(d, &fixtures::Monthly::new(2023, 3)));
    let store = ks.join("s.vzarr");
    cli_expect(&scan_args(&ks.path, &store), 0);
    let before = crate::common::tree_files(&store);
    let listing = dir_entries(ks.dir.path());

    let run = cli(&scan_args(&monthly.path, &store));
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(run.stderr_lines().len(), 1, "{}", run.stderr);
    assert!(run.stderr.contains("s.vzarr") && run.stderr.contains("--overwrite"), "{}", run.stderr);
    assert!(crate::common::tree_files(&store) == before, "the old store changed");
    assert_eq!(dir_entries(ks.dir.path()), listing, "leftovers next to the store");
    cli_expect(&["verify".as_ref(), store.as_os_str()], 0);
}

#[test]
fn overwrite_replaces_the_store_completely() {
    let ks = Fixture::new(fixtures::write_kitchen_sink);
    let monthly = Fixture::new(|d| fixtures::write_monthly(d, &fixtures::Monthly::new(2023, 3)));
    let store = ks.join("s.vzarr");
    cli_expect(&scan_args(&ks.path, &store), 0);
    let listing = dir_entries(ks.dir.path());

    let mut args = scan_args(&monthly.path, &store);
    args.push("--overwrite".as_ref());
    cli_expect(&args, 0);
    assert_eq!(dir_entries(ks.dir.path()), listing, "no old or staging directory left next to the store");
    // Nothing of the old store survives: its arrays and groups are gone.
    assert!(!store.join("model").exists() && !store.join("i8").exists(), "old nodes survived");
    let doc: serde_json::Value =
        serde_json::from_str(&cli_expect(&["info".as_ref(), store.as_os_str(), "--json".as_ref()], 0).stdout).unwrap();
    let mut arrays: Vec<&str> = doc["arrays"].as_array().unwrap().iter().map(|a| a["path"].as_str().unwrap()).collect();
    arrays.sort_unstable();
    assert_eq!(arrays, ["crs", "lat", "lon", "tas", "time", "time_bnds"]);
    cli_expect(&["verify".as_ref(), store.as_os_str()], 0);
}

#[test]
fn library_writer_refuses_an_existing_destination() {
    let f = Fixture::new(fixtures::write_kitchen_sink);
    let store = scan_fixture(&f);
    let before = crate::common::tree_files(&store);
    let dataset = scan(&f.path, &ScanOptions::default()).unwrap();
    let err = NativeWriter.write(&dataset, &store, &WriteOptions::default()).expect_err("exists");
    assert!(matches!(err, vzarr::WriteError::Exists { .. }), "{err}");
    assert!(crate::common::tree_files(&store) == before);
    // A plain file in the way is not replaced either.
    let file = f.join("file.vzarr");
    std::fs::write(&file, b"keep me").unwrap();
    assert!(NativeWriter.write(&dataset, &file, &WriteOptions::default()).is_err());
    assert_eq!(std::fs::read(&file).unwrap(), b"keep me");
}

/// A copy of the kitchen sink scanned into a store, for tests that then change the copy.
fn scanned_copy() -> (Fixture, std::path::PathBuf) {
    let f = Fixture::new(fixtures::write_kitchen_sink);
    let store = scan_fixture(&f);
    (f, store)
}

fn assert_reads_fail_as_changed(f: &Fixture, store: &Path) {
    let err = try_read(&open_store(store), "i32", "").expect_err("reading a changed source");
    assert!(err.contains("changed") && err.contains("kitchen_sink.nc"), "{err}");
    let run = cli(&["verify".as_ref(), store.as_os_str()]);
    assert_eq!(run.code, 1, "verify of a changed source: {}\n{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("FAIL") && run.stdout.contains("changed"), "{}", run.stdout);
    let out = f.join("x.npy");
    let run = cli(&["read".as_ref(), store.as_os_str(), "i32".as_ref(), "-o".as_ref(), out.as_os_str()]);
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("changed"), "{}", run.stderr);
}

#[test]
fn a_source_that_grew_after_the_scan_is_refused() {
    let (f, store) = scanned_copy();
    let mut file = std::fs::OpenOptions::new().append(true).open(&f.path).unwrap();
    std::io::Write::write_all(&mut file, b"\0").unwrap();
    drop(file);
    assert_reads_fail_as_changed(&f, &store);
}

#[test]
fn a_source_rewritten_with_the_same_size_is_refused() {
    let (f, store) = scanned_copy();
    let size = std::fs::metadata(&f.path).unwrap().len();
    let file = std::fs::OpenOptions::new().write(true).open(&f.path).unwrap();
    let later = std::fs::metadata(&f.path).unwrap().modified().unwrap() + std::time::Duration::from_secs(5);
    file.set_modified(later).unwrap();
    drop(file);
    assert_eq!(std::fs::metadata(&f.path).unwrap().len(), size);
    assert_reads_fail_as_changed(&f, &store);
    let out = f.join("touched.npy");
    let args = |extra: &[&str]| {
        let mut a: Vec<std::ffi::OsString> = vec!["read".into(), store.clone().into(), "i32".into(), "-o".into()];
        a.push(out.clone().into());
        a.extend(extra.iter().map(std::ffi::OsString::from));
        a
    };
    let run = cli(&args(&[]));
    assert!(run.stderr.contains("source file changed since the scan (modification time was "), "{}", run.stderr);
    // Only touched: read without the check, the values are libnetcdf's.
    let run = cli(&args(&["--no-check-sources"]));
    assert_eq!(run.code, 0, "{}", run.stderr);
    let ours = crate::common::parse_npy(&std::fs::read(&out).unwrap());
    assert!(ours.data == crate::common::oracle_read(&f.path, "i32", None), "i32 read without the check");
}

/// Edits `array`'s `zarr.json` in `store` with `edit`.
fn edit_array_json(store: &Path, array: &str, edit: impl FnOnce(&mut serde_json::Value)) {
    let path = store.join(array).join("zarr.json");
    let mut doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    edit(&mut doc);
    std::fs::write(&path, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
}

/// Runs `vzarr verify store`: exit code and stdout (one `ok`/`FAIL` line per array).
fn verify(store: &Path) -> (i32, String) {
    let run = cli(&["verify".as_ref(), store.as_os_str()]);
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    (run.code, run.stdout)
}

fn line_of<'a>(stdout: &'a str, array: &str) -> &'a str {
    stdout
        .lines()
        .find(|l| l.split_whitespace().nth(1) == Some(&format!("{array}:")))
        .unwrap_or_else(|| panic!("no line for {array}:\n{stdout}"))
}

#[test]
fn verify_finds_a_wrong_fill_value() {
    let (_f, store) = scanned_copy();
    // Unwritten chunks of `sparse` would decode as 0.0 instead of the file's -999.0: the manifest's
    // binding to the metadata it was written for refuses the edited document.
    edit_array_json(&store, "sparse", |doc| doc["fill_value"] = serde_json::json!(0.0));
    let (code, stdout) = verify(&store);
    assert_eq!(code, 1, "{stdout}");
    let line = line_of(&stdout, "sparse");
    assert!(line.starts_with("FAIL") && line.contains("integrity: zarr.json"), "{line}");
    assert!(line_of(&stdout, "i32").starts_with("ok"), "{stdout}");
    assert_eq!(stdout.lines().filter(|l| l.starts_with("FAIL")).count(), 1, "{stdout}");
}

#[test]
fn verify_finds_manifests_swapped_between_arrays_of_the_same_layout() {
    let (_f, store) = scanned_copy();
    // i32 and u32: same shape, chunks, codecs and element size, different values. Swapping their
    // manifests gives arrays that decode without error but hold each other's bits.
    assert_eq!(array_json(&store, "i32")["codecs"], array_json(&store, "u32")["codecs"]);
    let (a, b) = (store.join("i32").join("manifest.bin"), store.join("u32").join("manifest.bin"));
    let tmp = store.join("swap.bin");
    std::fs::rename(&a, &tmp).unwrap();
    std::fs::rename(&b, &a).unwrap();
    std::fs::rename(&tmp, &b).unwrap();
    let (code, stdout) = verify(&store);
    assert_eq!(code, 1, "{stdout}");
    for array in ["i32", "u32"] {
        let line = line_of(&stdout, array);
        assert!(line.starts_with("FAIL") && line.contains("differ"), "{line}");
    }
    assert!(line_of(&stdout, "i16").starts_with("ok"), "{stdout}");
}

#[test]
fn verify_finds_a_wrong_byte_order() {
    let (_f, store) = scanned_copy();
    edit_array_json(&store, "big_endian_contiguous", |doc| {
        doc["codecs"][0]["configuration"]["endian"] = serde_json::json!("little")
    });
    let (code, stdout) = verify(&store);
    assert_eq!(code, 1, "{stdout}");
    let line = line_of(&stdout, "big_endian_contiguous");
    assert!(line.starts_with("FAIL") && line.contains("integrity: zarr.json"), "{line}");
}
