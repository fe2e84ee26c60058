//! Icechunk repositories read lazily (issues 25 and 27): opening reads the snapshot, a read loads
//! only the manifests holding the chunks it selects.

use std::path::{Path, PathBuf};

use super::files_with_chunk;
use crate::interop::{assert_same, oracle, s, Archive};
use vzarr::formats::{write_icechunk, IcechunkOptions};
use vzarr::grid::{DimSelection, Selection};
use vzarr::pipeline::{combine, CombineOptions, ConcatDim};
use vzarr::read::blocking::BlockingStore;
use vzarr::read::Authorization;
use vzarr::read::{OpenOptions, ReadOptions};
use vzarr::scan::{scan_files, ScanOptions};

/// The repository at `repo` opened through the library, its sources in `dir` trusted.
fn open(repo: &Path, dir: &Path) -> Result<BlockingStore, String> {
    let options = OpenOptions::new(Authorization::new([format!("{}/", dir.display())]));
    BlockingStore::open_with(s(repo), &options).map_err(|e| e.to_string())
}

/// `tas` rows `rows` (time indices) read from the store, or the error's text.
fn read_rows(store: &BlockingStore, rows: std::ops::Range<u64>) -> Result<Vec<u8>, String> {
    let array = store.array("tas").map_err(|e| e.to_string())?;
    let shape = array.reader().shape();
    let selection = Selection::new([DimSelection::from(rows), (0..shape[1]).into(), (0..shape[2]).into()], &shape)
        .expect("a selection inside the array");
    array.read(&selection, &ReadOptions::default()).map(|data| data.bytes).map_err(|e| e.to_string())
}

/// With any one manifest file of the repository removed, every chunk row of `tas` outside that
/// manifest's rows still reads libnetcdf's values, and the rows inside fail in one line naming the
/// repository: a read fetches only the manifests of the chunks it selects. Each row fails for
/// exactly one removed manifest, so every manifest serves its own rows.
#[test]
fn reads_load_only_the_manifests_they_need() {
    let archive = Archive::new(&files_with_chunk(10, true));
    let combine_options = CombineOptions { dims: vec![ConcatDim::existing("time")], ..CombineOptions::default() };
    let options = ScanOptions { concat_dims: combine_options.dim_names(), ..ScanOptions::default() };
    let dataset = combine(scan_files(&archive.sources, &options, &|_, _| {}).unwrap(), &combine_options).unwrap();
    let repo = archive.path("lazy.icechunk");
    let options = IcechunkOptions { manifest_chunks: 3, ..IcechunkOptions::default() };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(write_icechunk(&dataset, &s(&repo), &options)).unwrap();

    let expected = oracle(&archive.sources, "tas");
    let time = dataset.array("tas").unwrap().metadata.chunk_grid.dims()[0].clone();
    let row_bytes = expected.len() as u64 / time.extent();
    let rows: Vec<std::ops::Range<u64>> =
        (0..time.num_chunks()).map(|c| time.start(c)..time.start(c) + time.valid(c)).collect();
    assert!(rows.len() > 6, "the test needs several manifests of tas ({} rows)", rows.len());
    let whole = open(&repo, archive.dir.path()).unwrap();
    for row in &rows {
        let ours = read_rows(&whole, row.clone()).unwrap();
        let theirs = &expected[(row.start * row_bytes) as usize..(row.end * row_bytes) as usize];
        assert_same(&format!("tas rows {row:?}"), &ours, theirs);
    }

    let manifests: Vec<PathBuf> =
        std::fs::read_dir(repo.join("manifests")).unwrap().map(|e| e.unwrap().path()).collect();
    let mut failures_per_row = vec![0; rows.len()];
    let mut manifests_of_tas = 0;
    for manifest in &manifests {
        let aside = archive.path("aside");
        std::fs::rename(manifest, &aside).unwrap();
        let store = open(&repo, archive.dir.path()).expect("opening reads no manifest");
        let mut failed = 0;
        for (i, row) in rows.iter().enumerate() {
            match read_rows(&store, row.clone()) {
                Ok(ours) => {
                    let theirs = &expected[(row.start * row_bytes) as usize..(row.end * row_bytes) as usize];
                    assert_same(&format!("tas rows {row:?} without {}", manifest.display()), &ours, theirs);
                }
                Err(e) => {
                    assert!(e.starts_with(&s(&repo)) && !e.contains('\n'), "{e}");
                    failures_per_row[i] += 1;
                    failed += 1;
                }
            }
        }
        manifests_of_tas += usize::from(failed > 0);
        assert!(failed < rows.len(), "without {} no row of tas read", manifest.display());
        std::fs::rename(&aside, manifest).unwrap();
    }
    assert!(manifests_of_tas > 2, "tas is split into {manifests_of_tas} manifests");
    assert!(failures_per_row.iter().all(|&n| n == 1), "failures per row: {failures_per_row:?}");
}

/// `info` reads only the snapshot: it works with every manifest file gone, and says what the
/// snapshot's summary records (the same as for a native store of the same archive).
#[test]
fn info_reads_only_the_snapshot() {
    let archive = Archive::new(&files_with_chunk(10, true));
    let repo = archive.path("info.icechunk");
    super::scan_icechunk(&archive.sources, &repo, &[], 0);
    std::fs::remove_dir_all(repo.join("manifests")).unwrap();
    std::fs::create_dir(repo.join("manifests")).unwrap();
    let json = |store: &Path| {
        let out = crate::common::cli_expect(&["info", &s(store), "--json"], 0).stdout;
        let mut doc: serde_json::Value = serde_json::from_str(&out).unwrap();
        for key in ["store", "source_files"] {
            doc.as_object_mut().unwrap().remove(key);
        }
        doc
    };
    assert_eq!(json(&repo), json(&archive.store));
}
