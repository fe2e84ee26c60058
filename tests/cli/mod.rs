//! The real `vzarr` binary: scan + verify on every fixture, `read` to `.npy` (parsed here and compared
//! with libnetcdf), `info` and `info --json`, and a closed stdout.

use std::path::Path;

use netcdf::Extent;

use crate::common::*;

fn scan_cli(source: &Path, store: &Path) -> Run {
    cli_expect(&[Path::new("scan").as_os_str(), source.as_os_str(), "-o".as_ref(), store.as_os_str()], 0)
}

#[test]
fn scan_then_verify_passes_on_every_fixture() {
    for (name, f) in supported_fixtures() {
        let store = f.join("cli.vzarr");
        let scan = scan_cli(&f.path, &store);
        assert!(scan.stdout.contains("arrays"), "{name}: {}", scan.stdout);
        let verify = cli_expect(&["verify".as_ref(), store.as_os_str()], 0);
        let variables = oracle_variables(&f.path);
        for var in &variables {
            assert!(
                verify.stdout.lines().any(|l| l.starts_with("ok") && l.contains(&format!(" {}:", var.path))),
                "{name}: {} not verified:\n{}",
                var.path,
                verify.stdout
            );
        }
        assert!(verify.stdout.contains(&format!("{} arrays", variables.len())), "{name}: {}", verify.stdout);
        assert!(verify.stdout.contains(": 0 failed"), "{name}: {}", verify.stdout);
        assert!(!verify.stdout.contains("FAIL"), "{name}: {}", verify.stdout);
    }
}

/// `vzarr read` of `var` with `select` into a `.npy`, parsed and compared with libnetcdf's `extents`.
fn check_npy(f: &Fixture, store: &Path, var: &str, select: &str, extents: Option<Vec<Extent>>, shape: &[u64]) {
    let out = f.join(&format!("{}.npy", var.replace('/', "_")));
    let select_arg = format!("--select={select}");
    // Reading the same variable again replaces the .npy file of the previous read.
    let mut args: Vec<&std::ffi::OsStr> =
        vec!["read".as_ref(), store.as_os_str(), var.as_ref(), "-o".as_ref(), out.as_os_str(), "--overwrite".as_ref()];
    if !select.is_empty() {
        args.push(select_arg.as_ref());
    }
    cli_expect(&args, 0);
    let npy = parse_npy(&std::fs::read(&out).unwrap());
    let info = oracle_variables(&f.path).into_iter().find(|v| v.path == var).unwrap();
    let data_type = info.data_type.unwrap();
    assert_eq!(npy.descr, numpy_descr(data_type), "{var}: dtype");
    assert!(!npy.fortran_order);
    assert_eq!(npy.shape, shape, "{var}[{select}]: shape");
    let theirs = oracle_read(&f.path, var, extents);
    let size = numpy_descr(data_type)[2..].parse().unwrap();
    assert_same_elements(&format!("{var}[{select}] .npy"), &npy.data, &theirs, size);
}

#[test]
fn read_writes_npy_files_with_the_right_shape_dtype_and_values() {
    let f = Fixture::new(fixtures::write_kitchen_sink);
    let store = f.join("ks.vzarr");
    scan_cli(&f.path, &store);
    for var in oracle_variables(&f.path) {
        let shape: Vec<u64> = var.dims.iter().map(|(_, n)| *n).collect();
        check_npy(&f, &store, &var.path, "", None, &shape);
    }
}

#[test]
fn read_with_a_selection_drops_indexed_dimensions() {
    let f = Fixture::new(|d| fixtures::write_monthly(d, &fixtures::Monthly::new(2023, 2)));
    let store = f.join("m.vzarr");
    scan_cli(&f.path, &store);
    check_npy(&f, &store, "tas", "10:15,:,5", Some(vec![range(10, 15, 1), all(18), Extent::Index(5)]), &[5, 18]);
    check_npy(
        &f,
        &store,
        "tas",
        "-1,::4,7:30:3",
        Some(vec![Extent::Index(27), range(0, 18, 4), range(7, 30, 3)]),
        &[5, 8],
    );
    check_npy(&f, &store, "crs", "", None, &[]);
}

