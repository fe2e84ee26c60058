//! `vzarr verify` of the default build on HDF4 stores: libhdf4 (the alt build, without its netCDF-2
//! API) proves them in the oracle worker, a store whose values differ fails, and the same binary still
//! verifies netCDF stores with libnetcdf.

use std::path::Path;
use std::process::Command;

use super::fixture;

/// One run of the `vzarr` binary: exit code and output.
struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

/// Runs `vzarr args` with `config` as its configuration directory (trusted containers).
fn vzarr(config: &Path, args: &[&std::ffi::OsStr]) -> Run {
    let output = Command::new(env!("CARGO_BIN_EXE_vzarr")).env("XDG_CONFIG_HOME", config).args(args).output().unwrap();
    let run = Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    };
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    run
}

/// `vzarr scan source -o store`, which must succeed.
fn scan(config: &Path, source: &Path, store: &Path) {
    let run = vzarr(config, &["scan".as_ref(), source.as_os_str(), "-o".as_ref(), store.as_os_str()]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
}

/// `vzarr verify store`.
fn verify(config: &Path, store: &Path) -> Run {
    vzarr(config, &["verify".as_ref(), store.as_os_str()])
}

/// The `ok`/`FAIL` line of `array` in `verify`'s output.
fn line_of<'a>(stdout: &'a str, array: &str) -> &'a str {
    stdout
        .lines()
        .find(|l| l.split_whitespace().nth(1) == Some(&format!("{array}:")))
        .unwrap_or_else(|| panic!("no line for {array}:\n{stdout}"))
}

#[test]
fn vzarr_verify_proves_an_hdf4_store_and_a_netcdf_store_with_one_binary() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config");
    let hdf4 = dir.path().join("types.vzarr");
    scan(&config, &fixture("types.hdf"), &hdf4);
    let run = verify(&config, &hdf4);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert!(run.stdout.contains(": 0 failed") && !run.stdout.contains("FAIL"), "{}", run.stdout);
    assert!(line_of(&run.stdout, "v_f32").starts_with("ok"), "{}", run.stdout);
    let netcdf = dir.path().join("tas.vzarr");
    let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/sample/tas_2023-01.nc");
    scan(&config, &sample, &netcdf);
    let run = verify(&config, &netcdf);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert!(line_of(&run.stdout, "tas").starts_with("ok"), "{}", run.stdout);
}

#[test]
fn vzarr_verify_fails_an_hdf4_store_whose_values_differ() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config");
    let store = dir.path().join("types.vzarr");
    scan(&config, &fixture("types.hdf"), &store);
    // v_i32 and v_u32: the same shape, chunks, codecs and element size, different values. With their
    // manifests swapped each array decodes without error but holds the other's bits.
    let (a, b) = (store.join("v_i32/manifest.bin"), store.join("v_u32/manifest.bin"));
    let tmp = store.join("swap.bin");
    std::fs::rename(&a, &tmp).unwrap();
    std::fs::rename(&b, &a).unwrap();
    std::fs::rename(&tmp, &b).unwrap();
    let run = verify(&config, &store);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    for array in ["v_i32", "v_u32"] {
        let line = line_of(&run.stdout, array);
        assert!(line.starts_with("FAIL") && line.contains("differ"), "{line}");
    }
    assert!(line_of(&run.stdout, "v_i16").starts_with("ok"), "{}", run.stdout);
    assert_eq!(run.stdout.lines().filter(|l| l.starts_with("FAIL")).count(), 2, "{}", run.stdout);
}

/// Debian's libhdf4 has no szip decoder: `verify` cannot prove an szip store with it and says why
/// (the values are proven against a libhdf4 built with szip in `szip.rs`).
#[test]
fn vzarr_verify_says_when_the_linked_libhdf4_cannot_decode_szip() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config");
    let store = dir.path().join("szip.vzarr");
    scan(&config, &fixture("szip/szip.hdf"), &store);
    let run = verify(&config, &store);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    let line = line_of(&run.stdout, "i16_nn");
    assert!(line.starts_with("FAIL") && line.contains("reading the source with libhdf4"), "{line}");
    assert!(line.contains("szip-compressed and this libhdf4 has no szip decoder"), "{line}");
}

/// Combined stores of files whose data lie in external files: `verify` proves every value with
/// libhdf4 reading each HDF4 file (and, through it, the file's external file).
#[test]
fn vzarr_verify_proves_combined_stores_of_files_with_external_data() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config");
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/hdf4");
    for (pattern, concat, arrays) in [
        ("external_granules/EXTLIKE.A*.hdf", r"day=path:A(\d{7})", &["day", "Surface_Temperature", "YDim"][..]),
        ("external_series/part*.hdf", "time", &["time", "level"][..]),
    ] {
        let store = dir.path().join("combined.vzarr");
        let _ = std::fs::remove_dir_all(&store);
        let sources = fixtures.join(pattern);
        let args = [
            "scan".as_ref(),
            sources.as_os_str(),
            "--concat".as_ref(),
            concat.as_ref(),
            "-o".as_ref(),
            store.as_os_str(),
        ];
        let run = vzarr(&config, &args);
        assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
        let run = verify(&config, &store);
        assert_eq!(run.code, 0, "{pattern}: {}{}", run.stdout, run.stderr);
        for array in arrays {
            assert!(line_of(&run.stdout, array).starts_with("ok"), "{}", run.stdout);
        }
    }
}
