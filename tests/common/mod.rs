//! Shared test support: fixtures in temporary directories, the libnetcdf oracle, stores scanned
//! through the library API, and the real `vzarr` binary.
//!
//! The oracle reads the source files with the netcdf crate (libnetcdf, which reads HDF5 through
//! libhdf5) and never calls vzarr code, so a test comparing vzarr's bytes with `oracle_read` proves the
//! manifest, grid and codecs against an independent reader.
#![allow(dead_code)]

pub mod archives;
pub mod classic;
pub mod cmip;
pub mod fault_proxy;
pub mod fixtures;
pub mod hdf5_oracle;
pub mod hostile;
pub mod range_server;
pub mod servers;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{RwLock, RwLockWriteGuard};

use netcdf::types::{FloatType, IntType, NcVariableType};
use netcdf::Extent;
use vzarr::read::blocking::BlockingStore;
use vzarr::{ArrayData, NativeWriter, ReadOptions, ScanOptions, Selection, WriteOptions, Writer};

/// Held (shared) while this process has HDF5 files open, and (exclusive) while a child process is
/// started. libhdf5 opens files without `O_CLOEXEC` and locks them with `flock`: a child started while a
/// test writes or reads a fixture would inherit that descriptor, keep the lock for its whole life, and
/// make the next open of the file fail with "HDF error".
static HDF5_FILES: RwLock<()> = RwLock::new(());

/// Runs `f`, which may open HDF5 files in this process, while no child process is being started.
/// libhdf5's automatic printing of error stacks is turned off first: the thread-safe libhdf5 keeps
/// that switch per thread, and libnetcdf probes for attributes that usually do not exist (each probe
/// would print a stack on a test thread that never silenced it).
/// Nested calls take the lock once (a second read lock on the same thread would deadlock behind a
/// waiting writer).
pub fn with_hdf5_files<T>(f: impl FnOnce() -> T) -> T {
    thread_local! {
        static DEPTH: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    }
    hdf5::silence_errors(true);
    let _shared = (DEPTH.get() == 0).then(|| HDF5_FILES.read().unwrap_or_else(|e| e.into_inner()));
    DEPTH.set(DEPTH.get() + 1);
    let result = f();
    DEPTH.set(DEPTH.get() - 1);
    result
}

/// Held while starting a child process: no HDF5 file of this process is open meanwhile.
pub fn no_hdf5_files_open() -> RwLockWriteGuard<'static, ()> {
    HDF5_FILES.write().unwrap_or_else(|e| e.into_inner())
}

/// `vzarr::scan_file` under [`with_hdf5_files`].
pub fn scan(path: &Path, options: &ScanOptions) -> Result<vzarr::VirtualDataset, vzarr::ScanError> {
    with_hdf5_files(|| vzarr::scan_file(path, options))
}

/// The HDF5 filter pipeline of `dataset` in `file`, read with the hdf5 crate.
pub fn hdf5_filters(file: &Path, dataset: &str) -> Vec<hdf5::filters::Filter> {
    with_hdf5_files(|| hdf5::File::open(file).unwrap().dataset(dataset).unwrap().filters())
}

/// One fixture file in its own temporary directory (removed on drop).
pub struct Fixture {
    pub dir: tempfile::TempDir,
    pub path: PathBuf,
}

impl Fixture {
    /// Writes a fixture with `write` into a fresh temporary directory.
    pub fn new(write: impl FnOnce(&Path) -> PathBuf) -> Self {
        let dir = tempfile::tempdir().expect("temporary directory");
        let path = with_hdf5_files(|| write(dir.path()));
        Fixture { dir, path }
    }

