//! `vzarr materialize --shards` (issue 18): sharded Zarr v3 stores whose shards hold the source chunks
//! verbatim.
//!
//! - zarrs reads every array of the sharded stores of the monthly archive (rectilinear shards of 28..31
//!   days), a daily archive (one shard per file), and the yearly archive with interior partial chunks
//!   (whose time-chunked arrays cannot be sharded and fall back), with every value equal to libnetcdf's
//!   read of the source files; zarr-python 3.4 does the same when the Python environment exists.
//! - Every shard is checked against the native store: each inner chunk's bytes equal the chunk's
//!   stored bytes, missing chunks are empty in the index, and the objects' bytes are the chunks' bytes
//!   (from the manifest) plus exactly one index per shard.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::archives::{daily, monthly, yearly, SeriesFile};
use crate::common::fixtures::days_in_month;
use crate::common::{cli, cli_expect, dir_entries, Run};
use crate::interop::{assert_zarrs_reads_exactly, python, s, zarrs_array, zarrs_time_edges, Archive, ALL_VARS};
use vzarr::dataset::chunk_key;
use vzarr::dataset::ChunkEntry;
use vzarr::grid::ChunkGrid;
use vzarr::read::blocking::BlockingStore;
use vzarr::testing::{index_len, parse_shard};
use zarrs::array::ArrayShardedExt;

/// `materialize --shards SPEC` into `name`; the run (stdout has one line per array).
fn materialize(archive: &Archive, name: &str, spec: &str) -> (PathBuf, Run) {
    let out = archive.path(name);
    let run = cli_expect(&[s("materialize"), s(&archive.store), s(&out), s("--shards"), s(spec)], 0);
    (out, run)
}

fn array_doc(out: &Path, var: &str) -> Value {
    serde_json::from_slice(&std::fs::read(out.join(var).join("zarr.json")).unwrap()).unwrap()
}

/// The outer grid and inner chunk shape of a sharded array, `None` when it is not sharded.
fn shard_layout(out: &Path, var: &str) -> Option<(ChunkGrid, Vec<u64>)> {
    let doc = array_doc(out, var);
    let codec = &doc["codecs"][0];
    if codec["name"] != "sharding_indexed" {
        return None;
    }
    assert_eq!(doc["codecs"].as_array().unwrap().len(), 1, "{var}: the sharding codec is the only codec");
    let shape: Vec<u64> = doc["shape"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).collect();
    let grid = ChunkGrid::from_json(&doc["chunk_grid"], &shape).expect("valid outer grid");
    let inner = codec["configuration"]["chunk_shape"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap());
    Some((grid, inner.collect()))
}

/// Files (objects) under `<out>/<var>/c`, and their bytes.
fn objects(out: &Path, var: &str) -> (u64, u64) {
    fn walk(dir: &Path, acc: &mut (u64, u64)) {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let meta = entry.metadata().unwrap();
            if meta.is_dir() {
                walk(&entry.path(), acc);
            } else {
                acc.0 += 1;
                acc.1 += meta.len();
            }
        }
    }
    let mut acc = (0, 0);
    let c = out.join(var).join("c");
    if c.is_file() {
        return (1, std::fs::metadata(c).unwrap().len());
    }
    walk(&c, &mut acc);
    acc
}

