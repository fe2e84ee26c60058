//! Hostile HDF5 input: crafted structures (a B-tree that points at itself, extents of 2^40, chunks
//! past the end of the file, truncations) and a byte-flip campaign over the sample files. Each input
//! gives exactly one of: a one-line error naming the file, or a dataset whose unchanged arrays read
//! exactly libhdf5's values of the original file. Never a panic, a hang or an abort: the campaign runs
//! in a child process with an address-space limit and a deadline, so a regression fails the test
//! instead of taking the machine down.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use vzarr::{NativeWriter, ScanOptions, VirtualDataset, WriteOptions, Writer};

use super::fixture;
use crate::common::hdf5_oracle::read_native;
use crate::common::{no_hdf5_files_open, open_store, try_read};

/// Scans `path` on its own thread; Err(description) for a panic or when it runs past `limit`.
fn scan_guarded(path: &Path, limit: Duration) -> Result<Result<VirtualDataset, String>, String> {
    let (tx, rx) = mpsc::channel();
    let owned = path.to_path_buf();
    std::thread::spawn(move || {
        let result = std::panic::catch_unwind(|| vzarr::scan_file(&owned, &ScanOptions::default()));
        let _ = tx.send(result.map(|r| r.map_err(|e| e.to_string())).map_err(|_| "panicked".to_string()));
    });
    match rx.recv_timeout(limit) {
        Ok(outcome) => outcome,
        Err(_) => Err(format!("no answer after {limit:?}: hang")),
    }
}

/// One input's outcome is acceptable: a one-line error naming the file, or a scan.
pub(super) fn check_outcome(path: &Path, what: &str) -> Result<Option<VirtualDataset>, String> {
    match scan_guarded(path, Duration::from_secs(20)).map_err(|e| format!("{what}: {e}"))? {
        Ok(dataset) => Ok(Some(dataset)),
        Err(message) if message.contains("internal error") => Err(format!("{what}: {message}")),
        Err(message) if message.contains(&path.display().to_string()) && !message.contains('\n') => Ok(None),
        Err(message) => Err(format!("{what}: error is not one line naming the file: {message:?}")),
    }
}

