//! Library use, end to end: scan the bundled sample archive (12 monthly NetCDF-4 files), combine it
//! along `time`, write a store, and read a slice back.
//!
//! Run: `cargo run --example scan_and_read`

use vzarr::combine::{combine, CombineOptions};
use vzarr::read::blocking::BlockingStore;
use vzarr::scan::{scan_files, ScanOptions};
use vzarr::trust::Authorization;
use vzarr::{NativeWriter, ReadOptions, Selection, WriteOptions, Writer};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut files: Vec<_> = glob::glob("fixtures/sample/*.nc")?.collect::<Result<_, _>>()?;
    files.sort();
    let options = ScanOptions { concat_dims: vec!["time".into()], ..ScanOptions::default() };
    let scanned = scan_files(&files, &options, &|done, refs| eprint!("\rscanned {done} files, {refs} references"))?;
    eprintln!();
    let dataset = combine(scanned, &CombineOptions::along("time"))?;
    let store_path = std::env::temp_dir().join("vzarr-example.vzarr");
    let info = NativeWriter.write(&dataset, &store_path, &WriteOptions { overwrite: true })?;

    // We wrote this store ourselves: trust the source containers it records (a store from
    // elsewhere is read with the user's trust list: `Authorization::from_user_config()`).
    let trusted = Authorization::new(&info.source_containers);
    let store = BlockingStore::open(&store_path.display().to_string(), &trusted)?;
    let tas = store.array("tas")?;
    println!("tas: shape {:?}, grid {}", tas.reader().shape(), tas.reader().metadata().chunk_grid.to_json());
    // 1-7 March 2023 at one grid point: day-of-year 59..66.
    let week = tas.read(&Selection::parse("59:66, 4, 10", &tas.reader().shape())?, &ReadOptions::default())?;
    println!("1-7 March at (lat 4, lon 10): {:?}", week.to_vec::<f32>()?);
    Ok(())
}
