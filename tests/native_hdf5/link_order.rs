//! HDF5 groups that do not track creation order (new-style groups of `libver=latest` files written
//! without `track_order`, as the HDF-EOS5 library writes them) list their members by name, as
//! libhdf5's name index and libnetcdf do, so that phony dimensions are numbered as libnetcdf numbers
//! them. An HDF5 fixed-length string dataset (StructMetadata.0 of HDF-EOS files) carries `_Encoding`,
//! so that xarray shows a string, as libnetcdf reads it.

use std::path::{Path, PathBuf};

use hdf5::types::FixedAscii;
use vzarr::ScanOptions;

use crate::common::*;

/// Groups and datasets created out of name order, without dimension scales, in a file whose groups
/// keep no creation order; a scalar fixed-length string.
fn write_out_of_order(dir: &Path) -> PathBuf {
    let path = dir.join("link_order.h5");
    with_hdf5_files(|| {
        let file = hdf5::File::with_options().with_fapl(|p| p.libver_latest()).create(&path).unwrap();
        let zulu = file.create_group("zulu").unwrap();
        let alpha = file.create_group("alpha").unwrap();
        for group in [&*file, &zulu, &alpha] {
            group
                .new_dataset::<f32>()
                .shape([3, 4])
                .create("zz")
                .unwrap()
                .write(&ndarray::Array2::<f32>::ones((3, 4)))
                .unwrap();
            group.new_dataset::<i16>().shape([5]).create("mm").unwrap().write(&[1i16, 2, 3, 4, 5]).unwrap();
            group
                .new_dataset::<u8>()
                .shape([4, 6])
                .create("aa")
                .unwrap()
                .write(&ndarray::Array2::<u8>::zeros((4, 6)))
                .unwrap();
        }
        let text = FixedAscii::<24>::from_ascii(b"GROUP=GridStructure").unwrap();
        file.new_dataset::<FixedAscii<24>>().create("meta").unwrap().write_scalar(&text).unwrap();
    });
    path
}

#[test]
fn members_listed_by_name_give_libnetcdf_phony_dimensions_and_strings() {
    let dir = tempfile::tempdir().unwrap();
    let file = write_out_of_order(dir.path());
    let store_path = scan_to_store(&file, dir.path(), "s.vzarr", &ScanOptions::default());
    let store = open_store(&store_path);
    let source = netcdf::open(&file).unwrap();
    let mut groups: Vec<(String, netcdf::Group)> = vec![];
    for g in source.groups().unwrap() {
        groups.push((g.name(), g));
    }
    let mut compared = 0;
    let mut check = |prefix: &str, vars: Vec<netcdf::Variable>| {
        for v in vars {
            let path = if prefix.is_empty() { v.name() } else { format!("{prefix}/{}", v.name()) };
            let theirs: Vec<String> = v.dimensions().iter().map(|d| d.name()).collect();
            let ours = store.array(&path).unwrap().reader().metadata().dimension_names.clone().unwrap_or_default();
            assert_eq!(ours, theirs, "{path}: dimension names");
            compared += 1;
        }
    };
    check("", source.variables().collect());
    for (name, group) in &groups {
        check(name, group.variables().collect());
    }
    assert_eq!(compared, 10, "every variable compared");
    // The fixed-length string: `_Encoding` for xarray, and its bytes up to the NUL are libnetcdf's string.
    let meta = array_json(&store_path, "meta");
    assert_eq!(meta["attributes"]["_Encoding"], "utf-8", "{meta}");
    let ours = read(&store, "meta", "").bytes;
    let text = String::from_utf8(ours.split(|&b| b == 0).next().unwrap().to_vec()).unwrap();
    let theirs = source.variable("meta").unwrap().get_string(..).unwrap();
    assert_eq!(text, theirs);
    // A netCDF-4 char array (HDF5 strings of one byte) stays bytes, as libnetcdf shows it.
    let chars = dir.path().join("chars.nc");
    with_hdf5_files(|| {
        let mut f = netcdf::create(&chars).unwrap();
        f.add_dimension("x", 2).unwrap();
        f.add_dimension("n", 3).unwrap();
        let text: Vec<classic::NcChar> = b"abcdef".iter().map(|&b| classic::NcChar(b)).collect();
        f.add_variable::<classic::NcChar>("label", &["x", "n"]).unwrap().put_values(&text, ..).unwrap();
    });
    let chars_store = scan_to_store(&chars, dir.path(), "c.vzarr", &ScanOptions::default());
    let label = array_json(&chars_store, "label");
    assert_eq!(label["data_type"]["name"], "null_terminated_bytes", "{label}");
    assert!(label["attributes"].get("_Encoding").is_none(), "{label}");
}
