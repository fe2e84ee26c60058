//! Whole archives in one scan (issue 9): variables kept in separate files merged, concatenation along
//! several dimensions (a new `member` dimension keyed by a global attribute or the file name, `time`,
//! spatial tiles along `y` and `x`), and the errors of an incomplete hypercube. Also the combine
//! checks of issue 14 (attributes that change the meaning of values; non-monotonic or NaN
//! coordinates). Every value is compared with libnetcdf's reads of the source files.

use std::path::{Path, PathBuf};

use crate::common::archives::{monthly, write_series_file, SeriesFile};
use crate::common::cmip::{cmip_archive, write_cmip_file, write_tile, CmipFile, Tile};
use crate::common::fixtures::days_since_epoch;
use crate::common::{array_json, cli, cli_expect, open_store, oracle_read, parse_npy, with_hdf5_files};
use vzarr::{ReadOptions, Selection};

const MEMBERS_IN_ORDER: [&str; 3] = ["r1i1p1f1", "r2i1p1f1", "r10i1p1f1"];

fn s(p: &Path) -> String {
    p.display().to_string()
}

/// libnetcdf's raw bytes of a whole variable.
fn oracle(path: &Path, var: &str) -> Vec<u8> {
    with_hdf5_files(|| oracle_read(path, var, None))
}

fn write_all(dir: &Path, files: &[CmipFile]) -> Vec<PathBuf> {
    files.iter().map(|f| write_cmip_file(dir, f)).collect()
}

fn scan_cmip(dir: &Path, member: &str, store: &Path) -> crate::common::Run {
    let glob = format!("{}/*.nc", dir.display());
    cli(&["scan", &glob, "--concat", member, "--concat", "time", "-o", &s(store)])
}

/// Reads a whole array through vzarr.
fn read_all(store: &Path, var: &str) -> vzarr::ArrayData {
    let store = open_store(store);
    let array = store.array(var).unwrap();
    array.read(&Selection::all(&array.reader().shape()), &ReadOptions::default()).unwrap()
}

/// NUL-padded fixed-width strings as Rust strings.
fn strings(data: &vzarr::ArrayData) -> Vec<String> {
    let width = data.data_type.size();
    data.bytes.chunks(width).map(|c| String::from_utf8_lossy(c).trim_end_matches('\0').to_string()).collect()
}

/// The time edges of a rectilinear `zarr.json` (run-length pairs expanded), dimension `d`.
fn edges(meta: &serde_json::Value, d: usize) -> Vec<u64> {
    let entry = &meta["chunk_grid"]["configuration"]["chunk_shapes"][d];
    let mut out = Vec::new();
    for item in entry.as_array().expect("explicit edges") {
        match item {
            serde_json::Value::Array(pair) => {
                out.extend(std::iter::repeat_n(pair[0].as_u64().unwrap(), pair[1].as_u64().unwrap() as usize))
            }
            v => out.push(v.as_u64().unwrap()),
        }
    }
    out
}

/// `var` of every member (in key order) and year, as libnetcdf reads the files: the expected
/// `(member, time, lat, lon)` array.
fn expected_cube(dir: &Path, files: &[CmipFile], var: &str) -> Vec<u8> {
    let mut out = Vec::new();
    for member in MEMBERS_IN_ORDER {
        for f in files.iter().filter(|f| f.var == var && f.member == member) {
            out.extend(oracle(&dir.join(f.name()), var));
        }
    }
    out
}

