//! Hostile and broken sidecars: each gives one line naming the sidecar (and the variable where one
//! is at fault), exit code 1, no panic, and nothing written.

use crate::common::*;
use crate::interop::s;

/// A sidecar of `dmrpp/SDS_shuf_2def_fle.h5` (`IntArray`, 6 x 8 in chunks of 3 x 4) changed by
/// `edit`, beside a copy of its data file; returns what `vzarr scan` of it did.
fn scan_edited(name: &str, edit: impl FnOnce(&str) -> String) -> (Run, bool) {
    let (sidecar, data) = super::pair("dmrpp/SDS_shuf_2def_fle.h5");
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(&data, dir.path().join("a.h5")).unwrap();
    let bad = dir.path().join("a.h5.dmrpp");
    std::fs::write(&bad, edit(&std::fs::read_to_string(sidecar).unwrap())).unwrap();
    let out = dir.path().join("out.vzarr");
    let run = cli(&["scan", bad.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    let wrote = out.exists();
    eprintln!("{name}: {}", run.stderr.trim());
    (run, wrote)
}

/// Asserts one error line naming the sidecar and containing every one of `needles`.
fn assert_refused(name: &str, (run, wrote): (Run, bool), needles: &[&str]) {
    assert_eq!(run.code, 1, "{name}: exit code; stderr: {}", run.stderr);
    assert!(!wrote, "{name}: an output was written");
    let lines = run.stderr_lines();
    assert_eq!(lines.len(), 1, "{name}: {lines:?}");
    assert!(lines[0].contains("a.h5.dmrpp"), "{name}: the sidecar is not named: {}", lines[0]);
    for needle in needles {
        assert!(lines[0].contains(needle), "{name}: {needle:?} missing from: {}", lines[0]);
    }
    assert!(!run.stderr.contains("panicked"), "{name}: {}", run.stderr);
}

#[test]
fn malformed_truncated_and_entity_sidecars_are_refused_in_one_line() {
    assert_refused("truncated", scan_edited("truncated", |t| t[..t.len() / 2].to_string()), &["malformed XML"]);
    let mismatched = |t: &str| t.replacen("</Int32>", "</Float32>", 1);
    assert_refused("mismatched", scan_edited("mismatched", mismatched), &["malformed XML"]);
    let laughs = |t: &str| {
        let doctype = r#"<!DOCTYPE Dataset [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]>"#;
        t.replacen("<Dataset", &format!("{doctype}\n<Dataset"), 1).replacen(
            "<Value>3.20.13</Value>",
            "<Value>&b;</Value>",
            1,
        )
    };
    assert_refused("entities", scan_edited("entities", laughs), &["DOCTYPE"]);
    let undefined = |t: &str| t.replacen("<Value>3.20.13</Value>", "<Value>&external;</Value>", 1);
    assert_refused("undefined entity", scan_edited("undefined", undefined), &["undefined entity"]);
    assert_refused("not a DMR", scan_edited("not a DMR", |_| "<html><body/></html>".into()), &["<Dataset>"]);
}

#[test]
fn positions_counts_offsets_and_filters_out_of_bounds_name_the_variable() {
    let outside = |t: &str| t.replace("[3,4]", "[6,4]");
    assert_refused("outside", scan_edited("outside", outside), &["IntArray", "[6, 4]"]);
    let unaligned = |t: &str| t.replace("[3,4]", "[2,4]");
    assert_refused("unaligned", scan_edited("unaligned", unaligned), &["IntArray", "not a chunk origin"]);
    // Trailing zero coordinates are read by the leading ones (as BES reads them); others are refused.
    let rank = |t: &str| t.replace("[3,4]", "[3,4,1]");
    assert_refused("rank", scan_edited("rank", rank), &["IntArray", "3 coordinates"]);
    let twice = |t: &str| t.replace("[3,4]", "[0,4]");
    assert_refused("twice", scan_edited("twice", twice), &["IntArray", "twice"]);
    // A grid of 2^64 chunks: refused before any table is sized by it.
    let huge = |t: &str| t.replacen(r#"<Dim size="6"/>"#, r#"<Dim size="18446744073709551615"/>"#, 1);
    assert_refused("huge", scan_edited("huge", huge), &["IntArray", "chunks"]);
    let past = |t: &str| t.replace(r#"offset="4112""#, r#"offset="99999999""#);
    assert_refused("past the end", scan_edited("past", past), &["IntArray", "past the end"]);
    let overflow = |t: &str| t.replace(r#"offset="4112""#, r#"offset="18446744073709551615""#);
    assert_refused("overflow", scan_edited("overflow", overflow), &["IntArray", "past the end"]);
    let unknown = |t: &str| t.replace("shuffle deflate deflate fletcher32", "shuffle lzw deflate");
    assert_refused("unknown filter", scan_edited("unknown", unknown), &["IntArray", "lzw"]);
    let strings = |t: &str| {
        let vlsa = r#"<dmrpp:vlsa><v c="1000000000000000">x</v></dmrpp:vlsa>"#;
        let start = t.find("<dmrpp:chunks").unwrap();
        let end = t.find("</dmrpp:chunks>").unwrap() + "</dmrpp:chunks>".len();
        format!("{}{vlsa}{}", &t[..start], &t[end..])
            .replacen("<Int32 name=\"IntArray\">", "<String name=\"IntArray\">", 1)
            .replacen("</Int32>", "</String>", 1)
    };
    assert_refused("repeat count", scan_edited("repeat", strings), &["IntArray", "more strings"]);
    let data =
        |t: &str| t.replace(r#"dmrpp:href="data/dmrpp/SDS_shuf_2def_fle.h5""#, r#"dmrpp:href="file:///etc/passwd""#);
    assert_refused("untrusted data file", scan_edited("untrusted", data), &["/etc/passwd", "not authorized"]);
}

#[test]
fn truncated_and_corrupted_sidecars_never_panic() {
    let (mut failures, mut scanned) = (0, 0);
    for name in ["dmrpp/SDS_shuf_2def_fle.h5", "dmrpp/t_enum_grp_array.h5", "string_arrays/vl_str_dup_cross_array.h5"] {
        let (sidecar, data) = super::pair(name);
        let text = std::fs::read(&sidecar).unwrap();
        let dir = tempfile::tempdir().unwrap();
        std::fs::copy(&data, dir.path().join("a.h5")).unwrap();
        let bad = dir.path().join("a.h5.dmrpp");
        let mut variants: Vec<Vec<u8>> = (1..text.len()).step_by(23).map(|n| text[..n].to_vec()).collect();
        for at in (0..text.len()).step_by(31) {
            for byte in [b'<', b'"', b'9', b'/', 0xff] {
                let mut v = text.clone();
                v[at] = byte;
                variants.push(v);
            }
        }
        for variant in variants {
            std::fs::write(&bad, &variant).unwrap();
            // Whatever the damage: a result, never a panic; an error is one line naming the sidecar.
            match scan(&bad, &vzarr::ScanOptions::default()) {
                Ok(_) => scanned += 1,
                Err(e) => {
                    let line = e.to_string();
                    assert!(!line.contains('\n') && line.contains("a.h5.dmrpp"), "{line}");
                    failures += 1;
                }
            }
        }
    }
    assert!(failures > 100 && scanned > 10, "{failures} refused, {scanned} scanned");
}

#[test]
fn a_sidecar_of_40_million_empty_elements_is_refused_not_allocated() {
    // 160 MB of `<a/>`: under both documented limits (1 GiB, 2^26 elements), but 104 bytes of tree
    // for each 4 of XML. The scan runs with its address space capped: refused in one line, no abort.
    let (sidecar, data) = super::pair("dmrpp/SDS_shuf_2def_fle.h5");
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(&data, dir.path().join("a.h5")).unwrap();
    let text = std::fs::read_to_string(sidecar).unwrap();
    let at = text.find("<Int32 name=\"IntArray\">").unwrap();
    let bad = dir.path().join("a.h5.dmrpp");
    let mut file = std::io::BufWriter::new(std::fs::File::create(&bad).unwrap());
    use std::io::Write;
    file.write_all(&text.as_bytes()[..at]).unwrap();
    let block = "<a/>".repeat(1 << 16);
    for _ in 0..(40_000_000 >> 16) {
        file.write_all(block.as_bytes()).unwrap();
    }
    file.write_all(&text.as_bytes()[at..]).unwrap();
    drop(file);
    let out = dir.path().join("out.vzarr");
    let args = ["scan", bad.to_str().unwrap(), "-o", out.to_str().unwrap()];
    let run = crate::common::hostile::cli_limited(&args, crate::common::hostile::CHILD_TIMEOUT);
    assert_refused("empty elements", (run, out.exists()), &["bytes of memory"]);
}

#[test]
fn verify_refuses_a_sidecar_whose_data_type_lies() {
    // Issue 52 item 3: a sidecar that declares a Float32 variable Int32 scans (the bytes are the
    // same size), and verify compared bytes: "10000 elements equal". libhdf5 reads float32.
    let (sidecar, data) = super::pair("dmrpp/chunked_twoD.h5");
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(&data, dir.path().join("a.h5")).unwrap();
    let text = std::fs::read_to_string(sidecar).unwrap().replace("Float32", "Int32");
    let bad = dir.path().join("a.h5.dmrpp");
    std::fs::write(&bad, text).unwrap();
    let store = dir.path().join("out.vzarr");
    cli_expect(&["scan", &s(&bad), "-o", &s(&store)], 0);
    let run = cli(&["verify", &s(&store)]);
    assert_eq!(run.code, 1, "verify of a lying type: {}\n{}", run.stdout, run.stderr);
    let all = format!("{}{}", run.stdout, run.stderr);
    assert!(all.contains("the store's data type int32 is not the source's float32"), "{all}");
    assert!(all.contains("d_4_chunks"), "{all}");
    // The truthful sidecar verifies.
    let (sidecar, _) = super::pair("dmrpp/chunked_twoD.h5");
    std::fs::copy(sidecar, &bad).unwrap();
    let good = dir.path().join("good.vzarr");
    cli_expect(&["scan", &s(&bad), "-o", &s(&good)], 0);
    cli_expect(&["verify", &s(&good)], 0);
}

#[test]
fn a_variable_of_an_unknown_dap4_type_is_refused_by_name() {
    // Issue 52 item 5: `<Float128>` was no variable at all: 0 arrays, exit 0, no warning.
    let float128 = |t: &str| {
        t.replacen("<Int32 name=\"IntArray\">", "<Float128 name=\"IntArray\">", 1).replacen(
            "</Int32>",
            "</Float128>",
            1,
        )
    };
    assert_refused("Float128", scan_edited("Float128", float128), &["IntArray", "Float128"]);
}
