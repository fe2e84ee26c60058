//! The native HDF5 reader against libhdf5, on the h5py fixtures of every format bound
//! (`fixtures/hdf5/make_fixtures.py`: libver earliest, v110, v112, v114, latest = HDF5 2.0, and a user
//! block): every chunk reference the scan finds equals libhdf5's by-coordinate lookup (offset, length,
//! and missing where libhdf5 has none), and every value read through the store equals libhdf5's read.
//! The HDF5 2.0 file, which Debian's libhdf5 1.10 cannot open, is compared with its v114 twin (same
//! generator, same values) read by libhdf5, and with h5py itself in the Python check.

mod blosc;
mod blosc2;
mod btree;
mod external_links;
mod hostile;
mod legacy;
mod link_order;
mod lzf;
mod lzo;
mod netcdf4;
mod shared_messages;
mod special_types;
mod spill;
mod structs;
mod szip;

use std::path::{Path, PathBuf};

use hdf5_sys::h5p::H5P_DEFAULT;
use vzarr::dataset::ChunkEntry;
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
            let ours = array.chunks.entry(linear as usize);
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
        attr_numbers(&file, "", "numbers").into_iter().map(vzarr::dataset::float_attribute).collect();
    assert_eq!(root["numbers"], serde_json::Value::Array(numbers), "non-finite floats as JSON names");
    assert_eq!(root["fixed"], attr_strings(&file, "", "fixed")[0].trim_end_matches('\0'));
    let links = crate::common::hdf5_oracle::dataset_paths(&file);
    assert!(links.iter().filter(|p| p.starts_with("many/links/")).all(|p| dataset.array(p).is_some()));
    assert_eq!(links.iter().filter(|p| p.starts_with("many/links/")).count(), 20, "dense link storage");
}

/// Variable-length strings become store-owned `string` arrays, enums their integer type with CF
/// flags, compounds Zarr structs and opaque types raw bytes, equal to libhdf5's reads; variable-length
/// integer datasets are named per variable.
#[test]
fn types_without_a_zarr_form_are_named_per_variable() {
    let file = fixture("unsupported_types.h5");
    let err = scan(&file, &ScanOptions::default()).unwrap_err().to_string();
    assert!(
        err.contains("unsupported_types.h5: vlen_ints: cannot reference elements of variable-length type"),
        "{err}"
    );
    let options = ScanOptions { skip_unsupported: true, ..ScanOptions::default() };
    let dataset = scan(&file, &options).unwrap();
    let mut arrays: Vec<&str> = dataset.arrays.iter().map(|a| a.path.as_str()).collect();
    arrays.sort_unstable();
    assert_eq!(arrays, ["complex128_be", "complex64", "compound", "enum", "fine", "opaque", "vlen_strings"]);
    let left_out: Vec<String> = dataset.warnings.iter().map(|w| format!("{}: {}", w.variable, w.message)).collect();
    assert_eq!(left_out, ["vlen_ints: left out: cannot reference elements of variable-length type"]);
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(&scan_to_store(&file, dir.path(), "s.vzarr", &options));
    assert_eq!(read(&store, "fine", "").bytes, read_native(&file, "fine", 16));
    // A packed compound {a: int32, b: float64} and 2-byte opaque values, as libhdf5 reads them.
    assert_eq!(array_json_type(&store, "compound"), "struct{a: int32, b: float64}");
    let ours = read(&store, "compound", "").bytes;
    let member = |name| crate::common::hdf5_oracle::read_member(&file, "compound", &[name], 1).unwrap();
    assert_eq!((ours[..4].to_vec(), ours[4..].to_vec()), (member("a"), member("b")));
    assert_eq!(array_json_type(&store, "opaque"), "raw_bytes2");
    assert_eq!(read(&store, "opaque", "").bytes, read_native(&file, "opaque", 2));
    // Enum values as their base integers, the names as CF flags.
    let members = crate::common::hdf5_oracle::enum_members(&file, "enum");
    assert_eq!(read(&store, "enum", "").bytes, read_native(&file, "enum", 2));
    let attrs = store.array("enum").unwrap().reader().metadata().attributes.clone();
    let values: Vec<serde_json::Value> = members.iter().map(|(_, v)| (*v).into()).collect();
    let names: Vec<&str> = members.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(attrs["flag_values"], serde_json::Value::Array(values));
    assert_eq!(attrs["flag_meanings"], names.join(" "));
    // h5py's complex numbers as Zarr complex types, in either byte order.
    assert_eq!(array_json_type(&store, "complex64"), "complex64");
    assert_eq!(array_json_type(&store, "complex128_be"), "complex128");
    assert_eq!(read(&store, "complex64", "").bytes, read_native(&file, "complex64", 6 * 8));
    assert_eq!(read(&store, "complex128_be", "").bytes, read_native(&file, "complex128_be", 4 * 16));
    // `verify` reads what libnetcdf does not list through libhdf5.
    let path = dir.path().join("s.vzarr");
    let run = crate::common::cli_expect(&["verify".as_ref(), path.as_os_str()], 0);
    assert!(run.stdout.contains("ok   complex128_be: 4 elements equal"), "{}", run.stdout);
    // Strings read back as libhdf5 reads them.
    let strings = store.array("vlen_strings").unwrap();
    let all = vzarr::grid::Selection::all(&strings.reader().shape());
    assert_eq!(strings.read_strings(&all).unwrap(), crate::common::hdf5_oracle::dataset_strings(&file, "vlen_strings"));
}

