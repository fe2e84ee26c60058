//! DMR++ sidecars as scan input (`fixtures/dmrpp`: BES's test files, each with the sidecar BES's
//! `get_dmrpp` wrote for it). Every HDF5 pair is scanned from its sidecar and from its file, the two
//! scans must reference the same bytes (offsets, lengths, filters, fill values, types, shapes), and
//! every value read through a store made from the sidecar equals libhdf5's read of the file.
//! `vzarr check-sidecars` finds a changed offset and a dropped filter; hostile sidecars give one
//! line (`bad_input`); `scan --sidecars dmrpp` and `--concat` over sidecars (`archive`); sidecars over
//! HTTP (`remote`); padded structures stored contiguously and compact (`padded`).

mod archive;
mod bad_input;
mod bes_pairs;
mod bes_sidecar;
mod companion;
mod file_types;
mod heap_strings;
mod padded;
mod remote;

use std::path::{Path, PathBuf};

use crate::common::hdf5_oracle::try_read_native;
use crate::common::*;
use vzarr::dataset::ChunkEntry;
use vzarr::dataset::Codec;
use vzarr::dataset::DataType;
use vzarr::dataset::{VirtualArray, VirtualDataset};
use vzarr::pipeline::{write_dataset, Format, Output};
use vzarr::ScanOptions;

/// Pairs whose sidecar BES wrote differently from the file it lies beside (the sidecar is stale or
/// says less than the file): `check-sidecars` must report each, and they are left out of the
/// equality checks.
pub const DIFFERING: [(&str, &str); 3] = [
    ("FletcherShuffle.nc4", "letter at another offset, filters in another order, no fill values"),
    ("chunked_compound.h5", "the sidecar lists no variable"),
    ("grid_2_2d.h5", "BES's DAP names (Data_Fields for Data Fields), and variables of its _mvs.h5 companion"),
];

/// The committed HDF5 pairs: (sidecar, data file).
pub fn hdf5_pairs() -> Vec<(PathBuf, PathBuf)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/dmrpp");
    let mut pairs = Vec::new();
    for dir in ["dmrpp", "fill_value", "string_arrays", "deflate_twice"] {
        for entry in std::fs::read_dir(root.join(dir)).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "dmrpp") {
                pairs.push((path.clone(), path.with_extension("")));
            }
        }
    }
    pairs.sort();
    assert!(pairs.len() >= 60, "fixtures/dmrpp is incomplete: {} pairs", pairs.len());
    pairs
}

/// A committed pair by data file name (`dmrpp/SDS_shuf_2def_fle.h5`).
pub fn pair(name: &str) -> (PathBuf, PathBuf) {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/dmrpp").join(name);
    (data.with_file_name(format!("{}.dmrpp", data.file_name().unwrap().to_string_lossy())), data)
}

/// A pair whose sidecar lists a variable its file lacks (BES's `array_1d_hacked_to_bytes`, refused:
/// its chunk positions have two coordinates for one dimension), which takes a `phony_dim_N` number
/// the file's scan gives the next variable: dimension names are not compared there.
const EXTRA_VARIABLE: &str = "t_string_chunk.h5";

fn is_differing(data: &Path) -> bool {
    let name = data.file_name().unwrap().to_string_lossy();
    DIFFERING.iter().any(|(n, _)| *n == name)
}

fn lenient() -> ScanOptions {
    ScanOptions { skip_unsupported: true, ..Default::default() }
}

/// The codecs with zlib levels left out where the sidecar gives none (decoding does not use them).
fn codecs_for_comparison(array: &VirtualArray, keep_levels: bool) -> Vec<Codec> {
    let codecs = array.metadata.codecs.codecs().to_vec();
    codecs
        .into_iter()
        .map(|c| match c {
            Codec::Zlib { .. } if !keep_levels => Codec::Zlib { level: 0 },
            c => c,
        })
        .collect()
}

