//! The BES parity harness (issue 51): every pair of OPeNDAP BES's test data (`../shared/dmrpp`, a
//! data file and the sidecar BES's `get_dmrpp` wrote for it), three ways:
//! 1. the file scanned, written as a native store and proven by `verify` (libhdf5 / libhdf4 reading
//!    the file);
//! 2. the sidecar scanned, written and proven against the same file;
//! 3. vzarr's own sidecar of the file (`DmrppWriter`) compared with BES's variable by variable
//!    (`bes_sidecar::compare`: type, shape, members, filters, deflate level, fill value, byte order,
//!    chunk shape, every chunk's position, offset and size, compact data, string layout, the
//!    `_FillValue` attribute).
//!
//! The table printed names each pair's outcome and its first problem; the outcomes must equal
//! `tests/dmrpp/bes_expected.tsv`, so a regression and an improvement alike fail until the list is
//! updated (`VZARR_UPDATE_BES_EXPECTED=1` rewrites it from this run).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::bes_sidecar;
use crate::common::{no_hdf5_files_open, scan};
use vzarr::dataset::VirtualDataset;
use vzarr::formats::DmrppWriter;
use vzarr::pipeline::{write_dataset, Format, Output};
use vzarr::read::blocking::BlockingStore;
use vzarr::read::Authorization;
use vzarr::verify::OracleMode;
use vzarr::ScanOptions;
use vzarr::{WriteOptions, Writer};

/// libhdf4 is not thread-safe: the oracle's reads of HDF4 files take turns.
static LIBHDF4: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The BES test data beside the repository (`<repo>/../shared/dmrpp`), or `VZARR_BES_ROOT`: the same
/// five folders taken whole from a BES checkout (the table is then printed, not compared).
pub fn bes_root() -> PathBuf {
    let root = match std::env::var_os("VZARR_BES_ROOT") {
        Some(root) => PathBuf::from(root),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/dmrpp"),
    };
    assert!(
        root.join("SOURCES.txt").is_file(),
        "BES test data missing: expected {} (a copy of shared/ beside the clone)",
        root.display()
    );
    root
}

/// Every pair: (name as `subfolder/file`, sidecar, data file), sorted by name.
pub fn bes_pairs() -> Vec<(String, PathBuf, PathBuf)> {
    let root = bes_root();
    let mut pairs = Vec::new();
    for dir in ["dmrpp", "fill_value", "string_arrays", "h4_dmrpp", "deflate_twice"] {
        let entries = std::fs::read_dir(root.join(dir)).unwrap_or_else(|e| panic!("{}/{dir}: {e}", root.display()));
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().is_some_and(|e| e == "dmrpp") {
                let data = path.with_extension("");
                let name = format!("{dir}/{}", data.file_name().unwrap_or_default().to_string_lossy());
                pairs.push((name, path.clone(), data));
            }
        }
    }
    pairs.sort();
    pairs
}

fn lenient() -> ScanOptions {
    ScanOptions { skip_unsupported: true, ..Default::default() }
}

/// How a scan and its proof ended.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Outcome {
    /// Every variable scanned and proven (an attribute may be left out, named in a warning).
    Ok,
    /// Some variables left out (named in warnings); the rest proven.
    Partial,
    /// The scan failed.
    Refused,
    /// A value differs from the oracle's.
    Wrong,
    /// Some variable could not be compared with the oracle.
    Unverified,
}

impl Outcome {
    fn name(&self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Partial => "partial",
            Outcome::Refused => "refused",
            Outcome::Wrong => "wrong",
            Outcome::Unverified => "unverified",
        }
    }
}

/// One pair's row.
struct Row {
    pair: String,
    file: Outcome,
    sidecar: Outcome,
    /// `equal`, `differs`, or `none` (no file scan to write from).
    out: &'static str,
    /// The first problem, in the order file, sidecar, vzarr's sidecar.
    reason: String,
}

impl Row {
    fn key(&self) -> String {
        format!("{}\t{}\t{}\t{}", self.pair, self.file.name(), self.sidecar.name(), self.out)
    }
}

