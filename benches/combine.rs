//! Combine benchmark: the pure group -> concatenate -> merge step on synthetic scans (no files), to
//! show it scales linearly with the number of files.
//!
//! Each synthetic file is one CMIP-like `tas(time=365, lat=4, lon=6)` year of one member, chunked
//! (100, 2, 3) (a partial, trimmed last chunk per year), with a `time` coordinate and `variant_label`
//! attribute. Combined with `member=attr:variant_label` and `time`, for growing archives.
//!
//! Writing the combined result is measured by `benches/icechunk.rs` (native store vs Icechunk).
//!
//! Run: `cargo bench --bench combine`.

use std::time::Instant;

use vzarr::dataset::{ArrayMetadata, Attributes, DataType, FillValue};
use vzarr::dataset::{ChunkEntry, SourceFile};
use vzarr::dataset::{ChunkTable, ConcatCoordinate, GroupNode, TailChunks, VirtualArray, VirtualDataset};
use vzarr::dataset::{CodecChain, Endian};
use vzarr::grid::ChunkGrid;
use vzarr::pipeline::{combine, CombineOptions, ConcatDim};

const DAYS: u64 = 365;

fn array(path: &str, shape: &[u64], chunk: &[u64], names: &[&str]) -> VirtualArray {
    let grid = ChunkGrid::regular(shape, chunk).unwrap();
    let n = grid.num_chunks();
    let entries: Vec<ChunkEntry> =
        (0..n).map(|k| ChunkEntry::Source { source: 0, offset: 4096 + k * 1000, length: 900 }).collect();
    let metadata = ArrayMetadata {
        data_type: DataType::Float32,
        chunk_grid: grid,
        fill_value: FillValue::zero(DataType::Float32),
        codecs: CodecChain::raw(Some(Endian::Little)),
        dimension_names: Some(names.iter().map(|s| s.to_string()).collect()),
        attributes: Attributes::new(),
        notes: Default::default(),
    };
    VirtualArray {
        path: path.into(),
        metadata,
        chunks: ChunkTable::from_entries(entries, vzarr::dataset::OwnedBytes::new()),
        rewritten_chunks: 0,
        digest: None,
        tails: Vec::new(),
    }
}

fn file(member: usize, year: u64) -> VirtualDataset {
    let mut tas = array("tas", &[DAYS, 4, 6], &[100, 2, 3], &["time", "lat", "lon"]);
    let grid = tas.metadata.chunk_grid.clone();
    let last: Vec<(u64, ChunkEntry)> = (0..grid.num_chunks())
        .filter(|&k| grid.chunk_coords(k)[0] == 3)
        .map(|k| (k, ChunkEntry::Source { source: 0, offset: 4096 + k * 1000, length: 65 * 6 * 4 }))
        .collect();
    tas.tails.push(TailChunks { dims: vec![0], entries: last, rewritten: 0 });
    let time = array("time", &[DAYS], &[DAYS], &["time"]);
    let mut attributes = Attributes::new();
    attributes.insert("variant_label".into(), format!("r{member}i1p1f1").into());
    let mut dataset = VirtualDataset {
        groups: vec![GroupNode::new("", attributes)],
        arrays: vec![time, tas],
        ..VirtualDataset::default()
    };
    let location = format!("/archive/tas_day_M_r{member}i1p1f1_gn_{year}.nc");
    dataset.sources.push(SourceFile::new(location, 1 << 20, Some(0)));
    let first = (year * DAYS) as f64;
    dataset.concat.push(ConcatCoordinate {
        dim: "time".into(),
        values: (0..DAYS).map(|d| first + d as f64 + 0.5).collect(),
        units: Some("days since 1850-01-01".into()),
        calendar: Some("noleap".into()),
        bounds: None,
    });
    dataset
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if !args.iter().any(|a| a == "--bench") {
        return; // built and run by `cargo test --all-targets`: nothing to measure there
    }
    combine_part();
}

fn combine_part() {
    let options = CombineOptions {
        dims: vec!["member=attr:variant_label".parse().unwrap(), ConcatDim::existing("time")],
        ..CombineOptions::default()
    };
    for (members, years) in [(10, 100), (20, 250), (40, 500)] {
        let files: Vec<VirtualDataset> = (0..members).flat_map(|m| (0..years).map(move |y| file(m, y))).collect();
        let n = files.len();
        let refs: usize = files.iter().map(|f| f.arrays.iter().map(|a| a.chunks.len()).sum::<usize>()).sum();
        let start = Instant::now();
        let combined = combine(files, &options).unwrap();
        let secs = start.elapsed().as_secs_f64();
        let shape = combined.array("tas").unwrap().metadata.shape();
        println!(
            "{members} members x {years} years = {n} files, {refs} references: combine {secs:.3} s \
             ({:.0} files/s, {:.2} us/file); tas {shape:?}",
            n as f64 / secs,
            secs * 1e6 / n as f64
        );
    }
}
