//! Archive benchmark: vzarr against libnetcdf on the same files, in the same run.
//!
//! Builds (once, cached under `target/bench-archive/`) the project's daily benchmark archive: daily
//! NetCDF-4 files of `sst(time=1, lat=360, lon=720)` int16, chunks (1, 30, 30), deflate + shuffle.
//! Then measures, printing each figure with its ratio to a baseline measured in this run:
//! - scan + combine + write (vzarr) vs. opening every file and reading its metadata (libnetcdf);
//! - reading all of `sst` through the store (vzarr) vs. reading it file by file (libnetcdf);
//! - reading all of `sst` through the store vs. the decode floor: the same chunks' stored bytes, already
//!   in memory, inflated and unshuffled on all cores (rayon) with nothing else; target <= 1.3x;
//! - reading one chunk through the store vs. libnetcdf reading the same region;
//! - manifest bytes per reference, peak memory.
//!
//! Measured (2 cores, quiet machine, 365 files, zlib-rs with its SIMD code): read all of `sst`
//! 0.349-0.368 s, decode floor 0.222-0.250 s (1.48-1.57x), libnetcdf 1.05-1.16 s (0.32-0.34x); scan +
//! combine + write 0.037 s (libnetcdf metadata 0.072 s).
//!
//! Run: `cargo bench --bench archive [-- --files N]` (default 365 files).

mod common;

use common::{archive_dir, ensure_archive, files_arg, peak_rss_kib, time, NX, NY};

use vzarr::formats::NativeWriter;
use vzarr::formats::{WriteOptions, Writer};
use vzarr::pipeline::{combine, CombineOptions};
use vzarr::read::{ReadOptions, Store};
use vzarr::scan::{scan_files, ScanOptions};
use vzarr::Selection;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if !args.iter().any(|a| a == "--bench") {
        return; // built and run by `cargo test --all-targets`: nothing to measure there
    }
    let files = files_arg(&args);
    let dir = archive_dir(files);
    let paths = ensure_archive(&dir, files);
    println!("archive: {files} daily files of sst(1, {NY}, {NX}) int16, chunks (1, 30, 30), deflate+shuffle");
    println!("HDF5 chunk lookup: native reader (one pass per chunk index)");

    let baseline_meta = time(|| {
        for p in &paths {
            let f = netcdf::open(p).unwrap();
            for v in f.variables() {
                std::hint::black_box((v.dimensions().len(), v.vartype(), v.attributes().count()));
            }
        }
    });
    let store = dir.with_extension("vzarr");
    let scan = time(|| {
        let options = ScanOptions { concat_dims: vec!["time".into()], ..ScanOptions::default() };
        let scanned = scan_files(&paths, &options, &|_, _| {}).unwrap();
        let combined = combine(scanned, &CombineOptions::along("time")).unwrap();
        NativeWriter.write(&combined, &store, &WriteOptions { overwrite: true }).unwrap();
    });
    let refs = files as u64 * (NY / 30 * NX / 30) as u64;
    let manifest = std::fs::metadata(store.join("sst/manifest.bin")).unwrap().len();
    report("scan + combine + write", scan, "libnetcdf open + metadata of every file", baseline_meta);
    println!(
        "  {refs} references, {:.0} references/s, manifest {:.2} bytes/reference",
        refs as f64 / scan,
        manifest as f64 / refs as f64
    );

    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let store = runtime
        .block_on(Store::open(store.to_str().unwrap(), &vzarr::read::Authorization::new([dir.to_str().unwrap()])))
        .unwrap();
    let sst = runtime.block_on(store.array("sst")).unwrap();
    let all = Selection::all(&sst.shape());
    let mut ours_bytes = Vec::new();
    let vzarr_all = time(|| ours_bytes = runtime.block_on(sst.read(&all, &ReadOptions::default())).unwrap().bytes);
    let mut theirs = Vec::with_capacity(ours_bytes.len());
    let netcdf_all = time(|| {
        theirs.clear();
        for p in &paths {
            let f = netcdf::open(p).unwrap();
            theirs.extend(f.variable("sst").unwrap().get_raw_values(..).unwrap());
        }
    });
    assert!(ours_bytes == theirs, "vzarr and libnetcdf disagree on sst");
    report("read all of sst (vzarr)", vzarr_all, "libnetcdf, file by file", netcdf_all);
    let floor = decode_floor(&runtime, &sst);
    report("read all of sst (vzarr)", vzarr_all, "decode floor: bytes in memory, all cores", floor);

    let one = Selection::parse("100, 30:60, 60:90", &sst.shape()).unwrap();
    let vzarr_one = time(|| {
        std::hint::black_box(runtime.block_on(sst.read(&one, &ReadOptions::default())).unwrap());
    });
    let netcdf_one = time(|| {
        let f = netcdf::open(&paths[100]).unwrap();
        std::hint::black_box(f.variable("sst").unwrap().get_raw_values([0..1, 30..60, 60..90]).unwrap());
    });
    report("read one chunk (vzarr)", vzarr_one, "libnetcdf open + read region", netcdf_one);
    println!("peak memory: {} MiB", peak_rss_kib() / 1024);
}

/// Seconds to decode every chunk of `array` on all cores from its stored bytes, read into memory
/// beforehand (one buffer per chunk, decoded into its own output slice): the read path's floor.
fn decode_floor(runtime: &tokio::runtime::Runtime, array: &vzarr::read::ArrayReader) -> f64 {
    use rayon::prelude::*;
    let meta = array.metadata();
    let n = meta.chunk_grid.num_chunks();
    let entries = runtime.block_on(array.entries(0..n)).unwrap();
    let stored: Vec<bytes::Bytes> =
        runtime.block_on(array.stored_chunks(&entries)).unwrap().into_iter().map(Option::unwrap).collect();
    let sizes: Vec<usize> = (0..n)
        .map(|linear| {
            let shape = meta.chunk_grid.chunk_shape(&meta.chunk_grid.chunk_coords(linear));
            shape.iter().product::<u64>() as usize * meta.element_size()
        })
        .collect();
    let mut out = vec![0u8; sizes.iter().sum()];
    let mut slices = Vec::with_capacity(sizes.len());
    let mut rest = out.as_mut_slice();
    for &size in &sizes {
        let (slice, tail) = rest.split_at_mut(size);
        slices.push(slice);
        rest = tail;
    }
    let swap = meta.data_type.byte_swap();
    time(|| {
        slices.par_iter_mut().zip(stored.par_iter()).for_each(|(slice, bytes)| {
            meta.codecs.decode_into(bytes, swap, slice).unwrap();
        });
    })
}

fn report(what: &str, seconds: f64, baseline: &str, baseline_seconds: f64) {
    println!(
        "{what:<28} {seconds:>8.3} s   baseline ({baseline}) {baseline_seconds:.3} s   ratio {:.2}x",
        seconds / baseline_seconds
    );
}
