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

use crate::common::series::{netcdf_name, write_netcdf_inputs};

/// Members of the member x time kind.
pub(crate) const MEMBERS: usize = 10;

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
