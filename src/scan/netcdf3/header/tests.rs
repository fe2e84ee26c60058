//! The header parser against libnetcdf (files written by the `netcdf` crate, read by both), the
//! specification's examples, and proptest fuzzing: random bytes, flipped real headers and generated
//! headers that must round-trip; none may panic.

use super::reader::pad4;
use super::types::{Cdf3Version, Dimension, NC_ATTRIBUTE, NC_DIMENSION, NC_VARIABLE};
use super::*;
use netcdf::types::{FloatType, IntType, NcTypeDescriptor, NcVariableType};
use netcdf::AttributeValue as NcValue;
use proptest::prelude::*;
use proptest::test_runner::{TestCaseResult, TestRunner};
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// One `NC_CHAR` element, for writing char variables through the netcdf crate.
#[repr(transparent)]
#[derive(Clone, Copy)]
struct NcChar(u8);

// SAFETY: `NcChar` is a transparent `u8`, the in-memory layout of `NC_CHAR`.
unsafe impl NcTypeDescriptor for NcChar {
    fn type_descriptor() -> NcVariableType {
        NcVariableType::Char
    }
}

const NREC: usize = 4;

// ----- test-only header encoder (for hand-built and generated headers) -----

/// Writes header fields in a given version's widths.
struct Enc {
    version: Cdf3Version,
    out: Vec<u8>,
}

impl Enc {
    fn new(version: Cdf3Version, numrecs: u64) -> Self {
        let mut e = Enc { version, out: b"CDF".to_vec() };
        e.out.push(version.magic_byte());
        e.count(numrecs);
        e
    }
    fn u32(&mut self, v: u32) -> &mut Self {
        self.out.extend_from_slice(&v.to_be_bytes());
        self
    }
    fn count(&mut self, v: u64) -> &mut Self {
        if self.version == Cdf3Version::Data64 {
            self.out.extend_from_slice(&v.to_be_bytes());
        } else {
            self.u32(v as u32);
        }
        self
    }
    fn offset(&mut self, v: u64) -> &mut Self {
        if self.version == Cdf3Version::Classic {
            self.u32(v as u32);
        } else {
            self.out.extend_from_slice(&v.to_be_bytes());
        }
        self
    }
    fn raw_name(&mut self, name: &[u8]) -> &mut Self {
        self.count(name.len() as u64);
        self.out.extend_from_slice(name);
        self.pad()
    }
    fn name(&mut self, name: &str) -> &mut Self {
        self.raw_name(name.as_bytes())
    }
    fn pad(&mut self) -> &mut Self {
        while !self.out.len().is_multiple_of(4) {
            self.out.push(0);
        }
        self
    }
    fn list(&mut self, tag: u32, n: u64) -> &mut Self {
        self.u32(if n == 0 { 0 } else { tag }).count(n)
    }
    fn attr(&mut self, name: &str, value: &AttrValue) -> &mut Self {
        self.name(name).u32(value.nc_type().code());
        self.count(value.len() as u64);
        let bytes = be_encode(value);
        self.out.extend_from_slice(&bytes);
        self.pad()
    }
    fn len(&self) -> u64 {
        self.out.len() as u64
    }
}

/// Big-endian bytes of all values.
fn be_encode(value: &AttrValue) -> Vec<u8> {
    fn all<T: Copy, const N: usize>(v: &[T], f: fn(T) -> [u8; N]) -> Vec<u8> {
        v.iter().flat_map(|&x| f(x)).collect()
    }
    match value {
        AttrValue::Bytes(v) => all(v, i8::to_be_bytes),
        AttrValue::Text(v) | AttrValue::UBytes(v) => v.clone(),
        AttrValue::Shorts(v) => all(v, i16::to_be_bytes),
        AttrValue::Ints(v) => all(v, i32::to_be_bytes),
        AttrValue::Floats(v) => all(v, f32::to_be_bytes),
        AttrValue::Doubles(v) => all(v, f64::to_be_bytes),
        AttrValue::UShorts(v) => all(v, u16::to_be_bytes),
        AttrValue::UInts(v) => all(v, u32::to_be_bytes),
        AttrValue::Int64s(v) => all(v, i64::to_be_bytes),
        AttrValue::UInt64s(v) => all(v, u64::to_be_bytes),
    }
}

// ----- spec examples -----

#[test]
fn spec_example_empty_file_is_32_bytes() {
    let mut bytes = b"CDF\x01".to_vec();
    bytes.resize(32, 0);
    let h = parse_header(&bytes, 32).unwrap();
    assert_eq!(h.version, Cdf3Version::Classic);
    assert_eq!(h.header_len, 32);
    assert!(h.dimensions.is_empty() && h.attributes.is_empty() && h.variables.is_empty());
    assert_eq!((h.numrecs, h.record_size, h.streaming), (0, 0, false));
}

/// The 92-byte `tiny` file of the spec (`short vx(dim)`, dim = 5, values 3 1 4 1 5).
fn spec_tiny_file() -> Vec<u8> {
    let mut e = Enc::new(Cdf3Version::Classic, 0);
    e.list(NC_DIMENSION, 1).name("dim").count(5);
    e.list(NC_ATTRIBUTE, 0).list(NC_VARIABLE, 1).name("vx").count(1).count(0);
    e.list(NC_ATTRIBUTE, 0).u32(3).count(12).offset(80);
    for v in [3i16, 1, 4, 1, 5, -32767] {
        e.out.extend_from_slice(&v.to_be_bytes());
    }
    e.out
}