    /// A path inside the fixture's directory.
    pub fn join(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
}

/// Every fixture whose every variable vzarr must reference, by name.
pub fn supported_fixtures() -> Vec<(&'static str, Fixture)> {
    vec![
        ("monthly", Fixture::new(|d| fixtures::write_monthly(d, &fixtures::Monthly::new(2023, 2)))),
        (
            "monthly_uncompressed_10_days",
            Fixture::new(|d| fixtures::write_monthly(d, &fixtures::monthly_uncompressed_10_days(2024, 1))),
        ),
        ("kitchen_sink", Fixture::new(fixtures::write_kitchen_sink)),
        ("plain_hdf5", Fixture::new(fixtures::write_plain_hdf5)),
        ("long_contiguous", Fixture::new(fixtures::write_long_contiguous)),
    ]
}

// ---------------------------------------------------------------------------------------------------
// The oracle: libnetcdf through the netcdf crate.

/// A variable as libnetcdf reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OracleVar {
    /// `group/sub/name`, no leading slash.
    pub path: String,
    /// Dimension names and lengths.
    pub dims: Vec<(String, u64)>,
    /// The Zarr v3 data type name of its netCDF type (`None` for non-numeric types).
    pub data_type: Option<&'static str>,
}

/// Every variable of `file`, groups walked depth first (root variables first).
pub fn oracle_variables(file: &Path) -> Vec<OracleVar> {
    with_hdf5_files(|| oracle_variables_now(file))
}

fn oracle_variables_now(file: &Path) -> Vec<OracleVar> {
    let f = netcdf::open(file).unwrap_or_else(|e| panic!("libnetcdf opens {}: {e}", file.display()));
    let mut out = Vec::new();
    match f.root() {
        Some(root) => walk(&root, "", &mut out),
        // NetCDF-3 files have no group tree: every variable is at the root.
        None => out.extend(f.variables().map(|var| oracle_var(&var, ""))),
    }
    out
}

fn oracle_var(var: &netcdf::Variable<'_>, prefix: &str) -> OracleVar {
    OracleVar {
        path: format!("{prefix}{}", var.name()),
        dims: var.dimensions().iter().map(|d| (d.name(), d.len() as u64)).collect(),
        data_type: zarr_type(&var.vartype()),
    }
}

fn walk(group: &netcdf::Group<'_>, prefix: &str, out: &mut Vec<OracleVar>) {
    for var in group.variables() {
        out.push(oracle_var(&var, prefix));
    }
    for child in group.groups() {
        walk(&child, &format!("{prefix}{}/", child.name()), out);
    }
}

fn zarr_type(t: &NcVariableType) -> Option<&'static str> {
    Some(match t {
        NcVariableType::Int(IntType::I8) => "int8",
        NcVariableType::Int(IntType::I16) => "int16",
        NcVariableType::Int(IntType::I32) => "int32",
        NcVariableType::Int(IntType::I64) => "int64",
        NcVariableType::Int(IntType::U8) => "uint8",
        NcVariableType::Int(IntType::U16) => "uint16",
        NcVariableType::Int(IntType::U32) => "uint32",
        NcVariableType::Int(IntType::U64) => "uint64",
        NcVariableType::Float(FloatType::F32) => "float32",
        NcVariableType::Float(FloatType::F64) => "float64",
        _ => return None,
    })
}

/// Values of `var_path` (`a/b/var`) in `file` read by libnetcdf, as native-endian bytes: the whole
/// variable for `None`, else the given extents (one per dimension).
pub fn oracle_read(file: &Path, var_path: &str, extents: Option<Vec<Extent>>) -> Vec<u8> {
    with_hdf5_files(|| oracle_read_now(file, var_path, extents))
}

fn oracle_read_now(file: &Path, var_path: &str, extents: Option<Vec<Extent>>) -> Vec<u8> {
    let f = netcdf::open(file).unwrap_or_else(|e| panic!("libnetcdf opens {}: {e}", file.display()));
    // The netcdf crate resolves `a/b/var` through the groups.
    let var = f.variable(var_path).unwrap_or_else(|| panic!("{}: no variable {var_path}", file.display()));
    let result = match extents {
        None => var.get_raw_values(..),
        Some(e) => var.get_raw_values(e),
    };
    result.unwrap_or_else(|e| panic!("libnetcdf reads {}: {var_path}: {e}", file.display()))
}