#[test]
fn info_lists_every_variable_and_json_matches_the_file() {
    let f = Fixture::new(fixtures::write_kitchen_sink);
    let store = f.join("ks.vzarr");
    scan_cli(&f.path, &store);
    let variables = oracle_variables(&f.path);

    let text = cli_expect(&["info".as_ref(), store.as_os_str()], 0);
    for var in &variables {
        assert!(
            text.stdout.lines().any(|l| l.split_whitespace().next() == Some(var.path.as_str())),
            "info lists {}:\n{}",
            var.path,
            text.stdout
        );
    }

    let json = cli_expect(&["info".as_ref(), store.as_os_str(), "--json".as_ref()], 0);
    let doc: serde_json::Value = serde_json::from_str(&json.stdout).expect("info --json prints JSON");
    let arrays = doc["arrays"].as_array().expect("arrays");
    let mut listed: Vec<&str> = arrays.iter().map(|a| a["path"].as_str().unwrap()).collect();
    let mut expected: Vec<&str> = variables.iter().map(|v| v.path.as_str()).collect();
    listed.sort_unstable();
    expected.sort_unstable();
    assert_eq!(listed, expected);
    for var in &variables {
        let a = arrays.iter().find(|a| a["path"] == var.path.as_str()).unwrap();
        let shape: Vec<u64> = var.dims.iter().map(|(_, n)| *n).collect();
        assert_eq!(a["shape"], serde_json::json!(shape), "{}", var.path);
        assert_eq!(a["data_type"], var.data_type.unwrap(), "{}", var.path);
        let names: Vec<&str> =
            a["dimensions"].as_array().unwrap().iter().map(|d| d["name"].as_str().unwrap()).collect();
        let expected_names: Vec<&str> = var.dims.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, expected_names, "{}", var.path);
    }
    assert_eq!(doc["warnings"], serde_json::json!([]));
    let sources = doc["source_files"].as_array().unwrap();
    assert_eq!(sources.len(), 1);
    assert_eq!(Path::new(sources[0].as_str().unwrap()), std::path::absolute(&f.path).unwrap());
}

/// The documented form (docs/reference/cli.md), `--select SPEC` as two arguments, with a SPEC that starts with a negative index
/// (`--help` gives `-1` as an example).
#[test]
fn select_may_start_with_a_negative_index() {
    let f = Fixture::new(|d| fixtures::write_monthly(d, &fixtures::Monthly::new(2023, 2)));
    let store = f.join("m.vzarr");
    scan_cli(&f.path, &store);
    let out = f.join("last.npy");
    let args: [&std::ffi::OsStr; 7] = [
        "read".as_ref(),
        store.as_os_str(),
        "tas".as_ref(),
        "--select".as_ref(),
        "-1,:,3".as_ref(),
        "-o".as_ref(),
        out.as_os_str(),
    ];
    cli_expect(&args, 0);
    let npy = parse_npy(&std::fs::read(&out).unwrap());
    assert_eq!(npy.shape, [18]);
    let theirs = oracle_read(&f.path, "tas", Some(vec![Extent::Index(27), all(18), Extent::Index(3)]));
    assert_same_elements("tas[-1,:,3] .npy", &npy.data, &theirs, 4);
}

/// Runs `vzarr args` with stdout connected to a pipe whose reading end is already closed.
fn run_with_closed_stdout(args: &[&std::ffi::OsStr]) -> Run {
    use std::os::fd::FromRawFd;
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2() writes. O_CLOEXEC: no other child
    // process may inherit the reading end and keep the pipe open.
    assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
    // SAFETY: both descriptors were just opened by pipe() and are owned here.
    let (reader, writer) = unsafe { (std::fs::File::from_raw_fd(fds[0]), std::os::fd::OwnedFd::from_raw_fd(fds[1])) };
    drop(reader);
    let mut command = crate::common::vzarr_command();
    command.args(args).env_remove("RUST_BACKTRACE").stdout(std::process::Stdio::from(writer));
    run(command)
}

