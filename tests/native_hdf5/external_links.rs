//! HDF5 external links (`h5py.ExternalLink`, `H5Lcreate_external`): the scan follows them as libhdf5
//! does and references the linked datasets' chunks in the file they lie in (a source of its own).
//! Fixtures by `tests/python/make_external_links.py`; expected values come from libhdf5 reading the
//! linking file (libhdf5 follows the links), and from libnetcdf for the netCDF view.

use std::path::{Path, PathBuf};

use vzarr::dataset::ChunkEntry;
use vzarr::ScanOptions;

use crate::common::hdf5_oracle::{chunk_at, read_native};
use crate::common::*;

/// The fixtures, written by `make_external_links.py` into `dir` (None without the Python environment).
fn fixtures(dir: &Path) -> Option<PathBuf> {
    super::python_fixtures("make_external_links.py", dir, &[], "the external link tests")
}

/// The datasets libhdf5 opens through `file`, external links followed (dangling ones skipped), with
/// their element counts and sizes.
fn libhdf5_datasets(file: &Path) -> Vec<(String, usize)> {
    fn walk(group: &hdf5::Group, prefix: &str, out: &mut Vec<(String, usize)>) {
        for name in group.member_names().unwrap() {
            let path = if prefix.is_empty() { name.clone() } else { format!("{prefix}/{name}") };
            if let Ok(ds) = group.dataset(&name) {
                out.push((path, ds.size() * ds.dtype().unwrap().size()));
            } else if let Ok(g) = group.group(&name) {
                walk(&g, &path, out);
            }
        }
    }
    with_hdf5_files(|| {
        let f = hdf5::File::open(file).unwrap();
        let mut out = Vec::new();
        walk(&f, "", &mut out);
        out
    })
}

#[test]
fn linked_groups_and_datasets_read_as_libhdf5_reads_them_through_the_link() {
    let dir = tempfile::tempdir().unwrap();
    let Some(fx) = fixtures(dir.path()) else { return };
    let (main, target) = (fx.join("main.h5"), fx.join("target.h5"));
    let dataset = scan(&main, &ScanOptions::default()).unwrap();
    // The linking file, then the linked one (opened once, however many links lead to it).
    let sources: Vec<String> = dataset.sources.iter().map(|s| s.location.clone()).collect();
    assert_eq!(sources.len(), 2, "{sources:?}");
    assert!(sources[1].ends_with("/target.h5"), "{sources:?}");
    assert_eq!(dataset.sources.get(1).unwrap().size, std::fs::metadata(&target).unwrap().len());
    // Every chunk of a linked dataset references the linked file where libhdf5 finds it.
    let linked = dataset.array("linked_chunked").unwrap();
    let grid = &linked.metadata.chunk_grid;
    for linear in 0..grid.num_chunks() {
        let origin: Vec<u64> = grid.chunk_coords(linear).iter().map(|c| c * 5).collect();
        let lib = chunk_at(&target, "data/compressed", &origin).unwrap();
        let entry = linked.chunks.entry(linear as usize);
        assert_eq!(entry, ChunkEntry::Source { source: 1, offset: lib.offset, length: lib.length }, "{origin:?}");
    }
    assert!(dataset.array("local").unwrap().chunks.iter().all(|e| matches!(e, ChunkEntry::Source { source: 0, .. })));
    // The dangling links are warned about, naming the file and the link, and their objects are absent.
    let warnings: Vec<String> = dataset.warnings.iter().map(ToString::to_string).collect();
    for link in ["dangling_file", "dangling_object"] {
        assert!(dataset.array(link).is_none());
        let found = warnings.iter().filter(|w| w.contains("main.h5") && w.contains(&format!("{link}: external link")));
        assert_eq!(found.count(), 1, "{link}: {warnings:?}");
    }
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    // Every value read through the store equals libhdf5's read through the linking file.
    let store_path = scan_to_store(&main, dir.path(), "main.vzarr", &ScanOptions::default());
    let store = open_store(&store_path);
    let datasets = libhdf5_datasets(&main);
    let paths: Vec<&str> = datasets.iter().map(|(p, _)| p.as_str()).collect();
    for expected in ["linked_group/chunked", "linked_group/contig", "linked_contig", "sub/again/compressed"] {
        assert!(paths.contains(&expected), "{paths:?}");
    }
    for (path, len) in &datasets {
        let ours = read(&store, path, "").bytes;
        assert!(ours == read_native(&main, path, *len), "{path}: values differ from libhdf5's");
    }
    let group = array_json(&store_path, "linked_group");
    assert_eq!(group["attributes"]["title"], "linked group", "{group}");
    let chunked = array_json(&store_path, "linked_group/chunked");
    assert_eq!(chunked["dimension_names"][0], "x", "the linked file's dimension scale: {chunked}");
    let run = cli_expect(&["verify".as_ref(), store_path.as_os_str()], 0);
    assert!(run.stdout.contains("ok   linked_chunked"), "{}", run.stdout);
    // The kerchunk export references the linked file.
    let refs = dir.path().join("main.json");
    cli_expect(&["export".as_ref(), store_path.as_os_str(), "--kerchunk".as_ref(), refs.as_os_str()], 0);
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&refs).unwrap()).unwrap();
    let chunk = &json["refs"]["linked_chunked/c/0/0"];
    assert!(chunk[0].as_str().is_some_and(|url| url.ends_with("/target.h5")), "{chunk}");
    // The reference document and an Icechunk repository number their sources as the scan did (the
    // first array's chunks lie in the linked file), so verify compares each array with its source.
    let run = cli_expect(&["verify".as_ref(), refs.as_os_str()], 0);
    assert!(run.stdout.contains("0 failed"), "{}", run.stdout);
    let repo = dir.path().join("main.icechunk");
    // Exit 3: written, with the dangling links' warnings.
    cli_expect(
        &["scan".as_ref(), main.as_os_str(), "-o".as_ref(), repo.as_os_str(), "--format".as_ref(), "icechunk".as_ref()],
        3,
    );
    let run = cli_expect(&["verify".as_ref(), repo.as_os_str()], 0);
    assert!(run.stdout.contains("ok   linked_chunked") && run.stdout.contains("0 failed"), "{}", run.stdout);
}

