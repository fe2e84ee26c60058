//! Data sets with an unlimited first dimension appended to in several `SDwritedata` calls, then in a
//! second `SDstart` session (what BES's `SDS_unlimited_2.hdf` is): their data is linked blocks, and
//! the dimension record keeps the extent of the first session. vzarr's scan has the shape libhdf4's
//! `SDgetinfo` reports, references every block in order, and reads libhdf4's values.

use std::ffi::{c_void, CString};
use std::path::Path;

use vzarr::ScanOptions;

use super::oracle::{
    libhdf4_shape, libhdf4_values, SDcreate, SDend, SDendaccess, SDnametoindex, SDselect, SDsetblocksize, SDstart,
    SDwritedata, LIBHDF4,
};
use super::read_back;

const DFACC_WRITE: i32 = 2;
const DFACC_CREATE: i32 = 4;
const DFNT_INT32: i32 = 24;
/// libhdf4's `SD_UNLIMITED`.
const SD_UNLIMITED: i32 = 0;
/// Values of one row.
const COLUMNS: i32 = 10;
/// The rows each `SDwritedata` call writes: the first session's, then the second's.
const FIRST_SESSION: [(i32, i32); 3] = [(0, 3), (3, 6), (6, 10)];
const SECOND_SESSION: [(i32, i32); 2] = [(10, 11), (11, 12)];

/// The data sets written, each in a file of its own: name and linked-block size (`SDsetblocksize`; `None`: libhdf4's default).
/// Blocks of two rows, blocks cutting rows (7 values, read and kept by the store), and blocks of one
/// value (as in BES's file: adjacent in the file within a session, 120 of them, all in the first link
/// table, so that each session's are whole rows).
const DATASETS: [(&str, Option<i32>); 4] =
    [("default_blocks", None), ("two_rows", Some(80)), ("cut_rows", Some(28)), ("one_value", Some(4))];

/// Rows `rows` of data set number `set`: distinct values (whatever they are, libhdf4 reads them back).
fn rows(set: i32, (from, to): (i32, i32)) -> Vec<i32> {
    (from..to).flat_map(|r| (0..COLUMNS).map(move |c| set * 100_000 + r * 100 + c)).collect()
}

/// Writes rows `range` of the open data set `sds` in one `SDwritedata` call.
///
/// # Safety
/// `sds` is an SDS id libhdf4 returned and has not ended.
unsafe fn write_rows(sds: i32, set: i32, range: (i32, i32)) {
    let values = rows(set, range);
    let (start, edge) = ([range.0, 0], [range.1 - range.0, COLUMNS]);
    let data = values.as_ptr().cast::<c_void>();
    assert_ne!(SDwritedata(sds, start.as_ptr(), std::ptr::null(), edge.as_ptr(), data), -1, "SDwritedata");
}

/// Writes `path`: data set `name` (number `set`, linked blocks of `block` bytes) created and written
/// in [`FIRST_SESSION`]'s calls, the file closed, opened again and the data set appended to in
/// [`SECOND_SESSION`]'s calls. (One data set a file: nothing else lies between its blocks.)
fn write_appended(path: &Path, set: i32, name: &str, block: Option<i32>) {
    let file = CString::new(path.to_str().unwrap()).unwrap();
    let name = CString::new(name).unwrap();
    let _turn = LIBHDF4.lock().unwrap_or_else(|e| e.into_inner());
    // SAFETY: plain C calls; every buffer holds the values its start and edge describe.
    unsafe {
        let sd = SDstart(file.as_ptr(), DFACC_CREATE);
        assert_ne!(sd, -1, "SDstart");
        let sds = SDcreate(sd, name.as_ptr(), DFNT_INT32, 2, [SD_UNLIMITED, COLUMNS].as_ptr());
        assert_ne!(sds, -1, "SDcreate");
        if let Some(size) = block {
            assert_ne!(SDsetblocksize(sds, size), -1, "SDsetblocksize");
        }
        FIRST_SESSION.iter().for_each(|&range| write_rows(sds, set, range));
        SDendaccess(sds);
        assert_ne!(SDend(sd), -1, "SDend");
        let sd = SDstart(file.as_ptr(), DFACC_WRITE);
        assert_ne!(sd, -1, "SDstart again");
        let sds = SDselect(sd, SDnametoindex(sd, name.as_ptr()));
        assert_ne!(sds, -1, "SDselect");
        SECOND_SESSION.iter().for_each(|&range| write_rows(sds, set, range));
        SDendaccess(sds);
        assert_ne!(SDend(sd), -1, "SDend again");
    }
}

#[test]
fn appended_unlimited_data_sets_have_libhdf4s_shape_and_values() {
    let dir = tempfile::tempdir().unwrap();
    let written = SECOND_SESSION.last().unwrap().1 as u64;
    for (set, (name, block)) in (0..).zip(DATASETS) {
        let path = dir.path().join(format!("{name}.hdf"));
        write_appended(&path, set, name, block);
        let (dataset, arrays) = read_back(&path, &ScanOptions::default());
        let theirs = libhdf4_shape(&path, name);
        assert_eq!(theirs, [written, COLUMNS as u64], "{name}: libhdf4 reads every row written");
        let (_, shape, values) = arrays.iter().find(|(n, ..)| n == name).unwrap_or_else(|| panic!("no {name}"));
        assert_eq!(shape, &theirs, "{name}: vzarr's shape");
        assert!(*values == libhdf4_values(&path, name), "{name}: values differ from libhdf4's");
        // Blocks of whole rows (as stored, or merged where adjacent) are referenced, every one in order.
        let array = dataset.array(name).unwrap();
        let stats = array.chunks.stats();
        if name != "cut_rows" {
            assert_eq!(stats.owned, 0, "{name}: {stats:?}");
            let edges: Vec<u64> = array.metadata.chunk_grid.dims()[0].edges().collect();
            assert_eq!(edges.iter().sum::<u64>(), written, "{name}: {edges:?}");
            assert_eq!(stats.referenced as usize, edges.len(), "{name}: {stats:?}");
        }
        verify(&dataset);
    }
}

