//! Compaction benchmark (issue 40): folding the 365 daily size-1 chunks of the daily archive
//! (`benches/common`, `sst(365, 360, 720)` int16 in chunks (1, 30, 30)) into one chunk along time
//! (`vzarr compact --target 365`; the last day's chunks stay, so that `vzarr append` can continue
//! the store) against reading the same array once through the store, in the same run. The target is
//! within 2x. Checks the compacted store reads the same values. Three rounds (the store written
//! again each time); the fastest read and compaction are compared, and their CPU times too.
//!
//! In the same run, the codec floor of each (`common::floor`: the stored chunks in memory first, then
//! only codec work and one copy of the elements, on both cores, with vzarr's `CodecChain`):
//! - the read's: every chunk decoded once and placed in an array-sized buffer;
//! - the fold's: every chunk the compaction folds decoded once and placed in its folded chunk, every
//!   folded chunk encoded once with the array's codecs (checked byte for byte against the chunks the
//!   compaction stored, so the floor does exactly its codec work).
//!
//! The best ratio any compaction on these codecs could reach against the measured read is the fold's
//! floor over the measured read; both at their floors, the fold's floor over the read's.
//!
//! Run: `cargo bench --bench compact [-- --files N]` (default 365 files).

mod common;

use std::ops::Range;

use rayon::prelude::*;

use common::floor::{copy_box, decode_chunk, measure, stored_chunks, Timing};
use common::{archive_dir, ensure_archive, files_arg};

use vzarr::dataset::ArrayMetadata;
use vzarr::formats::NativeWriter;
use vzarr::formats::{WriteOptions, Writer};
use vzarr::grid::ChunkDim;
use vzarr::pipeline::{combine, CombineOptions};
use vzarr::pipeline::{compact_store, CompactOptions};
use vzarr::read::blocking::BlockingStore;
use vzarr::read::Authorization;
use vzarr::read::OpenOptions;
use vzarr::scan::{scan_files, ScanOptions};
use vzarr::{ReadOptions, Selection};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if !args.iter().any(|a| a == "--bench") {
        return; // built and run by `cargo test --all-targets`: nothing to measure there
    }
    let files = files_arg(&args);
    let dir = archive_dir(files);
    let paths = ensure_archive(&dir, files);
    let store = dir.with_extension("compact.vzarr");
    let options = ScanOptions { concat_dims: vec!["time".into()], ..ScanOptions::default() };
    let scanned = scan_files(&paths, &options, &|_, _| {}).unwrap();
    let combined = combine(scanned, &CombineOptions::along("time")).unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let mut reads = Vec::new();
    let mut compacts = Vec::new();
    let mut expected = None;
    let mut report = None;
    for _ in 0..ROUNDS {
        let written = NativeWriter.write(&combined, &store, &WriteOptions { overwrite: true }).unwrap();
        let authorization = Authorization::new(written.source_containers.clone());
        let read_all = |location: &std::path::Path| {
            let opened = BlockingStore::open(location.to_str().unwrap(), &authorization).unwrap();
            let sst = opened.array("sst").unwrap();
            sst.read(&Selection::all(&sst.reader().shape()), &ReadOptions::default()).unwrap()
        };
        read_all(&store); // warm the page cache
        reads.push(measure(|| expected = Some(read_all(&store))).0);
        let compact_options = CompactOptions::new("time", files as u64, OpenOptions::new(authorization.clone()));
        compacts.push(
            measure(|| {
                report = Some(compact_store(store.to_str().unwrap(), &compact_options, runtime.handle()).unwrap())
            })
            .0,
        );
        assert!(read_all(&store).bytes == expected.take().unwrap().bytes, "the compacted store reads other values");
    }
    let report = report.unwrap();
    let sst = report.arrays.iter().find(|a| a.path == "sst").expect("sst folded");
    let (read, compact) = (Timing::best(reads), Timing::best(compacts));
    println!(
        "archive: {files} daily files, sst time edges {} -> {}",
        sst.before.len(),
        vzarr::pipeline::describe_edges(&sst.after)
    );
    println!("read sst through the store:       {:.3} s ({:.3} s CPU), the best of {ROUNDS}", read.wall, read.cpu);
    println!(
        "compact (read, encode, write):    {:.3} s ({:.3} s CPU), the best of {ROUNDS}: {:.2}x the read (target <= \
         2x; CPU {:.2}x)",
        compact.wall,
        compact.cpu,
        compact.wall / read.wall,
        compact.cpu / read.cpu
    );
    floors(&runtime, &combined, &store, read, compact);
}

