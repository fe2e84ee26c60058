//! Icechunk repositories as output (issue 12): `vzarr scan --format icechunk` and the library's
//! `write_icechunk`.
//!
//! - icechunk-python + zarr-python + xarray (`tests/python/check_icechunk.py`) read the repository
//!   and every value equals netCDF4's reads of the sources: the sample archive (a `_FillValue`), months
//!   of unequal length chunked by 10 days, compressed (interior partial chunks rewritten into
//!   store-owned Icechunk chunks) and uncompressed (trimmed byte ranges), and the kitchen-sink file
//!   (groups, a 0-d variable, missing chunks). A source touched after the scan is refused by Icechunk.
//! - An array of more chunks than a manifest holds is split into several manifests of one snapshot,
//!   whose transaction log Icechunk reads back, and reads the same.
//! - Committing to an existing repository takes `--branch`/`--message`; refusals are one line and leave
//!   the repository's history unchanged.
//! - `append.rs`: `vzarr append REPO` (one commit per append) and `--branch` for read/info/verify.

mod append;
mod damage;
mod failed_writes;
mod lazy;
mod opening;

use std::path::{Path, PathBuf};

use crate::common::archives::{monthly, SeriesFile};
use crate::common::{cli_expect, with_hdf5_files};
use crate::interop::{python, python_required, s, Archive};
use vzarr::formats::{write_icechunk, IcechunkOptions};
use vzarr::pipeline::{combine, CombineOptions, ConcatDim};
use vzarr::scan::{scan_files, ScanOptions};

/// `info --json` output without its `source_files` (a repository lists its sources only in its
/// manifests, which `info` does not read: `null` there).
fn without_source_files(info: &str) -> serde_json::Value {
    let mut doc: serde_json::Value = serde_json::from_str(info).expect("info --json prints JSON");
    doc.as_object_mut().expect("an object").remove("source_files");
    doc
}

/// A Python with icechunk, zarr, xarray and netCDF4; `None` (a notice) when there is none and the
/// Python checks are not required.
pub(crate) fn icechunk_python() -> Option<PathBuf> {
    let python = python()?;
    let ok =
        std::process::Command::new(&python).args(["-c", "import icechunk"]).output().is_ok_and(|o| o.status.success());
    assert!(
        ok || !python_required(),
        "VZARR_REQUIRE_PYTHON=1 but icechunk is not installed: run tests/python/setup.sh"
    );
    if !ok {
        eprintln!("notice: no icechunk in {} (run tests/python/setup.sh); skipping", python.display());
    }
    ok.then_some(python)
}

/// Runs check_icechunk.py on `repo` and asserts that every check passed.
pub(crate) fn python_check(python: &Path, repo: &Path, sources: &[PathBuf], extra: &[&str]) -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/check_icechunk.py");
    let mut command = std::process::Command::new(python);
    command.arg(script).args(["--repo", &s(repo), "--concat", "time"]).args(extra);
    command.args(sources).stdout(std::process::Stdio::piped());
    let run = crate::common::run(command);
    eprintln!("{}", run.stdout);
    assert_eq!(run.code, 0, "check_icechunk.py failed:\n{}\n{}", run.stdout, run.stderr);
    run.stdout
}

fn scan_icechunk(sources: &[PathBuf], repo: &Path, extra: &[&str], code: i32) -> crate::common::Run {
    let mut args = vec!["scan".to_string()];
    args.extend(sources.iter().map(s));
    if sources.len() > 1 {
        args.extend(["--concat", "time"].map(String::from));
    }
    args.extend(["--format", "icechunk", "-o"].map(String::from));
    args.push(s(repo));
    args.extend(extra.iter().map(|a| a.to_string()));
    cli_expect(&args, code)
}

/// The snapshot id at the tip of `branch`.
fn tip(repo: &Path, branch: &str) -> String {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let storage = icechunk::new_local_filesystem_storage(repo).await.unwrap();
        let repository = icechunk::Repository::open(storage).execute().await.unwrap();
        repository.lookup_branch(branch).await.unwrap().to_string()
    })
}

/// The snapshot messages of `branch`, newest first (the Rust crate reading what vzarr wrote).
pub(crate) fn history(repo: &Path, branch: &str) -> Vec<String> {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        use futures::TryStreamExt;
        let storage = icechunk::new_local_filesystem_storage(repo).await.unwrap();
        let repository = icechunk::Repository::open(storage).execute().await.unwrap();
        let version = icechunk::repository::VersionInfo::BranchTipRef(branch.to_string());
        let ancestry = repository.ancestry(&version).await.unwrap();
        let snapshots: Vec<_> = ancestry.try_collect().await.unwrap();
        snapshots.into_iter().map(|info| info.message).collect()
    })
}

