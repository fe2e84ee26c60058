//! `vzarr append` (issue 12): a store extended with new files equals a fresh scan of every file, file
//! for file and byte for byte (the `history` line's time aside), and its values equal libnetcdf's reads
//! of the source files; refused appends leave the store byte for byte as it was.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::common::archives::{monthly, write_series_file, yearly, SeriesFile, TimeUnits};
use crate::common::cmip::{cmip_archive, write_cmip_file, CmipFile};
use crate::common::{cli, cli_expect, open_store, read, with_hdf5_files};

fn scan(files: &[PathBuf], store: &Path, concat: &[&str]) {
    let mut args: Vec<String> = vec!["scan".into()];
    args.extend(files.iter().map(|p| p.display().to_string()));
    for c in concat {
        args.extend(["--concat".into(), c.to_string()]);
    }
    args.extend(["-o".into(), store.display().to_string()]);
    cli_expect(&args, 0);
}

fn append(store: &Path, files: &[PathBuf]) -> crate::common::Run {
    let mut args: Vec<String> = vec!["append".into(), store.display().to_string()];
    args.extend(files.iter().map(|p| p.display().to_string()));
    cli(&args)
}

/// Every file of a store (relative path -> bytes); the root `history` line's time is blanked.
fn snapshot(store: &Path) -> BTreeMap<String, Vec<u8>> {
    let history = regex::Regex::new(r#""history": "\d+ \(seconds"#).unwrap();
    let mut out = BTreeMap::new();
    let mut stack = vec![store.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let name = path.strip_prefix(store).unwrap().display().to_string();
            let mut bytes = std::fs::read(&path).unwrap();
            if name == "zarr.json" {
                let text = String::from_utf8(bytes).unwrap();
                bytes = history.replace(&text, "\"history\": \"T (seconds").into_owned().into_bytes();
            }
            out.insert(name, bytes);
        }
    }
    out
}

fn assert_same_store(appended: &Path, fresh: &Path) {
    let (a, b) = (snapshot(appended), snapshot(fresh));
    assert_eq!(a.keys().collect::<Vec<_>>(), b.keys().collect::<Vec<_>>(), "files of the stores");
    for (name, bytes) in &a {
        assert!(bytes == &b[name], "{name} differs:\nappended {}\nfresh    {}", lossy(bytes), lossy(&b[name]));
    }
}

fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(&bytes[..bytes.len().min(3000)]).into_owned()
}

fn oracle(path: &Path, var: &str) -> Vec<u8> {
    crate::common::oracle_read(path, var, None)
}

fn oracle_f64(path: &Path, var: &str) -> Vec<f64> {
    with_hdf5_files(|| netcdf::open(path).unwrap().variable(var).unwrap().get_values::<f64, _>(..).unwrap())
}

/// `var` read through the store equals the files' values concatenated in this order.
fn assert_values(store: &Path, var: &str, in_order: &[PathBuf]) {
    let ours = read(&open_store(store), var, "");
    let expected: Vec<u8> = in_order.iter().flat_map(|p| oracle(p, var)).collect();
    assert_eq!(ours.bytes.len(), expected.len(), "{var}: length");
    assert_eq!(ours.bytes.iter().zip(&expected).position(|(a, b)| a != b), None, "{var}: first differing byte");
}

fn write_series(dir: &Path, files: &[SeriesFile]) -> Vec<PathBuf> {
    files.iter().map(|f| write_series_file(dir, f)).collect()
}

/// Scans `files[..split]`, appends `files[split..]` (in `order`), and compares with a fresh scan.
fn append_equals_fresh(dir: &Path, files: &[PathBuf], split: usize, new_in_order: &[PathBuf]) -> PathBuf {
    let (appended, fresh) = (dir.join("appended.vzarr"), dir.join("fresh.vzarr"));
    scan(&files[..split], &appended, &["time"]);
    let run = append(&appended, new_in_order);
    assert_eq!(run.code, 0, "append failed: {}", run.stderr);
    scan(files, &fresh, &["time"]);
    assert_same_store(&appended, &fresh);
    appended
}

