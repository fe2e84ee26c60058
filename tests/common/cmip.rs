//! Whole-archive fixtures (issue 9): CMIP-like archives (one variable per file, one file set per
//! ensemble member, yearly files) and spatially tiled archives. Every file is written with libnetcdf.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use super::fixtures::{days_since_epoch, field};
use super::with_hdf5_files;

/// One file of a CMIP-like archive: `<var>_day_VZ-ESM_<member>_gn_<year>.nc`.
#[derive(Debug, Clone)]
pub struct CmipFile {
    pub var: &'static str,
    pub member: String,
    pub year: i32,
    /// Chunk length along time.
    pub time_chunk: usize,
    /// Added to every time value (a member whose time axis differs).
    pub time_shift: f64,
    pub ny: usize,
    pub nx: usize,
    /// Added to every latitude (a file on a shifted grid).
    pub lat_shift: f64,
}

impl CmipFile {
    pub fn name(&self) -> String {
        format!("{}_day_VZ-ESM_{}_gn_{}.nc", self.var, self.member, self.year)
    }

    pub fn days(&self) -> usize {
        (days_since_epoch(self.year + 1, 1) - days_since_epoch(self.year, 1)) as usize
    }
}

/// Members `r1i1p1f1`, `r2i1p1f1`, `r10i1p1f1` (natural order puts r10 last), years 2003..=2006
/// (2004 is a leap year), `tas` chunked by 100 days (not a divisor of any year) and `pr` by 1 day.
pub fn cmip_archive() -> Vec<CmipFile> {
    let mut files = Vec::new();
    for (var, time_chunk) in [("tas", 100), ("pr", 1)] {
        for member in ["r1i1p1f1", "r2i1p1f1", "r10i1p1f1"] {
            for year in 2003..=2006 {
                let member = member.to_string();
                files.push(CmipFile { var, member, year, time_chunk, time_shift: 0.0, ny: 4, nx: 5, lat_shift: 0.0 });
            }
        }
    }
    files
}

/// The member's number (`r10i1p1f1` -> 10), to give every member its own values.
fn member_number(member: &str) -> usize {
    member[1..].split('i').next().and_then(|n| n.parse().ok()).unwrap_or(0)
}

/// Writes one CMIP-like file: `var(time, lat, lon)` float32 deflated, chunked (time_chunk, 2, 3)
/// for tas and (time_chunk, lat, lon) for pr,
/// time in `days since 2000-01-01` with bounds, lat, lon, and global attributes `variant_label`
/// (the member), `tracking_id` (different in every file) and `source_id` (the same everywhere).
pub fn write_cmip_file(dir: &Path, f: &CmipFile) -> PathBuf {
    let path = dir.join(f.name());
    with_hdf5_files(|| {
        hdf5::silence_errors(true);
        let mut nc = netcdf::create(&path).expect("create CMIP file");
        nc.add_attribute("variant_label", f.member.as_str()).unwrap();
        nc.add_attribute("source_id", "VZ-ESM").unwrap();
        nc.add_attribute("tracking_id", format!("hdl:21.14100/{}", f.name()).as_str()).unwrap();
        nc.add_unlimited_dimension("time").unwrap();
        nc.add_dimension("lat", f.ny).unwrap();
        nc.add_dimension("lon", f.nx).unwrap();
        nc.add_dimension("bnds", 2).unwrap();
        let lat: Vec<f64> = (0..f.ny).map(|i| -45.0 + 30.0 * i as f64 + f.lat_shift).collect();
        nc.add_variable::<f64>("lat", &["lat"]).unwrap().put_values(&lat, ..).unwrap();
        let lon: Vec<f64> = (0..f.nx).map(|i| 72.0 * i as f64).collect();
        nc.add_variable::<f64>("lon", &["lon"]).unwrap().put_values(&lon, ..).unwrap();
        let first = (days_since_epoch(f.year, 1) - days_since_epoch(2000, 1)) as usize;
        let days = f.days();
        {
            let mut time = nc.add_variable::<f64>("time", &["time"]).unwrap();
            time.put_attribute("units", "days since 2000-01-01").unwrap();
            time.put_attribute("calendar", "standard").unwrap();
            time.put_attribute("bounds", "time_bnds").unwrap();
            let v: Vec<f64> = (0..days).map(|d| (first + d) as f64 + 0.5 + f.time_shift).collect();
            time.put_values(&v, (0..days,)).unwrap();
        }
        {
            let mut bnds = nc.add_variable::<f64>("time_bnds", &["time", "bnds"]).unwrap();
            let v: Vec<f64> = (0..days)
                .flat_map(|d| [(first + d) as f64 + f.time_shift, (first + d + 1) as f64 + f.time_shift])
                .collect();
            bnds.put_values(&v, [0..days, 0..2]).unwrap();
        }
        let mut var = nc.add_variable::<f32>(f.var, &["time", "lat", "lon"]).unwrap();
        // tas: (time_chunk, 2, 3), partial along lat and lon too; pr: one chunk per day.
        let spatial = if f.var == "tas" { [2, 3] } else { [f.ny, f.nx] };
        var.set_chunking(&[f.time_chunk, spatial[0], spatial[1]]).unwrap();
        var.set_compression(4, true).unwrap();
        var.put_attribute("units", if f.var == "tas" { "K" } else { "kg m-2 s-1" }).unwrap();
        let offset = 1000.0 * member_number(&f.member) as f32 + if f.var == "pr" { 0.5 } else { 0.0 };
        let mut v = Vec::with_capacity(days * f.ny * f.nx);
        for t in first..first + days {
            for y in 0..f.ny {
                for x in 0..f.nx {
                    v.push(field(t, y, x) + offset);
                }
            }
        }
        var.put_values(&v, [0..days, 0..f.ny, 0..f.nx]).unwrap();
        nc.close().unwrap();
    });
    path
}

