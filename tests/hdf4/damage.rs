//! Damaged HDF4 files, as the fault campaign of issue 41 made them: what libhdf4 refuses, vzarr's scan
//! refuses with one line naming the file and the data set; what libhdf4 reads, vzarr reads to the same
//! values or refuses. Never fill values or a wrong type with success.

use std::path::Path;

use vzarr::{scan_file, ScanOptions};

use super::hostile::every_descriptor;
use super::oracle::libhdf4_outcome;
use super::{fixture, read_back};

/// Every array's (name, native values), or the error's message.
type Outcome = Result<Vec<(String, Vec<u8>)>, String>;

/// vzarr's scan of `bytes` (written as `name` next to copies of the fixtures' external files): the
/// error's message, or every array's (name, values).
fn vzarr(dir: &Path, name: &str, bytes: &[u8]) -> (std::path::PathBuf, Outcome) {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    let outcome = match scan_file(&path, &ScanOptions::default()) {
        Err(e) => Err(e.to_string()),
        Ok(_) => Ok(read_back(&path, &ScanOptions::default()).1.into_iter().map(|(n, _, v)| (n, v)).collect()),
    };
    (path, outcome)
}

/// Checks vzarr against libhdf4 on `bytes`: refused by both (vzarr naming the file and the data set
/// libhdf4 names), or read by libhdf4 and either refused by vzarr or read to the same values. Returns
/// vzarr's error when it refused.
fn agree(name: &str, bytes: &[u8]) -> Option<String> {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(fixture("external_data.bin"), dir.path().join("external_data.bin")).unwrap();
    let (path, ours) = vzarr(dir.path(), name, bytes);
    let theirs = libhdf4_outcome(&path);
    match (&theirs, &ours) {
        (Err(why), Ok(_)) => panic!("{name}: libhdf4 refuses it ({why}) but vzarr reads it"),
        (_, Err(message)) => {
            assert!(!message.contains('\n') && message.contains(name), "{name}: not one line naming it: {message}");
            if let Err(why) = &theirs {
                if let Some((dataset, _)) = why.split_once(": SDreaddata") {
                    assert!(message.contains(dataset), "{name}: does not name data set {dataset}: {message}");
                }
            }
            Some(message.clone())
        }
        (Ok(values), Ok(arrays)) => {
            for (dataset, expected) in values {
                let ours = arrays.iter().find(|(n, _)| n == dataset).map(|(_, v)| v);
                assert!(ours == Some(expected), "{name}: {dataset}: vzarr's values differ from libhdf4's");
            }
            None
        }
    }
}

/// The position of the descriptor (tag, ref) (special bit ignored).
fn descriptor(bytes: &[u8], tag: u16, reference: u16) -> usize {
    let found = every_descriptor(bytes).into_iter().find(|&(_, t, r, ..)| t & !0x4000 == tag && r == reference);
    found.map(|(at, ..)| at).unwrap_or_else(|| panic!("no descriptor ({tag}, {reference})"))
}

/// A flipped byte of the tag or ref of a data set's data descriptor: libhdf4 cannot read the data set
/// (`SDreaddata`); the scan refuses it naming it, where it used to read fill values.
#[test]
fn a_lost_data_descriptor_is_refused() {
    let original = std::fs::read(fixture("compressed.hdf")).unwrap();
    // The descriptor at byte 22 is the data element (702 special, ref 3) of data set `deflate`.
    assert_eq!(descriptor(&original, 702, 3), 22);
    let mut refused = 0;
    for at in 22..26 {
        for flip in [0x01u8, 0x80, 0x10] {
            let mut bytes = original.clone();
            bytes[at] ^= flip;
            if agree("lost.hdf", &bytes).is_some() {
                refused += 1;
            }
        }
    }
    assert_eq!(refused, 12, "every lost descriptor refused");
}

