//! kerchunk Parquet benchmark (issue 39): one array of n virtual references written as a kerchunk
//! Parquet reference set (`KerchunkParquetWriter` at its default, 10^5 rows per file, as kerchunk's
//! `refs_to_dataframe` and VirtualiZarr write them) and as a native store (`NativeWriter`, the
//! baseline), in the same run (and with 10^4 rows a file, for comparison), each to a new destination (the output before is removed first, untimed); then both opened
//! (`Store::open_with`) and every reference read back (`ArrayReader::entries`, a round at a time) and checked equal to the
//! ones written; the native store is also exported to Parquet (`export_kerchunk_parquet`) and the
//! files checked equal to the writer's. Printed: each step's time, the Parquet / native ratio of write + read back (target
//! <= 2x at 10^7 references) and the bytes per reference on disk of both (target <= 30 for Parquet).
//!
//! The references are those of a realistic archive: 1,000 compressed chunks per source file, each
//! starting where the one before ended, of pseudo-random lengths (1-5 KB), as a deflated variable's
//! chunks lie in a NetCDF-4 file; a source's chunks share one `path` value per row, as kerchunk writes it.
//!
//! Run: `cargo bench --bench kerchunk_parquet [-- --refs 1000000,10000000 --record-size 100000,10000]`
//! (the defaults: 10^7 references; 10^5 and 10^4 rows a file).

mod common;

use std::path::Path;

use vzarr::dataset::DataType;
use vzarr::dataset::{ChunkEntry, VirtualDataset};
use vzarr::export::{export_kerchunk_parquet, KerchunkParquetOptions};
use vzarr::formats::{KerchunkParquetWriter, NativeWriter, DEFAULT_RECORD_SIZE};
use vzarr::formats::{WriteOptions, Writer};
use vzarr::grid::ChunkGrid;

/// Chunks per (synthetic) source file.
const PER_FILE: u64 = 1000;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if !args.iter().any(|a| a == "--bench") {
        return; // built by `cargo test --all-targets`: nothing to measure there
    }
    let list = |name: &str, default: Vec<u64>| -> Vec<u64> {
        let given = args.iter().position(|a| a == name).and_then(|i| args.get(i + 1));
        given.map(|list| list.split(',').filter_map(|n| n.trim().parse().ok()).collect()).unwrap_or(default)
    };
    let sizes = list("--refs", vec![10_000_000]);
    let records = list("--record-size", vec![DEFAULT_RECORD_SIZE as u64, 10_000]);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    println!("one array of n virtual references: kerchunk Parquet vs the native store (local disk)");
    for n in sizes {
        let sources = tempfile::tempdir().unwrap();
        let dataset = many_refs(n, sources.path());
        let dir = tempfile::tempdir().unwrap();
        let native = dir.path().join("v.vzarr");
        let parquet = dir.path().join("v.parq");
        let native_write = common::time(|| {
            NativeWriter.write(&dataset, &native, &WriteOptions::default()).unwrap();
        });
        let mut read = Vec::new();
        let native_read = common::time(|| read = runtime.block_on(read_all(&native, sources.path())));
        check(&native, &read, &dataset);
        let native_bytes = disk_bytes(&native);
        println!(
            "  {n:>9} refs: native store: write {native_write:.2} s, read back {native_read:.2} s, {:.1} bytes/reference",
            native_bytes as f64 / n as f64
        );
        for &record_size in &records {
            let writer = KerchunkParquetWriter { record_size: record_size as usize, ..Default::default() };
            // Each written fresh, as the native store is: replacing the last one is not timed.
            let _ = std::fs::remove_dir_all(&parquet);
            let options = WriteOptions { overwrite: true };
            let parquet_write = common::time(|| drop(writer.write(&dataset, &parquet, &options).unwrap()));
            let parquet_read = common::time(|| read = runtime.block_on(read_all(&parquet, sources.path())));
            check(&parquet, &read, &dataset);
            println!(
                "  {n:>9} refs: Parquet of {record_size} rows a file: write {parquet_write:.2} s ({:.2}x native), read \
                 back {parquet_read:.2} s ({:.2}x); write + read back {:.2}x the native store's time (target <= 2); \
                 {:.1} bytes/reference on disk (target <= 30)",
                parquet_write / native_write,
                parquet_read / native_read,
                (parquet_write + parquet_read) / (native_write + native_read),
                disk_bytes(&parquet) as f64 / n as f64
            );
            // The native store exported (`vzarr export --kerchunk-parquet`: an opened store, a
            // record's entries at a time) against the writer's set from memory: the same files.
            let exported = dir.path().join("e.parq");
            let _ = std::fs::remove_dir_all(&exported);
            let store = runtime.block_on(open(&native, sources.path()));
            let options = KerchunkParquetOptions { record_size: record_size as usize, ..Default::default() };
            let export_time = common::time(|| {
                runtime.block_on(export_kerchunk_parquet(&store, &exported, &options)).unwrap();
            });
            assert_eq!(files_of(&exported), files_of(&parquet), "the export is the writer's set");
            println!(
                "  {n:>9} refs: export of the native store to Parquet of {record_size} rows a file: {export_time:.2} s \
                 ({:.2}x the writer's, which has the dataset in memory); the same files",
                export_time / parquet_write
            );
        }
    }
}

