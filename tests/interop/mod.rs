//! Readable everywhere (issue 5): other implementations read vzarr's exports, and every value equals
//! libnetcdf's read of the source files.
//!
//! - zarrs (Rust) reads `vzarr materialize` output: the monthly archive (rectilinear time grid), the
//!   yearly archive chunked by 61 days (interior partial chunks, rewritten into store-owned bytes that
//!   materialize copies) and, once the NetCDF-3 scanner accepts them, classic files.
//! - The kerchunk JSON of `vzarr export` is checked reference by reference against the native store.
//! - zarr-python 3 + fsspec + xarray (`tests/python/check_interop.py`) read both, when a Python >= 3.12
//!   with those packages is available (`VZARR_PYTHON`, else `target/pyenv` made by
//!   `tests/python/setup.sh`); otherwise that test prints a notice and passes.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use crate::common::archives::{monthly, write_series_file, yearly, SeriesFile};
use crate::common::{cli_expect, dir_entries, oracle_read, with_hdf5_files};
use vzarr::dataset::chunk_key;
use vzarr::dataset::ChunkEntry;
use vzarr::read::blocking::BlockingStore;

pub(crate) const ALL_VARS: [&str; 6] = ["tas", "time", "time_bnds", "lat", "lon", "crs"];

/// Source files in a temporary directory, scanned with `--concat time` into `archive.vzarr`.
pub(crate) struct Archive {
    pub(crate) dir: tempfile::TempDir,
    pub(crate) sources: Vec<PathBuf>,
    pub(crate) store: PathBuf,
}

impl Archive {
    pub(crate) fn new(files: &[SeriesFile]) -> Self {
        let dir = tempfile::tempdir().expect("temporary directory");
        let sources: Vec<PathBuf> =
            with_hdf5_files(|| files.iter().map(|f| write_series_file(dir.path(), f)).collect());
        Archive::scanned(dir, sources)
    }

    /// The committed sample archive (12 monthly files of 2023 whose `tas` has a `_FillValue`).
    fn sample() -> Self {
        let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/sample");
        let mut sources: Vec<PathBuf> = dir_entries(&sample).iter().map(|n| sample.join(n)).collect();
        sources.retain(|p| p.extension().is_some_and(|e| e == "nc"));
        assert_eq!(sources.len(), 12, "fixtures/sample holds 12 monthly files");
        Archive::scanned(tempfile::tempdir().expect("temporary directory"), sources)
    }

    /// The committed kitchen-sink file (every numeric type, big-endian, missing chunks, a 0-d
    /// variable, nested groups), scanned alone.
    pub(crate) fn kitchen_sink() -> Self {
        let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/single/kitchen_sink.nc");
        let dir = tempfile::tempdir().expect("temporary directory");
        let store = dir.path().join("archive.vzarr");
        cli_expect(&[s("scan"), s(&source), s("-o"), s(&store)], 0);
        Archive { dir, sources: vec![source], store }
    }

    fn scanned(dir: tempfile::TempDir, sources: Vec<PathBuf>) -> Self {
        let store = dir.path().join("archive.vzarr");
        scan(&sources, &store, &[]);
        Archive { dir, sources, store }
    }

    pub(crate) fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn materialize(&self) -> PathBuf {
        let out = self.path("archive.zarr");
        cli_expect(&[s("materialize"), s(&self.store), s(&out)], 0);
        out
    }

    fn export(&self, extra: &[&str]) -> PathBuf {
        let out = self.path("refs.json");
        let mut args = vec![s("export"), s(&self.store), "--kerchunk".into(), s(&out), "--overwrite".into()];
        args.extend(extra.iter().map(|a| a.to_string()));
        cli_expect(&args, 0);
        out
    }
}

pub(crate) fn s(path: impl AsRef<std::ffi::OsStr>) -> String {
    path.as_ref().to_string_lossy().into_owned()
}

fn scan(sources: &[PathBuf], output: &Path, extra: &[&str]) {
    let mut args = vec!["scan".to_string()];
    args.extend(sources.iter().map(s));
    args.extend(["--concat", "time", "-o"].map(String::from));
    args.push(s(output));
    args.extend(extra.iter().map(|a| a.to_string()));
    cli_expect(&args, 0);
}

