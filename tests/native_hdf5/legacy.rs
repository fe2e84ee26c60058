//! Layouts of old writers found in the real-world corpus (tests/corpus): each file is made by libhdf5
//! and patched into the old form, and every value read through vzarr must equal libhdf5's read.

use super::hostile::positions;
use crate::common::hdf5_oracle::read_native;
use crate::common::{open_store, read, scan_to_store, with_hdf5_files};
use vzarr::ScanOptions;

/// PyTables 1.x (`tables/tests/zerodim-attrs-1.4.h5`) wrote contiguous layout messages of version 1,
/// which store no size: their dimensions multiply to 262144 for a 4-byte scalar. libhdf5 reads the
/// element count x element size; so must vzarr (it refused the file).
#[test]
fn a_version_1_contiguous_layout_reads_its_elements() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("layout_v1.h5");
    let value = 0x1234_5678_i32;
    with_hdf5_files(|| {
        let file = hdf5::File::create(&path).unwrap();
        file.new_dataset::<i32>().create("a").unwrap().write_scalar(&value).unwrap();
    });
    let mut bytes = std::fs::read(&path).unwrap();
    let data = positions(&bytes, &value.to_le_bytes());
    assert_eq!(data.len(), 1, "the value is stored once");
    let address = (data[0] as u64).to_le_bytes();
    // Version 3 contiguous: version, class, address, size (4): 18 bytes, padded to 24 in the version-1
    // object header. Version 1 in 20 of those 24: version, rank 1, class, 5 reserved, address, one
    // 32-bit dimension (65536 x 4 bytes != 4).
    let v3: Vec<u8> = [&[3u8, 1][..], &address, &4u64.to_le_bytes()].concat();
    let at = positions(&bytes, &v3);
    assert_eq!(at.len(), 1, "one version-3 contiguous layout message");
    let v1: Vec<u8> = [&[1u8, 1, 1, 0, 0, 0, 0, 0][..], &address, &65536u32.to_le_bytes()].concat();
    assert_eq!(&bytes[at[0] - 8..at[0] - 4], &[8, 0, 24, 0], "a 24-byte layout message");
    bytes[at[0]..at[0] + v1.len()].copy_from_slice(&v1);
    std::fs::write(&path, &bytes).unwrap();

    let theirs = read_native(&path, "a", 4);
    assert_eq!(theirs, value.to_ne_bytes(), "libhdf5 reads the patched file");
    let store = scan_to_store(&path, dir.path(), "v1.vzarr", &ScanOptions::default());
    let ours = read(&open_store(&store), "a", "");
    assert_eq!(ours.bytes, theirs);
}
