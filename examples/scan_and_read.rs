//! Library use, end to end, with no C library: scan the bundled sample archive (12 monthly NetCDF-4
//! files) and combine it along `time` in one call, write a native store, read a slice back.
//!
//! Run: `cargo run --example scan_and_read` (any feature set, `--no-default-features` included).

use vzarr::grid::{DimSelection, Selection};
use vzarr::pipeline::{write_dataset, Archive, Format, Output};
use vzarr::read::blocking::BlockingStore;
use vzarr::read::Authorization;
use vzarr::read::{OpenOptions, ReadOptions};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The concatenation dimension is given once: the scan records its coordinates and prepares
    // partial last chunks, the combine concatenates along it.
    let scanned = Archive::new(["fixtures/sample/*.nc"]).concat("time")?.scan()?;
    println!("scanned {} files", scanned.files.len());
    let store_path = std::env::temp_dir().join("vzarr-example.vzarr");
    let output = Output { overwrite: true, ..Output::new(&store_path, Format::Native) };
    let written = write_dataset(&scanned.dataset, &output)?;
    println!("{} arrays, {} chunk references", written.arrays().len(), written.references());

    // We wrote this store ourselves: trust the source containers it records (a store from
    // elsewhere is read with the user's trust list: `Authorization::from_user_config()`).
    let options = OpenOptions::new(Authorization::new(written.source_containers()));
    let store = BlockingStore::open_with(store_path.as_path(), &options)?;
    let tas = store.array("tas")?;
    let shape = tas.reader().shape();
    println!("tas: shape {shape:?}, grid {}", tas.reader().metadata().chunk_grid.to_json());
    // 1-7 March 2023 at one grid point: day-of-year 59..66, selected with Rust ranges.
    let week = Selection::new([DimSelection::from(59..66), 4.into(), 10.into()], &shape)?;
    println!("1-7 March at (lat 4, lon 10): {:?}", tas.read(&week, &ReadOptions::default())?.to_vec::<f32>()?);
    Ok(())
}
