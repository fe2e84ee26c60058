//! The library as a pipeline crate uses it, built with any feature set (`cargo test
//! --no-default-features --test library` runs it with no C library in vzarr): scan and combine in one
//! call, write a native store and kerchunk JSON, read selections back. Every value is compared with
//! libnetcdf reading the source files (the `netcdf` crate, a dev-dependency).

use std::path::{Path, PathBuf};

use vzarr::grid::{DimSelection, Selection};
use vzarr::pipeline::{write_dataset, Archive, Format, Output, PipelineError};
use vzarr::read::blocking::BlockingStore;
use vzarr::read::Authorization;

#[path = "library/structure.rs"]
mod structure;

fn sample_files() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/sample");
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.retain(|p| p.extension().is_some_and(|e| e == "nc"));
    files.sort();
    files
}

/// `tas` of every sample file, concatenated along time, as libnetcdf reads it.
fn libnetcdf_tas(files: &[PathBuf]) -> (Vec<f32>, Vec<usize>) {
    let mut values = Vec::new();
    let mut shape = Vec::new();
    for file in files {
        let nc = netcdf::open(file).unwrap();
        let var = nc.variable("tas").unwrap();
        let dims: Vec<usize> = var.dimensions().iter().map(|d| d.len()).collect();
        if shape.is_empty() {
            shape = dims.clone();
        } else {
            shape[0] += dims[0];
        }
        values.extend(var.get_values::<f32, _>(..).unwrap());
    }
    (values, shape)
}

#[test]
fn scan_combine_write_and_read_in_library_calls() {
    let files = sample_files();
    let (expected, shape) = libnetcdf_tas(&files);
    let dir = tempfile::tempdir().unwrap();
    let pattern = format!("{}/fixtures/sample/*.nc", env!("CARGO_MANIFEST_DIR"));
    let scanned = Archive::new([pattern]).concat("time").unwrap().history(false).scan().unwrap();
    assert_eq!(scanned.files, files);

    let native = dir.path().join("tas.vzarr");
    let written = write_dataset(&scanned.dataset, &Output::new(&native, Format::Native)).unwrap();
    assert!(written.references() > 0);
    let kerchunk = dir.path().join("tas.json");
    let format =
        Format::KerchunkJson { url_prefixes: Vec::new(), inline_threshold: vzarr::formats::DEFAULT_INLINE_THRESHOLD };
    write_dataset(&scanned.dataset, &Output::new(&kerchunk, format)).unwrap();
    assert!(std::fs::metadata(&kerchunk).unwrap().len() > 0);

    let store =
        BlockingStore::open(native.to_str().unwrap(), &Authorization::new(written.source_containers())).unwrap();
    let tas = store.array("tas").unwrap();
    let shape_u64: Vec<u64> = shape.iter().map(|&n| n as u64).collect();
    assert_eq!(tas.reader().shape(), shape_u64);
    let all = tas.read(&Selection::all(&shape_u64), &Default::default()).unwrap();
    assert_eq!(all.to_vec::<f32>().unwrap(), expected, "every value equals libnetcdf's");

    // A selection built from Rust ranges: days 59..66 (crossing February into March), one longitude.
    let week =
        Selection::new([DimSelection::from(59..66), DimSelection::from(0..shape_u64[1]), 3u64.into()], &shape_u64)
            .unwrap();
    let got = tas.read(&week, &Default::default()).unwrap().to_vec::<f32>().unwrap();
    let (ny, nx) = (shape[1], shape[2]);
    let want: Vec<f32> =
        (59..66).flat_map(|t| (0..ny).map(move |y| (t * ny + y) * nx + 3)).map(|i| expected[i]).collect();
    assert_eq!(got, want);
}

#[test]
fn library_errors_name_no_command_line_flag() {
    let dir = tempfile::tempdir().unwrap();
    let files = sample_files();
    let several = Archive::new(files.iter().take(2)).scan().unwrap_err();
    assert!(matches!(several, PipelineError::Options(_)), "{several}");
    let none = Archive::new([dir.path().join("none-*.nc")]).concat("time").unwrap().scan().unwrap_err();
    assert!(none.to_string().ends_with("none-*.nc: no files match"), "{none}");

    let one = Archive::new([&files[0]]).scan().unwrap();
    let out = dir.path().join("one.vzarr");
    write_dataset(&one.dataset, &Output::new(&out, Format::Native)).unwrap();
    let again = write_dataset(&one.dataset, &Output::new(&out, Format::Native)).unwrap_err();
    let text = again.to_string();
    assert!(text.contains("already exists") && !text.contains("--"), "{text}");
    let bad = Archive::new([&files[0]]).concat("time=nothing:x").unwrap_err();
    assert!(matches!(bad, PipelineError::Options(_)), "{bad}");
}

#[test]
fn a_missing_store_is_not_found_and_a_damaged_one_is_corrupt() {
    use vzarr::read::ReadError;
    let dir = tempfile::tempdir().unwrap();
    let auth = Authorization::default();
    let missing = dir.path().join("nowhere.vzarr");
    let err = BlockingStore::open(missing.to_str().unwrap(), &auth).unwrap_err();
    assert!(matches!(err, ReadError::NotFound { .. }), "{err}");

    let one = Archive::new([&sample_files()[0]]).scan().unwrap();
    let store = dir.path().join("one.vzarr");
    write_dataset(&one.dataset, &Output::new(&store, Format::Native)).unwrap();
    std::fs::write(store.join("vzarr.json"), b"{ not json").unwrap();
    let err = BlockingStore::open(store.to_str().unwrap(), &auth).unwrap_err();
    assert!(matches!(err, ReadError::Store { .. }), "{err}");
}