/// Differences between the sidecar's scan and the file's for one array.
fn compare(
    sidecar: &Path,
    ours: &VirtualArray,
    theirs: &VirtualArray,
    ds: (&VirtualDataset, &VirtualDataset),
) -> Vec<String> {
    let mut out = Vec::new();
    let what = format!("{}: {}", sidecar.display(), ours.path);
    let (a, b) = (&ours.metadata, &theirs.metadata);
    let text = std::fs::read_to_string(sidecar).unwrap();
    let levels = text.contains("deflateLevel");
    // The sidecar holds a structure's elements itself (`dmrpp:specialstructuredata`).
    let special = text.contains("<dmrpp:specialstructuredata>");
    let checks = [
        ("data type", a.data_type == b.data_type),
        ("chunk grid", a.chunk_grid == b.chunk_grid),
        ("fill value", a.fill_value == b.fill_value),
        ("codecs", codecs_for_comparison(ours, levels) == codecs_for_comparison(theirs, levels)),
        (
            "dimension names",
            a.dimension_names == b.dimension_names || sidecar.ends_with(format!("{EXTRA_VARIABLE}.dmrpp")),
        ),
        ("chunk count", ours.chunks.len() == theirs.chunks.len()),
    ];
    for (name, same) in checks {
        if !same {
            out.push(format!("{what}: {name}: sidecar {a:?} vs file {b:?}"));
        }
    }
    let location = |d: &VirtualDataset, s: u32| d.sources.get(s).unwrap().location.clone();
    for (k, (x, y)) in ours.chunks.iter().zip(theirs.chunks.iter()).enumerate() {
        let same = match (x, y) {
            (
                ChunkEntry::Source { source: s1, offset: o1, length: l1 },
                ChunkEntry::Source { source: s2, offset: o2, length: l2 },
            ) => (o1, l1, location(ds.0, s1)) == (o2, l2, location(ds.1, s2)),
            (ChunkEntry::Owned { offset: o1, length: l1 }, ChunkEntry::Owned { offset: o2, length: l2 }) => {
                ours.chunks.owned_chunk(o1, l1).unwrap() == theirs.chunks.owned_chunk(o2, l2).unwrap()
            }
            // A structure with string members whose elements BES wrote into the sidecar
            // (`dmrpp:specialstructuredata`): the sidecar's elements are the file's stored bytes
            // (the codecs, checked above, say both are unfiltered).
            (ChunkEntry::Owned { offset: o1, length: l1 }, ChunkEntry::Source { source, offset, length })
                if special =>
            {
                let file = std::fs::read(location(ds.1, source)).unwrap();
                let stored = file.get(offset as usize..(offset + length) as usize);
                stored == Some(ours.chunks.owned_chunk(o1, l1).unwrap().as_ref())
            }
            (x, y) => x == y,
        };
        if !same {
            out.push(format!("{what}: chunk {k}: sidecar {x:?} vs file {y:?}"));
        }
    }
    out
}

/// The file's array whose chunks are the same byte ranges, in the same order, as `array`'s (at
/// least one chunk), if any.
fn same_bytes_as(array: &VirtualArray, file: &VirtualDataset) -> Option<String> {
    let ranges = |a: &VirtualArray| -> Vec<(u64, u64)> {
        a.chunks
            .iter()
            .filter_map(|c| match c {
                ChunkEntry::Source { offset, length, .. } => Some((offset, length)),
                _ => None,
            })
            .collect()
    };
    let ours = ranges(array);
    let found = file.arrays.iter().find(|a| !ours.is_empty() && ranges(a) == ours);
    found.map(|a| a.path.clone())
}