fn array_json_type(store: &vzarr::read::blocking::BlockingStore, array: &str) -> String {
    store.array(array).unwrap().reader().metadata().data_type.to_string()
}

/// Writes datasets whose fill value is undefined, the default, and user-defined, with the oldest and
/// the newest file format libhdf5 1.10 writes (fill value messages of versions 2 and 3, object headers
/// of versions 1 and 2).
fn write_fill_values(dir: &Path, latest: bool) -> PathBuf {
    let path = dir.join(format!("fill_{latest}.h5"));
    crate::common::with_hdf5_files(|| {
        let mut builder = hdf5::File::with_options();
        if latest {
            builder.with_fapl(|p| p.libver_latest());
        }
        let file = builder.create(&path).unwrap();
        let data: Vec<i32> = (0..6).map(|i| i * 3 - 4).collect();
        undefined_fill_dataset(&file, "undefined", 6, 3);
        file.dataset("undefined").unwrap().write(&data).unwrap();
        file.new_dataset::<i32>().shape(6).chunk(3).create("default").unwrap().write(&data).unwrap();
        file.new_dataset::<i32>().shape(6).chunk(3).fill_value(7).create("user").unwrap().write(&data).unwrap();
    });
    path
}

/// Creates chunked `i32` dataset `name` with an undefined fill value (`H5Pset_fill_value(.., NULL)`,
/// which the hdf5 crate's builder does not offer).
fn undefined_fill_dataset(file: &hdf5::File, name: &str, len: u64, chunk: u64) {
    use hdf5_sys::h5d::H5Dcreate2;
    use hdf5_sys::h5p::{H5Pclose, H5Pcreate, H5Pset_chunk, H5Pset_fill_value, H5P_CLS_DATASET_CREATE};
    use hdf5_sys::h5s::{H5Sclose, H5Screate_simple};
    let int = hdf5::Datatype::from_type::<i32>().unwrap();
    let name = std::ffi::CString::new(name).unwrap();
    let _guard = hdf5_sys::LOCK.lock();
    // SAFETY: plain libhdf5 calls on ids created here and closed before returning; the NULL fill
    // value is what marks it undefined.
    unsafe {
        let dcpl = H5Pcreate(*H5P_CLS_DATASET_CREATE);
        assert!(H5Pset_chunk(dcpl, 1, &chunk) >= 0);
        assert!(H5Pset_fill_value(dcpl, int.id(), std::ptr::null()) >= 0);
        let space = H5Screate_simple(1, &len, std::ptr::null());
        let ds = H5Dcreate2(file.id(), name.as_ptr(), int.id(), space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
        assert!(ds >= 0, "H5Dcreate2 failed");
        hdf5_sys::h5d::H5Dclose(ds);
        H5Sclose(space);
        H5Pclose(dcpl);
    }
}

/// An undefined fill value is a valid state: the variable scans, reads back as libhdf5 reads it, and
/// carries an attribute saying so, exactly where libhdf5 reports the fill value undefined.
#[test]
fn undefined_fill_values_scan_and_are_marked() {
    let dir = tempfile::tempdir().unwrap();
    for latest in [false, true] {
        let file = write_fill_values(dir.path(), latest);
        let store = open_store(&scan_to_store(&file, dir.path(), &format!("f{latest}.vzarr"), &ScanOptions::default()));
        for name in ["undefined", "default", "user"] {
            let undefined = crate::common::hdf5_oracle::fill_value_undefined(&file, name);
            assert_eq!(undefined, name == "undefined", "libhdf5's view of {name}");
            let notes = store.array(name).unwrap().reader().metadata().notes.clone();
            assert_eq!(notes.fill_value.is_some(), undefined, "{name} (latest {latest})");
            assert_eq!(read(&store, name, "").bytes, read_native(&file, name, 24), "{name}");
        }
    }
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
        python_check_on_export(&python, &script, &store, &source);
    }
}

