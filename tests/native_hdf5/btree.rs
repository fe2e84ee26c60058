//! Corrupt version 1 B-tree chunk indexes (issue 28, item 5): a seeded sweep of single-byte flips
//! inside the B-tree nodes of two-level indexes (65 chunks of a 1-d dataset, 9 x 9 chunks of a 2-d
//! one, the edge chunks partial). Each mutant is either refused in one line naming the file, or
//! scanned into a store whose every read equals libhdf5's read of the same mutant file (where
//! libhdf5 reads it at all). The sweep runs in a child process with an address-space limit and a
//! deadline ([`super::hostile::run_limited_worker`]).

use std::path::{Path, PathBuf};

use vzarr::{NativeWriter, ScanOptions, WriteOptions, Writer};

use super::hostile::{check_outcome, patched, positions, run_limited_worker};
use crate::common::hdf5_oracle::try_read_native;
use crate::common::{open_store, try_read, with_hdf5_files};

/// Flips per file.
const FLIPS: usize = 200;

/// Writes `name` with one chunked dataset `v` of `shape` in chunks of `chunk` (libver earliest: a
/// version 1 B-tree index; more than 64 chunks make it two levels deep).
fn write_indexed(dir: &Path, name: &str, shape: &[usize], chunk: &[usize]) -> PathBuf {
    let path = dir.join(name);
    with_hdf5_files(|| {
        let file = hdf5::File::create(&path).unwrap();
        let n: usize = shape.iter().product();
        let values: Vec<i32> = (0..n as i32).map(|i| i * 7 - 1000).collect();
        let array = ndarray::ArrayD::from_shape_vec(shape.to_vec(), values).unwrap();
        file.new_dataset::<i32>()
            .chunk(chunk.to_vec())
            .shape(shape.to_vec())
            .create("v")
            .unwrap()
            .write(&array)
            .unwrap();
    });
    path
}

/// The byte ranges of the raw-data B-tree nodes of a rank-`rank` dataset: signature to final key.
fn node_ranges(bytes: &[u8], rank: usize) -> Vec<std::ops::Range<usize>> {
    let key = 8 + 8 * (rank + 1);
    positions(bytes, b"TREE")
        .into_iter()
        .filter(|&at| bytes[at + 4] == 1)
        .map(|at| {
            let entries = usize::from(u16::from_le_bytes([bytes[at + 6], bytes[at + 7]]));
            at..(at + 24 + (entries + 1) * key + entries * 8).min(bytes.len())
        })
        .collect()
}

/// Sweeps one file; returns (refused, scanned and read exactly, libhdf5 could not read) or failures.
fn sweep(dir: &Path, source: &Path, rank: usize, seed: u64) -> Result<(usize, usize, usize), Vec<String>> {
    let original = std::fs::read(source).unwrap();
    let nodes = node_ranges(&original, rank);
    assert!(nodes.len() >= 3, "{}: a two-level index has a root and two leaves", source.display());
    let bytes: Vec<usize> = nodes.iter().flat_map(Clone::clone).collect();
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let (mut failures, mut counts) = (Vec::new(), (0, 0, 0));
    for i in 0..FLIPS {
        let at = bytes[(next() % bytes.len() as u64) as usize];
        let flip = (next() % 255 + 1) as u8;
        let path = patched(dir, &format!("flip{i}.h5"), &original, |b| b[at] ^= flip);
        let what = format!("{} byte {at} ^ {flip:#04x}", source.display());
        match check_outcome(&path, &what) {
            Err(failure) => failures.push(failure),
            Ok(None) => counts.0 += 1,
            Ok(Some(dataset)) => match compare_with_libhdf5(&path, &dataset) {
                Ok(true) => counts.1 += 1,
                Ok(false) => counts.2 += 1,
                Err(failure) => failures.push(format!("{what}: {failure}")),
            },
        }
    }
    if failures.is_empty() {
        Ok(counts)
    } else {
        Err(failures)
    }
}

/// Reads `v` through a store of the scanned mutant and compares with libhdf5's read of the mutant:
/// Ok(true) when equal, Ok(false) when libhdf5 cannot read it (vzarr may then read or refuse).
fn compare_with_libhdf5(path: &Path, dataset: &vzarr::VirtualDataset) -> Result<bool, String> {
    let store_path = path.with_extension("vzarr");
    NativeWriter.write(dataset, &store_path, &WriteOptions::default()).map_err(|e| e.to_string())?;
    let store = open_store(&store_path);
    let ours = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| try_read(&store, "v", "")))
        .map_err(|_| "the read panicked".to_string())?;
    std::fs::remove_dir_all(&store_path).map_err(|e| e.to_string())?;
    let len = dataset.array("v").map(|a| a.metadata.shape().iter().product::<u64>() as usize * 4).unwrap_or(0);
    let Some(theirs) = try_read_native(path, "v", len) else { return Ok(false) };
    match ours {
        Ok(values) if values.bytes == theirs => Ok(true),
        Ok(_) => Err("vzarr reads other values than libhdf5 from the same file".into()),
        Err(e) if e.contains(&store_path.display().to_string()) || e.contains(&path.display().to_string()) => Ok(true),
        Err(e) => Err(format!("the read failed without naming the store or the file: {e}")),
    }
}

#[test]
#[ignore = "worker of corrupt_v1_b_tree_keys_are_refused_or_read_as_libhdf5_reads_them"]
fn b_tree_sweep_worker() {
    assert!(std::env::var_os("VZARR_CAMPAIGN").is_some(), "run by its test in a limited child");
    let dir = tempfile::tempdir().unwrap();
    let one = write_indexed(dir.path(), "one.h5", &[259], &[4]);
    let two = write_indexed(dir.path(), "two.h5", &[34, 33], &[4, 4]);
    for source in [&one, &two] {
        let dataset = vzarr::scan_file(source, &ScanOptions::default()).unwrap();
        assert!(compare_with_libhdf5(source, &dataset).unwrap(), "the intact file reads as libhdf5 reads it");
    }
    let mut failures = Vec::new();
    for (seed, (source, rank)) in [(&one, 1), (&two, 2)].into_iter().enumerate() {
        match sweep(dir.path(), source, rank, seed as u64 + 1) {
            Ok((refused, exact, unreadable)) => println!(
                "campaign: {}: {refused} refused in one line, {exact} read as libhdf5 reads them (or refused at read), {unreadable} \
                 that libhdf5 cannot read",
                source.display()
            ),
            Err(mut f) => failures.append(&mut f),
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn corrupt_v1_b_tree_keys_are_refused_or_read_as_libhdf5_reads_them() {
    run_limited_worker("native_hdf5::btree::b_tree_sweep_worker", std::time::Duration::from_secs(300));
}