#[test]
fn cmip_archive_members_from_attribute_and_file_name_merge_tas_and_pr_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let files = cmip_archive();
    let paths = write_all(dir.path(), &files);
    let out = tempfile::tempdir().unwrap();
    let store = out.path().join("tas.vzarr");
    let run = scan_cmip(dir.path(), "member=attr:variant_label", &store);
    assert_eq!(run.code, 0, "{}", run.stderr);

    // member: a coordinate of strings (Zarr v3 `string`, vlen-utf8), in natural order.
    let member = array_json(&store, "member");
    assert_eq!(member["data_type"], "string", "{member}");
    assert_eq!(member["codecs"], serde_json::json!([{"name": "vlen-utf8", "configuration": {}}]));
    assert_eq!(strings(&read_all(&store, "member")), MEMBERS_IN_ORDER);

    // tas (100-day chunks) and pr (1-day chunks) side by side, every value equal to libnetcdf's.
    for var in ["tas", "pr"] {
        let meta = array_json(&store, var);
        assert_eq!(meta["dimension_names"], serde_json::json!(["member", "time", "lat", "lon"]));
        assert_eq!(meta["shape"], serde_json::json!([3, 365 * 3 + 366, 4, 5]));
        let ours = read_all(&store, var);
        assert!(ours.bytes == expected_cube(dir.path(), &files, var), "{var}: values differ from the files");
    }
    // Interior partial chunks: each year ends with a trimmed chunk (65 or 66 days), the last keeps 100.
    let year = |last: u64| vec![100, 100, 100, last];
    let expected_edges = [year(65), year(66), year(65), year(100)].concat();
    assert_eq!(edges(&array_json(&store, "tas"), 1), expected_edges);
    // Coordinates: time from one member's files (all equal), lat/lon once.
    let r1: Vec<&Path> =
        paths.iter().filter(|p| s(p).contains("tas_day_VZ-ESM_r1i1p1f1")).map(|p| p.as_path()).collect();
    let time: Vec<u8> = r1.iter().flat_map(|p| oracle(p, "time")).collect();
    assert!(read_all(&store, "time").bytes == time);
    assert!(read_all(&store, "lat").bytes == oracle(r1[0], "lat"));
    // Global attributes that differ between files are dropped; shared ones kept.
    let root: serde_json::Value = serde_json::from_slice(&std::fs::read(store.join("zarr.json")).unwrap()).unwrap();
    let attrs = &root["attributes"];
    assert!(attrs.get("tracking_id").is_none() && attrs.get("variant_label").is_none(), "{attrs}");
    assert_eq!(attrs["source_id"], "VZ-ESM");

    // verify, info, read of the new coordinate and of a selection over it, materialize.
    let verified = cli_expect(&["verify", &s(&store)], 0);
    assert!(verified.stdout.contains("member") || verified.stderr.contains("member") || !verified.stdout.is_empty());
    // Each member's key compared with its file's `variant_label`, read again by the oracle.
    assert!(verified.stdout.lines().any(|l| l == "ok   member: 3 elements equal"), "{}", verified.stdout);
    let info = cli_expect(&["info", &s(&store)], 0);
    assert!(info.stdout.contains("member") && info.stdout.contains("r10i1p1f1"), "{}", info.stdout);
    let npy = out.path().join("member.npy");
    cli_expect(&["read", &s(&store), "member", "-o", &s(&npy)], 0);
    let parsed = parse_npy(&std::fs::read(&npy).unwrap());
    assert_eq!(parsed.descr, "|S9");
    let slab = out.path().join("slab.npy");
    cli_expect(&["read", &s(&store), "tas", "-s", "2,400:410", "-o", &s(&slab)], 0);
    let r10_2004 = dir.path().join("tas_day_VZ-ESM_r10i1p1f1_gn_2004.nc");
    let row = 4 * 5 * 4;
    let expected = &oracle(&r10_2004, "tas")[35 * row..45 * row];
    assert!(parse_npy(&std::fs::read(&slab).unwrap()).data == expected);

    // The same members from the file names: the same arrays and references.
    let by_path = out.path().join("by_path.vzarr");
    let run = scan_cmip(dir.path(), r"member=path:_(r\d+i\d+p\d+f\d+)_", &by_path);
    assert_eq!(run.code, 0, "{}", run.stderr);
    for var in ["tas", "pr", "member", "time"] {
        for file in ["zarr.json", "manifest.bin"] {
            let a = std::fs::read(store.join(var).join(file)).unwrap();
            let b = std::fs::read(by_path.join(var).join(file)).unwrap();
            assert!(a == b, "{var}/{file} differs between attr: and path: keys");
        }
    }

    // Numeric keys (r10 -> 10) make a numeric coordinate, sorted as numbers.
    let numeric = out.path().join("numeric.vzarr");
    let run = scan_cmip(dir.path(), r"member=path:_r(\d+)i", &numeric);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(array_json(&numeric, "member")["data_type"], "int64");
    let expected: Vec<i64> = MEMBERS_IN_ORDER.iter().map(|m| m[1..m.find('i').unwrap()].parse().unwrap()).collect();
    assert_eq!(read_all(&numeric, "member").to_vec::<i64>().unwrap(), expected);
    cli_expect(&["verify", &s(&numeric)], 0);

    // --first-global-attributes keeps the first file's (pr sorts before tas; r1, 2003 first).
    let first = out.path().join("first.vzarr");
    let glob = format!("{}/*.nc", dir.path().display());
    let dims = ["--concat", "member=attr:variant_label", "--concat", "time", "--first-global-attributes"];
    cli_expect(&[vec!["scan", glob.as_str()], dims.to_vec(), vec!["-o", &s(&first)]].concat(), 0);
    let root: serde_json::Value = serde_json::from_slice(&std::fs::read(first.join("zarr.json")).unwrap()).unwrap();
    let first_file = dir.path().join("pr_day_VZ-ESM_r1i1p1f1_gn_2003.nc");
    let tracking = with_hdf5_files(|| {
        let nc = netcdf::open(&first_file).unwrap();
        match nc.attribute("tracking_id").unwrap().value().unwrap() {
            netcdf::AttributeValue::Str(s) => s,
            other => panic!("{other:?}"),
        }
    });
    assert_eq!(root["attributes"]["tracking_id"], tracking.as_str());
}

