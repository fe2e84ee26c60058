//! DMR++ sidecars out (issue 39): `vzarr scan FILES --format dmrpp -o DIR` writes one sidecar per
//! file whose chunk lists (position, offset, length), filters and fill values equal the sidecars
//! OPeNDAP BES's get_dmrpp wrote for the same files (`fixtures/dmrpp_out`, BES's test pairs), and
//! VirtualiZarr's `DMRPPParser` reads values equal to h5py's through vzarr's sidecars.

mod sidecar;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::common::{cli_expect, dir_entries};
use crate::interop::{python, s};
use sidecar::{Sidecar, Storage};

/// The BES pairs: every data file of `fixtures/dmrpp_out` that has a sidecar beside it.
fn pairs() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/dmrpp_out");
    let mut files: Vec<PathBuf> = dir_entries(&dir)
        .into_iter()
        .filter(|n| !n.ends_with(".dmrpp") && !n.ends_with(".txt"))
        .map(|n| dir.join(n))
        .collect();
    files.retain(|f| Path::new(&format!("{}.dmrpp", f.display())).is_file());
    files.sort();
    files
}

/// Whether two fill value texts are the same number (BES prints floats with 6 significant digits).
fn same_fill(ours: &str, bes: &str) -> bool {
    match (ours.parse::<f64>(), bes.parse::<f64>()) {
        (Ok(a), Ok(b)) if a.is_nan() || b.is_nan() => a.is_nan() && b.is_nan(),
        (Ok(a), Ok(b)) => a == b || (a - b).abs() <= 1e-6 * a.abs().max(b.abs()),
        _ => ours == bes,
    }
}

/// Compares one variable's storage; returns the differences.
fn compare(file: &str, var: &str, ours: &sidecar::Variable, bes: &sidecar::Variable) -> Vec<String> {
    let mut diffs = Vec::new();
    let mut differ = |what: &str, a: String, b: String| {
        if a != b {
            diffs.push(format!("{file}: {var}: {what}: vzarr {a} vs BES {b}"));
        }
    };
    differ("type", ours.dap_type.clone(), bes.dap_type.clone());
    differ("shape", format!("{:?}", ours.shape), format!("{:?}", bes.shape));
    differ("filters", format!("{:?}", ours.filters), format!("{:?}", bes.filters));
    if let (Some(a), Some(b)) = (&ours.fill_value, &bes.fill_value) {
        if !same_fill(a, b) {
            differ("fill value", a.clone(), b.clone());
        }
    }
    if bes.fill_value.is_some() && ours.fill_value.is_none() {
        differ("fill value given", "none".into(), format!("{:?}", bes.fill_value));
    }
    match (&ours.storage, &bes.storage) {
        (Storage::Chunked { shape: a, chunks: ca }, Storage::Chunked { shape: b, chunks: cb }) => {
            differ("chunk shape", format!("{a:?}"), format!("{b:?}"));
            differ("chunks", format!("{ca:?}"), format!("{cb:?}"));
        }
        (a, b) => differ("storage", format!("{a:?}"), format!("{b:?}")),
    }
    diffs
}

/// Every BES pair: each variable BES describes with an atomic numeric type has vzarr's equal
/// chunk list, filters and fill value; variables vzarr leaves out are those the scan warns about.
#[test]
fn sidecars_equal_bes_on_its_test_pairs() {
    let files = pairs();
    assert!(files.len() >= 15, "{files:?}");
    let out = tempfile::tempdir().unwrap();
    let mut args = vec!["scan".to_string(), "--format".into(), "dmrpp".into(), "-o".into(), s(out.path())];
    args.extend(files.iter().map(s));
    let run = crate::common::cli(&args);
    assert!(run.code == 0 || run.code == 3, "exit {}:\n{}", run.code, run.stderr);
    let mut diffs = Vec::new();
    let mut compared = 0;
    for file in &files {
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        let ours = Sidecar::parse(&std::fs::read_to_string(out.path().join(format!("{name}.dmrpp"))).unwrap());
        let bes = Sidecar::parse(&std::fs::read_to_string(format!("{}.dmrpp", file.display())).unwrap());
        for (var, theirs) in &bes.variables {
            match ours.variables.get(var) {
                Some(mine) => {
                    diffs.extend(compare(&name, var, mine, theirs));
                    compared += 1;
                }
                None if sidecar::ATOMIC.contains(&theirs.dap_type.as_str()) => {
                    let warned = run.stderr.lines().any(|l| l.contains(&name) && l.contains(var.as_str()));
                    assert!(warned, "{name}: {var} missing from vzarr's sidecar without a warning:\n{}", run.stderr);
                }
                None => {}
            }
        }
        assert_eq!(ours.href, format!("file://{}", file.display()), "{name}: dmrpp:href");
    }
    assert!(diffs.is_empty(), "{} differences:\n{}", diffs.len(), diffs.join("\n"));
    assert!(compared >= 25, "only {compared} variables compared");
}

