//! Issue 50: h5py's LZF (HDF5 filter 32000, `compression="lzf"`) chunks have no Zarr codec, so vzarr
//! decodes them (its own LibLZF decoder, `src/codec/lzf.rs`) and stores every chunk re-encoded with
//! the pipeline's shuffle and zstd, marked `copied_chunks` in the `zarr.json` extension field
//! `vzarr`, whose `source_filters` note keeps the source's pipeline (xarray's h5netcdf engine
//! reports `compression="lzf"` from it).
//!
//! Fixtures: h5py writes them (`tests/python/make_repacked.py DIR lzf`: LZF alone, and shuffle, LZF,
//! fletcher32; 1- to 8-byte types of both byte orders, partial edge chunks, incompressible noise that
//! the optional filter stores unfiltered, a never-written chunk). The oracle is libhdf5 itself, through
//! the test plugin of h5py's filter over LibLZF (`tests/hdf5_plugins/lzf_plugin.c`: Debian's
//! `hdf5-plugin-lzf` does not load, its LZF symbols undefined), in this process and in `vzarr verify`.

use std::path::{Path, PathBuf};

use crate::common::array_json;
use crate::common::hdf5_oracle::chunk_at;

/// The LZF fixtures, written into `dir`, and the plugin path (None without the plugin or Python).
fn fixtures(dir: &Path) -> Option<(Vec<PathBuf>, String)> {
    let path = super::test_plugin_path()?;
    Some((super::repacked_fixtures(dir, "lzf", None)?, path))
}

#[test]
fn lzf_chunks_are_copied_and_read_as_libhdf5_reads_them() {
    let dir = tempfile::tempdir().unwrap();
    let Some((files, plugin)) = fixtures(dir.path()) else { return };
    super::assert_optional_filter_copies_verify(&files, dir.path(), "lzf", &plugin);
}

/// The copies record the source's pipeline, in encode order, with each filter's client data.
#[test]
fn copies_record_the_source_filter_pipeline() {
    let dir = tempfile::tempdir().unwrap();
    let Some((files, _)) = fixtures(dir.path()) else { return };
    let store = crate::common::scan_to_store(&files[1], dir.path(), "notes.vzarr", &vzarr::ScanOptions::default());
    let filters = array_json(&store, "le_i4_2d")["vzarr"]["source_filters"].clone();
    let ids: Vec<i64> = filters.as_array().unwrap().iter().map(|f| f["id"].as_i64().unwrap()).collect();
    assert_eq!(ids, [2, 32000, 3], "{filters}");
    let names: Vec<&str> = filters.as_array().unwrap().iter().map(|f| f["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["shuffle", "lzf", "fletcher32"]);
    // h5py's LZF client data: the filter revision, the LZF version, the chunk's size in bytes.
    assert_eq!(filters[1]["client_data"][2], 16 * 20 * 4, "{filters}");
}

/// A corrupt LZF stream (cut short, a reference before the start of the output) stops the scan
/// with one line naming the file and the variable; nothing panics.
#[test]
fn corrupt_lzf_chunks_fail_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let Some((files, _)) = fixtures(dir.path()) else { return };
    let chunk = chunk_at(&files[0], "const_i4", &[0, 0]).unwrap();
    assert_eq!(chunk.filter_mask, 0);
    let original = std::fs::read(&files[0]).unwrap();
    let (at, len) = (chunk.offset as usize, chunk.length as usize);
    let mut cut = original.clone();
    // h5py ends this stream with a literal run of 2 bytes: made one of 32, the stream ends inside it.
    assert_eq!(original[at + len - 3], 1);
    cut[at + len - 3] = 31;
    let mut backwards = original;
    // A first literal of one byte, then a reference 8 KiB back.
    backwards[at..at + 4].copy_from_slice(&[0, 7, 0x3f, 0xff]);
    for (what, bytes) in [("cut", cut), ("backwards", backwards)] {
        super::assert_damaged_scan_fails(dir.path(), what, bytes, "const_i4", &["lzf"]);
    }
}
