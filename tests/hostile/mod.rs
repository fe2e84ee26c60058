//! Hostile NetCDF-3 input (issue 14, items 1-4 and 8): files whose apparent size makes every length
//! check pass (sparse files), absurd ranks, duplicate names. Each runs the real binary with its address
//! space capped and a timeout: the answer is exact values or one clear line, never an abort or a hang.

use std::path::{Path, PathBuf};

use crate::common::hostile::{cli_limited, write_sparse, Cdf2, CHILD_TIMEOUT, NC_BYTE, NC_DOUBLE, NC_FLOAT};
use crate::common::{assert_same_elements, open_store, oracle_read, range, read, rebind, Run};

/// `scan file -o dir/out.vzarr` (plus `extra`), limited.
fn scan(file: &Path, dir: &Path, extra: &[&str]) -> (Run, PathBuf) {
    let store = dir.join("out.vzarr");
    let mut args: Vec<&std::ffi::OsStr> = vec!["scan".as_ref(), file.as_os_str(), "-o".as_ref(), store.as_os_str()];
    args.extend(extra.iter().map(std::ffi::OsStr::new));
    (cli_limited(&args, CHILD_TIMEOUT), store)
}

/// Exit 1, one stderr line naming the file and containing every needle, no store written.
fn assert_refused(run: &Run, store: &Path, needles: &[&str]) {
    assert_eq!(run.code, 1, "exit code; stderr:\n{}", run.stderr);
    let lines = run.stderr_lines();
    assert_eq!(lines.len(), 1, "one line on stderr:\n{}", run.stderr);
    for needle in needles {
        assert!(lines[0].contains(needle), "{needle:?} missing from: {}", lines[0]);
    }
    assert!(!store.exists(), "a store was written");
}

/// The first and last `n` values of 1-d `var` read through `store` equal libnetcdf's.
fn assert_ends_match_oracle(file: &Path, store: &Path, var: &str, len: u64, element_size: usize) {
    let opened = open_store(store);
    for (spec, start) in [(":16".to_string(), 0), (format!("{}:", len - 16), len - 16)] {
        let ours = read(&opened, var, &spec);
        let theirs = oracle_read(file, var, Some(vec![range(start, start + 16, 1)]));
        assert_same_elements(&format!("{var}[{spec}]"), &ours.bytes, &theirs, element_size);
    }
}

/// Chunks of `var` in the store's summary.
fn chunks(store: &Path, var: &str) -> u64 {
    let info = open_store(store).info().clone();
    info.arrays.iter().find(|a| a.path == var).map(|a| a.chunks).expect("array in store")
}

#[test]
fn the_only_record_variable_with_2_to_the_32_records_is_referenced_as_slabs() {
    let dir = tempfile::tempdir().unwrap();
    let numrecs = 0xFFFF_FFF0u32;
    let mut cdf = Cdf2 { numrecs, dims: vec![("time".into(), 0)], ..Cdf2::default() };
    cdf.vars.push(("v".into(), vec![0], NC_FLOAT, 0));
    let header = cdf.encode(|_| 0);
    let len = cdf.vars[0].3 + 4 * u64::from(numrecs);
    let file = write_sparse(dir.path(), "records.nc", &header, len);
    let (run, store) = scan(&file, dir.path(), &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    // Slabs of 8 to 16 MiB (a divisor of the record count is preferred).
    assert!(chunks(&store, "v") <= 2 * (len >> 24) + 2, "one reference per slab, not per record");
    assert_ends_match_oracle(&file, &store, "v", u64::from(numrecs), 4);
}

#[test]
fn a_streaming_byte_record_variable_in_an_8_gib_file_is_referenced_as_slabs() {
    let dir = tempfile::tempdir().unwrap();
    let mut cdf = Cdf2 { numrecs: u32::MAX, dims: vec![("time".into(), 0)], ..Cdf2::default() };
    cdf.vars.push(("b".into(), vec![0], NC_BYTE, 0));
    let header = cdf.encode(|_| 0);
    let file = write_sparse(dir.path(), "streaming.nc", &header, 8 << 30);
    let (run, store) = scan(&file, dir.path(), &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let records = (8u64 << 30) - cdf.vars[0].3;
    assert_eq!(open_store(&store).array("b").unwrap().reader().shape(), vec![records]);
    assert!(chunks(&store, "b") <= 2 * 512 + 2, "one reference per slab, not per record");
    // libnetcdf does not derive a STREAMING record count from the file length: compare the start.
    let ours = read(&open_store(&store), "b", ":16");
    assert_same_elements("b[:16]", &ours.bytes, &oracle_read(&file, "b", Some(vec![range(0, 16, 1)])), 1);
}

#[test]
fn interleaved_record_variables_beyond_the_reference_budget_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let numrecs = 0xFFFF_FFF0u32;
    let mut cdf = Cdf2 { numrecs, dims: vec![("time".into(), 0)], ..Cdf2::default() };
    cdf.vars.push(("a".into(), vec![0], NC_FLOAT, 0));
    cdf.vars.push(("b".into(), vec![0], NC_FLOAT, 0));
    let header = cdf.encode(|_| 4);
    let len = cdf.vars[0].3 + 8 * u64::from(numrecs);
    let file = write_sparse(dir.path(), "interleaved.nc", &header, len);
    let (run, store) = scan(&file, dir.path(), &[]);
    assert_refused(&run, &store, &["interleaved.nc", "a", "limit"]);
}

#[test]
fn a_2_gib_attribute_in_a_7_gib_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut cdf = Cdf2::default();
    cdf.global_text.push(("history".into(), 2 << 30, Vec::new()));
    let header = cdf.encode(|_| 0);
    let file = write_sparse(dir.path(), "attribute.nc", &header, 7 << 30);
    let (run, store) = scan(&file, dir.path(), &[]);
    assert_refused(&run, &store, &["attribute.nc", "history", "limit"]);
}

