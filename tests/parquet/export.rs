//! `vzarr export --kerchunk-parquet`: an opened store (native or Icechunk) written as the kerchunk
//! Parquet reference set `vzarr scan --format kerchunk-parquet` writes for the same files, file for
//! file; read back by vzarr and by fsspec + zarr-python with values equal to the sources'
//! (libnetcdf, libhdf5, netCDF4); store-owned chunks inline; arrays Zarr v2 cannot express refused
//! by name or left out; nothing written on refusal.

use std::path::Path;

use super::{check_parquet, open_set, recorded_containers, Files};
use crate::common::archives::{daily, monthly};
use crate::common::{cli_expect, dir_entries};
use crate::interop::{python, s};
use vzarr::formats::{IcechunkWriter, KerchunkParquetWriter, NativeWriter};
use vzarr::formats::{WriteOptions, Writer};
use vzarr::pipeline::Archive;

/// `vzarr export STORE --kerchunk-parquet OUT EXTRA...`, expecting exit `code`.
fn export(store: &Path, out: &Path, extra: &[&str], code: i32) -> crate::common::Run {
    let mut args = vec!["export".to_string(), s(store), "--kerchunk-parquet".into(), s(out)];
    args.extend(extra.iter().map(|a| a.to_string()));
    cli_expect(&args, code)
}

/// One scan of five daily files written as a native store, an Icechunk repository and, by the scan's
/// own writer, a Parquet set with records of two rows; each store exported with the same record size
/// is that set, file for file; each day reads back equal to libnetcdf's read of that file; `vzarr
/// verify` passes on the export.
#[test]
fn export_writes_the_set_the_scan_writes() {
    let files = Files::new(&daily(2001, 5));
    let dataset = Archive::new(&files.sources).concat("time").unwrap().history(false).scan().unwrap().dataset;
    let scanned = files.path("scanned.parq");
    let parquet = KerchunkParquetWriter { record_size: 2, ..KerchunkParquetWriter::default() };
    parquet.write(&dataset, &scanned, &WriteOptions::default()).unwrap();
    let native = files.path("daily.vzarr");
    NativeWriter.write(&dataset, &native, &WriteOptions::default()).unwrap();
    let repo = files.path("daily.icechunk");
    IcechunkWriter::default().write(&dataset, &repo, &WriteOptions::default()).unwrap();

    // Written here through the library: the sources' folder is trusted for the exports.
    let trust = format!("{}/", files.dir.path().display());
    let exported = files.path("exported.parq");
    let run = export(&native, &exported, &["--record-size", "2", "--allow-source", &trust], 0);
    assert!(run.stdout.contains("chunk references, 0 inline chunks"), "{}", run.stdout);
    crate::common::assert_same_tree(&exported, &scanned);
    let from_repo = files.path("from-repo.parq");
    export(&repo, &from_repo, &["--record-size", "2", "--allow-source", &trust], 0);
    crate::common::assert_same_tree(&from_repo, &scanned);

    let store = open_set(&exported, &recorded_containers(&exported));
    for (day, source) in files.sources.iter().enumerate() {
        for var in ["tas", "time"] {
            let ours = crate::common::read(&store, var, &format!("{day}:{}", day + 1));
            let theirs = crate::common::oracle_read(source, var, None);
            crate::common::assert_same_elements(&format!("{var}[{day}]"), &ours.bytes, &theirs, ours.data_type.size());
        }
    }
    cli_expect(&["verify".to_string(), s(&exported)], 0);
    let hidden: Vec<String> = dir_entries(files.dir.path()).into_iter().filter(|n| n.starts_with('.')).collect();
    assert!(hidden.is_empty(), "no staging leftovers: {hidden:?}");
}

/// Compact HDF5 datasets are store-owned chunks: exported as inline rows (`raw`), the same set as the
/// scan's, read back equal to libhdf5's values.
#[test]
fn store_owned_chunks_are_exported_inline() {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/dmrpp_out/compact_example.h5");
    let files = Files { dir: tempfile::tempdir().unwrap(), sources: vec![source.clone()] };
    let (native, scanned, exported) = (files.path("c.vzarr"), files.path("scanned.parq"), files.path("c.parq"));
    files.scan(&native, "native", &[], 0);
    files.scan(&scanned, "kerchunk-parquet", &[], 0);
    let run = export(&native, &exported, &[], 0);
    assert!(run.stdout.contains("0 chunk references, 2 inline chunks"), "{}", run.stdout);
    crate::common::assert_same_tree(&exported, &scanned);
    let store = open_set(&exported, &recorded_containers(&exported));
    let ours = crate::common::read(&store, "var_int32", "");
    let theirs = crate::common::hdf5_oracle::read_native(&source, "var_int32", ours.bytes.len());
    crate::common::assert_same_elements("var_int32", &ours.bytes, &theirs, 4);
}