#[test]
fn spec_example_tiny_file() {
    let bytes = spec_tiny_file();
    assert_eq!(bytes.len(), 92);
    let h = parse_header(&bytes, 92).unwrap();
    assert_eq!(h.header_len, 80);
    let dim = Dimension { name: "dim".into(), length: 5, is_record: false };
    assert_eq!(h.dimensions, vec![dim]);
    let v = &h.variables[0];
    assert_eq!((v.name.as_str(), v.nc_type, v.vsize, v.begin), ("vx", NcType::Short, 12, 80));
    assert_eq!((v.shape.clone(), v.data_size, v.is_record), (vec![5], 10, false));
    let data = &bytes[80..90];
    let values: Vec<i16> = data.chunks(2).map(|c| i16::from_be_bytes([c[0], c[1]])).collect();
    assert_eq!(values, [3, 1, 4, 1, 5]);
    assert_eq!(v.fill_value(), AttrValue::Shorts(vec![-32767]));
}

// ----- real files written by libnetcdf -----

fn nc_type_of(t: &NcVariableType) -> NcType {
    match t {
        NcVariableType::Char => NcType::Char,
        NcVariableType::Int(IntType::I8) => NcType::Byte,
        NcVariableType::Int(IntType::I16) => NcType::Short,
        NcVariableType::Int(IntType::I32) => NcType::Int,
        NcVariableType::Float(FloatType::F32) => NcType::Float,
        NcVariableType::Float(FloatType::F64) => NcType::Double,
        NcVariableType::Int(IntType::U8) => NcType::UByte,
        NcVariableType::Int(IntType::U16) => NcType::UShort,
        NcVariableType::Int(IntType::U32) => NcType::UInt,
        NcVariableType::Int(IntType::I64) => NcType::Int64,
        NcVariableType::Int(IntType::U64) => NcType::UInt64,
        other => panic!("unexpected netCDF-3 type {other:?}"),
    }
}

/// Our attribute value as the netcdf crate reports it (scalar when one value; text up to NUL).
fn as_nc(value: &AttrValue) -> NcValue {
    fn pick<T: Copy>(v: &[T], one: fn(T) -> NcValue, many: fn(Vec<T>) -> NcValue) -> NcValue {
        if v.len() == 1 {
            one(v[0])
        } else {
            many(v.to_vec())
        }
    }
    match value {
        AttrValue::Bytes(v) => pick(v, NcValue::Schar, NcValue::Schars),
        AttrValue::Text(v) => {
            let end = v.iter().position(|&b| b == 0).unwrap_or(v.len());
            NcValue::Str(String::from_utf8_lossy(&v[..end]).into_owned())
        }
        AttrValue::Shorts(v) => pick(v, NcValue::Short, NcValue::Shorts),
        AttrValue::Ints(v) => pick(v, NcValue::Int, NcValue::Ints),
        AttrValue::Floats(v) => pick(v, NcValue::Float, NcValue::Floats),
        AttrValue::Doubles(v) => pick(v, NcValue::Double, NcValue::Doubles),
        AttrValue::UBytes(v) => pick(v, NcValue::Uchar, NcValue::Uchars),
        AttrValue::UShorts(v) => pick(v, NcValue::Ushort, NcValue::Ushorts),
        AttrValue::UInts(v) => pick(v, NcValue::Uint, NcValue::Uints),
        AttrValue::Int64s(v) => pick(v, NcValue::Longlong, NcValue::Longlongs),
        AttrValue::UInt64s(v) => pick(v, NcValue::Ulonglong, NcValue::Ulonglongs),
    }
}

fn assert_attributes<'a>(ours: &[Attribute], theirs: impl Iterator<Item = netcdf::Attribute<'a>>) {
    let theirs: Vec<(String, NcValue)> = theirs.map(|a| (a.name().to_owned(), a.value().unwrap())).collect();
    let ours: Vec<(String, NcValue)> = ours.iter().map(|a| (a.name.clone(), as_nc(&a.value))).collect();
    assert_eq!(ours, theirs);
}

/// The variable's values read straight from the file at `begin (+ r * record_size)`,
/// converted from big-endian to native order.
fn values_from_file(header: &Header, bytes: &[u8], v: &Variable) -> Vec<u8> {
    let records = if v.is_record { header.numrecs } else { 1 };
    let mut out = Vec::new();
    for r in 0..records {
        let start = (v.begin + r * header.record_size) as usize;
        out.extend_from_slice(&bytes[start..start + v.data_size as usize]);
    }
    if cfg!(target_endian = "little") {
        out.chunks_exact_mut(v.nc_type.size() as usize).for_each(<[u8]>::reverse);
    }
    out
}

/// Parses `path` and compares every field and every variable's bytes with libnetcdf.
fn check_against_libnetcdf(path: &Path) -> (Header, Vec<u8>) {
    let bytes = std::fs::read(path).unwrap();
    let header = parse_header(&bytes, bytes.len() as u64).unwrap();
    let file = netcdf::open(path).unwrap();
    let dims: Vec<Dimension> = file
        .dimensions()
        .map(|d| Dimension { name: d.name(), length: d.len() as u64, is_record: d.is_unlimited() })
        .collect();
    assert_eq!(header.dimensions, dims);
    assert_attributes(&header.attributes, file.attributes());
    let theirs: Vec<netcdf::Variable<'_>> = file.variables().collect();
    assert_eq!(header.variables.len(), theirs.len());
    for (ours, theirs) in header.variables.iter().zip(&theirs) {
        assert_eq!(ours.name, theirs.name());
        let their_dims: Vec<String> = theirs.dimensions().iter().map(|d| d.name()).collect();
        let our_dims: Vec<String> = ours.dim_ids.iter().map(|&i| header.dimensions[i].name.clone()).collect();
        assert_eq!(our_dims, their_dims, "{}", ours.name);
        let their_shape: Vec<u64> = theirs.dimensions().iter().map(|d| d.len() as u64).collect();
        assert_eq!(ours.shape, their_shape, "{}", ours.name);
        assert_eq!(ours.nc_type, nc_type_of(&theirs.vartype()), "{}", ours.name);
        assert_eq!(ours.vsize, pad4(ours.data_size).unwrap(), "{}", ours.name);
        assert!(ours.begin >= header.header_len);
        assert_attributes(&ours.attributes, theirs.attributes());
        let expected = theirs.get_raw_values(..).unwrap();
        assert_eq!(values_from_file(&header, &bytes, ours), expected, "{}", ours.name);
    }
    (header, bytes)
}