#[test]
fn a_concatenation_coordinate_of_2_to_the_31_doubles_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let n = (1u32 << 31) - 1;
    let mut cdf = Cdf2 { dims: vec![("time".into(), n)], ..Cdf2::default() };
    cdf.vars.push(("time".into(), vec![0], NC_DOUBLE, 0));
    let header = cdf.encode(|_| 0);
    let file = write_sparse(dir.path(), "coordinate.nc", &header, cdf.vars[0].3 + 8 * u64::from(n));
    let (run, store) = scan(&file, dir.path(), &["--concat", "time"]);
    assert_refused(&run, &store, &["coordinate.nc", "time", "limit"]);
}

#[test]
fn a_variable_with_100000_dimensions_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut cdf = Cdf2 { dims: vec![("x".into(), 1)], ..Cdf2::default() };
    cdf.vars.push(("deep".into(), vec![0; 100_000], NC_BYTE, 0));
    let header = cdf.encode(|_| 4);
    let file = write_sparse(dir.path(), "rank.nc", &header, header.len() as u64 + 4);
    let (run, store) = scan(&file, dir.path(), &[]);
    assert_refused(&run, &store, &["rank.nc", "deep", "100000 dimensions", "1024"]);
}

#[test]
fn a_store_claiming_100000_dimensions_is_refused_at_read() {
    let dir = tempfile::tempdir().unwrap();
    let mut cdf = Cdf2 { dims: vec![("x".into(), 1)], ..Cdf2::default() };
    cdf.vars.push(("v".into(), vec![0], NC_BYTE, 0));
    let header = cdf.encode(|_| 4);
    let file = write_sparse(dir.path(), "small.nc", &header, header.len() as u64 + 4);
    let (run, store) = scan(&file, dir.path(), &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let meta = store.join("v").join("zarr.json");
    let mut doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&meta).unwrap()).unwrap();
    let ones = serde_json::json!(vec![1; 100_000]);
    doc["shape"] = ones.clone();
    doc["chunk_grid"]["configuration"]["chunk_shape"] = ones;
    doc["dimension_names"] = serde_json::json!(vec!["x"; 100_000]);
    std::fs::write(&meta, serde_json::to_string(&doc).unwrap()).unwrap();
    rebind(&store, "v");
    let out = dir.path().join("v.npy");
    let args = ["read".as_ref(), store.as_os_str(), "v".as_ref(), "-o".as_ref(), out.as_os_str()];
    let run = cli_limited(&args, CHILD_TIMEOUT);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(run.stderr_lines().len(), 1, "{}", run.stderr);
    assert!(run.stderr.contains("100000 dimensions"), "{}", run.stderr);
    assert!(!out.exists());
}

#[test]
fn two_variables_with_the_same_name_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut cdf = Cdf2 { dims: vec![("x".into(), 2)], ..Cdf2::default() };
    cdf.vars.push(("v".into(), vec![0], NC_FLOAT, 0));
    cdf.vars.push(("v".into(), vec![0], NC_FLOAT, 0));
    let header = cdf.encode(|_| 8);
    let file = write_sparse(dir.path(), "twice.nc", &header, header.len() as u64 + 16);
    let (run, store) = scan(&file, dir.path(), &[]);
    assert_refused(&run, &store, &["twice.nc", "`v`", "second variable"]);
}

/// Issue 14, item 6 (for `verify`): a source whose metadata sends libhdf5 into an endless loop
/// (byte 8776 of the sample's January file set to 0xD2: `H5HG_read` via `nc_inq_vartype`) after the
/// scan. `verify` runs libnetcdf in a child process and reports, per array, the file and that it
/// timed out, instead of hanging.
#[test]
fn verify_times_out_on_a_source_that_hangs_libhdf5() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tas_2023-01.nc");
    std::fs::copy(Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/sample/tas_2023-01.nc"), &file).unwrap();
    let (run, store) = scan(&file, dir.path(), &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let mtime = std::fs::metadata(&file).unwrap().modified().unwrap();
    let mut bytes = std::fs::read(&file).unwrap();
    bytes[8776] = 0xD2;
    std::fs::write(&file, bytes).unwrap();
    // Same size and modification time: the store still accepts the file as its source.
    std::fs::File::options().write(true).open(&file).unwrap().set_modified(mtime).unwrap();
    let args = ["verify".as_ref(), store.as_os_str(), "--oracle-timeout".as_ref(), "3".as_ref()];
    let run = cli_limited(&args, CHILD_TIMEOUT);
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    let failed: Vec<&str> = run.stdout.lines().filter(|l| l.starts_with("FAIL")).collect();
    assert!(!failed.is_empty(), "{}", run.stdout);
    for line in failed {
        assert!(line.contains("tas_2023-01.nc") && line.contains("timed out"), "{line}");
    }
}