/// libnetcdf's values of `var`: the files concatenated along time when `var` has that dimension, else
/// the first file's.
pub(crate) fn oracle(sources: &[PathBuf], var: &str) -> Vec<u8> {
    let has_time = with_hdf5_files(|| {
        let file = netcdf::open(&sources[0]).expect("libnetcdf opens the first file");
        let v = file.variable(var).unwrap_or_else(|| panic!("no variable {var}"));
        v.dimensions().iter().any(|d| d.name() == "time")
    });
    let files = if has_time { sources } else { &sources[..1] };
    files.iter().flat_map(|p| oracle_read(p, var, None)).collect()
}

pub(crate) fn assert_same(what: &str, ours: &[u8], theirs: &[u8]) {
    assert_eq!(ours.len(), theirs.len(), "{what}: {} bytes vs libnetcdf's {}", ours.len(), theirs.len());
    if let Some(i) = ours.iter().zip(theirs).position(|(a, b)| a != b) {
        panic!("{what}: byte {i} differs from libnetcdf's");
    }
}

// ---------------------------------------------------------------------------------------------------
// zarrs reads materialized stores.

pub(crate) type ZarrsArray = zarrs::array::Array<zarrs::filesystem::FilesystemStore>;

pub(crate) fn zarrs_array(store: &Path, var: &str) -> ZarrsArray {
    let fs = zarrs::filesystem::FilesystemStore::new(store).expect("zarrs opens the directory");
    zarrs::array::Array::open(Arc::new(fs), &format!("/{var}")).unwrap_or_else(|e| panic!("zarrs opens {var}: {e}"))
}

pub(crate) fn zarrs_read(array: &ZarrsArray) -> Vec<u8> {
    let bytes: zarrs::array::ArrayBytes<'static> =
        array.retrieve_array_subset(&array.subset_all()).unwrap_or_else(|e| panic!("zarrs reads: {e}"));
    bytes.into_fixed().expect("fixed-size elements").into_owned()
}

/// Every variable of the materialized store, read whole by zarrs, equals libnetcdf's values.
pub(crate) fn assert_zarrs_reads_exactly(store: &Path, sources: &[PathBuf], vars: &[&str]) {
    for var in vars {
        let array = zarrs_array(store, var);
        assert_same(&format!("zarrs: {var}"), &zarrs_read(&array), &oracle(sources, var));
    }
}

/// The time edges (chunk lengths along dimension 0) zarrs sees.
pub(crate) fn zarrs_time_edges(array: &ZarrsArray) -> Vec<u64> {
    let chunks = array.chunk_grid_shape()[0];
    let rest = vec![0; array.dimensionality() - 1];
    (0..chunks).map(|c| array.chunk_shape(&[vec![c], rest.clone()].concat()).expect("chunk shape")[0].get()).collect()
}

#[test]
fn zarrs_reads_materialized_monthly_archive_with_rectilinear_time() {
    let archive = Archive::new(&monthly(2023..=2024, None, true));
    let out = archive.materialize();
    let tas = zarrs_array(&out, "tas");
    let days: Vec<u64> = (2023..=2024)
        .flat_map(|y| (1..=12).map(move |m| crate::common::fixtures::days_in_month(y, m) as u64))
        .collect();
    assert_eq!(zarrs_time_edges(&tas), days, "zarrs sees one chunk per month");
    assert_zarrs_reads_exactly(&out, &archive.sources, &ALL_VARS);
    // The typed form docs/how-to/exports.md shows.
    let values: Vec<f32> = tas.retrieve_array_subset(&tas.subset_all()).expect("zarrs reads tas as f32");
    assert_eq!(values.len(), days.iter().sum::<u64>() as usize * 10 * 12);
    // A real Zarr store: metadata and chunk files only, nothing of the native layout.
    assert_eq!(dir_entries(&out), ["crs", "lat", "lon", "tas", "time", "time_bnds", "zarr.json"]);
    assert_eq!(dir_entries(&out.join("tas")), ["c", "zarr.json"]);
    assert!(out.join("crs/c").is_file(), "a 0-d array's chunk is <var>/c");
}

