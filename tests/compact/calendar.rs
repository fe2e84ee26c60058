//! `vzarr compact --chunks time=month` (issue 54): chunk grids that follow the calendar. A year of
//! daily steps at noon, in files of 92 days chunked by 8 (so months begin inside chunks), in each CF
//! calendar: the compacted `tas`, `time` and `time_bnds` have one chunk per month of that calendar;
//! every value reads as libnetcdf reads the files and `verify` passes. Seasons, years and `10d`
//! spans, an Icechunk repository, `by:VAR` groups, and a dimension without a CF time coordinate
//! (refused in one line, nothing written).
//!
//! The months each chunk must hold come from the time values libnetcdf reads from the files,
//! decoded here by counting each calendar's month lengths (an implementation apart from vzarr's).

use std::path::{Path, PathBuf};

use super::{assert_values, compact, scan, time_edges};
use crate::common::archives::{write_series_file, SeriesFile};
use crate::common::{cli, cli_expect, with_hdf5_files};
use crate::interop::{oracle, s};

/// Four files of 92 daily steps from 1970-01-01 in `calendar`, `time` and `tas` chunked by 8.
fn write_year(dir: &Path, calendar: &'static str) -> Vec<PathBuf> {
    (0..4)
        .map(|k| {
            let mut f = SeriesFile::new(format!("tas_{calendar}_{k}.nc"), 92 * k, 92, 8);
            f.calendar = calendar;
            f.ny = 3;
            f.nx = 4;
            f.chunk_yx = (3, 4);
            write_series_file(dir, &f)
        })
        .collect()
}

