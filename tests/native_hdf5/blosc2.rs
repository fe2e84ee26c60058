//! Blosc2 (HDF5 filter 32026) chunks have no Zarr codec, so vzarr decodes them (its own Blosc2 frame,
//! chunk and b2nd decoder, `src/codec/blosc2.rs`) and stores every chunk re-encoded with zstd, marked
//! `copied_chunks` in the `zarr.json` extension field `vzarr`.
//!
//! Fixtures: `tests/python/make_blosc2.py DIR` writes them with h5py and hdf5plugin's Blosc2 filter
//! (every compressor, no/byte/bit shuffle and delta, 1- to 8-byte types of both byte orders, 1-d
//! super-chunks and 2- to 4-d b2nd arrays whose blocks pad the chunk, partial edge chunks, chunks of
//! many blocks and streams, plain copies, special zero chunks, never-written chunks, fletcher32 after
//! blosc2 and before it: a plain super-chunk for a 2-d chunk) and with PyTables (`blosc2:<codec>`
//! CArrays of chosen chunk shapes, an EArray with fletcher32, a Table whose chunks PyTables writes
//! itself).
//!
//! The oracle is libhdf5 itself, reading through hdf5plugin's build of the filter (`libh5blosc2.so`,
//! which Debian's libhdf5 loads): every value vzarr reads equals libhdf5's, `vzarr verify` (libnetcdf
//! over libhdf5, the plugin on `HDF5_PLUGIN_PATH`) passes, zarr-python reads the kerchunk export as
//! h5py reads the file, and a corrupt or unsupported chunk stops the scan with one line naming the
//! file, the variable and the filter.

use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use vzarr::ScanOptions;

use crate::common::hdf5_oracle::{chunk_at, dataset_paths, read_native};
use crate::common::{open_store, read, scan_to_store};

/// A directory holding only hdf5plugin's blosc2 plugin, prepended to this process's libhdf5 plugin
/// search path once (None, with a notice, when hdf5plugin has no such plugin).
fn plugin_dir(python: &Path) -> Option<PathBuf> {
    static DIR: OnceLock<Option<PathBuf>> = OnceLock::new();
    DIR.get_or_init(|| {
        let mut command = std::process::Command::new(python);
        command.args(["-c", "import hdf5plugin; print(hdf5plugin.PLUGIN_PATH)"]).stdout(std::process::Stdio::piped());
        let run = crate::common::run(command);
        let lib = Path::new(run.stdout.trim()).join("libh5blosc2.so");
        if run.code != 0 || !lib.is_file() {
            assert!(!crate::interop::python_required(), "hdf5plugin's blosc2 plugin: {}", run.stderr);
            eprintln!("notice: no blosc2 plugin in hdf5plugin; the blosc2 tests not run");
            return None;
        }
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("hdf5-blosc2-plugin");
        std::fs::create_dir_all(&dir).unwrap();
        let link = dir.join("libh5blosc2.so");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&lib, &link).unwrap();
        let c_dir = CString::new(dir.to_str().unwrap()).unwrap();
        // SAFETY: a NUL-terminated path; libhdf5 copies it. Under hdf5's global lock.
        let status = crate::common::with_hdf5_files(|| {
            hdf5::sync::sync(|| unsafe { hdf5_sys::h5pl::H5PLprepend(c_dir.as_ptr()) })
        });
        assert!(status >= 0, "H5PLprepend failed");
        Some(dir)
    })
    .clone()
}

/// The fixtures (blosc2.h5, blosc2_tables.h5) written into `dir`, and the plugin directory; None
/// without Python, hdf5plugin, PyTables or the plugin.
fn fixtures(dir: &Path) -> Option<(PathBuf, PathBuf, PathBuf)> {
    let Some(python) = crate::interop::python() else {
        eprintln!("notice: no Python with h5py (run tests/python/setup.sh); the blosc2 tests not run");
        return None;
    };
    let probe = std::process::Command::new(&python).args(["-c", "import hdf5plugin, tables"]).output();
    if !probe.is_ok_and(|o| o.status.success()) {
        assert!(!crate::interop::python_required(), "no hdf5plugin or PyTables: run tests/python/setup.sh");
        eprintln!("notice: no hdf5plugin or PyTables (run tests/python/setup.sh); the blosc2 tests not run");
        return None;
    }
    let plugins = plugin_dir(&python)?;
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/make_blosc2.py");
    let run = crate::common::run({
        let mut c = std::process::Command::new(python);
        c.arg(script).arg(dir).stdout(std::process::Stdio::piped());
        c
    });
    assert_eq!(run.code, 0, "make_blosc2.py: {}", run.stderr);
    Some((dir.join("blosc2.h5"), dir.join("blosc2_tables.h5"), plugins))
}

/// `vzarr verify STORE` with libhdf5 finding the blosc2 plugin; checks it passes for `arrays` arrays.
fn assert_verifies(store: &Path, plugins: &Path, arrays: usize) {
    let mut command = crate::common::vzarr_command();
    command.arg("verify").arg(store).env("HDF5_PLUGIN_PATH", plugins).stdout(std::process::Stdio::piped());
    let run = crate::common::run(command);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(run.stdout.contains(&format!("{arrays} arrays, ")) && run.stdout.contains(": 0 failed"), "{}", run.stdout);
}