#[test]
fn a_shared_coordinate_that_differs_between_variables_is_an_error_naming_both_files() {
    let dir = tempfile::tempdir().unwrap();
    let mut files: Vec<CmipFile> = cmip_archive().into_iter().filter(|f| f.year == 2003).collect();
    for f in files.iter_mut().filter(|f| f.var == "pr") {
        f.lat_shift = 0.5;
    }
    write_all(dir.path(), &files);
    let out = tempfile::tempdir().unwrap();
    let store = out.path().join("tas.vzarr");
    let run = scan_cmip(dir.path(), "member=attr:variant_label", &store);
    let hints = ["lat", "pr_day_VZ-ESM_r1i1p1f1_gn_2003.nc", "tas_day_VZ-ESM_r1i1p1f1_gn_2003.nc", "--take-first lat"];
    assert_refused(run, &store, &hints);
}

#[test]
fn a_data_variable_missing_from_some_files_of_a_set_is_an_error_or_dropped() {
    let dir = tempfile::tempdir().unwrap();
    // tas files of r1 also hold pr: the {tas, pr} and {tas} sets share tas.
    let files: Vec<CmipFile> = cmip_archive().into_iter().filter(|f| f.year == 2003 && f.var == "tas").collect();
    let paths = write_all(dir.path(), &files);
    with_hdf5_files(|| {
        let mut nc = netcdf::append(&paths[0]).unwrap();
        let mut pr = nc.add_variable::<f32>("pr", &["time", "lat", "lon"]).unwrap();
        pr.put_values(&vec![1.0f32; 365 * 20], ..).unwrap();
    });
    let out = tempfile::tempdir().unwrap();
    let store = out.path().join("tas.vzarr");
    let run = scan_cmip(dir.path(), "member=attr:variant_label", &store);
    assert_refused(
        run,
        &store,
        &["pr", "missing from this file", "tas_day_VZ-ESM_r1i1p1f1_gn_2003.nc", "--drop-missing"],
    );
    let glob = format!("{}/*.nc", dir.path().display());
    let args = [
        "scan",
        &glob,
        "--concat",
        "member=attr:variant_label",
        "--concat",
        "time",
        "--drop-missing",
        "-o",
        &s(&store),
    ];
    let run = cli(&args);
    assert_eq!(run.code, 3, "left out with a warning: {}", run.stderr);
    assert!(run.stderr.contains("pr") && run.stderr.contains("left out"), "{}", run.stderr);
    assert!(read_all(&store, "tas").bytes == expected_cube(dir.path(), &files, "tas"));
}