/// Asserts that record `record` (or all of a non-record variable) holds the fill value.
fn assert_filled(header: &Header, bytes: &[u8], name: &str, record: Option<u64>) {
    let v = header.variables.iter().find(|v| v.name == name).unwrap();
    let start = (v.begin + record.unwrap_or(0) * header.record_size) as usize;
    let fill = be_encode(&v.fill_value());
    let data = &bytes[start..start + v.data_size as usize];
    assert!(data.chunks(fill.len()).all(|c| c == fill), "{name} record {record:?}");
}

fn put<T: NcTypeDescriptor, E>(f: &mut netcdf::FileMut, name: &str, values: &[T], e: E)
where
    E: TryInto<netcdf::Extents>,
    E::Error: Into<netcdf::Error>,
{
    f.variable_mut(name).unwrap().put_values(values, e).unwrap();
}

/// Writes a file with record and non-record variables of every type the format allows,
/// attributes of every type, and some records left unwritten (fill values).
fn write_mixed(path: &Path, options: netcdf::Options, cdf5: bool) -> netcdf::Result<()> {
    let mut f = netcdf::create_with(path, options)?;
    f.add_unlimited_dimension("time")?;
    f.add_dimension("lat", 3)?;
    f.add_dimension("lon", 5)?;
    f.add_dimension("strlen", 7)?;
    f.add_attribute("title", "mixed test file")?;
    f.add_attribute("empty", "")?;
    f.add_attribute("bytes", vec![-1i8, 2, 3])?;
    f.add_attribute("short", 7i16)?;
    f.add_attribute("ints", vec![1i32, -2])?;
    f.add_attribute("float", 1.5f32)?;
    f.add_attribute("doubles", vec![0.25f64, -1e300, 7.0])?;
    if cdf5 {
        f.add_attribute("ubytes", vec![250u8, 1, 2, 3, 4])?;
        f.add_attribute("ushort", 65000u16)?;
        f.add_attribute("uints", vec![4_000_000_000u32, 5])?;
        f.add_attribute("int64s", vec![i64::MIN, 9])?;
        f.add_attribute("uint64", u64::MAX)?;
    }
    f.add_variable::<f64>("lat", &["lat"])?;
    f.add_variable::<f32>("lon", &["lon"])?.put_attribute("units", "degrees_east")?;
    f.add_variable::<i32>("scalar", &[])?;
    f.add_variable::<i32>("unwritten", &["lat"])?;
    f.add_variable::<NcChar>("names", &["lat", "strlen"])?;
    let mut tas = f.add_variable::<f32>("tas", &["time", "lat", "lon"])?;
    tas.put_attribute("_FillValue", -999f32)?;
    tas.put_attribute("scale", vec![0.5f64, 2.0])?;
    f.add_variable::<i8>("flags", &["time", "lon"])?;
    f.add_variable::<i16>("counts", &["time", "lat"])?;
    f.add_variable::<NcChar>("label", &["time", "strlen"])?;
    f.add_variable::<f64>("total", &["time"])?;
    if cdf5 {
        f.add_variable::<u8>("ub", &["time", "lon"])?;
        f.add_variable::<u16>("us", &["lat"])?;
        f.add_variable::<u32>("ui", &["time"])?;
        f.add_variable::<i64>("i64v", &["time", "lat"])?;
        f.add_variable::<u64>("u64v", &["lon"])?;
    }
    f.enddef()?;
    put(&mut f, "lat", &[10.0f64, 20.0, 30.0], ..);
    put(&mut f, "lon", &[1.0f32, 2.0, 3.0, 4.0, 5.0], ..);
    put(&mut f, "scalar", &[42i32], ..);
    let names: Vec<NcChar> = b"alpha\0\0beta\0\0\0gamma!!".iter().map(|&b| NcChar(b)).collect();
    put(&mut f, "names", &names, ..);
    for r in 0..NREC {
        let x = r as f32;
        if r != 2 {
            let tas: Vec<f32> = (0..15).map(|i| x * 100.0 + i as f32).collect();
            put(&mut f, "tas", &tas, (r, .., ..));
        }
        if r != 3 {
            put(&mut f, "flags", &[r as i8, -1, 2, -3, 4], (r, ..));
        }
        if r != 1 {
            put(&mut f, "counts", &[r as i16, -300, 300], (r, ..));
        }
        if r != 2 {
            let label: Vec<NcChar> = format!("rec{r}xyz").bytes().map(NcChar).collect();
            put(&mut f, "label", &label, (r, ..));
        }
        if r != 0 {
            put(&mut f, "total", &[f64::from(x) * 1.5], [r]);
        }
        if cdf5 {
            if r != 1 {
                put(&mut f, "ub", &[200u8, 1, 2, 3, r as u8], (r, ..));
            }
            if r != 3 {
                put(&mut f, "ui", &[3_000_000_000u32 + r as u32], [r]);
            }
            if r != 0 {
                put(&mut f, "i64v", &[i64::MIN + 1, r as i64, i64::MAX], (r, ..));
            }
        }
    }
    f.close()
}