fn files_with_chunk(days_chunk: usize, compress: bool) -> Vec<SeriesFile> {
    let mut files = monthly(2023..=2023, Some(days_chunk), compress);
    files.truncate(4); // 31, 28, 31, 30 days: every month ends inside a 10-day chunk
    files
}

#[test]
fn python_reads_icechunk_repositories_with_netcdf4_values() {
    let Some(python) = icechunk_python() else { return };
    let archives = [
        Archive::new(&files_with_chunk(10, true)),
        Archive::new(&files_with_chunk(10, false)),
        Archive::kitchen_sink(),
    ];
    for (i, archive) in archives.iter().enumerate() {
        let repo = archive.path("repo.icechunk");
        let run = scan_icechunk(&archive.sources, &repo, &[], 0);
        assert!(run.stdout.contains("new repository"), "{}", run.stdout);
        let stale: &[&str] = if i == 0 { &["--stale"] } else { &[] };
        let out = python_check(&python, &repo, &archive.sources, &[&["--snapshots", "1"], stale].concat());
        if i == 0 {
            assert!(out.contains("ok   icechunk refuses a source modified after the scan"), "{out}");
            assert!(out.contains("grid=rectilinear"), "{out}");
        }
    }
}

#[test]
fn python_reads_the_sample_archive_from_icechunk() {
    let Some(python) = icechunk_python() else { return };
    let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/sample");
    let mut sources: Vec<PathBuf> = crate::common::dir_entries(&sample)
        .iter()
        .map(|n| sample.join(n))
        .filter(|p| p.extension().is_some_and(|e| e == "nc"))
        .collect();
    sources.sort();
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("sample.icechunk");
    scan_icechunk(&sources, &repo, &[], 0);
    python_check(&python, &repo, &sources, &["--snapshots", "1"]);
}

