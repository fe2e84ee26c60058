//! Scalar strings that older BES sidecars list as one 16-byte piece of data, with no string type: a
//! variable-length string's heap descriptor (the string lies in the file's global heap) and a
//! fixed-length string of 16 bytes look alike in the sidecar. The scan reads the descriptor's
//! string from the data file; a fixed string stays the 16 bytes. `verify` compares both with
//! libhdf5's reads of the file.
//!
//! Offsets come from libhdf5 (the contiguous datasets' offsets), never from vzarr.

use std::path::Path;

use crate::common::*;
use hdf5::types::{FixedAscii, VarLenUnicode};

fn s(p: &Path) -> String {
    p.display().to_string()
}

#[test]
fn a_heap_descriptor_reads_as_its_string_and_a_fixed_string_as_itself() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("strings.h5");
    let (v_offset, f_offset) = with_hdf5_files(|| {
        let f = hdf5::File::create(&data).unwrap();
        let v = f.new_dataset::<VarLenUnicode>().create("vlen").unwrap();
        v.write_scalar(&"a variable-length string, longer than sixteen bytes".parse::<VarLenUnicode>().unwrap())
            .unwrap();
        let fixed = f.new_dataset::<FixedAscii<16>>().create("fixed").unwrap();
        fixed.write_scalar(&FixedAscii::<16>::from_ascii(b"2020-01-01T00:00").unwrap()).unwrap();
        (v.offset().expect("contiguous"), fixed.offset().expect("contiguous"))
    });
    let sidecar = dir.path().join("strings.h5.dmrpp");
    let xml = format!(
        r#"<?xml version="1.0" encoding="ISO-8859-1"?>
<Dataset xmlns="http://xml.opendap.org/ns/DAP/4.0#" xmlns:dmrpp="http://xml.opendap.org/dap/dmrpp/1.0.0#" dapVersion="4.0" dmrVersion="1.0" name="strings.h5" dmrpp:href="data/strings.h5">
    <String name="vlen">
        <dmrpp:chunks>
            <dmrpp:chunk offset="{v_offset}" nBytes="16"/>
        </dmrpp:chunks>
    </String>
    <String name="fixed">
        <dmrpp:chunks>
            <dmrpp:chunk offset="{f_offset}" nBytes="16"/>
        </dmrpp:chunks>
    </String>
</Dataset>
"#
    );
    std::fs::write(&sidecar, xml).unwrap();
    let store = dir.path().join("strings.vzarr");
    cli_expect(&["scan", &s(&sidecar), "-o", &s(&store)], 0);
    let run = cli_expect(&["verify", &s(&store)], 0);
    assert!(run.stdout.contains("ok   vlen: 1 elements equal"), "{}", run.stdout);
    assert!(run.stdout.contains("ok   fixed: 1 elements equal"), "{}", run.stdout);
    let data_type = |name: &str| {
        let text = std::fs::read_to_string(store.join(name).join("zarr.json")).unwrap();
        serde_json::from_str::<serde_json::Value>(&text).unwrap()["data_type"].clone()
    };
    assert_eq!(data_type("vlen"), "string");
    assert_ne!(data_type("fixed"), "string", "a fixed-length string taken for a heap descriptor");

    // BES's mark of such a descriptor on bytes that are none: refused by name, not read as text.
    let marked = std::fs::read_to_string(&sidecar).unwrap().replacen(
        "<String name=\"fixed\">\n        <dmrpp:chunks>",
        "<String name=\"fixed\">\n        <dmrpp:chunks fillValue=\"unsupported-variable-length-string\">",
        1,
    );
    assert!(marked.contains("unsupported-variable-length-string"));
    std::fs::write(&sidecar, marked).unwrap();
    let run = cli(&["scan", &s(&sidecar), "-o", &s(&dir.path().join("marked.vzarr"))]);
    assert_ne!(run.code, 0);
    assert!(run.stderr.contains("fixed") && run.stderr.contains("heap descriptor"), "{}", run.stderr);
}