#[test]
fn one_yearly_file_with_partial_last_chunks() {
    let dir = tempfile::tempdir().unwrap();
    let mut series = yearly(2001..=2004, 61);
    series.iter_mut().for_each(|f| f.with_pr = true);
    let files = write_series(dir.path(), &series);
    let store = append_equals_fresh(dir.path(), &files, 3, &files[3..]);
    for var in ["tas", "pr", "time", "time_bnds"] {
        assert_values(&store, var, &files);
    }
    assert_values(&store, "lat", &files[..1]);
    cli_expect(&["verify", store.to_str().unwrap()], 0);
    // A second append on top of the first.
    let more = write_series(
        dir.path(),
        &yearly(2005..=2005, 61)
            .into_iter()
            .map(|mut f| {
                f.with_pr = true;
                f
            })
            .collect::<Vec<_>>(),
    );
    assert_eq!(append(&store, &more).code, 0);
    let all: Vec<PathBuf> = files.iter().chain(&more).cloned().collect();
    let fresh = dir.path().join("fresh5.vzarr");
    scan(&all, &fresh, &["time"]);
    assert_same_store(&store, &fresh);
    assert_values(&store, "tas", &all);
}

#[test]
fn several_monthly_files_given_out_of_order() {
    let dir = tempfile::tempdir().unwrap();
    let files = write_series(dir.path(), &monthly(2001..=2001, Some(10), false));
    let mut shuffled: Vec<PathBuf> = files[5..].to_vec();
    shuffled.reverse();
    let store = append_equals_fresh(dir.path(), &files, 5, &shuffled);
    for var in ["tas", "time", "time_bnds"] {
        assert_values(&store, var, &files);
    }
}

#[test]
fn per_file_time_units_are_reencoded_as_a_fresh_scan_does() {
    let dir = tempfile::tempdir().unwrap();
    // The store re-encoded its times already; the new files bring their own units too.
    let mut series = monthly(2001..=2001, Some(7), true);
    series.truncate(6);
    series.iter_mut().for_each(|f| f.units = TimeUnits::HoursSinceStart);
    let files = write_series(dir.path(), &series);
    let store = append_equals_fresh(dir.path(), &files, 4, &files[4..]);
    assert_values(&store, "tas", &files);
    let expected: Vec<f64> = files
        .iter()
        .map(|p| oracle_f64(p, "time"))
        .enumerate()
        .flat_map(|(m, v)| {
            let start = series[m].first_day as f64 - series[0].first_day as f64;
            v.into_iter().map(move |h| start * 24.0 + h)
        })
        .collect();
    assert_eq!(read(&open_store(&store), "time", "").to_f64_vec(), expected, "time in the first file's units");

    // The store holds its times as references; new files in other units make every value re-encoded.
    let dir = tempfile::tempdir().unwrap();
    let mut series = monthly(2002..=2002, Some(7), true);
    series.truncate(6);
    series[4..].iter_mut().for_each(|f| f.units = TimeUnits::HoursSinceStart);
    let files = write_series(dir.path(), &series);
    let store = append_equals_fresh(dir.path(), &files, 4, &files[4..]);
    assert_values(&store, "tas", &files);
}

fn cmip_paths(dir: &Path, files: &[CmipFile]) -> Vec<PathBuf> {
    files.iter().map(|f| write_cmip_file(dir, f)).collect()
}

#[test]
fn new_years_for_every_member_of_a_member_by_time_store() {
    let dir = tempfile::tempdir().unwrap();
    let all: Vec<CmipFile> = cmip_archive().into_iter().filter(|f| f.year >= 2004).collect();
    let (old, new): (Vec<CmipFile>, Vec<CmipFile>) = all.iter().cloned().partition(|f| f.year < 2006);
    let (old_paths, new_paths) = (cmip_paths(dir.path(), &old), cmip_paths(dir.path(), &new));
    let concat = ["member=attr:variant_label", "time"];
    let (appended, fresh) = (dir.path().join("appended.vzarr"), dir.path().join("fresh.vzarr"));
    scan(&old_paths, &appended, &concat);
    let run = append(&appended, &new_paths);
    assert_eq!(run.code, 0, "append failed: {}", run.stderr);
    let every: Vec<PathBuf> = old_paths.iter().chain(&new_paths).cloned().collect();
    scan(&every, &fresh, &concat);
    assert_same_store(&appended, &fresh);
    for var in ["tas", "pr"] {
        let mut in_order = Vec::new();
        for member in ["r1i1p1f1", "r2i1p1f1", "r10i1p1f1"] {
            for year in 2004..=2006 {
                let f = all.iter().find(|f| f.var == var && f.member == member && f.year == year).unwrap();
                in_order.push(dir.path().join(f.name()));
            }
        }
        assert_values(&appended, var, &in_order);
    }

    // New years for only some members: refused, the store unchanged.
    let before = snapshot(&appended);
    let partial: Vec<CmipFile> =
        all.iter().map(|f| CmipFile { year: 2007, ..f.clone() }).filter(|f| f.member != "r2i1p1f1").collect();
    let run = append(&appended, &cmip_paths(dir.path(), &partial));
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.contains("r2i1p1f1") && run.stderr.lines().count() == 1, "{}", run.stderr);
    assert_eq!(snapshot(&appended), before);
}

