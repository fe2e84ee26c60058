//! One opener for every store format (issue 43): the kind is picked once from the location, every
//! kind reads the same values through the same reader, and a location that holds no store says why
//! each kind tried did not open.

use std::path::Path;

use super::files_with_chunk;
use crate::interop::{assert_same, oracle, s, Archive};
use vzarr::formats::StoreFormat;
use vzarr::grid::Selection;
use vzarr::read::blocking::BlockingStore;
use vzarr::read::Authorization;
use vzarr::read::{OpenOptions, ReadOptions};

fn options(dir: &Path) -> OpenOptions {
    OpenOptions::new(Authorization::new([format!("{}/", dir.display())]))
}

fn read_all(store: &BlockingStore, var: &str) -> Vec<u8> {
    let array = store.array(var).unwrap();
    let selection = Selection::all(&array.reader().shape());
    array.read(&selection, &ReadOptions::default()).unwrap().bytes
}

/// A native store, an Icechunk repository and a kerchunk document of one archive open as their own
/// kinds (named as a path, a `Path` and a `file://` URL) and read libnetcdf's values.
#[test]
fn every_kind_opens_as_itself_and_reads_the_files_values() {
    let archive = Archive::new(&files_with_chunk(10, false));
    let native = archive.path("opening.vzarr");
    let repo = archive.path("opening.icechunk");
    let refs = archive.path("opening.json");
    let mut scan = vec!["scan".to_string()];
    scan.extend(archive.sources.iter().map(s));
    scan.extend(["--concat".into(), "time".into(), "-o".into()]);
    let run = |out: &Path, format: &[&str]| {
        let mut args = scan.clone();
        args.push(s(out));
        args.extend(format.iter().map(|f| f.to_string()));
        crate::common::cli_expect(&args, 0);
    };
    run(&native, &[]);
    run(&repo, &["--format", "icechunk"]);
    run(&refs, &["--format", "kerchunk-json"]);
    let expected = oracle(&archive.sources, "tas");
    let dir = archive.dir.path();
    let url = format!("file://{}", s(&refs));
    for (store, kind) in [
        (BlockingStore::open_with(s(&native), &options(dir)), StoreFormat::Native),
        (BlockingStore::open_with(repo.as_path(), &options(dir)), StoreFormat::Icechunk),
        (BlockingStore::open_with(url.as_str(), &options(dir)), StoreFormat::KerchunkJson),
    ] {
        let store = store.unwrap();
        assert_eq!(store.kind(), kind);
        assert_same(&format!("tas through {kind}"), &read_all(&store, "tas"), &expected);
    }
}

/// A URL where nothing is: the error names the location once and says why neither a native store
/// nor an Icechunk repository opened there, in one line.
#[test]
fn a_url_holding_no_store_says_why_each_kind_did_not_open() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("file://{}/nothing-here", dir.path().display());
    let error = BlockingStore::open_with(url.as_str(), &options(dir.path())).unwrap_err().to_string();
    assert!(
        error.starts_with(&format!("{url}: no vzarr store there (no vzarr.json; not an Icechunk repository")),
        "{error}"
    );
    assert!(!error.contains('\n') && error.matches(&url).count() == 1, "{error}");
}
