//! Structures with padding (HDF5 compounds of C-aligned members) stored contiguously and compact,
//! scanned from hand-written sidecars (BES's `structOffset` gives the members' offsets): vzarr reads
//! the stored elements (from the data file, or the sidecar's compact data) and stores them packed,
//! as it stores the file's own scan. Every member of every element read through the store equals
//! libhdf5's read of that member from the file.
//!
//! Offsets and stored bytes come from libhdf5 (the contiguous dataset's offset, the compact
//! dataset's elements read in their file type), never from vzarr.

use std::path::{Path, PathBuf};

use base64::Engine as _;
use vzarr::pipeline::{write_dataset, Format, Output};
use vzarr::ScanOptions;

use crate::common::hdf5_oracle::{read_as_stored_le, read_member};
use crate::common::*;

/// A compound of members at offsets 0, 8 and 16, 24 bytes stored (six bytes of padding after `a`,
/// four at the end); packed, 14 bytes.
#[derive(hdf5::H5Type, Clone, Copy)]
#[repr(C)]
struct Padded {
    a: i16,
    b: f64,
    c: f32,
}

/// `Padded`'s members: name, size, in order (so also their order packed).
const MEMBERS: [(&str, usize); 3] = [("a", 2), ("b", 8), ("c", 4)];
/// Elements of the contiguous dataset and of the compact one.
const CONTIGUOUS: usize = 7;
const COMPACT: usize = 3;

/// `n` elements whose members all differ.
fn values(n: usize, seed: i16) -> Vec<Padded> {
    (0..n).map(|i| Padded { a: seed - i as i16, b: f64::from(seed) * 0.5 + i as f64, c: i as f32 * -1.25 }).collect()
}

/// The sidecar's `<Structure>` of `len` elements named `name`: `chunks` inside its `dmrpp:chunks`
/// (the contiguous piece), `after` following it (the `dmrpp:compact` data).
fn structure(name: &str, len: usize, chunks: &str, after: &str) -> String {
    format!(
        r#"    <Structure name="{name}">
        <Int16 name="a"/>
        <Float64 name="b"/>
        <Float32 name="c"/>
        <Dim size="{len}"/>
        <dmrpp:chunks fillValue="0" byteOrder="LE" structOffset="8 16 24">{chunks}</dmrpp:chunks>{after}
    </Structure>
"#
    )
}