#[test]
fn append_works_with_the_older_files_moved_away() {
    let dir = tempfile::tempdir().unwrap();
    let files = write_series(dir.path(), &yearly(2001..=2004, 61));
    let (appended, fresh) = (dir.path().join("appended.vzarr"), dir.path().join("fresh.vzarr"));
    scan(&files, &fresh, &["time"]);
    scan(&files[..3], &appended, &["time"]);
    let aside = dir.path().join("aside");
    std::fs::create_dir(&aside).unwrap();
    for f in &files[..2] {
        std::fs::rename(f, aside.join(f.file_name().unwrap())).unwrap();
    }
    let run = append(&appended, &files[3..]);
    assert_eq!(run.code, 0, "append failed: {}", run.stderr);
    for f in &files[..2] {
        std::fs::rename(aside.join(f.file_name().unwrap()), f).unwrap();
    }
    assert_same_store(&appended, &fresh);
    assert_values(&appended, "tas", &files);
}

/// Scans the first three yearly files, then tries to append `bad`: exit 1, one line naming `file_hint`
/// and `problem_hint`, the store unchanged.
fn assert_refused(dir: &Path, store: &Path, bad: &[PathBuf], hints: &[&str]) {
    let before = snapshot(store);
    let run = append(store, bad);
    assert_eq!(run.code, 1, "expected a refusal: {}", run.stderr);
    let lines: Vec<&str> = run.stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "one line: {}", run.stderr);
    for hint in hints {
        assert!(lines[0].contains(hint), "{hint:?} not in {:?}", lines[0]);
    }
    assert_eq!(snapshot(store), before, "the store changed");
    assert!(crate::common::dir_entries(dir).iter().all(|n| !n.starts_with(".store")), "staging left behind");
}

#[test]
fn refused_appends_leave_the_store_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let files = write_series(dir.path(), &yearly(2001..=2003, 61));
    let store = dir.path().join("store.vzarr");
    scan(&files, &store, &["time"]);
    let bad = dir.path().join("bad");
    std::fs::create_dir(&bad).unwrap();
    let next = || yearly(2004..=2004, 61).remove(0);
    let write = |f: SeriesFile| write_series_file(&bad, &f);

    let mut overlap = next();
    overlap.first_day -= 10;
    overlap.name = "overlap.nc".into();
    assert_refused(dir.path(), &store, &[write(overlap)], &["overlap.nc", "overlap"]);
    let mut before = yearly(2000..=2000, 61).remove(0);
    before.name = "early.nc".into();
    assert_refused(dir.path(), &store, &[write(before)], &["early.nc", "not after the store's end"]);
    let mut gap = yearly(2005..=2005, 61).remove(0);
    gap.name = "gap.nc".into();
    assert_refused(dir.path(), &store, &[write(gap)], &["gap.nc", "--allow-gaps"]);
    let mut units = next();
    units.name = "units.nc".into();
    units.tas_text = vec![("units", "degC")];
    assert_refused(dir.path(), &store, &[write(units)], &["units.nc", "tas", "units"]);
    let mut extra = next();
    extra.name = "extra.nc".into();
    extra.with_pr = true;
    assert_refused(dir.path(), &store, &[write(extra)], &["pr"]);
    let mut double = next();
    double.name = "double.nc".into();
    double.tas_f64 = true;
    assert_refused(dir.path(), &store, &[write(double)], &["double.nc", "tas", "data type float64"]);
    let mut chunks = next();
    chunks.name = "chunks.nc".into();
    chunks.chunk_yx = (10, 12);
    assert_refused(dir.path(), &store, &[write(chunks)], &["chunks.nc", "tas", "chunking"]);
    let mut calendar = next();
    calendar.name = "calendar.nc".into();
    calendar.calendar = "noleap";
    assert_refused(dir.path(), &store, &[write(calendar)], &["calendar.nc", "calendar"]);
    assert_refused(dir.path(), &store, &[files[2].clone()], &["already in the store"]);

    // A gap is accepted when asked for, and recorded.
    let mut gap = yearly(2005..=2005, 61).remove(0);
    gap.name = "gap2.nc".into();
    let run = cli(&["append", store.to_str().unwrap(), write(gap).to_str().unwrap(), "--allow-gaps"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stderr.contains("gap"), "{}", run.stderr);
}