#[test]
fn blosc2_chunks_are_copied_and_read_as_libhdf5_reads_them() {
    let dir = tempfile::tempdir().unwrap();
    let Some((file, _, plugins)) = fixtures(dir.path()) else { return };
    let (store_path, store, names) = super::assert_copies_read_as_libhdf5(&file, dir.path(), "blosc2");
    assert!(names.len() > 190, "{names:?}");
    for name in &names {
        let summary = store.info().arrays.iter().find(|a| &a.path == name).unwrap().clone();
        assert_eq!(summary.stats.owned, summary.rewritten_chunks, "{name}");
    }
    // A selection across chunk edges of an array with never-written chunks (the fill value).
    assert!(chunk_at(&file, "sparse", &[16, 16]).is_none(), "a never-written chunk");
    let ours = read(&store, "sparse", "10:30, 5:35").bytes;
    let all = read_native(&file, "sparse", 40 * 40 * 4);
    let theirs: Vec<u8> = (10..30).flat_map(|r| all[(r * 40 + 5) * 4..(r * 40 + 35) * 4].to_vec()).collect();
    assert_eq!(ours, theirs);
    assert_verifies(&store_path, &plugins, names.len());
    let run = crate::common::cli_expect(&["info".as_ref(), store_path.as_os_str()], 0);
    assert!(run.stdout.contains("chunks are copies, not references: the blosc2 filter"), "{}", run.stdout);
}

/// PyTables' blosc2 arrays (b2nd chunks of its chunk shapes, fletcher32 after blosc2) read as libhdf5
/// reads them; its Table (chunks PyTables compresses itself) verifies.
#[test]
fn pytables_blosc2_chunks_read_as_libhdf5_reads_them() {
    let dir = tempfile::tempdir().unwrap();
    let Some((_, file, plugins)) = fixtures(dir.path()) else { return };
    let store_path = scan_to_store(&file, dir.path(), "tables.vzarr", &ScanOptions::default());
    let store = open_store(&store_path);
    let names = dataset_paths(&file);
    assert_eq!(names.len(), 5, "{names:?}");
    for name in names.iter().filter(|n| n.as_str() != "table") {
        let ours = read(&store, name, "");
        let theirs = read_native(&file, name, ours.bytes.len());
        assert!(ours.bytes == theirs, "{name}: vzarr's decoding differs from libhdf5's read");
    }
    assert_verifies(&store_path, &plugins, names.len());
}

/// The scan says which variables are copies; zarr-python reads the copies as h5py (with hdf5plugin)
/// reads the file.
#[test]
fn zarr_python_reads_blosc2_copies_as_h5py() {
    let dir = tempfile::tempdir().unwrap();
    let Some((file, tables, _)) = fixtures(dir.path()) else { return };
    let out = dir.path().join("cli.vzarr");
    let run = crate::common::cli_expect(&["scan".as_ref(), tables.as_os_str(), "-o".as_ref(), out.as_os_str()], 0);
    assert!(run.stderr.contains("note: carray_zstd: chunks are copies, not references"), "{}", run.stderr);
    let Some(python) = crate::interop::python() else { return };
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/check_hdf5.py");
    let store = scan_to_store(&file, dir.path(), "py.vzarr", &ScanOptions::default());
    let stdout = super::python_check_on_export(&python, &script, &store, &file);
    assert!(stdout.contains("blocks_4d values"), "{stdout}");
}

/// A corrupt frame (cut short, a stream's length changed) and a chunk using a Blosc2 feature vzarr does not
/// decode (a dictionary) stop the scan with one line naming the file, the variable and the filter;
/// nothing panics.
#[test]
fn corrupt_and_unsupported_blosc2_chunks_fail_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let Some((file, _, _)) = fixtures(dir.path()) else { return };
    let name = "zstd_shuffle_f8_2d";
    let chunk = chunk_at(&file, name, &[0, 0]).unwrap();
    let original = std::fs::read(&file).unwrap();
    let (at, len) = (chunk.offset as usize, chunk.length as usize);
    let header_len = u32::from_be_bytes(original[at + 11..at + 15].try_into().unwrap()) as usize;
    let mut cut = original.clone();
    cut[at + 16..at + 24].copy_from_slice(&(len as u64 + 1).to_be_bytes());
    // The first data chunk starts the chunks section; not a plain copy, its first block's first
    // stream (the low bytes of the values, stored raw) is given a shorter length: zstd refuses it.
    let data = at + header_len;
    assert_eq!(original[data + 2] & 0x02, 0, "{name}: a compressed chunk");
    let stream = data + u32::from_le_bytes(original[data + 32..data + 36].try_into().unwrap()) as usize;
    let mut scrambled = original.clone();
    scrambled[stream..stream + 4].copy_from_slice(&100i32.to_le_bytes());
    let mut dictionary = original;
    dictionary[data + 31] |= 0x01;
    for (what, bytes, says) in [
        ("cut", cut, "truncated"),
        ("scrambled", scrambled, "blosc2"),
        ("dictionary", dictionary, "unsupported dictionaries"),
    ] {
        super::assert_damaged_scan_fails(dir.path(), what, bytes, name, &["blosc2", says]);
    }
}
