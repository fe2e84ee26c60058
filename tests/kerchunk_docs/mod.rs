//! Issue 41: hostile kerchunk documents opened by `vzarr info`: URL templates expanded once, bounded
//! and never recursively (the fault campaign's 550 kB document allocated 5 GB and aborted), and a large
//! document held at about its references' size (8 million references took 8.1 GB, 18 times the
//! document), each run as a child process under an address-space limit.

use std::path::Path;
use std::time::Duration;

use crate::common::hostile::cli_limited_to;
use crate::interop::s;

/// Array `x` of `n` one-byte chunks, as `zarr.json` text.
fn array_json(n: u64) -> String {
    serde_json::json!({"zarr_format": 3, "node_type": "array", "shape": [n], "data_type": "uint8",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [1]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": 0, "codecs": [{"name": "bytes"}]})
    .to_string()
}

/// A version 1 document with `templates`, and array `x` of one chunk whose URL is `url`.
fn one_reference(dir: &Path, templates: serde_json::Value, url: &str) -> std::path::PathBuf {
    let doc = serde_json::json!({"version": 1, "templates": templates, "refs": {
        "zarr.json": r#"{"zarr_format":3,"node_type":"group","attributes":{}}"#,
        "x/zarr.json": array_json(1),
        "x/c/0": [url, 0, 1],
    }});
    let path = dir.join("doc.json");
    std::fs::write(&path, serde_json::to_vec(&doc).unwrap()).unwrap();
    path
}

#[test]
fn template_bombs_fail_cleanly_and_fast_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let bomb = one_reference(dir.path(), serde_json::json!({"a": "b".repeat(50_000)}), &"{{a}}".repeat(100_000));
    assert!(std::fs::metadata(&bomb).unwrap().len() > 500_000);
    let started = std::time::Instant::now();
    let run = cli_limited_to(&["info", &s(&bomb)], Duration::from_secs(60), 1 << 30);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    assert_eq!(run.stderr.trim().lines().count(), 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("reference \"x/c/0\"") && run.stderr.contains("expands to more than"),
        "{}",
        run.stderr
    );
    assert!(started.elapsed() < Duration::from_secs(30), "{:?}", started.elapsed());
    // A template naming another is refused, not expanded again (20 kB took 4 GB).
    let nested = serde_json::json!({"a": "{{b}}".repeat(1000), "b": "c".repeat(10_000)});
    let doc = one_reference(dir.path(), nested, "{{a}}");
    let run = cli_limited_to(&["info", &s(&doc)], Duration::from_secs(60), 1 << 30);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    assert!(run.stderr.contains("templates/a") && run.stderr.contains("not expanded recursively"), "{}", run.stderr);
}

/// A document of 1.5 million references (about 70 MB) opens under a 1 GiB address-space limit,
/// with a peak resident size under 4 times the document (it took 18 times).
#[test]
fn a_large_document_is_held_at_about_its_references_size() {
    use std::io::Write;
    const N: u64 = 1_500_000;
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("source.bin");
    std::fs::write(&source, vec![7u8; N as usize]).unwrap();
    let url = format!("file://{}", source.display());
    let path = dir.path().join("large.json");
    let mut out = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    write!(
        out,
        r#"{{"version": 1, "refs": {{"zarr.json": {}, "x/zarr.json": {}"#,
        serde_json::to_string(r#"{"zarr_format":3,"node_type":"group","attributes":{}}"#).unwrap(),
        serde_json::to_string(&array_json(N)).unwrap()
    )
    .unwrap();
    for i in 0..N {
        write!(out, r#", "x/c/{i}": ["{url}", {i}, 1]"#).unwrap();
    }
    write!(out, "}}}}").unwrap();
    out.flush().unwrap();
    drop(out);
    let size = std::fs::metadata(&path).unwrap().len();
    let limited = cli_limited_to(&["info", &s(&path)], Duration::from_secs(300), 1 << 30);
    assert_eq!(limited.code, 0, "under a 1 GiB address space: {}", limited.stderr);
    assert!(limited.stdout.contains(&N.to_string()), "{}", limited.stdout);
    let mut command = crate::common::vzarr_command();
    command.args(["info", &s(&path)]).env("VZARR_TEST_COUNTERS", "1").stdout(std::process::Stdio::piped());
    let run = crate::common::run(command);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let peak = run.counter("peak_kib").expect("peak_kib counter");
    eprintln!("document {size} bytes, peak {} MiB", peak >> 10);
    assert!(peak * 1024 < 4 * size, "peak {peak} KiB for a document of {size} bytes");
}

/// A Zarr v2 document (as Python kerchunk writes them) whose root `.zattrs` holds a 50 MB string
/// opens with a peak resident size under 4 times the document (a 200 MB attribute took 1.9 GB, about
/// 9 times), and the attribute read back through the store is the one written.
#[test]
fn a_long_attribute_string_is_held_at_about_its_size() {
    let dir = tempfile::tempdir().unwrap();
    // Quotes, backslashes and non-ASCII text among plain letters: escapes in the document.
    let text: String = "a \"quoted\" \\ word: température; ".repeat(1_600_000);
    assert!(text.len() > 50_000_000);
    let zattrs = serde_json::json!({"title": &text, "units": "K"}).to_string();
    let doc = serde_json::json!({"version": 1, "refs": {
        ".zgroup": r#"{"zarr_format": 2}"#,
        ".zattrs": zattrs,
    }});
    let path = dir.path().join("long.json");
    std::fs::write(&path, serde_json::to_vec(&doc).unwrap()).unwrap();
    drop((doc, zattrs));
    let size = std::fs::metadata(&path).unwrap().len();
    let mut command = crate::common::vzarr_command();
    command.args(["info", &s(&path)]).env("VZARR_TEST_COUNTERS", "1").stdout(std::process::Stdio::null());
    let run = crate::common::run(command);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let peak = run.counter("peak_kib").expect("peak_kib counter");
    eprintln!("document {size} bytes, peak {} MiB", peak >> 10);
    assert!(peak * 1024 < 4 * size, "peak {peak} KiB for a document of {size} bytes");
    let nothing = vzarr::read::Authorization::new(Vec::<String>::new());
    let store = vzarr::read::blocking::BlockingStore::open(s(&path).as_str(), &nothing).unwrap();
    let root: serde_json::Value = serde_json::from_slice(&store.node_metadata("").unwrap()).unwrap();
    assert_eq!(root["attributes"]["units"], "K");
    assert!(root["attributes"]["title"] == text.as_str(), "the long attribute differs from the one written");
}