/// Sidecars of two files in one run: one per file, named after it; the output replaces only sidecars.
#[test]
fn one_sidecar_per_file_and_only_sidecars_are_replaced() {
    let files: Vec<PathBuf> = pairs().into_iter().take(2).collect();
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("sidecars");
    let mut args = vec!["scan".to_string(), "--format".into(), "dmrpp".into(), "-o".into(), s(&dir)];
    args.extend(files.iter().map(s));
    cli_expect(&args, 0);
    let names: Vec<String> =
        files.iter().map(|f| format!("{}.dmrpp", f.file_name().unwrap().to_string_lossy())).collect();
    assert_eq!(dir_entries(&dir), names);
    let again = cli_expect(&args, 1);
    assert!(again.stderr.contains("already exists"), "{}", again.stderr);
    args.push("--overwrite".into());
    cli_expect(&args, 0);
    std::fs::write(dir.join(&names[0]), b"my notes").unwrap();
    let refused = cli_expect(&args, 1);
    assert!(refused.stderr.contains("is not a DMR++ sidecar"), "{}", refused.stderr);
    assert_eq!(std::fs::read(dir.join(&names[0])).unwrap(), b"my notes");
}

/// VirtualiZarr's `DMRPPParser` opens vzarr's sidecars (written beside the files, where it looks for
/// the data) and reads every variable equal to h5py's.
#[test]
fn virtualizarr_reads_vzarr_sidecars_equal_to_h5py() {
    let Some(python) = python() else {
        eprintln!("notice: no Python >= 3.12 with VirtualiZarr (run tests/python/setup.sh); skipping");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // VirtualiZarr maps shuffle and deflate only (not fletcher32): the pairs without it.
    // The FValue files have fill values: vzarr wrote `_FillValue` as a String of base64 before issue
    // 51, which DMRPPParser refused ("Failed to encode fill_value").
    let names = [
        "chunked_shufzip_oneD.h5",
        "chunked_twoD.h5",
        "nc4_group_atomic_default.h5",
        "FValue_int8.h5",
        "FValue.h5",
        "FValue_uint64.h5",
    ];
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/dmrpp_out");
    let mut files = Vec::new();
    for name in names {
        std::fs::copy(source.join(name), dir.path().join(name)).unwrap();
        files.push(dir.path().join(name));
    }
    // A netCDF-4 file with a float32 `_FillValue` attribute (the CMIP-like sample).
    let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/sample/tas_2023-01.nc");
    std::fs::copy(&sample, dir.path().join("tas_2023-01.nc")).unwrap();
    files.push(dir.path().join("tas_2023-01.nc"));
    let mut args = vec!["scan".to_string(), "--format".into(), "dmrpp".into(), "-o".into(), s(dir.path())];
    args.extend(files.iter().map(s));
    cli_expect(&args, 0);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/check_dmrpp.py");
    let mut command = std::process::Command::new(&python);
    command.arg(script).args(&files).stdout(std::process::Stdio::piped());
    let run = crate::common::run(command);
    assert_eq!(run.code, 0, "check_dmrpp.py failed:\n{}\n{}", run.stdout, run.stderr);
    let checked: BTreeMap<&str, usize> = names
        .iter()
        .map(|n| (*n, run.stdout.lines().filter(|l| l.starts_with("ok") && l.contains(n)).count()))
        .collect();
    assert!(checked.values().all(|&n| n > 0), "{checked:?}\n{}", run.stdout);
    assert!(run.stdout.lines().any(|l| l.starts_with("ok") && l.contains("tas_2023-01.nc /tas")), "{}", run.stdout);
}

/// A dataset the file stores chunked keeps its chunk shape when no chunk is written (an unlimited
/// dimension of length 0, as BES's `nc4_unlimited_0.h5` has it), as BES writes it; read back, the
/// sidecar gives the file's scan's grid.
#[test]
fn a_chunked_dataset_never_written_keeps_its_chunk_shape() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("empty.h5");
    let chunk = crate::common::with_hdf5_files(|| {
        let f = hdf5::File::create(&data).unwrap();
        let d = f.new_dataset::<f64>().shape((0.., 4)).chunk((1, 4)).create("p").unwrap();
        d.chunk().expect("chunked")
    });
    // Beside the file, where a sidecar's scan finds its data.
    let beside = format!("{}/", s(dir.path()));
    cli_expect(&["scan".into(), s(&data), "--format".into(), "dmrpp".into(), "-o".into(), beside], 0);
    let sidecar = dir.path().join("empty.h5.dmrpp");
    let text = std::fs::read_to_string(&sidecar).unwrap();
    let sizes: Vec<String> = chunk.iter().map(usize::to_string).collect();
    let expected = format!("<dmrpp:chunkDimensionSizes>{}</dmrpp:chunkDimensionSizes>", sizes.join(" "));
    assert!(text.contains(&expected), "{text}");
    assert!(!text.contains("<dmrpp:chunk "), "{text}");
    let scan = |p: &Path| crate::common::scan(p, &vzarr::ScanOptions::default()).unwrap();
    let (ours, file) = (scan(&sidecar), scan(&data));
    assert_eq!(ours.array("p").unwrap().metadata.chunk_grid, file.array("p").unwrap().metadata.chunk_grid);
}
