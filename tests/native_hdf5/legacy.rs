//! Layouts of old writers found in the real-world corpus (tests/corpus): each file is made by libhdf5
//! and patched into the old form, and every value read through vzarr must equal libhdf5's read.

use std::path::Path;

use super::hostile::positions;
use crate::common::hdf5_oracle::read_native;
use crate::common::{open_store, read, scan_to_store, with_hdf5_files};
use vzarr::ScanOptions;

/// A file with the scalar `a` = `value`, contiguous, its layout message rewritten to `version` (1 or 2).
fn scalar_with_layout_version(path: &Path, value: i32, version: u8) {
    with_hdf5_files(|| {
        let file = hdf5::File::create(path).unwrap();
        file.new_dataset::<i32>().create("a").unwrap().write_scalar(&value).unwrap();
    });
    let mut bytes = std::fs::read(path).unwrap();
    let data = positions(&bytes, &value.to_le_bytes());
    assert_eq!(data.len(), 1, "the value is stored once");
    let address = (data[0] as u64).to_le_bytes();
    // Version 3 contiguous: version, class, address, size (4): 18 bytes, padded to 24 in the version-1
    // object header. Versions 1 and 2 in 20 of those 24: version, rank 1, class, 5 reserved, address,
    // one 32-bit dimension (65536: not the storage size, which these versions do not record).
    let v3: Vec<u8> = [&[3u8, 1][..], &address, &4u64.to_le_bytes()].concat();
    let at = positions(&bytes, &v3);
    assert_eq!(at.len(), 1, "one version-3 contiguous layout message");
    assert_eq!(&bytes[at[0] - 8..at[0] - 4], &[8, 0, 24, 0], "a 24-byte layout message");
    let old: Vec<u8> = [&[version, 1, 1, 0, 0, 0, 0, 0][..], &address, &65536u32.to_le_bytes()].concat();
    bytes[at[0]..at[0] + old.len()].copy_from_slice(&old);
    std::fs::write(path, &bytes).unwrap();
}

/// PyTables 1.x (`tables/tests/zerodim-attrs-1.4.h5`) wrote contiguous layout messages of version 2,
/// with no size and 5 reserved bytes (hdf5-reader skipped 3 and took a wrong address): vzarr refused
/// the file. libhdf5 reads elements x element size from the address; so must vzarr.
#[test]
fn contiguous_layouts_of_versions_1_and_2_read_like_libhdf5() {
    let dir = tempfile::tempdir().unwrap();
    for (version, value) in [(1u8, 0x1234_5678_i32), (2, -0x0765_4321)] {
        let path = dir.path().join(format!("layout_v{version}.h5"));
        scalar_with_layout_version(&path, value, version);
        let theirs = read_native(&path, "a", 4);
        assert_eq!(theirs, value.to_ne_bytes(), "version {version}: libhdf5 reads the patched file");
        let store = scan_to_store(&path, dir.path(), &format!("v{version}.vzarr"), &ScanOptions::default());
        let ours = read(&open_store(&store), "a", "");
        assert_eq!(ours.bytes, theirs, "version {version}");
    }
}
