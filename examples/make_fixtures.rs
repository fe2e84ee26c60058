//! Writes the committed sample archive under `fixtures/sample/` (12 monthly NetCDF-4 files of 2023,
//! tas(time, lat, lon) chunked by whole month, deflate + shuffle) and the single-file fixtures under
//! `fixtures/single/`. Run: `cargo run --example make_fixtures`.

#[path = "../tests/common/fixtures.rs"]
mod fixtures;

use std::path::Path;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let sample = Path::new("fixtures/sample");
    std::fs::create_dir_all(sample)?;
    for month in 1..=12 {
        let path = fixtures::write_monthly(sample, &fixtures::Monthly::new(2023, month));
        println!("{}", path.display());
    }
    let single = Path::new("fixtures/single");
    std::fs::create_dir_all(single)?;
    for path in [fixtures::write_kitchen_sink(single), fixtures::write_plain_hdf5(single)] {
        println!("{}", path.display());
    }
    Ok(())
}