/// Opens the store at `location`, trusting `sources`, without checking them (they are not written).
async fn open(location: &Path, sources: &Path) -> vzarr::read::Store {
    let trusted = vzarr::read::Authorization::new([format!("{}/", sources.display())]);
    let options = vzarr::read::OpenOptions::new(trusted).with_check_sources(false);
    vzarr::read::Store::open_with(location.display().to_string(), &options).await.unwrap()
}

/// Every file under `dir` with its bytes, by its path relative to `dir`.
fn files_of(dir: &Path) -> std::collections::BTreeMap<std::path::PathBuf, Vec<u8>> {
    let mut out = std::collections::BTreeMap::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        for entry in std::fs::read_dir(&d).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else {
                out.insert(path.strip_prefix(dir).unwrap().to_path_buf(), std::fs::read(&path).unwrap());
            }
        }
    }
    out
}

/// Opens the store at `location` and reads every reference of `v` back, a round at a time.
async fn read_all(location: &Path, sources: &Path) -> Vec<ChunkEntry> {
    let store = open(location, sources).await;
    let array = store.array("v").await.unwrap();
    let total: u64 = array.metadata().chunk_grid.num_chunks();
    let round = vzarr::read::ENTRIES_PER_ROUND;
    let mut read = Vec::with_capacity(total as usize);
    let mut start = 0;
    while start < total {
        let end = (start + round).min(total);
        read.extend(array.entries(start..end).await.unwrap());
        start = end;
    }
    read
}

/// Checks the references read back from `location` equal the dataset's.
fn check(location: &Path, read: &[ChunkEntry], dataset: &VirtualDataset) {
    let table = &dataset.arrays[0].chunks;
    assert_eq!(read.len(), table.len(), "references read back from {}", location.display());
    for (k, (got, want)) in read.iter().zip(table.iter()).enumerate() {
        assert_eq!(*got, want, "reference {k} read back from {}", location.display());
    }
}

/// A compressed chunk's length: 1,000 to 5,000 bytes, pseudo-random.
fn length(k: u64) -> u64 {
    let mut x = k.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    x ^= x >> 29;
    1000 + x % 4000
}

/// One array `v(time, y, x)` of `n` chunks of 100 x 100 int16 (rounded down to whole rows of 100),
/// every chunk a reference into one of `n / 1000` source files in `dir` (not written).
fn many_refs(n: u64, dir: &Path) -> VirtualDataset {
    let rows = n / 100;
    let grid = ChunkGrid::regular(&[rows, 1000, 1000], &[1, 100, 100]).unwrap();
    let mut entries = Vec::with_capacity(grid.num_chunks() as usize);
    let mut offset = 0;
    for k in 0..grid.num_chunks() {
        if k % PER_FILE == 0 {
            offset = 4096;
        }
        entries.push(ChunkEntry::Source { source: (k / PER_FILE) as u32, offset, length: length(k) });
        offset += length(k);
    }
    let sources =
        (0..n.div_ceil(PER_FILE)).map(|f| (dir.join(format!("sst_{f:06}.nc")).display().to_string(), 8 << 20));
    common::one_array_dataset(grid, DataType::Int16, entries, sources)
}

/// Bytes of the files under `path`.
fn disk_bytes(path: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(path) else {
        return std::fs::metadata(path).map_or(0, |m| m.len());
    };
    entries.flatten().map(|e| disk_bytes(&e.path())).sum()
}