/// Exports `store` (scanned from `source`) as kerchunk JSON beside it and runs the Python check
/// `script` (`--refs REFS SOURCE`), which must pass with no failure; its standard output.
/// Runs the fixture script `tests/python/<script> DIR ARGS...`, which must succeed, and gives `dir`;
/// None, with a notice naming `what` is not run, without the Python environment (`interop::python`
/// fails instead where the environment is required).
pub(super) fn python_fixtures(script: &str, dir: &Path, args: &[&str], what: &str) -> Option<PathBuf> {
    let Some(python) = crate::interop::python() else {
        eprintln!("notice: no Python environment (run tests/python/setup.sh); {what} not run");
        return None;
    };
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python").join(script);
    let run = crate::common::run({
        let mut c = std::process::Command::new(python);
        c.arg(path).arg(dir).args(args);
        c
    });
    assert_eq!(run.code, 0, "{script} {args:?}: {}", run.stderr);
    Some(dir.to_path_buf())
}

/// The two fixtures of an optional filter (`kind`: `lzo`, `lzf`; h5py and PyTables may store a chunk
/// without it when filtering does not shrink it): every array is a copy equal to libhdf5's read,
/// some chunk is stored unfiltered, and `verify` with the test plugins on `plugin` proves them all.
fn assert_optional_filter_copies_verify(files: &[PathBuf], dir: &Path, kind: &str, plugin: &str) {
    assert_eq!(files.len(), 2);
    for file in files {
        let stem = file.file_stem().unwrap().to_string_lossy().into_owned();
        let (store_path, _, names) = assert_copies_read_as_libhdf5(file, dir, kind);
        assert!(names.len() > 18, "{names:?}");
        let mut masked = 0;
        for name in &names {
            let rank = crate::common::array_json(&store_path, name)["shape"].as_array().unwrap().len();
            let chunk = crate::common::hdf5_oracle::chunk_at(file, name, &vec![0; rank]);
            masked += usize::from(chunk.is_some_and(|c| c.filter_mask != 0));
        }
        assert!(masked > 0, "{stem}: some chunk is stored without the optional {kind} filter");
        let run = verify_with_plugins(&store_path, plugin);
        assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
        assert!(run.stdout.contains(&format!("{} arrays, ", names.len())), "{}", run.stdout);
        assert!(run.stdout.contains(": 0 failed"), "{}", run.stdout);
    }
}

/// The fixtures `tests/python/make_repacked.py DIR kind` writes (h5py, then h5repack), libhdf5
/// finding filter plugins on `plugin_path`; None, with a notice, without the Python environment or
/// h5repack (a failure when the full environment is required: `./dev setup` installs hdf5-tools).
fn repacked_fixtures(dir: &Path, kind: &str, plugin_path: Option<&str>) -> Option<Vec<PathBuf>> {
    let Some(python) = crate::interop::python() else {
        eprintln!("notice: no Python with h5py (run tests/python/setup.sh); the {kind} tests not run");
        return None;
    };
    let on_path = |program: &str| {
        let paths = std::env::var_os("PATH").unwrap_or_default();
        std::env::split_paths(&paths).any(|d| d.join(program).is_file())
    };
    if !on_path("h5repack") {
        assert!(!crate::interop::python_required(), "no h5repack: run ./dev setup (hdf5-tools)");
        eprintln!("notice: no h5repack (Debian hdf5-tools); the {kind} tests not run");
        return None;
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/make_repacked.py");
    let run = crate::common::run({
        let mut c = std::process::Command::new(python);
        c.arg(script).arg(dir).arg(kind).stdout(std::process::Stdio::piped());
        if let Some(path) = plugin_path {
            c.env("HDF5_PLUGIN_PATH", path);
        }
        c
    });
    assert_eq!(run.code, 0, "make_repacked.py {kind}: {}", run.stderr);
    Some(run.stdout.lines().map(PathBuf::from).collect())
}

/// The `HDF5_PLUGIN_PATH` that finds the test LZO and LZF plugins (built once per run,
/// `tests/hdf5_plugins/build.sh`), whose directory is also prepended to this process's libhdf5
/// search path; None (with a notice) when they cannot be built (no gcc, liblzo2-dev or liblzf-dev; a failure when the full environment is required).
fn test_plugin_path() -> Option<String> {
    static PATH: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    PATH.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("hdf5-plugins");
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/hdf5_plugins/build.sh");
        let mut command = std::process::Command::new("bash");
        command.arg(script).arg(&dir).stdout(std::process::Stdio::piped());
        let run = crate::common::run(command);
        if run.code != 0 {
            assert!(!crate::interop::python_required(), "the test plugins: {}", run.stderr);
            eprintln!("notice: the LZO and LZF tests not run: {}", run.stderr.lines().last().unwrap_or_default());
            return None;
        }
        let c_dir = std::ffi::CString::new(dir.to_str().unwrap()).unwrap();
        // SAFETY: a NUL-terminated path; libhdf5 copies it. Under hdf5's global lock.
        let status = crate::common::with_hdf5_files(|| {
            hdf5::sync::sync(|| unsafe { hdf5_sys::h5pl::H5PLprepend(c_dir.as_ptr()) })
        });
        assert!(status >= 0, "H5PLprepend failed");
        Some(run.stdout.trim().to_string())
    })
    .clone()
}