/// Where libnetcdf opens the linking file, the store shows what it shows: variables, dimension names
/// (phony dimensions numbered across linked datasets) and values.
#[test]
fn linked_datasets_have_libnetcdfs_dimensions() {
    let dir = tempfile::tempdir().unwrap();
    let Some(fx) = fixtures(dir.path()) else { return };
    let file = fx.join("netcdf.h5");
    let store_path = scan_to_store(&file, dir.path(), "netcdf.vzarr", &ScanOptions::default());
    assert_store_matches_oracle(&file, &store_path);
}

/// A cycle of links (a file linking to a file that links back to it) is cut where a link leads back
/// to a group containing it, with a warning; the rest reads as libhdf5 reads it.
#[test]
fn link_cycles_end_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let Some(fx) = fixtures(dir.path()) else { return };
    let file = fx.join("cycle_a.h5");
    let dataset = scan(&file, &ScanOptions::default()).unwrap();
    let mut arrays: Vec<&str> = dataset.arrays.iter().map(|a| a.path.as_str()).collect();
    arrays.sort_unstable();
    assert_eq!(arrays, ["other/v", "v"]);
    let warnings: Vec<String> = dataset.warnings.iter().map(ToString::to_string).collect();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains("cycle_a.h5") && warnings[0].contains("other/other: left out"), "{warnings:?}");
    let store_path = scan_to_store(&file, dir.path(), "cycle.vzarr", &ScanOptions::default());
    let store = open_store(&store_path);
    assert_eq!(read(&store, "other/v", "").bytes, read_native(&file, "other/v", 12));
}

/// A link to a file outside the directory of the file scanned (and outside every container the
/// options trust) is not followed: a warning, the object absent.
#[test]
fn links_out_of_the_trusted_containers_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let Some(fx) = fixtures(dir.path()) else { return };
    let inner = fx.join("inner");
    std::fs::create_dir(&inner).unwrap();
    let main = inner.join("main.h5");
    std::fs::copy(fx.join("main.h5"), &main).unwrap();
    std::os::unix::fs::symlink(fx.join("target.h5"), inner.join("target.h5")).unwrap();
    let dataset = scan(&main, &ScanOptions::default()).unwrap();
    assert!(dataset.array("linked_chunked").is_none());
    let warnings: Vec<String> = dataset.warnings.iter().map(ToString::to_string).collect();
    assert!(warnings.iter().any(|w| w.contains("linked_chunked") && w.contains("not authorized")), "{warnings:?}");
    // Trusted by the options, the same link is followed.
    let options = ScanOptions { link_authorization: vzarr::read::Authorization::new([s(&fx)]), ..Default::default() };
    let dataset = scan(&main, &options).unwrap();
    assert!(dataset.array("linked_chunked").is_some());
}

/// Files whose variables lie in linked files combine along a dimension: each chunk keeps its file.
#[test]
fn linking_files_combine_along_a_dimension() {
    let dir = tempfile::tempdir().unwrap();
    let Some(fx) = fixtures(dir.path()) else { return };
    let (day1, day2) = (fx.join("day1.h5"), fx.join("day2.h5"));
    let store_path = dir.path().join("days.vzarr");
    let args = ["scan", &s(&day1), &s(&day2), "--concat", "time", "-o", &s(&store_path)];
    cli_expect(&args, 0);
    let store = open_store(&store_path);
    let ours = read(&store, "values", "").bytes;
    let theirs = [read_native(&day1, "values", 48), read_native(&day2, "values", 48)].concat();
    assert_eq!(ours, theirs);
    let run = cli_expect(&["verify".as_ref(), store_path.as_os_str()], 0);
    assert!(run.stdout.contains("ok   values"), "{}", run.stdout);
}

fn s(path: &Path) -> String {
    path.display().to_string()
}