/// A dataset of more chunks than a manifest holds (7 here) is one snapshot of several manifests of
/// at most 7 chunks; the branch moved once (no temporary branch left); Icechunk's diff of the commit
/// (read from the transaction log vzarr wrote) lists every array as new and every stored chunk as
/// updated. An update adding a month rewrites only the manifests it touches (the splits line up).
/// The values are the files' (store-owned chunks included: compressed months ending inside a chunk).
#[test]
fn large_arrays_are_split_into_manifests_of_one_snapshot() {
    use futures::TryStreamExt;
    use icechunk::repository::VersionInfo;
    let dir = tempfile::tempdir().unwrap();
    let files = files_with_chunk(10, true);
    let sources: Vec<PathBuf> =
        with_hdf5_files(|| files.iter().map(|f| crate::common::archives::write_series_file(dir.path(), f)).collect());
    let combine_options = CombineOptions { dims: vec![ConcatDim::existing("time")], ..CombineOptions::default() };
    let options = ScanOptions { concat_dims: combine_options.dim_names(), ..ScanOptions::default() };
    let scan = |files: &[PathBuf]| combine(scan_files(files, &options, &|_, _| {}).unwrap(), &combine_options).unwrap();
    let dataset = scan(&sources[..3]);
    let repo = dir.path().join("split.icechunk");
    let options = IcechunkOptions { manifest_chunks: 7, message: Some("split".into()), ..IcechunkOptions::default() };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let info = runtime.block_on(write_icechunk(&dataset, &s(&repo), &options)).unwrap();
    let stored = |a: &vzarr::dataset::VirtualArray| {
        a.chunks.iter().filter(|e| !matches!(e, vzarr::dataset::ChunkEntry::Missing)).count()
    };
    let owned = |a: &vzarr::dataset::VirtualArray| {
        a.chunks.iter().any(|e| matches!(e, vzarr::dataset::ChunkEntry::Owned { .. }))
    };
    let chunks: usize = dataset.arrays.iter().map(stored).sum();
    let largest = dataset.arrays.iter().map(stored).max().unwrap();
    assert!(largest > 14, "the test needs an array of several manifests ({largest} chunks)");
    assert!(dataset.arrays.iter().any(owned), "the test needs store-owned chunks");
    assert_eq!(history(&repo, "main"), ["split", "Repository initialized"]);
    let repository = runtime.block_on(async {
        let storage = icechunk::new_local_filesystem_storage(&repo).await.unwrap();
        icechunk::Repository::open(storage).execute().await.unwrap()
    });
    let manifests = |version: &VersionInfo| {
        runtime.block_on(async {
            let ancestry: Vec<_> = repository.ancestry(version).await.unwrap().try_collect().await.unwrap();
            let snapshot = repository.asset_manager().fetch_snapshot(&ancestry[0].id).await.unwrap();
            let files: Vec<_> = snapshot.manifest_files().collect::<Result<_, _>>().unwrap();
            (files, ancestry.iter().map(|a| a.id.clone()).collect::<Vec<_>>())
        })
    };
    let tip = VersionInfo::BranchTipRef("main".into());
    let (files, ancestry) = manifests(&tip);
    assert_eq!(files.len() as u64, info.manifests);
    assert!(files.len() >= chunks.div_ceil(7), "{} manifests for {chunks} chunks", files.len());
    assert!(files.iter().all(|f| f.num_chunk_refs <= 7), "{files:?}");
    assert_eq!(files.iter().map(|f| f.num_chunk_refs as usize).sum::<usize>(), chunks);
    runtime.block_on(async {
        let branches: Vec<String> = repository.list_branches().await.unwrap().into_iter().collect();
        assert_eq!(branches, ["main"], "no temporary branch is left");
        let diff = repository.diff(&VersionInfo::SnapshotId(ancestry[1].clone()), &tip).await.unwrap();
        let arrays: Vec<String> = diff.new_arrays.iter().map(|p| p.to_string()).collect();
        let mut expected: Vec<String> = dataset.arrays.iter().map(|a| format!("/{}", a.path)).collect();
        expected.sort();
        assert_eq!(arrays, expected);
        assert_eq!(diff.updated_chunks.values().map(|c| c.len()).sum::<usize>(), chunks);
    });

    let grown = scan(&sources);
    let remote = vzarr::read::RemoteOptions::default();
    let branch = runtime.block_on(vzarr::formats::read_branch(&s(&repo), "main", &remote)).unwrap();
    let update = IcechunkOptions { commit_to_existing: true, message: Some("april".into()), ..options };
    let updated = runtime.block_on(vzarr::formats::update_icechunk(&branch, &grown, &s(&repo), &update)).unwrap();
    let (after, _) = manifests(&tip);
    let kept = after.iter().filter(|f| files.iter().any(|old| old.id == f.id)).count();
    assert_eq!(kept + updated.manifests as usize, after.len());
    assert!(kept * 2 > files.len(), "{kept} of {} manifests kept, {} written", files.len(), updated.manifests);
    assert!(after.iter().all(|f| f.num_chunk_refs <= 7), "{after:?}");
    assert_eq!(
        after.iter().map(|f| f.num_chunk_refs as usize).sum::<usize>(),
        grown.arrays.iter().map(stored).sum::<usize>()
    );
    assert_eq!(history(&repo, "main"), ["april", "split", "Repository initialized"]);
    if let Some(python) = icechunk_python() {
        python_check(&python, &repo, &sources, &["--snapshots", "2"]);
    }
}

/// An update that brings an array the branch lacks records all its chunks, references and
/// store-owned ones (compressed months ending inside a chunk): `read` of it equals libnetcdf's.
#[test]
fn an_update_adding_an_array_records_all_its_chunks() {
    let dir = tempfile::tempdir().unwrap();
    let files = files_with_chunk(10, true);
    let sources: Vec<PathBuf> =
        with_hdf5_files(|| files.iter().map(|f| crate::common::archives::write_series_file(dir.path(), f)).collect());
    let combine_options = CombineOptions { dims: vec![ConcatDim::existing("time")], ..CombineOptions::default() };
    let options = ScanOptions { concat_dims: combine_options.dim_names(), ..ScanOptions::default() };
    let dataset = combine(scan_files(&sources, &options, &|_, _| {}).unwrap(), &combine_options).unwrap();
    let owned = |a: &vzarr::dataset::VirtualArray| {
        a.chunks.iter().any(|e| matches!(e, vzarr::dataset::ChunkEntry::Owned { .. }))
    };
    assert!(owned(dataset.array("tas").unwrap()), "the test needs store-owned chunks in tas");
    let mut without = dataset.clone();
    without.arrays.retain(|a| a.path != "tas");
    let repo = dir.path().join("grown.icechunk");
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(write_icechunk(&without, &s(&repo), &IcechunkOptions::default())).unwrap();
    let remote = vzarr::read::RemoteOptions::default();
    let branch = runtime.block_on(vzarr::formats::read_branch(&s(&repo), "main", &remote)).unwrap();
    let update = IcechunkOptions { commit_to_existing: true, ..IcechunkOptions::default() };
    runtime.block_on(vzarr::formats::update_icechunk(&branch, &dataset, &s(&repo), &update)).unwrap();
    let npy = dir.path().join("tas.npy");
    cli_expect(&["read", &s(&repo), "tas", "-o", &s(&npy), "--allow-source", &s(dir.path())], 0);
    let ours = crate::common::parse_npy(&std::fs::read(&npy).unwrap());
    crate::interop::assert_same("tas added by an update", &ours.data, &crate::interop::oracle(&sources, "tas"));
}

