//! kerchunk Parquet reference sets (issue 39): `vzarr scan --format kerchunk-parquet` writes them, and
//! fsspec + zarr-python and VirtualiZarr's `KerchunkParquetParser` read them with values equal to
//! netCDF4's; arrays Zarr v2 cannot express (a rectilinear grid) are refused by name; the output is
//! atomic and replaces only a Parquet reference set. `export` checks `vzarr export --kerchunk-parquet`.

mod export;

use std::path::{Path, PathBuf};

use crate::common::archives::{daily, monthly, write_series_file, SeriesFile};
use crate::common::{cli_expect, dir_entries, with_hdf5_files};
use crate::interop::{python, s};

/// Source files written into a temporary directory.
pub(crate) struct Files {
    pub(crate) dir: tempfile::TempDir,
    pub(crate) sources: Vec<PathBuf>,
}

impl Files {
    pub(crate) fn new(files: &[SeriesFile]) -> Self {
        let dir = tempfile::tempdir().expect("temporary directory");
        let sources = with_hdf5_files(|| files.iter().map(|f| write_series_file(dir.path(), f)).collect());
        Files { dir, sources }
    }

    pub(crate) fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// `vzarr scan SOURCES --concat time -o OUT --format FORMAT EXTRA...`, expecting exit `code`.
    pub(crate) fn scan(&self, out: &Path, format: &str, extra: &[&str], code: i32) -> crate::common::Run {
        let mut args = vec!["scan".to_string()];
        args.extend(self.sources.iter().map(s));
        if self.sources.len() > 1 {
            args.extend(["--concat", "time"].map(String::from));
        }
        args.extend(["--format", format, "-o"].map(String::from));
        args.push(s(out));
        args.extend(extra.iter().map(|a| a.to_string()));
        cli_expect(&args, code)
    }
}

/// The committed kitchen-sink file: every numeric type, big-endian data, missing chunks, a 0-d
/// variable, nested groups.
pub(crate) fn kitchen_sink() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/single/kitchen_sink.nc")
}

/// Runs `tests/python/check_parquet.py ARGS...`, asserting it succeeds.
pub(crate) fn check_parquet(python: &Path, args: &[String]) -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/check_parquet.py");
    let mut command = std::process::Command::new(python);
    command.arg(script).args(args).stdout(std::process::Stdio::piped());
    let run = crate::common::run(command);
    assert_eq!(run.code, 0, "check_parquet.py {args:?} failed:\n{}\n{}", run.stdout, run.stderr);
    run.stdout
}

/// Daily files concatenate on a regular time grid (one day per chunk): every array has a Parquet
/// form, written as kerchunk lays it out; small records make each array span several files.
#[test]
fn scan_writes_the_layout_lazy_reference_mapper_reads() {
    let files = Files::new(&daily(2001, 5));
    let out = files.path("daily.parq");
    files.scan(&out, "kerchunk-parquet", &["--record-size", "2"], 0);
    let zmetadata: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join(".zmetadata")).unwrap()).unwrap();
    assert_eq!(zmetadata["record_size"], 2);
    let tas = &zmetadata["metadata"]["tas/.zarray"];
    assert_eq!(tas["zarr_format"], 2);
    assert_eq!(zmetadata["metadata"]["tas/.zattrs"]["_ARRAY_DIMENSIONS"], serde_json::json!(["time", "lat", "lon"]));
    let chunks: u64 = tas["shape"]
        .as_array()
        .unwrap()
        .iter()
        .zip(tas["chunks"].as_array().unwrap())
        .map(|(n, c)| n.as_u64().unwrap().div_ceil(c.as_u64().unwrap()))
        .product();
    let record_files = dir_entries(&out.join("tas"));
    assert_eq!(record_files.len() as u64, chunks.div_ceil(2), "{record_files:?}");
    assert!(record_files.iter().all(|f| f.starts_with("refs.") && f.ends_with(".parq")), "{record_files:?}");
    let hidden: Vec<String> = dir_entries(files.dir.path()).into_iter().filter(|n| n.starts_with('.')).collect();
    assert!(hidden.is_empty(), "no staging leftovers: {hidden:?}");
}