/// Every shard of `var` holds, for each inner chunk, exactly the native store's stored bytes of the
/// source chunk there (empty for missing chunks and chunks past the array); shards without any
/// chunk are absent; the objects' bytes are the chunks' bytes plus one index per shard. Returns the
/// number of shards written.
fn assert_shards_hold_the_chunks(out: &Path, store_path: &Path, var: &str) -> u64 {
    let (outer, inner) = shard_layout(out, var).unwrap_or_else(|| panic!("{var} is sharded"));
    let store = BlockingStore::open(s(store_path), &crate::common::trusted(store_path)).unwrap();
    let reader = store.array(var).unwrap();
    let reader = reader.reader();
    let source = reader.metadata().chunk_grid.clone();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let entries = runtime.block_on(reader.entries(0..source.num_chunks())).unwrap();
    let (mut shards, mut index_bytes, mut copied) = (0u64, 0u64, 0u64);
    for linear in 0..outer.num_chunks() {
        let coords = outer.chunk_coords(linear);
        let first: Vec<u64> = outer.chunk_origin(&coords).iter().zip(&inner).map(|(o, c)| o / c).collect();
        let counts: Vec<u64> = outer.chunk_shape(&coords).iter().zip(&inner).map(|(e, c)| e / c).collect();
        let n: u64 = counts.iter().product();
        let inner_grid = ChunkGrid::regular(&counts, &vec![1; counts.len()]).unwrap();
        let chunk_at = |i: u64| -> ChunkEntry {
            let at: Vec<u64> = inner_grid.chunk_coords(i).iter().zip(&first).map(|(a, f)| a + f).collect();
            if at.iter().zip(source.grid_shape()).any(|(&a, n)| a >= n) {
                return ChunkEntry::Missing;
            }
            entries[source.linear_index(&at) as usize]
        };
        let file = out.join(chunk_key(var, &coords));
        let Ok(shard) = std::fs::read(&file) else {
            assert!((0..n).all(|i| chunk_at(i) == ChunkEntry::Missing), "{}: absent but holds chunks", file.display());
            continue;
        };
        shards += 1;
        index_bytes += index_len(n);
        let ranges = parse_shard(&shard, n).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        for (i, range) in (0..n).zip(ranges) {
            let native = runtime.block_on(reader.stored_chunk(&chunk_at(i))).unwrap();
            let ours = range.map(|r| &shard[r]);
            assert!(ours == native.as_deref(), "{}: inner chunk {i} differs from the store's chunk", file.display());
            copied += native.map_or(0, |b| b.len() as u64);
        }
    }
    let stats = store.info().arrays.iter().find(|a| a.path == var).unwrap().stats;
    assert_eq!(copied, stats.referenced_bytes + stats.owned_bytes, "{var}: every chunk of the manifest, once");
    assert_eq!(objects(out, var), (shards, copied + index_bytes), "{var}: objects hold the chunks and one index each");
    shards
}

/// The line `materialize` printed for `var`.
fn line<'a>(run: &'a Run, var: &str) -> &'a str {
    let prefix = format!("{var}: ");
    run.stdout.lines().find(|l| l.starts_with(&prefix)).unwrap_or_else(|| panic!("no line for {var}:\n{}", run.stdout))
}

/// Monthly files of daily chunks (whole lat/lon grid per chunk), 2023-2024.
fn monthly_daily_chunks() -> Vec<SeriesFile> {
    let mut files = monthly(2023..=2024, Some(1), true);
    for f in &mut files {
        (f.ny, f.nx, f.chunk_yx) = (20, 24, (20, 24));
    }
    files
}

#[test]
fn monthly_archive_gets_one_shard_per_month() {
    let archive = Archive::new(&monthly_daily_chunks());
    let (out, run) = materialize(&archive, "sharded.zarr", "file");
    let days: Vec<u64> = (2023..=2024).flat_map(|y| (1..=12).map(move |m| days_in_month(y, m) as u64)).collect();
    let (outer, inner) = shard_layout(&out, "tas").expect("tas is sharded");
    assert_eq!(outer.dim(0).edges().collect::<Vec<_>>(), days, "one shard per monthly file");
    assert_eq!(inner, vec![1, 20, 24], "the inner chunks are the files' chunks");
    assert_eq!(array_doc(&out, "tas")["chunk_grid"]["name"], "rectilinear");
    assert!(line(&run, "tas").contains("24 shards of (28..31, 20, 24), inner chunks (1, 20, 24)"), "{}", run.stdout);
    assert_eq!(assert_shards_hold_the_chunks(&out, &archive.store, "tas"), 24);
    assert_eq!(assert_shards_hold_the_chunks(&out, &archive.store, "time_bnds"), 24);
    // Within a few percent of the source chunks' bytes (chunks of about 1.5 KB, 16 index bytes each).
    let store = BlockingStore::open(s(&archive.store), &crate::common::trusted(&archive.store)).unwrap();
    let stats = store.info().arrays.iter().find(|a| a.path == "tas").unwrap().stats;
    let ratio = objects(&out, "tas").1 as f64 / stats.referenced_bytes as f64;
    assert!((1.0..1.03).contains(&ratio), "tas shards are {ratio:.4} x the chunks' bytes");
    let tas = zarrs_array(&out, "tas");
    assert!(tas.is_sharded(), "zarrs sees a sharded array");
    assert_eq!(zarrs_time_edges(&tas), days, "zarrs sees one shard per month");
    assert_zarrs_reads_exactly(&out, &archive.sources, &ALL_VARS);
}