/// Writes `p.h5` (`contiguous`, `compact`: padded compounds) and the sidecar describing both;
/// returns the sidecar's and the data file's paths.
fn write_pair(dir: &Path) -> (PathBuf, PathBuf) {
    let data = dir.join("p.h5");
    let offset = with_hdf5_files(|| {
        let f = hdf5::File::create(&data).unwrap();
        let contiguous = f.new_dataset::<Padded>().shape(CONTIGUOUS).create("contiguous").unwrap();
        contiguous.write(&values(CONTIGUOUS, 100)).unwrap();
        let compact = f
            .new_dataset::<Padded>()
            .shape(COMPACT)
            .layout(hdf5::plist::dataset_create::Layout::Compact)
            .create("compact")
            .unwrap();
        compact.write(&values(COMPACT, -20)).unwrap();
        contiguous.offset().expect("contiguous")
    });
    let stored = read_as_stored_le(&data, "compact", COMPACT * std::mem::size_of::<Padded>());
    let compact = base64::engine::general_purpose::STANDARD.encode(stored);
    let bytes = CONTIGUOUS * std::mem::size_of::<Padded>();
    let xml = format!(
        r#"<?xml version="1.0" encoding="ISO-8859-1"?>
<Dataset xmlns="http://xml.opendap.org/ns/DAP/4.0#" xmlns:dmrpp="http://xml.opendap.org/dap/dmrpp/1.0.0#" dapVersion="4.0" dmrVersion="1.0" name="p.h5" dmrpp:href="data/p.h5">
{}{}</Dataset>
"#,
        structure("contiguous", CONTIGUOUS, &format!(r#"<dmrpp:chunk offset="{offset}" nBytes="{bytes}"/>"#), ""),
        structure("compact", COMPACT, "", &format!("\n        <dmrpp:compact>{compact}</dmrpp:compact>")),
    );
    let sidecar = dir.join("p.h5.dmrpp");
    std::fs::write(&sidecar, xml).unwrap();
    (sidecar, data)
}

/// Member `k` of every packed element of `packed` (elements of `MEMBERS` back to back).
fn member_of(packed: &[u8], k: usize) -> Vec<u8> {
    let size: usize = MEMBERS.iter().map(|m| m.1).sum();
    let start: usize = MEMBERS[..k].iter().map(|m| m.1).sum();
    packed.chunks_exact(size).flat_map(|e| e[start..start + MEMBERS[k].1].to_vec()).collect()
}

#[test]
fn padded_structures_stored_contiguously_and_compact_read_as_libhdf5_reads_them() {
    let dir = tempfile::tempdir().unwrap();
    let (sidecar, data) = write_pair(dir.path());
    // Slabs of at most three packed elements: the contiguous dataset is read in several pieces.
    let options = ScanOptions { max_slab_bytes: 3 * 14, ..ScanOptions::default() };
    let from_sidecar = scan(&sidecar, &options).unwrap_or_else(|e| panic!("{e}"));
    let from_file = scan(&data, &options).unwrap_or_else(|e| panic!("{e}"));
    assert!(from_sidecar.warnings.is_empty(), "{:?}", from_sidecar.warnings);
    let store_path = dir.path().join("p.vzarr");
    write_dataset(&from_sidecar, &Output::new(&store_path, Format::Native)).unwrap();
    let store = open_store(&store_path);
    for (path, n) in [("contiguous", CONTIGUOUS), ("compact", COMPACT)] {
        let (ours, theirs) = (from_sidecar.array(path).unwrap(), from_file.array(path).unwrap());
        // Stored as the file's scan stores it: the packed struct, in the same grid and codecs.
        assert_eq!(ours.metadata.data_type, theirs.metadata.data_type, "{path}");
        assert_eq!(ours.metadata.data_type.size(), 14, "{path}");
        assert_eq!(ours.metadata.chunk_grid, theirs.metadata.chunk_grid, "{path}");
        assert_eq!(ours.metadata.codecs.codecs(), theirs.metadata.codecs.codecs(), "{path}");
        let bytes = read(&store, path, "").bytes;
        assert_eq!(bytes.len(), n * 14, "{path}");
        for (k, (member, _)) in MEMBERS.iter().enumerate() {
            let expected = read_member(&data, path, &[*member], n).expect("libhdf5 reads the member");
            assert_eq!(member_of(&bytes, k), expected, "{path}.{member}");
        }
    }
    assert!(from_sidecar.array("contiguous").unwrap().chunks.len() > 1, "one slab: the test reads no pieces");
}

#[test]
fn vzarr_writes_padded_structures_as_bes_does_and_reads_them_back() {
    let dir = tempfile::tempdir().unwrap();
    let (_, data) = write_pair(dir.path());
    let offset = with_hdf5_files(|| hdf5::File::open(&data).unwrap().dataset("contiguous").unwrap().offset());
    let out = dir.path().join("out");
    let s = |p: &Path| p.display().to_string();
    cli_expect(&["scan", &s(&data), "--format", "dmrpp", "-o", &format!("{}/", s(&out))], 0);
    let ours = out.join("p.h5.dmrpp");
    let text = std::fs::read_to_string(&ours).unwrap();
    // BES's form: the stored offsets, the file's one block, no chunk shape or position.
    let bytes = CONTIGUOUS * std::mem::size_of::<Padded>();
    let block = format!(
        "structOffset=\"8 16 24\">\n            <dmrpp:chunk offset=\"{}\" nBytes=\"{bytes}\"/>\n        </dmrpp:chunks>",
        offset.expect("contiguous")
    );
    assert!(text.contains(&block), "{text}");
    // Compact: the stored (padded) elements as libhdf5 reads them in their file type.
    let stored = read_as_stored_le(&data, "compact", COMPACT * std::mem::size_of::<Padded>());
    let compact = format!(
        "structOffset=\"8 16 24\"/>\n        <dmrpp:compact>{}</dmrpp:compact>",
        base64::engine::general_purpose::STANDARD.encode(stored)
    );
    assert!(text.contains(&compact), "{text}");
    let store = dir.path().join("ours.vzarr");
    cli_expect(&["scan", &s(&ours), "-o", &s(&store)], 0);
    let run = cli_expect(&["verify", &s(&store)], 0);
    assert!(run.stdout.contains("ok   contiguous: 7 elements equal"), "{}", run.stdout);
    assert!(run.stdout.contains("ok   compact: 3 elements equal"), "{}", run.stdout);
}
