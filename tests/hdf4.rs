//! The HDF4 scanner: every fixture of `fixtures/hdf4` (written by `make_fixtures.py` with pyhdf and
//! `hrepack`) is scanned, written as a native store and read back through vzarr's reader; every value is
//! compared with libhdf4 (`SDreaddata`, the alt build `verify` links) reading the same file at test
//! time, and `vzarr verify` proves the stores. Hostile files (truncated, bad offsets, loops, absurd sizes) give one-line errors.

#[path = "hdf4/oracle.rs"]
mod oracle;

#[cfg(all(feature = "cli", feature = "verify"))]
#[path = "hdf4/cli.rs"]
mod cli;

#[path = "hdf4/vgroups.rs"]
mod vgroups;

#[path = "hdf4/hostile.rs"]
mod hostile;

#[path = "hdf4/damage.rs"]
mod damage;

#[path = "hdf4/szip.rs"]
mod szip;

#[path = "hdf4/external.rs"]
mod external;

#[path = "hdf4/dmrpp.rs"]
mod dmrpp;

#[path = "hdf4/appended.rs"]
mod appended;

#[cfg(feature = "http")]
#[path = "hdf4/remote.rs"]
mod remote;

#[cfg(feature = "http")]
#[path = "common/range_server.rs"]
mod range_server;

use std::path::{Path, PathBuf};

use vzarr::dataset::VirtualDataset;
use vzarr::grid::Selection;
use vzarr::pipeline::{write_dataset, Archive, Format, Output};
use vzarr::read::blocking::BlockingStore;
use vzarr::read::Authorization;
use vzarr::{scan_file, ScanOptions};

/// The committed fixtures (with the granules and the split series).
pub fn fixtures() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/hdf4");
    let dirs = ["", "granules", "series", "series_chunked", "external_granules", "external_series"];
    let mut files: Vec<PathBuf> =
        dirs.iter().flat_map(|sub| std::fs::read_dir(dir.join(sub)).unwrap().map(|e| e.unwrap().path())).collect();
    files.retain(|p| p.extension().is_some_and(|e| e == "hdf"));
    files.sort();
    assert!(files.len() >= 4, "fixtures missing: {files:?}");
    files
}

/// A fixture by file name.
pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/hdf4").join(name)
}

/// Arrays read back: (name, shape, native-endian values).
pub type ReadArrays = Vec<(String, Vec<u64>, Vec<u8>)>;

/// Scans `path`, writes a native store and returns every array's values as native bytes, by name.
pub fn read_back(path: &Path, options: &ScanOptions) -> (VirtualDataset, ReadArrays) {
    let dataset = scan_file(path, options).unwrap_or_else(|e| panic!("{e}"));
    let dir = tempfile::tempdir().unwrap();
    let store_path = dir.path().join("store.vzarr");
    let written = write_dataset(&dataset, &Output::new(&store_path, Format::Native)).unwrap();
    let store =
        BlockingStore::open(store_path.to_str().unwrap(), &Authorization::new(written.source_containers())).unwrap();
    let mut out = Vec::new();
    for array in &dataset.arrays {
        let reader = store.array(&array.path).unwrap();
        let shape = reader.reader().shape();
        let data =
            reader.read(&Selection::all(&shape), &Default::default()).unwrap_or_else(|e| panic!("{}: {e}", array.path));
        out.push((array.path.clone(), shape, data.bytes));
    }
    (dataset, out)
}

#[test]
fn every_fixture_scans_and_reads_back() {
    let options = ScanOptions { skip_unsupported: true, ..Default::default() };
    for path in fixtures() {
        let (dataset, arrays) = read_back(&path, &options);
        assert!(!arrays.is_empty(), "{}: no arrays", path.display());
        for w in &dataset.warnings {
            eprintln!("warning: {w}");
        }
    }
}