/// Proves `dataset` with `verify`: the outcome and the first problem.
fn prove(dataset: &VirtualDataset, hdf4: bool) -> (Outcome, Option<String>) {
    let dir = tempfile::tempdir().expect("temporary directory");
    let store_path = dir.path().join("store.vzarr");
    let written = match write_dataset(dataset, &Output::new(&store_path, Format::Native)) {
        Ok(w) => w,
        Err(e) => return (Outcome::Unverified, Some(format!("writing the store: {e}"))),
    };
    let store = match BlockingStore::open(
        store_path.to_str().expect("UTF-8 path"),
        &Authorization::new(written.source_containers()),
    ) {
        Ok(s) => s,
        Err(e) => return (Outcome::Unverified, Some(format!("opening the store: {e}"))),
    };
    let runtime = vzarr::pipeline::runtime().expect("a tokio runtime");
    let _turn = hdf4.then(|| LIBHDF4.lock().unwrap_or_else(|e| e.into_inner()));
    // The oracle runs in a child process (`vzarr-oracle`): libnetcdf crashes this process on
    // some of BES's files (FValue_string.h5: SIGSEGV reading it in process).
    let mode = OracleMode::Worker {
        program: PathBuf::from(env!("CARGO_BIN_EXE_vzarr-oracle")),
        timeout: std::time::Duration::from_secs(60),
    };
    let verdicts = {
        let _no_open_files = no_hdf5_files_open();
        runtime.block_on(vzarr::verify::verify_store_with_oracle(
            store.as_async(),
            &Default::default(),
            &mode,
            &|_, _, _| {},
        ))
    };
    let verdicts = match verdicts {
        Ok(v) => v,
        Err(e) => return (Outcome::Unverified, Some(format!("verify: {e}"))),
    };
    if let Some(v) = verdicts.iter().find(|v| v.mismatches > 0) {
        let first = v.first_mismatch.clone().unwrap_or_default();
        return (Outcome::Wrong, Some(format!("{}: {} of {} differ: {first}", v.path, v.mismatches, v.elements)));
    }
    if let Some(v) = verdicts.iter().find(|v| v.error.is_some()) {
        return (Outcome::Unverified, Some(format!("{}: {}", v.path, v.error.clone().unwrap_or_default())));
    }
    (Outcome::Ok, None)
}

/// A scan, then its proof; `Partial` when some variable was left out (or, for a sidecar, when the
/// file's scan has variables the sidecar's lacks).
fn scan_and_prove(
    path: &Path,
    hdf4: bool,
    file_scan: Option<&VirtualDataset>,
) -> (Outcome, Option<String>, Option<VirtualDataset>) {
    let dataset = match scan(path, &lenient()) {
        Ok(d) => d,
        Err(e) => return (Outcome::Refused, Some(one_line(&e.to_string())), None),
    };
    let (outcome, problem) = prove(&dataset, hdf4);
    if outcome != Outcome::Ok {
        return (outcome, problem, Some(dataset));
    }
    // A warning about a variable the scan kept (an attribute the sidecar gives no values for, as
    // BES's `type="null"`) leaves nothing out of the arrays; one about a variable it left out does.
    if let Some(w) = dataset.warnings.iter().find(|w| dataset.array(&w.variable).is_none()) {
        return (Outcome::Partial, Some(one_line(&format!("{}: {}", w.variable, w.message))), Some(dataset));
    }
    // BES names variables for DAP (`Data_Fields` for the group `Data Fields`) and records the HDF5
    // path in `fullnamepath`, which the scan keeps as the array's `source_path`.
    let held = |path: &str| {
        dataset.array(path).is_some()
            || dataset.arrays.iter().any(|a| a.metadata.notes.source_path.as_deref() == Some(path))
    };
    if let Some(missing) = file_scan.and_then(|f| f.arrays.iter().find(|a| !held(&a.path))) {
        let reason = format!("{}: in the file's scan, not in the sidecar's", missing.path);
        return (Outcome::Partial, Some(reason), Some(dataset));
    }
    let note = dataset.warnings.first().map(|w| one_line(&format!("{}: {}", w.variable, w.message)));
    (Outcome::Ok, note, Some(dataset))
}

/// A message without the machine's directories (the rows are committed).
fn one_line(text: &str) -> String {
    let root = bes_root();
    let root = std::path::absolute(&root).unwrap_or(root);
    let text = text.replace(&format!("{}/", root.display()), "").replace(&format!("{}/", bes_root().display()), "");
    text.lines().next().unwrap_or_default().replace('\t', " ")
}