/// `vzarr info store | head -1` and the like: a reader that goes away must not crash vzarr
/// (STYLE.md practice 15: a broken pipe exits cleanly).
#[test]
fn a_closed_stdout_is_not_a_crash() {
    let f = Fixture::new(fixtures::write_kitchen_sink);
    let store = f.join("ks.vzarr");
    scan_cli(&f.path, &store);
    let runs: [Vec<&std::ffi::OsStr>; 3] = [
        vec!["info".as_ref(), store.as_os_str()],
        vec!["verify".as_ref(), store.as_os_str()],
        vec!["info".as_ref(), store.as_os_str(), "--json".as_ref()],
    ];
    let mut crashed = Vec::new();
    for args in runs {
        let run = run_with_closed_stdout(&args);
        if run.stderr.contains("panicked") || run.code == 101 {
            crashed.push(format!("vzarr {args:?}: exit {}: {}", run.code, run.stderr.lines().nth(1).unwrap_or("")));
        }
    }
    assert!(crashed.is_empty(), "crashed on a closed stdout:\n{}", crashed.join("\n"));
}

#[test]
fn numeric_options_out_of_range_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let file = crate::common::classic::write_single_short(dir.path(), 3);
    let store = dir.path().join("s.vzarr");
    for value in ["18446744073709551615", "17592186044416", "0", "-1"] {
        let flag = format!("--max-slab-mib={value}");
        let run = cli(&["scan".as_ref(), file.as_os_str(), "-o".as_ref(), store.as_os_str(), flag.as_ref()]);
        assert_eq!(run.code, 2, "{value}: {}", run.stderr);
        assert!(run.stderr.contains("max-slab-mib"), "{}", run.stderr);
        assert!(!store.exists());
    }
    cli_expect(&["scan".as_ref(), file.as_os_str(), "-o".as_ref(), store.as_os_str()], 0);
    for value in ["0", "100000"] {
        let run = cli(&[
            "materialize".as_ref(),
            store.as_os_str(),
            dir.path().join("z").as_os_str(),
            "--jobs".as_ref(),
            value.as_ref(),
        ]);
        assert_eq!(run.code, 2, "--jobs {value}: {}", run.stderr);
    }
}

#[test]
fn a_file_named_like_a_glob_pattern_is_that_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = crate::common::classic::write_single_short(dir.path(), 3);
    let odd = dir.path().join("a[1]*?.nc");
    std::fs::rename(&file, &odd).unwrap();
    // A decoy the pattern would match.
    std::fs::write(dir.path().join("a1xy.nc"), b"not netcdf").unwrap();
    let store = dir.path().join("s.vzarr");
    cli_expect(&["scan".as_ref(), odd.as_os_str(), "-o".as_ref(), store.as_os_str()], 0);
    assert_store_matches_oracle(&odd, &store);
}

