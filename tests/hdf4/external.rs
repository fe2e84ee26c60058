//! Files whose data sets lie in external files (`fixtures/hdf4/external_*`, one `.dat` per HDF4 file)
//! combined along a new dimension and along their `time` coordinate (itself external): every value
//! equals libhdf4's read of the files, the coordinate values and digests come from the external
//! files, and each file's external file is one more source of the combined store.

use vzarr::ScanOptions;

use super::oracle::libhdf4_values;
use super::{combined, fixture};

#[test]
fn granules_with_external_data_combine_along_a_new_dimension() {
    let (shape, bytes, dataset) =
        combined("external_granules/EXTLIKE.A*.hdf", r"day=path:A(\d{7})", "Surface_Temperature");
    assert_eq!(shape, [3, 4, 6]);
    let mut expected = Vec::new();
    for day in 1..=3 {
        expected.extend(libhdf4_values(
            &fixture(&format!("external_granules/EXTLIKE.A2024{day:03}.hdf")),
            "Surface_Temperature",
        ));
    }
    assert!(bytes == expected, "values differ from libhdf4's");
    let locations: Vec<&str> = dataset.sources.iter().map(|s| s.location.as_str()).collect();
    assert_eq!(locations.len(), 6, "{locations:?}");
    for (k, pair) in locations.chunks(2).enumerate() {
        let name = format!("EXTLIKE.A2024{:03}", k + 1);
        assert!(pair[0].ends_with(&format!("{name}.hdf")) && pair[1].ends_with(&format!("{name}.dat")), "{pair:?}");
    }
    // The coordinate of YDim (the same in every granule, in the external files) is taken once.
    let (shape, y, _) = combined("external_granules/EXTLIKE.A*.hdf", r"day=path:A(\d{7})", "YDim");
    assert_eq!(shape, [4]);
    assert!(y == libhdf4_values(&fixture("external_granules/EXTLIKE.A2024001.hdf"), "YDim"));
}

#[test]
fn a_series_with_external_data_combines_along_its_external_coordinate() {
    let (shape, bytes, _) = combined("external_series/part*.hdf", "time", "time");
    assert_eq!(shape, [10]);
    let time: Vec<f64> = bytes.chunks_exact(8).map(|b| f64::from_ne_bytes(b.try_into().unwrap())).collect();
    assert_eq!(time, (0..10).map(f64::from).collect::<Vec<_>>());
    let (shape, bytes, _) = combined("external_series/part*.hdf", "time", "level");
    assert_eq!(shape, [10, 3]);
    let mut expected = libhdf4_values(&fixture("external_series/part1.hdf"), "level");
    expected.extend(libhdf4_values(&fixture("external_series/part2.hdf"), "level"));
    assert!(bytes == expected, "values differ from libhdf4's");
}

/// Digests of arrays in external files are of their values there: different granules' temperatures
/// differ (read from the HDF4 file instead, at the external offset, they would not), their YDim
/// coordinates agree.
#[test]
fn digests_of_external_data_are_of_the_external_values() {
    let options = ScanOptions { concat_dims: vec!["day".into()], ..Default::default() };
    let digests = |day: u32, name: &str| {
        let dataset =
            vzarr::scan_file(&fixture(&format!("external_granules/EXTLIKE.A2024{day:03}.hdf")), &options).unwrap();
        dataset.arrays.iter().find(|a| a.path == name).unwrap().digest.expect("a digest")
    };
    assert_ne!(digests(1, "Surface_Temperature"), digests(2, "Surface_Temperature"));
    assert_eq!(digests(1, "YDim"), digests(2, "YDim"));
}
