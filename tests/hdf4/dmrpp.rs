//! HDF4-derived DMR++ sidecars (`fixtures/dmrpp/h4_dmrpp`: BES's test files and the sidecars its
//! `get_dmrpp` wrote for them): each scans from its sidecar to the references the HDF4 scanner finds
//! in the file, and every value read through a store made from the sidecar equals libhdf4's
//! `SDreaddata` of the file.

use std::path::{Path, PathBuf};

use vzarr::dataset::Codec;
use vzarr::{scan_file, ScanOptions};

use super::oracle::libhdf4_values;
use super::read_back;

fn pairs() -> Vec<(PathBuf, PathBuf)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/dmrpp/h4_dmrpp");
    let mut pairs: Vec<(PathBuf, PathBuf)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "dmrpp"))
        .map(|p| (p.clone(), p.with_extension("")))
        .collect();
    pairs.sort();
    assert!(pairs.len() >= 5, "fixtures/dmrpp/h4_dmrpp is incomplete: {pairs:?}");
    pairs
}

/// The codecs without zlib levels (decoding does not use them).
fn codecs(array: &vzarr::dataset::VirtualArray) -> Vec<Codec> {
    let codecs = array.metadata.codecs.codecs().iter().cloned();
    codecs.map(|c| if let Codec::Zlib { .. } = c { Codec::Zlib { level: 0 } } else { c }).collect()
}

#[test]
fn hdf4_sidecars_reference_the_files_chunks_and_read_libhdf4s_values() {
    let options = ScanOptions::default();
    let mut checked = 0;
    for (sidecar, data) in pairs() {
        let from_sidecar = scan_file(&sidecar, &options).unwrap_or_else(|e| panic!("{e}"));
        let from_file = scan_file(&data, &options).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(from_sidecar.sources, from_file.sources, "{}", sidecar.display());
        assert_eq!(from_sidecar.arrays.len(), from_file.arrays.len(), "{}", sidecar.display());
        for ours in &from_sidecar.arrays {
            let what = format!("{}: {}", sidecar.display(), ours.path);
            let theirs = from_file.array(&ours.path).unwrap_or_else(|| panic!("{what}: not in the file's scan"));
            let (a, b) = (&ours.metadata, &theirs.metadata);
            assert_eq!(a.data_type, b.data_type, "{what}");
            assert_eq!(a.chunk_grid, b.chunk_grid, "{what}");
            assert_eq!(a.fill_value, b.fill_value, "{what}");
            assert_eq!(a.dimension_names, b.dimension_names, "{what}");
            assert_eq!(codecs(ours), codecs(theirs), "{what}");
            assert_eq!(ours.chunks.iter().collect::<Vec<_>>(), theirs.chunks.iter().collect::<Vec<_>>(), "{what}");
        }
        let (_, arrays) = read_back(&sidecar, &options);
        for (name, _, values) in arrays {
            assert_eq!(values, libhdf4_values(&data, &name), "{} (from {}): {name}", data.display(), sidecar.display());
            checked += 1;
        }
    }
    assert!(checked >= 9, "only {checked} arrays checked against libhdf4");
}