/// `vzarr verify STORE` with libhdf5 finding the test plugins on `plugin_path`.
fn verify_with_plugins(store: &Path, plugin_path: &str) -> crate::common::Run {
    let mut command = crate::common::vzarr_command();
    command.arg("verify").arg(store).env("HDF5_PLUGIN_PATH", plugin_path).stdout(std::process::Stdio::piped());
    crate::common::run(command)
}

/// Writes `bytes` (a fixture with one chunk damaged) as `<what>.h5` in `dir` and scans it: the scan
/// exits 1 with exactly one error line, naming the file, `variable` and every word of `says`, and no
/// panic.
pub(super) fn assert_damaged_scan_fails(dir: &Path, what: &str, bytes: Vec<u8>, variable: &str, says: &[&str]) {
    let file = dir.join(format!("{what}.h5"));
    std::fs::write(&file, bytes).unwrap();
    let out = dir.join(format!("{what}.vzarr"));
    let run = crate::common::cli_expect(&["scan".as_ref(), file.as_os_str(), "-o".as_ref(), out.as_os_str()], 1);
    let errors: Vec<&str> = run.stderr.lines().filter(|l| l.starts_with("error")).collect();
    assert_eq!(errors.len(), 1, "{what}: {}", run.stderr);
    assert!(errors[0].contains(&file.display().to_string()) && errors[0].contains(variable), "{}", errors[0]);
    for word in says {
        assert!(errors[0].contains(word), "{what}: {word:?} missing from {}", errors[0]);
    }
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
}

