//! Hostile HDF4 files: each is an `Err` with a one-line message naming the file, never a panic.

use vzarr::{scan_file, ScanOptions};

use super::fixture;

/// Scans `bytes` written to a temporary file and returns the error's message.
fn scan_error(bytes: &[u8]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hostile.hdf");
    std::fs::write(&path, bytes).unwrap();
    let err = scan_file(&path, &ScanOptions::default()).expect_err("a hostile file must not scan");
    let message = err.to_string();
    assert!(!message.contains('\n'), "not one line: {message}");
    assert!(message.contains("hostile.hdf"), "does not name the file: {message}");
    message
}

fn original() -> Vec<u8> {
    std::fs::read(fixture("types.hdf")).unwrap()
}

/// The ref of the first dimension record.
fn sdd_ref(bytes: &[u8]) -> u16 {
    every_descriptor(bytes).into_iter().find(|&(_, t, ..)| t == 701).map(|(_, _, r, ..)| r).unwrap()
}

#[test]
fn truncated_files() {
    let bytes = original();
    for len in [3, 4, 9, 100, bytes.len() / 2] {
        let message = scan_error(&bytes[..len]);
        eprintln!("{len}: {message}");
    }
}

#[test]
fn a_descriptor_pointing_past_the_end() {
    for tag in [702u16, 701, 1965, 1962, 106] {
        let mut bytes = original();
        for (at, t, ..) in every_descriptor(&bytes) {
            if t & !0x4000 == tag {
                bytes[at + 4..at + 8].copy_from_slice(&0xfff0_0000u32.to_be_bytes());
            }
        }
        let message = scan_error(&bytes);
        assert!(message.contains("past the end"), "tag {tag}: {message}");
    }
}

#[test]
fn a_loop_in_the_dd_blocks() {
    let mut bytes = original();
    bytes[6..10].copy_from_slice(&4u32.to_be_bytes());
    assert!(scan_error(&bytes).contains("loops"));
}

#[test]
fn absurd_dimensions() {
    let mut bytes = original();
    let offset = find(&bytes, 701, sdd_ref(&bytes)).unwrap();
    // rank 2: both extents 2^32 - 1
    bytes[offset + 2..offset + 10].copy_from_slice(&[0xff; 8]);
    let message = scan_error(&bytes);
    eprintln!("{message}");
}

#[test]
fn a_loop_in_linked_blocks() {
    let bytes = std::fs::read(fixture("unlimited.hdf")).unwrap();
    let Some(link) = linked_header(&bytes) else { panic!("unlimited.hdf has no linked-block element") };
    let mut bytes = bytes;
    // Make the first link table's `next` point at itself.
    let link_ref = u16::from_be_bytes([bytes[link + 14], bytes[link + 15]]);
    let table = find(&bytes, 20, link_ref).expect("the link table");
    bytes[table..table + 2].copy_from_slice(&link_ref.to_be_bytes());
    // The first table must not cover the whole element: its blocks after the first are emptied and
    // the element claims two blocks' worth of bytes.
    let block = u32::from_be_bytes(bytes[link + 6..link + 10].try_into().unwrap());
    bytes[link + 2..link + 6].copy_from_slice(&(2 * block).to_be_bytes());
    let per_table = u32::from_be_bytes(bytes[link + 10..link + 14].try_into().unwrap()) as usize;
    bytes[table + 4..table + 2 + 2 * per_table].fill(0);
    let message = scan_error(&bytes);
    assert!(message.contains("loop"), "{message}");
}

/// The offset of the longest special element whose header is linked blocks.
fn linked_header(bytes: &[u8]) -> Option<usize> {
    let length = |o: usize| u32::from_be_bytes(bytes[o + 2..o + 6].try_into().unwrap());
    every_descriptor(bytes)
        .into_iter()
        .filter_map(|(_, tag, _, offset, _)| {
            let o = offset as usize;
            (tag & 0x4000 != 0 && tag & 0x8000 == 0 && bytes.get(o..o + 2) == Some(&[0, 1])).then_some(o)
        })
        .max_by_key(|&o| length(o))
}

fn find(bytes: &[u8], tag: u16, reference: u16) -> Option<usize> {
    every_descriptor(bytes).into_iter().find(|&(_, t, r, ..)| t == tag && r == reference).map(|(.., o, _)| o as usize)
}