/// Linux file names are bytes: a file (in a directory) whose name is not UTF-8 scans, by its name and
/// through a glob, reads back equal to libnetcdf's reads, verifies, and materializes. kerchunk JSON,
/// which cannot name it for fsspec, refuses it in one line.
#[test]
fn file_names_that_are_not_utf8_scan_read_and_verify() {
    use std::os::unix::ffi::OsStrExt;
    let dir = tempfile::tempdir().unwrap();
    let sub = dir.path().join(std::ffi::OsStr::from_bytes(b"d\xff 100%"));
    std::fs::create_dir(&sub).unwrap();
    let file = crate::common::classic::write_single_short(&sub, 3);
    let odd = sub.join(std::ffi::OsStr::from_bytes(b"caf\xe9.nc"));
    std::fs::rename(&file, &odd).unwrap();
    let store = dir.path().join("s.vzarr");
    cli_expect(&["scan".as_ref(), odd.as_os_str(), "-o".as_ref(), store.as_os_str()], 0);
    assert_store_matches_oracle(&odd, &store);
    // HDF5 (NetCDF-4) goes through the native reader: the same.
    let sample = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/sample/tas_2023-01.nc");
    let hdf5 = sub.join(std::ffi::OsStr::from_bytes(b"t\xe2s.h5"));
    std::fs::copy(sample, &hdf5).unwrap();
    let hdf5_store = dir.path().join("h.vzarr");
    cli_expect(&["scan".as_ref(), hdf5.as_os_str(), "-o".as_ref(), hdf5_store.as_os_str()], 0);
    assert_store_matches_oracle(&hdf5, &hdf5_store);
    cli_expect(&["verify".as_ref(), hdf5_store.as_os_str()], 0);
    cli_expect(&["verify".as_ref(), store.as_os_str()], 0);
    let materialized = dir.path().join("m.zarr");
    cli_expect(&["materialize".as_ref(), store.as_os_str(), materialized.as_os_str()], 0);
    let names: Vec<String> = crate::common::oracle_variables(&odd).into_iter().map(|v| v.path).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    assert!(!names.is_empty());
    crate::interop::assert_zarrs_reads_exactly(&materialized, std::slice::from_ref(&odd), &names);
    let json = dir.path().join("k.json");
    let run = cli(&["export".as_ref(), store.as_os_str(), "--kerchunk".as_ref(), json.as_os_str()]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(run.stderr_lines().len(), 1, "{}", run.stderr);
    assert!(run.stderr.contains("caf%E9.nc") && run.stderr.contains("not UTF-8"), "{}", run.stderr);
    assert!(!json.exists());
    // A glob (UTF-8 pattern) whose match is not UTF-8 gives the same store.
    let pattern = dir.path().join("d*/*.nc");
    let globbed = dir.path().join("g.vzarr");
    cli_expect(&["scan".as_ref(), pattern.as_os_str(), "-o".as_ref(), globbed.as_os_str()], 0);
    assert_store_matches_oracle(&odd, &globbed);
}

/// `--files-from FILE` and `--files-from -` (standard input) give the same store as the files on the
/// command line, and every value equals libnetcdf's reads of the files.
#[test]
fn files_from_a_list_or_standard_input() {
    use std::io::Write;
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/sample");
    let files: Vec<std::path::PathBuf> =
        ["tas_2023-03.nc", "tas_2023-01.nc", "tas_2023-02.nc"].iter().map(|m| root.join(m)).collect();
    let dir = tempfile::tempdir().unwrap();
    let list = dir.path().join("inputs.txt");
    let lines: String = files.iter().map(|f| format!("{}\n\n", f.display())).collect();
    std::fs::write(&list, &lines).unwrap();
    let from_file = dir.path().join("a.vzarr");
    let text = |p: &std::path::Path| p.display().to_string();
    crate::common::cli_expect(&["scan", "--files-from", &text(&list), "--concat", "time", "-o", &text(&from_file)], 0);
    let from_stdin = dir.path().join("b.vzarr");
    let mut child = {
        let _no_files = crate::common::no_hdf5_files_open();
        crate::common::vzarr_command()
            .args(["scan", "--files-from", "-", "--concat", "time", "-o", &text(&from_stdin)])
            .stdin(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    child.stdin.take().unwrap().write_all(lines.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mut ordered = files.clone();
    ordered.sort();
    let theirs: Vec<u8> = ordered.iter().flat_map(|p| crate::common::oracle_read(p, "tas", None)).collect();
    for store in [&from_file, &from_stdin] {
        let ours = crate::common::read(&crate::common::open_store(store), "tas", "");
        assert!(ours.bytes == theirs, "{}: tas equals libnetcdf's reads, in time order", store.display());
    }
}

/// Issue 28, item 8: a store (and an Icechunk repository) whose own name is not UTF-8 is written,
/// appended to, read, inspected and verified like any other, and messages name it; a read of it
/// equals libnetcdf's reads of the sources.
#[test]
fn stores_whose_names_are_not_utf8_read_inspect_and_verify() {
    use std::os::unix::ffi::OsStrExt;
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/sample");
    let files: Vec<std::path::PathBuf> = ["tas_2023-01.nc", "tas_2023-02.nc"].iter().map(|m| root.join(m)).collect();
    let dir = tempfile::tempdir().unwrap();
    let theirs: Vec<u8> = files.iter().flat_map(|p| crate::common::oracle_read(p, "tas", None)).collect();
    for (name, extra) in [(&b"st\xf6re.vzarr"[..], &[][..]), (&b"r\xe9po.icechunk"[..], &["--format", "icechunk"][..])]
    {
        let store = dir.path().join(std::ffi::OsStr::from_bytes(name));
        let mut args: Vec<&std::ffi::OsStr> = vec!["scan".as_ref(), files[0].as_os_str()];
        args.extend(["--concat", "time", "-o"].map(std::ffi::OsStr::new));
        args.push(store.as_os_str());
        args.extend(extra.iter().map(std::ffi::OsStr::new));
        cli_expect(&args, 0);
        cli_expect(&["append".as_ref(), store.as_os_str(), files[1].as_os_str()], 0);
        let info = cli_expect(&["info".as_ref(), store.as_os_str()], 0);
        assert!(info.stdout.contains("tas"), "{}", info.stdout);
        cli_expect(&["verify".as_ref(), store.as_os_str()], 0);
        let npy = dir.path().join("tas.npy");
        let out = &["read".as_ref(), store.as_os_str(), "tas".as_ref(), "-o".as_ref(), npy.as_os_str()];
        cli_expect(&[&out[..], &["--overwrite".as_ref()]].concat(), 0);
        let ours = crate::common::parse_npy(&std::fs::read(&npy).unwrap());
        assert!(ours.data == theirs, "{}: tas equals libnetcdf's reads", store.display());
        // An error names the store as given (lossy), not the descriptor it was opened through.
        let run = cli(&["read".as_ref(), store.as_os_str(), "nosuch".as_ref(), "-o".as_ref(), npy.as_os_str()]);
        assert_eq!(run.code, 1, "{}", run.stderr);
        assert!(run.stderr.contains(&store.to_string_lossy().into_owned()), "{}", run.stderr);
        assert!(!run.stderr.contains("/proc/self/fd"), "{}", run.stderr);
    }
}

/// Issue 28, item 8: output names up to the file system's 255-byte limit are written, replaced and
/// read (the hidden staging sibling's name is shortened to fit).
#[test]
fn output_names_up_to_255_bytes_are_written_and_replaced() {
    let sample = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/sample/tas_2023-01.nc");
    let dir = tempfile::tempdir().unwrap();
    for len in [226, 240, 255] {
        let name = format!("{}.vzarr", "s".repeat(len - 6));
        assert_eq!(name.len(), len);
        let store = dir.path().join(&name);
        let text = store.display().to_string();
        cli_expect(&["scan", &sample.display().to_string(), "-o", &text], 0);
        cli_expect(&["scan", &sample.display().to_string(), "-o", &text, "--overwrite"], 0);
        let ours = crate::common::read(&crate::common::open_store(&store), "tas", "");
        assert!(ours.bytes == crate::common::oracle_read(&sample, "tas", None), "{len}-byte name: tas");
        let left: Vec<String> =
            crate::common::dir_entries(dir.path()).into_iter().filter(|n| n.starts_with('.')).collect();
        assert!(left.is_empty(), "{len}-byte name: staging left behind: {left:?}");
    }
}

/// Issue 28, item 8: an Icechunk scan of a file whose path is not UTF-8 is refused in one line that
/// names the file and the reason (Icechunk's references cannot name it), and writes nothing.
#[test]
fn icechunk_scans_of_paths_that_are_not_utf8_name_the_problem() {
    use std::os::unix::ffi::OsStrExt;
    let sample = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/sample/tas_2023-01.nc");
    let dir = tempfile::tempdir().unwrap();
    let odd = dir.path().join(std::ffi::OsStr::from_bytes(b"t\xe4s.nc"));
    std::fs::copy(&sample, &odd).unwrap();
    let repo = dir.path().join("repo.icechunk");
    let run = cli(&[
        "scan".as_ref(),
        odd.as_os_str(),
        "--format".as_ref(),
        "icechunk".as_ref(),
        "-o".as_ref(),
        repo.as_os_str(),
    ]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let lines = run.stderr_lines();
    assert_eq!(lines.len(), 1, "{}", run.stderr);
    assert!(lines[0].contains("t%E4s.nc") && lines[0].contains("not valid UTF-8"), "{}", lines[0]);
    assert!(!repo.exists(), "nothing written");
}

#[test]
fn chunk_specs_name_each_dimension_once_and_sizes_take_decimals() {
    // Issue 52: `--chunks time=10,time=20` was taken without a word, `--max-memory 1.5G` refused.
    let f = Fixture::new(|d| fixtures::write_monthly(d, &fixtures::Monthly::new(2023, 3)));
    let store = scan_fixture(&f);
    let out = f.dir.path().join("copy.zarr");
    let materialize = |extra: &[&str]| {
        let mut args = vec!["materialize".to_string(), store.display().to_string(), out.display().to_string()];
        args.extend(extra.iter().map(|a| a.to_string()));
        cli(&args)
    };
    let run = materialize(&["--chunks", "time=10,time=20"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("dimension \"time\" given twice"), "{}", run.stderr);
    assert!(!out.exists());
    let run = materialize(&["--chunks", "time=2", "--max-memory", "1.5G"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let copied = crate::common::array_json(&out, "tas");
    assert_eq!(copied["chunk_grid"]["configuration"]["chunk_shape"][0], 2);
}