/// Measures and prints the read's and the fold's codec floors (see the module docs) against the
/// measured `read` and `compact`. `store` is compacted on entry and written afresh here.
fn floors(
    runtime: &tokio::runtime::Runtime,
    combined: &vzarr::VirtualDataset,
    store: &std::path::Path,
    read: Timing,
    compact: Timing,
) {
    // The compacted store's folded chunks, and the chunks of the store as it was (written afresh
    // beside it): the floors' input.
    let fresh = store.with_extension("floor.vzarr");
    let written = NativeWriter.write(combined, &fresh, &WriteOptions { overwrite: true }).unwrap();
    let authorization = Authorization::new(written.source_containers.clone());
    let (folded_meta, folded) = stored_chunks(runtime, store.to_str().unwrap(), &authorization, "sst");
    let (meta, stored) = stored_chunks(runtime, fresh.to_str().unwrap(), &authorization, "sst");
    std::fs::remove_dir_all(&fresh).unwrap();
    let stored: Vec<&[u8]> = stored.iter().map(|s| s.as_deref().expect("every daily chunk is stored")).collect();
    let folds = folds(meta.chunk_grid.dim(0), folded_meta.chunk_grid.dim(0));
    let (mut read_floors, mut fold_floors, mut encoded) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        read_floors.push(measure(|| read_floor(&meta, &stored)).0);
        let (timing, chunks) = measure(|| fold_floor(&meta, &stored, &folded_meta, &folds));
        fold_floors.push(timing);
        encoded = chunks;
    }
    for (linear, chunk) in &encoded {
        assert!(
            folded[*linear as usize].as_deref() == Some(chunk),
            "folded chunk {linear}: the floor encoded other bytes"
        );
    }
    let (read_best, fold_best) = (Timing::best(read_floors), Timing::best(fold_floors));
    let decoded = folds.iter().map(|(_, old)| old.end - old.start).sum::<u64>() * (stored.len() as u64)
        / meta.chunk_grid.dim(0).num_chunks();
    println!("codec floor (in memory, both cores, vzarr's CodecChain: decode, place, encode; best of {ROUNDS}):");
    println!(
        "  read: {} chunks decoded:                 {:.3} s ({:.3} s CPU); the read takes {:.2}x its wall",
        stored.len(),
        read_best.wall,
        read_best.cpu,
        read.wall / read_best.wall
    );
    println!(
        "  fold: {decoded} chunks decoded, {} encoded: {:.3} s ({:.3} s CPU); compact takes {:.2}x its wall",
        encoded.len(),
        fold_best.wall,
        fold_best.cpu,
        compact.wall / fold_best.wall
    );
    println!(
        "  best ratio: fold floor / measured read = {:.2}x; fold floor / read floor = {:.2}x (CPU {:.2}x); target <= \
         2x, measured {:.2}x",
        fold_best.wall / read.wall,
        fold_best.wall / read_best.wall,
        fold_best.cpu / read_best.cpu,
        compact.wall / read.wall
    );
}

