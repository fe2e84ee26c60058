//! Compaction benchmark (issue 40): folding the 365 daily size-1 chunks of the daily archive
//! (`benches/common`, `sst(365, 360, 720)` int16 in chunks (1, 30, 30)) into one chunk along time
//! (`vzarr compact --target 365`; the last day's chunks stay, so that `vzarr append` can continue
//! the store) against reading the same array once through the store, in the same run. The target is
//! within 2x. Checks the compacted store reads the same values.
//!
//! Run: `cargo bench --bench compact [-- --files N]` (default 365 files).

mod common;

use common::{archive_dir, ensure_archive, files_arg, time};

use vzarr::combine::{combine, CombineOptions};
use vzarr::compact::{compact_store, CompactOptions};
use vzarr::read::blocking::BlockingStore;
use vzarr::read::OpenOptions;
use vzarr::scan::{scan_files, ScanOptions};
use vzarr::store::{NativeWriter, WriteOptions, Writer};
use vzarr::trust::Authorization;
use vzarr::{ReadOptions, Selection};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if !args.iter().any(|a| a == "--bench") {
        return; // built and run by `cargo test --all-targets`: nothing to measure there
    }
    let files = files_arg(&args);
    let dir = archive_dir(files);
    let paths = ensure_archive(&dir, files);
    let store = dir.with_extension("compact.vzarr");
    let options = ScanOptions { concat_dims: vec!["time".into()], ..ScanOptions::default() };
    let scanned = scan_files(&paths, &options, &|_, _| {}).unwrap();
    let combined = combine(scanned, &CombineOptions::along("time")).unwrap();
    let written = NativeWriter.write(&combined, &store, &WriteOptions { overwrite: true }).unwrap();
    let authorization = Authorization::new(written.source_containers.clone());
    let read_all = |location: &std::path::Path| {
        let opened = BlockingStore::open(location.to_str().unwrap(), &authorization).unwrap();
        let sst = opened.array("sst").unwrap();
        sst.read(&Selection::all(&sst.reader().shape()), &ReadOptions::default()).unwrap()
    };
    read_all(&store); // warm the page cache
    let mut expected = None;
    let read = time(|| expected = Some(read_all(&store)));
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let compact_options = CompactOptions::new("time", files as u64, OpenOptions::new(authorization.clone()));
    let mut report = None;
    let compact =
        time(|| report = Some(compact_store(store.to_str().unwrap(), &compact_options, runtime.handle()).unwrap()));
    let report = report.unwrap();
    let sst = report.arrays.iter().find(|a| a.path == "sst").expect("sst folded");
    assert!(read_all(&store).bytes == expected.unwrap().bytes, "the compacted store reads other values");
    println!(
        "archive: {files} daily files, sst time edges {} -> {}",
        sst.before.len(),
        vzarr::compact::describe_edges(&sst.after)
    );
    println!("read sst through the store:       {read:.3} s");
    println!("compact (read, encode, write):    {compact:.3} s ({:.2}x the read; target <= 2x)", compact / read);
}