#[test]
fn existing_repositories_take_a_new_snapshot_only_when_asked() {
    let archive = Archive::new(&files_with_chunk(10, true));
    let repo = archive.path("repo.icechunk");
    scan_icechunk(&archive.sources, &repo, &[], 0);
    let refused = scan_icechunk(&archive.sources, &repo, &[], 1);
    assert!(refused.stderr.contains("already exists (pass --branch or --message"), "{}", refused.stderr);
    assert_eq!(refused.stderr.trim().lines().count(), 1, "{}", refused.stderr);
    assert_eq!(history(&repo, "main").len(), 2, "a refused write adds no snapshot");
    scan_icechunk(&archive.sources, &repo, &["--message", "again"], 0);
    assert_eq!(history(&repo, "main")[0], "again");
    assert_eq!(history(&repo, "main").len(), 3);
    let missing = scan_icechunk(&archive.sources, &repo, &["--branch", "nope"], 1);
    assert!(missing.stderr.contains("no branch \"nope\" (branches: main)"), "{}", missing.stderr);
    assert_eq!(history(&repo, "main").len(), 3);
}

/// A repository in Icechunk's format 1 is refused with one line and keeps its history: vzarr writes
/// format 2 (the rectilinear grid), and its manifests and transaction log are format 2's.
#[test]
fn format_1_repositories_are_refused() {
    let archive = Archive::new(&files_with_chunk(10, true));
    let repo = archive.path("v1.icechunk");
    tokio::runtime::Runtime::new().unwrap().block_on(async {
        let storage = icechunk::new_local_filesystem_storage(&repo).await.unwrap();
        let spec = icechunk::format::format_constants::SpecVersionBin::V1;
        icechunk::Repository::create(storage).spec_version(spec).execute().await.unwrap();
    });
    let refused = scan_icechunk(&archive.sources, &repo, &["--message", "again"], 1);
    assert!(refused.stderr.contains("Icechunk format 1"), "{}", refused.stderr);
    assert_eq!(refused.stderr.trim().lines().count(), 1, "{}", refused.stderr);
    assert_eq!(history(&repo, "main"), ["Repository initialized"]);
}

#[test]
fn a_directory_that_is_not_a_repository_is_refused() {
    let archive = Archive::new(&files_with_chunk(10, true));
    let target = archive.path("occupied");
    std::fs::create_dir(&target).unwrap();
    std::fs::write(target.join("keep.txt"), b"user data").unwrap();
    let run = scan_icechunk(&archive.sources, &target, &["--overwrite"], 1);
    assert!(run.stderr.contains("exists and is not an Icechunk repository"), "{}", run.stderr);
    assert_eq!(std::fs::read(target.join("keep.txt")).unwrap(), b"user data");
    assert_eq!(crate::common::dir_entries(&target), ["keep.txt"]);
}