/// Scans `file`, a fixture compressed with `filter` (`szip`, `lzo`, `lzf` of `tests/python/make_repacked.py`,
/// `blosc2` of `tests/python/make_blosc2.py`), and checks every dataset: stored as copies (the
/// pipeline's shuffle, when the file's name says so, then zstd), noted as such, holding no reference,
/// and read back as libhdf5 reads the file.
/// Returns the store's path, the store and the dataset names.
fn assert_copies_read_as_libhdf5(
    file: &Path,
    dir: &Path,
    filter: &str,
) -> (PathBuf, vzarr::read::blocking::BlockingStore, Vec<String>) {
    let stem = file.file_stem().unwrap().to_string_lossy().into_owned();
    let store_path = scan_to_store(file, dir, &format!("{stem}.vzarr"), &ScanOptions::default());
    let store = open_store(&store_path);
    let names = dataset_paths(file);
    assert!(!names.is_empty(), "{}: no datasets", file.display());
    for name in &names {
        let meta = crate::common::array_json(&store_path, name);
        let codecs: Vec<&str> =
            meta["codecs"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
        let expected: &[&str] =
            if stem.contains("shuffle") { &["bytes", "numcodecs.shuffle", "zstd"] } else { &["bytes", "zstd"] };
        assert_eq!(codecs, expected, "{stem}: {name}");
        assert!(meta["attributes"].get("vzarr:copied_chunks").is_none(), "{name}: a note, not an attribute");
        let note = meta["vzarr"]["copied_chunks"].as_str().unwrap_or_default();
        assert!(note.contains(&format!("{filter} filter has no Zarr codec")), "{name}: {note}");
        let summary = store.info().arrays.iter().find(|a| &a.path == name).unwrap().clone();
        assert_eq!(summary.stats.referenced, 0, "{name}: {:?}", summary.stats);
        let ours = read(&store, name, "");
        let theirs = read_native(file, name, ours.bytes.len());
        assert!(ours.bytes == theirs, "{stem}: {name}: vzarr's decoding differs from libhdf5's read");
    }
    (store_path, store, names)
}

fn python_check_on_export(python: &Path, script: &Path, store: &Path, source: &Path) -> String {
    let refs = store.with_extension("json");
    let text = |p: &Path| p.display().to_string();
    crate::common::cli_expect(&["export".to_string(), text(store), "--kerchunk".into(), text(&refs)], 0);
    let mut command = std::process::Command::new(python);
    command.arg(script).arg("--refs").arg(&refs).arg(source).stdout(std::process::Stdio::piped());
    let run = crate::common::run(command);
    let what = script.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    assert_eq!(run.code, 0, "{what} {}:\n{}\n{}", source.display(), run.stdout, run.stderr);
    assert!(run.stdout.contains(" passed, 0 failed"), "{}", run.stdout);
    run.stdout
}

/// Issue 26: HDF5 fixed-length string datasets (scalar, contiguous, chunked, compact, and HDF-EOS5's
/// 32000-byte `StructMetadata.0` in a group) read back as libhdf5 reads them, and `verify` compares
/// them with libhdf5's fixed-width view instead of libnetcdf's string pointers: no false alarm.
#[test]
fn fixed_length_strings_read_as_libhdf5_and_verify() {
    use hdf5::types::FixedAscii;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("strings.h5");
    crate::common::with_hdf5_files(|| {
        let f = hdf5::File::create(&file).unwrap();
        let label = FixedAscii::<16>::from_ascii(b"sixteen byte lab").unwrap();
        f.new_dataset::<FixedAscii<16>>().shape(()).create("label").unwrap().write_scalar(&label).unwrap();
        let names: Vec<FixedAscii<8>> = ["alpha", "beta", "gamma", "delta", "epsilon"]
            .iter()
            .map(|n| FixedAscii::from_ascii(n.as_bytes()).unwrap())
            .collect();
        let names = ndarray::Array1::from_vec(names);
        f.new_dataset::<FixedAscii<8>>().chunk(2).shape(5).create("names").unwrap().write(&names).unwrap();
        f.new_dataset::<FixedAscii<8>>().shape(5).create("contiguous").unwrap().write(&names).unwrap();
        let compact = f
            .new_dataset::<FixedAscii<8>>()
            .shape(5)
            .layout(hdf5::plist::dataset_create::Layout::Compact)
            .create("compact")
            .unwrap();
        compact.write(&names).unwrap();
        let group = f.create_group("HDFEOS INFORMATION").unwrap();
        let odl = format!("GROUP=SwathStructure\nEND_GROUP=SwathStructure\n{}END\n", " ".repeat(100));
        let metadata = FixedAscii::<32000>::from_ascii(odl.as_bytes()).unwrap();
        let dataset = group.new_dataset::<FixedAscii<32000>>().shape(()).create("StructMetadata.0").unwrap();
        dataset.write_scalar(&metadata).unwrap();
    });
    let store_path = scan_to_store(&file, dir.path(), "s.vzarr", &ScanOptions::default());
    let store = open_store(&store_path);
    for (path, bytes) in [
        ("label", 16),
        ("names", 5 * 8),
        ("contiguous", 5 * 8),
        ("compact", 5 * 8),
        ("HDFEOS INFORMATION/StructMetadata.0", 32000),
    ] {
        assert_eq!(read(&store, path, "").bytes, read_native(&file, path, bytes), "{path}");
    }
    let run = crate::common::cli_expect(&["verify".as_ref(), store_path.as_os_str()], 0);
    assert!(run.stdout.contains("StructMetadata.0"), "{}", run.stdout);
}

/// Issue 26: a plain HDF5 file libnetcdf refuses as a whole (here: an external link to a missing
/// file) is verified through libhdf5: its datasets compare equal, no false alarm.
#[test]
fn files_libnetcdf_refuses_are_verified_through_libhdf5() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("linked.h5");
    crate::common::with_hdf5_files(|| {
        let f = hdf5::File::create(&file).unwrap();
        let values: Vec<f64> = (0..10).map(|i| f64::from(i) * 1.5).collect();
        f.new_dataset::<f64>().shape(10).create("data").unwrap().write(&values).unwrap();
        f.link_external("missing.h5", "/x", "elsewhere").unwrap();
    });
    assert!(crate::common::with_hdf5_files(|| netcdf::open(&file).is_err()), "libnetcdf refuses the file");
    let store_path = scan_to_store(&file, dir.path(), "s.vzarr", &ScanOptions::default());
    assert_eq!(read(&open_store(&store_path), "data", "").bytes, read_native(&file, "data", 80));
    let run = crate::common::cli_expect(&["verify".as_ref(), store_path.as_os_str()], 0);
    assert!(run.stdout.contains("ok   data: 10 elements equal"), "{}", run.stdout);
}