/// Scans and expects failure: one line on stderr containing every hint, exit 1, no store.
fn assert_refused(run: crate::common::Run, store: &Path, hints: &[&str]) {
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(run.stderr_lines().len(), 1, "one line: {}", run.stderr);
    for hint in hints {
        assert!(run.stderr.contains(hint), "{hint:?} not in: {}", run.stderr);
    }
    assert!(!store.exists(), "nothing written");
    let parent = store.parent().unwrap();
    assert_eq!(std::fs::read_dir(parent).unwrap().count(), 0, "no staging left behind");
}

#[test]
fn a_missing_member_year_is_an_error_naming_member_and_time_range() {
    let dir = tempfile::tempdir().unwrap();
    let files: Vec<CmipFile> =
        cmip_archive().into_iter().filter(|f| !(f.var == "tas" && f.member == "r2i1p1f1" && f.year == 2005)).collect();
    write_all(dir.path(), &files);
    let out = tempfile::tempdir().unwrap();
    let store = out.path().join("tas.vzarr");
    let run = scan_cmip(dir.path(), "member=attr:variant_label", &store);
    let first = (days_since_epoch(2005, 1) - days_since_epoch(2000, 1)) as f64 + 0.5;
    let range = format!("time=[{first} .. {}]", first + 364.0);
    assert_refused(run, &store, &["member=r2i1p1f1", &range, "tas_day_VZ-ESM_r1i1p1f1_gn_2005.nc"]);
}

#[test]
fn members_whose_time_axes_differ_are_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let mut files = cmip_archive();
    for f in files.iter_mut().filter(|f| f.member == "r10i1p1f1" && f.year == 2004) {
        f.time_shift = 0.25;
    }
    write_all(dir.path(), &files);
    let out = tempfile::tempdir().unwrap();
    let store = out.path().join("tas.vzarr");
    let run = scan_cmip(dir.path(), "member=attr:variant_label", &store);
    assert_refused(run, &store, &["r10i1p1f1_gn_2004.nc", "time axes must be identical"]);
}

#[test]
fn a_member_key_missing_from_a_file_is_an_error_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    write_all(dir.path(), &cmip_archive()[..2]);
    let out = tempfile::tempdir().unwrap();
    let store = out.path().join("tas.vzarr");
    let run = scan_cmip(dir.path(), "member=attr:experiment_id", &store);
    assert_refused(run, &store, &["tas_day_VZ-ESM_r1i1p1f1_gn_2003.nc", "experiment_id"]);
}

/// 2 x 3 tiles of a 9 x 17 grid, chunked (2, 3, 4) (the 3-column tile (2, 3, 3)): tiles of 5 rows
/// and 7 columns end inside a chunk along y, along x, and (corners) along both; shuffled order.
fn tiles() -> Vec<Tile> {
    let mut tiles = Vec::new();
    for (x0, nx) in [(14, 3), (0, 7), (7, 7)] {
        for (y0, ny) in [(5, 4), (0, 5)] {
            tiles.push(Tile { y0, ny, x0, nx, chunk: [2, 3, nx.min(4)], compress: true });
        }
    }
    tiles
}