fn check_mixed(options: netcdf::Options, cdf5: bool, version: Cdf3Version) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mixed.nc");
    write_mixed(&path, options, cdf5).unwrap();
    let (h, bytes) = check_against_libnetcdf(&path);
    assert_eq!((h.version, h.numrecs, h.streaming), (version, NREC as u64, false));
    // tas 60 + flags 5->8 + counts 6->8 + label 7->8 + total 8 (+ ub 5->8, ui 4, i64v 24).
    assert_eq!(h.record_size, if cdf5 { 92 + 36 } else { 92 });
    let f = h.variables.iter().find(|v| v.name == "tas").unwrap();
    assert_eq!(f.fill_value(), AttrValue::Floats(vec![-999.0]));
    assert_filled(&h, &bytes, "tas", Some(2));
    assert_filled(&h, &bytes, "flags", Some(3));
    assert_filled(&h, &bytes, "counts", Some(1));
    assert_filled(&h, &bytes, "label", Some(2));
    assert_filled(&h, &bytes, "total", Some(0));
    assert_filled(&h, &bytes, "unwritten", None);
    if cdf5 {
        assert_filled(&h, &bytes, "ub", Some(1));
        assert_filled(&h, &bytes, "ui", Some(3));
        assert_filled(&h, &bytes, "i64v", Some(0));
        assert_filled(&h, &bytes, "us", None);
        assert_filled(&h, &bytes, "u64v", None);
    }
    let scalar = h.variables.iter().find(|v| v.name == "scalar").unwrap();
    assert_eq!((scalar.shape.len(), scalar.data_size), (0, 4));
}

#[test]
fn classic_cdf1_matches_libnetcdf() {
    check_mixed(netcdf::Options::CLASSIC, false, Cdf3Version::Classic);
}

#[test]
fn offset64_cdf2_matches_libnetcdf() {
    check_mixed(netcdf::Options::_64BIT_OFFSET, false, Cdf3Version::Offset64);
}

#[test]
fn data64_cdf5_matches_libnetcdf() {
    check_mixed(netcdf::Options::_64BIT_DATA, true, Cdf3Version::Data64);
}

/// A file whose only record variable is `T` over (time, x): records are packed.
fn check_single_record_var<T: NcTypeDescriptor + Copy>(
    options: netcdf::Options,
    x: usize,
    value: fn(usize) -> T,
) -> Header {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("single.nc");
    let mut f = netcdf::create_with(&path, options).unwrap();
    f.add_unlimited_dimension("time").unwrap();
    f.add_dimension("x", x).unwrap();
    f.add_variable::<f64>("fixed", &["x"]).unwrap();
    f.add_variable::<T>("v", &["time", "x"]).unwrap();
    f.enddef().unwrap();
    for r in 0..5 {
        let values: Vec<T> = (0..x).map(|i| value(r * x + i)).collect();
        put(&mut f, "v", &values, (r, ..));
    }
    f.close().unwrap();
    check_against_libnetcdf(&path).0
}

#[test]
fn single_short_record_variable_is_packed() {
    let h = check_single_record_var(netcdf::Options::CLASSIC, 3, |i| i as i16 * 7 - 20);
    assert_eq!((h.numrecs, h.record_size, h.variables[1].vsize), (5, 6, 8));
}

#[test]
fn single_byte_and_char_record_variables_are_packed() {
    let h = check_single_record_var(netcdf::Options::CLASSIC, 1, |i| i as i8 - 3);
    assert_eq!((h.record_size, h.variables[1].vsize), (1, 4));
    let h = check_single_record_var(netcdf::Options::_64BIT_OFFSET, 3, |i| NcChar(b'a' + i as u8));
    assert_eq!((h.record_size, h.version), (3, Cdf3Version::Offset64));
    let h = check_single_record_var(netcdf::Options::_64BIT_DATA, 5, |i| i as u16);
    assert_eq!((h.record_size, h.version), (10, Cdf3Version::Data64));
}

#[test]
fn zero_records() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("empty.nc");
    let mut f = netcdf::create_with(&path, netcdf::Options::CLASSIC).unwrap();
    f.add_unlimited_dimension("time").unwrap();
    f.add_dimension("x", 2).unwrap();
    f.add_variable::<i16>("a", &["time", "x"]).unwrap();
    f.add_variable::<f64>("b", &["time"]).unwrap();
    f.add_variable::<f32>("c", &["x"]).unwrap();
    f.enddef().unwrap();
    put(&mut f, "c", &[1.0f32, 2.0], ..);
    f.close().unwrap();
    let (h, _) = check_against_libnetcdf(&path);
    assert_eq!((h.numrecs, h.record_size), (0, 12));
    assert_eq!(h.variables[0].shape, vec![0, 2]);
    assert_eq!(h.dimensions[0], Dimension { name: "time".into(), length: 0, is_record: true });
}

/// Real files shared by the fuzz tests: (CDF-1 mixed, CDF-5 mixed), written once.
fn fixtures() -> &'static [Vec<u8>; 2] {
    static FIXTURES: OnceLock<[Vec<u8>; 2]> = OnceLock::new();
    FIXTURES.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let read = |name: &str, options, cdf5| {
            let path: PathBuf = dir.path().join(name);
            write_mixed(&path, options, cdf5).unwrap();
            std::fs::read(path).unwrap()
        };
        [read("c1.nc", netcdf::Options::CLASSIC, false), read("c5.nc", netcdf::Options::_64BIT_DATA, true)]
    })
}