#[test]
fn zarrs_reads_materialized_interior_partial_chunks_exactly() {
    let archive = Archive::new(&yearly(2000..=2003, 61));
    let info: Value = serde_json::from_slice(&std::fs::read(archive.store.join("vzarr.json")).unwrap()).unwrap();
    let tas = info["arrays"].as_array().unwrap().iter().find(|a| a["path"] == "tas").unwrap();
    assert!(tas["stats"]["owned"].as_u64().unwrap() > 0, "rewritten chunks are store-owned: {tas}");
    let out = archive.materialize();
    assert_zarrs_reads_exactly(&out, &archive.sources, &ALL_VARS);
}

#[test]
fn zarrs_reads_materialized_groups_types_and_missing_chunks() {
    let archive = Archive::kitchen_sink();
    let out = archive.materialize();
    let store = BlockingStore::open(s(&archive.store), &crate::common::trusted(&archive.store)).unwrap();
    let arrays: Vec<&str> = store.info().arrays.iter().map(|a| a.path.as_str()).collect();
    assert!(arrays.iter().any(|a| a.contains('/')), "arrays in nested groups: {arrays:?}");
    let missing: u64 = store.info().arrays.iter().map(|a| a.stats.missing).sum();
    assert!(missing > 0, "some chunks were never written");
    for group in store.info().groups.iter().filter(|g| !g.is_empty()) {
        assert!(out.join(group).join("zarr.json").is_file(), "{group}/zarr.json");
    }
    for var in arrays {
        let array = zarrs_array(&out, var);
        assert_same(&format!("zarrs: {var}"), &zarrs_read(&array), &oracle_read(&archive.sources[0], var, None));
    }
}

#[test]
fn zarrs_reads_materialized_netcdf3_archive() {
    let dir = tempfile::tempdir().unwrap();
    let sources: Vec<PathBuf> = (1..=3).map(|m| write_netcdf3_month(dir.path(), m)).collect();
    let store = dir.path().join("nc3.vzarr");
    let mut args = vec!["scan".to_string()];
    args.extend(sources.iter().map(s));
    args.extend(["--concat", "time", "-o"].map(String::from));
    args.push(s(&store));
    let run = crate::common::cli(&args);
    if run.code != 0 && run.stderr.contains("NetCDF-3 classic formats are not supported") {
        eprintln!("notice: NetCDF-3 not scanned by this build ({}); skipping", run.stderr.trim());
        return;
    }
    assert_eq!(run.code, 0, "scan of NetCDF-3 files: {}", run.stderr);
    let out = dir.path().join("nc3.zarr");
    cli_expect(&[s("materialize"), s(&store), s(&out)], 0);
    assert_zarrs_reads_exactly(&out, &sources, &["tas", "time", "lat", "lon"]);
}

/// A CDF-2 (64-bit offset) month: tas(time, lat, lon) float32 record variable, time, lat, lon.
fn write_netcdf3_month(dir: &Path, month: u32) -> PathBuf {
    let path = dir.join(format!("tas_2023{month:02}.nc"));
    let first = crate::common::fixtures::days_since_epoch(2023, month);
    let days = crate::common::fixtures::days_in_month(2023, month);
    let (ny, nx) = (4usize, 5usize);
    with_hdf5_files(|| {
        let mut f = netcdf::create_with(&path, netcdf::Options::_64BIT_OFFSET).expect("create NetCDF-3 file");
        f.add_unlimited_dimension("time").unwrap();
        f.add_dimension("lat", ny).unwrap();
        f.add_dimension("lon", nx).unwrap();
        f.add_variable::<f64>("lat", &["lat"]).unwrap();
        f.add_variable::<f64>("lon", &["lon"]).unwrap();
        f.add_variable::<f64>("time", &["time"]).unwrap().put_attribute("units", "days since 1970-01-01").unwrap();
        f.add_variable::<f32>("tas", &["time", "lat", "lon"]).unwrap();
        f.enddef().unwrap(); // classic files leave define mode before data is written
        let lat: Vec<f64> = (0..ny).map(|i| i as f64 * 10.0).collect();
        f.variable_mut("lat").unwrap().put_values(&lat, ..).unwrap();
        let lon: Vec<f64> = (0..nx).map(|i| i as f64 * 20.0).collect();
        f.variable_mut("lon").unwrap().put_values(&lon, ..).unwrap();
        let t: Vec<f64> = (0..days).map(|d| (first + d as i64) as f64).collect();
        f.variable_mut("time").unwrap().put_values(&t, (0..days,)).unwrap();
        let v: Vec<f32> = (0..days * ny * nx).map(|i| 250.0 + i as f32 * 0.25 + month as f32).collect();
        f.variable_mut("tas").unwrap().put_values(&v, [0..days, 0..ny, 0..nx]).unwrap();
    });
    path
}

