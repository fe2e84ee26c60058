//! The NetCDF-4 series the scale and calendar benches share: files of `v(time=10000, x=4)` float32
//! in chunks of `(1, 4)` (10,000 references a file) with a contiguous CF `time` coordinate (hours
//! since 2000-01-01, file `f` holding `f * 10000 ..`), for one member (`f00000.nc`, ...) or several
//! (`m00_f00000.nc`, ...; every member's file `f` holds the same times), written by two child
//! processes of the bench (`--write-netcdf`) and cached.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// Time steps (chunks) of one file.
pub const STEPS: usize = 10_000;
/// Elements along `x` (one chunk spans them).
const X: usize = 4;

/// `f00001.nc` (one member) or `m03_f00001.nc`.
pub fn netcdf_name(members: usize, m: usize, f: usize) -> String {
    if members == 1 {
        format!("f{f:05}.nc")
    } else {
        format!("m{m:02}_f{f:05}.nc")
    }
}

/// Writes the missing NetCDF-4 files of `members` x `years`, in two child processes (libhdf5
/// serializes one process's calls).
pub fn write_netcdf_inputs(dir: &Path, members: usize, years: usize) {
    std::fs::create_dir_all(dir).unwrap();
    let missing = (0..members).any(|m| (0..years).any(|f| !dir.join(netcdf_name(members, m, f)).exists()));
    if !missing {
        return;
    }
    let start = Instant::now();
    let children: Vec<_> = (0..2)
        .map(|i| {
            Command::new(std::env::current_exe().unwrap())
                .args(["--bench", "--write-netcdf"])
                .arg(dir)
                .args([members.to_string(), years.to_string(), i.to_string(), "2".into()])
                .spawn()
                .expect("starting an input writer")
        })
        .collect();
    for mut child in children {
        assert!(child.wait().unwrap().success(), "writing the NetCDF inputs failed");
    }
    println!("{} NetCDF-4 input files ready in {:.1} s", members * years, start.elapsed().as_secs_f64());
}

/// The child of [`write_netcdf_inputs`]: `--write-netcdf DIR MEMBERS YEARS I N` writes the missing
/// files whose number (member-major) is `I` modulo `N`.
pub fn write_netcdf_child(args: &[String]) {
    let at = args.iter().position(|a| a == "--write-netcdf").unwrap();
    let dir = PathBuf::from(&args[at + 1]);
    let [members, years, i, n] = [2, 3, 4, 5].map(|k| args[at + k].parse::<usize>().unwrap());
    for k in (i..members * years).step_by(n) {
        let (m, f) = (k / years, k % years);
        let path = dir.join(netcdf_name(members, m, f));
        if !path.exists() {
            write_netcdf(&path, f);
        }
    }
}

/// One file: `time` (hours, `f * STEPS + j`, contiguous) and `v(time, x)` in chunks of `(1, X)`.
fn write_netcdf(path: &Path, f: usize) {
    let tmp = path.with_extension("tmp");
    let mut file = netcdf::create(&tmp).unwrap();
    file.add_dimension("time", STEPS).unwrap();
    file.add_dimension("x", X).unwrap();
    let times: Vec<f64> = (0..STEPS).map(|j| (f * STEPS + j) as f64).collect();
    let mut time = file.add_variable::<f64>("time", &["time"]).unwrap();
    time.put_attribute("units", "hours since 2000-01-01").unwrap();
    time.put_values(&times, ..).unwrap();
    let mut v = file.add_variable::<f32>("v", &["time", "x"]).unwrap();
    v.set_chunking(&[1, X]).unwrap();
    let values: Vec<f32> = (0..STEPS * X).map(|i| (f * STEPS * X + i) as f32).collect();
    v.put_values(&values, ..).unwrap();
    file.close().unwrap();
    std::fs::rename(tmp, path).unwrap();
}