#[test]
fn attributes_dimensions_and_scales() {
    let (dataset, arrays) = read_back(&fixture("types.hdf"), &ScanOptions::default());
    let root = &dataset.groups[0].attributes;
    assert_eq!(root["title"], "vzarr HDF4 fixture");
    assert_eq!(root["version"], 3);
    assert_eq!(root["ratio"], 0.5);
    let scaled = dataset.arrays.iter().find(|a| a.path == "scaled").unwrap();
    let attrs = &scaled.metadata.attributes;
    assert_eq!(attrs["scale_factor"], 0.01);
    assert_eq!(attrs["add_offset"], 273.15);
    assert_eq!(attrs["_FillValue"], -999);
    assert_eq!(attrs["valid_range"], serde_json::json!([-500, 500]));
    assert_eq!(scaled.metadata.fill_value.as_bytes(), (-999i16).to_ne_bytes());
    assert_eq!(scaled.metadata.dimension_names.as_deref(), Some(&["y".to_string(), "x".to_string()][..]));
    let v = dataset.arrays.iter().find(|a| a.path == "v_f32").unwrap();
    assert_eq!(v.metadata.attributes["units"], "kelvin");
    // The dimension scales are coordinate arrays named after their dimension.
    let (_, shape, y) = arrays.iter().find(|(n, ..)| n == "y").unwrap();
    assert_eq!(shape, &[4]);
    let y: Vec<f32> = y.chunks_exact(4).map(|b| f32::from_ne_bytes(b.try_into().unwrap())).collect();
    assert_eq!(y, [10.0, 20.0, 30.0, 40.0]);
}

/// Scans and combines `pattern` with `concat`, writes a native store, and reads `array` back whole.
pub(crate) fn combined(pattern: &str, concat: &str, array: &str) -> (Vec<u64>, Vec<u8>, VirtualDataset) {
    let pattern = format!("{}/fixtures/hdf4/{pattern}", env!("CARGO_MANIFEST_DIR"));
    let scanned =
        Archive::new([pattern]).concat(concat).unwrap().history(false).scan().unwrap_or_else(|e| panic!("{e}"));
    let dir = tempfile::tempdir().unwrap();
    let store_path = dir.path().join("combined.vzarr");
    let written = write_dataset(&scanned.dataset, &Output::new(&store_path, Format::Native)).unwrap();
    let store =
        BlockingStore::open(store_path.to_str().unwrap(), &Authorization::new(written.source_containers())).unwrap();
    let reader = store.array(array).unwrap();
    let shape = reader.reader().shape();
    let data = reader.read(&Selection::all(&shape), &Default::default()).unwrap();
    (shape, data.bytes, scanned.dataset)
}

#[test]
fn daily_granules_combine_along_a_new_dimension_keyed_by_the_file_name() {
    let (shape, bytes, dataset) = combined("granules/MODLIKE.A*.hdf", r"day=path:A(\d{7})", "Surface_Temperature");
    assert_eq!(shape, [3, 4, 6]);
    let mut expected = Vec::new();
    for day in 1..=3 {
        let (_, arrays) = read_back(&fixture(&format!("granules/MODLIKE.A2024{day:03}.hdf")), &ScanOptions::default());
        expected.extend(arrays.into_iter().find(|(n, ..)| n == "Surface_Temperature").unwrap().2);
    }
    assert_eq!(bytes, expected);
    let array = dataset.arrays.iter().find(|a| a.path == "Surface_Temperature").unwrap();
    let dims = array.metadata.dimension_names.as_deref().unwrap();
    assert_eq!(dims, ["day", "YDim", "XDim"]);
    assert!(dataset.arrays.iter().any(|a| a.path == "XDim"), "the grid's longitudes, taken once");
}

#[test]
fn a_series_split_in_files_combines_along_its_coordinate() {
    for dir in ["series", "series_chunked"] {
        series_combines(dir);
    }
}

/// The two files of `dir` combined along `time` read as the files one after the other.
fn series_combines(dir: &str) {
    let (shape, bytes, _) = combined(&format!("{dir}/part*.hdf"), "time", "time");
    assert_eq!(shape, [10]);
    let time: Vec<f64> = bytes.chunks_exact(8).map(|b| f64::from_ne_bytes(b.try_into().unwrap())).collect();
    assert_eq!(time, (0..10).map(f64::from).collect::<Vec<_>>());
    let (shape, bytes, dataset) = combined(&format!("{dir}/part*.hdf"), "time", "level");
    assert_eq!(shape, [10, 3]);
    if dir == "series_chunked" {
        let level = dataset.arrays.iter().find(|a| a.path == "level").unwrap();
        let edges: Vec<u64> = level.metadata.chunk_grid.dims()[0].edges().collect();
        // The first file's partial last chunk is trimmed; the last file's stays the array's edge chunk.
        assert_eq!(edges, [2, 2, 1, 2, 2, 2]);
    }
    let mut expected = Vec::new();
    for part in 1..=2 {
        let (_, arrays) = read_back(&fixture(&format!("{dir}/part{part}.hdf")), &ScanOptions::default());
        expected.extend(arrays.into_iter().find(|(n, ..)| n == "level").unwrap().2);
    }
    assert_eq!(bytes, expected);
}

