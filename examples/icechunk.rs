//! Icechunk through the same traits as native stores: the sample archive committed to a new
//! repository with the one `Writer` trait, then read back with the one `Store::open_with`.
//!
//! Run: `cargo run --example icechunk` (feature `icechunk`, on by default).

use vzarr::formats::IcechunkWriter;
use vzarr::formats::{WriteOptions, Writer};
use vzarr::grid::Selection;
use vzarr::pipeline::Archive;
use vzarr::read::blocking::BlockingStore;
use vzarr::read::Authorization;
use vzarr::read::{OpenOptions, ReadOptions};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dataset = Archive::new(["fixtures/sample/*.nc"]).concat("time")?.scan()?.dataset;
    let repo = std::env::temp_dir().join(format!("vzarr-example-{}.icechunk", std::process::id()));
    let info = IcechunkWriter::default().write(&dataset, &repo, &WriteOptions::default())?;
    println!("committed {} arrays; containers to authorize: {:?}", info.arrays.len(), info.source_containers);

    let options = OpenOptions::new(Authorization::new(&info.source_containers)).with_branch("main");
    let store = BlockingStore::open_with(repo.display().to_string(), &options)?;
    let tas = store.array("tas")?;
    let first_day = tas.read(&Selection::parse("0", &tas.reader().shape())?, &ReadOptions::default())?;
    println!("tas on 1 January: {} values, first {:?}", first_day.len(), first_day.to_vec::<f32>()?.first());
    std::fs::remove_dir_all(&repo)?;
    Ok(())
}
