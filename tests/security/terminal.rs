//! Names reach the terminal escaped (issue 52 item 9): a sidecar variable named with ESC and CR, an
//! output or input name with ESC, CR, BEL, TAB or a newline, are printed as `\x1b`, `\r`, `\x07`,
//! `\t`, `\n`: an error stays one line and no control character is written.

use crate::common::*;

/// No control character but the line ends in `text`.
fn assert_no_controls(what: &str, text: &str) {
    let raw: Vec<char> = text.chars().filter(|c| c.is_control() && *c != '\n').collect();
    assert!(raw.is_empty(), "{what}: raw control characters {raw:?} in {text:?}");
}

#[test]
fn a_sidecar_variable_named_with_escapes_is_printed_escaped() {
    let data = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/dmrpp/dmrpp/SDS_shuf_2def_fle.h5");
    let sidecar = data.with_file_name("SDS_shuf_2def_fle.h5.dmrpp");
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(&data, dir.path().join("a.h5")).unwrap();
    let text = std::fs::read_to_string(sidecar).unwrap();
    let hostile = text
        .replacen(r#"<Int32 name="IntArray">"#, r#"<Int32 name="x&#x1b;[2J&#13;y&#7;">"#, 1)
        .replace("shuffle deflate deflate fletcher32", "shuffle lzw");
    let bad = dir.path().join("a.h5.dmrpp");
    std::fs::write(&bad, hostile).unwrap();
    let out = dir.path().join("out.vzarr");
    let run = cli(&["scan", bad.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_no_controls("stderr", &run.stderr);
    assert_eq!(run.stderr_lines().len(), 1, "{}", run.stderr);
    assert!(run.stderr.contains("x\\x1b[2J\\ry\\x07"), "{}", run.stderr);
}

#[test]
fn input_and_output_names_with_control_characters_are_printed_escaped() {
    let f = Fixture::new(|d| fixtures::write_monthly(d, &fixtures::Monthly::new(2023, 2)));
    let dir = f.dir.path();
    // A missing input whose name holds a newline: one line, the newline shown as \n.
    let missing = dir.join("a\nb\u{7}.nc");
    let run = cli(&["scan".as_ref(), missing.as_os_str(), "-o".as_ref(), dir.join("x.vzarr").as_os_str()]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_no_controls("missing input", &run.stderr);
    assert_eq!(run.stderr_lines().len(), 1, "{}", run.stderr);
    assert!(run.stderr.contains("a\\nb\\x07.nc"), "{}", run.stderr);
    // An output named with ESC, CR and TAB: what scan, info and verify print of it is escaped.
    let out = dir.join("o\u{1b}]0;x\r\t.vzarr");
    let run = cli(&["scan".as_ref(), f.path.as_os_str(), "-o".as_ref(), out.as_os_str()]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_no_controls("scan", &format!("{}{}", run.stdout, run.stderr));
    for command in ["info", "verify"] {
        let run = cli(&[command.as_ref(), out.as_os_str()]);
        assert_eq!(run.code, 0, "{command}: {}", run.stderr);
        assert_no_controls(command, &format!("{}{}", run.stdout, run.stderr));
    }
    // Refused for existing: the name escaped in the error line.
    let run = cli(&["scan".as_ref(), f.path.as_os_str(), "-o".as_ref(), out.as_os_str()]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.contains("o\\x1b]0;x\\r\\t.vzarr: already exists"), "{}", run.stderr);
}