#[test]
fn a_changed_last_file_or_a_store_without_its_recipe_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let files = write_series(dir.path(), &yearly(2001..=2003, 61));
    let store = dir.path().join("store.vzarr");
    scan(&files[..2], &store, &["time"]);
    // The last stored file rewritten since the scan.
    let rewritten = yearly(2002..=2002, 61).remove(0);
    std::thread::sleep(std::time::Duration::from_millis(20));
    write_series_file(dir.path(), &rewritten);
    assert_refused(dir.path(), &store, &files[2..], &["tas_2002.nc", "changed since the store was written"]);
    // A store written before appending existed has no recipe.
    let other = dir.path().join("old.vzarr");
    scan(&files[..1], &other, &["time"]);
    let info_path = other.join("vzarr.json");
    let mut info: serde_json::Value = serde_json::from_slice(&std::fs::read(&info_path).unwrap()).unwrap();
    info["provenance"].as_object_mut().unwrap().remove("recipe");
    std::fs::write(&info_path, serde_json::to_string_pretty(&info).unwrap()).unwrap();
    assert_refused(dir.path(), &other, &files[1..2], &["old.vzarr", "does not record how it was combined"]);
    // Not a store at all.
    let run = append(&dir.path().join("missing.vzarr"), &files[2..]);
    assert!(run.code == 1 && run.stderr.contains("missing.vzarr: no such store"), "{}", run.stderr);
    let run = append(&files[0], &files[2..]);
    assert!(run.code == 1 && run.stderr.contains("not a native vzarr store"), "{}", run.stderr);
}

#[test]
fn an_append_killed_before_the_exchange_leaves_the_old_store() {
    let dir = tempfile::tempdir().unwrap();
    let files = write_series(dir.path(), &yearly(2001..=2003, 61));
    let store = dir.path().join("store.vzarr");
    scan(&files[..2], &store, &["time"]);
    let before = snapshot(&store);
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_vzarr"));
    command.arg("append").arg(&store).arg(&files[2]).env("VZARR_TEST_CRASH_AT", "staged");
    let run = crate::common::run(command);
    assert_ne!(run.code, 0, "the append was to be killed");
    assert_eq!(snapshot(&store), before, "the store changed");
    assert_values(&store, "tas", &files[..2]);
    // The next append removes the dead one's staging and succeeds.
    assert_eq!(append(&store, &files[2..]).code, 0);
    assert!(crate::common::dir_entries(dir.path()).iter().all(|n| !n.starts_with(".store")), "staging left");
    assert_values(&store, "tas", &files);
}

#[test]
fn a_concurrent_append_is_refused_and_changes_nothing() {
    use std::os::fd::AsRawFd;
    let dir = tempfile::tempdir().unwrap();
    let files = write_series(dir.path(), &yearly(2001..=2002, 61));
    let store = dir.path().join("store.vzarr");
    scan(&files[..1], &store, &["time"]);
    // Another append holds the store's lock.
    let held = std::fs::File::open(&store).unwrap();
    // SAFETY: flock on a descriptor this test owns.
    assert_eq!(unsafe { libc::flock(held.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) }, 0);
    assert_refused(dir.path(), &store, &files[1..], &["store.vzarr", "another append to this store is running"]);
    drop(held);
    assert_eq!(append(&store, &files[1..]).code, 0);
    assert_values(&store, "tas", &files);
}

#[test]
fn gaps_in_a_store_of_two_groups_and_three_members_are_noted_as_a_fresh_scan_notes_them() {
    let dir = tempfile::tempdir().unwrap();
    // 2003 and 2005 stored (a gap), 2007 appended (another gap): a store with gaps takes new ones.
    let all: Vec<CmipFile> = cmip_archive()
        .into_iter()
        .filter(|f| f.year == 2003)
        .flat_map(|f| [2003, 2005, 2007].map(|year| CmipFile { year, ..f.clone() }))
        .collect();
    let (old, new): (Vec<CmipFile>, Vec<CmipFile>) = all.iter().cloned().partition(|f| f.year < 2007);
    let (old_paths, new_paths) = (cmip_paths(dir.path(), &old), cmip_paths(dir.path(), &new));
    let concat = ["member=attr:variant_label", "time"];
    let (appended, fresh) = (dir.path().join("appended.vzarr"), dir.path().join("fresh.vzarr"));
    scan(&old_paths, &appended, &concat);
    let run = append(&appended, &new_paths);
    assert_eq!(run.code, 0, "append failed: {}", run.stderr);
    let every: Vec<PathBuf> = old_paths.iter().chain(&new_paths).cloned().collect();
    scan(&every, &fresh, &concat);
    assert_same_store(&appended, &fresh);
    let info: serde_json::Value = serde_json::from_slice(&std::fs::read(appended.join("vzarr.json")).unwrap()).unwrap();
    assert_eq!(info["provenance"]["gaps"].as_array().map(Vec::len), Some(4), "two gap notes per group");
    let mut in_order = Vec::new();
    for member in ["r1i1p1f1", "r2i1p1f1", "r10i1p1f1"] {
        for year in [2003, 2005, 2007] {
            let f = all.iter().find(|f| f.var == "pr" && f.member == member && f.year == year).unwrap();
            in_order.push(dir.path().join(f.name()));
        }
    }
    assert_values(&appended, "pr", &in_order);
}