#[test]
fn every_hdf5_pair_scans_to_the_files_references() {
    let (mut compared, mut differences) = (0, Vec::new());
    for (sidecar, data) in hdf5_pairs().into_iter().filter(|(_, d)| !is_differing(d)) {
        let from_sidecar = scan(&sidecar, &lenient()).unwrap_or_else(|e| panic!("{e}"));
        let from_file = scan(&data, &lenient()).unwrap_or_else(|e| panic!("{e}"));
        let source = &from_sidecar.sources.get(0).unwrap().location;
        assert_eq!(Path::new(source), std::path::absolute(&data).unwrap(), "{}: data file", sidecar.display());
        assert_eq!(from_sidecar.sources.get(0), from_file.sources.get(0), "{}: fingerprint", sidecar.display());
        for theirs in &from_file.arrays {
            match from_sidecar.array(&theirs.path) {
                Some(ours) => {
                    compared += 1;
                    differences.extend(compare(&sidecar, ours, theirs, (&from_sidecar, &from_file)));
                }
                // What the sidecar describes but vzarr cannot represent is a warning naming it.
                None => assert!(
                    from_sidecar.warnings.iter().any(|w| w.variable == theirs.path),
                    "{}: {} neither scanned nor refused: {:?}",
                    sidecar.display(),
                    theirs.path,
                    from_sidecar.warnings
                ),
            }
        }
        for ours in &from_sidecar.arrays {
            // A variable BES's test adds by hand over another's chunks (`array_1d_hacked_to_bytes`):
            // not in the file under its name, it must read bytes of the file's own variable.
            let in_file = from_file.array(&ours.path).is_some() || same_bytes_as(ours, &from_file).is_some();
            assert!(in_file, "{}: {} not in the file", sidecar.display(), ours.path);
        }
    }
    assert!(differences.is_empty(), "{} differences:\n{}", differences.len(), differences.join("\n"));
    assert!(compared >= 80, "only {compared} arrays compared");
}

/// Whether libhdf5 never writes `path`'s fill value (`H5D_FILL_TIME_NEVER`).
fn never_filled(data: &Path, path: &str) -> bool {
    with_hdf5_files(|| {
        let ds = hdf5::File::open(data).ok().and_then(|f| f.dataset(path).ok());
        ds.and_then(|d| d.dcpl().ok()).is_some_and(|p| p.fill_time() == hdf5::plist::dataset_create::FillTime::Never)
    })
}

/// libhdf5's whole read of `path` in `data` into its native type, after checking that type's size
/// times the element count is `len` (the bytes vzarr read).
fn libhdf5_values(data: &Path, path: &str, len: usize) -> Option<Vec<u8>> {
    // libnetcdf stores a variable named as a dimension it is not the coordinate of under this name.
    let (group, leaf) = path.rsplit_once('/').map_or(("", path), |(g, l)| (g, l));
    let renamed =
        if group.is_empty() { format!("_nc4_non_coord_{leaf}") } else { format!("{group}/_nc4_non_coord_{leaf}") };
    let exists = with_hdf5_files(|| hdf5::File::open(data).ok().is_some_and(|f| f.dataset(&renamed).is_ok()));
    let path = if exists { renamed.as_str() } else { path };
    use hdf5_sys::h5d::{H5Dget_space, H5Dget_type};
    use hdf5_sys::h5s::{H5Sclose, H5Sget_simple_extent_npoints};
    use hdf5_sys::h5t::{H5T_direction_t, H5Tclose, H5Tget_native_type, H5Tget_size};
    let native = with_hdf5_files(|| {
        let ds = hdf5::File::open(data).ok()?.dataset(path).ok()?;
        let _guard = hdf5_sys::LOCK.lock();
        // SAFETY: plain queries of an open dataset's type and dataspace, each handle closed.
        unsafe {
            let (ftype, space) = (H5Dget_type(ds.id()), H5Dget_space(ds.id()));
            let native = H5Tget_native_type(ftype, H5T_direction_t::H5T_DIR_ASCEND);
            let count = H5Sget_simple_extent_npoints(space).max(0) as usize;
            let bytes = (H5Tget_size(native) * count, H5Tget_size(ftype) * count);
            H5Tclose(native);
            H5Tclose(ftype);
            H5Sclose(space);
            Some(bytes)
        }
    })?;
    if native.0 != len {
        // A packed compound libhdf5 pads in memory: its file type (packed), little-endian. A compound
        // padded in the file too (vzarr packs it) is not read here.
        return (native.1 == len).then(|| crate::common::hdf5_oracle::read_as_stored_le(data, path, len));
    }
    try_read_native(data, path, len)
}