/// Monthly files concatenate on a rectilinear time grid: those arrays are refused by name, nothing is
/// written; with --skip-unsupported the others are written and the exit code says some were left out.
#[test]
fn rectilinear_arrays_are_refused_by_name() {
    let files = Files::new(&monthly(2001..=2001, None, false)[..3]);
    let out = files.path("monthly.parq");
    // Small enough to inline by default (`tests/everyday`): nothing inlined here.
    let run = files.scan(&out, "kerchunk-parquet", &["--inline-threshold", "0"], 1);
    let line = run.stderr_lines().into_iter().find(|l| l.contains("rectilinear")).unwrap_or_default().to_string();
    assert!(line.contains("monthly.parq") && line.contains("Zarr v2"), "{}", run.stderr);
    assert!(line.contains("exceed the inline threshold of 0 bytes"), "{}", run.stderr);
    assert!(!out.exists(), "nothing written");
    let run = files.scan(&out, "kerchunk-parquet", &["--skip-unsupported", "--inline-threshold", "0"], 3);
    assert!(run.stderr.contains("tas: left out of the kerchunk Parquet output"), "{}", run.stderr);
    let zmetadata: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join(".zmetadata")).unwrap()).unwrap();
    let metadata = zmetadata["metadata"].as_object().unwrap();
    assert!(metadata.contains_key("lat/.zarray") && !metadata.contains_key("tas/.zarray"), "{metadata:?}");
    // --overwrite replaces a reference set, never an ordinary directory.
    files.scan(&out, "kerchunk-parquet", &["--skip-unsupported", "--overwrite", "--inline-threshold", "0"], 3);
    let plain = files.path("plain");
    std::fs::create_dir(&plain).unwrap();
    std::fs::write(plain.join("keep"), b"mine").unwrap();
    let run =
        files.scan(&plain, "kerchunk-parquet", &["--skip-unsupported", "--overwrite", "--inline-threshold", "0"], 1);
    assert!(run.stderr.contains("is not a kerchunk Parquet reference set"), "{}", run.stderr);
    assert_eq!(dir_entries(&plain), ["keep"]);
}

/// fsspec's `ReferenceFileSystem` + zarr-python, and VirtualiZarr's `KerchunkParquetParser`, read
/// vzarr's Parquet with every value equal to netCDF4's: a concatenated archive and the kitchen sink
/// (groups, big-endian data, missing chunks, a 0-d variable).
#[test]
fn python_reads_vzarr_parquet_equal_to_netcdf4() {
    let Some(python) = python() else {
        eprintln!("notice: no Python >= 3.12 with zarr, fsspec and xarray (run tests/python/setup.sh); skipping");
        return;
    };
    let files = Files::new(&daily(2001, 4));
    let out = files.path("daily.parq");
    files.scan(&out, "kerchunk-parquet", &["--record-size", "3"], 0);
    let mut args = vec!["read".to_string(), s(&out)];
    args.extend(files.sources.iter().map(s));
    let stdout = check_parquet(&python, &args);
    assert!(stdout.contains("ok   fsspec+zarr tas"), "{stdout}");
    assert!(stdout.contains("ok   virtualizarr KerchunkParquetParser tas"), "{stdout}");

    let sink = Files { dir: tempfile::tempdir().unwrap(), sources: vec![kitchen_sink()] };
    let out = sink.path("sink.parq");
    sink.scan(&out, "kerchunk-parquet", &[], 0);
    // fsspec's LazyReferenceMapper cannot list the keys of a set with subgroups (it takes every node
    // for an array), which VirtualiZarr's parser does: fsspec + zarr-python only.
    check_parquet(&python, &["read".to_string(), s(&out), "--no-virtualizarr".into(), s(kitchen_sink())]);
}

// ---------------------------------------------------------------------------------------------------
// Parquet in: Store::open reads reference sets vzarr, kerchunk and VirtualiZarr wrote.

/// The source containers vzarr recorded in a set's `.zmetadata`.
fn recorded_containers(set: &Path) -> Vec<String> {
    let zmetadata: serde_json::Value = serde_json::from_slice(&std::fs::read(set.join(".zmetadata")).unwrap()).unwrap();
    let list = zmetadata["vzarr"]["source_containers"].as_array().cloned().unwrap_or_default();
    list.iter().filter_map(|c| c.as_str().map(str::to_string)).collect()
}

/// Opens the reference set `set` trusting `containers` (also for the `vzarr` runs of this process).
fn open_set(set: &Path, containers: &[String]) -> vzarr::read::blocking::BlockingStore {
    let list = crate::common::test_config_home().join("vzarr").join(vzarr::read::TRUST_FILE);
    vzarr::read::TrustList::add(&list, containers).expect("updating the test trust list");
    let authorization = vzarr::read::Authorization::new(containers);
    vzarr::read::blocking::BlockingStore::open(s(set), &authorization)
        .unwrap_or_else(|e| panic!("{}: {e}", set.display()))
}