/// A first DD block of no descriptors: libhdf4 cannot open the file; neither does the scan.
#[test]
fn an_empty_dd_block_is_refused() {
    let mut bytes = std::fs::read(fixture("compressed.hdf")).unwrap();
    bytes[4..6].fill(0);
    let message = agree("empty_block.hdf", &bytes).expect("an empty DD block must be refused");
    assert!(message.contains("no descriptors"), "{message}");
}

/// A number-type record pointed at offset 0 (the signature's bytes: width 19 bits for a 1-byte
/// type): refused naming the data set, where vzarr read float32 data as uint8.
#[test]
fn a_number_type_at_offset_0_is_refused() {
    let original = std::fs::read(fixture("types.hdf")).unwrap();
    let types: Vec<usize> = every_descriptor(&original).iter().filter(|d| d.1 == 106).map(|d| d.0).collect();
    assert!(types.len() >= 4);
    for at in types {
        let mut bytes = original.clone();
        bytes[at + 4..at + 8].fill(0);
        let message = agree("type_at_0.hdf", &bytes).expect("a number type at offset 0 must be refused");
        assert!(message.contains("number type"), "{message}");
    }
}

/// A fill-value attribute's record pointed at offset 0 (the signature's bytes, 3587 for 65000):
/// refused naming the data set, where vzarr filled missing chunks with 3587 (libhdf4 fills them with
/// the chunk header's 65000).
#[test]
fn a_fill_value_at_offset_0_is_refused() {
    let mut bytes = std::fs::read(fixture("chunked_partial.hdf")).unwrap();
    let at = fill_value_record(&bytes);
    bytes[at + 4..at + 8].fill(0);
    let message = agree("fill_at_0.hdf", &bytes).expect("a fill value at offset 0 must be refused");
    assert!(message.contains("partial") && message.contains("signature"), "{message}");
}

/// A fill-value attribute damaged to another value: missing chunks read as libhdf4 reads them, with
/// the chunk header's fill value (the copy libhdf4 reads through).
#[test]
fn missing_chunks_take_the_chunk_headers_fill_value() {
    let mut bytes = std::fs::read(fixture("chunked_partial.hdf")).unwrap();
    let at = fill_value_record(&bytes);
    let offset = u32::from_be_bytes(bytes[at + 4..at + 8].try_into().unwrap()) as usize;
    bytes[offset..offset + 2].copy_from_slice(&1234u16.to_be_bytes());
    assert!(agree("fill_damaged.hdf", &bytes).is_none(), "read as libhdf4 reads it");
}

/// The chunk header's copy of the element size disagrees with the number type: one copy is damaged
/// and vzarr cannot tell which (libhdf4 reads through the header), so the data set is refused.
#[test]
fn a_chunk_header_disagreeing_with_the_number_type_is_refused() {
    let mut bytes = std::fs::read(fixture("chunked_partial.hdf")).unwrap();
    let (_, _, _, offset, _) = every_descriptor(&bytes)
        .into_iter()
        .find(|&(_, t, _, o, _)| t == 702 | 0x4000 && bytes[o as usize..o as usize + 2] == [0, 5])
        .expect("a chunked element");
    // special code u16, header length u32, version u8, flag, total, chunk size u32: element size next.
    let at = offset as usize + 2 + 4 + 1 + 4 + 4 + 4;
    bytes[at..at + 4].copy_from_slice(&3u32.to_be_bytes());
    let dir = tempfile::tempdir().unwrap();
    let (_, ours) = vzarr(dir.path(), "header.hdf", &bytes);
    let message = ours.expect_err("refused");
    assert!(message.contains("one copy is damaged") && message.contains("header.hdf"), "{message}");
}

/// The descriptor of the record (vdata data, tag 1963) of data set `partial`'s `_FillValue`: the
/// 2-byte record.
fn fill_value_record(bytes: &[u8]) -> usize {
    let found = every_descriptor(bytes).into_iter().find(|&(_, t, _, _, length)| t == 1963 && length == 2);
    found.expect("the _FillValue record").0
}