#[test]
fn streaming_numrecs_is_computed_from_file_length() {
    for (bytes, width) in fixtures().iter().zip([4, 8]) {
        let full = parse_header(bytes, bytes.len() as u64).unwrap();
        let mut streamed = bytes.clone();
        streamed[4..4 + width].fill(0xFF);
        let h = parse_header(&streamed, streamed.len() as u64).unwrap();
        assert!(h.streaming);
        assert_eq!(Header { streaming: false, ..h.clone() }, full);
        // A partial last record is not counted; a longer file has more records.
        let short = streamed.len() as u64 - 1;
        let h = parse_header(&streamed[..short as usize], short).unwrap();
        assert_eq!(h.numrecs, NREC as u64 - 1);
        streamed.resize(streamed.len() + 2 * h.record_size as usize, 0);
        let h = parse_header(&streamed, streamed.len() as u64).unwrap();
        assert_eq!(h.numrecs, NREC as u64 + 2);
    }
}

#[test]
fn every_prefix_asks_for_more_then_parses() {
    let mut inputs = 0;
    for bytes in fixtures() {
        let len = bytes.len() as u64;
        let full = parse_header(bytes, len).unwrap();
        for k in 0..full.header_len as usize {
            match parse_header(&bytes[..k], len) {
                Err(HeaderError::NeedMore { at_least }) => {
                    assert!(at_least > k as u64 && at_least <= full.header_len, "{k}");
                }
                other => panic!("prefix {k}: {other:?}"),
            }
        }
        // The caller's loop: read what is asked for until it parses.
        let mut k = 0;
        let header = loop {
            match parse_header(&bytes[..k], len) {
                Err(HeaderError::NeedMore { at_least }) => k = at_least as usize,
                other => break other.unwrap(),
            }
        };
        assert_eq!(header, full);
        inputs += full.header_len;
    }
    eprintln!("fuzz: prefixes parsed: {inputs}");
}

#[test]
fn every_truncated_file_is_an_error_not_a_panic() {
    let mut inputs = 0;
    for bytes in fixtures() {
        let full = parse_header(bytes, bytes.len() as u64).unwrap();
        let data_end = full
            .variables
            .iter()
            .map(|v| v.begin + if v.is_record { (full.numrecs - 1) * full.record_size } else { 0 } + v.data_size)
            .max()
            .unwrap();
        for k in 0..bytes.len() {
            let result = parse_header(&bytes[..k], k as u64);
            match result {
                Err(HeaderError::Invalid { .. } | HeaderError::BadMagic { .. }) => {
                    assert!((k as u64) < full.header_len, "{k}");
                }
                Err(HeaderError::DataOutOfBounds { file_len, end, .. }) => {
                    assert!(k as u64 >= full.header_len && end > file_len && (k as u64) < data_end);
                }
                Ok(h) => assert!(k as u64 >= data_end && h == full, "{k}"),
                Err(e) => panic!("truncated at {k}: {e}"),
            }
        }
        inputs += bytes.len();
    }
    eprintln!("fuzz: truncated files parsed: {inputs}");
}

// ----- hostile hand-built headers -----

fn err(bytes: &[u8]) -> HeaderError {
    parse_header(bytes, bytes.len() as u64).unwrap_err()
}

fn padded(mut e: Enc, len: usize) -> Vec<u8> {
    e.out.resize(len, 0);
    e.out
}

#[test]
fn huge_counts_fail_before_allocating() {
    let mut e = Enc::new(Cdf3Version::Classic, 0);
    e.list(NC_DIMENSION, 1 << 30);
    let e = err(&padded(e, 100));
    assert!(matches!(e, HeaderError::Invalid { at: 16, .. }), "{e}");
    assert!(e.to_string().contains("1073741824 entries cannot fit in the 84 bytes"), "{e}");
    for n in [1u64 << 40, 1 << 62, u64::MAX] {
        let mut e = Enc::new(Cdf3Version::Data64, 0);
        e.list(NC_DIMENSION, n);
        assert!(matches!(err(&padded(e, 100)), HeaderError::Invalid { at: 24, .. }));
        let mut e = Enc::new(Cdf3Version::Data64, 0);
        e.list(NC_DIMENSION, 1).count(n);
        assert!(matches!(err(&padded(e, 100)), HeaderError::Invalid { at: 24 | 32, .. }));
        let mut e = Enc::new(Cdf3Version::Data64, 0);
        e.list(NC_DIMENSION, 0).list(NC_ATTRIBUTE, 1).name("a").u32(6).count(n);
        assert!(matches!(err(&padded(e, 200)), HeaderError::Invalid { .. }));
    }
    let mut e = Enc::new(Cdf3Version::Classic, 0);
    e.list(NC_DIMENSION, 0).list(NC_ATTRIBUTE, 0).list(NC_VARIABLE, 1).name("v").count(u32::MAX.into());
    let message = err(&padded(e, 100)).to_string();
    assert!(message.contains("variable `v`") && message.contains("at most 1024"), "{message}");
}

/// A CDF-1 header with dims (name, length) and one int variable over `dim_ids` at `begin`.
fn one_var(version: Cdf3Version, dims: &[(&str, u64)], dim_ids: &[u64], ty: u32, begin: u64) -> Vec<u8> {
    let mut e = Enc::new(version, 1);
    e.list(NC_DIMENSION, dims.len() as u64);
    for (name, len) in dims {
        e.name(name).count(*len);
    }
    e.list(NC_ATTRIBUTE, 0).list(NC_VARIABLE, 1).name("v").count(dim_ids.len() as u64);
    for &id in dim_ids {
        e.count(id);
    }
    e.list(NC_ATTRIBUTE, 0).u32(ty).count(4).offset(begin);
    padded(e, 400)
}