#[test]
fn values_read_through_sidecar_stores_equal_libhdf5() {
    let (mut checked, dir) = (0, tempfile::tempdir().unwrap());
    for (k, (sidecar, data)) in hdf5_pairs().into_iter().filter(|(_, d)| !is_differing(d)).enumerate() {
        let dataset = scan(&sidecar, &lenient()).unwrap();
        let from_file = scan(&data, &lenient()).unwrap();
        let store_path = dir.path().join(format!("s{k}.vzarr"));
        write_dataset(&dataset, &Output::new(&store_path, Format::Native)).unwrap();
        let store = open_store(&store_path);
        for array in &dataset.arrays {
            if array.metadata.data_type == DataType::String {
                continue; // variable-length strings: compared as the file scan's owned bytes above
            }
            if never_filled(&data, &array.path) && array.chunks.iter().all(|c| c == ChunkEntry::Missing) {
                // H5D_FILL_TIME_NEVER and no chunk written: libhdf5 leaves the buffer as it was, while
                // vzarr (from the file and from the sidecar alike) reads the declared fill value.
                continue;
            }
            let ours = read(&store, &array.path, "").bytes;
            // A variable the file does not hold over another's chunks: the other's stored bytes.
            let path = match from_file.array(&array.path) {
                Some(_) => array.path.clone(),
                None => same_bytes_as(array, &from_file)
                    .unwrap_or_else(|| panic!("{}: {} not in the file", sidecar.display(), array.path)),
            };
            let Some(theirs) = libhdf5_values(&data, &path, ours.len()) else {
                let padded = matches!(array.metadata.data_type, DataType::Struct(_));
                assert!(padded, "{}: {}: libhdf5 cannot read it into {} bytes", data.display(), array.path, ours.len());
                continue;
            };
            let what = format!("{} (from {}): {}", data.display(), sidecar.display(), array.path);
            assert_same_elements(&what, &ours, &theirs, array.metadata.data_type.size().max(1));
            checked += 1;
        }
    }
    assert!(checked >= 70, "only {checked} arrays checked against libhdf5");
}

