//! A sidecar whose variables lie in two files, as BES's `get_dmrpp` writes them for HDF-EOS5 grids:
//! the data file's datasets under their DAP names (`Data_Fields` for the HDF5 group `Data Fields`,
//! the HDF5 path in `fullnamepath`), and variables the data file lacks in a companion file
//! (`X.h5_mvs.h5`, named by each chunk's `href`). The scan references both files; `verify` compares
//! each array with the file its chunks lie in, under the dataset's HDF5 path, through libhdf5. A
//! companion that is not there is refused naming the variable and the file.
//!
//! Offsets and lengths come from libhdf5 (the contiguous datasets' offsets), never from vzarr.

use std::path::Path;

use crate::common::*;

/// Writes `g.h5` (`/Data Fields/t`, four floats) and its companion `g.h5_mvs.h5` (`/lat`, three
/// doubles), both contiguous, and the sidecar naming them; returns the sidecar's path.
fn write_pair(dir: &Path) -> std::path::PathBuf {
    let (data, companion) = (dir.join("g.h5"), dir.join("g.h5_mvs.h5"));
    let (t_offset, lat_offset) = with_hdf5_files(|| {
        let f = hdf5::File::create(&data).unwrap();
        let group = f.create_group("Data Fields").unwrap();
        let t = group.new_dataset::<f32>().shape([4]).create("t").unwrap();
        t.write(&[250.5f32, 251.0, 252.25, 253.0]).unwrap();
        let t_offset = t.offset().expect("contiguous");
        let m = hdf5::File::create(&companion).unwrap();
        let lat = m.new_dataset::<f64>().shape([3]).create("lat").unwrap();
        lat.write(&[-45.0f64, 0.0, 45.0]).unwrap();
        (t_offset, lat.offset().expect("contiguous"))
    });
    let xml = format!(
        r#"<?xml version="1.0" encoding="ISO-8859-1"?>
<Dataset xmlns="http://xml.opendap.org/ns/DAP/4.0#" xmlns:dmrpp="http://xml.opendap.org/dap/dmrpp/1.0.0#" dapVersion="4.0" dmrVersion="1.0" name="g.h5" dmrpp:href="data/g.h5" dmrpp:version="3.21.1">
    <Dimension name="lat" size="3"/>
    <Float64 name="lat">
        <Dim name="/lat"/>
        <dmrpp:chunks fillValue="0" byteOrder="LE">
            <dmrpp:chunk offset="{lat_offset}" nBytes="24" href="data/g.h5_mvs.h5"/>
        </dmrpp:chunks>
    </Float64>
    <Group name="Data_Fields">
        <Dimension name="x" size="4"/>
        <Float32 name="t">
            <Dim name="/Data_Fields/x"/>
            <Attribute name="fullnamepath" type="String"><Value>/Data Fields/t</Value></Attribute>
            <dmrpp:chunks fillValue="0" byteOrder="LE">
                <dmrpp:chunk offset="{t_offset}" nBytes="16"/>
            </dmrpp:chunks>
        </Float32>
    </Group>
</Dataset>
"#
    );
    let sidecar = dir.join("g.h5.dmrpp");
    std::fs::write(&sidecar, xml).unwrap();
    sidecar
}

fn s(p: &Path) -> String {
    p.display().to_string()
}

#[test]
fn companion_files_and_dap_names_scan_and_verify_against_their_datasets() {
    let dir = tempfile::tempdir().unwrap();
    let sidecar = write_pair(dir.path());
    let store = dir.path().join("g.vzarr");
    let run = cli_expect(&["scan", &s(&sidecar), "-o", &s(&store)], 0);
    assert!(run.stdout.contains("2 arrays from 2 file(s)"), "{}", run.stdout);
    let run = cli_expect(&["verify", &s(&store)], 0);
    // Each array compared with libhdf5's read of its own file's dataset, element by element.
    assert!(run.stdout.contains("ok   lat: 3 elements equal"), "{}", run.stdout);
    assert!(run.stdout.contains("ok   Data_Fields/t: 4 elements equal"), "{}", run.stdout);

    // Without the companion: the variable in it is refused naming the file; nothing is written.
    std::fs::remove_file(dir.path().join("g.h5_mvs.h5")).unwrap();
    let missing = dir.path().join("missing.vzarr");
    let run = cli(&["scan", &s(&sidecar), "-o", &s(&missing)]);
    assert_ne!(run.code, 0);
    let line = run.stderr.lines().find(|l| l.starts_with("error")).unwrap_or_default();
    assert!(line.contains("lat") && line.contains("g.h5_mvs.h5"), "{}", run.stderr);
    assert!(!missing.exists(), "a refused scan left a store");
}

#[test]
fn bes_grid_with_its_missing_variables_file_scans_and_verifies() {
    // BES's HDF-EOS5 grid pair with the `_mvs.h5` companion BES ships beside it (fixtures).
    let (sidecar, _) = super::pair("dmrpp/grid_2_2d.h5");
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("grid.vzarr");
    let run = cli_expect(&["scan", &s(&sidecar), "-o", &s(&store)], 0);
    assert!(run.stdout.contains("7 arrays from 2 file(s)"), "{}", run.stdout);
    let run = cli_expect(&["verify", &s(&store)], 0);
    for (array, n) in [
        ("HDFEOS/GRIDS/GeoGrid1/Data_Fields/temperature", 32),
        ("HDFEOS/GRIDS/GeoGrid1/YDim", 4),
        ("HDFEOS/GRIDS/GeoGrid2/XDim", 8),
        ("HDFEOS_INFORMATION/StructMetadata_0", 1),
    ] {
        assert!(run.stdout.contains(&format!("ok   {array}: {n} elements equal")), "{array}: {}", run.stdout);
    }
    assert!(run.stdout.contains("7 arrays, 89 elements compared with the source files: 0 failed"), "{}", run.stdout);
}