/// Old writers (netcdf-c's `nctest` files) counted a terminating NUL in a name's length: the name
/// stops there, as libnetcdf reads it.
#[test]
fn names_stop_at_a_nul_as_libnetcdf_reads_them() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nul.nc");
    std::fs::write(&path, one_var(Cdf3Version::Classic, &[("yy\0", 1)], &[0], 4, 200)).unwrap();
    let (header, _) = check_against_libnetcdf(&path);
    assert_eq!(header.dimensions[0].name, "yy");
}

#[test]
fn inconsistent_variables_are_rejected() {
    let c1 = Cdf3Version::Classic;
    let e = err(&one_var(c1, &[("x", 2)], &[1], 4, 200));
    assert!(e.to_string().contains("dimension id 1 is out of range"), "{e}");
    let e = err(&one_var(c1, &[("t", 0), ("x", 2)], &[1, 0], 4, 200));
    assert!(e.to_string().contains("record dimension `t` is at position 1"), "{e}");
    let e = err(&one_var(c1, &[("t", 0), ("u", 0)], &[0], 4, 200));
    assert!(e.to_string().contains("second record dimension"), "{e}");
    let e = err(&one_var(c1, &[("x", 2)], &[0], 7, 200));
    assert!(e.to_string().contains("only allowed in CDF-5"), "{e}");
    let e = err(&one_var(c1, &[("x", 2)], &[0], 12, 200));
    assert!(e.to_string().contains("unknown nc_type 12"), "{e}");
    let e = err(&one_var(c1, &[("x", 2)], &[0], 4, 8));
    assert!(e.to_string().contains("overlaps the"), "{e}");
    let e = err(&one_var(c1, &[("x", 2)], &[0], 4, 396));
    assert_eq!(e.to_string(), "variable `v`: data at 396..404 lies past the end of the 400-byte file");
    let e = err(&one_var(c1, &[("x/y", 2)], &[0], 4, 200));
    assert!(e.to_string().contains("contains `/`"), "{e}");
    let big = 1u64 << 40;
    let e = err(&one_var(Cdf3Version::Data64, &[("a", big), ("b", big)], &[0, 1], 4, 200));
    assert!(e.to_string().contains("overflows 64 bits"), "{e}");
    // A record variable whose records run past the end (numrecs = 1 here, so 200..1200).
    let e = err(&one_var(c1, &[("t", 0), ("x", 250)], &[0, 1], 4, 200));
    assert!(matches!(e, HeaderError::DataOutOfBounds { start: 200, end: 1200, file_len: 400, .. }), "{e}");
    let ok = parse_header(&one_var(c1, &[("t", 0), ("x", 2)], &[0, 1], 4, 200), 400).unwrap();
    assert_eq!((ok.numrecs, ok.record_size, ok.variables[0].shape.clone()), (1, 8, vec![1, 2]));
}

#[test]
fn bad_magic_names_and_lengths() {
    assert!(matches!(err(b"\x89HDF\r\n\x1a\n"), HeaderError::BadMagic { .. }));
    assert!(matches!(err(b"CDF\x03\0\0\0\0"), HeaderError::BadMagic { .. }));
    assert!(matches!(err(b"CD"), HeaderError::BadMagic { .. }));
    assert!(matches!(parse_header(b"", 100), Err(HeaderError::NeedMore { at_least: 4 })));
    assert!(matches!(parse_header(&[0; 8], 4), Err(HeaderError::Invalid { at: 0, .. })));
    let mut e = Enc::new(Cdf3Version::Classic, 0);
    e.list(NC_DIMENSION, 1).raw_name(b"\xff\xfe").count(3);
    assert!(err(&padded(e, 64)).to_string().contains("not valid UTF-8"));
    let mut e = Enc::new(Cdf3Version::Classic, 0);
    e.list(NC_DIMENSION, 1).raw_name(b"").count(3);
    assert!(err(&padded(e, 64)).to_string().contains("is empty"));
    let mut e = Enc::new(Cdf3Version::Classic, 0);
    e.u32(NC_VARIABLE).count(1);
    assert!(err(&padded(e, 64)).to_string().contains("expected tag 0x0a"));
    // ABSENT written as a tag with a zero count is accepted, as libnetcdf does.
    let mut e = Enc::new(Cdf3Version::Data64, 0);
    e.u32(NC_DIMENSION).count(0).u32(NC_ATTRIBUTE).count(0).u32(NC_VARIABLE).count(0);
    assert_eq!(parse_header(&e.out, e.len()).unwrap().header_len, 48);
}

#[test]
fn default_fill_values_match_the_spec_bit_patterns() {
    assert_eq!(be_encode(&NcType::Byte.default_fill()), [0x81]);
    assert_eq!(be_encode(&NcType::Short.default_fill()), [0x80, 0x01]);
    assert_eq!(be_encode(&NcType::Int.default_fill()), [0x80, 0, 0, 1]);
    assert_eq!(be_encode(&NcType::Float.default_fill()), [0x7C, 0xF0, 0, 0]);
    assert_eq!(be_encode(&NcType::Double.default_fill()), [0x47, 0x9E, 0, 0, 0, 0, 0, 0]);
    for code in 1..=11 {
        let t = NcType::from_code(code).unwrap();
        assert_eq!((t.code(), t.default_fill().nc_type()), (code, t));
        assert_eq!(be_encode(&t.default_fill()).len() as u64, t.size());
    }
    assert_eq!((NcType::from_code(0), NcType::from_code(12)), (None, None));
}