/// Counts of (referenced, store-owned, missing) chunks and the codec names of `array` in `file`.
fn storage_of(file: &str, array: &str) -> (u64, u64, u64, Vec<&'static str>) {
    let options = ScanOptions { skip_unsupported: true, ..Default::default() };
    let dataset = scan_file(&fixture(file), &options).unwrap();
    let a = dataset.arrays.iter().find(|a| a.path == array).unwrap_or_else(|| panic!("{file}: no {array}"));
    let stats = a.chunks.stats();
    (stats.referenced, stats.owned, stats.missing, a.metadata.codecs.codecs().iter().map(|c| c.name()).collect())
}

#[test]
fn bytes_a_zarr_reader_can_decode_are_referenced_the_rest_stored() {
    assert_eq!(storage_of("types.hdf", "v_f32"), (1, 0, 0, vec!["bytes"]));
    assert_eq!(storage_of("chunked.hdf", "v_i16"), (6, 0, 0, vec!["bytes"]));
    assert_eq!(storage_of("chunked_deflate.hdf", "v_f64"), (6, 0, 0, vec!["bytes", "numcodecs.zlib"]));
    assert_eq!(storage_of("deflate.hdf", "v_i32"), (1, 0, 0, vec!["bytes", "numcodecs.zlib"]));
    assert_eq!(storage_of("chunked_partial.hdf", "partial"), (2, 0, 2, vec!["bytes"]));
    assert_eq!(storage_of("chunked_partial.hdf", "squashed"), (6, 0, 0, vec!["bytes", "numcodecs.zlib"]));
    assert_eq!(storage_of("chunked_rle.hdf", "v_i16"), (0, 6, 0, vec!["bytes"]));
    assert_eq!(storage_of("chunked_huff.hdf", "v_u32"), (0, 6, 0, vec!["bytes"]));
    assert_eq!(storage_of("compressed.hdf", "rle"), (0, 1, 0, vec!["bytes", "numcodecs.zlib"]));
    assert_eq!(storage_of("unlimited.hdf", "series"), (1, 0, 0, vec!["bytes"]));
    assert_eq!(storage_of("chunked_partial.hdf", "nbit_wide"), (0, 1, 0, vec!["bytes", "numcodecs.zlib"]));
    assert_eq!(storage_of("chunked_partial.hdf", "little_endian"), (1, 0, 0, vec!["bytes"]));
}

#[test]
fn hdf_eos2_structural_metadata_names_dimensions_and_gives_grid_coordinates() {
    let (dataset, arrays) = read_back(&fixture("granules/MODLIKE.A2024001.hdf"), &ScanOptions::default());
    let field = dataset.arrays.iter().find(|a| a.path == "Surface_Temperature").unwrap();
    assert_eq!(field.metadata.dimension_names.as_deref(), Some(&["YDim".to_string(), "XDim".to_string()][..]));
    let attrs = &field.metadata.attributes;
    assert_eq!(attrs["hdfeos_grid"], "MOD_Grid_Daily");
    assert_eq!(attrs["hdfeos_Projection"], "GCTP_GEO");
    assert_eq!(attrs["hdfeos_UpperLeftPointMtrs"], serde_json::json!([-180000000.0, 90000000.0]));
    let f64s = |name: &str| -> Vec<f64> {
        let (_, _, bytes) = arrays.iter().find(|(n, ..)| n == name).unwrap();
        bytes.chunks_exact(8).map(|b| f64::from_ne_bytes(b.try_into().unwrap())).collect()
    };
    assert_eq!(f64s("XDim"), [-150.0, -90.0, -30.0, 30.0, 90.0, 150.0]);
    assert_eq!(f64s("YDim"), [67.5, 22.5, -22.5, -67.5]);
}