/// Every variable of the single file `source`, read through the reference set `set`, equal to
/// libnetcdf's read of the file; returns how many were compared.
/// Variables the set does not hold are skipped only when `all` is false.
fn assert_set_matches_file(set: &Path, source: &Path, containers: &[String], all: bool) -> usize {
    let store = open_set(set, containers);
    let arrays: Vec<String> = store.info().arrays.iter().map(|a| a.path.clone()).collect();
    let mut compared = 0;
    for var in crate::common::oracle_variables(source) {
        if var.data_type.is_none() || (!all && !arrays.contains(&var.path)) {
            continue;
        }
        let ours = crate::common::read(&store, &var.path, "");
        let theirs = crate::common::oracle_read(source, &var.path, None);
        crate::common::assert_same_elements(
            &format!("{}: {}", set.display(), var.path),
            &ours.bytes,
            &theirs,
            ours.data_type.size(),
        );
        compared += 1;
    }
    compared
}

/// vzarr reads back its own Parquet, through the library's Store (what `read`, `info`, `verify`,
/// `append`, Python and the xarray engine open): a concatenated archive, each day's slice equal to
/// that file's values, and the kitchen sink (groups, big-endian data, missing chunks, a 0-d
/// variable), every variable equal to libnetcdf's; `vzarr verify` passes on the archive.
#[test]
fn vzarr_reads_its_parquet_back_equal_to_libnetcdf() {
    let files = Files::new(&daily(2001, 5));
    let out = files.path("daily.parq");
    files.scan(&out, "kerchunk-parquet", &["--record-size", "2"], 0);
    let store = open_set(&out, &recorded_containers(&out));
    for (day, source) in files.sources.iter().enumerate() {
        for var in ["tas", "time"] {
            let ours = crate::common::read(&store, var, &format!("{day}:{}", day + 1));
            let theirs = crate::common::oracle_read(source, var, None);
            crate::common::assert_same_elements(&format!("{var}[{day}]"), &ours.bytes, &theirs, ours.data_type.size());
        }
    }
    for var in ["lat", "lon"] {
        let ours = crate::common::read(&store, var, "");
        crate::common::assert_same_elements(
            var,
            &ours.bytes,
            &crate::common::oracle_read(&files.sources[0], var, None),
            ours.data_type.size(),
        );
    }
    cli_expect(&["verify".to_string(), s(&out)], 0);

    let sink = Files { dir: tempfile::tempdir().unwrap(), sources: vec![kitchen_sink()] };
    let out = sink.path("sink.parq");
    sink.scan(&out, "kerchunk-parquet", &["--record-size", "3"], 0);
    assert!(assert_set_matches_file(&out, &kitchen_sink(), &recorded_containers(&out), true) >= 5);
}

/// vzarr reads Parquet that kerchunk (`SingleHdf5ToZarr` + `refs_to_dataframe`) and VirtualiZarr
/// (`HDFParser` + `.vz.to_kerchunk(format="parquet")`) wrote, every value equal to libnetcdf's.
#[test]
fn vzarr_reads_kerchunk_and_virtualizarr_parquet() {
    let Some(python) = python() else {
        eprintln!("notice: no Python >= 3.12 with kerchunk and VirtualiZarr (run tests/python/setup.sh); skipping");
        return;
    };
    let mut file = SeriesFile::new("tas_2001.nc", 11_000, 12, 5);
    file.chunk_yx = (3, 4);
    let files = Files::new(&[file]);
    let source = &files.sources[0];
    for tool in ["kerchunk", "virtualizarr"] {
        let set = files.path(&format!("{tool}.parq"));
        check_parquet(&python, &[tool.to_string(), s(source), s(&set)]);
        let containers = [format!("{}/", files.dir.path().display())];
        assert!(assert_set_matches_file(&set, source, &containers, tool == "kerchunk") >= 3, "{tool}");
        let info = cli_expect(&["info".to_string(), s(&set)], 0);
        assert!(info.stdout.contains("tas"), "{tool}: {}", info.stdout);
    }
}

/// A change made to a copy of a good set.
type Damage<'a> = Box<dyn Fn(&Path) + 'a>;