// ----- property tests -----

/// Whatever the result, `NeedMore` must ask for more than was given, within the file.
fn check_contract(bytes: &[u8], file_len: u64) -> Option<Header> {
    match parse_header(bytes, file_len) {
        Err(HeaderError::NeedMore { at_least }) => {
            assert!(at_least > bytes.len() as u64 && at_least <= file_len);
            None
        }
        Err(_) => None,
        Ok(h) => {
            for v in h.variables.iter().filter(|v| !v.is_record || h.numrecs > 0) {
                let records = if v.is_record { h.numrecs - 1 } else { 0 };
                let end = v.begin + records * h.record_size + v.data_size;
                assert!(v.begin >= h.header_len && end <= file_len);
            }
            Some(h)
        }
    }
}

fn attr_value(cdf5: bool) -> impl Strategy<Value = AttrValue> {
    let classic = prop_oneof![
        prop::collection::vec(any::<i8>(), 0..6).prop_map(AttrValue::Bytes),
        prop::collection::vec(any::<u8>(), 0..9).prop_map(AttrValue::Text),
        prop::collection::vec(any::<i16>(), 0..6).prop_map(AttrValue::Shorts),
        prop::collection::vec(any::<i32>(), 0..6).prop_map(AttrValue::Ints),
        prop::collection::vec(any::<i16>().prop_map(f32::from), 0..6).prop_map(AttrValue::Floats),
        prop::collection::vec(any::<i32>().prop_map(f64::from), 0..6).prop_map(AttrValue::Doubles),
    ];
    let extended = prop_oneof![
        prop::collection::vec(any::<u8>(), 0..6).prop_map(AttrValue::UBytes),
        prop::collection::vec(any::<u16>(), 0..6).prop_map(AttrValue::UShorts),
        prop::collection::vec(any::<u32>(), 0..6).prop_map(AttrValue::UInts),
        prop::collection::vec(any::<i64>(), 0..6).prop_map(AttrValue::Int64s),
        prop::collection::vec(any::<u64>(), 0..6).prop_map(AttrValue::UInt64s),
    ];
    if cdf5 {
        prop_oneof![classic, extended].boxed()
    } else {
        classic.boxed()
    }
}

/// A generated header: dims, global attrs, and vars as (name, is_record, other dim
/// indices, type code, attrs, stored vsize).
type VarModel = (String, bool, Vec<usize>, u32, Vec<(String, AttrValue)>, u32);

#[derive(Debug, Clone)]
struct Model {
    version: Cdf3Version,
    numrecs: u64,
    record_dim: Option<usize>,
    dims: Vec<(String, u64)>,
    attrs: Vec<(String, AttrValue)>,
    vars: Vec<VarModel>,
}

fn model() -> impl Strategy<Value = Model> {
    let name = "[a-zA-Z_][a-zA-Z0-9_é.-]{0,7}";
    prop_oneof![Just(Cdf3Version::Classic), Just(Cdf3Version::Offset64), Just(Cdf3Version::Data64)]
        .prop_flat_map(move |version| {
            let cdf5 = version == Cdf3Version::Data64;
            let types = if cdf5 { 1u32..=11 } else { 1u32..=6 };
            let attrs = move || prop::collection::vec((name, attr_value(cdf5)), 0..4);
            let var = (name, any::<bool>(), prop::collection::vec(0usize..4, 0..3), types, attrs(), any::<u32>());
            (
                Just(version),
                0u64..4,
                prop::option::of(0usize..4),
                prop::collection::vec((name, 1u64..5), 1..4),
                attrs(),
                prop::collection::vec(var, 0..5),
            )
        })
        .prop_map(|(version, numrecs, record_dim, mut dims, mut attrs, mut vars)| {
            // Names are unique (the parser refuses duplicates): keep the first of each.
            let mut seen = HashSet::from(["rec".to_string()]);
            dims.retain(|d| seen.insert(d.0.clone()));
            if dims.is_empty() {
                dims.push(("x".into(), 1));
            }
            let mut seen = HashSet::new();
            attrs.retain(|a| seen.insert(a.0.clone()));
            let mut seen = HashSet::new();
            vars.retain(|v| seen.insert(v.0.clone()));
            for v in &mut vars {
                let mut seen = HashSet::new();
                v.4.retain(|a| seen.insert(a.0.clone()));
            }
            let record_dim = record_dim.map(|i| i.min(dims.len()));
            if let Some(i) = record_dim {
                dims.insert(i, ("rec".into(), 0));
            }
            let fixed: Vec<usize> = (0..dims.len()).filter(|&i| Some(i) != record_dim).collect();
            for v in &mut vars {
                v.1 &= record_dim.is_some();
                v.2 = v.2.iter().map(|&k| fixed[k % fixed.len()]).collect();
            }
            Model { version, numrecs, record_dim, dims, attrs, vars }
        })
}

