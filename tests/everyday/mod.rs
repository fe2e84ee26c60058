//! The everyday archive (issue 51, items 1 and 2): monthly (or daily) files of `tas(time, lat, lon)`
//! and `time_bnds` with an UNLIMITED `time`, written with libnetcdf's default chunking as
//! netCDF4-python leaves it: the 1-D `time` in one chunk of 512 holding the month's 28-31 values,
//! `tas` and `time_bnds` one day a chunk. Every output is judged by the elements its chunks hold, and
//! every value read back equals libnetcdf's reads of the files:
//! - compaction gives `[30 x 24, 11]` on 24 monthly files and `[30, 30]` on 60 daily ones, and an
//!   append continues the compacted store;
//! - `info` prints held edges (`28..31`, not `28..512`); regular and sharded copies read as the files
//!   (zarrs, and zarr-python + xarray when Python is set up);
//! - a partial chunk inside the concatenated axis (files chunked by 8 days, as `nccopy -c time/8`
//!   writes them) is compacted and copied by what it holds;
//! - kerchunk Parquet and JSON inline the rectilinear `time` (read back through vzarr, and through
//!   fsspec + zarr-python + xarray and VirtualiZarr when Python is set up), from a scan and from
//!   `vzarr export`; a rectilinear array over `--inline-threshold` is refused by name.

use std::path::{Path, PathBuf};

use crate::common::fixtures::days_since_epoch;
use crate::common::{cli, cli_expect, read, with_hdf5_files};
use crate::interop::{assert_same, oracle, s};
use vzarr::read::blocking::BlockingStore;

const VARS: [&str; 5] = ["tas", "time", "time_bnds", "lat", "lon"];

/// One file of the everyday archive: `days` days from day `first` (days since 2000-01-01), `tas`
/// deflated with a `_FillValue` as netCDF4-python writes it (`zlib=True, fill_value=1e20`), every
/// chunking libnetcdf's default unless `time_chunk` sets `time`, `time_bnds` and `tas` along time
/// (what `nccopy -c time/N` leaves).
fn write_file(dir: &Path, name: &str, first: usize, days: usize, time_chunk: Option<usize>) -> PathBuf {
    let path = dir.join(name);
    let mut nc = netcdf::create(&path).expect("create");
    nc.add_unlimited_dimension("time").unwrap();
    nc.add_dimension("lat", 18).unwrap();
    nc.add_dimension("lon", 36).unwrap();
    nc.add_dimension("bnds", 2).unwrap();
    {
        let mut time = nc.add_variable::<f64>("time", &["time"]).unwrap();
        if let Some(c) = time_chunk {
            time.set_chunking(&[c]).unwrap();
        }
        time.put_attribute("units", "days since 2000-01-01").unwrap();
        time.put_attribute("calendar", "standard").unwrap();
        time.put_attribute("bounds", "time_bnds").unwrap();
        let v: Vec<f64> = (first..first + days).map(|d| d as f64 + 0.5).collect();
        time.put_values(&v, (0..days,)).unwrap();
    }
    {
        let mut bnds = nc.add_variable::<f64>("time_bnds", &["time", "bnds"]).unwrap();
        if let Some(c) = time_chunk {
            bnds.set_chunking(&[c, 2]).unwrap();
        }
        let v: Vec<f64> = (first..first + days).flat_map(|d| [d as f64, d as f64 + 1.0]).collect();
        bnds.put_values(&v, [0..days, 0..2]).unwrap();
    }
    let lat: Vec<f64> = (0..18).map(|i| -85.0 + 10.0 * i as f64).collect();
    nc.add_variable::<f64>("lat", &["lat"]).unwrap().put_values(&lat, ..).unwrap();
    let lon: Vec<f64> = (0..36).map(|i| 10.0 * i as f64).collect();
    nc.add_variable::<f64>("lon", &["lon"]).unwrap().put_values(&lon, ..).unwrap();
    {
        let mut tas = nc.add_variable::<f32>("tas", &["time", "lat", "lon"]).unwrap();
        if let Some(c) = time_chunk {
            tas.set_chunking(&[c, 18, 36]).unwrap();
        }
        tas.set_compression(4, false).unwrap();
        tas.set_fill_value(1e20f32).unwrap();
        tas.put_attribute("units", "K").unwrap();
        let v: Vec<f32> = (0..days * 18 * 36).map(|i| 250.0 + ((first * 648 + i) % 5003) as f32 / 100.0).collect();
        tas.put_values(&v, [0..days, 0..18, 0..36]).unwrap();
    }
    nc.close().unwrap();
    path
}