#[test]
fn daily_archive_gets_one_shard_per_file() {
    let archive = Archive::new(&daily(2023, 40));
    let (out, run) = materialize(&archive, "sharded.zarr", "file");
    let (outer, inner) = shard_layout(&out, "tas").expect("tas is sharded");
    assert_eq!((outer.grid_shape(), inner), (vec![40, 1, 1], vec![1, 5, 6]));
    assert_eq!(array_doc(&out, "tas")["chunk_grid"]["name"], "regular", "files of equal length: a regular grid");
    assert_eq!(assert_shards_hold_the_chunks(&out, &archive.store, "tas"), 40);
    let unsharded = archive.path("plain.zarr");
    cli_expect(&[s("materialize"), s(&archive.store), s(&unsharded)], 0);
    assert_eq!(objects(&unsharded, "tas").0, 40 * 4, "unsharded: one object per chunk");
    assert!(run.stdout.lines().last().unwrap().contains("6 arrays, 5 sharded"), "{}", run.stdout);
    assert!(line(&run, "crs").contains("not sharded (0-d array"), "{}", run.stdout);
    assert_zarrs_reads_exactly(&out, &archive.sources, &ALL_VARS);
}

#[test]
fn fixed_shard_shape_and_its_fallbacks() {
    let archive = Archive::new(&daily(2023, 40));
    let (out, run) = materialize(&archive, "week.zarr", "7,10,12");
    let (outer, _) = shard_layout(&out, "tas").expect("tas is sharded");
    assert_eq!(outer.grid_shape(), vec![6, 1, 1], "40 days in shards of 7 days");
    assert_eq!(assert_shards_hold_the_chunks(&out, &archive.store, "tas"), 6);
    assert!(line(&run, "lat").contains("not sharded (shard shape has 3 dimensions, the array 1)"), "{}", run.stdout);
    assert_zarrs_reads_exactly(&out, &archive.sources, &ALL_VARS);
    // lat chunks of 5 do not divide a shard extent of 4: that array falls back, the run succeeds.
    let (out, run) = materialize(&archive, "bad.zarr", "7,4,12");
    assert!(shard_layout(&out, "tas").is_none());
    let tas = line(&run, "tas");
    assert!(tas.contains("not sharded (shard extent 4 along lat is not a multiple of the chunk length 5)"), "{tas}");
    assert_zarrs_reads_exactly(&out, &archive.sources, &ALL_VARS);
    let bad = cli(&[s("materialize"), s(&archive.store), s(archive.path("x.zarr")), s("--shards"), s("0,1")]);
    assert_eq!(bad.code, 2, "a zero shard extent is a usage error: {}", bad.stderr);
    assert!(!archive.path("x.zarr").exists());
}

/// Three files chunked by 61 days whose last one ends inside a chunk (183, 122 and 100 days).
fn uneven_files_partial_last_chunk() -> Vec<SeriesFile> {
    let first = crate::common::fixtures::days_since_epoch(2000, 1);
    let mut start = first;
    [183usize, 122, 100]
        .iter()
        .enumerate()
        .map(|(i, &days)| {
            let f = SeriesFile::new(format!("tas_part{i}.nc"), start, days, 61);
            start += days as i64;
            f
        })
        .collect()
}

#[test]
fn last_shard_extends_past_the_array() {
    let archive = Archive::new(&uneven_files_partial_last_chunk());
    let (out, _) = materialize(&archive, "sharded.zarr", "file");
    let (outer, inner) = shard_layout(&out, "tas").expect("tas is sharded");
    assert_eq!(outer.dim(0).edges().collect::<Vec<_>>(), vec![183, 122, 122], "the last shard: whole chunks");
    assert_eq!((outer.shape()[0], inner[0]), (405, 61));
    assert_eq!(assert_shards_hold_the_chunks(&out, &archive.store, "tas"), 3);
    assert_zarrs_reads_exactly(&out, &archive.sources, &ALL_VARS);
}

