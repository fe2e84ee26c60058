//! What a BES sidecar leaves out of a variable and only the data file's datatype says, as BES's own
//! sidecars have it (`Scalar_compact_vlstr.h5`, `FValue_string_sca.h5`,
//! `compound_simple_scalar_vlen_str.h5`), and the older sidecars' chunks listed in the variable
//! itself (`d_int.h5`):
//! - a scalar `String` held as compact text under `<dmrpp:chunks/>`: fixed-length or variable-length;
//! - a fixed-length `String` never written, with no length given;
//! - a structure's string members in `dmrpp:specialstructuredata`: fixed-length or not.
//!
//! Each sidecar is scanned, its arrays typed as the file's own scan types them, and `verify` compares
//! every value with libhdf5's read of the file. Offsets come from libhdf5, never from vzarr.

use std::path::Path;

use base64::Engine as _;
use hdf5::types::{FixedAscii, VarLenUnicode};

use crate::common::*;

fn s(p: &Path) -> String {
    p.display().to_string()
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The `data_type` of array `name` of the native store at `store`.
fn data_type(store: &Path, name: &str) -> serde_json::Value {
    let text = std::fs::read_to_string(store.join(name).join("zarr.json")).unwrap();
    serde_json::from_str::<serde_json::Value>(&text).unwrap()["data_type"].clone()
}

/// Writes `xml`'s datasets as the sidecar of `data`, scans it and the file into stores, and checks
/// that `verify` proves the sidecar's store and that every array is typed as the file's scan types
/// it.
fn scan_and_prove(dir: &Path, data: &Path, body: &str, arrays: &[&str]) {
    let name = data.file_name().unwrap().to_string_lossy();
    let xml = format!(
        r#"<?xml version="1.0" encoding="ISO-8859-1"?>
<Dataset xmlns="http://xml.opendap.org/ns/DAP/4.0#" xmlns:dmrpp="http://xml.opendap.org/dap/dmrpp/1.0.0#" dapVersion="4.0" dmrVersion="1.0" name="{name}" dmrpp:href="data/{name}">
{body}</Dataset>
"#
    );
    let sidecar = dir.join(format!("{name}.dmrpp"));
    std::fs::write(&sidecar, xml).unwrap();
    let (from_sidecar, from_file) = (dir.join("sidecar.vzarr"), dir.join("file.vzarr"));
    cli_expect(&["scan", &s(&sidecar), "-o", &s(&from_sidecar)], 0);
    cli_expect(&["scan", &s(data), "-o", &s(&from_file)], 0);
    let run = cli_expect(&["verify", &s(&from_sidecar)], 0);
    for array in arrays {
        assert!(run.stdout.contains(&format!("ok   {array}: ")), "{array}: {}", run.stdout);
        assert_eq!(data_type(&from_sidecar, array), data_type(&from_file, array), "{array}: data type");
    }
}

#[test]
fn compact_scalar_strings_take_their_kind_from_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("scalars.h5");
    let (vlen, fixed) = ("An HDF5 vlen scalar string.", "An HDF5 scalar string");
    with_hdf5_files(|| {
        let f = hdf5::File::create(&data).unwrap();
        let v = f.new_dataset::<VarLenUnicode>().create("vlen").unwrap();
        v.write_scalar(&vlen.parse::<VarLenUnicode>().unwrap()).unwrap();
        let x = f.new_dataset::<FixedAscii<21>>().create("fixed").unwrap();
        x.write_scalar(&FixedAscii::<21>::from_ascii(fixed.as_bytes()).unwrap()).unwrap();
    });
    // BES writes both alike: an empty `dmrpp:chunks` and the text as compact data.
    let string = |name: &str, text: &str| {
        format!(
            "    <String name=\"{name}\">\n        <dmrpp:chunks fillValue=\"unsupported-string\"/>\n        \
             <dmrpp:compact>{}</dmrpp:compact>\n    </String>\n",
            b64(text.as_bytes())
        )
    };
    let body = string("vlen", vlen) + &string("fixed", fixed);
    scan_and_prove(dir.path(), &data, &body, &["vlen", "fixed"]);
    let store = dir.path().join("sidecar.vzarr");
    assert_eq!(data_type(&store, "vlen"), "string");
    assert_ne!(data_type(&store, "fixed"), "string");
}

#[test]
fn a_string_never_written_takes_its_length_from_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("never.h5");
    with_hdf5_files(|| {
        let f = hdf5::File::create(&data).unwrap();
        f.new_dataset::<FixedAscii<5>>().create("never").unwrap();
    });
    let body = "    <String name=\"never\">\n        <dmrpp:chunks fillValue=\"\"/>\n    </String>\n";
    scan_and_prove(dir.path(), &data, body, &["never"]);
}

#[test]
fn chunks_listed_in_the_variable_itself_are_read() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d_int.h5");
    let offset = with_hdf5_files(|| {
        let f = hdf5::File::create(&data).unwrap();
        let d = f.new_dataset::<i16>().shape([2]).create("d16").unwrap();
        d.write(&[i16::MIN, i16::MAX]).unwrap();
        d.offset().expect("contiguous")
    });
    let body = format!(
        "    <Int16 name=\"d16\">\n        <Dim size=\"2\"/>\n        <dmrpp:chunk nBytes=\"4\" offset=\"{offset}\"/>\n    </Int16>\n"
    );
    scan_and_prove(dir.path(), &data, &body, &["d16"]);
}

/// A compound of a number and a variable-length string, as h5py writes such records.
#[derive(hdf5::H5Type, Clone)]
#[repr(C)]
struct Record {
    orbit: i32,
    year: VarLenUnicode,
}

#[test]
fn structure_string_members_take_their_kind_from_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("record.h5");
    let (orbit, year) = (1153i32, "2023");
    with_hdf5_files(|| {
        let f = hdf5::File::create(&data).unwrap();
        let d = f.new_dataset::<Record>().create("DSC_scalar").unwrap();
        d.write_scalar(&Record { orbit, year: year.parse().unwrap() }).unwrap();
    });
    // BES's elements: each number's bytes, each string as base64 and `;`, all of it base64.
    let mut elements = orbit.to_le_bytes().to_vec();
    elements.extend(format!("{};", b64(year.as_bytes())).bytes());
    let body = format!(
        "    <Structure name=\"DSC_scalar\">\n        <Int32 name=\"orbit\"/>\n        <String name=\"year\"/>\n        \
         <dmrpp:chunks fillValue=\"0\"/>\n        <dmrpp:specialstructuredata>{}</dmrpp:specialstructuredata>\n    \
         </Structure>\n",
        b64(&elements)
    );
    scan_and_prove(dir.path(), &data, &body, &["DSC_scalar"]);
}