/// The folded chunks along the first dimension: (new chunk number, the old chunks it covers), for
/// every new chunk that covers more than one old one.
fn folds(old: &ChunkDim, new: &ChunkDim) -> Vec<(u64, Range<u64>)> {
    let chunk_of = |index: u64| old.locate(index).unwrap().0;
    (0..new.num_chunks())
        .map(|p| (p, chunk_of(new.start(p))..chunk_of(new.start(p) + new.valid(p) - 1) + 1))
        .filter(|(_, covered)| covered.end - covered.start > 1)
        .collect()
}

/// The read's floor: every chunk decoded and placed in an array-sized buffer, one slab of chunks of
/// the first dimension per task. Returns the buffer's length.
fn read_floor(meta: &ArrayMetadata, stored: &[&[u8]]) -> usize {
    let (grid, shape, size) = (&meta.chunk_grid, meta.shape(), meta.element_size());
    let row = shape[1..].iter().product::<u64>() as usize * size;
    let mut out = vec![0u8; shape[0] as usize * row];
    let per_slab = grid.num_chunks() / grid.dim(0).num_chunks();
    let mut slabs = Vec::new();
    let mut rest = &mut out[..];
    for c in 0..grid.dim(0).num_chunks() {
        let (slab, tail) = rest.split_at_mut(grid.dim(0).valid(c) as usize * row);
        slabs.push((c, slab));
        rest = tail;
    }
    slabs.into_par_iter().for_each(|(c, slab)| {
        let slab_shape = [grid.dim(0).valid(c), shape[1], shape[2]];
        for linear in c * per_slab..(c + 1) * per_slab {
            let coords = grid.chunk_coords(linear);
            let (origin, edges) = (grid.chunk_origin(&coords), grid.chunk_shape(&coords));
            let count: Vec<u64> = (0..3).map(|d| grid.dim(d).valid(coords[d])).collect();
            let chunk = decode_chunk(meta, linear, stored[linear as usize]);
            copy_box(&chunk, &edges, &[0, 0, 0], slab, &slab_shape, &[0, origin[1], origin[2]], &count, size);
        }
    });
    std::hint::black_box(&out).len()
}

/// The fold's floor: every folded chunk (of `new`'s grid) built from its old chunks, decoded and
/// placed, then encoded with the array's codecs. Returns them by linear index of `new`'s grid.
fn fold_floor(
    meta: &ArrayMetadata,
    stored: &[&[u8]],
    new: &ArrayMetadata,
    folds: &[(u64, Range<u64>)],
) -> Vec<(u64, Vec<u8>)> {
    let (grid, size) = (&meta.chunk_grid, meta.element_size());
    let (ny, nx) = (grid.dim(1).num_chunks(), grid.dim(2).num_chunks());
    let tasks: Vec<(u64, Range<u64>, u64, u64)> =
        folds.iter().flat_map(|(p, old)| (0..ny * nx).map(move |i| (*p, old.clone(), i / nx, i % nx))).collect();
    tasks
        .into_par_iter()
        .map(|(p, old, b, c)| {
            let coords = [p, b, c];
            let edges = new.chunk_grid.chunk_shape(&coords);
            let fold_start = new.chunk_grid.dim(0).start(p);
            let mut folded = vec![0u8; edges.iter().product::<u64>() as usize * size];
            for k in old {
                let linear = grid.linear_index(&[k, b, c]);
                let chunk = decode_chunk(meta, linear, stored[linear as usize]);
                let count = [grid.dim(0).valid(k), grid.dim(1).valid(b), grid.dim(2).valid(c)];
                let to = [grid.dim(0).start(k) - fold_start, 0, 0];
                copy_box(&chunk, &grid.chunk_shape(&[k, b, c]), &[0, 0, 0], &mut folded, &edges, &to, &count, size);
            }
            let encoded = new.codecs.encode(&folded, size).unwrap();
            (new.chunk_grid.linear_index(&coords), encoded)
        })
        .collect()
}

/// Rounds of (write the store, read it, compact it); the fastest read and compaction are kept (two
/// cores shared with other work: the slower runs are other work's noise).
const ROUNDS: usize = 3;