#[test]
fn append_to_a_store_of_objects_on_s3() {
    let Some(server) = crate::common::servers::S3Server::start() else {
        assert!(!crate::interop::python_required(), "VZARR_REQUIRE_PYTHON=1 but moto_server is not installed");
        eprintln!("notice: moto_server is not installed (run tests/python/setup.sh); S3 append test not run");
        return;
    };
    let months = ["tas_2023-01.nc", "tas_2023-02.nc", "tas_2023-03.nc", "tas_2023-04.nc"];
    let local = server.upload_samples("archive", &months);
    let run = |args: &[&str]| server.vzarr(args);
    let dir = tempfile::tempdir().unwrap();
    let (appended, fresh) = (dir.path().join("appended.vzarr"), dir.path().join("fresh.vzarr"));
    let s = |p: &Path| p.display().to_string();
    let scan = run(&["scan", "s3://archive/tas_2023-0[1-3].nc", "--concat", "time", "-o", &s(&appended)]);
    assert_eq!(scan.code, 0, "{}", scan.stderr);
    let append = run(&["append", &s(&appended), "s3://archive/tas_2023-04.nc"]);
    assert_eq!(append.code, 0, "{}", append.stderr);
    let scan = run(&["scan", "s3://archive/tas_2023-0*.nc", "--concat", "time", "-o", &s(&fresh)]);
    assert_eq!(scan.code, 0, "{}", scan.stderr);
    assert_same_store(&appended, &fresh);
    let npy = dir.path().join("tas.npy");
    let read = run(&["read", &s(&appended), "tas", "-o", &s(&npy)]);
    assert_eq!(read.code, 0, "{}", read.stderr);
    let ours = crate::common::parse_npy(&std::fs::read(&npy).unwrap());
    let theirs: Vec<u8> = local.iter().flat_map(|p| oracle(p, "tas")).collect();
    assert!(ours.data == theirs, "tas over S3 equals libnetcdf's reads of the files");
}

/// Files appended from another directory are read like the scanned ones: append adds their container
/// to the trust list as scan does, so `verify` (every value against libnetcdf, through the trust list)
/// passes without --allow-source.
#[test]
fn appended_sources_in_a_new_directory_are_trusted() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("base");
    std::fs::create_dir(&base).unwrap();
    let files = write_series(&base, &yearly(2001..=2004, 61));
    // A sibling of the scanned files' directory: a container of its own.
    let incoming = dir.path().join("incoming");
    std::fs::create_dir(&incoming).unwrap();
    let moved = incoming.join(files[3].file_name().unwrap());
    std::fs::rename(&files[3], &moved).unwrap();
    let store = dir.path().join("store.vzarr");
    scan(&files[..3], &store, &["time"]);
    let run = append(&store, std::slice::from_ref(&moved));
    assert_eq!(run.code, 0, "append failed: {}", run.stderr);
    assert!(run.stderr.contains(&format!("{}/", incoming.display())), "the new container is trusted: {}", run.stderr);
    let verify = cli(&["verify".into(), store.display().to_string()]);
    assert_eq!(verify.code, 0, "verify of the appended store: {}{}", verify.stdout, verify.stderr);
    assert!(!verify.stdout.contains("FAIL"), "{}", verify.stdout);
}

/// A non-finite attribute (written as the bare token `NaN`, as zarr-python writes it) is read back
/// by the append and kept: the appended store equals a fresh scan and reads as libnetcdf reads.
#[test]
fn a_nan_attribute_survives_an_append() {
    let dir = tempfile::tempdir().unwrap();
    let mut series = monthly(2001..=2001, Some(10), false)[..4].to_vec();
    for f in &mut series {
        f.tas_numbers = vec![("valid_nan", f64::NAN), ("scale", 2.5)];
    }
    let files = write_series(dir.path(), &series);
    let store = append_equals_fresh(dir.path(), &files, 2, &files[2..]);
    let doc = std::fs::read_to_string(store.join("tas/zarr.json")).unwrap();
    assert!(doc.contains("\"valid_nan\": NaN"), "{doc}");
    for var in ["tas", "time"] {
        assert_values(&store, var, &files);
    }
}