/// Monthly files make a rectilinear time grid: the export is refused in one line naming the array,
/// and nothing is written; with --skip-unsupported the other arrays are written, each left-out one
/// named in a warning (exit 3) and in `.zmetadata`. --overwrite replaces only a reference set, and
/// the Parquet options need --kerchunk-parquet.
#[test]
fn rectilinear_arrays_are_refused_or_left_out() {
    // Small enough to inline by default (`tests/everyday`): nothing inlined here.
    let files = Files::new(&monthly(2001..=2001, None, false)[..3]);
    let native = files.path("monthly.vzarr");
    files.scan(&native, "native", &[], 0);
    let out = files.path("monthly.parq");
    let run = export(&native, &out, &["--inline-threshold", "0"], 1);
    let line = run.stderr_lines().into_iter().find(|l| l.contains("rectilinear")).unwrap_or_default().to_string();
    assert!(
        line.contains("monthly.parq: time: its chunk grid is rectilinear") && line.contains("Zarr v2"),
        "{}",
        run.stderr
    );
    assert!(!out.exists(), "nothing written");

    let run = export(&native, &out, &["--inline-threshold", "0", "--skip-unsupported"], 3);
    assert!(run.stderr.contains("warning: tas: left out of the kerchunk Parquet output"), "{}", run.stderr);
    let zmetadata: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join(".zmetadata")).unwrap()).unwrap();
    let metadata = zmetadata["metadata"].as_object().unwrap();
    assert!(metadata.contains_key("lat/.zarray") && !metadata.contains_key("tas/.zarray"), "{metadata:?}");
    assert!(!out.join("tas").exists());
    let warnings = zmetadata["vzarr"]["warnings"].to_string();
    assert!(warnings.contains("tas") && warnings.contains("rectilinear"), "{warnings}");
    let store = open_set(&out, &recorded_containers(&out));
    let lat = crate::common::read(&store, "lat", "");
    let theirs = crate::common::oracle_read(&files.sources[0], "lat", None);
    crate::common::assert_same_elements("lat", &lat.bytes, &theirs, lat.data_type.size());

    let run = export(&native, &out, &["--inline-threshold", "0", "--skip-unsupported"], 1);
    assert!(run.stderr.contains("already exists (pass --overwrite to replace it)"), "{}", run.stderr);
    export(&native, &out, &["--inline-threshold", "0", "--skip-unsupported", "--overwrite"], 3);
    let plain = files.path("plain");
    std::fs::create_dir(&plain).unwrap();
    std::fs::write(plain.join("keep"), b"mine").unwrap();
    let run = export(&native, &plain, &["--skip-unsupported", "--overwrite"], 1);
    assert!(run.stderr.contains("is not a kerchunk Parquet reference set"), "{}", run.stderr);
    assert_eq!(dir_entries(&plain), ["keep"]);

    // A reference set is a directory: not standard output.
    let run = cli_expect(&["export", &s(&native), "--kerchunk-parquet", "-"], 2);
    assert!(run.stderr.contains("a reference set is a directory"), "{}", run.stderr);
    let json = files.path("refs.json");
    let run = cli_expect(&["export", &s(&native), "--kerchunk", &s(&json), "--record-size", "2"], 2);
    assert!(run.stderr.contains("--kerchunk-parquet"), "{}", run.stderr);
    assert!(!json.exists());
}

/// fsspec's `ReferenceFileSystem` + zarr-python, and VirtualiZarr's `KerchunkParquetParser`, read the
/// exported set with every value equal to netCDF4's.
#[test]
fn python_reads_the_exported_set_equal_to_netcdf4() {
    let Some(python) = python() else {
        eprintln!("notice: no Python >= 3.12 with zarr, fsspec and xarray (run tests/python/setup.sh); skipping");
        return;
    };
    let files = Files::new(&daily(2001, 4));
    let native = files.path("daily.vzarr");
    files.scan(&native, "native", &[], 0);
    let out = files.path("daily.parq");
    export(&native, &out, &["--record-size", "3"], 0);
    let mut args = vec!["read".to_string(), s(&out)];
    args.extend(files.sources.iter().map(s));
    let stdout = check_parquet(&python, &args);
    assert!(stdout.contains("ok   fsspec+zarr tas"), "{stdout}");
    assert!(stdout.contains("ok   virtualizarr KerchunkParquetParser tas"), "{stdout}");
}

/// A non-finite global attribute (a bare `NaN` in the root `zarr.json`, as vzarr writes it) is
/// exported as the scan's writer writes it: the set is the scan's, and `v` reads back equal to
/// libnetcdf's read of the file.
#[test]
fn a_nan_group_attribute_is_exported() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("nan.nc");
    crate::common::with_hdf5_files(|| {
        let mut nc = netcdf::create(&source).unwrap();
        nc.add_attribute("missing", f64::NAN).unwrap();
        nc.add_dimension("x", 4).unwrap();
        nc.add_variable::<f32>("v", &["x"]).unwrap().put_values(&[0.5f32, 1.5, 2.5, 3.5], ..).unwrap();
    });
    let files = Files { dir, sources: vec![source.clone()] };
    let (native, scanned, exported) = (files.path("n.vzarr"), files.path("scanned.parq"), files.path("n.parq"));
    files.scan(&native, "native", &[], 0);
    files.scan(&scanned, "kerchunk-parquet", &[], 0);
    export(&native, &exported, &[], 0);
    crate::common::assert_same_tree(&exported, &scanned);
    // `.zmetadata` holds the bare token, which serde_json (`recorded_containers`) refuses.
    let store = open_set(&exported, &[format!("{}/", files.dir.path().display())]);
    let ours = crate::common::read(&store, "v", "");
    crate::common::assert_same_elements("v", &ours.bytes, &crate::common::oracle_read(&source, "v", None), 4);
}