/// `read`, `info` and `verify` take the repository as the store: `verify` compares every value with
/// libnetcdf, `read` of a whole variable equals the files' values concatenated, `info` says what the
/// native store says; a source modified after the commit is refused in one line naming it, unless
/// `--no-check-sources` (then `read` still equals the files and `verify` passes).
#[test]
fn read_info_and_verify_open_icechunk_repositories() {
    let archive = Archive::new(&files_with_chunk(10, true));
    let repo = archive.path("repo.icechunk");
    scan_icechunk(&archive.sources, &repo, &[], 0);
    let verified = cli_expect(&["verify", &s(&repo)], 0);
    assert!(verified.stdout.contains("ok   tas:"), "{}", verified.stdout);
    assert!(verified.stdout.contains(": 0 failed"), "{}", verified.stdout);
    let npy = archive.path("tas.npy");
    cli_expect(&["read", &s(&repo), "tas", "-o", &s(&npy)], 0);
    let ours = crate::common::parse_npy(&std::fs::read(&npy).unwrap());
    crate::interop::assert_same("read tas from icechunk", &ours.data, &crate::interop::oracle(&archive.sources, "tas"));
    let native_info = cli_expect(&["info", &s(&archive.store), "--json"], 0).stdout;
    let ice_info = cli_expect(&["info", &s(&repo), "--json"], 0).stdout;
    let strip = |text: &str, store: &Path| without_source_files(&text.replace(&s(store), "STORE"));
    assert_eq!(strip(&ice_info, &repo), strip(&native_info, &archive.store));
    let later = std::time::SystemTime::now() + std::time::Duration::from_secs(3600);
    std::fs::File::options().write(true).open(&archive.sources[1]).unwrap().set_modified(later).unwrap();
    let refused = cli_expect(&["read", &s(&repo), "tas", "-o", &s(archive.path("again.npy"))], 1);
    assert!(refused.stderr.contains("modified after the repository was written"), "{}", refused.stderr);
    assert!(refused.stderr.contains(&s(archive.sources[1].file_name().unwrap())), "{}", refused.stderr);
    // `info` reads only the snapshot, no source.
    cli_expect(&["info", &s(&repo)], 0);
    // --no-check-sources reads anyway (the bytes did not change, only the time).
    let anyway = archive.path("anyway.npy");
    cli_expect(&["read", &s(&repo), "tas", "-o", &s(&anyway), "--no-check-sources"], 0);
    let ours = crate::common::parse_npy(&std::fs::read(&anyway).unwrap());
    crate::interop::assert_same(
        "read tas, sources unchecked",
        &ours.data,
        &crate::interop::oracle(&archive.sources, "tas"),
    );
    let verified = cli_expect(&["verify", &s(&repo), "--no-check-sources"], 0);
    assert!(verified.stdout.contains(": 0 failed"), "{}", verified.stdout);
}

/// A write that fails after the repository was created (Icechunk refuses a zero-length reference)
/// leaves nothing: no repository directory, one error naming the array.
#[test]
fn a_failed_write_to_a_new_repository_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let files = files_with_chunk(10, false);
    let sources: Vec<PathBuf> =
        with_hdf5_files(|| files.iter().map(|f| crate::common::archives::write_series_file(dir.path(), f)).collect());
    let combine_options = CombineOptions { dims: vec![ConcatDim::existing("time")], ..CombineOptions::default() };
    let options = ScanOptions { concat_dims: combine_options.dim_names(), ..ScanOptions::default() };
    let mut dataset = combine(scan_files(&sources, &options, &|_, _| {}).unwrap(), &combine_options).unwrap();
    let tas = dataset.arrays.iter_mut().find(|a| a.path == "tas").unwrap();
    let linear = tas.chunks.iter().position(|e| matches!(e, vzarr::dataset::ChunkEntry::Source { .. })).unwrap();
    if let vzarr::dataset::ChunkEntry::Source { source, offset, .. } = tas.chunks.entry(linear) {
        tas.chunks.set(linear, vzarr::dataset::ChunkEntry::Source { source, offset, length: 0 });
    }
    let repo = dir.path().join("broken.icechunk");
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let error = runtime.block_on(write_icechunk(&dataset, &s(&repo), &IcechunkOptions::default())).unwrap_err();
    assert!(error.to_string().contains(": tas: "), "{error}");
    assert!(!repo.exists(), "the new repository is removed");
}

/// Issue 26: a native store whose root holds arrays named `refs` and `snapshots` (directories, as an
/// Icechunk v1 repository has) opens as the native store it is, and reads as libnetcdf reads the source.
#[test]
fn a_store_with_root_arrays_named_refs_and_snapshots_is_no_repository() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("refs.nc");
    with_hdf5_files(|| {
        let mut f = netcdf::create(&source).unwrap();
        f.add_dimension("n", 6).unwrap();
        let values: Vec<i32> = (0..6).map(|i| i * 7 - 3).collect();
        f.add_variable::<i32>("refs", &["n"]).unwrap().put_values(&values, ..).unwrap();
        f.add_variable::<i32>("snapshots", &["n"]).unwrap().put_values(&values, ..).unwrap();
    });
    let store = crate::common::scan_to_store(&source, dir.path(), "s.vzarr", &ScanOptions::default());
    assert!(
        store.join("refs").is_dir() && store.join("snapshots").is_dir(),
        "{:?}",
        crate::common::dir_entries(&store)
    );
    assert!(!vzarr::formats::looks_like_repository(&store));
    let opened = crate::common::open_store(&store);
    assert!(!opened.as_async().is_repository());
    for name in ["refs", "snapshots"] {
        let ours = crate::common::read(&opened, name, "").bytes;
        assert_eq!(ours, crate::common::oracle_read(&source, name, None), "{name}");
    }
    let info = cli_expect(&["info", &s(&store)], 0);
    assert!(info.stdout.contains("refs"), "{}", info.stdout);
}
