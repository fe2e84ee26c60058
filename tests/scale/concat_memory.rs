//! Scan memory of the everyday archive (issue 42): files concatenated along an existing dimension
//! (`--concat time`) must cost no more per reference than files stacked along a new one. 100 NetCDF-4
//! files of `v(time=10000, x=4)` in chunks of `(1, 4)` with a contiguous `time` coordinate (10^6
//! references) are scanned in a child process whose address space is limited (`RLIMIT_AS`, set
//! between `fork` and `exec`) to what a scan of 10 of the files took plus
//! [`BUDGET_BYTES_PER_REFERENCE`] per further reference: a scan that holds more does not finish.
//! The child's allocator is given one arena (`MALLOC_ARENA_MAX=1`), so that its address space is
//! its heap and not the 64 MiB reservations glibc makes per thread as contention decides, and two
//! scanning threads (`RAYON_NUM_THREADS=2`), so that both scans hold as many files open at once on
//! any machine. The store written is then read back and compared with libnetcdf reading the files.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use crate::common::{oracle_read, range, run, vzarr_command, with_hdf5_files};

/// The budget: bytes of address space per reference above the 10^5-reference scan's (the target
/// is 16 bytes of resident memory; address space also counts what the allocator has not returned).
const BUDGET_BYTES_PER_REFERENCE: u64 = 24;
/// Time steps (and chunks, references) per file.
const STEPS: usize = 10_000;
/// Elements along `x`: one chunk spans them.
const X: usize = 4;

/// `count` files `f00000.nc`, ...: `time` (hours, `f * STEPS + j`) and `v(time, x)` = `time + x / 4`.
fn write_files(dir: &Path, count: usize) -> Vec<PathBuf> {
    let paths: Vec<PathBuf> = (0..count).map(|f| dir.join(format!("f{f:05}.nc"))).collect();
    with_hdf5_files(|| {
        for (f, path) in paths.iter().enumerate() {
            let mut file = netcdf::create(path).unwrap();
            file.add_dimension("time", STEPS).unwrap();
            file.add_dimension("x", X).unwrap();
            let times: Vec<f64> = (0..STEPS).map(|j| (f * STEPS + j) as f64).collect();
            let mut time = file.add_variable::<f64>("time", &["time"]).unwrap();
            time.put_attribute("units", "hours since 2000-01-01").unwrap();
            time.put_values(&times, ..).unwrap();
            let mut v = file.add_variable::<f32>("v", &["time", "x"]).unwrap();
            v.set_chunking(&[1, X]).unwrap();
            let values: Vec<f32> = times.iter().flat_map(|&t| (0..X).map(move |x| t as f32 + x as f32 / 4.0)).collect();
            v.put_values(&values, ..).unwrap();
            file.close().unwrap();
        }
    });
    paths
}

/// Scans `files` along `time` into `store` (address space limited to `limit_bytes` when given);
/// returns the exit code, stderr and the `(peak_kib, vm_peak_kib)` the binary reports.
fn scan(files: &[PathBuf], dir: &Path, name: &str, limit_bytes: Option<u64>) -> (i32, String, (u64, u64)) {
    let list = dir.join(format!("{name}.txt"));
    let lines: Vec<String> = files.iter().map(|p| p.display().to_string()).collect();
    std::fs::write(&list, lines.join("\n")).unwrap();
    let mut command = vzarr_command();
    command.arg("scan").arg("--files-from").arg(&list).args(["--concat", "time", "-o"]).arg(dir.join(name));
    command.env("VZARR_TEST_COUNTERS", "1").env("MALLOC_ARENA_MAX", "1").env("RAYON_NUM_THREADS", "2");
    command.stdout(Stdio::null());
    if let Some(limit) = limit_bytes {
        // SAFETY: setrlimit is async-signal-safe; the closure allocates nothing.
        unsafe {
            command.pre_exec(move || {
                let rlimit = libc::rlimit { rlim_cur: limit, rlim_max: limit };
                if libc::setrlimit(libc::RLIMIT_AS, &rlimit) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    let run = run(command);
    let counter = |name: &str| run.counter(name).unwrap_or(0);
    let peaks = (counter("peak_kib"), counter("vm_peak_kib"));
    (run.code, run.stderr, peaks)
}

#[test]
fn a_million_reference_concatenation_along_time_scans_within_its_address_space_budget() {
    let dir = tempfile::tempdir().unwrap();
    let files = write_files(dir.path(), 100);
    let (code, stderr, small) = scan(&files[..10], dir.path(), "small.vzarr", None);
    assert_eq!(code, 0, "{stderr}");
    assert!(small.1 > 0, "no address-space peak reported: {stderr}");
    let more = ((files.len() - 10) * STEPS) as u64;
    let limit = small.1 * 1024 + more * BUDGET_BYTES_PER_REFERENCE;
    let (code, stderr, large) = scan(&files, dir.path(), "large.vzarr", Some(limit));
    println!(
        "10^5 references: peak {} KiB, address space {} KiB; 10^6 under a limit of {} KiB: peak {} KiB, address space {} KiB ({:.1} bytes/reference above)",
        small.0,
        small.1,
        limit / 1024,
        large.0,
        large.1,
        large.1.saturating_sub(small.1) as f64 * 1024.0 / more as f64
    );
    assert_eq!(
        code,
        0,
        "the scan of 10^6 references did not finish in {BUDGET_BYTES_PER_REFERENCE} bytes of address space per reference above the 10^5 scan's: {stderr}"
    );
    check_store(&dir.path().join("large.vzarr"), &files);
}

/// The store holds every time step: `v` and `time` at steps across files equal libnetcdf's values.
fn check_store(store: &Path, files: &[PathBuf]) {
    let store = crate::common::open_store(store);
    let v = store.array("v").unwrap();
    assert_eq!(v.reader().metadata().chunk_grid.num_chunks(), (files.len() * STEPS) as u64);
    for (f, j) in [(0, 0), (0, STEPS - 1), (1, 0), (57, 4321), (files.len() - 1, STEPS - 1)] {
        let t = f * STEPS + j;
        let ours = crate::common::read(&store, "v", &format!("{t}"));
        let theirs = oracle_read(&files[f], "v", Some(vec![range(j as u64, j as u64 + 1, 1), range(0, X as u64, 1)]));
        assert_eq!(ours.bytes, theirs, "v[{t}] (file {f}, step {j})");
        let ours = crate::common::read(&store, "time", &format!("{t}"));
        let theirs = oracle_read(&files[f], "time", Some(vec![range(j as u64, j as u64 + 1, 1)]));
        assert_eq!(ours.bytes, theirs, "time[{t}] (file {f}, step {j})");
    }
}
