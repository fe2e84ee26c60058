//! Issue 26: PyTables' LZO (HDF5 filter 305) chunks have no Zarr codec, so vzarr decodes them (its
//! own LZO1X decoder, `src/codec/lzo.rs`) and stores every chunk re-encoded with the pipeline's
//! shuffle and zstd, marked `copied_chunks` in the `zarr.json` extension field `vzarr`.
//!
//! The oracle is libhdf5 itself: no LZO plugin ships with Debian or h5py, so the tests build one
//! (`tests/hdf5_plugins/lzo_plugin.c`, PyTables' filter over liblzo2) and put it on libhdf5's plugin
//! path: h5repack writes the fixtures with it (`tests/python/make_repacked.py DIR lzo`: LZO alone, and
//! PyTables' shuffle, LZO, fletcher32 pipeline; incompressible chunks stored without the optional
//! filter), and libhdf5 reads them in this process and in `vzarr verify`.

use std::path::{Path, PathBuf};

use crate::common::hdf5_oracle::chunk_at;

/// The LZO fixtures in `dir`, and the plugin path (None without the plugin, Python or h5repack).
fn fixtures(dir: &Path) -> Option<(Vec<PathBuf>, String)> {
    let path = super::test_plugin_path()?;
    Some((super::repacked_fixtures(dir, "lzo", Some(&path))?, path))
}

#[test]
fn lzo_chunks_are_copied_and_read_as_libhdf5_reads_them() {
    let dir = tempfile::tempdir().unwrap();
    let Some((files, plugin)) = fixtures(dir.path()) else { return };
    super::assert_optional_filter_copies_verify(&files, dir.path(), "lzo", &plugin);
}

/// Without the plugin on `HDF5_PLUGIN_PATH` the oracle's libhdf5 cannot read the LZO datasets: verify
/// says so, `SKIP ... not provable here: libhdf5 has no filter 305 (LZO); set HDF5_PLUGIN_PATH`, and
/// exits 4, not 1 (it used to report `FAIL ... H5Dread failed` as if the values differed).
#[test]
fn without_the_plugin_lzo_arrays_are_not_provable_here() {
    let dir = tempfile::tempdir().unwrap();
    let Some((files, _)) = fixtures(dir.path()) else { return };
    let (store_path, _, names) = super::assert_copies_read_as_libhdf5(&files[0], dir.path(), "lzo");
    let mut command = crate::common::vzarr_command();
    command.arg("verify").arg(&store_path).env_remove("HDF5_PLUGIN_PATH").stdout(std::process::Stdio::piped());
    let run = crate::common::run(command);
    assert_eq!(run.code, 4, "{}\n{}", run.stdout, run.stderr);
    assert!(!run.stdout.contains("FAIL"), "{}", run.stdout);
    let skipped = run.stdout.lines().filter(|l| l.starts_with("SKIP")).count();
    assert!(skipped > 0 && skipped <= names.len(), "{}", run.stdout);
    let expected = "not provable here: libhdf5 has no filter 305 (LZO); set HDF5_PLUGIN_PATH";
    assert!(run.stdout.lines().filter(|l| l.starts_with("SKIP")).all(|l| l.ends_with(expected)), "{}", run.stdout);
}

/// A corrupt LZO stream (cut short, a match before the start of the output) stops the scan with one
/// line naming the file and the variable; nothing panics.
#[test]
fn corrupt_lzo_chunks_fail_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let Some((files, _)) = fixtures(dir.path()) else { return };
    let chunk = chunk_at(&files[0], "const_i4", &[0, 0]).unwrap();
    assert_eq!(chunk.filter_mask, 0);
    let original = std::fs::read(&files[0]).unwrap();
    let (at, len) = (chunk.offset as usize, chunk.length as usize);
    let mut cut = original.clone();
    cut[at + len - 3..at + len].fill(0xff);
    let mut backwards = original;
    // A first literal run of one byte, then an M2 match reaching 2 KiB back.
    backwards[at..at + 4].copy_from_slice(&[18, 7, 0xfc, 0xff]);
    for (what, bytes) in [("cut", cut), ("backwards", backwards)] {
        super::assert_damaged_scan_fails(dir.path(), what, bytes, "const_i4", &["lzo"]);
    }
}
