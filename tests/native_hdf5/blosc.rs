//! Issue 26: chunks of the hdf5-blosc filter (HDF5 filter 32001) are Blosc 1 frames, referenced in
//! place under Zarr's `blosc` codec, on a file h5py writes with hdf5plugin
//! (`tests/python/make_special_types.py DIR blosc`: every compressor blosclz, lz4, lz4hc, zlib, zstd,
//! with no, byte and bit shuffle, 1- to 8-byte elements of both byte orders, chunks of several Blosc
//! blocks, partial edge chunks, incompressible data in plain-copy frames, never-written chunks).
//! Every value vzarr's own decoder reads equals libhdf5's read (through Debian's blosc filter plugin,
//! `hdf5-filter-plugin-blosc-serial`), `verify` passes, and zarr-python (numcodecs' Blosc) reads the
//! kerchunk export as h5py reads the file (`tests/python/check_hdf5.py`). Blosc2 (filter 32026) frames
//! have no Zarr codec: they are decoded and stored as copies (`blosc2.rs`).

use std::path::Path;

use vzarr::ScanOptions;

use crate::common::hdf5_oracle::{dataset_paths, read_native};
use crate::common::{array_json, open_store, read, scan_to_store};

/// blosc.h5, written by `make_special_types.py` into `dir` (None without the Python environment).
fn fixture(dir: &Path) -> Option<std::path::PathBuf> {
    super::python_fixtures("make_special_types.py", dir, &["blosc"], "the blosc tests").map(|d| d.join("blosc.h5"))
}

#[test]
fn blosc_chunks_are_referenced_and_read_as_libhdf5_reads_them() {
    let dir = tempfile::tempdir().unwrap();
    let Some(file) = fixture(dir.path()) else { return };
    let store_path = scan_to_store(&file, dir.path(), "blosc.vzarr", &ScanOptions::default());
    let store = open_store(&store_path);
    let names = dataset_paths(&file);
    assert!(names.len() > 60, "{names:?}");
    let mut referenced = 0;
    for name in &names {
        let meta = array_json(&store_path, name);
        let codecs: Vec<&str> =
            meta["codecs"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
        assert_eq!(codecs, ["bytes", "blosc"], "{name}");
        let summary = store.info().arrays.iter().find(|a| &a.path == name).unwrap().clone();
        // The filter is optional: a chunk it could not compress is stored without it (filter mask
        // set) and rewritten into a store-owned plain-copy frame.
        assert_eq!(summary.stats.owned, summary.rewritten_chunks, "{name}: {:?}", summary.stats);
        referenced += usize::from(summary.stats.referenced > 0);
        let ours = read(&store, name, "");
        let theirs = read_native(&file, name, ours.bytes.len());
        assert!(ours.bytes == theirs, "{name}: vzarr's decoding differs from libhdf5's read");
    }
    assert!(referenced > 60, "{referenced} of {} arrays reference their chunks", names.len());
    // A selection across chunk edges of a bit-shuffled array with never-written chunks.
    let ours = read(&store, "sparse", "10:30, 5:35").bytes;
    let all = read_native(&file, "sparse", 40 * 40 * 4);
    let theirs: Vec<u8> = (10..30).flat_map(|r| all[(r * 40 + 5) * 4..(r * 40 + 35) * 4].to_vec()).collect();
    assert_eq!(ours, theirs);
    let run = crate::common::cli_expect(&["verify".as_ref(), store_path.as_os_str()], 0);
    let summary = format!("{} arrays, ", names.len());
    assert!(run.stdout.contains(&summary) && run.stdout.contains(": 0 failed"), "{}", run.stdout);
}

/// zarr-python reads the kerchunk export (numcodecs' Blosc decodes the referenced frames) as h5py
/// reads the file, and every chunk reference is h5py's.
#[test]
fn zarr_python_reads_blosc_chunks_as_h5py() {
    let dir = tempfile::tempdir().unwrap();
    let Some(file) = fixture(dir.path()) else { return };
    let Some(python) = crate::interop::python() else { return };
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/check_hdf5.py");
    let store = scan_to_store(&file, dir.path(), "blosc.vzarr", &ScanOptions::default());
    let stdout = super::python_check_on_export(&python, &script, &store, &file);
    assert!(stdout.contains("lz4_bitshuffle_f4"), "{stdout}");
}