// ---------------------------------------------------------------------------------------------------
// kerchunk JSON against the native store.

fn refs_of(path: &Path) -> serde_json::Map<String, Value> {
    let doc: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).expect("reference JSON parses");
    assert_eq!(doc["version"], 1, "version-1 reference JSON");
    doc["refs"].as_object().expect("refs object").clone()
}

/// The bytes a `[url, offset, length]` reference names, read straight from the file.
fn fetch_reference(value: &Value) -> Vec<u8> {
    use std::os::unix::fs::FileExt;
    let url = value[0].as_str().expect("url");
    let path = url.strip_prefix("file://").unwrap_or_else(|| panic!("{url}: not a file:// URL"));
    let (offset, length) = (value[1].as_u64().unwrap(), value[2].as_u64().unwrap());
    let mut bytes = vec![0; length as usize];
    std::fs::File::open(path).unwrap().read_exact_at(&mut bytes, offset).unwrap();
    bytes
}

/// Every key of `refs` is a metadata document equal to the store's, or a chunk whose bytes equal the
/// store's chunk; every present chunk has a key and no missing chunk has one.
fn assert_refs_match_store(refs: &serde_json::Map<String, Value>, store_path: &Path) {
    let store = BlockingStore::open(s(store_path), &crate::common::trusted(store_path)).unwrap();
    let mut expected_keys = BTreeSet::new();
    for node in store.info().groups.iter().chain(store.info().arrays.iter().map(|a| &a.path)) {
        let key = vzarr::dataset::node_key(node);
        let text = refs[&key].as_str().unwrap_or_else(|| panic!("{key}: inline JSON text"));
        let ours: Value = serde_json::from_str(text).unwrap();
        let native: Value = serde_json::from_slice(&std::fs::read(store_path.join(&key)).unwrap()).unwrap();
        assert_eq!(ours, native, "{key}");
        expected_keys.insert(key);
    }
    let (mut references, mut inline) = (0, 0);
    for info in &store.info().arrays {
        let array = store.array(&info.path).unwrap();
        let reader = array.reader();
        let grid = &reader.metadata().chunk_grid;
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let entries = runtime.block_on(reader.entries(0..grid.num_chunks())).unwrap();
        for (linear, entry) in (0u64..).zip(&entries) {
            let key = chunk_key(&info.path, &grid.chunk_coords(linear));
            let Some(native) = runtime.block_on(reader.stored_chunk(entry)).unwrap() else {
                assert!(!refs.contains_key(&key), "{key}: a missing chunk has no key");
                continue;
            };
            let value = refs.get(&key).unwrap_or_else(|| panic!("{key}: present chunk without a key"));
            let bytes = match entry {
                ChunkEntry::Owned { .. } => {
                    inline += 1;
                    let text = value.as_str().and_then(|t| t.strip_prefix("base64:")).expect("base64: value");
                    {
                        use base64::Engine as _;
                        base64::engine::general_purpose::STANDARD.decode(text).expect("valid base64")
                    }
                }
                _ => {
                    references += 1;
                    fetch_reference(value)
                }
            };
            assert!(bytes == native.as_ref(), "{key}: referenced bytes differ from the native store's chunk");
            expected_keys.insert(key);
        }
    }
    let keys: BTreeSet<String> = refs.keys().cloned().collect();
    assert_eq!(keys, expected_keys, "keys: the metadata documents and exactly the present chunks");
    assert!(references > 0 && inline > 0, "both kinds exercised: {references} references, {inline} inline");
}

#[test]
fn kerchunk_references_equal_the_native_stores_chunks() {
    let archive = Archive::new(&yearly(2000..=2003, 61));
    // Nothing inlined: the references are compared with the store's (inlining: tests/everyday).
    let refs = refs_of(&archive.export(&["--inline-threshold", "0"]));
    assert_refs_match_store(&refs, &archive.store);
}