/// 24 monthly files, 2000-01 to 2001-12 (731 days).
fn monthly(dir: &Path, time_chunk: Option<usize>) -> Vec<PathBuf> {
    with_hdf5_files(|| {
        let mut files = Vec::new();
        for (year, month) in (2000..=2001).flat_map(|y| (1..=12).map(move |m| (y, m))) {
            let first = (days_since_epoch(year, month) - days_since_epoch(2000, 1)) as usize;
            let (ny, nm) = if month == 12 { (year + 1, 1) } else { (year, month + 1) };
            let days = (days_since_epoch(ny, nm) - days_since_epoch(year, month)) as usize;
            files.push(write_file(dir, &format!("tas_{year}{month:02}.nc"), first, days, time_chunk));
        }
        files
    })
}

/// `n` daily files from 2000-01-01, day `from` on.
fn daily(dir: &Path, from: usize, n: usize) -> Vec<PathBuf> {
    with_hdf5_files(|| (from..from + n).map(|d| write_file(dir, &format!("tas_d{d:04}.nc"), d, 1, None)).collect())
}

fn scan(files: &[PathBuf], out: &Path, extra: &[&str]) -> crate::common::Run {
    let mut args = vec!["scan".to_string()];
    args.extend(files.iter().map(s));
    args.extend(["--concat", "time", "-o"].map(String::from));
    args.push(s(out));
    args.extend(extra.iter().map(|a| a.to_string()));
    cli(&args)
}

/// The store, reference document or set at `store`, its sources trusted (they sit beside it).
fn open_store(store: &Path) -> BlockingStore {
    let dir = store.parent().expect("a parent directory");
    let authorization = vzarr::read::Authorization::new([format!("{}/", dir.display())]);
    BlockingStore::open_with(s(store), &vzarr::read::OpenOptions::new(authorization))
        .unwrap_or_else(|e| panic!("opening {}: {e}", store.display()))
}

fn time_edges(store: &Path, var: &str) -> Vec<u64> {
    let opened = open_store(store);
    let array = opened.array(var).unwrap();
    array.reader().metadata().chunk_grid.dim(0).edges().collect()
}

/// Every variable of `store` read whole through vzarr equals libnetcdf's reads of `files`.
fn assert_values(what: &str, store: &Path, files: &[PathBuf]) {
    let opened = open_store(store);
    for var in VARS {
        assert_same(&format!("{what}: {var}"), &read(&opened, var, "").bytes, &oracle(files, var));
    }
}

fn thirties(n: usize, rest: u64) -> Vec<u64> {
    let mut edges = vec![30; n];
    edges.push(rest);
    edges
}