/// A whole dimension `0..n` for an oracle extent list.
pub fn all(n: u64) -> Extent {
    Extent::SliceEnd { start: 0, end: n as usize, stride: 1 }
}

/// `start..end` with `stride`, for an oracle extent list.
pub fn range(start: u64, end: u64, stride: isize) -> Extent {
    Extent::SliceEnd { start: start as usize, end: end as usize, stride }
}

// ---------------------------------------------------------------------------------------------------
// vzarr through the library API.

/// Scans `source` with `options` and writes the native store `dir/name`; returns the store path.
pub fn scan_to_store(source: &Path, dir: &Path, name: &str, options: &ScanOptions) -> PathBuf {
    let dataset = scan(source, options).unwrap_or_else(|e| panic!("scanning {}: {e}", source.display()));
    let store = dir.join(name);
    NativeWriter
        .write(&dataset, &store, &WriteOptions::default())
        .unwrap_or_else(|e| panic!("writing {}: {e}", store.display()));
    trust_store(&store);
    store
}

/// Adds the containers `store` declares to the trust list of the `vzarr` runs of this test process
/// (what `vzarr scan` does for stores it writes; the library writer leaves the trust list alone).
pub fn trust_store(store: &Path) {
    let list = test_config_home().join("vzarr").join(vzarr::read::TRUST_FILE);
    vzarr::read::TrustList::add(&list, trusted(store).containers()).expect("updating the test trust list");
}

/// Scans a fixture with default options into `<fixture dir>/store.vzarr`.
pub fn scan_fixture(fixture: &Fixture) -> PathBuf {
    scan_to_store(&fixture.path, fixture.dir.path(), "store.vzarr", &ScanOptions::default())
}

/// The containers a store declares in its `vzarr.json`, as an authorization: what a test that just
/// wrote the store trusts (a user's `vzarr scan` adds the same to the trust list).
pub fn trusted(store: &Path) -> vzarr::read::Authorization {
    let text = std::fs::read(store.join("vzarr.json")).unwrap_or_else(|e| panic!("{}: {e}", store.display()));
    let info: vzarr::formats::StoreInfo = serde_json::from_slice(&text).expect("vzarr.json");
    vzarr::read::Authorization::new(&info.source_containers)
}

/// The trust list directory (`XDG_CONFIG_HOME`) of every `vzarr` run by this test process, so that
/// tests never touch the user's own `~/.config`: one directory per process under the target's
/// temporary directory (those of finished processes are removed).
pub fn test_config_home() -> &'static Path {
    static HOME: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    HOME.get_or_init(|| {
        let base = Path::new(env!("CARGO_TARGET_TMPDIR"));
        for old in std::fs::read_dir(base).into_iter().flatten().flatten() {
            let name = old.file_name().to_string_lossy().into_owned();
            if let Some(pid) = name.strip_prefix("trust-") {
                if !Path::new("/proc").join(pid).exists() {
                    let _ = std::fs::remove_dir_all(old.path());
                }
            }
        }
        let dir = base.join(format!("trust-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("creating the test trust directory");
        dir
    })
}

/// A `Command` for the `vzarr` binary with the test trust directory as `XDG_CONFIG_HOME`.
pub fn vzarr_command() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_vzarr"));
    command.env("XDG_CONFIG_HOME", test_config_home());
    command
}

