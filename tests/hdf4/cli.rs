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

/// Debian's libhdf4 has no szip decoder: `verify` proves an szip store with libaec's decode of the
/// elements libhdf4 locates, and says so on every szip data set's line.
#[test]
fn vzarr_verify_proves_szip_data_sets_with_libaec() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config");
    let store = dir.path().join("szip.vzarr");
    scan(&config, &fixture("szip/szip.hdf"), &store);
    let run = verify(&config, &store);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    for array in
        ["i16_nn", "u8_ec", "i32_nn_chunked", "f32_ec_chunked", "f64_nn", "u16_msb_raw", "u8_noise", "i16_3d_chunked"]
    {
        let line = line_of(&run.stdout, array);
        assert!(line.starts_with("ok") && line.ends_with("elements equal (szip decoded by libaec)"), "{line}");
    }
    assert!(run.stdout.contains("8 arrays, 5978 elements compared with the source files: 0 failed"), "{}", run.stdout);
}

/// A source whose szip values changed after the scan (one value of `u8_noise`, whose element holds its
/// values as they are, at the offset libhdf4's `SDgetdatainfo` gives): the oracle's read differs.
#[test]
fn vzarr_verify_catches_szip_values_that_differ_from_the_files() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config");
    let source = dir.path().join("szip.hdf");
    std::fs::copy(fixture("szip/szip.hdf"), &source).unwrap();
    let store = dir.path().join("szip.vzarr");
    scan(&config, &source, &store);
    let mut bytes = std::fs::read(&source).unwrap();
    // u8_noise's element at 23817: a stored-as-is preamble (flag 1, 256 bytes), then the values.
    assert_eq!(bytes[23817..23822], [1, 0, 0, 1, 0]);
    bytes[23822 + 17] ^= 0x40;
    std::fs::write(&source, bytes).unwrap();
    let run = verify(&config, &store);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    let line = line_of(&run.stdout, "u8_noise");
    assert!(line.starts_with("FAIL") && line.contains("1 of 256 elements differ; first at index [1, 1]"), "{line}");
    assert!(line_of(&run.stdout, "i16_nn").starts_with("ok"), "{}", run.stdout);
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

/// One `vzarr verify` opens an HDF4 file once (libhdf4's `SDstart`, slow on some corrupt files), not
/// once per array: `types.hdf` has many data sets and is opened once.
#[test]
fn verify_opens_an_hdf4_file_once() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config");
    let store = dir.path().join("types.vzarr");
    scan(&config, &fixture("types.hdf"), &store);
    let output = Command::new(env!("CARGO_BIN_EXE_vzarr"))
        .env("XDG_CONFIG_HOME", &config)
        .env("VZARR_TEST_COUNTERS", "1")
        .args(["verify".as_ref(), store.as_os_str()])
        .output()
        .unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert_eq!(output.status.code(), Some(0), "{stdout}{stderr}");
    assert!(stdout.lines().filter(|l| l.starts_with("ok")).count() > 5, "{stdout}");
    assert!(stderr.contains("oracle_opens=1 "), "{stderr}");
}