/// A kerchunk reference document opens as a store: `read` of every variable equals libnetcdf's reads
/// of the files, `verify` compares every value, `info` counts what the native store counts (the
/// chunks it rewrote aside).
#[test]
fn read_info_and_verify_open_kerchunk_json() {
    let archive = Archive::new(&monthly(2023..=2023, Some(10), true));
    // Nothing inlined, so that `info` counts what the native store counts (inlining: tests/everyday).
    let refs = archive.export(&["--inline-threshold", "0"]);
    for var in ["tas", "time", "time_bnds"] {
        let npy = archive.path(&format!("{var}.npy"));
        cli_expect(&[s("read"), s(&refs), s(var), s("-o"), s(&npy)], 0);
        let ours = crate::common::parse_npy(&std::fs::read(&npy).unwrap());
        assert_same(&format!("{var} read from kerchunk JSON"), &ours.data, &oracle(&archive.sources, var));
    }
    let verified = cli_expect(&[s("verify"), s(&refs)], 0);
    assert!(verified.stdout.contains("ok   tas:") && verified.stdout.contains(": 0 failed"), "{}", verified.stdout);
    let info = |store: &Path| {
        let out = cli_expect(&[s("info"), s(store), s("--json")], 0).stdout;
        let mut doc: Value = serde_json::from_str(&out).unwrap();
        // How many chunks the scan rewrote is the native store's record; a reference document has none.
        for array in doc["arrays"].as_array_mut().unwrap() {
            array.as_object_mut().unwrap().remove("rewritten_chunks");
        }
        (doc["arrays"].clone(), doc["sources"].clone(), doc["source_files"].clone())
    };
    assert_eq!(info(&refs), info(&archive.store));
}

/// kerchunk documents as Python kerchunk writes them (Zarr v2 keys, inline chunks, absolute paths)
/// open through the same `Store::open` as vzarr's own: one file's (`SingleHdf5ToZarr`) and two
/// months of the same length concatenated (`MultiZarrToZarr`). Every variable read through vzarr
/// equals libnetcdf's read of the files.
#[test]
fn kerchunk_documents_of_python_kerchunk_open_as_stores() {
    let Some(python) = python() else {
        eprintln!("notice: no Python >= 3.12 with kerchunk (run tests/python/setup.sh); skipping");
        return;
    };
    // Whole months per chunk: kerchunk's combine is only right when every file fills its chunks.
    let files: Vec<_> = monthly(2023..=2023, None, true)
        .into_iter()
        .filter(|f| f.name.ends_with("01.nc") || f.name.ends_with("03.nc"))
        .collect();
    let archive = Archive::new(&files);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/kerchunk_refs.py");
    let kerchunk = |name: &str, sources: &[PathBuf], concat: Option<&str>| {
        let out = archive.path(name);
        let mut command = std::process::Command::new(&python);
        command.arg(&script).arg(&out).args(sources);
        if let Some(dim) = concat {
            command.args(["--concat", dim]);
        }
        let run = crate::common::run(command);
        assert_eq!(run.code, 0, "kerchunk_refs.py failed:\n{}\n{}", run.stdout, run.stderr);
        out
    };
    let single = kerchunk("single.json", &archive.sources[..1], None);
    let combined = kerchunk("combined.json", &archive.sources, Some("time"));
    let doc: Value = serde_json::from_slice(&std::fs::read(&combined).unwrap()).unwrap();
    assert!(doc["refs"].get("tas/.zarray").is_some(), "kerchunk writes Zarr v2 keys");
    let cases = [
        (&single, &archive.sources[..1], ["tas", "time", "lat", "lon"]),
        (&combined, &archive.sources[..], ["tas", "time", "lat", "lon"]),
    ];
    for (refs, sources, vars) in cases {
        for var in vars {
            let npy = archive.path(&format!("{var}.npy"));
            cli_expect(&[s("read"), s(refs), s(var), s("-o"), s(&npy), s("--overwrite")], 0);
            let ours = crate::common::parse_npy(&std::fs::read(&npy).unwrap());
            assert_same(&format!("{var} read from kerchunk's {}", refs.display()), &ours.data, &oracle(sources, var));
        }
    }
}