/// Re-binds `array`'s manifest to its current `zarr.json` (what a deliberate attacker who edits both
/// does): recomputes the metadata digest of the binding footer and the footer's CRC, so that tests of
/// crafted metadata reach the checks behind the integrity check.
pub fn rebind(store: &Path, array: &str) {
    use vzarr::testing::metadata_digest;
    let doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(store.join(array).join("zarr.json")).unwrap()).unwrap();
    let path = store.join(array).join("manifest.bin");
    let mut bytes = std::fs::read(&path).unwrap();
    let end = vzarr::testing::ManifestHeader::parse(&bytes).unwrap().index_range().end as usize;
    bytes[end + 8..end + 40].copy_from_slice(&metadata_digest(&doc));
    let mut crc = flate2::Crc::new();
    crc.update(&bytes[end..end + 92]);
    bytes[end + 92..end + 96].copy_from_slice(&crc.sum().to_le_bytes());
    std::fs::write(&path, bytes).unwrap();
}

/// Opens a store with the blocking API, trusting the containers it declares.
pub fn open_store(store: &Path) -> BlockingStore {
    BlockingStore::open(store.to_str().expect("UTF-8 path"), &trusted(store))
        .unwrap_or_else(|e| panic!("opening {}: {e}", store.display()))
}

/// Reads `var` of `store` with a NumPy-like selection `spec` (empty: everything).
pub fn try_read(store: &BlockingStore, var: &str, spec: &str) -> Result<ArrayData, String> {
    let array = store.array(var).map_err(|e| e.to_string())?;
    let shape = array.reader().shape();
    let selection = Selection::parse(spec, &shape).map_err(|e| e.to_string())?;
    array.read(&selection, &ReadOptions::default()).map_err(|e| e.to_string())
}

/// As [`try_read`], panicking with the error.
pub fn read(store: &BlockingStore, var: &str, spec: &str) -> ArrayData {
    try_read(store, var, spec).unwrap_or_else(|e| panic!("reading {var}[{spec}]: {e}"))
}

/// Checks the store's arrays are exactly the file's variables, each with `zarr.json` metadata matching
/// libnetcdf (shape, data type, dimension names) and every value, read whole, equal to libnetcdf's.
pub fn assert_store_matches_oracle(source: &Path, store_path: &Path) {
    let store = open_store(store_path);
    let variables = oracle_variables(source);
    let mut in_store: Vec<&str> = store.info().arrays.iter().map(|a| a.path.as_str()).collect();
    let mut in_file: Vec<&str> = variables.iter().map(|v| v.path.as_str()).collect();
    in_store.sort_unstable();
    in_file.sort_unstable();
    assert_eq!(in_store, in_file, "{}: arrays in the store vs variables in the file", source.display());
    for var in &variables {
        let what = format!("{}: {}", source.display(), var.path);
        let meta = array_json(store_path, &var.path);
        let shape: Vec<u64> = var.dims.iter().map(|(_, n)| *n).collect();
        let names: Vec<&str> = var.dims.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(meta["zarr_format"], 3, "{what}");
        assert_eq!(meta["node_type"], "array", "{what}");
        assert_eq!(meta["shape"], serde_json::json!(shape), "{what}: shape");
        assert_eq!(meta["dimension_names"], serde_json::json!(names), "{what}: dimension_names");
        let data_type = var.data_type.unwrap_or_else(|| panic!("{what}: not numeric"));
        assert_eq!(meta["data_type"], data_type, "{what}: data_type");

        let ours = read(&store, &var.path, "");
        assert_eq!(ours.shape, shape, "{what}: shape read");
        assert_eq!(ours.data_type.name(), data_type, "{what}: type read");
        let theirs = oracle_read(source, &var.path, None);
        assert_same_elements(&what, &ours.bytes, &theirs, ours.data_type.size());
    }
}

/// Scans `fixture` with default options and runs [`assert_store_matches_oracle`].
pub fn scan_and_compare(fixture: &Fixture) {
    let store = scan_fixture(fixture);
    assert_store_matches_oracle(&fixture.path, &store);
}

