//! Outputs: `-o -` is standard output; an existing FIFO or character device (also behind a symbolic
//! link) is written through and stays what it was; a symbolic link to a file is never replaced; an
//! existing `.npy` or reference file is replaced only with `--overwrite`.

use std::ffi::OsString;
use std::path::Path;
use std::process::Stdio;

use crate::common::*;

fn monthly() -> (Fixture, std::path::PathBuf) {
    let f = Fixture::new(|d| fixtures::write_monthly(d, &fixtures::Monthly::new(2023, 3)));
    let store = scan_fixture(&f);
    (f, store)
}

fn read_args(store: &Path, out: &Path, extra: &[&str]) -> Vec<OsString> {
    let mut args: Vec<OsString> = vec!["read".into(), store.into(), "tas".into(), "-o".into(), out.into()];
    args.extend(extra.iter().map(OsString::from));
    args
}

/// Checks that `bytes` are a `.npy` of libnetcdf's `tas` of `source`.
fn assert_tas(bytes: &[u8], source: &Path) {
    let ours = parse_npy(bytes);
    assert_same_elements("tas", &ours.data, &oracle_read(source, "tas", None), 4);
}

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

fn is_fifo(path: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::symlink_metadata(path).unwrap().file_type().is_fifo()
}

#[test]
fn dash_writes_to_standard_output() {
    let (f, store) = monthly();
    let out = vzarr_command().args(read_args(&store, Path::new("-"), &[])).stderr(Stdio::piped()).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_tas(&out.stdout, &f.path);
    let out = vzarr_command()
        .args(["export".as_ref(), store.as_os_str(), "--kerchunk".as_ref(), "-".as_ref()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("the references alone on stdout");
    assert!(doc["refs"]["tas/zarr.json"].is_string());
}

#[test]
fn a_fifo_is_written_through() {
    let (f, store) = monthly();
    let fifo = f.join("pipe");
    mkfifo(&fifo);
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read(fifo).unwrap())
    };
    let run = cli(&read_args(&store, &fifo, &[]));
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_tas(&reader.join().unwrap(), &f.path);
    assert!(is_fifo(&fifo), "the FIFO was replaced");
}

#[test]
fn a_device_and_a_link_to_it_are_written_through() {
    use std::os::unix::fs::FileTypeExt;
    let (f, store) = monthly();
    let link = f.join("null.npy");
    std::os::unix::fs::symlink("/dev/null", &link).unwrap();
    for out in [Path::new("/dev/null"), &link] {
        let run = cli(&read_args(&store, out, &[]));
        assert_eq!(run.code, 0, "{}: {}", out.display(), run.stderr);
    }
    assert!(std::fs::symlink_metadata("/dev/null").unwrap().file_type().is_char_device());
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
}

#[test]
fn a_link_to_a_file_is_never_replaced() {
    let (f, store) = monthly();
    let target = f.join("old.npy");
    let first = cli(&read_args(&store, &target, &["--select", "0"]));
    assert_eq!(first.code, 0, "{}", first.stderr);
    let before = std::fs::read(&target).unwrap();
    let link = f.join("link.npy");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    for extra in [&[][..], &["--overwrite"][..]] {
        let run = cli(&read_args(&store, &link, extra));
        assert_eq!((run.code, run.stderr_lines().len()), (1, 1), "{extra:?}: {}", run.stderr);
        assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
        assert_eq!(std::fs::read(&target).unwrap(), before);
    }
}

#[test]
fn existing_outputs_are_replaced_only_with_overwrite() {
    let (f, store) = monthly();
    let npy = f.join("tas.npy");
    assert_eq!(cli(&read_args(&store, &npy, &["--select", "0"])).code, 0);
    let refused = cli(&read_args(&store, &npy, &[]));
    assert_eq!(refused.code, 1);
    assert!(refused.stderr.contains("already exists (pass --overwrite"), "{}", refused.stderr);
    let replaced = cli(&read_args(&store, &npy, &["--overwrite"]));
    assert_eq!(replaced.code, 0, "{}", replaced.stderr);
    assert_tas(&std::fs::read(&npy).unwrap(), &f.path);

    let json = f.join("refs.json");
    let export = |extra: &[&str]| {
        let mut args: Vec<OsString> =
            vec!["export".into(), store.clone().into(), "--kerchunk".into(), json.clone().into()];
        args.extend(extra.iter().map(OsString::from));
        cli(&args)
    };
    assert_eq!(export(&[]).code, 0);
    let refused = export(&[]);
    assert!(refused.code == 1 && refused.stderr.contains("already exists"), "{}", refused.stderr);
    assert_eq!(export(&["--overwrite"]).code, 0);
}