/// Issue 26: a dataset whose fill time is "never" (netCDF's `NOFILL`) with chunks never written:
/// libhdf5 leaves those elements as its caller's buffer held them, vzarr reads them as the fill
/// value (documented), and `verify` reports them as undefined in the source instead of a difference,
/// while every written element is compared.
#[test]
fn never_written_chunks_of_fill_time_never_are_undefined_not_differences() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("nofill.h5");
    crate::common::with_hdf5_files(|| {
        let f = hdf5::File::create(&file).unwrap();
        let ds = f
            .new_dataset::<f32>()
            .chunk((4, 4))
            .shape((12, 8))
            .fill_value(-999.0f32)
            .fill_time(hdf5::plist::dataset_create::FillTime::Never)
            .create("v")
            .unwrap();
        let rows = ndarray::Array2::from_shape_fn((4, 8), |(i, j)| (i * 8 + j) as f32 + 0.5);
        ds.write_slice(&rows, ndarray::s![0..4, ..]).unwrap();
    });
    let store_path = scan_to_store(&file, dir.path(), "s.vzarr", &ScanOptions::default());
    let store = open_store(&store_path);
    // Written rows: libhdf5's values; never-written rows: the fill value.
    let written = read(&store, "v", "0:4,:").bytes;
    assert_eq!(written, read_native(&file, "v", 12 * 8 * 4)[..4 * 8 * 4].to_vec());
    let unwritten = read(&store, "v", "4:12,:").bytes;
    assert!(unwritten.chunks(4).all(|b| f32::from_le_bytes(b.try_into().unwrap()) == -999.0));
    let run = crate::common::cli_expect(&["verify".as_ref(), store_path.as_os_str()], 0);
    assert!(run.stdout.contains("ok   v: 32 elements equal (64 never written in the source"), "{}", run.stdout);
}

/// Issue 26: `verify` compares in boxes of bounded size, not whole rows: a dataset whose rows are
/// 1 GiB each (in 8 MiB chunks, one written, the others read as the fill value by both sides)
/// verifies under a 1.5 GiB address-space limit, where reading a whole row on each side aborted.
#[test]
fn verify_compares_rows_larger_than_memory_in_bounded_boxes() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("wide.h5");
    let columns = 1usize << 27;
    crate::common::with_hdf5_files(|| {
        let f = hdf5::File::create(&file).unwrap();
        let ds = f.new_dataset::<f64>().chunk((1, 1 << 20)).shape((2, columns)).create("wide").unwrap();
        let first = ndarray::Array2::from_shape_fn((1, 1 << 20), |(_, j)| j as f64 * 0.25);
        ds.write_slice(&first, ndarray::s![0..1, 0..1 << 20]).unwrap();
    });
    let store = dir.path().join("s.vzarr");
    crate::common::cli_expect(&["scan".as_ref(), file.as_os_str(), "-o".as_ref(), store.as_os_str()], 0);
    let args = ["verify".as_ref(), store.as_os_str()];
    let run = crate::common::hostile::cli_limited_to(&args, std::time::Duration::from_secs(300), 3 << 29);
    assert_eq!(run.code, 0, "verify under 1.5 GiB: {}\n{}", run.stdout, run.stderr);
    assert!(run.stdout.contains(&format!("ok   wide: {} elements equal", 2 * columns)), "{}", run.stdout);
}

