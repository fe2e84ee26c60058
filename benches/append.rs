//! Append benchmark: adding one day to a store of N - 1 daily files (`vzarr append`'s library path:
//! load the store, rescan the last stored file, scan the new one, plan, write) against scanning,
//! combining and writing all N files, on the archive of `benches/archive.rs` (cached under
//! `target/bench-archive/`). Checks the two stores' manifests are identical.
//!
//! Run: `cargo bench --bench append [-- --files N]` (default 365 files).

mod common;

use common::{archive_dir, ensure_archive, files_arg, time};

use vzarr::formats::NativeWriter;
use vzarr::formats::{WriteOptions, Writer};
use vzarr::pipeline::{combine, CombineOptions};
use vzarr::pipeline::{runtime, AppendTo, Archive};
use vzarr::scan::{scan_files, ScanOptions};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if !args.iter().any(|a| a == "--bench") {
        return; // built and run by `cargo test --all-targets`: nothing to measure there
    }
    let files = files_arg(&args);
    let dir = archive_dir(files);
    let paths = ensure_archive(&dir, files);
    let options = ScanOptions { concat_dims: vec!["time".into()], ..ScanOptions::default() };
    let write = |paths: &[std::path::PathBuf], store: &std::path::Path| {
        let scanned = scan_files(paths, &options, &|_, _| {}).unwrap();
        let combined = combine(scanned, &CombineOptions::along("time")).unwrap();
        NativeWriter.write(&combined, store, &WriteOptions { overwrite: true }).unwrap();
    };
    let (fresh, appended) = (dir.with_extension("fresh.vzarr"), dir.with_extension("appended.vzarr"));
    let scan_all = time(|| write(&paths, &fresh));
    write(&paths[..files - 1], &appended);
    // The append a user runs (`vzarr append`, `Archive::append_to`): load the store, rescan its last
    // file, scan the new one, splice, write atomically.
    let runtime = runtime().unwrap();
    let append = time(|| {
        let archive = Archive::new([paths[files - 1].as_os_str()]);
        archive.append_to(&appended, &AppendTo::default(), runtime.handle(), &|_| {}).unwrap();
    });
    let manifest = |store: &std::path::Path| std::fs::read(store.join("sst/manifest.bin")).unwrap();
    assert!(manifest(&fresh) == manifest(&appended), "appended and fresh manifests differ");
    println!("archive: {files} daily files; append 1 file to {} vs. scan all {files}", files - 1);
    println!("scan + combine + write all files: {scan_all:.3} s");
    println!("append one file:                  {append:.3} s ({:.2}x)", append / scan_all);
}