#[test]
fn scan_to_kerchunk_json_writes_what_export_writes() {
    let archive = Archive::new(&yearly(2000..=2001, 61));
    let exported = refs_of(&archive.export(&[]));
    let direct = archive.path("direct.json");
    scan(&archive.sources, &direct, &["--format", "kerchunk-json"]);
    let direct = refs_of(&direct);
    let keys = |r: &serde_json::Map<String, Value>| r.keys().cloned().collect::<Vec<_>>();
    assert_eq!(keys(&direct), keys(&exported), "same keys in the same order");
    for (key, value) in &exported {
        if key != "zarr.json" {
            // The root group's history line carries the time of each scan.
            assert_eq!(&direct[key], value, "{key}");
        }
    }
}

#[test]
fn url_prefix_rewrites_every_reference() {
    let archive = Archive::new(&monthly(2023..=2023, Some(10), false));
    let dir = format!("{}/", archive.dir.path().display());
    // Nothing inlined: every file keeps references (its small rectilinear arrays would be inlined).
    let prefix = format!("{dir}=s3://bucket/archive/");
    let refs = refs_of(&archive.export(&["--url-prefix", &prefix, "--inline-threshold", "0"]));
    let urls: BTreeSet<&str> = refs.values().filter_map(|v| v.as_array()).map(|a| a[0].as_str().unwrap()).collect();
    let expected: BTreeSet<String> = archive
        .sources
        .iter()
        .map(|p| format!("s3://bucket/archive/{}", p.file_name().unwrap().to_string_lossy()))
        .collect();
    assert_eq!(urls, expected.iter().map(String::as_str).collect());
    let bad = crate::common::cli(&[
        s("export"),
        s(&archive.store),
        s("--kerchunk"),
        s(archive.path("x.json")),
        s("--url-prefix"),
        s("nonsense"),
    ]);
    assert_eq!(bad.code, 2, "a rule without `=` is a usage error: {}", bad.stderr);
}

#[test]
fn exports_refuse_existing_outputs_and_leave_nothing_behind() {
    let archive = Archive::new(&monthly(2023..=2023, None, true));
    let out = archive.path("archive.zarr");
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("keep"), b"old").unwrap();
    let run = cli_expect(&[s("materialize"), s(&archive.store), s(&out)], 1);
    assert!(run.stderr.contains("already exists"), "{}", run.stderr);
    assert_eq!(dir_entries(&out), ["keep"], "the existing directory is untouched");
    // --overwrite replaces a Zarr store only, never an ordinary directory.
    let run = cli_expect(&[s("materialize"), s(&archive.store), s(&out), s("--overwrite")], 1);
    assert!(run.stderr.contains("is not a Zarr v3 store"), "{}", run.stderr);
    assert_eq!(dir_entries(&out), ["keep"], "the existing directory is untouched");
    std::fs::remove_dir_all(&out).unwrap();
    cli_expect(&[s("materialize"), s(&archive.store), s(&out)], 0);
    std::fs::write(out.join("stale"), b"left by an earlier run").unwrap();
    cli_expect(&[s("materialize"), s(&archive.store), s(&out), s("--overwrite")], 0);
    assert!(!out.join("stale").exists() && out.join("tas/zarr.json").is_file(), "replaced by --overwrite");
    let refs = archive.path("refs.json");
    std::fs::write(&refs, b"old").unwrap();
    cli_expect(&[s("export"), s(&archive.store), s("--kerchunk"), s(&refs)], 1);
    assert_eq!(std::fs::read(&refs).unwrap(), b"old");
    let hidden: Vec<String> = dir_entries(archive.dir.path()).into_iter().filter(|n| n.starts_with('.')).collect();
    assert!(hidden.is_empty(), "no staging leftovers: {hidden:?}");
}

// ---------------------------------------------------------------------------------------------------
// The Python stack.

/// A Python >= 3.12 with zarr, numcodecs, fsspec, xarray and netCDF4, if one is available.
pub(crate) fn python() -> Option<PathBuf> {
    let candidates = [
        std::env::var_os("VZARR_PYTHON").map(PathBuf::from),
        Some(Path::new(env!("CARGO_MANIFEST_DIR")).join("target/pyenv/bin/python")),
    ];
    let probe = "import sys, zarr, numcodecs, fsspec, xarray, netCDF4, h5py; sys.exit(sys.version_info < (3, 12))";
    let found = candidates
        .into_iter()
        .flatten()
        .find(|py| std::process::Command::new(py).args(["-c", probe]).output().is_ok_and(|o| o.status.success()));
    assert!(
        found.is_some() || !python_required(),
        "VZARR_REQUIRE_PYTHON=1 but no usable Python: run tests/python/setup.sh or set VZARR_PYTHON"
    );
    found
}