/// Month lengths of `year` in `calendar`, counted by its own rules.
fn month_lengths(calendar: &str, year: i64) -> [i64; 12] {
    let leap = match calendar {
        "noleap" | "365_day" => false,
        "all_leap" | "366_day" => true,
        "julian" => year % 4 == 0,
        _ => (year % 4 == 0 && year % 100 != 0) || year % 400 == 0,
    };
    if calendar == "360_day" {
        return [30; 12];
    }
    [31, if leap { 29 } else { 28 }, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
}

/// (year, month) of `days` days since 1970-01-01 in `calendar`.
fn month_of(calendar: &str, days: f64) -> (i64, usize) {
    let mut rest = days.floor() as i64;
    let mut year = 1970;
    loop {
        for (m, &length) in month_lengths(calendar, year).iter().enumerate() {
            if rest < length {
                return (year, m + 1);
            }
            rest -= length;
        }
        year += 1;
    }
}

/// The time values the files hold (days since 1970-01-01), as libnetcdf reads them.
fn days(files: &[PathBuf]) -> Vec<f64> {
    oracle(files, "time").chunks_exact(8).map(|b| f64::from_ne_bytes(b.try_into().unwrap())).collect()
}

/// A reader of the Icechunk repository `repo`, trusting the test's directory `dir`.
fn open_repo(dir: &Path, repo: &Path) -> vzarr::read::blocking::BlockingStore {
    let authorization = vzarr::read::Authorization::new([format!("{}/", dir.display())]);
    let options = vzarr::read::OpenOptions::new(authorization);
    vzarr::read::blocking::BlockingStore::open_with(s(repo), &options).unwrap()
}

/// `var`'s edges along time and its values read through `store`, checked against the months of the
/// files' time values (`calendar`) and libnetcdf's read of `files`.
fn assert_months_and_values(store: &vzarr::read::blocking::BlockingStore, var: &str, files: &[PathBuf], want: &[u64]) {
    let array = store.array(var).unwrap();
    let edges: Vec<u64> = array.reader().metadata().chunk_grid.dim(0).edges().collect();
    assert_eq!(edges, want, "{var}");
    let values = array.read(&vzarr::Selection::all(&array.reader().shape()), &Default::default()).unwrap();
    crate::interop::assert_same(var, &values.bytes, &oracle(files, var));
}

/// The lengths of the runs of equal `key` over the files' time values.
fn runs(files: &[PathBuf], key: impl Fn(f64) -> i64) -> Vec<u64> {
    let mut edges: Vec<u64> = Vec::new();
    let mut last = None;
    for d in days(files) {
        let k = key(d);
        match edges.last_mut() {
            Some(e) if last == Some(k) => *e += 1,
            _ => edges.push(1),
        }
        last = Some(k);
    }
    edges
}

/// The edges by month of the files' time values in `calendar`.
fn expected_months(files: &[PathBuf], calendar: &str) -> Vec<u64> {
    runs(files, |d| {
        let (year, month) = month_of(calendar, d);
        year * 12 + month as i64
    })
}

/// Every CF calendar the tests cover.
const CALENDARS: [&str; 6] = ["standard", "proleptic_gregorian", "julian", "noleap", "all_leap", "360_day"];

/// [`write_year`]'s files in `calendar`, scanned into `year.vzarr`: the files and the store.
fn year_store(dir: &Path, calendar: &'static str) -> (Vec<PathBuf>, PathBuf) {
    let files = write_year(dir, calendar);
    let store = dir.join("year.vzarr");
    scan(&files, &store, &[]);
    (files, store)
}

/// The edges by season, by year and by 10-day span (from midnight of the first day) of the files'
/// time values in `calendar`, each with its unit.
fn period_cases(files: &[PathBuf], calendar: &str) -> [(&'static str, Vec<u64>); 3] {
    let first = days(files)[0].floor();
    let season = |d: f64| match month_of(calendar, d) {
        (year, 12) => (year + 1) * 4,
        (year, month) => year * 4 + (month / 3) as i64,
    };
    let year = |d: f64| month_of(calendar, d).0;
    let span = |d: f64| ((d - first) / 10.0).floor() as i64;
    [("season", runs(files, season)), ("year", runs(files, year)), ("10d", runs(files, span))]
}

#[test]
fn month_chunks_follow_each_calendar_and_read_as_the_files() {
    for calendar in CALENDARS {
        let dir = tempfile::tempdir().unwrap();
        let (files, store) = year_store(dir.path(), calendar);
        let months = expected_months(&files, calendar);
        assert!(months.len() >= 12, "{calendar}: {months:?}");
        let run = compact(&store, &["--chunks", "time=month"]);
        assert_eq!(run.code, 0, "{calendar}: {}", run.stderr);
        for var in ["tas", "time", "time_bnds"] {
            assert_eq!(time_edges(&store, var), months, "{calendar}: {var}");
        }
        assert_values(&store, &files);
        let verified = cli_expect(&["verify", &s(&store)], 0);
        assert!(verified.stdout.contains(": 0 failed"), "{calendar}: {}", verified.stdout);
        // Idempotent.
        let again = compact(&store, &["--chunks", "time=month"]);
        assert!(again.stdout.contains("nothing to fold"), "{calendar}: {}", again.stdout);
    }
}

#[test]
fn seasons_years_and_spans() {
    let dir = tempfile::tempdir().unwrap();
    let files = write_year(dir.path(), "noleap");
    for (unit, want) in period_cases(&files, "noleap") {
        assert!(want.len() > 1, "{unit}: {want:?}");
        let store = dir.path().join(format!("{unit}.vzarr"));
        scan(&files, &store, &[]);
        let run = compact(&store, &["--dim", "time", "--target", unit]);
        assert_eq!(run.code, 0, "{unit}: {}", run.stderr);
        assert_eq!(time_edges(&store, "tas"), want, "{unit}");
        assert_values(&store, &files);
        cli_expect(&["verify", &s(&store)], 0);
    }
}

#[test]
fn icechunk_repositories_get_month_chunks_in_one_commit() {
    let dir = tempfile::tempdir().unwrap();
    let files = write_year(dir.path(), "standard");
    let repo = dir.path().join("year.icechunk");
    scan(&files, &repo, &["--format", "icechunk"]);
    let commits = crate::icechunk_repo::history(&repo, "main").len();
    let run = compact(&repo, &["--chunks", "time=month"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(crate::icechunk_repo::history(&repo, "main").len(), commits + 1);
    let opened = open_repo(dir.path(), &repo);
    for var in ["tas", "time", "time_bnds"] {
        assert_months_and_values(&opened, var, &files, &expected_months(&files, "standard"));
    }
    cli_expect(&["verify", &s(&repo)], 0);
}

#[test]
fn a_dimension_without_a_cf_time_coordinate_is_refused_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let (_, store) = year_store(dir.path(), "standard");
    let before = crate::common::tree_files(&store);
    for (args, message) in [
        (["--chunks", "lat=month"], "time dimension lat has no CF time coordinate"),
        (["--chunks", "bnds=year"], "time dimension bnds has no CF time coordinate (no variable named bnds)"),
        (["--chunks", "time=by:lat"], "by:lat: not a 1-D variable along time"),
    ] {
        let run = cli(&[&["compact".to_string(), s(&store)][..], &args.map(String::from)[..]].concat());
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert_eq!(run.stderr_lines().len(), 1, "{}", run.stderr);
        assert!(run.stderr.contains(message), "{args:?}: {}", run.stderr);
        assert!(crate::common::tree_files(&store) == before, "{args:?} changed the store");
    }
}

/// Stations in networks: `obs(station)` chunked by 2, `network(station)` in runs of 3, 2 and 4.
fn write_stations(dir: &Path) -> PathBuf {
    let path = dir.join("stations.nc");
    with_hdf5_files(|| {
        let mut f = netcdf::create(&path).unwrap();
        f.add_dimension("station", 9).unwrap();
        let mut network = f.add_variable::<i32>("network", &["station"]).unwrap();
        network.set_chunking(&[2]).unwrap();
        network.put_values(&[4, 4, 4, 9, 9, 1, 1, 1, 1], ..).unwrap();
        let mut obs = f.add_variable::<f32>("obs", &["station"]).unwrap();
        obs.set_chunking(&[2]).unwrap();
        obs.put_values(&[1.5f32, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5, 8.5, 9.5], ..).unwrap();
    });
    path
}

#[test]
fn by_var_gives_one_chunk_per_group() {
    let dir = tempfile::tempdir().unwrap();
    let file = write_stations(dir.path());
    let store = dir.path().join("stations.vzarr");
    cli_expect(&["scan", &s(&file), "-o", &s(&store)], 0);
    let run = compact(&store, &["--chunks", "station=by:network"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let opened = crate::common::open_store(&store);
    for var in ["obs", "network"] {
        let edges: Vec<u64> = opened.array(var).unwrap().reader().metadata().chunk_grid.dim(0).edges().collect();
        assert_eq!(edges, vec![3, 2, 4], "{var}");
        let files = [file.clone()];
        crate::interop::assert_same(var, &crate::common::read(&opened, var, "").bytes, &oracle(&files, var));
    }
    cli_expect(&["verify", &s(&store)], 0);
}

/// `vzarr append STORE NEW... --chunks time=month`: the new days fold into the last stored month
/// until it is full, then into the next, in the append's one write; the months before stay as they
/// are (only the last stored month is read again).
#[test]
fn appends_keep_month_chunks() {
    let dir = tempfile::tempdir().unwrap();
    let files = super::write_days(dir.path(), 71);
    let store = dir.path().join("days.vzarr");
    // 1 January - 20 February, compacted to months: [31, 20].
    scan(&files[..51], &store, &[]);
    cli_expect(&["compact", &s(&store), "--chunks", "time=month"], 0);
    let months = |n: usize| expected_months(&files[..n], "standard");
    assert_eq!(time_edges(&store, "tas"), months(51));
    let january = january_chunks(&store);
    // 21 February - 12 March: February fills up, March starts.
    let mut args = vec!["append".to_string(), s(&store)];
    args.extend(files[51..].iter().map(s));
    args.extend(["--chunks".to_string(), "time=month".to_string()]);
    let run = cli_expect(&args, 0);
    assert!(run.stdout.contains("tas: time: [31, 20, 1 x 20] -> [31, 28, 12]"), "{}", run.stdout);
    for var in ["tas", "time", "time_bnds"] {
        assert_eq!(time_edges(&store, var), months(71), "{var}");
    }
    assert_eq!(january_chunks(&store), january, "January was rewritten");
    assert_values(&store, &files);
    cli_expect(&["verify", &s(&store)], 0);
}

/// The entries and stored bytes of `tas`'s chunks in its first time chunk.
fn january_chunks(store: &Path) -> Vec<Vec<u8>> {
    let opened = crate::common::open_store(store);
    let tas = opened.array("tas").unwrap();
    let grid = &tas.reader().metadata().chunk_grid;
    let per_slab = grid.num_chunks() / grid.dim(0).num_chunks();
    let runtime = vzarr::pipeline::runtime().unwrap();
    runtime.block_on(async {
        let entries = tas.reader().entries(0..per_slab).await.unwrap();
        let mut out = Vec::new();
        for e in &entries {
            out.push(tas.reader().stored_chunk(e).await.unwrap().unwrap().to_vec());
        }
        out
    })
}

#[test]
fn icechunk_appends_keep_month_chunks_in_one_commit_while_an_old_reader_reads_on() {
    let dir = tempfile::tempdir().unwrap();
    let files = super::write_days(dir.path(), 41);
    let repo = dir.path().join("days.icechunk");
    scan(&files[..20], &repo, &["--format", "icechunk"]);
    let commits = crate::icechunk_repo::history(&repo, "main").len();
    let open = || open_repo(dir.path(), &repo);
    let old = open();
    let old_tas = old.array("tas").unwrap();
    // 1-20 January, appended with 21 January - 10 February: [31, 10].
    let mut args = vec!["append".to_string(), s(&repo)];
    args.extend(files[20..].iter().map(s));
    args.extend(["--chunks", "time=month"].map(String::from));
    cli_expect(&args, 0);
    assert_eq!(crate::icechunk_repo::history(&repo, "main").len(), commits + 1, "one commit");
    let new = open();
    for var in ["tas", "time", "time_bnds"] {
        assert_months_and_values(&new, var, &files, &[31, 10]);
    }
    // The reader of the previous snapshot reads on: twenty days.
    let all = vzarr::Selection::all(&old_tas.reader().shape());
    let values = old_tas.read(&all, &vzarr::ReadOptions::default()).unwrap();
    crate::interop::assert_same("tas of the previous snapshot", &values.bytes, &oracle(&files[..20], "tas"));
    cli_expect(&["verify", &s(&repo)], 0);
}

/// `vzarr materialize STORE OUT --chunks time=month,...`: the copy's grid is rectilinear along time,
/// one chunk per month of the files' calendar, and zarrs reads every value as libnetcdf reads the
/// files (also seasons, years and `10d` spans for one calendar).
#[test]
fn month_chunked_copies_follow_each_calendar_and_read_as_the_files() {
    for calendar in CALENDARS {
        let dir = tempfile::tempdir().unwrap();
        let (files, store) = year_store(dir.path(), calendar);
        let out = dir.path().join("months.zarr");
        let run = cli_expect(&["materialize", &s(&store), &s(&out), "--chunks", "time=month,lat=3,lon=2"], 0);
        assert!(run.stdout.contains("chunks written"), "{calendar}: {}", run.stdout);
        let months = expected_months(&files, calendar);
        for var in ["tas", "time", "time_bnds"] {
            let edges = crate::interop::zarrs_time_edges(&crate::interop::zarrs_array(&out, var));
            assert_eq!(edges, months, "{calendar}: {var}");
        }
        let doc = crate::common::array_json(&out, "tas");
        assert_eq!(doc["chunk_grid"]["name"], "rectilinear", "{calendar}: {doc}");
        crate::interop::assert_zarrs_reads_exactly(&out, &files, &["tas", "time", "time_bnds", "lat", "lon"]);
    }
    let dir = tempfile::tempdir().unwrap();
    let (files, store) = year_store(dir.path(), "all_leap");
    for (unit, want) in period_cases(&files, "all_leap") {
        let out = dir.path().join(format!("{unit}.zarr"));
        cli_expect(&["materialize", &s(&store), &s(&out), "--chunks", &format!("time={unit}")], 0);
        let edges = crate::interop::zarrs_time_edges(&crate::interop::zarrs_array(&out, "tas"));
        assert_eq!(edges, want, "{unit}");
        crate::interop::assert_zarrs_reads_exactly(&out, &files, &["tas", "time", "time_bnds"]);
    }
}

/// `--shards time=month --chunks time=1,...`: one shard per month holding regular inner chunks of
/// one day (the announcement's fourth pattern); zarrs reads every value as libnetcdf does. Inner
/// chunks that do not divide a shard, and varying inner chunks, are refused naming the reason.
#[test]
fn month_shards_hold_regular_inner_chunks() {
    let dir = tempfile::tempdir().unwrap();
    let (files, store) = year_store(dir.path(), "standard");
    let out = dir.path().join("shards.zarr");
    let spec = ["--shards", "time=month", "--chunks", "time=1,lat=3,lon=4", "--max-memory", "64K"];
    let run = cli_expect(&[&["materialize", &s(&store), &s(&out)][..], &spec].concat(), 0);
    assert!(run.stdout.contains("in shards"), "{}", run.stdout);
    let months = expected_months(&files, "standard");
    for var in ["tas", "time", "time_bnds"] {
        let doc = crate::common::array_json(&out, var);
        assert_eq!(doc["codecs"][0]["name"], "sharding_indexed", "{var}: {doc}");
        assert_eq!(doc["codecs"][0]["configuration"]["chunk_shape"][0], 1, "{var}: {doc}");
        let edges = crate::interop::zarrs_time_edges(&crate::interop::zarrs_array(&out, var));
        assert_eq!(edges, months, "{var}: one shard a month");
    }
    crate::interop::assert_zarrs_reads_exactly(&out, &files, &["tas", "time", "time_bnds", "lat", "lon"]);
    // Shards of years in inner chunks of 7 days: 2023 has 365, not a multiple of 7.
    let bad = dir.path().join("bad.zarr");
    let split = cli(&["materialize", &s(&store), &s(&bad), "--shards", "time=year", "--chunks", "time=7"]);
    assert_eq!(split.code, 1, "{}", split.stderr);
    assert!(split.stderr.contains("is not a multiple of the chunk length 7"), "{}", split.stderr);
    let varying = cli(&["materialize", &s(&store), &s(&bad), "--shards", "time=year", "--chunks", "time=month"]);
    assert_eq!(varying.code, 1, "{}", varying.stderr);
    assert!(varying.stderr.contains("cannot be the inner chunks of shards"), "{}", varying.stderr);
    assert!(!bad.exists() && !dir.path().join("bad.zarr.partial").exists());
}

/// `materialize --chunks station=by:network` (one chunk per network), a month-chunked Icechunk
/// repository, and a dimension without a CF time coordinate refused in one line with nothing written.
#[test]
fn group_and_icechunk_copies_and_a_refusal() {
    let dir = tempfile::tempdir().unwrap();
    let file = write_stations(dir.path());
    let stations = dir.path().join("stations.vzarr");
    cli_expect(&["scan", &s(&file), "-o", &s(&stations)], 0);
    let out = dir.path().join("networks.zarr");
    cli_expect(&["materialize", &s(&stations), &s(&out), "--chunks", "station=by:network"], 0);
    for var in ["obs", "network"] {
        assert_eq!(crate::interop::zarrs_time_edges(&crate::interop::zarrs_array(&out, var)), [3, 2, 4], "{var}");
    }
    crate::interop::assert_zarrs_reads_exactly(&out, &[file], &["obs", "network"]);

    let (files, store) = year_store(dir.path(), "360_day");
    let repo = dir.path().join("months.icechunk");
    let run = cli_expect(&["materialize", &s(&store), &s(&repo), "--chunks", "time=month", "--format", "icechunk"], 0);
    assert!(run.stdout.contains("one Icechunk commit"), "{}", run.stdout);
    let opened = open_repo(dir.path(), &repo);
    for var in ["tas", "time", "time_bnds"] {
        assert_months_and_values(&opened, var, &files, &expected_months(&files, "360_day"));
    }

    let bad = dir.path().join("bad.zarr");
    let refused = cli(&["materialize", &s(&store), &s(&bad), "--chunks", "lat=month"]);
    assert_eq!(refused.code, 1, "{}", refused.stderr);
    assert_eq!(refused.stderr_lines().len(), 1, "{}", refused.stderr);
    assert!(refused.stderr.contains("time dimension lat has no CF time coordinate"), "{}", refused.stderr);
    assert!(!bad.exists() && !dir.path().join("bad.zarr.partial").exists());
}

/// An append with `--chunks UNIT` reads only the last stored period and the new steps, and on a
/// store already in that grid gives the grid a compaction of the whole archive gives (months and
/// seasons, appends ending inside a period). On a store not in it, the chunks before the last stored
/// step's period stay as they are: 10-day spans, counted from the archive's first day (which the
/// append reads alone), start at the last stored step's span.
#[test]
fn appends_give_the_grid_of_the_whole_archive() {
    let dir = tempfile::tempdir().unwrap();
    let files = write_year(dir.path(), "noleap");
    for unit in ["month", "season"] {
        let whole = dir.path().join(format!("whole-{unit}.vzarr"));
        scan(&files, &whole, &[]);
        cli_expect(&["compact", &s(&whole), "--chunks", &format!("time={unit}")], 0);
        let appended = dir.path().join(format!("appended-{unit}.vzarr"));
        scan(&files[..2], &appended, &[]);
        cli_expect(&["compact", &s(&appended), "--chunks", &format!("time={unit}")], 0);
        for file in &files[2..] {
            cli_expect(&["append", &s(&appended), &s(file), "--chunks", &format!("time={unit}")], 0);
        }
        for var in ["tas", "time", "time_bnds"] {
            assert_eq!(time_edges(&appended, var), time_edges(&whole, var), "{unit}: {var}");
        }
        assert_values(&appended, &files);
        cli_expect(&["verify", &s(&appended)], 0);
    }
    // 8-day chunks of each file, 184 days stored: the last stored step (day 183) is in the span of
    // days 180-189, whose first day starts a chunk of file 2 (92 + 11 x 8).
    let store = dir.path().join("spans.vzarr");
    scan(&files[..2], &store, &[]);
    let stored = time_edges(&store, "tas");
    for file in &files[2..] {
        cli_expect(&["append", &s(&store), &s(file), "--chunks", "time=10d"], 0);
    }
    let first = days(&files)[0].floor();
    let spans = runs(&files, |d| ((d - first) / 10.0).floor() as i64);
    let mut kept = 0;
    let prefix: Vec<u64> = stored
        .into_iter()
        .take_while(|e| {
            kept += e;
            kept <= 180
        })
        .collect();
    let (mut done, mut want) = (0, prefix);
    for edge in spans {
        if done >= 180 {
            want.push(edge);
        }
        done += edge;
    }
    for var in ["tas", "time", "time_bnds"] {
        assert_eq!(time_edges(&store, var), want, "10d: {var}");
    }
    assert_values(&store, &files);
    cli_expect(&["verify", &s(&store)], 0);
}