/// Asserts two byte buffers of `element_size`-byte elements are equal, naming the first differing
/// element (a plain `assert_eq!` on large buffers prints unreadable output).
pub fn assert_same_elements(what: &str, ours: &[u8], theirs: &[u8], element_size: usize) {
    assert_eq!(ours.len(), theirs.len(), "{what}: vzarr gave {} bytes, libnetcdf {}", ours.len(), theirs.len());
    let first = ours.chunks(element_size).zip(theirs.chunks(element_size)).position(|(a, b)| a != b);
    if let Some(i) = first {
        let span = i * element_size..(i + 1) * element_size;
        panic!("{what}: element {i} differs: vzarr {:02x?}, libnetcdf {:02x?}", &ours[span.clone()], &theirs[span]);
    }
}

/// The parsed `zarr.json` of `array` in `store`.
pub fn array_json(store: &Path, array: &str) -> serde_json::Value {
    let path = store.join(array).join("zarr.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("parsing {}: {e}", path.display()))
}

/// Names in `dir` (files and directories, hidden ones included), sorted.
pub fn dir_entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("listing {}: {e}", dir.display()))
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Copies the directory tree `from` to `to` (created).
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// Every file under `root` with its bytes, by its path relative to `root` (`/`-separated), sorted: a
/// store's or an output's whole content, to compare before and after, or with another tree.
pub fn tree_files(root: &Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    let mut out = std::collections::BTreeMap::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("listing {}: {e}", dir.display())) {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else {
                let name = path.strip_prefix(root).unwrap().to_string_lossy().into_owned();
                out.insert(name, std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())));
            }
        }
    }
    out
}