#[test]
fn check_sidecars_reports_a_changed_offset_and_a_dropped_filter() {
    let (sidecar, data) = pair("dmrpp/SDS_shuf_2def_fle.h5");
    let text = std::fs::read_to_string(&sidecar).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let variant = |name: &str, text: &str| {
        let sub = dir.path().join(name);
        std::fs::create_dir(&sub).unwrap();
        std::fs::copy(&data, sub.join("a.h5")).unwrap();
        std::fs::write(sub.join("a.h5.dmrpp"), text).unwrap();
        sub.join("a.h5.dmrpp").display().to_string()
    };
    let same = variant("same", &text);
    assert!(
        text.contains(r#"offset="4048""#) && text.contains(r#"compressionType="shuffle deflate deflate fletcher32""#)
    );
    let moved = variant("moved", &text.replace(r#"offset="4048""#, r#"offset="4050""#));
    let dropped = variant("dropped", &text.replace("shuffle deflate deflate fletcher32", "shuffle deflate deflate"));
    let ok = cli_expect(&["check-sidecars", &same], 0);
    assert!(ok.stdout.contains("matches"), "{}", ok.stdout);
    let run = cli_expect(&["check-sidecars", &same, &moved, &dropped], 1);
    let lines: Vec<&str> = run.stdout.lines().collect();
    let line = |needle: &str| lines.iter().any(|l| l.contains(needle));
    assert!(line(&format!("{moved}: IntArray: chunk 1: offset: sidecar 4050, file 4048")), "{}", run.stdout);
    assert!(line(&format!("{dropped}: IntArray: filters:")), "{}", run.stdout);
    assert!(!line(&format!("{same}: IntArray")), "{}", run.stdout);
    assert!(line("3 sidecar(s): 2 differ from their files"), "{}", run.stdout);
    // Issue 52 item 4: a byte order that contradicts the file, and a sidecar none of whose
    // variables can be compared (a filter scan refuses), never "match".
    assert!(text.contains(r#"byteOrder="LE""#));
    let swapped = variant("swapped", &text.replace(r#"byteOrder="LE""#, r#"byteOrder="BE""#));
    let refused = variant("refused", &text.replace("shuffle deflate deflate fletcher32", "shuffle lzw deflate"));
    let run = cli_expect(&["check-sidecars", &swapped], 1);
    assert!(
        run.stdout.contains(&format!("{swapped}: IntArray: byte order: sidecar big, file little")),
        "{}",
        run.stdout
    );
    let run = cli_expect(&["check-sidecars", &refused], 1);
    assert!(!run.stdout.contains("matches"), "{}", run.stdout);
    assert!(run.stdout.contains(&format!("{refused}: not compared: IntArray")), "{}", run.stdout);
    assert!(run.stdout.contains(&format!("{refused}: nothing compared with")), "{}", run.stdout);
    // Chunks outside the array: scan refuses the variable, check-sidecars names the difference.
    let outside = variant("outside", &text.replace("[3,4]", "[6,4]"));
    let run = cli_expect(&["check-sidecars", &outside], 1);
    assert!(run.stdout.contains(&format!("{outside}: IntArray: storage: sidecar refused by scan")), "{}", run.stdout);
    // Filters are named, never printed as their JSON.
    assert!(lines.iter().all(|l| !l.contains('{')), "{}", run.stdout);
    // BES's own stale pairs are found too.
    for (name, _) in DIFFERING {
        let path = hdf5_pairs().into_iter().find(|(_, d)| d.ends_with(name)).unwrap().0;
        let run = cli_expect(&["check-sidecars", path.to_str().unwrap()], 1);
        assert!(run.stdout.contains("sidecar "), "{name}: {}", run.stdout);
    }
}

/// Issue 51 item 5: every lie a doctored sidecar tells that `scan` would refuse or read differently
/// is a difference `check-sidecars` names (exit 1), never "matches".
#[test]
fn check_sidecars_reports_every_lie_the_scan_would_catch() {
    let dir = tempfile::tempdir().unwrap();
    let variant = |name: &str, pair_name: &str, edit: &dyn Fn(&str) -> String| {
        let (sidecar, data) = pair(pair_name);
        let text = std::fs::read_to_string(&sidecar).unwrap();
        let edited = edit(&text);
        assert_ne!(edited, text, "{name}: the edit changed nothing");
        let sub = dir.path().join(name);
        std::fs::create_dir(&sub).unwrap();
        let file = data.file_name().unwrap().to_string_lossy().into_owned();
        std::fs::copy(&data, sub.join(&file)).unwrap();
        std::fs::write(sub.join(format!("{file}.dmrpp")), edited).unwrap();
        sub.join(format!("{file}.dmrpp")).display().to_string()
    };
    type Edit<'a> = &'a dyn Fn(&str) -> String;
    let lies: [(&str, &str, Edit, &str); 7] = [
        ("off-grid", "dmrpp/chunked_twoD.h5", &|t| t.replace("[0,50]", "[0,25]"), "d_4_chunks"),
        ("outside", "dmrpp/chunked_twoD.h5", &|t| t.replace("[50,50]", "[100,50]"), "d_4_chunks"),
        (
            "past-the-end",
            "dmrpp/chunked_twoD.h5",
            &|t| t.replace(r#"offset="34016""#, r#"offset="44000""#),
            "d_4_chunks",
        ),
        (
            "type",
            "dmrpp/chunked_twoD.h5",
            &|t| {
                t.replace("<Float32 name=\"d_4_chunks\">", "<Int32 name=\"d_4_chunks\">")
                    .replace("</Float32>", "</Int32>")
            },
            "d_4_chunks",
        ),
        (
            "shape",
            "dmrpp/chunked_twoD.h5",
            &|t| t.replacen(r#"<Dim size="100"/>"#, r#"<Dim size="99"/>"#, 1),
            "d_4_chunks",
        ),
        ("compact-length", "dmrpp/Scalar_compact.h5", &|t| t.replace("AQAAAA==", "AQAAAAIA"), "compact_scalar"),
        (
            "byte-order",
            "dmrpp/chunked_twoD.h5",
            &|t| t.replace("<dmrpp:chunks>", r#"<dmrpp:chunks byteOrder="BE">"#),
            "d_4_chunks",
        ),
    ];
    for (name, pair_name, edit, var) in lies {
        let sidecar = variant(name, pair_name, edit);
        let run = cli_expect(&["check-sidecars", &sidecar], 1);
        assert!(!run.stdout.contains("matches"), "{name}: {}", run.stdout);
        assert!(
            run.stdout.contains(&format!("{sidecar}: {var}: ")),
            "{name}: no difference named for {var}:\n{}",
            run.stdout
        );
    }
}