#[test]
fn spatial_tiles_along_y_and_x_with_partial_chunks_at_every_edge_read_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let tiles = tiles();
    let paths: Vec<PathBuf> = tiles.iter().map(|t| write_tile(dir.path(), t)).collect();
    let out = tempfile::tempdir().unwrap();
    let store = out.path().join("tiles.vzarr");
    let mut args: Vec<String> = vec!["scan".into()];
    args.extend(paths.iter().map(|p| s(p)));
    args.extend(["--concat", "y", "--concat", "x", "-o"].map(String::from));
    args.push(s(&store));
    cli_expect(&args, 0);
    // Expected: every tile's values (libnetcdf) placed at its rows and columns of the 9 x 17 grid.
    let (ny, nx) = (9, 17);
    let assemble = |var: &str, steps: usize, size: usize| {
        let mut expected = vec![0u8; steps * ny * nx * size];
        for (t, p) in tiles.iter().zip(&paths) {
            let values = oracle(p, var);
            for time in 0..steps {
                for y in 0..t.ny {
                    let from = ((time * t.ny + y) * t.nx) * size;
                    let to = ((time * ny + t.y0 + y) * nx + t.x0) * size;
                    expected[to..to + t.nx * size].copy_from_slice(&values[from..from + t.nx * size]);
                }
            }
        }
        expected
    };
    let ours = read_all(&store, "z");
    assert_eq!(ours.shape, [3, 9, 17]);
    assert!(ours.bytes == assemble("z", 3, 4), "z differs from the tiles' values");
    // w is uncompressed: chunks interior along y only are referenced by their valid byte prefix
    // (not store-owned); those interior along x are rewritten.
    let w = read_all(&store, "w");
    assert!(w.bytes == assemble("w", 1, 8), "w differs from the tiles' values");
    let info: serde_json::Value = serde_json::from_slice(&std::fs::read(store.join("vzarr.json")).unwrap()).unwrap();
    let w_info = info["arrays"].as_array().unwrap().iter().find(|a| a["path"] == "w").unwrap();
    // Rewritten: the last chunk column of the two 7-column tiles (interior along x), in every chunk
    // row of both tile rows (5 rows and 4 rows, chunks of 3).
    let chunk_rows: u64 = [5u64, 4].iter().map(|n| n.div_ceil(3)).sum();
    assert_eq!(w_info["stats"]["owned"], 2 * chunk_rows, "{w_info}");
    // y decreases: the tile holding rows 0..5 (largest y) comes first.
    let y: Vec<u8> = [&paths[1], &paths[0]].iter().flat_map(|p| oracle(p, "y")).collect();
    assert!(read_all(&store, "y").bytes == y);
    // Edges: the interior tiles' partial chunks trimmed (5 = 3 + 2, 7 = 4 + 3).
    let meta = array_json(&store, "z");
    assert_eq!(edges(&meta, 1), [3, 2, 3, 3]);
    assert_eq!(edges(&meta, 2), [4, 3, 4, 3, 3]);
    cli_expect(&["verify", &s(&store)], 0);
}

/// Three monthly files; `change` alters the second.
fn series_refused(change: impl Fn(&mut SeriesFile), hints: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let mut files = monthly(2023..=2023, None, true);
    files.truncate(3);
    change(&mut files[1]);
    let paths: Vec<PathBuf> = with_hdf5_files(|| files.iter().map(|f| write_series_file(dir.path(), f)).collect());
    let out = tempfile::tempdir().unwrap();
    let store = out.path().join("out.vzarr");
    let mut args: Vec<String> = vec!["scan".into()];
    args.extend(paths.iter().map(|p| s(p)));
    args.extend(["--concat", "time", "-o"].map(String::from));
    args.push(s(&store));
    assert_refused(cli(&args), &store, hints);
}

#[test]
fn attributes_that_change_the_meaning_of_values_must_match() {
    series_refused(|f| f.tas_numbers.push(("scale_factor", 0.01)), &["tas_202302.nc", "tas", "scale_factor"]);
    series_refused(|f| f.tas_numbers.push(("add_offset", 273.15)), &["tas_202302.nc", "add_offset"]);
    series_refused(|f| f.tas_text.push(("units", "degC")), &["tas_202302.nc", "units", "degC"]);
    series_refused(|f| f.tas_text.push(("calendar", "noleap")), &["tas_202302.nc", "calendar"]);
    series_refused(|f| f.tas_numbers.push(("missing_value", -999.0)), &["tas_202302.nc", "missing_value"]);
    series_refused(|f| f.tas_fill = Some(-1.0e20), &["tas_202302.nc", "_FillValue"]);
}

#[test]
fn a_non_monotonic_or_nan_concatenation_coordinate_is_an_error() {
    series_refused(|f| f.reverse_time = true, &["tas_202302.nc", "time", "not increasing"]);
    series_refused(|f| f.nan_time = true, &["tas_202302.nc", "time", "NaN"]);
}