/// Encodes `m` with non-record data first and interleaved records after; returns the file
/// and, per variable, the expected (begin, data size), plus the expected record size.
fn encode(m: &Model) -> (Vec<u8>, Vec<(u64, u64)>, u64) {
    let size = |v: &VarModel| {
        let ty = NcType::from_code(v.3).unwrap();
        v.2.iter().map(|&d| m.dims[d].1).product::<u64>() * ty.size()
    };
    let n_record = m.vars.iter().filter(|v| v.1).count();
    let record_size: u64 =
        m.vars.iter().filter(|v| v.1).map(|v| if n_record == 1 { size(v) } else { pad4(size(v)).unwrap() }).sum();
    let write = |begins: &[u64]| {
        let mut e = Enc::new(m.version, m.numrecs);
        e.list(NC_DIMENSION, m.dims.len() as u64);
        for (name, len) in &m.dims {
            e.name(name).count(*len);
        }
        e.list(NC_ATTRIBUTE, m.attrs.len() as u64);
        for (name, value) in &m.attrs {
            e.attr(name, value);
        }
        e.list(NC_VARIABLE, m.vars.len() as u64);
        for (v, begin) in m.vars.iter().zip(begins) {
            let ids: Vec<usize> = m.record_dim.filter(|_| v.1).into_iter().chain(v.2.iter().copied()).collect();
            e.name(&v.0).count(ids.len() as u64);
            for &i in &ids {
                e.count(i as u64);
            }
            e.list(NC_ATTRIBUTE, v.4.len() as u64);
            for (name, value) in &v.4 {
                e.attr(name, value);
            }
            e.u32(v.3).count(u64::from(v.5)).offset(*begin);
        }
        e.out
    };
    let header_len = write(&vec![0; m.vars.len()]).len() as u64;
    let mut next = header_len;
    let mut layout = vec![(0, 0); m.vars.len()];
    for pass_record in [false, true] {
        for (i, v) in m.vars.iter().enumerate().filter(|(_, v)| v.1 == pass_record) {
            layout[i] = (next, size(v));
            next += pad4(size(v)).unwrap();
        }
    }
    let first_record = layout.iter().zip(&m.vars).find(|(_, v)| v.1).map(|(l, _)| l.0);
    let file_len = first_record.map_or(next, |b| b + m.numrecs * record_size);
    let mut bytes = write(&layout.iter().map(|l| l.0).collect::<Vec<_>>());
    bytes.resize(file_len.max(header_len) as usize, 0);
    (bytes, layout, record_size)
}

/// `cases` cases, without writing regression files into the source tree.
fn config(cases: u32) -> ProptestConfig {
    ProptestConfig { cases, failure_persistence: None, ..ProptestConfig::default() }
}

/// Runs `test` on `cases` inputs from `strategy`; returns how many inputs ran.
fn run_cases<S: Strategy>(cases: u32, strategy: S, test: impl Fn(S::Value) -> TestCaseResult) -> u64 {
    let ran = AtomicU64::new(0);
    let mut runner = TestRunner::new(config(cases));
    let result = runner.run(&strategy, |value| {
        ran.fetch_add(1, Ordering::Relaxed);
        test(value)
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    ran.load(Ordering::Relaxed)
}

#[test]
fn random_bytes_never_panic() {
    let version = prop::sample::select(vec![1u8, 2, 5, 0x44]);
    let body = prop::collection::vec(any::<u8>(), 0..300);
    let ran = run_cases(2000, (version, body, 0u64..1000, 0usize..300), |(version, body, extra, cut)| {
        let mut bytes = b"CDF".to_vec();
        bytes.push(version);
        bytes.extend(body);
        let file_len = bytes.len() as u64 + extra;
        check_contract(&bytes, file_len);
        check_contract(&bytes[..cut.min(bytes.len())], file_len);
        Ok(())
    });
    eprintln!("fuzz: random headers: {} inputs", 2 * ran);
}

#[test]
fn flipped_real_headers_never_panic() {
    let flips = prop::collection::vec((any::<prop::sample::Index>(), 1u8..=255), 1..6);
    let ran = run_cases(2000, (0usize..2, flips), |(which, flips)| {
        let mut bytes = fixtures()[which].clone();
        let header_len = parse_header(&bytes, bytes.len() as u64).unwrap().header_len as usize;
        for (index, mask) in flips {
            bytes[index.index(header_len)] ^= mask;
        }
        check_contract(&bytes, bytes.len() as u64);
        Ok(())
    });
    eprintln!("fuzz: flipped real headers: {ran} inputs");
}

/// Name, value pairs of attributes.
fn pairs(attributes: &[Attribute]) -> Vec<(String, AttrValue)> {
    attributes.iter().map(|a| (a.name.clone(), a.value.clone())).collect()
}

#[test]
fn generated_headers_round_trip() {
    let ran = run_cases(1000, model(), |m| {
        let (bytes, layout, record_size) = encode(&m);
        let h = check_contract(&bytes, bytes.len() as u64).unwrap();
        prop_assert_eq!((h.version, h.numrecs, h.record_size), (m.version, m.numrecs, record_size));
        let length = |l: u64| if l == 0 { m.numrecs } else { l };
        let dims: Vec<_> = m.dims.iter().map(|(n, l)| (n.clone(), length(*l), *l == 0)).collect();
        let got: Vec<_> = h.dimensions.iter().map(|d| (d.name.clone(), d.length, d.is_record)).collect();
        prop_assert_eq!(got, dims);
        prop_assert_eq!(pairs(&h.attributes), m.attrs.clone());
        prop_assert_eq!(h.variables.len(), m.vars.len());
        for ((v, want), (begin, data_size)) in h.variables.iter().zip(&m.vars).zip(&layout) {
            prop_assert_eq!((&v.name, v.is_record, v.nc_type.code()), (&want.0, want.1, want.3));
            prop_assert_eq!((v.vsize, v.begin, v.data_size), (u64::from(want.5), *begin, *data_size));
            let record = want.1.then_some(m.numrecs);
            let shape: Vec<u64> = record.into_iter().chain(want.2.iter().map(|&d| m.dims[d].1)).collect();
            prop_assert_eq!(&v.shape, &shape);
            prop_assert_eq!(pairs(&v.attributes), want.4.clone());
        }
        Ok(())
    });
    eprintln!("fuzz: generated headers round-tripped: {ran} inputs");
}
