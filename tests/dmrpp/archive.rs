//! Archives of granules with sidecars: `vzarr scan 'dir/*.nc.dmrpp' --concat time` and
//! `vzarr scan 'dir/*.nc' --sidecars dmrpp --concat time` give the same dataset as scanning the
//! files, and `vzarr verify` proves their stores against libnetcdf reading the files.
//!
//! The granules are netCDF-4 files written here; their sidecars are written as `get_dmrpp` writes
//! them, with every offset and length taken from libhdf5 (`H5Dget_chunk_info_by_coord`, the
//! contiguous dataset's offset), never from vzarr.

use std::path::{Path, PathBuf};

use crate::common::hdf5_oracle::chunk_at;
use crate::common::*;
use vzarr::pipeline::Archive;

const NX: usize = 5;

/// Day `day`'s granule: `time(2)` (contiguous, days since 2000-01-01) and `tas(time, x)` in
/// chunks of one time step, shuffled and deflated, fill value 1e20.
fn write_granule(dir: &Path, day: usize) -> PathBuf {
    let path = dir.join(format!("day{day:02}.nc"));
    let mut f = netcdf::create(&path).unwrap();
    f.add_dimension("time", 2).unwrap();
    f.add_dimension("x", NX).unwrap();
    let mut time = f.add_variable::<f64>("time", &["time"]).unwrap();
    time.put_attribute("units", "days since 2000-01-01").unwrap();
    time.put_values(&[day as f64, day as f64 + 0.5], ..).unwrap();
    let mut tas = f.add_variable::<f32>("tas", &["time", "x"]).unwrap();
    tas.set_chunking(&[1, NX]).unwrap();
    tas.set_compression(4, true).unwrap();
    tas.set_fill_value(1.0e20f32).unwrap();
    tas.put_attribute("units", "K").unwrap();
    let values: Vec<f32> = (0..2 * NX).map(|i| 250.0 + (day * 10 + i) as f32 * 0.25).collect();
    tas.put_values(&values, [0..2, 0..NX]).unwrap();
    f.close().unwrap();
    path
}

/// The sidecar `get_dmrpp` would write for a granule of [`write_granule`], from libhdf5's offsets.
fn write_sidecar(data: &Path) -> PathBuf {
    let time_offset =
        with_hdf5_files(|| hdf5::File::open(data).unwrap().dataset("time").unwrap().offset().expect("contiguous"));
    let chunks: String = (0..2u64)
        .map(|t| {
            let c = chunk_at(data, "tas", &[t, 0]).expect("written chunk");
            format!(r#"<dmrpp:chunk offset="{}" nBytes="{}" chunkPositionInArray="[{t},0]"/>"#, c.offset, c.length)
        })
        .collect();
    let xml = format!(
        r#"<?xml version="1.0" encoding="ISO-8859-1"?>
<Dataset xmlns="http://xml.opendap.org/ns/DAP/4.0#" xmlns:dmrpp="http://xml.opendap.org/dap/dmrpp/1.0.0#" dapVersion="4.0" dmrVersion="1.0" name="g" dmrpp:href="OPeNDAP_DMRpp_DATA_ACCESS_URL" dmrpp:version="3.21.1">
    <Dimension name="time" size="2"/>
    <Dimension name="x" size="{NX}"/>
    <Float64 name="time">
        <Dim name="/time"/>
        <Attribute name="units" type="String"><Value>days since 2000-01-01</Value></Attribute>
        <dmrpp:chunks fillValue="9.9692099683868690e+36" byteOrder="LE">
            <dmrpp:chunk offset="{time_offset}" nBytes="16"/>
        </dmrpp:chunks>
    </Float64>
    <Float32 name="tas">
        <Dim name="/time"/>
        <Dim name="/x"/>
        <Attribute name="units" type="String"><Value>K</Value></Attribute>
        <Attribute name="_FillValue" type="Float32"><Value>1e+20</Value></Attribute>
        <dmrpp:chunks compressionType="shuffle deflate" deflateLevel="4" fillValue="1e+20" byteOrder="LE">
            <dmrpp:chunkDimensionSizes>1 {NX}</dmrpp:chunkDimensionSizes>
            {chunks}
        </dmrpp:chunks>
    </Float32>
</Dataset>
"#
    );
    let sidecar = data.with_file_name(format!("{}.dmrpp", data.file_name().unwrap().to_string_lossy()));
    std::fs::write(&sidecar, xml).unwrap();
    sidecar
}

fn s(p: &Path) -> String {
    p.display().to_string()
}

#[test]
fn sidecar_archives_concatenate_as_their_files_and_verify() {
    let dir = tempfile::tempdir().unwrap();
    let granules = dir.path().join("granules");
    std::fs::create_dir(&granules).unwrap();
    let files: Vec<PathBuf> = (1..=3).map(|d| write_granule(&granules, d)).collect();
    for file in &files[..2] {
        write_sidecar(file);
    }
    // Every granule but the last has its sidecar: the sidecars alone, and the files with sidecars.
    cli_expect(
        &["scan", &format!("{}/*.nc.dmrpp", s(&granules)), "--concat", "time", "-o", &s(&dir.path().join("a.vzarr"))],
        0,
    );
    cli_expect(&["verify", &s(&dir.path().join("a.vzarr"))], 0);
    let mixed = dir.path().join("b.vzarr");
    let run = cli_expect(
        &["scan", &format!("{}/*.nc", s(&granules)), "--sidecars", "dmrpp", "--concat", "time", "-o", &s(&mixed)],
        0,
    );
    assert!(run.stdout.contains("scanned 2 of 3 file(s) from their DMR++ sidecars"), "{}", run.stdout);
    cli_expect(&["verify", &s(&mixed)], 0);
    // The same dataset as the files' own scan: references, grids, codecs, fill values, coordinates.
    let pattern = format!("{}/*.nc", s(&granules));
    let from_files = with_hdf5_files(|| Archive::new([&pattern]).concat("time").unwrap().scan().unwrap());
    let with_sidecars = with_hdf5_files(|| {
        let archive = Archive::new([&pattern]).concat("time").unwrap();
        archive.sidecars(vzarr::scan::Sidecars::Dmrpp).scan().unwrap()
    });
    assert_eq!(with_sidecars.from_sidecars, 2);
    assert_eq!(from_files.from_sidecars, 0);
    for name in ["time", "tas"] {
        let (a, b) = (with_sidecars.dataset.array(name).unwrap(), from_files.dataset.array(name).unwrap());
        assert_eq!(a.metadata.chunk_grid, b.metadata.chunk_grid, "{name}");
        assert_eq!(a.metadata.codecs, b.metadata.codecs, "{name}");
        assert_eq!(a.metadata.fill_value, b.metadata.fill_value, "{name}");
        assert_eq!(a.metadata.dimension_names, b.metadata.dimension_names, "{name}");
        assert_eq!(a.chunks.iter().collect::<Vec<_>>(), b.chunks.iter().collect::<Vec<_>>(), "{name}");
    }
    assert_eq!(with_sidecars.dataset.sources, from_files.dataset.sources);
}