pub(super) fn patched(dir: &Path, name: &str, original: &[u8], patch: impl FnOnce(&mut Vec<u8>)) -> PathBuf {
    let mut bytes = original.to_vec();
    patch(&mut bytes);
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

pub(super) fn positions(haystack: &[u8], needle: &[u8]) -> Vec<usize> {
    haystack.windows(needle.len()).enumerate().filter(|(_, w)| *w == needle).map(|(i, _)| i).collect()
}

fn expect_error(path: &Path, what: &str, needle: &str) {
    let message = match scan_guarded(path, Duration::from_secs(20)) {
        Ok(Err(message)) => message,
        other => panic!("{what}: expected an error, got {:?}", other.map(|r| r.map(|_| "a dataset"))),
    };
    assert!(message.contains(&path.display().to_string()) && !message.contains('\n'), "{what}: {message}");
    assert!(message.contains(needle), "{what}: {message:?} should say {needle:?}");
}

#[test]
fn a_b_tree_pointing_at_itself_is_an_error() {
    let original = std::fs::read(fixture("libver_earliest.h5")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let trees = positions(&original, b"TREE");
    assert!(!trees.is_empty());
    for (i, &at) in trees.iter().enumerate() {
        // Level 1, one entry, whose child is the node itself: a cycle (v1 B-tree node: signature, type,
        // level, entries used, two sibling addresses, then key 0 and child 0).
        let path = patched(dir.path(), &format!("cycle{i}.h5"), &original, |b| {
            b[at + 5] = 1;
            b[at + 6..at + 8].copy_from_slice(&1u16.to_le_bytes());
            let key = if b[at + 4] == 0 { 8 } else { 8 + 8 * 4 };
            let child = at + 24 + key;
            b[child..child + 8].copy_from_slice(&(at as u64).to_le_bytes());
        });
        check_outcome(&path, &format!("B-tree at {at} pointing at itself")).unwrap();
    }
}

#[test]
fn extents_of_2_pow_40_are_refused_before_any_allocation() {
    let original = std::fs::read(fixture("libver_earliest.h5")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    // `sparse` is 20 x 20 in chunks of 5 x 5: make its extent (and maximum) 2^40 x 20.
    let twenty: Vec<u8> = [20u64.to_le_bytes(), 20u64.to_le_bytes()].concat();
    let path = patched(dir.path(), "huge.h5", &original, |b| {
        for at in positions(&original, &twenty) {
            b[at..at + 8].copy_from_slice(&(1u64 << 40).to_le_bytes());
        }
    });
    expect_error(&path, "2^40 x 20 extent", "sparse: shape [1099511627776,");
}

#[test]
fn chunks_past_the_end_of_the_file_are_an_error() {
    let original = std::fs::read(fixture("libver_earliest.h5")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    // Point the first chunk of each raw-data v1 B-tree leaf past the end of the file. The key before
    // the child address is 8 + 8 * (rank + 1) bytes; ranks 1 to 3 occur in the file.
    let beyond = (original.len() as u64 + 4096).to_le_bytes();
    let whole = vzarr::scan_file(&fixture("libver_earliest.h5"), &ScanOptions::default()).unwrap();
    let mut refused = 0;
    for (i, &at) in positions(&original, b"TREE").iter().enumerate() {
        if original[at + 4] != 1 || original[at + 5] != 0 {
            continue;
        }
        for rank in 1..=3 {
            let child = at + 24 + 8 + 8 * (rank + 1);
            let path = patched(dir.path(), &format!("beyond{i}_{rank}.h5"), &original, |b| {
                b[child..child + 8].copy_from_slice(&beyond);
            });
            let what = format!("B-tree leaf at {at}, rank {rank}");
            if check_outcome(&path, &what).unwrap().is_none() {
                let message = vzarr::scan_file(&path, &ScanOptions::default()).unwrap_err().to_string();
                if message.contains("past the end of the file") {
                    refused += 1;
                    skipping_leaves_out_only_that_variable(&path, &whole, &message);
                }
            }
        }
    }
    assert!(refused > 0, "some chunk past the end was named as such");
}

/// Under `--skip-unsupported` the variable whose chunk lies past the end is left out with a warning
/// naming the problem, and every other array keeps the references of the intact file.
fn skipping_leaves_out_only_that_variable(path: &Path, whole: &VirtualDataset, refusal: &str) {
    let options = ScanOptions { skip_unsupported: true, ..ScanOptions::default() };
    let skipped = vzarr::scan_file(path, &options).unwrap_or_else(|e| panic!("{refusal}\nthen with skipping: {e}"));
    let [warning] = skipped.warnings.as_slice() else { panic!("one warning: {:?}", skipped.warnings) };
    assert!(warning.message.contains("past the end of the file"), "{}", warning.message);
    assert!(refusal.contains(&warning.variable), "{refusal} names {}", warning.variable);
    for array in &whole.arrays {
        match skipped.array(&array.path) {
            Some(kept) => assert_eq!(kept.chunks, array.chunks, "{}", array.path),
            None => assert_eq!(array.path, warning.variable),
        }
    }
}

/// The campaign itself, run by [`byte_flip_campaign`] in a child process (this binary, this test,
/// `VZARR_CAMPAIGN=1`).
#[test]
#[ignore = "worker of byte_flip_campaign, which runs it in a limited child process"]
fn campaign_worker() {
    assert!(std::env::var_os("VZARR_CAMPAIGN").is_some(), "run by byte_flip_campaign");
    let dir = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    let mut counts = (0usize, 0usize);
    let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/sample/tas_2023-01.nc");
    let files = [sample, fixture("libver_earliest.h5"), fixture("libver_v114.h5"), fixture("libver_latest.h5")];
    for source in &files {
        let original = std::fs::read(source).unwrap();
        let pristine = vzarr::scan_file(source, &ScanOptions::default()).unwrap();
        for (i, mutation) in mutations(source, &original, &pristine).into_iter().enumerate() {
            let name = format!("m{i}_{}", source.file_name().unwrap().to_string_lossy());
            let path = patched(dir.path(), &name, &original, |b| mutation.apply(b));
            let what = format!("{} {mutation:?}", source.display());
            match check_outcome(&path, &what) {
                Err(failure) => failures.push(failure),
                Ok(None) => counts.0 += 1,
                Ok(Some(dataset)) => {
                    counts.1 += 1;
                    if i % 8 == 0 {
                        if let Err(failure) = read_back(&path, source, &dataset, &pristine) {
                            failures.push(format!("{what}: {failure}"));
                        }
                    }
                }
            }
        }
    }
    println!("campaign: {} inputs refused with one-line errors, {} scanned", counts.0, counts.1);
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

#[derive(Debug, Clone, Copy)]
enum Mutation {
    Set(usize, u8),
    Truncate(usize),
}

impl Mutation {
    fn apply(self, bytes: &mut Vec<u8>) {
        match self {
            Mutation::Set(at, value) => bytes[at] = value,
            Mutation::Truncate(len) => bytes.truncate(len),
        }
    }
}

/// The faults of the campaign: the two of the fault report (sample file, bytes 8930 and 8776), then
/// deterministic pseudo-random byte changes outside chunk data, and truncations.
fn mutations(source: &Path, original: &[u8], pristine: &VirtualDataset) -> Vec<Mutation> {
    let mut out = Vec::new();
    if source.ends_with("tas_2023-01.nc") {
        out.extend([Mutation::Set(8930, 0x15), Mutation::Set(8776, 0xD2)]);
    }
    let data: Vec<(u64, u64)> = pristine
        .arrays
        .iter()
        .flat_map(|a| a.chunks.iter())
        .filter_map(|e| match e {
            vzarr::dataset::ChunkEntry::Source { offset, length, .. } => Some((offset, offset + length)),
            _ => None,
        })
        .collect();
    let is_data = |at: u64| data.iter().any(|&(start, end)| (start..end).contains(&at));
    let mut state = 0x9E37_79B9_7F4A_7C15u64 ^ original.len() as u64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    while out.len() < 160 {
        let at = (next() % original.len() as u64) as usize;
        let flip = (next() % 255 + 1) as u8;
        if !is_data(at as u64) {
            out.push(Mutation::Set(at, original[at] ^ flip));
        }
    }
    out.extend((1..24).map(|k| Mutation::Truncate(original.len() * k / 24)));
    out
}

/// Writes the mutant's store and reads every array: reads must not panic; an array whose metadata and
/// references are those of the original file reads libhdf5's values of the original file.
fn read_back(path: &Path, source: &Path, dataset: &VirtualDataset, pristine: &VirtualDataset) -> Result<(), String> {
    let store_path = path.with_extension("vzarr");
    NativeWriter.write(dataset, &store_path, &WriteOptions::default()).map_err(|e| e.to_string())?;
    let store = open_store(&store_path);
    for array in &dataset.arrays {
        let read = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| try_read(&store, &array.path, "")));
        let Ok(read) = read else { return Err(format!("{}: read panicked", array.path)) };
        let unchanged =
            pristine.array(&array.path).is_some_and(|p| p.metadata == array.metadata && p.chunks == array.chunks);
        if let (Ok(values), true) = (read, unchanged) {
            // libhdf5 1.10 reads no dataset of the HDF5 2.0 file: its v114 twin holds the same values.
            let oracle =
                if source.ends_with("libver_latest.h5") { fixture("libver_v114.h5") } else { source.to_path_buf() };
            let theirs = read_native(&oracle, &array.path, values.bytes.len());
            if values.bytes != theirs {
                return Err(format!("{}: unchanged array reads other values than libhdf5", array.path));
            }
        }
    }
    std::fs::remove_dir_all(&store_path).map_err(|e| e.to_string())
}

#[test]
fn byte_flip_campaign() {
    run_limited_worker("native_hdf5::hostile::campaign_worker", Duration::from_secs(300));
}

/// Runs the ignored test `worker` of this binary in a child process whose address space is capped
/// at 6 GiB, failing when it fails, panics or runs past `deadline`; the worker prints `campaign: `.
pub(super) fn run_limited_worker(worker: &str, deadline: Duration) {
    let exe = std::env::current_exe().unwrap();
    let mut command = std::process::Command::new(exe);
    command.args(["--exact", worker, "--ignored", "--test-threads=1", "--nocapture"]).env("VZARR_CAMPAIGN", "1");
    // SAFETY: setrlimit is async-signal-safe; the closure touches nothing else.
    unsafe {
        use std::os::unix::process::CommandExt;
        command.pre_exec(|| {
            let limit = libc::rlimit { rlim_cur: 6 << 30, rlim_max: 6 << 30 };
            if libc::setrlimit(libc::RLIMIT_AS, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child = {
        let _no_files = no_hdf5_files_open();
        command.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().unwrap()
    };
    let started = Instant::now();
    let output = wait_with_deadline(child, deadline);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{worker} failed after {:?}:\n{stdout}\n{}",
        started.elapsed(),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("campaign: "), "the worker ran: {stdout}");
    println!("{stdout}");
}

fn wait_with_deadline(mut child: std::process::Child, deadline: Duration) -> std::process::Output {
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > deadline {
            let _ = child.kill();
            panic!("campaign still running after {deadline:?}: a hang");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}
