//! szip-compressed data sets (`fixtures/hdf4/szip`, written by `make_szip.c` with a libhdf4 built with
//! szip, which Debian's libhdf4 and pyhdf's wheel are not): every value vzarr reads equals libhdf4's
//! own read of the file, recorded next to it in `szip.values` when the fixture was written. Hostile
//! szip elements (bad parameters, a corrupt stream or preamble) give one-line errors naming the file
//! and the data set.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use vzarr::{scan_file, ScanOptions};

use super::hostile::every_descriptor;
use super::read_back;

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/hdf4/szip")
}

/// `szip.values`: per data set, a u32 name length, the name, a u64 byte count and the values as
/// libhdf4 read them (little-endian).
fn libhdf4_values() -> BTreeMap<String, Vec<u8>> {
    let bytes = std::fs::read(dir().join("szip.values")).unwrap();
    let (mut out, mut at) = (BTreeMap::new(), 0);
    while at < bytes.len() {
        let n = u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
        let name = String::from_utf8(bytes[at + 4..at + 4 + n].to_vec()).unwrap();
        at += 4 + n;
        let len = u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap()) as usize;
        out.insert(name, bytes[at + 8..at + 8 + len].to_vec());
        at += 8 + len;
    }
    out
}

#[test]
#[cfg(target_endian = "little")]
fn every_value_equals_libhdf4s_read() {
    let expected = libhdf4_values();
    assert_eq!(expected.len(), 8);
    let (dataset, arrays) = read_back(&dir().join("szip.hdf"), &ScanOptions::default());
    assert!(dataset.warnings.is_empty(), "{:?}", dataset.warnings);
    for (name, want) in &expected {
        let (_, shape, got) = arrays.iter().find(|(n, ..)| n == name).unwrap_or_else(|| panic!("{name} missing"));
        assert_eq!(got.len(), want.len(), "{name} {shape:?}");
        assert!(got == want, "{name}: values differ from libhdf4's");
        let array = dataset.arrays.iter().find(|a| &a.path == name).unwrap();
        let owned = array.chunks.iter().all(|c| matches!(c, vzarr::manifest::ChunkEntry::Owned { .. }));
        assert!(owned, "{name}: szip chunks are decoded and kept by the store");
    }
}

/// The offsets of every szip header (special compressed elements with coder 5).
fn szip_headers(bytes: &[u8]) -> Vec<usize> {
    every_descriptor(bytes)
        .into_iter()
        .filter_map(|(_, tag, _, offset, _)| {
            let o = offset as usize;
            let special = tag & 0x4000 != 0 && tag & 0x8000 == 0;
            (special && bytes.get(o..o + 2) == Some(&[0, 3]) && bytes.get(o + 12..o + 14) == Some(&[0, 5])).then_some(o)
        })
        .collect()
}

/// The offset of the compressed bytes (tag 40) of the element whose header is at `header`.
fn data_of(bytes: &[u8], header: usize) -> (usize, usize) {
    let comp_ref = u16::from_be_bytes([bytes[header + 8], bytes[header + 9]]);
    every_descriptor(bytes)
        .into_iter()
        .find(|&(_, t, r, ..)| t == 40 && r == comp_ref)
        .map(|(.., o, l)| (o as usize, l as usize))
        .unwrap()
}

fn scan_error(bytes: &[u8]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hostile_szip.hdf");
    std::fs::write(&path, bytes).unwrap();
    let err = scan_file(&path, &ScanOptions::default()).expect_err("a hostile szip element must not scan");
    let message = err.to_string();
    assert!(!message.contains('\n'), "not one line: {message}");
    assert!(message.contains("hostile_szip.hdf"), "does not name the file: {message}");
    assert!(message.contains("i16_nn"), "does not name the data set: {message}");
    message
}

fn hostile(change: impl Fn(&mut Vec<u8>, usize)) -> String {
    let mut bytes = std::fs::read(dir().join("szip.hdf")).unwrap();
    let first = szip_headers(&bytes)[0];
    change(&mut bytes, first);
    let message = scan_error(&bytes);
    eprintln!("{message}");
    message
}

#[test]
fn hostile_szip_elements_name_file_and_data_set() {
    assert_eq!(szip_headers(&std::fs::read(dir().join("szip.hdf")).unwrap()).len(), 27);
    // Header: special 3, version, length, comp_ref, model, coder 5, then pixels, pixels per
    // scanline, options mask (u32), bits per pixel, pixels per block (u8).
    let odd_block = hostile(|b, h| b[h + 27] = 7);
    assert!(odd_block.contains("7 pixels per block"), "{odd_block}");
    let no_scanline = hostile(|b, h| b[h + 18..h + 22].fill(0));
    assert!(no_scanline.contains("pixels per scanline"), "{no_scanline}");
    let bits = hostile(|b, h| b[h + 26] = 48);
    assert!(bits.contains("not the element's"), "{bits}");
    let absurd = hostile(|b, h| b[h + 14..h + 18].fill(0xff));
    assert!(absurd.contains("4294967295 pixels"), "{absurd}");
    let preamble = hostile(|b, h| {
        let (data, _) = data_of(b, h);
        b[data + 1..data + 5].copy_from_slice(&0x7fff_0000i32.to_be_bytes());
    });
    assert!(preamble.contains("preamble claims"), "{preamble}");
    let zeros = hostile(|b, h| {
        let (data, len) = data_of(b, h);
        b[data + 5..data + len].fill(0);
    });
    assert!(zeros.contains("szip"), "{zeros}");
    let noise = hostile(|b, h| {
        let (data, len) = data_of(b, h);
        let mut state = 0x2545_f491_u32;
        for byte in &mut b[data + 5..data + len] {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            *byte = state as u8;
        }
        // Noise may decode to other values without error; make the stream short too.
        b[data + 1..data + 5].copy_from_slice(&8i32.to_be_bytes());
    });
    assert!(noise.contains("szip"), "{noise}");
}
