//! Bounded allocation: sizes taken from a store's metadata are checked (a selection against
//! `--max-memory`, a chunk against the chunk bound, products for overflow) before anything is
//! allocated; a crafted shape is an error, never an abort or a panic.

use std::path::Path;

use crate::common::hostile::{cli_limited, CHILD_TIMEOUT};
use crate::common::*;

/// A store of the monthly fixture whose `lat` claims `n` elements in one chunk, re-bound to its
/// manifest as a deliberate attacker would.
fn huge_lat(f: &Fixture, n: u64) -> std::path::PathBuf {
    let store = scan_fixture(f);
    let meta = store.join("lat").join("zarr.json");
    let mut doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&meta).unwrap()).unwrap();
    doc["shape"] = serde_json::json!([n]);
    doc["chunk_grid"] = serde_json::json!({"name": "regular", "configuration": {"chunk_shape": [n]}});
    std::fs::write(&meta, serde_json::to_vec(&doc).unwrap()).unwrap();
    rebind(&store, "lat");
    store
}

fn read_args(store: &Path, select: &str, out: &Path) -> Vec<std::ffi::OsString> {
    let mut args: Vec<std::ffi::OsString> = vec!["read".into(), store.into(), "lat".into(), "-o".into(), out.into()];
    if !select.is_empty() {
        args.extend(["--select".into(), select.into()]);
    }
    args
}

#[test]
fn huge_shapes_are_errors_not_aborts() {
    for n in [1u64 << 40, u64::MAX] {
        let f = Fixture::new(|d| fixtures::write_monthly(d, &fixtures::Monthly::new(2023, 1)));
        let store = huge_lat(&f, n);
        let out = f.join("lat.npy");
        for select in ["", "0:3"] {
            let run = cli_limited(&read_args(&store, select, &out), CHILD_TIMEOUT);
            assert_eq!(run.code, 1, "{n} [{select}]: {}", run.stderr);
            assert_eq!(run.stderr_lines().len(), 1, "{n} [{select}]: {}", run.stderr);
            assert!(!run.stderr.contains("panicked") && !out.exists(), "{}", run.stderr);
        }
        let err = try_read(&open_store(&store), "lat", "0:3").expect_err("huge chunk");
        assert!(err.contains("lat"), "{err}");
        let info = cli_limited(&["info".as_ref(), store.as_os_str()], CHILD_TIMEOUT);
        assert!(!info.stderr.contains("panicked"), "{}", info.stderr);
    }
}

#[test]
fn selections_are_checked_against_max_memory() {
    let f = Fixture::new(|d| fixtures::write_monthly(d, &fixtures::Monthly::new(2023, 1)));
    let store = scan_fixture(&f);
    let out = f.join("tas.npy");
    let args = |limit: &str| -> Vec<std::ffi::OsString> {
        vec![
            "read".into(),
            store.clone().into(),
            "tas".into(),
            "-o".into(),
            out.clone().into(),
            "--max-memory".into(),
            limit.into(),
        ]
    };
    // tas is 31 x 18 x 36 float32: 80,352 bytes.
    let run = cli(&args("64K"));
    assert_eq!((run.code, run.stderr_lines().len()), (1, 1), "{}", run.stderr);
    assert!(run.stderr.contains("the selection (80352 bytes) exceeds") && run.stderr.contains("--max-memory"));
    assert!(!out.exists());
    let run = cli(&args("1M"));
    assert_eq!(run.code, 0, "{}", run.stderr);
    let ours = parse_npy(&std::fs::read(&out).unwrap());
    assert_same_elements("tas", &ours.data, &oracle_read(&f.path, "tas", None), 4);
}
