//! Targets of the scanners: HDF5 (superblock, object headers, B-trees v1/v2, fixed and extensible
//! array chunk indexes, compact and contiguous layouts, compound repacking and every filter's
//! decoding of chunks the scan copies), NetCDF-3 headers, HDF4 (data descriptors, special elements,
//! Vgroups, number types) and DMR++ sidecars (with their data file). Each writes its input to a file
//! and calls the public [`vzarr::scan_file`].

use std::path::Path;

use vzarr::{scan_file, ScanOptions};

use super::{Context, Target};
use crate::bundle;
use crate::mutate::{mutate, Shape, LE};

/// The scanner targets.
pub fn targets() -> Vec<Target> {
    vec![
        Target {
            name: "hdf5",
            about: "HDF5 superblock, object headers, B-tree v1/v2, fixed/extensible array indexes, filters (scan_file)",
            mutate: |rng, input, others| mutate(rng, input, others, LE),
            run: Box::new(|ctx, input, case| scan_bytes(ctx, "case.h5", input, case)),
        },
        Target {
            name: "netcdf3",
            about: "NetCDF-3 classic, 64-bit offset and CDF-5 headers (scan_file)",
            mutate: |rng, input, others| mutate(rng, input, others, Shape::Binary { big_endian: true, record: 4 }),
            run: Box::new(|ctx, input, case| scan_bytes(ctx, "case.nc", input, case)),
        },
        Target {
            name: "hdf4",
            about: "HDF4 data descriptor blocks, special elements (chunked, compressed, linked, external), Vgroups (scan_file)",
            mutate: |rng, input, others| mutate(rng, input, others, Shape::Binary { big_endian: true, record: 12 }),
            run: Box::new(|ctx, input, case| scan_bytes(ctx, "case.hdf", input, case)),
        },
        Target {
            name: "dmrpp",
            about: "DMR++ sidecar XML with its data file (scan_file of the .dmrpp)",
            mutate: |rng, input, others| bundle::mutate(rng, input, others, ".dmrpp", LE),
            run: Box::new(scan_sidecar),
        },
    ]
}

/// Scan options varied by case: every other case skips unsupported variables and concatenates
/// along `time` (coordinate values read, tails copied, digests of small arrays: more decoding).
fn options(case: u64) -> ScanOptions {
    let mut options = ScanOptions::default();
    if case % 2 == 1 {
        options.skip_unsupported = true;
        options.concat_dims = vec!["time".to_string()];
    }
    options
}

fn scan_bytes(ctx: &Context, name: &str, input: &[u8], case: u64) {
    let path = ctx.fresh_dir().join(name);
    std::fs::write(&path, input).expect("scratch file");
    scan(&path, case);
}

fn scan(path: &Path, case: u64) {
    let result = scan_file(path, &options(case));
    super::show("scan", result.map(|dataset| dataset.arrays.len()));
}

fn scan_sidecar(ctx: &Context, input: &[u8], case: u64) {
    let dir = ctx.fresh_dir();
    let files = bundle::parse(input);
    bundle::write(&files, dir).expect("scratch files");
    for (name, _) in files.iter().filter(|(name, _)| name.ends_with(".dmrpp")) {
        scan(&dir.join(name), case);
    }
}
