//! The three ways the scale bench combines files, and the NetCDF-4 inputs of two of them:
//!
//! - **new dimension**: the HDF5 files of one-element chunks (`f00000.h5`, ...), combined along a new
//!   dimension `file` keyed by the file's number;
//! - **existing dimension**, the everyday archive: NetCDF-4 files of `v(time=10000, x=4)` float32 in
//!   chunks of `(1, 4)` (10,000 references a file) with a contiguous `time` coordinate (hours, file
//!   `f` holding `f * 10000 ..`), combined with `--concat time`;
//! - **member x time**, the CMIP-like hypercube: the same files for 10 members (`m00_f00000.nc`, ...;
//!   member `m`'s file `f` holds the same times as every other member's), combined with
//!   `--concat member=path:m(\d+)_ --concat time`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use super::CHUNKS;

/// Members of the member x time kind.
pub(crate) const MEMBERS: usize = 10;
/// Elements along `x` (one chunk spans them).
const X: usize = 4;

/// One way of combining: its name, its `--concat` options and its files for a number of references.
pub(crate) struct Kind {
    pub(crate) name: &'static str,
    pub(crate) concat: &'static [&'static str],
    /// Input directory.
    dir: PathBuf,
    /// Members of the NetCDF-4 inputs (1: one series of files); `None` for the HDF5 inputs.
    members: Option<usize>,
}

impl Kind {
    /// The three kinds, their inputs under `root`.
    pub(crate) fn all(root: &Path) -> Vec<Kind> {
        vec![
            Kind {
                name: "new dimension",
                concat: &[r"file=path:f(\d+)\.h5"],
                dir: root.join("files-10000-chunks"),
                members: None,
            },
            Kind { name: "existing dimension", concat: &["time"], dir: root.join("netcdf-time"), members: Some(1) },
            Kind {
                name: "member x time",
                concat: &[r"member=path:m(\d+)_", "time"],
                dir: root.join("netcdf-member-time"),
                members: Some(MEMBERS),
            },
        ]
    }

    /// The files of a scan of `count` files (written when missing).
    pub(crate) fn files(&self, count: usize) -> Vec<PathBuf> {
        match self.members {
            None => super::write_inputs(&self.dir, count),
            Some(members) => {
                let years = (count / members).max(1);
                let names: Vec<PathBuf> = (0..members)
                    .flat_map(|m| (0..years).map(move |f| (m, f)))
                    .map(|(m, f)| self.dir.join(netcdf_name(members, m, f)))
                    .collect();
                write_netcdf_inputs(&self.dir, members, years);
                names
            }
        }
    }
}

/// `f00001.nc` (one member) or `m03_f00001.nc`.
fn netcdf_name(members: usize, m: usize, f: usize) -> String {
    if members == 1 {
        format!("f{f:05}.nc")
    } else {
        format!("m{m:02}_f{f:05}.nc")
    }
}

/// Writes the missing NetCDF-4 files of `members` x `years`, in two child processes (libhdf5
/// serializes one process's calls).
fn write_netcdf_inputs(dir: &Path, members: usize, years: usize) {
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
pub(crate) fn write_netcdf_child(args: &[String]) {
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

/// One file: `time` (hours, `f * CHUNKS + j`, contiguous) and `v(time, x)` in chunks of `(1, X)`.
fn write_netcdf(path: &Path, f: usize) {
    let tmp = path.with_extension("tmp");
    let mut file = netcdf::create(&tmp).unwrap();
    file.add_dimension("time", CHUNKS).unwrap();
    file.add_dimension("x", X).unwrap();
    let times: Vec<f64> = (0..CHUNKS).map(|j| (f * CHUNKS + j) as f64).collect();
    let mut time = file.add_variable::<f64>("time", &["time"]).unwrap();
    time.put_attribute("units", "hours since 2000-01-01").unwrap();
    time.put_values(&times, ..).unwrap();
    let mut v = file.add_variable::<f32>("v", &["time", "x"]).unwrap();
    v.set_chunking(&[1, X]).unwrap();
    let values: Vec<f32> = (0..CHUNKS * X).map(|i| (f * CHUNKS * X + i) as f32).collect();
    v.put_values(&values, ..).unwrap();
    file.close().unwrap();
    std::fs::rename(tmp, path).unwrap();
}
