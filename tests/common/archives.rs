//! Multi-file archives for the concatenation tests: CF time series split into files of uneven length.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use super::fixtures::{days_in_month, days_since_epoch, field};

/// How a file encodes its time values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeUnits {
    /// `days since 1970-01-01`, the same in every file.
    DaysSinceEpoch,
    /// `hours since <the file's first day>`, different in every file.
    HoursSinceStart,
}

/// One file of a series.
#[derive(Debug, Clone)]
pub struct SeriesFile {
    pub name: String,
    /// First day, in days since 1970-01-01.
    pub first_day: i64,
    pub days: usize,
    /// Chunk length along time.
    pub time_chunk: usize,
    pub compress: bool,
    pub units: TimeUnits,
    pub calendar: &'static str,
    pub ny: usize,
    pub nx: usize,
    /// Also write a precipitation variable `pr(time, lat, lon)`.
    pub with_pr: bool,
    /// Added to every latitude (a file on a shifted grid).
    pub lat_shift: f64,
    /// Extra text attributes of `tas` (`units` replaces "K").
    pub tas_text: Vec<(&'static str, &'static str)>,
    /// Extra numeric (double) attributes of `tas`.
    pub tas_numbers: Vec<(&'static str, f64)>,
    /// A `_FillValue` for `tas`.
    pub tas_fill: Option<f32>,
    /// Time values in reverse order inside the file.
    pub reverse_time: bool,
    /// Time value at index 1 set to NaN.
    pub nan_time: bool,
    /// Chunk lengths of `tas` along lat and lon.
    pub chunk_yx: (usize, usize),
    /// Write `tas` as float64 instead of float32.
    pub tas_f64: bool,
}

impl SeriesFile {
    pub fn new(name: impl Into<String>, first_day: i64, days: usize, time_chunk: usize) -> Self {
        SeriesFile {
            name: name.into(),
            first_day,
            days,
            time_chunk,
            compress: true,
            units: TimeUnits::DaysSinceEpoch,
            calendar: "standard",
            ny: 10,
            nx: 12,
            with_pr: false,
            lat_shift: 0.0,
            tas_text: Vec::new(),
            tas_numbers: Vec::new(),
            tas_fill: None,
            reverse_time: false,
            nan_time: false,
            chunk_yx: (5, 6),
            tas_f64: false,
        }
    }
}

fn ymd(days_since_1970: i64) -> (i32, u32, u32) {
    let mut year = 1970;
    let mut rest = days_since_1970;
    loop {
        let len = days_since_epoch(year + 1, 1) - days_since_epoch(year, 1);
        if rest < len {
            break;
        }
        rest -= len;
        year += 1;
    }
    let mut month = 1;
    while rest >= days_in_month(year, month) as i64 {
        rest -= days_in_month(year, month) as i64;
        month += 1;
    }
    (year, month, rest as u32 + 1)
}

/// Writes one file: tas(time, lat, lon) float32 chunked (time_chunk, chunk_yx), time + time_bnds, lat,
/// lon, scalar crs.
pub fn write_series_file(dir: &Path, f: &SeriesFile) -> PathBuf {
    super::with_hdf5_files(|| write_series_file_now(dir, f))
}

fn write_series_file_now(dir: &Path, f: &SeriesFile) -> PathBuf {
    let path = dir.join(&f.name);
    let mut nc = netcdf::create(&path).expect("create series file");
    nc.add_attribute("title", "vzarr concatenation test").unwrap();
    nc.add_unlimited_dimension("time").unwrap();
    nc.add_dimension("lat", f.ny).unwrap();
    nc.add_dimension("lon", f.nx).unwrap();
    nc.add_dimension("bnds", 2).unwrap();
    let lat: Vec<f64> = (0..f.ny).map(|i| -60.0 + 10.0 * i as f64 + f.lat_shift).collect();
    nc.add_variable::<f64>("lat", &["lat"]).unwrap().put_values(&lat, ..).unwrap();
    let lon: Vec<f64> = (0..f.nx).map(|i| 30.0 * i as f64).collect();
    nc.add_variable::<f64>("lon", &["lon"]).unwrap().put_values(&lon, ..).unwrap();
    let (units, offset, scale) = match f.units {
        TimeUnits::DaysSinceEpoch => ("days since 1970-01-01".to_string(), f.first_day as f64, 1.0),
        TimeUnits::HoursSinceStart => {
            let (y, m, d) = ymd(f.first_day);
            (format!("hours since {y:04}-{m:02}-{d:02} 00:00:00"), 0.0, 24.0)
        }
    };
    {
        let mut time = nc.add_variable::<f64>("time", &["time"]).unwrap();
        time.set_chunking(&[f.time_chunk]).unwrap();
        time.put_attribute("units", units.as_str()).unwrap();
        time.put_attribute("calendar", f.calendar).unwrap();
        time.put_attribute("bounds", "time_bnds").unwrap();
        let mut v: Vec<f64> = (0..f.days).map(|d| (offset + d as f64 + 0.5) * scale).collect();
        if f.reverse_time {
            v.reverse();
        }
        if f.nan_time {
            v[1] = f64::NAN;
        }
        time.put_values(&v, (0..f.days,)).unwrap();
    }
    {
        let mut bnds = nc.add_variable::<f64>("time_bnds", &["time", "bnds"]).unwrap();
        bnds.set_chunking(&[f.time_chunk, 2]).unwrap();
        let v: Vec<f64> =
            (0..f.days).flat_map(|d| [(offset + d as f64) * scale, (offset + d as f64 + 1.0) * scale]).collect();
        bnds.put_values(&v, [0..f.days, 0..2]).unwrap();
    }
    {
        let mut crs = nc.add_variable::<i32>("crs", &[]).unwrap();
        crs.put_attribute("grid_mapping_name", "latitude_longitude").unwrap();
        crs.put_value(0i32, ..).unwrap();
    }
    if f.tas_f64 {
        let mut tas = nc.add_variable::<f64>("tas", &["time", "lat", "lon"]).unwrap();
        tas.set_chunking(&[f.time_chunk, f.chunk_yx.0, f.chunk_yx.1]).unwrap();
        tas.put_attribute("units", "K").unwrap();
        let v: Vec<f64> = (0..f.days * f.ny * f.nx).map(|i| i as f64).collect();
        tas.put_values(&v, [0..f.days, 0..f.ny, 0..f.nx]).unwrap();
    } else {
        let mut tas = nc.add_variable::<f32>("tas", &["time", "lat", "lon"]).unwrap();
        tas.set_chunking(&[f.time_chunk, f.chunk_yx.0, f.chunk_yx.1]).unwrap();
        if f.compress {
            tas.set_compression(4, true).unwrap();
        }
        if let Some(fill) = f.tas_fill {
            tas.set_fill_value(fill).unwrap();
        }
        if !f.tas_text.iter().any(|(name, _)| *name == "units") {
            tas.put_attribute("units", "K").unwrap();
        }
        for (name, value) in &f.tas_text {
            tas.put_attribute(name, *value).unwrap();
        }
        for (name, value) in &f.tas_numbers {
            tas.put_attribute(name, *value).unwrap();
        }
        tas.put_attribute("grid_mapping", "crs").unwrap();
        let t0 = (f.first_day - days_since_epoch(2000, 1)) as usize;
        let mut v = Vec::with_capacity(f.days * f.ny * f.nx);
        for t in t0..t0 + f.days {
            for y in 0..f.ny {
                for x in 0..f.nx {
                    v.push(field(t, y, x));
                }
            }
        }
        tas.put_values(&v, [0..f.days, 0..f.ny, 0..f.nx]).unwrap();
    }
    if f.with_pr {
        let mut pr = nc.add_variable::<f32>("pr", &["time", "lat", "lon"]).unwrap();
        let v: Vec<f32> = (0..f.days * f.ny * f.nx).map(|i| i as f32).collect();
        pr.put_values(&v, [0..f.days, 0..f.ny, 0..f.nx]).unwrap();
    }
    nc.close().unwrap();
    path
}

/// Monthly files for `years`, chunked by `time_chunk` (None: whole month).
pub fn monthly(years: std::ops::RangeInclusive<i32>, time_chunk: Option<usize>, compress: bool) -> Vec<SeriesFile> {
    let mut files = Vec::new();
    for year in years {
        for month in 1..=12 {
            let days = days_in_month(year, month);
            let mut f = SeriesFile::new(
                format!("tas_{year}{month:02}.nc"),
                days_since_epoch(year, month),
                days,
                time_chunk.unwrap_or(days),
            );
            f.compress = compress;
            files.push(f);
        }
    }
    files
}

/// Yearly files (365/366 days) chunked by `time_chunk`.
pub fn yearly(years: std::ops::RangeInclusive<i32>, time_chunk: usize) -> Vec<SeriesFile> {
    years
        .map(|year| {
            let days = (days_since_epoch(year + 1, 1) - days_since_epoch(year, 1)) as usize;
            SeriesFile::new(format!("tas_{year}.nc"), days_since_epoch(year, 1), days, time_chunk)
        })
        .collect()
}

/// `days` daily files (one day each, chunked by day) from January 1st of `year`.
pub fn daily(year: i32, days: usize) -> Vec<SeriesFile> {
    let first = days_since_epoch(year, 1);
    (0..days as i64)
        .map(|d| {
            let (y, m, day) = ymd(first + d);
            SeriesFile::new(format!("tas_{y:04}{m:02}{day:02}.nc"), first + d, 1, 1)
        })
        .collect()
}
