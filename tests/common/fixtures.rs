//! Deterministic fixture files, written with the netcdf and hdf5 crates (libnetcdf / libhdf5).
//!
//! Shared by the integration tests (which write them into temporary directories) and by
//! `examples/make_fixtures.rs` (which writes the committed sample archive under `fixtures/`).
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// A smooth, deterministic field value for (t, y, x).
pub fn field(t: usize, y: usize, x: usize) -> f32 {
    let (t, y, x) = (t as f32, y as f32, x as f32);
    280.0 + 10.0 * (y / 6.0).sin() + 5.0 * (x / 9.0).cos() + 0.1 * t + ((t * 7.0 + y * 3.0 + x) % 13.0) * 0.01
}

fn grid_values(t0: usize, nt: usize, ny: usize, nx: usize) -> Vec<f32> {
    let mut v = Vec::with_capacity(nt * ny * nx);
    for t in t0..t0 + nt {
        for y in 0..ny {
            for x in 0..nx {
                v.push(field(t, y, x));
            }
        }
    }
    v
}

/// Days in `month` (1-12) of `year`.
pub fn days_in_month(year: i32, month: u32) -> usize {
    match month {
        2 if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days from 1970-01-01 to the first of `month` of `year`.
pub fn days_since_epoch(year: i32, month: u32) -> i64 {
    let mut days = 0i64;
    for y in 1970..year {
        days += if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 { 366 } else { 365 };
    }
    for m in 1..month {
        days += days_in_month(year, m) as i64;
    }
    days
}

/// Options of one monthly file.
#[derive(Debug, Clone)]
pub struct Monthly {
    pub year: i32,
    pub month: u32,
    /// Chunk length along time; None = whole month.
    pub time_chunk: Option<usize>,
    pub compress: bool,
    pub ny: usize,
    pub nx: usize,
}

impl Monthly {
    pub fn new(year: i32, month: u32) -> Self {
        Monthly { year, month, time_chunk: None, compress: true, ny: 18, nx: 36 }
    }
}

/// A CF monthly file: tas(time, lat, lon) float32, time with bounds, lat, lon, scalar crs.
pub fn write_monthly(dir: &Path, m: &Monthly) -> PathBuf {
    let path = dir.join(format!("tas_{}-{:02}.nc", m.year, m.month));
    let nt = days_in_month(m.year, m.month);
    let t0 = (days_since_epoch(m.year, m.month) - days_since_epoch(2023, 1)) as usize;
    let mut f = netcdf::create(&path).expect("create monthly file");
    f.add_attribute("Conventions", "CF-1.8").unwrap();
    f.add_attribute("title", "vzarr sample archive").unwrap();
    f.add_unlimited_dimension("time").unwrap();
    f.add_dimension("lat", m.ny).unwrap();
    f.add_dimension("lon", m.nx).unwrap();
    f.add_dimension("bnds", 2).unwrap();
    {
        let mut lat = f.add_variable::<f64>("lat", &["lat"]).unwrap();
        lat.put_attribute("units", "degrees_north").unwrap();
        lat.put_attribute("standard_name", "latitude").unwrap();
        let v: Vec<f64> = (0..m.ny).map(|i| -85.0 + 170.0 * i as f64 / (m.ny - 1) as f64).collect();
        lat.put_values(&v, ..).unwrap();
    }
    {
        let mut lon = f.add_variable::<f64>("lon", &["lon"]).unwrap();
        lon.put_attribute("units", "degrees_east").unwrap();
        let v: Vec<f64> = (0..m.nx).map(|i| i as f64 * 360.0 / m.nx as f64).collect();
        lon.put_values(&v, ..).unwrap();
    }
    let start = days_since_epoch(m.year, m.month) as f64;
    {
        let mut time = f.add_variable::<f64>("time", &["time"]).unwrap();
        time.put_attribute("units", "days since 1970-01-01").unwrap();
        time.put_attribute("calendar", "standard").unwrap();
        time.put_attribute("bounds", "time_bnds").unwrap();
        let v: Vec<f64> = (0..nt).map(|d| start + d as f64 + 0.5).collect();
        time.put_values(&v, (0..nt,)).unwrap();
    }
    {
        let mut bnds = f.add_variable::<f64>("time_bnds", &["time", "bnds"]).unwrap();
        let v: Vec<f64> = (0..nt).flat_map(|d| [start + d as f64, start + d as f64 + 1.0]).collect();
        bnds.put_values(&v, [0..nt, 0..2]).unwrap();
    }
    {
        let mut crs = f.add_variable::<i32>("crs", &[]).unwrap();
        crs.put_attribute("grid_mapping_name", "latitude_longitude").unwrap();
        crs.put_value(0i32, ..).unwrap();
    }
    {
        let mut tas = f.add_variable::<f32>("tas", &["time", "lat", "lon"]).unwrap();
        let tc = m.time_chunk.unwrap_or(nt);
        tas.set_chunking(&[tc, m.ny.div_ceil(2), m.nx.div_ceil(3)]).unwrap();
        if m.compress {
            tas.set_compression(4, true).unwrap();
        }
        tas.set_fill_value(1.0e20f32).unwrap();
        tas.put_attribute("units", "K").unwrap();
        tas.put_attribute("standard_name", "air_temperature").unwrap();
        tas.put_attribute("grid_mapping", "crs").unwrap();
        tas.put_values(&grid_values(t0, nt, m.ny, m.nx), [0..nt, 0..m.ny, 0..m.nx]).unwrap();
    }
    f.close().unwrap();
    path
}

/// Every numeric type, an unlimited dimension, nested groups, a scalar, fill values with unwritten
/// chunks and a big-endian variable, in one netCDF-4 file.
pub fn write_kitchen_sink(dir: &Path) -> PathBuf {
    let path = dir.join("kitchen_sink.nc");
    let mut f = netcdf::create(&path).unwrap();
    f.add_attribute("history", "made by vzarr's fixture generator").unwrap();
    f.add_unlimited_dimension("rec").unwrap();
    f.add_dimension("x", 7).unwrap();
    macro_rules! typed {
        ($name:expr, $t:ty, $conv:expr) => {{
            let mut v = f.add_variable::<$t>($name, &["rec", "x"]).unwrap();
            v.set_chunking(&[2, 4]).unwrap();
            v.set_compression(1, true).unwrap();
            let vals: Vec<$t> = (0..5 * 7).map($conv).collect();
            v.put_values(&vals, [0..5, 0..7]).unwrap();
        }};
    }
    typed!("i8", i8, |i: i32| (i * 7 - 100) as i8);
    typed!("u8", u8, |i: i32| (i * 7) as u8);
    typed!("i16", i16, |i: i32| (i * 911 - 16000) as i16);
    typed!("u16", u16, |i: i32| (i * 1871) as u16);
    typed!("i32", i32, |i: i32| i.wrapping_mul(123_456_789).wrapping_sub(2_000_000_000));
    typed!("u32", u32, |i: i32| (i as u32).wrapping_mul(3_000_000_001));
    typed!("i64", i64, |i: i32| i64::from(i) * -987_654_321_987);
    typed!("u64", u64, |i: i32| u64::MAX - i as u64 * 1_000_000_007);
    typed!("f32", f32, |i: i32| i as f32 * 0.25 - 3.0);
    typed!("f64", f64, |i: i32| f64::from(i).sqrt());
    {
        let mut big = f.add_variable::<i32>("big_endian", &["rec", "x"]).unwrap();
        big.set_endianness(netcdf::Endianness::Big).unwrap();
        big.set_chunking(&[3, 7]).unwrap();
        let vals: Vec<i32> = (0..35).map(|i| i * 65_537 - 1_000_000).collect();
        big.put_values(&vals, [0..5, 0..7]).unwrap();
    }
    {
        let mut be = f.add_variable::<f64>("big_endian_contiguous", &["x"]).unwrap();
        be.set_endianness(netcdf::Endianness::Big).unwrap();
        be.put_values(&[1.5f64, -2.5, 3.25, 1e300, -0.0, 7.0, 8.0], ..).unwrap();
    }
    {
        // Only some chunks written: the rest read as the fill value.
        let mut sparse = f.add_variable::<f32>("sparse", &["rec", "x"]).unwrap();
        sparse.set_chunking(&[1, 3]).unwrap();
        sparse.set_fill_value(-999.0f32).unwrap();
        sparse.put_values(&[1.0f32, 2.0, 3.0], [1..2, 3..6]).unwrap();
    }
    {
        let mut scalar = f.add_variable::<f64>("scalar", &[]).unwrap();
        scalar.put_attribute("long_name", "a scalar").unwrap();
        scalar.put_value(42.5f64, ..).unwrap();
    }
    {
        let mut g = f.add_group("model").unwrap();
        g.add_attribute("source", "nested group").unwrap();
        g.add_dimension("level", 4).unwrap();
        let mut inner = g.add_group("diagnostics").unwrap();
        let mut v = inner.add_variable::<i16>("level_flag", &["level"]).unwrap();
        v.put_values(&[1i16, -2, 3, -4], ..).unwrap();
        let mut w = inner.add_variable::<f32>("profile", &["rec", "level"]).unwrap();
        w.set_chunking(&[2, 2]).unwrap();
        w.set_compression(6, false).unwrap();
        let vals: Vec<f32> = (0..5 * 4).map(|i| i as f32 / 3.0).collect();
        w.put_values(&vals, [0..5, 0..4]).unwrap();
    }
    f.close().unwrap();
    path
}

/// A plain HDF5 file (no netCDF conventions): fletcher32 + shuffle + deflate, a contiguous dataset
/// large enough to be split into slabs, and a compact dataset.
pub fn write_plain_hdf5(dir: &Path) -> PathBuf {
    let path = dir.join("plain.h5");
    let file = hdf5::File::create(&path).unwrap();
    let checked: Vec<f64> = (0..40 * 30).map(|i| f64::from(i) * 0.5 - 17.0).collect();
    file.new_dataset_builder()
        .chunk((8, 16))
        .fletcher32()
        .shuffle()
        .deflate(5)
        .with_data(&ndarray::Array2::from_shape_vec((40, 30), checked).unwrap())
        .create("checked")
        .unwrap();
    let slabbed: Vec<i32> = (0..1000 * 6).collect();
    file.new_dataset_builder()
        .with_data(&ndarray::Array2::from_shape_vec((1000, 6), slabbed).unwrap())
        .create("contiguous")
        .unwrap();
    let group = file.create_group("inner").unwrap();
    group.new_dataset_builder().with_data(&ndarray::arr1(&[3u16, 1, 4, 1, 5, 9, 2, 6])).create("small").unwrap();
    path
}

/// A plain HDF5 file whose only dataset, `bitshuffle_data` (64 float32 in chunks of 16), has an HDF5
/// filter vzarr does not support in its pipeline: bitshuffle, id 32008 (no Zarr codec, and no plugin
/// `./dev setup` installs decodes it); registered optional so this libhdf5, which lacks it, writes
/// the chunks without it. (blosc2, then LZF served here until vzarr decoded them: with a filter's
/// plugin on the plugin path, libhdf5 applies it and fills in its client data.)
///
/// The hdf5 crate refuses a filter libhdf5 does not have ("Filter not available"), so the dataset is
/// made through the raw API ([`create_with_filter`]).
pub fn write_unsupported_filter(dir: &Path) -> PathBuf {
    let path = dir.join("unsupported_filter.h5");
    let file = hdf5::File::create(&path).unwrap();
    write_bitshuffle_data(&file);
    path
}

fn write_bitshuffle_data(file: &hdf5::File) {
    let data: Vec<f32> = (0..64).map(|i| i as f32).collect();
    let float = hdf5::Datatype::from_type::<f32>().unwrap();
    create_with_filter(file, "bitshuffle_data", &float, &[64], &[16], 32008, &[], |dataset| {
        // SAFETY: `data` holds 64 native floats, the dataset's whole extent.
        unsafe {
            hdf5_sys::h5d::H5Dwrite(
                dataset,
                float.id(),
                hdf5_sys::h5s::H5S_ALL,
                hdf5_sys::h5s::H5S_ALL,
                hdf5_sys::h5p::H5P_DEFAULT,
                data.as_ptr().cast(),
            )
        }
    });
}

/// Creates a chunked dataset whose creation property list `configure` sets up, and lets `write` fill it.
fn create_chunked(
    file: &hdf5::File,
    name: &str,
    datatype: &hdf5::Datatype,
    shape: &[u64],
    chunk: &[u64],
    configure: impl FnOnce(hdf5_sys::h5i::hid_t) -> bool,
    write: impl FnOnce(hdf5_sys::h5i::hid_t) -> hdf5_sys::h5::herr_t,
) {
    use hdf5_sys::{h5d, h5p, h5s};
    let name = std::ffi::CString::new(name).unwrap();
    let _guard = hdf5_sys::LOCK.lock();
    // SAFETY: every id is checked before use and closed after; pointers outlive the calls.
    unsafe {
        let space = h5s::H5Screate_simple(shape.len() as i32, shape.as_ptr(), std::ptr::null());
        let dcpl = h5p::H5Pcreate(*h5p::H5P_CLS_DATASET_CREATE);
        assert!(space >= 0 && dcpl >= 0, "H5Screate_simple / H5Pcreate failed");
        assert!(h5p::H5Pset_chunk(dcpl, chunk.len() as i32, chunk.as_ptr()) >= 0, "H5Pset_chunk failed");
        assert!(configure(dcpl), "configuring the filters of {name:?} failed");
        let dataset =
            h5d::H5Dcreate2(file.id(), name.as_ptr(), datatype.id(), space, h5p::H5P_DEFAULT, dcpl, h5p::H5P_DEFAULT);
        assert!(dataset >= 0, "H5Dcreate2 {name:?} failed");
        let written = write(dataset);
        h5d::H5Dclose(dataset);
        h5p::H5Pclose(dcpl);
        h5s::H5Sclose(space);
        assert!(written >= 0, "writing {name:?} failed");
    }
}

/// Creates a chunked dataset with one optional filter (which libhdf5 need not have).
#[allow(clippy::too_many_arguments)]
fn create_with_filter(
    file: &hdf5::File,
    name: &str,
    datatype: &hdf5::Datatype,
    shape: &[u64],
    chunk: &[u64],
    filter_id: i32,
    cd_values: &[u32],
    write: impl FnOnce(hdf5_sys::h5i::hid_t) -> hdf5_sys::h5::herr_t,
) {
    let optional = |dcpl| {
        use hdf5_sys::{h5p, h5z};
        // SAFETY: dcpl is an open creation property list; cd_values outlives the call.
        unsafe { h5p::H5Pset_filter(dcpl, filter_id, h5z::H5Z_FLAG_OPTIONAL, cd_values.len(), cd_values.as_ptr()) >= 0 }
    };
    create_chunked(file, name, datatype, shape, chunk, optional, write);
}

/// Monthly file options for an uncompressed file chunked by 10 days (a short last chunk along time).
pub fn monthly_uncompressed_10_days(year: i32, month: u32) -> Monthly {
    Monthly { time_chunk: Some(10), compress: false, ..Monthly::new(year, month) }
}

/// Rows of [`write_long_contiguous`]: a prime, so no slab height divides it and the slab grid along
/// `row` is rectilinear (equal slabs, then a shorter last one).
pub const LONG_CONTIGUOUS_ROWS: usize = 1009;
/// Columns of [`write_long_contiguous`].
pub const LONG_CONTIGUOUS_COLS: usize = 6;

/// A NetCDF-4 file with one contiguous (unchunked, uncompressed) int32 variable `table(row, col)` of
/// 1009 x 6 elements, plus a contiguous float64 coordinate `row(row)`.
pub fn write_long_contiguous(dir: &Path) -> PathBuf {
    let path = dir.join("long_contiguous.nc");
    let (rows, cols) = (LONG_CONTIGUOUS_ROWS, LONG_CONTIGUOUS_COLS);
    let mut f = netcdf::create(&path).unwrap();
    f.add_dimension("row", rows).unwrap();
    f.add_dimension("col", cols).unwrap();
    {
        let mut v = f.add_variable::<f64>("row", &["row"]).unwrap();
        let vals: Vec<f64> = (0..rows).map(|i| i as f64 * 0.125 - 3.0).collect();
        v.put_values(&vals, ..).unwrap();
    }
    {
        let mut v = f.add_variable::<i32>("table", &["row", "col"]).unwrap();
        let vals: Vec<i32> = (0..(rows * cols) as i32).map(|i| i.wrapping_mul(2_654_435_761u32 as i32)).collect();
        v.put_values(&vals, [0..rows, 0..cols]).unwrap();
    }
    f.close().unwrap();
    path
}

/// Shape and chunk shape of the `zstd` dataset of [`write_zstd`].
pub const ZSTD_SHAPE: [usize; 2] = [20, 12];
/// Chunk shape of the `zstd` dataset (edge chunks are partial along both dimensions).
pub const ZSTD_CHUNK: [usize; 2] = [8, 5];

/// A plain HDF5 file with `zstd`, a float64 dataset whose pipeline is the zstd filter (id 32015,
/// level 3, registered optional because this libhdf5 has no zstd plugin) and whose chunks were written
/// with `H5Dwrite_chunk` as zstd frames, and `zstd_twin`, the same values stored contiguous and
/// uncompressed, which libnetcdf can read (it cannot read `zstd` without the plugin).
pub fn write_zstd(dir: &Path) -> PathBuf {
    let path = dir.join("zstd.h5");
    let [ny, nx] = ZSTD_SHAPE;
    let [cy, cx] = ZSTD_CHUNK;
    let value = |y: usize, x: usize| (y * 100 + x) as f64 * 0.75 - 40.0;
    let file = hdf5::File::create(&path).unwrap();
    let twin = ndarray::Array2::from_shape_fn((ny, nx), |(y, x)| value(y, x));
    file.new_dataset_builder().with_data(&twin).create("zstd_twin").unwrap();
    let float = hdf5::Datatype::from_type::<f64>().unwrap();
    let shape = [ny as u64, nx as u64];
    create_with_filter(&file, "zstd", &float, &shape, &[cy as u64, cx as u64], 32015, &[3], |dataset| {
        for y0 in (0..ny).step_by(cy) {
            for x0 in (0..nx).step_by(cx) {
                // HDF5 stores edge chunks at full size; the part outside the extent is padding.
                let mut raw = Vec::with_capacity(cy * cx * 8);
                for y in y0..y0 + cy {
                    for x in x0..x0 + cx {
                        let v = if y < ny && x < nx { value(y, x) } else { 0.0 };
                        raw.extend_from_slice(&v.to_ne_bytes());
                    }
                }
                let frame = zstd::bulk::compress(&raw, 3).unwrap();
                let offset = [y0 as u64, x0 as u64];
                // SAFETY: the dataset id is open; offset and frame outlive the call.
                let status = unsafe {
                    hdf5_sys::h5d::H5Dwrite_chunk(
                        dataset,
                        hdf5_sys::h5p::H5P_DEFAULT,
                        0,
                        offset.as_ptr(),
                        frame.len(),
                        frame.as_ptr().cast(),
                    )
                };
                if status < 0 {
                    return status;
                }
            }
        }
        0
    });
    path
}

/// A plain HDF5 file with `good` (a supported int16 dataset) and `bitshuffle_data` (filter 32008,
/// bitshuffle: not supported by vzarr; registered optional so libhdf5 writes the chunks unfiltered).
pub fn write_partly_unsupported(dir: &Path) -> PathBuf {
    let path = dir.join("partly_unsupported.h5");
    let file = hdf5::File::create(&path).unwrap();
    file.new_dataset_builder().with_data(&ndarray::arr1(&[5i16, -4, 3, -2, 1])).create("good").unwrap();
    write_bitshuffle_data(&file);
    path
}

/// Shape and chunk shape of the `masked` dataset of [`write_masked_chunks`].
pub const MASKED_SHAPE: [usize; 2] = [16, 12];
/// Chunk shape of `masked`: 2 x 3 = 6 chunks.
pub const MASKED_CHUNK: [usize; 2] = [8, 4];

/// A plain HDF5 file with `masked`, an int32 dataset whose pipeline is shuffle + deflate, written chunk
/// by chunk with `H5Dwrite_chunk`: even chunks went through both filters (filter mask 0), odd chunks
/// skipped deflate (filter mask 0b10, as libhdf5 records for an optional filter that did not help), so
/// their stored bytes are only shuffled. libhdf5 (and libnetcdf) read both kinds back.
pub fn write_masked_chunks(dir: &Path) -> PathBuf {
    use vzarr::dataset::{Codec, CodecChain, Endian};
    let path = dir.join("masked.h5");
    let [ny, nx] = MASKED_SHAPE;
    let [cy, cx] = MASKED_CHUNK;
    let file = hdf5::File::create(&path).unwrap();
    let int = hdf5::Datatype::from_type::<i32>().unwrap();
    let bytes = Codec::Bytes { endian: Some(Endian::Little) };
    let shuffle = Codec::Shuffle { element_size: 4 };
    let both = CodecChain::new(vec![bytes.clone(), shuffle.clone(), Codec::Zlib { level: 6 }]).unwrap();
    let only_shuffle = CodecChain::new(vec![bytes, shuffle]).unwrap();
    let shape = [ny as u64, nx as u64];
    let shuffle_deflate = |dcpl| {
        // SAFETY: dcpl is an open creation property list.
        unsafe { hdf5_sys::h5p::H5Pset_shuffle(dcpl) >= 0 && hdf5_sys::h5p::H5Pset_deflate(dcpl, 6) >= 0 }
    };
    create_chunked(&file, "masked", &int, &shape, &[cy as u64, cx as u64], shuffle_deflate, |dataset| {
        let mut k = 0u32;
        for y0 in (0..ny).step_by(cy) {
            for x0 in (0..nx).step_by(cx) {
                let raw: Vec<u8> = (y0..y0 + cy)
                    .flat_map(|y| (x0..x0 + cx).map(move |x| (y * 1000 + x) as i32 * 7 - 3000))
                    .flat_map(i32::to_le_bytes)
                    .collect();
                let mask = if k.is_multiple_of(2) { 0 } else { 0b10 };
                let stored = if mask == 0 { both.encode(&raw, 4) } else { only_shuffle.encode(&raw, 4) }.unwrap();
                let offset = [y0 as u64, x0 as u64];
                // SAFETY: the dataset id is open; offset and stored outlive the call.
                let status = unsafe {
                    hdf5_sys::h5d::H5Dwrite_chunk(
                        dataset,
                        hdf5_sys::h5p::H5P_DEFAULT,
                        mask,
                        offset.as_ptr(),
                        stored.len(),
                        stored.as_ptr().cast(),
                    )
                };
                if status < 0 {
                    return status;
                }
                k += 1;
            }
        }
        0
    });
    path
}

/// A plain HDF5 file with a 1024-byte user block before the superblock: `chunked` (deflate) and
/// `contiguous`. libhdf5 before 1.14.4 reports chunk addresses relative to the end of the user block.
pub fn write_with_userblock(dir: &Path) -> PathBuf {
    let path = dir.join("userblock.h5");
    let file = hdf5::File::with_options().with_fcpl(|p| p.userblock(1024)).create(&path).unwrap();
    let values: Vec<f32> = (0..30 * 20).map(|i| i as f32 * 0.5 - 11.0).collect();
    let array = ndarray::Array2::from_shape_vec((30, 20), values).unwrap();
    file.new_dataset_builder().chunk((7, 8)).deflate(3).with_data(&array).create("chunked").unwrap();
    file.new_dataset_builder().with_data(&array).create("contiguous").unwrap();
    path
}
