//! NetCDF-3 fixtures (classic CDF-1, 64-bit offset CDF-2, 64-bit data CDF-5), written by libnetcdf.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use netcdf::types::NcVariableType;
use netcdf::{NcTypeDescriptor, Options};

use super::fixtures::{days_in_month, days_since_epoch, field};

/// One `NC_CHAR` element, for writing char variables through the netcdf crate.
#[repr(transparent)]
#[derive(Clone, Copy)]
pub struct NcChar(pub u8);

// SAFETY: `NcChar` is a transparent `u8`, the in-memory layout of `NC_CHAR`.
unsafe impl NcTypeDescriptor for NcChar {
    fn type_descriptor() -> NcVariableType {
        NcVariableType::Char
    }
}

fn chars(text: &[u8]) -> Vec<NcChar> {
    text.iter().map(|&b| NcChar(b)).collect()
}

/// The three classic formats.
pub const FORMATS: [(&str, Options); 3] =
    [("cdf1", Options::CLASSIC), ("cdf2", Options::_64BIT_OFFSET), ("cdf5", Options::_64BIT_DATA)];

/// Several record variables (one only partly written: the rest is fill), char variables (record
/// and not), a scalar, attributes of several types, and for CDF-5 every extra type.
pub fn write_mixed(dir: &Path, name: &str, format: Options, records: usize) -> PathBuf {
    let path = dir.join(name);
    let cdf5 = format.bits() == Options::_64BIT_DATA.bits();
    let mut f = netcdf::create_with(&path, format).expect("create classic file");
    f.add_attribute("title", "classic mixed").unwrap();
    f.add_attribute("version", 3i32).unwrap();
    f.add_unlimited_dimension("time").unwrap();
    f.add_dimension("x", 4).unwrap();
    f.add_dimension("strlen", 6).unwrap();
    f.add_variable::<f64>("xcoord", &["x"]).unwrap().put_attribute("units", "m").unwrap();
    f.add_variable::<NcChar>("station", &["x", "strlen"]).unwrap();
    f.add_variable::<i32>("scalar", &[]).unwrap();
    f.add_variable::<NcChar>("name", &["strlen"]).unwrap();
    {
        let mut t = f.add_variable::<f32>("temp", &["time", "x"]).unwrap();
        t.put_attribute("_FillValue", -999f32).unwrap();
        t.put_attribute("valid_range", vec![-50f32, 50.0]).unwrap();
    }
    f.add_variable::<i32>("count", &["time"]).unwrap();
    f.add_variable::<i8>("flag", &["time", "x"]).unwrap();
    f.add_variable::<i16>("level", &["time", "x"]).unwrap();
    f.add_variable::<NcChar>("label", &["time", "strlen"]).unwrap();
    if cdf5 {
        f.add_variable::<u8>("ub", &["time", "x"]).unwrap();
        f.add_variable::<u16>("us", &["x"]).unwrap();
        f.add_variable::<u32>("ui", &["time"]).unwrap();
        f.add_variable::<i64>("i64v", &["time", "x"]).unwrap();
        f.add_variable::<u64>("u64v", &["x"]).unwrap();
    }
    f.enddef().unwrap();
    f.variable_mut("xcoord").unwrap().put_values(&[0.5f64, 1.5, 2.5, 3.5], ..).unwrap();
    f.variable_mut("station").unwrap().put_values(&chars(b"alpha\0beta\0\0gamma!delta\0"), ..).unwrap();
    f.variable_mut("scalar").unwrap().put_value(42i32, ..).unwrap();
    f.variable_mut("name").unwrap().put_values(&chars(b"vzarr\0"), ..).unwrap();
    if cdf5 {
        f.variable_mut("us").unwrap().put_values(&[1u16, 65535, 3, 4], ..).unwrap();
        f.variable_mut("u64v").unwrap().put_values(&[u64::MAX, 0, 7, 1 << 60], ..).unwrap();
    }
    for r in 0..records {
        let x: Vec<f32> = (0..4).map(|i| r as f32 * 1.5 - i as f32).collect();
        f.variable_mut("temp").unwrap().put_values(&x, [r..r + 1, 0..4]).unwrap();
        if r % 2 == 0 {
            f.variable_mut("count").unwrap().put_values(&[r as i32 * 10], (r..r + 1,)).unwrap();
        }
        f.variable_mut("flag").unwrap().put_values(&[r as i8, -(r as i8), 1, 2], [r..r + 1, 0..4]).unwrap();
        f.variable_mut("level").unwrap().put_values(&[r as i16 * 300, -7, 8, 9], [r..r + 1, 0..4]).unwrap();
        f.variable_mut("label").unwrap().put_values(&chars(format!("rec{r:02}").as_bytes()), [r..r + 1, 0..5]).unwrap();
        if cdf5 {
            f.variable_mut("ub").unwrap().put_values(&[250u8, r as u8, 0, 1], [r..r + 1, 0..4]).unwrap();
            f.variable_mut("ui").unwrap().put_values(&[u32::MAX - r as u32], (r..r + 1,)).unwrap();
            let v = [i64::MIN + r as i64, -1, 0, i64::MAX];
            f.variable_mut("i64v").unwrap().put_values(&v, [r..r + 1, 0..4]).unwrap();
        }
    }
    f.close().unwrap();
    path
}