/// A Python with pyhdf, xarray and zarr: `VZARR_PYTHON`, else `target/pyenv` (tests/python/setup.sh).
fn python_with_pyhdf() -> Option<PathBuf> {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let candidates =
        [std::env::var_os("VZARR_PYTHON").map(PathBuf::from), Some(manifest.join("target/pyenv/bin/python"))];
    candidates.into_iter().flatten().find(|python| {
        std::process::Command::new(python)
            .args(["-c", "import pyhdf.SD, xarray, zarr, fsspec"])
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

/// xarray opens the combined MODIS-like granules through vzarr's kerchunk export, with named
/// dimensions, and reads pyhdf's values (`tests/python/check_hdf4.py`).
#[test]
fn xarray_opens_combined_granules_with_named_dimensions() {
    let Some(python) = python_with_pyhdf() else {
        eprintln!("notice: no Python with pyhdf and xarray (run tests/python/setup.sh); the xarray check not run");
        return;
    };
    let pattern = format!("{}/fixtures/hdf4/granules/MODLIKE.A*.hdf", env!("CARGO_MANIFEST_DIR"));
    let scanned = Archive::new([pattern]).concat(r"day=path:A(\d{7})").unwrap().history(false).scan().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let refs = dir.path().join("granules.json");
    let format =
        Format::KerchunkJson { url_prefixes: Vec::new(), inline_threshold: vzarr::formats::DEFAULT_INLINE_THRESHOLD };
    write_dataset(&scanned.dataset, &Output::new(&refs, format)).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/check_hdf4.py");
    let output = std::process::Command::new(python)
        .arg(&script)
        .args(["--refs".as_ref(), refs.as_os_str(), "--concat".as_ref(), "day".as_ref()])
        .args(&scanned.files)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    assert!(stdout.contains(" passed, 0 failed"), "{stdout}");
    eprintln!("{stdout}");
}

#[test]
fn vdata_tables_are_left_out_with_a_warning() {
    let dataset = scan_file(&fixture("tables.hdf"), &ScanOptions::default()).unwrap();
    assert_eq!(dataset.arrays.iter().map(|a| a.path.as_str()).collect::<Vec<_>>(), ["temperature"]);
    let warnings: Vec<String> = dataset.warnings.iter().map(ToString::to_string).collect();
    assert!(warnings.iter().any(|w| w.contains("1 vdata table(s)")), "{warnings:?}");
    let quiet = scan_file(&fixture("types.hdf"), &ScanOptions::default()).unwrap();
    assert!(quiet.warnings.is_empty(), "{:?}", quiet.warnings);
}

/// Data in an external file (`SDsetexternalfile`) is referenced in that file, found next to the HDF4
/// file whatever the working directory (the values equal libhdf4's: `oracle`).
#[test]
fn data_in_an_external_file_is_referenced_in_it() {
    assert_eq!(storage_of("chunked_partial.hdf", "external"), (1, 0, 0, vec!["bytes"]));
    let dir = tempfile::tempdir().unwrap();
    for name in ["chunked_partial.hdf", "external_data.bin"] {
        std::fs::copy(fixture(name), dir.path().join(name)).unwrap();
    }
    let copy = dir.path().join("chunked_partial.hdf");
    let (dataset, arrays) = read_back(&copy, &ScanOptions::default());
    assert_eq!(dataset.sources.len(), 2);
    let external = dataset.sources.get(1).unwrap();
    assert!(external.location.ends_with("/external_data.bin"), "{external:?}");
    assert!(external.location.contains(&dir.path().to_string_lossy().into_owned()), "{external:?}");
    let (_, original) = read_back(&fixture("chunked_partial.hdf"), &ScanOptions::default());
    assert_eq!(arrays, original, "the copy reads as the original");
}

#[test]
fn a_missing_external_file_is_a_one_line_error_naming_file_and_variable() {
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("chunked_partial.hdf");
    std::fs::copy(fixture("chunked_partial.hdf"), &copy).unwrap();
    for skip_unsupported in [false, true] {
        let options = ScanOptions { skip_unsupported, ..Default::default() };
        let err = scan_file(&copy, &options).unwrap_err().to_string();
        assert!(!err.contains('\n'), "{err}");
        assert!(err.starts_with(&format!("{}: external: ", copy.display())), "{err}");
        assert!(err.contains("\"external_data.bin\": not found"), "{err}");
        assert!(err.contains(&dir.path().join("external_data.bin").display().to_string()), "{err}");
    }
}

/// Files whose external files have the same name in different directories combine, each file's
/// references pointing into its own external file.
#[test]
fn files_with_external_data_of_the_same_name_combine() {
    let dir = tempfile::tempdir().unwrap();
    let mut expected = Vec::new();
    for (k, day) in ["A2024001", "A2024002"].iter().enumerate() {
        let sub = dir.path().join(format!("d{k}"));
        std::fs::create_dir(&sub).unwrap();
        let file = sub.join(format!("partial.{day}.hdf"));
        std::fs::copy(fixture("chunked_partial.hdf"), &file).unwrap();
        // The second day's external values differ from the first's.
        let mut bytes = std::fs::read(fixture("external_data.bin")).unwrap();
        bytes.iter_mut().for_each(|b| *b = b.wrapping_add(k as u8));
        std::fs::write(sub.join("external_data.bin"), bytes).unwrap();
        expected.extend(oracle::libhdf4_values(&file, "external"));
    }
    let pattern = format!("{}/d*/partial.A*.hdf", dir.path().display());
    let scanned = Archive::new([pattern]).concat(r"day=path:A(\d{7})").unwrap().history(false).scan().unwrap();
    let store_path = dir.path().join("combined.vzarr");
    let written = write_dataset(&scanned.dataset, &Output::new(&store_path, Format::Native)).unwrap();
    let store =
        BlockingStore::open(store_path.to_str().unwrap(), &Authorization::new(written.source_containers())).unwrap();
    let reader = store.array("external").unwrap();
    let shape = reader.reader().shape();
    assert_eq!(shape, [2, 4]);
    let data = reader.read(&Selection::all(&shape), &Default::default()).unwrap();
    assert!(data.bytes == expected, "values differ from libhdf4's");
}

/// Decoded values are stored in slabs along the first dimension, as contiguous data is referenced.
#[test]
fn decoded_values_are_stored_in_slabs() {
    let small = ScanOptions { max_slab_bytes: 50, skip_unsupported: true, ..Default::default() };
    let (dataset, slabbed) = read_back(&fixture("compressed.hdf"), &small);
    let rle = dataset.arrays.iter().find(|a| a.path == "rle").unwrap();
    assert_eq!(rle.chunks.stats().owned, 5, "10 rows of 12 bytes in slabs of 2 rows");
    let (_, whole) =
        read_back(&fixture("compressed.hdf"), &ScanOptions { skip_unsupported: true, ..Default::default() });
    assert_eq!(slabbed, whole);
}

/// Linked blocks of whole rows (what the SD interface writes for unlimited dimensions: blocks of 64
/// records) are referenced, one chunk per block.
#[test]
fn linked_blocks_of_whole_rows_are_referenced() {
    let dataset = scan_file(&fixture("unlimited.hdf"), &ScanOptions::default()).unwrap();
    let uneven = dataset.arrays.iter().find(|a| a.path == "uneven").unwrap();
    let stats = uneven.chunks.stats();
    assert!(stats.referenced >= 2 && stats.owned == 0, "{stats:?}");
    let edges: Vec<u64> = uneven.metadata.chunk_grid.dims()[0].edges().collect();
    assert_eq!(edges.iter().sum::<u64>(), 150, "{edges:?}");
}

/// zarr-python reads every array of every fixture's kerchunk export (big-endian `bytes`, zlib,
/// rectilinear grids of linked blocks, store-owned chunks) as pyhdf reads the file.
#[test]
fn zarr_python_reads_every_fixture_as_pyhdf_does() {
    let Some(python) = python_with_pyhdf() else {
        eprintln!("notice: no Python with pyhdf and zarr (run tests/python/setup.sh); the zarr-python check not run");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/check_hdf4.py");
    let options = ScanOptions { skip_unsupported: true, ..Default::default() };
    for (i, path) in fixtures().into_iter().enumerate() {
        let dataset = scan_file(&path, &options).unwrap();
        let refs = dir.path().join(format!("refs{i}.json"));
        let format = Format::KerchunkJson {
            url_prefixes: Vec::new(),
            inline_threshold: vzarr::formats::DEFAULT_INLINE_THRESHOLD,
        };
        write_dataset(&dataset, &Output::new(&refs, format)).unwrap();
        let output =
            std::process::Command::new(&python).arg(&script).arg("--refs").arg(&refs).arg(&path).output().unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(output.status.success(), "{}: {stdout}\n{}", path.display(), String::from_utf8_lossy(&output.stderr));
        assert!(stdout.contains(" passed, 0 failed"), "{stdout}");
    }
}
