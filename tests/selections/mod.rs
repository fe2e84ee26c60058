//! Selections read through the store equal libnetcdf's read of the same region (extents and strides)
//! of the source file: interior, across chunk edges, strided, negative, integer-indexed (dropping the
//! dimension), scalar and empty.

use netcdf::Extent;

use crate::common::*;

/// `tas(time=31, lat=18, lon=36)`, uncompressed, chunks (10, 9, 12): chunk edges at time 10, 20, 30,
/// lat 9 and lon 12, 24; the last time chunk holds one day.
fn monthly() -> (Fixture, vzarr::read::blocking::BlockingStore) {
    let f = Fixture::new(|d| fixtures::write_monthly(d, &fixtures::monthly_uncompressed_10_days(2023, 3)));
    let store = open_store(&scan_fixture(&f));
    (f, store)
}

/// Reads `var[spec]` through the store and `var[extents]` through libnetcdf; asserts equal bytes and
/// the NumPy result shape `shape`.
fn check(
    f: &Fixture,
    store: &vzarr::read::blocking::BlockingStore,
    var: &str,
    spec: &str,
    extents: Vec<Extent>,
    shape: &[u64],
) {
    let ours = read(store, var, spec);
    assert_eq!(ours.shape, shape, "{var}[{spec}]: result shape");
    let theirs = oracle_read(&f.path, var, Some(extents));
    assert_same_elements(&format!("{var}[{spec}]"), &ours.bytes, &theirs, ours.data_type.size());
}

#[test]
fn interior_region_inside_one_chunk() {
    let (f, store) = monthly();
    check(&f, &store, "tas", "3:8,2:7,1:11", vec![range(3, 8, 1), range(2, 7, 1), range(1, 11, 1)], &[5, 5, 10]);
}

#[test]
fn region_crossing_chunk_edges_in_every_dimension() {
    let (f, store) = monthly();
    check(&f, &store, "tas", "7:31,5:14,10:30", vec![range(7, 31, 1), range(5, 14, 1), range(10, 30, 1)], &[24, 9, 20]);
    // Into the one-day last chunk along time, and the padded edge chunks of the HDF5 layout.
    check(&f, &store, "tas", "29:,16:,30:", vec![range(29, 31, 1), range(16, 18, 1), range(30, 36, 1)], &[2, 2, 6]);
}

#[test]
fn strided_selections() {
    let (f, store) = monthly();
    check(&f, &store, "tas", "::3", vec![range(0, 31, 3), all(18), all(36)], &[11, 18, 36]);
    check(&f, &store, "tas", "1:30:4,::5,7::7", vec![range(1, 30, 4), range(0, 18, 5), range(7, 36, 7)], &[8, 4, 5]);
    // A step longer than a chunk.
    check(&f, &store, "tas", "::13,::10,::25", vec![range(0, 31, 13), range(0, 18, 10), range(0, 36, 25)], &[3, 2, 2]);
}

#[test]
fn negative_indices_and_bounds_count_from_the_end() {
    let (f, store) = monthly();
    check(&f, &store, "tas", "-1", vec![Extent::Index(30), all(18), all(36)], &[18, 36]);
    check(&f, &store, "tas", "-3:,-5:-1,-1", vec![range(28, 31, 1), range(13, 17, 1), Extent::Index(35)], &[3, 4]);
}

#[test]
fn integer_indices_drop_their_dimensions() {
    let (f, store) = monthly();
    check(&f, &store, "tas", "12,:,5", vec![Extent::Index(12), all(18), Extent::Index(5)], &[18]);
    check(&f, &store, "tas", "30,17,35", vec![Extent::Index(30), Extent::Index(17), Extent::Index(35)], &[]);
    check(&f, &store, "time_bnds", ":,1", vec![all(31), Extent::Index(1)], &[31]);
}

#[test]
fn scalar_variable_reads_as_a_zero_dimensional_array() {
    let (f, store) = monthly();
    let ours = read(&store, "crs", "");
    assert!(ours.shape.is_empty());
    assert_same_elements("crs", &ours.bytes, &oracle_read(&f.path, "crs", None), 4);
}

#[test]
fn empty_selections_read_nothing() {
    let (f, store) = monthly();
    for (spec, shape) in [("5:5", vec![0, 18, 36]), ("20:3", vec![0, 18, 36]), (":,40:", vec![31, 0, 36])] {
        let ours = read(&store, "tas", spec);
        assert_eq!(ours.shape, shape, "tas[{spec}]");
        assert!(ours.bytes.is_empty(), "tas[{spec}]");
    }
    let theirs = oracle_read(&f.path, "tas", Some(vec![range(5, 5, 1), all(18), all(36)]));
    assert!(theirs.is_empty(), "libnetcdf agrees");
}

#[test]
fn out_of_range_index_is_an_error_not_a_panic() {
    let (_f, store) = monthly();
    let err = try_read(&store, "tas", "31").expect_err("index 31 of 31");
    assert!(err.contains("31"), "{err}");
    assert!(try_read(&store, "tas", "0,0,0,0").is_err(), "too many dimensions");
    assert!(try_read(&store, "tas", "::0").is_err(), "step 0");
}

#[test]
fn kitchen_sink_selections_in_groups_sparse_and_big_endian() {
    let f = Fixture::new(fixtures::write_kitchen_sink);
    let store = open_store(&scan_fixture(&f));
    check(&f, &store, "model/diagnostics/profile", "1:4,1:3", vec![range(1, 4, 1), range(1, 3, 1)], &[3, 2]);
    check(&f, &store, "model/diagnostics/level_flag", "::2", vec![range(0, 4, 2)], &[2]);
    // Across written and unwritten chunks of the sparse variable.
    check(&f, &store, "sparse", "0:3,2:7", vec![range(0, 3, 1), range(2, 7, 1)], &[3, 5]);
    check(&f, &store, "big_endian", "::2,-3:", vec![range(0, 5, 2), range(4, 7, 1)], &[3, 3]);
    check(&f, &store, "u64", "-1,::3", vec![Extent::Index(4), range(0, 7, 3)], &[3]);
    check(&f, &store, "i8", "1:4,3", vec![range(1, 4, 1), Extent::Index(3)], &[3]);
}