#[test]
fn interior_partial_chunks_fall_back_and_stay_exact() {
    let archive = Archive::new(&yearly(2000..=2003, 61));
    let (out, run) = materialize(&archive, "sharded.zarr", "file");
    for var in ["tas", "time", "time_bnds"] {
        assert!(shard_layout(&out, var).is_none(), "{var} cannot be sharded verbatim");
        let line = line(&run, var);
        assert!(line.contains("not sharded (chunk edges along time vary (60..61"), "{line}");
    }
    assert!(shard_layout(&out, "lat").is_some() && shard_layout(&out, "lon").is_some());
    let plain = archive.path("plain.zarr");
    cli_expect(&[s("materialize"), s(&archive.store), s(&plain)], 0);
    assert_eq!(objects(&out, "tas"), objects(&plain, "tas"), "the fallback writes what plain materialize writes");
    assert_eq!(dir_entries(&out.join("tas")), ["c", "zarr.json"]);
    assert_zarrs_reads_exactly(&out, &archive.sources, &ALL_VARS);
}

#[test]
fn groups_types_and_missing_chunks_in_shards() {
    let archive = Archive::kitchen_sink();
    let (out, run) = materialize(&archive, "sharded.zarr", "file");
    let store = BlockingStore::open(s(&archive.store), &crate::common::trusted(&archive.store)).unwrap();
    let sparse = store.info().arrays.iter().find(|a| a.path == "sparse").unwrap().stats;
    assert!(sparse.missing > 0 && sparse.referenced > 0, "sparse has missing and present chunks");
    for var in ["sparse", "big_endian", "model/diagnostics/profile"] {
        assert_eq!(assert_shards_hold_the_chunks(&out, &archive.store, var), 1, "{var}: one shard");
    }
    assert!(line(&run, "scalar").contains("not sharded (0-d array"), "{}", run.stdout);
    for info in &store.info().arrays {
        let ours = crate::interop::zarrs_read(&zarrs_array(&out, &info.path));
        let theirs = crate::common::oracle_read(&archive.sources[0], &info.path, None);
        crate::interop::assert_same(&format!("zarrs: {}", info.path), &ours, &theirs);
    }
}

#[test]
fn store_owned_chunks_go_into_shards_verbatim() {
    // Chunks written with a skipped filter are re-encoded into the store at scan time; shards take
    // those store-owned bytes like referenced ones.
    let f = crate::common::Fixture::new(crate::common::fixtures::write_masked_chunks);
    let store_path = crate::common::scan_fixture(&f);
    let store = BlockingStore::open(s(&store_path), &crate::common::trusted(&store_path)).unwrap();
    let stats = store.info().arrays.iter().find(|a| a.path == "masked").unwrap().stats;
    assert!(stats.owned > 0 && stats.referenced > 0, "owned and referenced chunks: {stats:?}");
    let out = f.join("sharded.zarr");
    cli_expect(&[s("materialize"), s(&store_path), s(&out), s("--shards"), s("file")], 0);
    assert_eq!(assert_shards_hold_the_chunks(&out, &store_path, "masked"), 1);
    let ours = crate::interop::zarrs_read(&zarrs_array(&out, "masked"));
    crate::interop::assert_same("zarrs: masked", &ours, &crate::common::oracle_read(&f.path, "masked", None));
}

#[test]
fn a_changed_source_file_fails_and_leaves_nothing() {
    let archive = Archive::new(&daily(2023, 5));
    let victim = &archive.sources[3];
    let mut bytes = std::fs::read(victim).unwrap();
    bytes.truncate(bytes.len() / 2);
    std::fs::write(victim, bytes).unwrap();
    let out = archive.path("sharded.zarr");
    let run = cli_expect(&[s("materialize"), s(&archive.store), s(&out), s("--shards"), s("file")], 1);
    let name = victim.file_name().unwrap().to_string_lossy().into_owned();
    assert!(run.stderr.contains(&name) && run.stderr.contains("changed"), "{}", run.stderr);
    assert_eq!(run.stderr_lines().len(), 1, "one line: {}", run.stderr);
    assert!(!out.exists(), "no output");
    let hidden: Vec<String> = dir_entries(archive.dir.path()).into_iter().filter(|n| n.starts_with('.')).collect();
    assert!(hidden.is_empty(), "no staging leftovers: {hidden:?}");
}