#[test]
fn the_monthly_archive_compacts_by_the_days_its_chunks_hold() {
    let dir = tempfile::tempdir().unwrap();
    let files = monthly(dir.path(), None);
    let store = dir.path().join("n.vzarr");
    assert_eq!(scan(&files, &store, &[]).code, 0);
    // libnetcdf's default: the last file's time chunk is 512 long, holding 31.
    let time = time_edges(&store, "time");
    assert_eq!((time.len(), time.last(), time.first()), (24, Some(&512), Some(&31)));
    let info = cli_expect(&["info", &s(&store)], 0);
    // The chunks are the months (the last one by the 31 days it holds, not its 512).
    assert!(info.stdout.contains("time: 24 chunks, one a month: Jan 2000 31 ... Dec 2001 31"), "{}", info.stdout);
    // A regular copy and a sharded one, read by zarrs (and zarr-python + xarray when set up).
    let copy = dir.path().join("copy.zarr");
    cli_expect(&["materialize", &s(&store), &s(&copy), "--chunks", "time=30"], 0);
    crate::interop::assert_zarrs_reads_exactly(&copy, &files, &VARS);
    let sharded = dir.path().join("sharded.zarr");
    cli_expect(&["materialize", &s(&store), &s(&sharded), "--chunks", "time=30", "--shards", "time=90"], 0);
    crate::interop::assert_zarrs_reads_exactly(&sharded, &files, &VARS);
    if let Some(python) = crate::interop::python() {
        check_interop(&python, &["--zarr", &s(&sharded), "--expect-sharded", "tas,time_bnds"], &files);
    }
    let run = cli_expect(&["compact", &s(&store), "--dim", "time", "--target", "30"], 0);
    assert!(run.stdout.contains("tas: time: [1 x 731] -> [30 x 24, 11]"), "{}", run.stdout);
    for var in ["tas", "time_bnds"] {
        assert_eq!(time_edges(&store, var), thirties(24, 11), "{var}");
    }
    // time: no run of small chunks folds into fewer, so it stays (its 512 chunk really decodes so).
    assert_eq!(time_edges(&store, "time"), time);
    assert_values("compacted", &store, &files);
    let verified = cli_expect(&["verify", &s(&store)], 0);
    assert!(verified.stdout.contains(": 0 failed"), "{}", verified.stdout);
}

#[test]
fn sixty_daily_files_compact_into_two_chunks_of_thirty_and_append_after() {
    let dir = tempfile::tempdir().unwrap();
    let files = daily(dir.path(), 0, 61);
    let store = dir.path().join("d.vzarr");
    assert_eq!(scan(&files[..60], &store, &[]).code, 0);
    cli_expect(&["compact", &s(&store), "--chunks", "time=30"], 0);
    // Every array, time too (60 chunks of 512 holding one day each): [30, 30].
    for var in ["tas", "time", "time_bnds"] {
        assert_eq!(time_edges(&store, var), vec![30, 30], "{var}");
    }
    assert_values("compacted", &store, &files[..60]);
    // An append continues after the folded last chunk.
    cli_expect(&["append", &s(&store), &s(&files[60])], 0);
    assert_eq!(time_edges(&store, "tas"), vec![30, 30, 1]);
    assert_eq!(time_edges(&store, "time"), vec![30, 30, 512]);
    assert_values("appended", &store, &files);
    let info = cli_expect(&["info", &s(&store)], 0);
    assert!(info.stdout.contains("time: 3 chunks, edges 1..30"), "{}", info.stdout);
}

#[test]
fn partial_chunks_inside_the_concatenation_are_compacted_and_copied_by_what_they_hold() {
    // As `nccopy -c time/8` leaves the files: every month's last chunk of 8 is partly filled, in the
    // middle of the concatenated axis.
    let dir = tempfile::tempdir().unwrap();
    let files = monthly(dir.path(), Some(8));
    let store = dir.path().join("n8.vzarr");
    assert_eq!(scan(&files, &store, &[]).code, 0);
    assert_values("scanned", &store, &files);
    // A regular copy (read by zarrs, another Zarr implementation).
    let copy = dir.path().join("copy.zarr");
    cli_expect(&["materialize", &s(&store), &s(&copy), "--chunks", "time=30"], 0);
    crate::interop::assert_zarrs_reads_exactly(&copy, &files, &VARS);
    // Compaction: every chunk holds fewer than 30 (8, or a month's last 3 to 7), so all fold.
    cli_expect(&["compact", &s(&store), "--dim", "time", "--target", "30"], 0);
    for var in ["tas", "time", "time_bnds"] {
        assert_eq!(time_edges(&store, var), thirties(24, 11), "{var}");
    }
    assert_values("compacted", &store, &files);
}

/// Runs tests/python/check_interop.py (fsspec + zarr-python + xarray against netCDF4's reads of the
/// files) with `args`, asserting every check passed.
fn check_interop(python: &Path, args: &[&str], files: &[PathBuf]) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/check_interop.py");
    let mut command = std::process::Command::new(python);
    command.arg(script).args(args).args(["--concat", "time"]).args(files).stdout(std::process::Stdio::piped());
    let run = crate::common::run(command);
    assert_eq!(run.code, 0, "check_interop.py {args:?} failed:\n{}\n{}", run.stdout, run.stderr);
}