/// A Parquet reference set is untrusted input: each damage gives one line naming the file (and the
/// array) and a non-zero exit, never a panic or an allocation sized by the damaged count.
#[test]
fn damaged_parquet_sets_are_refused_in_one_line() {
    let files = Files::new(&daily(2001, 3));
    let good = files.path("good.parq");
    files.scan(&good, "kerchunk-parquet", &["--record-size", "2"], 0);
    let zmetadata: serde_json::Value =
        serde_json::from_slice(&std::fs::read(good.join(".zmetadata")).unwrap()).unwrap();
    let cases: Vec<(&str, Damage, &str)> = vec![
        (
            "not JSON",
            Box::new(|d: &Path| std::fs::write(d.join(".zmetadata"), b"{\"metadata\": ").unwrap()),
            ".zmetadata",
        ),
        (
            "record size 0",
            Box::new(|d: &Path| {
                let mut z = zmetadata.clone();
                z["record_size"] = 0.into();
                std::fs::write(d.join(".zmetadata"), z.to_string()).unwrap();
            }),
            "record_size",
        ),
        (
            "rows beyond the record size",
            Box::new(|d: &Path| {
                let mut z = zmetadata.clone();
                z["record_size"] = 1.into();
                std::fs::write(d.join(".zmetadata"), z.to_string()).unwrap();
            }),
            "more than the record size",
        ),
        (
            "a grid of 10^15 chunks",
            Box::new(|d: &Path| {
                let mut z = zmetadata.clone();
                z["metadata"]["tas/.zarray"]["shape"][0] = 1_000_000_000_000_000u64.into();
                std::fs::write(d.join(".zmetadata"), z.to_string()).unwrap();
            }),
            "too sparse",
        ),
        (
            "a record size of 10^15",
            Box::new(|d: &Path| {
                let mut z = zmetadata.clone();
                z["record_size"] = 1_000_000_000_000_000u64.into();
                std::fs::write(d.join(".zmetadata"), z.to_string()).unwrap();
            }),
            "rows per file vzarr reads",
        ),
        (
            "fewer rows than the record needs",
            Box::new(|d: &Path| {
                let mut z = zmetadata.clone();
                z["record_size"] = 3.into();
                std::fs::write(d.join(".zmetadata"), z.to_string()).unwrap();
            }),
            "rows, but .zmetadata gives the array",
        ),
        ("a truncated record file", Box::new(|d: &Path| truncate(&d.join("tas/refs.0.parq"))), "not a Parquet file"),
        (
            "a record file of another schema",
            Box::new(|d: &Path| write_wrong_schema(&d.join("tas/refs.0.parq"))),
            "column \"path\" is INT64",
        ),
    ];
    for (what, damage, expected) in cases {
        let set = files.path(&format!("{}.parq", what.replace(' ', "_")));
        crate::common::copy_dir(&good, &set);
        damage(&set);
        let run = crate::common::cli(&["info".to_string(), s(&set)]);
        let lines = run.stderr_lines();
        assert!(run.code != 0 && run.code != 101, "{what}: exit {}\n{}", run.code, run.stderr);
        assert!(lines.iter().any(|l| l.contains(expected) && l.contains(&s(&set))), "{what}: {}", run.stderr);
        assert!(!run.stderr.contains("panicked"), "{what}: {}", run.stderr);
    }
}

/// A Parquet file whose `path` column holds integers.
fn write_wrong_schema(file: &Path) {
    use parquet::data_type::Int64Type;
    let schema = parquet::schema::parser::parse_message_type("message m { required int64 path; }").unwrap();
    let properties = std::sync::Arc::new(parquet::file::properties::WriterProperties::builder().build());
    let out = std::fs::File::create(file).unwrap();
    let mut writer = parquet::file::writer::SerializedFileWriter::new(out, schema.into(), properties).unwrap();
    let mut group = writer.next_row_group().unwrap();
    let mut column = group.next_column().unwrap().unwrap();
    column.typed::<Int64Type>().write_batch(&[1, 2], None, None).unwrap();
    column.close().unwrap();
    group.close().unwrap();
    writer.close().unwrap();
}

fn truncate(file: &Path) {
    let bytes = std::fs::read(file).unwrap();
    std::fs::write(file, &bytes[..bytes.len() / 2]).unwrap();
}

/// An array whose chunks carry HDF5's fletcher32 checksum (numcodecs' `fletcher32` filter in Zarr
/// v2) is written to Parquet and read back by vzarr as libnetcdf reads the file.
#[test]
fn a_fletcher32_array_round_trips_through_parquet() {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/dmrpp/dmrpp/FletcherShuffle.nc4");
    let files = Files { dir: tempfile::tempdir().unwrap(), sources: vec![source.clone()] };
    let out = files.path("fletcher.parq");
    files.scan(&out, "kerchunk-parquet", &[], 0);
    let zmetadata = std::fs::read_to_string(out.join(".zmetadata")).unwrap();
    assert!(zmetadata.contains("fletcher32"), "the fixture's checksum is kept: {zmetadata}");
    assert!(assert_set_matches_file(&out, &source, &recorded_containers(&out), true) >= 1);
}