/// The trees `a` and `b` hold the same files with the same bytes, and at least one; a difference
/// is shown with the bytes around it.
pub fn assert_same_tree(a: &Path, b: &Path) {
    let (ours, theirs) = (tree_files(a), tree_files(b));
    assert!(!ours.is_empty(), "{}: no files", a.display());
    let names = |tree: &std::collections::BTreeMap<String, Vec<u8>>| tree.keys().cloned().collect::<Vec<_>>();
    assert_eq!(names(&ours), names(&theirs), "{} and {} hold different files", a.display(), b.display());
    for ((name, x), y) in ours.iter().zip(theirs.values()) {
        let first = x.iter().zip(y).position(|(p, q)| p != q);
        if let Some(at) = first.or((x.len() != y.len()).then_some(x.len().min(y.len()))) {
            let around = |bytes: &[u8]| {
                String::from_utf8_lossy(&bytes[at.saturating_sub(60).min(bytes.len())..(at + 60).min(bytes.len())])
                    .into_owned()
            };
            panic!(
                "{name} differs between {} and {} at byte {at}: {:?} against {:?}",
                a.display(),
                b.display(),
                around(x),
                around(y)
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------------
// The real binary.

/// A finished run of the `vzarr` binary.
#[derive(Debug)]
pub struct Run {
    /// Exit code (-1 when killed by a signal).
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// The non-empty lines of stderr.
    pub fn stderr_lines(&self) -> Vec<&str> {
        self.stderr.lines().filter(|l| !l.trim().is_empty()).collect()
    }

    /// The counter `name` (`peak_kib`, `syncs`, ...) of the `counters:` line the binary writes to
    /// stderr with `VZARR_TEST_COUNTERS=1`; `None` when the line or the counter is missing.
    pub fn counter(&self, name: &str) -> Option<u64> {
        let line = self.stderr.lines().find(|l| l.starts_with("counters:"))?;
        let prefix = format!("{name}=");
        line.split_whitespace().find_map(|f| f.strip_prefix(prefix.as_str()))?.parse().ok()
    }
}

/// Runs `vzarr` with `args`.
pub fn cli<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Run {
    let mut command = crate::common::vzarr_command();
    command.args(args).env_remove("RUST_BACKTRACE").stdout(Stdio::piped());
    run(command)
}

/// Runs `command` with stdin closed and stderr captured. Stdout is as the caller set it: pass
/// `Stdio::piped()` to capture it (`Run::stdout` is empty otherwise).
pub fn run(mut command: Command) -> Run {
    if !command.get_envs().any(|(k, _)| k == "XDG_CONFIG_HOME") {
        command.env("XDG_CONFIG_HOME", test_config_home());
    }
    command.stdin(Stdio::null()).stderr(Stdio::piped());
    let child = {
        let _exclusive = no_hdf5_files_open();
        command.spawn().expect("starting a child process")
    };
    let out: Output = child.wait_with_output().expect("waiting for a child process");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Runs `vzarr` and asserts it exited with `code`, printing its output otherwise.
pub fn cli_expect<S: AsRef<std::ffi::OsStr>>(args: &[S], code: i32) -> Run {
    let run = cli(args);
    assert_eq!(
        run.code,
        code,
        "vzarr {:?}: expected exit {code}\nstdout:\n{}\nstderr:\n{}",
        args.iter().map(|a| a.as_ref().to_string_lossy()).collect::<Vec<_>>(),
        run.stdout,
        run.stderr
    );
    run
}

/// A parsed NumPy `.npy` file (format 1.0 or 2.0).
#[derive(Debug)]
pub struct Npy {
    /// The dtype descr, e.g. `<f4`.
    pub descr: String,
    pub fortran_order: bool,
    pub shape: Vec<u64>,
    pub data: Vec<u8>,
}

/// Parses a `.npy` file's header (a Python dict literal) and data.
pub fn parse_npy(bytes: &[u8]) -> Npy {
    assert_eq!(&bytes[..6], b"\x93NUMPY", "npy magic");
    let (header_len, start) = match bytes[6] {
        1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10),
        2 | 3 => (u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize, 12),
        v => panic!("npy version {v}"),
    };
    assert_eq!((start + header_len) % 64, 0, "npy header is 64-byte aligned");
    let header = std::str::from_utf8(&bytes[start..start + header_len]).expect("ASCII header");
    assert!(header.ends_with('\n'), "npy header ends in a newline");
    let descr = dict_value(header, "descr");
    let descr = descr.trim_matches(|c| c == '\'' || c == '"').to_string();
    let fortran_order = match dict_value(header, "fortran_order").as_str() {
        "False" => false,
        "True" => true,
        other => panic!("fortran_order {other}"),
    };
    let shape_text = dict_value(header, "shape");
    let inner =
        shape_text.strip_prefix('(').and_then(|s| s.strip_suffix(')')).unwrap_or_else(|| panic!("shape {shape_text}"));
    let shape = inner
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().unwrap_or_else(|_| panic!("shape entry {s}")))
        .collect();
    Npy { descr, fortran_order, shape, data: bytes[start + header_len..].to_vec() }
}

/// The text of `key`'s value in a Python dict literal: up to the next top-level comma.
fn dict_value(header: &str, key: &str) -> String {
    let pattern = format!("'{key}':");
    let at = header.find(&pattern).unwrap_or_else(|| panic!("npy header lacks {key}: {header}")) + pattern.len();
    let rest = header[at..].trim_start();
    let mut depth = 0;
    for (i, c) in rest.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' | '}' if depth == 0 => return rest[..i].trim().to_string(),
            _ => {}
        }
    }
    panic!("unterminated {key} in {header}")
}

/// The NumPy descr (native, i.e. little-endian on the test machines) of a Zarr data type name.
pub fn numpy_descr(zarr_type: &str) -> &'static str {
    let little = cfg!(target_endian = "little");
    match (zarr_type, little) {
        ("int8", _) => "|i1",
        ("uint8", _) => "|u1",
        ("int16", true) => "<i2",
        ("int32", true) => "<i4",
        ("int64", true) => "<i8",
        ("uint16", true) => "<u2",
        ("uint32", true) => "<u4",
        ("uint64", true) => "<u8",
        ("float32", true) => "<f4",
        ("float64", true) => "<f8",
        (other, _) => panic!("no descr for {other} on this platform"),
    }
}