/// The `time` of the reference set at `out` holds one inline chunk.
fn assert_inline_time(opened: &BlockingStore) {
    let time = opened.array("time").unwrap();
    let grid = &time.reader().metadata().chunk_grid;
    assert!(grid.is_regular() && grid.num_chunks() == 1, "{grid:?}");
}

#[test]
fn kerchunk_parquet_inlines_time_and_reads_as_the_files() {
    let dir = tempfile::tempdir().unwrap();
    let files = monthly(dir.path(), None);
    let out = dir.path().join("p.parq");
    let run = scan(&files, &out, &["--format", "kerchunk-parquet"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let zmetadata: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join(".zmetadata")).unwrap()).unwrap();
    let zarray = &zmetadata["metadata"]["time/.zarray"];
    assert_eq!(zarray["chunks"], serde_json::json!([731]), "{zarray}");
    assert_eq!(zarray["filters"], serde_json::Value::Null, "{zarray}");
    assert_inline_time(&open_store(&out));
    assert_values("kerchunk Parquet", &out, &files);
    if let Some(python) = crate::interop::python() {
        let mut args = vec!["read".to_string(), s(&out)];
        args.extend(files.iter().map(s));
        let stdout = crate::parquet::check_parquet(&python, &args);
        assert!(stdout.contains("ok   fsspec+zarr time (731,)"), "{stdout}");
        assert!(stdout.contains("ok   virtualizarr KerchunkParquetParser time (731,)"), "{stdout}");
    }
}

#[test]
fn kerchunk_json_inlines_time_and_reads_as_the_files() {
    let dir = tempfile::tempdir().unwrap();
    let files = monthly(dir.path(), None);
    let out = dir.path().join("refs.json");
    // JSON inlines only when asked: its Zarr v3 keys say a rectilinear grid.
    assert_eq!(scan(&files, &out, &["--format", "kerchunk-json", "--inline-threshold", "1048576"]).code, 0);
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    let inline = doc["refs"]["time/c/0"].as_str().unwrap_or_default();
    assert!(inline.starts_with("base64:"), "{}", doc["refs"]["time/c/0"]);
    assert_inline_time(&open_store(&out));
    assert_values("kerchunk JSON", &out, &files);
    if let Some(python) = crate::interop::python() {
        check_interop(&python, &["--refs", &s(&out)], &files);
    }
    // By default (0) time keeps its rectilinear grid (Zarr v3 keys can say it).
    let kept = dir.path().join("kept.json");
    assert_eq!(scan(&files, &kept, &["--format", "kerchunk-json"]).code, 0);
    assert_eq!(time_edges(&kept, "time").len(), 24);
    assert_values("kerchunk JSON, nothing inlined", &kept, &files);
}

#[test]
fn a_rectilinear_array_over_the_inline_threshold_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let files = monthly(dir.path(), None);
    let out = dir.path().join("p.parq");
    let run = scan(&files, &out, &["--format", "kerchunk-parquet", "--inline-threshold", "1000"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.contains("time: its chunk grid is rectilinear"), "{}", run.stderr);
    assert!(run.stderr.contains("5848 decoded bytes exceed the inline threshold of 1000 bytes"), "{}", run.stderr);
    assert!(!out.exists(), "a refused scan wrote {}", out.display());
    // With --skip-unsupported the others are written, time left out with a warning.
    let run = scan(&files, &out, &["--format", "kerchunk-parquet", "--inline-threshold", "1000", "--skip-unsupported"]);
    assert!(run.stderr.contains("time"), "{}", run.stderr);
    let opened = open_store(&out);
    assert!(opened.array("time").is_err());
    assert_same("tas without time", &read(&opened, "tas", "").bytes, &oracle(&files, "tas"));
}