/// `verify` (libhdf4 as its oracle) proves every array of the store of `dataset`.
#[cfg(feature = "verify")]
fn verify(dataset: &vzarr::dataset::VirtualDataset) {
    use vzarr::pipeline::{write_dataset, Format, Output};
    use vzarr::read::blocking::BlockingStore;
    use vzarr::read::Authorization;
    let runtime = vzarr::pipeline::runtime().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store_path = dir.path().join("store.vzarr");
    let written = write_dataset(dataset, &Output::new(&store_path, Format::Native)).unwrap();
    let store =
        BlockingStore::open(store_path.to_str().unwrap(), &Authorization::new(written.source_containers())).unwrap();
    let _turn = LIBHDF4.lock().unwrap_or_else(|e| e.into_inner());
    let verdicts =
        runtime.block_on(vzarr::verify::verify_store(store.as_async(), &Default::default(), &|_, _, _| {})).unwrap();
    assert_eq!(verdicts.len(), dataset.arrays.len());
    for v in &verdicts {
        assert!(v.ok(), "{}: {v:?}", v.path);
    }
}

#[cfg(not(feature = "verify"))]
fn verify(_: &vzarr::dataset::VirtualDataset) {}

/// BES lists such a data set's linked blocks in `<dmrpp:chunks>` itself (`SDS_unlimited_2.hdf`'s
/// sidecar), blocks of the two sessions apart in the file: the sidecar's scan reads every block, in
/// order, equal to libhdf4's values. The blocks' byte ranges are those of the file's scan, which the
/// test above proves against libhdf4 (libhdf4 has no call that gives them).
#[test]
fn linked_blocks_listed_in_a_sidecar_read_as_libhdf4_reads_them() {
    let dir = tempfile::tempdir().unwrap();
    for (set, (name, block)) in (0..).zip(DATASETS).filter(|(_, (name, _))| *name != "cut_rows") {
        let path = dir.path().join(format!("{name}.hdf"));
        write_appended(&path, set, name, block);
        let (dataset, _) = read_back(&path, &ScanOptions::default());
        let ranges: Vec<(u64, u64)> = dataset
            .array(name)
            .unwrap()
            .chunks
            .iter()
            .filter_map(|c| match c {
                vzarr::dataset::ChunkEntry::Source { offset, length, .. } => Some((offset, length)),
                _ => None,
            })
            .collect();
        let blocks: String = ranges
            .iter()
            .map(|(offset, length)| format!("\n            <dmrpp:block offset=\"{offset}\" nBytes=\"{length}\"/>"))
            .collect();
        let rows = SECOND_SESSION.last().unwrap().1;
        let file = path.file_name().unwrap().to_string_lossy();
        let sidecar = dir.path().join(format!("{file}.dmrpp"));
        let xml = format!(
            r#"<?xml version="1.0" encoding="ISO-8859-1"?>
<Dataset xmlns="http://xml.opendap.org/ns/DAP/4.0#" xmlns:dmrpp="http://xml.opendap.org/dap/dmrpp/1.0.0#" dapVersion="4.0" dmrVersion="1.0" name="{file}" dmrpp:href="data/{file}">
    <Dimension name="rows" size="{rows}"/>
    <Dimension name="columns" size="{COLUMNS}"/>
    <Int32 name="{name}">
        <Dim name="/rows"/>
        <Dim name="/columns"/>
        <dmrpp:chunks byteOrder="BE">{blocks}
        </dmrpp:chunks>
    </Int32>
</Dataset>
"#
        );
        std::fs::write(&sidecar, xml).unwrap();
        let (_, arrays) = read_back(&sidecar, &ScanOptions::default());
        let (_, shape, values) = arrays.iter().find(|(n, ..)| n == name).unwrap_or_else(|| panic!("no {name}"));
        assert_eq!(shape, &libhdf4_shape(&path, name), "{name}: the sidecar's shape");
        assert!(*values == libhdf4_values(&path, name), "{name}: values through the sidecar differ from libhdf4's");
        // vzarr's own sidecar of the file lists the blocks as BES does and reads back the same.
        std::fs::remove_file(&sidecar).unwrap();
        let run = std::process::Command::new(env!("CARGO_BIN_EXE_vzarr"))
            .args(["scan", path.to_str().unwrap(), "--format", "dmrpp", "-o"])
            .arg(format!("{}/", dir.path().display()))
            .output()
            .unwrap();
        assert!(run.status.success(), "{name}: {}", String::from_utf8_lossy(&run.stderr));
        let ours = std::fs::read_to_string(&sidecar).unwrap();
        // Runs of different lengths apart in the file are blocks (runs of one length are regular
        // chunks; runs end to end, one contiguous piece).
        let apart = ranges.windows(2).any(|w| w[0].0 + w[0].1 != w[1].0);
        let uneven = ranges.windows(2).any(|w| w[0].1 != w[1].1);
        assert_eq!(ours.contains("<dmrpp:block "), apart && uneven, "{name}: {ours}");
        let (_, arrays) = read_back(&sidecar, &ScanOptions::default());
        let (_, _, values) = arrays.iter().find(|(n, ..)| n == name).unwrap_or_else(|| panic!("no {name}"));
        assert!(*values == libhdf4_values(&path, name), "{name}: values through vzarr's sidecar differ from libhdf4's");
    }
}