/// Every descriptor: (its position in the file, tag, ref, offset, length).
pub(crate) fn every_descriptor(bytes: &[u8]) -> Vec<(usize, u16, u16, u32, u32)> {
    let mut out = Vec::new();
    let mut at = 4usize;
    while at != 0 {
        let count = u16::from_be_bytes([bytes[at], bytes[at + 1]]) as usize;
        let next = u32::from_be_bytes(bytes[at + 2..at + 6].try_into().unwrap()) as usize;
        for i in 0..count {
            let pos = at + 6 + 12 * i;
            let d = &bytes[pos..pos + 12];
            let be32 = |k: usize| u32::from_be_bytes(d[k..k + 4].try_into().unwrap());
            out.push((pos, u16::from_be_bytes([d[0], d[1]]), u16::from_be_bytes([d[2], d[3]]), be32(4), be32(8)));
        }
        at = next;
    }
    out
}

/// Deterministic pseudo-random numbers (xorshift), so a failure reproduces.
fn xorshift(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

#[test]
fn corrupted_bytes_never_panic() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mutated.hdf");
    let options = ScanOptions { skip_unsupported: true, ..Default::default() };
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    for fixture in super::fixtures() {
        let original = std::fs::read(&fixture).unwrap();
        let spots = structure_bytes(&original);
        for _ in 0..150 {
            let mut bytes = original.clone();
            for _ in 0..1 + xorshift(&mut state) % 3 {
                let at = spots[(xorshift(&mut state) % spots.len() as u64) as usize];
                bytes[at] = match xorshift(&mut state) % 4 {
                    0 => 0,
                    1 => 0xff,
                    2 => bytes[at].wrapping_add(1),
                    _ => xorshift(&mut state) as u8,
                };
            }
            std::fs::write(&path, &bytes).unwrap();
            if let Err(e) = scan_file(&path, &options) {
                assert!(!e.to_string().contains('\n'), "{}: not one line: {e}", fixture.display());
            }
        }
    }
}

/// Offsets of structure bytes: the descriptors and the first bytes of every object that is not plain
/// data (vgroups, vdata headers, dimension records, number types, special element headers, link
/// tables, chunk tables).
fn structure_bytes(bytes: &[u8]) -> Vec<usize> {
    let mut spots = Vec::new();
    for (pos, tag, _, offset, length) in every_descriptor(bytes) {
        spots.extend(pos..pos + 12);
        let base = tag & !0x4000;
        let header = tag & 0x4000 != 0 || [1965, 1962, 1963, 701, 106, 20].contains(&base);
        if header {
            let (start, end) = (offset as usize, (offset as usize + (length as usize).min(64)).min(bytes.len()));
            spots.extend(start..end.max(start));
        }
    }
    spots
}

/// Vgroups whose data sets list their dimension record only in the numeric data group (as older
/// writers did) scan as the originals do.
#[test]
fn dimension_records_found_through_numeric_data_groups() {
    let original = original();
    let mut bytes = original.clone();
    for (_, tag, _, offset, length) in every_descriptor(&original) {
        if tag != 1965 {
            continue;
        }
        let (o, n) =
            (offset as usize, u16::from_be_bytes([original[offset as usize], original[offset as usize + 1]]) as usize);
        for k in 0..n {
            let at = o + 2 + 2 * k;
            if at + 2 <= o + length as usize && u16::from_be_bytes([bytes[at], bytes[at + 1]]) == 701 {
                bytes[at..at + 2].copy_from_slice(&1u16.to_be_bytes());
            }
        }
    }
    assert_ne!(bytes, original, "no dimension record members found");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ndg_only.hdf");
    std::fs::write(&path, &bytes).unwrap();
    let theirs = scan_file(&fixture("types.hdf"), &ScanOptions::default()).unwrap();
    let ours = scan_file(&path, &ScanOptions::default()).unwrap();
    assert_eq!(ours.arrays.len(), theirs.arrays.len());
    for (a, b) in ours.arrays.iter().zip(&theirs.arrays) {
        assert_eq!((&a.path, &a.metadata, &a.chunks), (&b.path, &b.metadata, &b.chunks));
    }
}