/// Issue 26: IEEE half floats (h5py's `float16`: a copy of `H5T_IEEE_F32LE` with binary16 fields,
/// little- and big-endian, contiguous and chunked with a fill value) become Zarr `float16`, read back
/// as libhdf5 reads their bits, and verify (libhdf5 reads them without widening); a 2-byte float with
/// another layout (bfloat16) is named and left out under `--skip-unsupported`.
#[test]
fn half_floats_are_float16_and_other_two_byte_floats_are_refused() {
    use hdf5_sys::h5d::{H5Dclose, H5Dcreate2, H5Dwrite};
    use hdf5_sys::h5p::{H5Pclose, H5Pcreate, H5Pset_chunk, H5Pset_fill_value, H5P_CLS_DATASET_CREATE, H5P_DEFAULT};
    use hdf5_sys::h5s::{H5Sclose, H5Screate_simple, H5S_ALL};
    use hdf5_sys::h5t::{
        H5T_order_t, H5Tclose, H5Tcopy, H5Tset_ebias, H5Tset_fields, H5Tset_order, H5Tset_size, H5T_IEEE_F32LE,
    };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("half.h5");
    // 1.0, -2.5, 65504, the smallest subnormal, 0.1 (rounded), -0.0, infinity, NaN, ...
    let bits: Vec<u16> = vec![0x3c00, 0xc100, 0x7bff, 0x0001, 0x2e66, 0x8000, 0x7c00, 0x7e00, 0x3555, 0x0400];
    crate::common::with_hdf5_files(|| {
        let f = hdf5::File::create(&file).unwrap();
        let _lock = hdf5_sys::LOCK.lock();
        // SAFETY: every id is created here and closed before the block ends; the buffers hold the
        // dataspace's 10 elements of 2 bytes.
        unsafe {
            let half = |order: H5T_order_t, fields: (usize, usize, usize, usize, usize), bias: usize| {
                let t = H5Tcopy(*H5T_IEEE_F32LE);
                H5Tset_fields(t, fields.0, fields.1, fields.2, fields.3, fields.4);
                H5Tset_size(t, 2);
                H5Tset_ebias(t, bias);
                H5Tset_order(t, order);
                t
            };
            let dims = [bits.len() as u64];
            let space = H5Screate_simple(1, dims.as_ptr(), std::ptr::null());
            let chunked = H5Pcreate(*H5P_CLS_DATASET_CREATE);
            H5Pset_chunk(chunked, 1, [4u64].as_ptr());
            let ieee_le = half(H5T_order_t::H5T_ORDER_LE, (15, 10, 5, 0, 10), 15);
            let fill: u16 = 0xbc00; // -1.0
            H5Pset_fill_value(chunked, ieee_le, (&fill as *const u16).cast());
            let big_bits: Vec<u16> = bits.iter().map(|b| b.swap_bytes()).collect();
            for (name, order, plist, data) in [
                ("le", H5T_order_t::H5T_ORDER_LE, H5P_DEFAULT, &bits),
                ("be", H5T_order_t::H5T_ORDER_BE, H5P_DEFAULT, &big_bits),
                ("chunked", H5T_order_t::H5T_ORDER_LE, chunked, &bits),
            ] {
                let t = half(order, (15, 10, 5, 0, 10), 15);
                let c = std::ffi::CString::new(name).unwrap();
                let ds = H5Dcreate2(f.id(), c.as_ptr(), t, space, H5P_DEFAULT, plist, H5P_DEFAULT);
                assert!(H5Dwrite(ds, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, data.as_ptr().cast()) >= 0);
                H5Dclose(ds);
                H5Tclose(t);
            }
            // bfloat16: 8 exponent bits, 7 mantissa bits.
            let bf16 = half(H5T_order_t::H5T_ORDER_LE, (15, 7, 8, 0, 7), 127);
            let c = std::ffi::CString::new("bfloat").unwrap();
            let ds = H5Dcreate2(f.id(), c.as_ptr(), bf16, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
            assert!(H5Dwrite(ds, bf16, H5S_ALL, H5S_ALL, H5P_DEFAULT, bits.as_ptr().cast()) >= 0);
            H5Dclose(ds);
            H5Tclose(bf16);
            H5Tclose(ieee_le);
            H5Pclose(chunked);
            H5Sclose(space);
        }
    });
    let refused = vzarr::scan_file(&file, &ScanOptions::default()).unwrap_err().to_string();
    assert!(refused.contains("bfloat") && refused.contains("not IEEE binary16"), "{refused}");
    let options = ScanOptions { skip_unsupported: true, ..ScanOptions::default() };
    let store_path = scan_to_store(&file, dir.path(), "s.vzarr", &options);
    let store = open_store(&store_path);
    for name in ["le", "be", "chunked"] {
        assert_eq!(array_json_type(&store, name), "float16", "{name}");
        let theirs = crate::common::hdf5_oracle::read_as_stored_le(&file, name, bits.len() * 2);
        assert_eq!(read(&store, name, "").bytes, theirs, "{name}: the values libhdf5 reads");
    }
    assert!(store.array("bfloat").is_err(), "bfloat16 left out");
    let chunked = store.array("chunked").unwrap().reader().metadata().fill_value.as_bytes().to_vec();
    assert_eq!(chunked, 0xbc00u16.to_ne_bytes(), "the fill value");
    let run = crate::common::cli_expect(&["verify".as_ref(), store_path.as_os_str()], 0);
    assert!(run.stdout.contains("ok   be: 10 elements equal"), "{}", run.stdout);
}

/// Writes attribute `name` of `size`-byte integers (`base`'s sign and byte order) holding `bytes` on
/// object `location`.
fn wide_integer_attribute(location: hdf5_sys::h5i::hid_t, name: &str, base: hdf5_sys::h5i::hid_t, bytes: &[u8]) {
    use hdf5_sys::{h5a, h5s, h5t};
    let name = std::ffi::CString::new(name).unwrap();
    let _guard = hdf5_sys::LOCK.lock();
    // SAFETY: every id is checked and closed; `bytes` holds one value of the type's size.
    unsafe {
        let datatype = h5t::H5Tcopy(base);
        assert!(datatype >= 0 && h5t::H5Tset_size(datatype, bytes.len()) >= 0, "H5Tset_size");
        assert!(h5t::H5Tset_precision(datatype, bytes.len() * 8) >= 0, "H5Tset_precision");
        let space = h5s::H5Screate(h5s::H5S_class_t::H5S_SCALAR);
        let attribute = h5a::H5Acreate2(location, name.as_ptr(), datatype, space, H5P_DEFAULT, H5P_DEFAULT);
        assert!(attribute >= 0, "H5Acreate2 {name:?}");
        assert!(h5a::H5Awrite(attribute, datatype, bytes.as_ptr().cast()) >= 0, "H5Awrite {name:?}");
        h5a::H5Aclose(attribute);
        h5s::H5Sclose(space);
        h5t::H5Tclose(datatype);
    }
}

/// Issue 26: 16-byte integer attributes (PyTables' `attr-u16.h5`) read as libnetcdf reads them, a
/// 64-bit integer of the same value, in either byte order and sign; one beyond 64 bits is left out
/// with a warning naming it (libhdf5 would clip it).
#[test]
fn sixteen_byte_integer_attributes_read_as_libnetcdf_reads_them() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("wide.h5");
    let mut big_endian = [0u8; 16];
    big_endian[15] = 7;
    crate::common::with_hdf5_files(|| {
        let f = hdf5::File::create(&file).unwrap();
        let ds = f.new_dataset::<i32>().shape(3).create("v").unwrap();
        ds.write(&[1, 2, 3]).unwrap();
        let (unsigned_be, signed_le) = (*hdf5_sys::h5t::H5T_STD_U64BE, *hdf5_sys::h5t::H5T_STD_I64LE);
        wide_integer_attribute(ds.id(), "ref_time", unsigned_be, &big_endian);
        wide_integer_attribute(ds.id(), "offset", signed_le, &(-3i128).to_le_bytes());
        wide_integer_attribute(ds.id(), "huge", signed_le, &(1i128 << 70).to_le_bytes());
    });
    let run = crate::common::cli_expect(
        &["scan".as_ref(), file.as_os_str(), "-o".as_ref(), dir.path().join("s.vzarr").as_os_str()],
        3,
    );
    assert!(
        run.stderr.contains(
            "attribute huge left out: cannot represent 16-byte integer 1180591620717411303424 beyond 64 bits"
        ),
        "{}",
        run.stderr
    );
    let attributes = crate::common::array_json(&dir.path().join("s.vzarr"), "v")["attributes"].clone();
    let theirs = crate::common::with_hdf5_files(|| {
        let nc = netcdf::open(&file).unwrap();
        let v = nc.variable("v").unwrap();
        let value = |name: &str| match v.attribute_value(name).unwrap().unwrap() {
            netcdf::AttributeValue::Ulonglong(x) => serde_json::Value::from(x),
            netcdf::AttributeValue::Longlong(x) => serde_json::Value::from(x),
            other => panic!("libnetcdf reads {name} as {other:?}"),
        };
        (value("ref_time"), value("offset"))
    });
    assert_eq!((attributes["ref_time"].clone(), attributes["offset"].clone()), theirs);
    assert_eq!(theirs, (serde_json::json!(7), serde_json::json!(-3)));
}
