//! Store-owned chunks past the memory budget (`src/dataset/owned_bytes.rs`): a file whose every
//! chunk is copied into the store (a padded compound, repacked) scanned under a 1 MiB budget keeps
//! its table's heap under the budget (the rest spills to the temporary file), and the store written
//! from it reads as libhdf5 reads the file. The other copied-chunk tests (szip, LZO, blosc2,
//! structs, HDF4, append) run again with everything spilled under `VZARR_OWNED_MEMORY=0` (`./dev
//! test`).

use vzarr::{ScanOptions, Writer};

use crate::common::hdf5_oracle::read_member;
use crate::common::{open_store, read, scan, trust_store, with_hdf5_files};

/// A compound of an `i16` and an `f64` at offsets 0 and 8: six padding bytes an element, so vzarr
/// stores it packed (10 bytes) in store-owned chunks.
#[derive(hdf5::H5Type, Clone, Copy)]
#[repr(C)]
struct Padded {
    a: i16,
    b: f64,
}

#[test]
fn copied_chunks_past_the_budget_spill_and_read_as_libhdf5_reads_them() {
    const N: usize = 400_000;
    const BUDGET: u64 = 1 << 20;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("padded.h5");
    let values: Vec<Padded> = (0..N).map(|i| Padded { a: (i % 30_000) as i16 - 7, b: i as f64 * 0.25 }).collect();
    with_hdf5_files(|| {
        let h5 = hdf5::File::create(&file).unwrap();
        h5.new_dataset_builder().chunk(10_000).with_data(&values).create("rec").unwrap();
    });
    // A budget of this scan's own: other tests' bytes count in theirs.
    let owned_budget = vzarr::read::owned_bytes_budget(BUDGET);
    let scanned = scan(&file, &ScanOptions { owned_budget, ..ScanOptions::default() });
    let dataset = scanned.unwrap();
    let array = dataset.arrays.iter().find(|a| a.path == "rec").unwrap();
    let stats = array.chunks.stats();
    assert_eq!((stats.owned, stats.referenced, stats.owned_bytes), (40, 0, N as u64 * 10));
    assert!(array.chunks.heap_bytes() as u64 <= BUDGET + 4096, "{} bytes on the heap", array.chunks.heap_bytes());
    assert!(array.chunks.owned.spilled_bytes() >= N as u64 * 10 - BUDGET, "{:?}", array.chunks.owned);
    let store_path = dir.path().join("padded.vzarr");
    vzarr::NativeWriter.write(&dataset, &store_path, &vzarr::WriteOptions::default()).unwrap();
    trust_store(&store_path);
    let owned_bin = std::fs::metadata(store_path.join("rec/owned.bin")).unwrap().len();
    assert_eq!(owned_bin, N as u64 * 10);
    let store = open_store(&store_path);
    let ours = read(&store, "rec", "").bytes;
    assert_eq!(ours.len(), N * 10);
    let a = read_member(&file, "rec", &["a"], N).unwrap();
    let b = read_member(&file, "rec", &["b"], N).unwrap();
    for i in 0..N {
        let element = &ours[i * 10..i * 10 + 10];
        assert!(element[..2] == a[i * 2..i * 2 + 2] && element[2..] == b[i * 8..i * 8 + 8], "element {i}");
    }
    let run = crate::common::cli_expect(&["verify".as_ref(), store_path.as_os_str()], 0);
    assert!(run.stdout.contains(": 0 failed"), "{}", run.stdout);
    // Loading the store for an append reads owned.bin a block at a time into owned bytes that spill
    // past the budget: the same bytes, the table's heap within the budget.
    let loaded = vzarr::pipeline::load_native(&store_path, &vzarr::read::owned_bytes_budget(BUDGET));
    let loaded = loaded.unwrap();
    let rec = loaded.arrays.iter().find(|a| a.path == "rec").unwrap();
    assert!(rec.chunks.heap_bytes() as u64 <= BUDGET + 4096, "{} bytes on the heap", rec.chunks.heap_bytes());
    assert!(rec.chunks.owned.spilled_bytes() >= owned_bin - BUDGET, "{:?}", rec.chunks.owned);
    let stored = std::fs::read(store_path.join("rec/owned.bin")).unwrap();
    assert!(rec.chunks.owned.read(0, owned_bin).unwrap().as_ref() == stored.as_slice(), "owned.bin read back differs");
}

/// A memory budget that is not a size is refused with one line naming it, before anything is done
/// (taken as unset, it would silently hold every copy in memory).
#[test]
fn a_malformed_memory_budget_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("never.vzarr");
    let mut command = crate::common::vzarr_command();
    command.env("VZARR_OWNED_MEMORY", "64 apples").args(["scan".as_ref(), dir.path().as_os_str(), "-o".as_ref()]);
    command.arg(&store);
    let run = crate::common::run(command);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert_eq!(run.stderr.trim().lines().count(), 1, "{}", run.stderr);
    assert!(run.stderr.contains("VZARR_OWNED_MEMORY=\"64 apples\": not a size"), "{}", run.stderr);
    assert!(!store.exists());
    // A size with a unit is taken: the same scan of a sample file works.
    let sample = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/sample/tas_2023-01.nc");
    let mut command = crate::common::vzarr_command();
    command.env("VZARR_OWNED_MEMORY", "64M").args(["scan".as_ref(), sample.as_os_str(), "-o".as_ref()]);
    command.arg(&store);
    let run = crate::common::run(command);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(store.join("vzarr.json").is_file());
}