/// A record file of two inline rows: the first `raw` cell `first` (zstd-compressed, as kerchunk
/// writes `raw`), the second 4 bytes.
fn write_inline_rows(file: &Path, first: &[u8]) {
    use parquet::basic::{Compression, ZstdLevel};
    use parquet::data_type::{ByteArray, ByteArrayType, Int64Type};
    let schema =
        "message m { optional binary path (UTF8); required int64 offset; required int64 size; optional binary raw; }";
    let schema = parquet::schema::parser::parse_message_type(schema).unwrap();
    let properties = parquet::file::properties::WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::try_new(3).unwrap()))
        .build();
    let out = std::fs::File::create(file).unwrap();
    let mut writer = parquet::file::writer::SerializedFileWriter::new(out, schema.into(), properties.into()).unwrap();
    let mut group = writer.next_row_group().unwrap();
    let mut column = group.next_column().unwrap().unwrap();
    column.typed::<ByteArrayType>().write_batch(&[], Some(&[0, 0]), None).unwrap();
    column.close().unwrap();
    for _ in 0..2 {
        let mut column = group.next_column().unwrap().unwrap();
        column.typed::<Int64Type>().write_batch(&[0, 0], None, None).unwrap();
        column.close().unwrap();
    }
    let mut column = group.next_column().unwrap().unwrap();
    let cells = [ByteArray::from(first.to_vec()), ByteArray::from(vec![0u8; 4])];
    column.typed::<ByteArrayType>().write_batch(&cells, Some(&[1, 1]), None).unwrap();
    column.close().unwrap();
    group.close().unwrap();
    writer.close().unwrap();
}

#[test]
fn a_raw_cell_that_decompresses_past_its_chunk_is_refused_before_decompression() {
    // Issue 52 item 2: a small record file whose `raw` page decompresses to far more than the chunk
    // (`tas` chunks are a few KiB) aborted info, read and verify on allocation. 64 MiB of zeros
    // compress to a few KiB: refused by its page header, naming the file, never decompressed.
    let files = Files::new(&daily(2001, 3));
    let good = files.path("good.parq");
    files.scan(&good, "kerchunk-parquet", &["--record-size", "2"], 0);
    let set = files.path("bomb.parq");
    crate::common::copy_dir(&good, &set);
    let record = set.join("tas/refs.0.parq");
    write_inline_rows(&record, &vec![0u8; 64 << 20]);
    assert!(std::fs::metadata(&record).unwrap().len() < 64 << 10, "the bomb is small");
    for command in ["info", "verify"] {
        let run = crate::common::cli(&[command.to_string(), s(&set)]);
        assert_eq!(run.code, 1, "{command}: {}", run.stderr);
        let lines = run.stderr_lines();
        let line = lines.iter().find(|l| l.contains("refs.0.parq")).unwrap_or_else(|| panic!("{}", run.stderr));
        assert!(line.contains("decompress to 67108") && line.contains(&s(&set)), "{command}: {line}");
    }
    // A cell that fits the page allowance but not the chunk: refused by its length.
    write_inline_rows(&record, &vec![7u8; 20 << 10]);
    let run = crate::common::cli(&["info".to_string(), s(&set)]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.contains("raw cell of 20480 bytes"), "{}", run.stderr);
}

#[test]
fn a_record_file_that_is_a_fifo_or_a_directory_is_an_error_naming_it() {
    // Issue 52 item 6: the listing skipped them, and their chunks read as fill values, exit 0.
    let files = Files::new(&daily(2001, 3));
    let good = files.path("good.parq");
    files.scan(&good, "kerchunk-parquet", &["--record-size", "2"], 0);
    for kind in ["FIFO", "directory"] {
        let set = files.path(&format!("{kind}.parq"));
        crate::common::copy_dir(&good, &set);
        let record = set.join("tas/refs.0.parq");
        std::fs::remove_file(&record).unwrap();
        if kind == "FIFO" {
            let c = std::ffi::CString::new(record.to_str().unwrap()).unwrap();
            // SAFETY: a valid NUL-terminated path.
            assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        } else {
            std::fs::create_dir(&record).unwrap();
        }
        for command in ["info", "verify"] {
            let run = crate::common::cli(&[command.to_string(), s(&set)]);
            assert_eq!(run.code, 1, "{kind}, {command}: {}", run.stderr);
            let expected = format!("refs.0.parq: array tas: not a regular file ({kind})");
            assert!(run.stderr.contains(&expected), "{kind}, {command}: {}", run.stderr);
        }
    }
}