#[test]
fn a_failed_icechunk_write_never_removes_the_users_symbolic_link() {
    // Issue 52 item 8: `materialize --format icechunk` onto a symbolic link (to a file, or
    // dangling) and `scan --format icechunk --overwrite` onto one failed, then removed the link.
    let (f, store) = monthly();
    let dir = f.dir.path();
    let target = dir.join("notes.txt");
    std::fs::write(&target, b"mine").unwrap();
    let to_file = dir.join("to_file.icechunk");
    let dangling = dir.join("dangling.icechunk");
    std::os::unix::fs::symlink(&target, &to_file).unwrap();
    std::os::unix::fs::symlink(dir.join("nowhere"), &dangling).unwrap();
    for link in [&to_file, &dangling] {
        let materialize = [
            "materialize".into(),
            store.clone().into_os_string(),
            link.into(),
            "--chunks".into(),
            "time=2".into(),
            "--format".into(),
            "icechunk".into(),
        ];
        let scan = [
            "scan".into(),
            f.path.clone().into_os_string(),
            "-o".into(),
            link.into(),
            "--format".into(),
            "icechunk".into(),
            "--overwrite".into(),
        ];
        for args in [&materialize[..], &scan[..]] {
            let args: Vec<OsString> = args.to_vec();
            let run = cli(&args);
            assert_ne!(run.code, 0, "{args:?}: {}", run.stdout);
            let meta = std::fs::symlink_metadata(link).unwrap_or_else(|e| panic!("{args:?} removed the link: {e}"));
            assert!(meta.file_type().is_symlink(), "{args:?}");
        }
    }
    assert_eq!(std::fs::read(&target).unwrap(), b"mine");
    assert!(!dir.join("nowhere").exists(), "nothing made at the dangling link's target");
}

#[test]
fn scan_writes_kerchunk_json_through_special_files_as_export_does() {
    // Issue 52 item 10: `scan --format kerchunk-json -o /dev/null` was refused as "already exists"
    // (with --overwrite "not a kerchunk reference file") where `export --kerchunk /dev/null` wrote.
    let (f, _) = monthly();
    let scan = |out: &Path, extra: &[&str]| {
        let mut args: Vec<OsString> = vec![
            "scan".into(),
            f.path.clone().into(),
            "--format".into(),
            "kerchunk-json".into(),
            "-o".into(),
            out.into(),
        ];
        args.extend(extra.iter().map(OsString::from));
        args
    };
    let file = f.join("refs.json");
    cli_expect(&scan(&file, &[]), 0);
    let expected: serde_json::Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    for extra in [&[][..], &["--overwrite"][..]] {
        let run = cli(&scan(Path::new("/dev/null"), extra));
        assert_eq!(run.code, 0, "{extra:?}: {}", run.stderr);
    }
    use std::os::unix::fs::FileTypeExt;
    assert!(std::fs::symlink_metadata("/dev/null").unwrap().file_type().is_char_device());
    let fifo = f.join("pipe");
    mkfifo(&fifo);
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read(fifo).unwrap())
    };
    let run = cli(&scan(&fifo, &[]));
    assert_eq!(run.code, 0, "{}", run.stderr);
    let through: serde_json::Value = serde_json::from_slice(&reader.join().unwrap()).unwrap();
    assert_eq!(through["refs"], expected["refs"], "the document written through is the file's");
    assert!(is_fifo(&fifo), "the FIFO was replaced");
    let out = vzarr_command().args(scan(Path::new("-"), &[])).stderr(Stdio::piped()).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("the references alone on stdout");
    assert_eq!(doc["refs"], expected["refs"]);
}
