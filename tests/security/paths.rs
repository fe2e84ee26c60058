//! One rule for `.` and `..` in local paths (issue 52 item 11): they resolve as the file system
//! resolves them, for the store every command opens as for the outputs they write. `info`, `read`,
//! `verify`, `export`, `materialize` and `trust` refused a store path with `..` with an object-store
//! message ("illegal character sequence '..'") that `compact` and output paths accepted.

use std::ffi::OsString;

use crate::common::*;

#[test]
fn store_paths_with_dot_dot_open_in_every_command() {
    let f = Fixture::new(|d| fixtures::write_monthly(d, &fixtures::Monthly::new(2023, 3)));
    let dir = f.dir.path();
    std::fs::create_dir(dir.join("sub")).unwrap();
    let store = scan_fixture(&f);
    let via = |name: &str| dir.join("sub").join("..").join(name);
    let dotted = via(store.file_name().unwrap().to_str().unwrap());
    assert!(dotted.to_str().unwrap().contains("/../"));
    let s = |p: &std::path::Path| OsString::from(p);
    let commands: Vec<Vec<OsString>> = vec![
        vec!["info".into(), s(&dotted)],
        vec!["read".into(), s(&dotted), "tas".into(), "-o".into(), s(&via("tas.npy"))],
        vec!["verify".into(), s(&dotted)],
        vec!["export".into(), s(&dotted), "--kerchunk".into(), s(&via("refs.json"))],
        vec!["materialize".into(), s(&dotted), s(&via("copy.zarr"))],
        vec!["trust".into(), s(&dotted), "--list".into()],
        vec!["compact".into(), s(&dotted), "--chunks".into(), "time=3".into()],
    ];
    for args in commands {
        let run = cli(&args);
        assert_eq!(run.code, 0, "{args:?}: {}", run.stderr);
        assert!(!run.stderr.contains("illegal character"), "{args:?}: {}", run.stderr);
    }
    for written in ["tas.npy", "refs.json", "copy.zarr"] {
        assert!(dir.join(written).exists(), "{written} written where the path leads");
    }
    // The values read through the dotted path are libnetcdf's.
    let ours = parse_npy(&std::fs::read(dir.join("tas.npy")).unwrap());
    assert_same_elements("tas", &ours.data, &oracle_read(&f.path, "tas", None), 4);
}
