//! Issue 26: szip (HDF5 filter 4) chunks have no Zarr codec, so vzarr decodes them (its own AEC
//! decoder, `src/codec/szip.rs`) and stores every chunk re-encoded with the pipeline's shuffle and
//! zstd, marked `copied_chunks` in the `zarr.json` extension field `vzarr`. Fixtures: h5py writes the
//! values, Debian's h5repack (libhdf5 with libaec) compresses them with szip (`tests/python/make_repacked.py DIR szip`: nearest
//! neighbour and entropy coding, blocks of 8, 16 and 32 pixels, shuffle before szip, 1- to 8-byte
//! types of both byte orders, padded scanlines, partial edge chunks). Every value vzarr reads equals
//! libhdf5's read, `verify` passes, zarr-python reads the kerchunk export as h5py reads the file, and
//! a corrupt chunk stops the scan with one line naming the file and the variable.

use std::path::{Path, PathBuf};

use vzarr::ScanOptions;

use crate::common::hdf5_oracle::chunk_at;
use crate::common::scan_to_store;

/// The szip fixtures, written into `dir` (None without the Python environment or h5repack).
fn fixtures(dir: &Path) -> Option<Vec<PathBuf>> {
    super::repacked_fixtures(dir, "szip", None)
}

#[test]
fn szip_chunks_are_copied_and_read_as_libhdf5_reads_them() {
    let dir = tempfile::tempdir().unwrap();
    let Some(files) = fixtures(dir.path()) else { return };
    assert_eq!(files.len(), 3);
    for file in &files {
        let (store_path, store, names) = super::assert_copies_read_as_libhdf5(file, dir.path(), "szip");
        assert!(names.len() > 18, "{names:?}");
        for name in &names {
            let summary = store.info().arrays.iter().find(|a| &a.path == name).unwrap().clone();
            assert_eq!(summary.stats.owned, summary.rewritten_chunks, "{name}");
        }
        let run = crate::common::cli_expect(&["verify".as_ref(), store_path.as_os_str()], 0);
        assert!(run.stdout.contains(&format!("{} arrays, ", names.len())), "{}", run.stdout);
        assert!(run.stdout.contains(": 0 failed"), "{}", run.stdout);
        let run = crate::common::cli_expect(&["info".as_ref(), store_path.as_os_str()], 0);
        assert!(run.stdout.contains("chunks are copies, not references: the szip filter"), "{}", run.stdout);
        // The source's pipeline, as the note records it: szip's options mask and pixels per block
        // (what xarray's netCDF4 engine reports as szip={'coding', 'pixels_per_block'}).
        let stem = file.file_stem().unwrap().to_string_lossy().into_owned();
        let filters = crate::common::array_json(&store_path, "le_i4_2d")["vzarr"]["source_filters"].clone();
        let szip = filters.as_array().unwrap().last().unwrap().clone();
        assert_eq!((szip["id"].clone(), szip["name"].clone()), (4.into(), "szip".into()), "{filters}");
        let pixels: u64 = stem.trim_start_matches(|c: char| !c.is_ascii_digit()).parse().unwrap();
        assert_eq!(szip["client_data"][1], pixels, "{stem}: {filters}");
        let nn = szip["client_data"][0].as_u64().unwrap() & 32 != 0;
        assert_eq!(nn, stem.contains("_nn"), "{stem}: {filters}");
        assert_eq!(filters.as_array().unwrap().len(), if stem.contains("shuffle") { 2 } else { 1 }, "{filters}");
    }
}

/// The scan says which variables are copies; zarr-python reads the copies as h5py reads the file.
#[test]
fn scan_notes_the_copies_and_zarr_python_reads_them_as_h5py() {
    let dir = tempfile::tempdir().unwrap();
    let Some(files) = fixtures(dir.path()) else { return };
    let file = &files[2];
    let out = dir.path().join("cli.vzarr");
    let run = crate::common::cli_expect(&["scan".as_ref(), file.as_os_str(), "-o".as_ref(), out.as_os_str()], 0);
    assert!(run.stderr.contains("note: le_f8_2d: chunks are copies, not references"), "{}", run.stderr);
    let Some(python) = crate::interop::python() else { return };
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/check_hdf5.py");
    let store = scan_to_store(file, dir.path(), "py.vzarr", &ScanOptions::default());
    let stdout = super::python_check_on_export(&python, &script, &store, file);
    assert!(stdout.contains("be_f4_2d values"), "{stdout}");
}

/// A corrupt szip chunk (a size header past the chunk's shape, a stream cut short) stops the scan
/// with one line naming the file and the variable; nothing panics.
#[test]
fn corrupt_szip_chunks_fail_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let Some(files) = fixtures(dir.path()) else { return };
    // A chunk szip compressed (szip is an optional filter: chunks it would expand are stored without).
    let chunk = chunk_at(&files[0], "const_i4", &[0, 0]).unwrap();
    assert_eq!(chunk.filter_mask, 0);
    let original = std::fs::read(&files[0]).unwrap();
    let at = chunk.offset as usize;
    let mut huge = original.clone();
    huge[at..at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
    let mut zeroed = original;
    zeroed[at + 4..at + chunk.length as usize].fill(0);
    for (what, bytes) in [("huge", huge), ("zeroed", zeroed)] {
        super::assert_damaged_scan_fails(dir.path(), what, bytes, "const_i4", &["szip"]);
    }
}