#[test]
fn exports_inline_time_as_the_scan_does() {
    let dir = tempfile::tempdir().unwrap();
    let files = monthly(dir.path(), None);
    let store = dir.path().join("n.vzarr");
    assert_eq!(scan(&files, &store, &[]).code, 0);
    let trust = format!("{}/", dir.path().display());
    let parq = dir.path().join("e.parq");
    cli_expect(&["export", &s(&store), "--kerchunk-parquet", &s(&parq), "--allow-source", &trust], 0);
    assert_inline_time(&open_store(&parq));
    assert_values("exported kerchunk Parquet", &parq, &files);
    let json = dir.path().join("e.json");
    let threshold = ["--inline-threshold", "1048576"];
    cli_expect(
        &["export", &s(&store), "--kerchunk", &s(&json), "--allow-source", &trust, threshold[0], threshold[1]],
        0,
    );
    assert_inline_time(&open_store(&json));
    assert_values("exported kerchunk JSON", &json, &files);
    // Over the threshold: the Parquet export refuses time by name.
    let refused = dir.path().join("r.parq");
    let run = cli(&["export", &s(&store), "--kerchunk-parquet", &s(&refused), "--inline-threshold", "64"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.contains("time: its chunk grid is rectilinear"), "{}", run.stderr);
    assert!(run.stderr.contains("inline threshold of 64 bytes"), "{}", run.stderr);
}

/// The monthly files rewritten by `tool` (`ncks` or `nccopy`) with `args` into `dir`, when installed.
fn rewritten(tool: &str, args: &[&str], files: &[PathBuf], dir: &Path) -> Option<Vec<PathBuf>> {
    let installed = std::process::Command::new(tool).arg("--version").output().is_ok();
    if !installed {
        eprintln!("notice: no {tool} (netcdf-bin / nco); skipping");
        return None;
    }
    std::fs::create_dir_all(dir).unwrap();
    let out: Vec<PathBuf> = files.iter().map(|f| dir.join(f.file_name().unwrap())).collect();
    for (from, to) in files.iter().zip(&out) {
        let status = std::process::Command::new(tool).args(args).arg(from).arg(to).output().unwrap();
        assert!(status.status.success(), "{tool} {args:?}: {}", String::from_utf8_lossy(&status.stderr));
    }
    Some(out)
}

#[test]
fn nco_and_nccopy_rewrites_compact_and_inline_by_what_they_hold() {
    let dir = tempfile::tempdir().unwrap();
    let lib = dir.path().join("lib");
    std::fs::create_dir(&lib).unwrap();
    let files = monthly(&lib, None);
    let producers: [(&str, &[&str], &str); 2] = [
        ("ncks", &["-O", "-4", "-L", "4", "--cnk_dmn", "time,10"], "nco"),
        ("nccopy", &["-k", "nc4", "-d", "4", "-s", "-c", "time/8,lat/18,lon/36"], "nccopy"),
    ];
    for (tool, args, name) in producers {
        let Some(files) = rewritten(tool, args, &files, &dir.path().join(name)) else { continue };
        let store = dir.path().join(format!("{name}.vzarr"));
        assert_eq!(scan(&files, &store, &[]).code, 0, "{name}");
        assert_values(name, &store, &files);
        // Every chunk holds fewer than 30 days (the last of each month fewer than 8 or 10).
        cli_expect(&["compact", &s(&store), "--dim", "time", "--target", "30"], 0);
        for var in ["tas", "time", "time_bnds"] {
            assert_eq!(time_edges(&store, var), thirties(24, 11), "{name}: {var}");
        }
        assert_values(&format!("{name} compacted"), &store, &files);
        // Parquet: time and time_bnds (rectilinear, small) inlined; tas (1.9 MB) refused by name,
        // or left out with --skip-unsupported.
        let parq = dir.path().join(format!("{name}.parq"));
        let run = scan(&files, &parq, &["--format", "kerchunk-parquet"]);
        assert_eq!(run.code, 1, "{name}: {}", run.stderr);
        assert!(run.stderr.contains("tas: its chunk grid is rectilinear"), "{name}: {}", run.stderr);
        scan(&files, &parq, &["--format", "kerchunk-parquet", "--skip-unsupported"]);
        let opened = open_store(&parq);
        for var in ["time", "time_bnds"] {
            assert_same(&format!("{name} Parquet: {var}"), &read(&opened, var, "").bytes, &oracle(&files, var));
        }
        assert!(opened.array("tas").is_err(), "{name}: tas left out");
    }
}