/// One tile of a spatially tiled archive: `z(time, y, x)` on rows `y0..y0+ny` and columns
/// `x0..x0+nx` of a global grid whose `y` decreases (north to south) and `x` increases.
#[derive(Debug, Clone)]
pub struct Tile {
    pub y0: usize,
    pub ny: usize,
    pub x0: usize,
    pub nx: usize,
    /// Chunk shape (time, y, x).
    pub chunk: [usize; 3],
    pub compress: bool,
}

/// Value of the global field at (t, row, column).
pub fn tile_value(t: usize, y: usize, x: usize) -> f32 {
    field(t, y, x) + 100.0 * y as f32 + x as f32
}

/// Writes one tile as `tile_<y0>_<x0>.nc`: `z(time=3, y, x)` (compressed when asked) and
/// `w(y, x)` float64 uncompressed.
pub fn write_tile(dir: &Path, t: &Tile) -> PathBuf {
    let path = dir.join(format!("tile_{}_{}.nc", t.y0, t.x0));
    with_hdf5_files(|| {
        hdf5::silence_errors(true);
        let mut nc = netcdf::create(&path).expect("create tile");
        nc.add_attribute("title", "tiled test archive").unwrap();
        nc.add_dimension("time", 3).unwrap();
        nc.add_dimension("y", t.ny).unwrap();
        nc.add_dimension("x", t.nx).unwrap();
        let y: Vec<f64> = (t.y0..t.y0 + t.ny).map(|i| 1000.0 - 10.0 * i as f64).collect();
        let mut yv = nc.add_variable::<f64>("y", &["y"]).unwrap();
        yv.put_attribute("units", "km").unwrap();
        yv.put_values(&y, ..).unwrap();
        let x: Vec<f64> = (t.x0..t.x0 + t.nx).map(|i| 10.0 * i as f64).collect();
        let mut xv = nc.add_variable::<f64>("x", &["x"]).unwrap();
        xv.put_attribute("units", "km").unwrap();
        xv.put_values(&x, ..).unwrap();
        nc.add_variable::<f64>("time", &["time"]).unwrap().put_values(&[0.0, 1.0, 2.0], ..).unwrap();
        let mut z = nc.add_variable::<f32>("z", &["time", "y", "x"]).unwrap();
        z.set_chunking(&t.chunk).unwrap();
        if t.compress {
            z.set_compression(4, true).unwrap();
        }
        let mut v = Vec::with_capacity(3 * t.ny * t.nx);
        for time in 0..3 {
            for y in t.y0..t.y0 + t.ny {
                for x in t.x0..t.x0 + t.nx {
                    v.push(tile_value(time, y, x));
                }
            }
        }
        z.put_values(&v, [0..3, 0..t.ny, 0..t.nx]).unwrap();
        // w(y, x): float64, uncompressed, chunked like z's last two dimensions.
        let mut w = nc.add_variable::<f64>("w", &["y", "x"]).unwrap();
        w.set_chunking(&t.chunk[1..]).unwrap();
        let v: Vec<f64> = (t.y0..t.y0 + t.ny)
            .flat_map(|y| (t.x0..t.x0 + t.nx).map(move |x| f64::from(tile_value(0, y, x))))
            .collect();
        w.put_values(&v, [0..t.ny, 0..t.nx]).unwrap();
        nc.close().unwrap();
    });
    path
}