/// A file whose only record variable is a short: records are packed with no padding.
pub fn write_single_short(dir: &Path, records: usize) -> PathBuf {
    let path = dir.join("single_short.nc");
    let mut f = netcdf::create_with(&path, Options::CLASSIC).unwrap();
    f.add_unlimited_dimension("time").unwrap();
    f.add_dimension("x", 3).unwrap();
    f.add_variable::<f64>("x", &["x"]).unwrap();
    f.add_variable::<i16>("obs", &["time", "x"]).unwrap();
    f.enddef().unwrap();
    f.variable_mut("x").unwrap().put_values(&[1.0f64, 2.0, 3.0], ..).unwrap();
    let vals: Vec<i16> = (0..records as i16 * 3).map(|i| i * 11 - 40).collect();
    f.variable_mut("obs").unwrap().put_values(&vals, [0..records, 0..3]).unwrap();
    f.close().unwrap();
    path
}

/// A classic monthly file: tas(time, lat, lon) float, time (days since 1970) as a record variable.
pub fn write_monthly_classic(dir: &Path, year: i32, month: u32) -> PathBuf {
    let path = dir.join(format!("tas_classic_{year}{month:02}.nc"));
    let days = days_in_month(year, month);
    let (ny, nx) = (6, 8);
    let mut f = netcdf::create_with(&path, Options::CLASSIC).unwrap();
    f.add_unlimited_dimension("time").unwrap();
    f.add_dimension("lat", ny).unwrap();
    f.add_dimension("lon", nx).unwrap();
    f.add_variable::<f32>("lat", &["lat"]).unwrap();
    f.add_variable::<f32>("lon", &["lon"]).unwrap();
    {
        let mut time = f.add_variable::<f64>("time", &["time"]).unwrap();
        time.put_attribute("units", "days since 1970-01-01").unwrap();
        time.put_attribute("calendar", "standard").unwrap();
    }
    f.add_variable::<f32>("tas", &["time", "lat", "lon"]).unwrap().put_attribute("units", "K").unwrap();
    f.enddef().unwrap();
    let lat: Vec<f32> = (0..ny).map(|i| -50.0 + 20.0 * i as f32).collect();
    f.variable_mut("lat").unwrap().put_values(&lat, ..).unwrap();
    let lon: Vec<f32> = (0..nx).map(|i| 45.0 * i as f32).collect();
    f.variable_mut("lon").unwrap().put_values(&lon, ..).unwrap();
    let start = days_since_epoch(year, month) as f64;
    let time: Vec<f64> = (0..days).map(|d| start + d as f64).collect();
    f.variable_mut("time").unwrap().put_values(&time, (0..days,)).unwrap();
    let t0 = (days_since_epoch(year, month) - days_since_epoch(2001, 1)) as usize;
    let v: Vec<f32> =
        (t0..t0 + days).flat_map(|t| (0..ny).flat_map(move |y| (0..nx).map(move |x| field(t, y, x)))).collect();
    f.variable_mut("tas").unwrap().put_values(&v, [0..days, 0..ny, 0..nx]).unwrap();
    f.close().unwrap();
    path
}