/// vzarr's sidecar of the file compared with BES's: `equal`, or `differs` and the first difference.
fn compare_sidecars(dataset: &VirtualDataset, bes_sidecar: &Path) -> (&'static str, Option<String>) {
    let dir = tempfile::tempdir().expect("temporary directory");
    let ours = dir.path().join("ours.dmrpp");
    if let Err(e) = DmrppWriter::default().write(dataset, &ours, &WriteOptions::default()) {
        return ("differs", Some(format!("writing vzarr's sidecar: {}", one_line(&e.to_string()))));
    }
    let read = |p: &Path| std::fs::read(p).map(|b| String::from_utf8_lossy(&b).into_owned());
    let (Ok(ours), Ok(theirs)) = (read(&ours), read(bes_sidecar)) else {
        return ("differs", Some("a sidecar cannot be read".into()));
    };
    let parsed = bes_sidecar::parse(&ours).map_err(|e| format!("vzarr's sidecar: {e}"));
    let theirs = bes_sidecar::parse(&theirs).map_err(|e| format!("BES's sidecar: {e}"));
    match (parsed, theirs) {
        (Ok(a), Ok(b)) => match bes_sidecar::compare(&a, &b) {
            None => ("equal", None),
            Some(d) => ("differs", Some(d)),
        },
        (Err(e), _) | (_, Err(e)) => ("differs", Some(e)),
    }
}

fn row(pair: &str, sidecar: &Path, data: &Path) -> Row {
    let hdf4 = data.extension().is_some_and(|e| e == "hdf");
    let (file, file_problem, file_scan) = scan_and_prove(data, hdf4, None);
    let (from_sidecar, sidecar_problem, _) = scan_and_prove(sidecar, hdf4, file_scan.as_ref());
    let (out, out_problem) = match &file_scan {
        Some(d) => compare_sidecars(d, sidecar),
        None => ("none", Some("no file scan to write a sidecar from".into())),
    };
    let reason = [file_problem.map(|p| format!("file: {p}")), sidecar_problem.map(|p| format!("sidecar: {p}"))]
        .into_iter()
        .chain([out_problem.map(|p| format!("out: {p}"))])
        .flatten()
        .collect::<Vec<_>>()
        .join("; ");
    Row { pair: pair.to_string(), file, sidecar: from_sidecar, out, reason: one_line(&reason) }
}

const EXPECTED: &str = "tests/dmrpp/bes_expected.tsv";
const HEADER: &str = "# pair\tfile scan+verify\tsidecar scan+verify\tvzarr's sidecar vs BES's\treason (first problem)";

#[test]
fn bes_pairs_parity_table() {
    let pairs = bes_pairs();
    assert!(pairs.len() >= 70, "{}: only {} pairs", bes_root().display(), pairs.len());
    let rows: Vec<Row> = pairs.iter().map(|(name, sidecar, data)| row(name, sidecar, data)).collect();
    let mut table = String::new();
    for r in &rows {
        writeln!(table, "{}\t{}", r.key(), r.reason).ok();
    }
    let count = |f: &dyn Fn(&Row) -> bool| rows.iter().filter(|r| f(r)).count();
    let file_ok = count(&|r| r.file == Outcome::Ok);
    let sidecar_ok = count(&|r| r.sidecar == Outcome::Ok);
    let equal = count(&|r| r.out == "equal");
    let summary = format!(
        "{} pairs: files scan+verify {file_ok}, sidecars scan+verify {sidecar_ok}, vzarr's sidecars equal BES's {equal}",
        rows.len()
    );
    eprintln!("{table}{summary}");
    if std::env::var_os("VZARR_BES_ROOT").is_some() {
        return; // another set than the pinned one: the table is the result
    }
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(EXPECTED);
    if std::env::var_os("VZARR_UPDATE_BES_EXPECTED").is_some() {
        std::fs::write(&path, format!("{HEADER}\n# {summary}\n{table}")).expect("writing the expected table");
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let expected: Vec<String> = expected
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| l.splitn(5, '\t').take(4).collect::<Vec<_>>().join("\t"))
        .collect();
    let observed: Vec<String> = rows.iter().map(Row::key).collect();
    let changed: Vec<String> = observed
        .iter()
        .filter(|o| !expected.contains(o))
        .map(|o| format!("now:      {o}"))
        .chain(expected.iter().filter(|e| !observed.contains(e)).map(|e| format!("expected: {e}")))
        .collect();
    assert!(
        changed.is_empty(),
        "{summary}\nthe parity table differs from {EXPECTED} (VZARR_UPDATE_BES_EXPECTED=1 rewrites it):\n{}",
        changed.join("\n")
    );
}