/// Whether the Python checks must run (`./dev test` sets `VZARR_REQUIRE_PYTHON=1` once the
/// environment is set up): a missing piece is then a failure, not a skip.
pub(crate) fn python_required() -> bool {
    std::env::var_os("VZARR_REQUIRE_PYTHON").is_some_and(|v| v == "1")
}

/// The CMIP-like archive (issue 9) for Python: xarray opens its kerchunk JSON (and the materialized
/// store) with `member` a coordinate of strings and every value equal to netCDF4's.
#[test]
fn python_reads_whole_archive_with_member_strings() {
    let Some(python) = python() else {
        eprintln!("notice: no Python >= 3.12 with zarr and xarray (run tests/python/setup.sh); skipping");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // Two years (2004 a leap year); pr chunked by 30 days here (the 1-day chunks of the full archive
    // are tested in `archive`, and would cost fsspec thousands of requests).
    let mut files: Vec<_> = crate::common::cmip::cmip_archive().into_iter().filter(|f| f.year <= 2004).collect();
    for f in files.iter_mut().filter(|f| f.var == "pr") {
        f.time_chunk = 30;
    }
    let sources: Vec<PathBuf> = files.iter().map(|f| crate::common::cmip::write_cmip_file(dir.path(), f)).collect();
    let glob = format!("{}/*.nc", dir.path().display());
    let dims = ["--concat", "member=attr:variant_label", "--concat", "time"];
    let refs = dir.path().join("cmip.json");
    let mut args = vec!["scan", &glob];
    args.extend(dims);
    crate::common::cli_expect(&[args.clone(), vec!["--format", "kerchunk-json", "-o", &s(&refs)]].concat(), 0);
    let store = dir.path().join("cmip.vzarr");
    crate::common::cli_expect(&[args, vec!["-o", &s(&store)]].concat(), 0);
    let zarr = dir.path().join("cmip.zarr");
    crate::common::cli_expect(&["materialize", &s(&store), &s(&zarr)], 0);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/check_interop.py");
    let mut command = std::process::Command::new(&python);
    command.arg(script).args(["--refs", &s(&refs), "--zarr", &s(&zarr), "--member", "member=variant_label"]);
    command.args(&sources).stdout(std::process::Stdio::piped());
    let run = crate::common::run(command);
    eprintln!("{}", run.stdout);
    assert_eq!(run.code, 0, "check_interop.py failed:\n{}\n{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("ok   kerchunk xarray member is a coordinate of strings"), "{}", run.stdout);
    assert!(run.stdout.contains("ok   kerchunk xarray tas"), "{}", run.stdout);
}

#[test]
fn python_reads_kerchunk_and_materialized_stores() {
    let Some(python) = python() else {
        assert!(
            std::env::var_os("VZARR_REQUIRE_PYTHON").is_none_or(|v| v != "1"),
            "VZARR_REQUIRE_PYTHON=1 but no usable Python: run tests/python/setup.sh or set VZARR_PYTHON"
        );
        eprintln!(
            "notice: no Python >= 3.12 with zarr, fsspec, xarray and netCDF4 (set VZARR_PYTHON or run \
             tests/python/setup.sh); skipping the zarr-python/xarray check"
        );
        return;
    };
    let archives = [Archive::sample(), Archive::new(&yearly(2000..=2003, 61)), Archive::kitchen_sink()];
    for archive in archives {
        let refs = archive.export(&[]);
        let out = archive.materialize();
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/check_interop.py");
        let mut command = std::process::Command::new(&python);
        command.arg(script).args(["--refs", &s(&refs), "--zarr", &s(&out), "--concat", "time"]);
        command.args(&archive.sources).stdout(std::process::Stdio::piped());
        let run = crate::common::run(command);
        eprintln!("{}", run.stdout);
        assert_eq!(run.code, 0, "check_interop.py failed:\n{}\n{}", run.stdout, run.stderr);
    }
}