#[test]
fn short_last_slabs_are_padded_and_read_exactly() {
    // An uncompressed contiguous variable referenced as slabs of 100 rows: its last slab (9 rows of
    // 1009) is shorter than the inner chunk, so that one chunk is padded and re-encoded.
    let f = crate::common::Fixture::new(crate::common::fixtures::write_long_contiguous);
    let options = vzarr::ScanOptions { max_slab_bytes: 2400, ..Default::default() };
    let store_path = crate::common::scan_to_store(&f.path, f.dir.path(), "slabs.vzarr", &options);
    let table = vzarr::dataset::ArrayMetadata::from_json(&array_doc(&store_path, "table")).unwrap();
    assert_eq!(table.chunk_grid.dim(0).runs(), vec![(100, 10), (9, 1)], "slabs of 100 rows, the last of 9");
    for (spec, shards, sharded) in [("file", 1, "table,row"), ("300,6", 4, "table")] {
        let out = f.join(&format!("sharded-{shards}.zarr"));
        let run = cli_expect(&[s("materialize"), s(&store_path), s(&out), s("--shards"), s(spec)], 0);
        assert!(line(&run, "table").contains("1 short last chunks padded to it and re-encoded"), "{}", run.stdout);
        let (outer, inner) = shard_layout(&out, "table").expect("table is sharded");
        assert_eq!((outer.num_chunks(), inner), (shards, vec![100, 6]));
        assert_eq!(objects(&out, "table").0, shards);
        for var in ["table", "row"] {
            let ours = crate::interop::zarrs_read(&zarrs_array(&out, var));
            let theirs = crate::common::oracle_read(&f.path, var, None);
            crate::interop::assert_same(&format!("zarrs: {var} ({spec})"), &ours, &theirs);
        }
        if let (Some(python), 4) = (python(), shards) {
            check_with_python(&python, std::slice::from_ref(&f.path), &out, sharded);
        }
    }
}

#[test]
fn python_reads_sharded_stores() {
    let Some(python) = python() else {
        eprintln!("notice: no Python >= 3.12 with zarr (run tests/python/setup.sh); skipping the zarr-python check");
        return;
    };
    let archive = Archive::kitchen_sink();
    let (out, _) = materialize(&archive, "sharded.zarr", "file");
    check_with_python(&python, &archive.sources, &out, "sparse,big_endian,model/diagnostics/profile");
    let cases: [(Vec<SeriesFile>, &str); 4] = [
        (monthly_daily_chunks(), "tas,time_bnds,lat,lon"),
        (uneven_files_partial_last_chunk(), "tas,time,time_bnds,lat,lon"),
        (daily(2023, 20), "tas,time,time_bnds,lat,lon"),
        (yearly(2000..=2003, 61), "lat,lon"),
    ];
    for (files, expect) in cases {
        let archive = Archive::new(&files);
        let (out, _) = materialize(&archive, "sharded.zarr", "file");
        check_with_python(&python, &archive.sources, &out, expect);
    }
}

/// `tests/python/check_interop.py` on a materialized store: zarr-python and xarray read every array
/// equal to netCDF4's values, and see the `expect_sharded` arrays as sharded.
fn check_with_python(python: &Path, sources: &[PathBuf], out: &Path, expect_sharded: &str) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/check_interop.py");
    let mut command = std::process::Command::new(python);
    command.arg(script).args(["--zarr", &s(out), "--expect-sharded", expect_sharded, "--concat", "time"]);
    command.args(sources).stdout(std::process::Stdio::piped());
    let run = crate::common::run(command);
    eprintln!("{}", run.stdout);
    assert_eq!(run.code, 0, "check_interop.py failed:\n{}\n{}", run.stdout, run.stderr);
}
