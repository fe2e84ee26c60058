//! libhdf4 as the oracle: every data set of every fixture read with `SDreaddata` (libmfhdf) equals
//! what vzarr reads through its store.

use std::ffi::{c_char, c_int, c_void, CString};
use std::path::Path;

use vzarr::ScanOptions;

use super::{fixtures, read_back};

// libhdf4 built without its netCDF-2 API (Debian `libhdf4-0-alt`, as `verify` links it: the plain
// libmfhdf's `ncopen`, ... would shadow libnetcdf's). Debian's libmfhdfalt does not record its
// dependency on libdfalt: calling a libdfalt function (`Hishdf`) keeps libdfalt linked.
#[link(name = "libdfalt.so.0", kind = "dylib", modifiers = "+verbatim")]
extern "C" {
    fn Hishdf(name: *const c_char) -> c_int;
    fn HXsetdir(dir: *const c_char) -> c_int;
}

// The SD interface of libmfhdf the HDF4 tests call (the szip tests too: `SDgetcompinfo`,
// `SDgetchunkinfo` and `SDgetdatainfo` locate and describe elements this libhdf4 cannot decode).
#[link(name = "libmfhdfalt.so.0", kind = "dylib", modifiers = "+verbatim")]
extern "C" {
    pub(super) fn SDstart(name: *const c_char, access: i32) -> i32;
    pub(super) fn SDfileinfo(sd: i32, datasets: *mut i32, attributes: *mut i32) -> c_int;
    pub(super) fn SDselect(sd: i32, index: i32) -> i32;
    pub(super) fn SDgetinfo(
        sds: i32,
        name: *mut c_char,
        rank: *mut i32,
        dims: *mut i32,
        nt: *mut i32,
        nattrs: *mut i32,
    ) -> c_int;
    pub(super) fn SDreaddata(sds: i32, start: *mut i32, stride: *mut i32, edge: *mut i32, data: *mut c_void) -> c_int;
    pub(super) fn SDgetcompinfo(sds: i32, coder: *mut c_int, info: *mut i32) -> c_int;
    pub(super) fn SDgetchunkinfo(sds: i32, def: *mut i32, flags: *mut i32) -> c_int;
    pub(super) fn SDgetdatainfo(
        sds: i32,
        chunk: *mut i32,
        start: u32,
        count: u32,
        offsets: *mut i32,
        lengths: *mut i32,
    ) -> c_int;
    pub(super) fn SDattrinfo(obj: i32, index: i32, name: *mut c_char, nt: *mut i32, count: *mut i32) -> c_int;
    pub(super) fn SDendaccess(sds: i32) -> c_int;
    pub(super) fn SDend(sd: i32) -> c_int;
    // Writing (`appended`: data sets appended to in several calls and sessions).
    pub(super) fn SDcreate(sd: i32, name: *const c_char, nt: i32, rank: i32, dims: *const i32) -> i32;
    pub(super) fn SDnametoindex(sd: i32, name: *const c_char) -> i32;
    pub(super) fn SDsetblocksize(sds: i32, size: i32) -> c_int;
    pub(super) fn SDwritedata(
        sds: i32,
        start: *const i32,
        stride: *const i32,
        edge: *const i32,
        data: *const c_void,
    ) -> c_int;
}

const DFACC_READ: i32 = 1;

/// libhdf4 is not thread-safe: the tests of this module (the oracle here, `verify`'s in the library)
/// take turns.
pub(crate) static LIBHDF4: std::sync::Mutex<()> = std::sync::Mutex::new(());
const FAIL: c_int = -1;

/// One data set as libhdf4 reads it: name, shape and native-endian values (`None` when libhdf4
/// cannot read them).
struct Read {
    name: String,
    shape: Vec<u64>,
    bytes: Option<Vec<u8>>,
    /// Each attribute's name and number type (`DFNT_*`).
    attributes: Vec<(String, i32)>,
}

/// Bytes of one value of HDF4 number type `nt` (format flags removed).
fn size_of(nt: i32) -> usize {
    match nt & 0xfff {
        3 | 4 | 20 | 21 => 1,
        22 | 23 => 2,
        5 | 24 | 25 => 4,
        6 | 26 | 27 => 8,
        other => panic!("number type {other}"),
    }
}

/// Every data set of `path` (coordinate variables included) as libhdf4 reads it.
fn libhdf4(path: &Path) -> Vec<Read> {
    let name = CString::new(path.to_str().unwrap()).unwrap();
    let _turn = LIBHDF4.lock().unwrap_or_else(|e| e.into_inner());
    // SAFETY: plain C calls with buffers sized as the library documents (names up to 64 bytes, up to
    // 32 dimensions, data of product(dims) * size bytes).
    unsafe {
        assert_eq!(Hishdf(name.as_ptr()), 1, "{} is not HDF4 to libhdf4", path.display());
        // External files are looked for next to the file (vzarr's rule) before the working directory.
        let dir = CString::new(path.parent().unwrap().to_str().unwrap()).unwrap();
        HXsetdir(dir.as_ptr());
        let sd = SDstart(name.as_ptr(), DFACC_READ);
        assert_ne!(sd, FAIL, "SDstart {}", path.display());
        let (mut count, mut attrs) = (0, 0);
        assert_ne!(SDfileinfo(sd, &mut count, &mut attrs), FAIL);
        let mut out = Vec::new();
        for i in 0..count {
            let sds = SDselect(sd, i);
            assert_ne!(sds, FAIL);
            let mut name = [0 as c_char; 256];
            let (mut rank, mut nt, mut nattrs) = (0, 0, 0);
            let mut dims = [0i32; 32];
            assert_ne!(SDgetinfo(sds, name.as_mut_ptr(), &mut rank, dims.as_mut_ptr(), &mut nt, &mut nattrs), FAIL);
            let shape: Vec<u64> = dims[..rank as usize].iter().map(|&d| d as u64).collect();
            let n: u64 = shape.iter().product();
            let mut bytes = vec![0u8; n as usize * size_of(nt)];
            let mut start = [0i32; 32];
            let mut read = true;
            if n > 0 {
                let data = bytes.as_mut_ptr().cast();
                read = SDreaddata(sds, start.as_mut_ptr(), std::ptr::null_mut(), dims.as_mut_ptr(), data) != FAIL;
            }
            let mut attributes = Vec::new();
            for a in 0..nattrs {
                let mut attr_name = [0 as c_char; 256];
                let (mut attr_nt, mut attr_count) = (0, 0);
                assert_ne!(SDattrinfo(sds, a, attr_name.as_mut_ptr(), &mut attr_nt, &mut attr_count), FAIL);
                let attr_name = std::ffi::CStr::from_ptr(attr_name.as_ptr()).to_string_lossy().into_owned();
                attributes.push((attr_name, attr_nt));
            }
            SDendaccess(sds);
            let name = std::ffi::CStr::from_ptr(name.as_ptr()).to_string_lossy().into_owned();
            out.push(Read { name, shape, bytes: read.then_some(bytes), attributes });
        }
        SDend(sd);
        out
    }
}

/// What libhdf4 makes of a file that may be damaged: `Err` naming what failed (`SDstart`, or
/// `SDgetinfo`/`SDreaddata` of a data set, by name), else every data set's (name, native values).
pub(crate) fn libhdf4_outcome(path: &Path) -> Result<Vec<(String, Vec<u8>)>, String> {
    let name = CString::new(path.to_str().unwrap()).unwrap();
    let _turn = LIBHDF4.lock().unwrap_or_else(|e| e.into_inner());
    // SAFETY: as in `libhdf4`; a number type libhdf4 reports but vzarr has no size for is a refusal
    // here rather than a buffer of a guessed size.
    unsafe {
        let dir = CString::new(path.parent().unwrap().to_str().unwrap()).unwrap();
        HXsetdir(dir.as_ptr());
        let sd = SDstart(name.as_ptr(), DFACC_READ);
        if sd == FAIL {
            return Err("SDstart failed".into());
        }
        let (mut count, mut attrs) = (0, 0);
        let mut out = Vec::new();
        let mut result = Ok(());
        if SDfileinfo(sd, &mut count, &mut attrs) == FAIL {
            result = Err("SDfileinfo failed".to_string());
        }
        for i in 0..count {
            let sds = SDselect(sd, i);
            let mut name = [0 as c_char; 256];
            let (mut rank, mut nt, mut nattrs) = (0, 0, 0);
            let mut dims = [0i32; 32];
            if sds == FAIL
                || SDgetinfo(sds, name.as_mut_ptr(), &mut rank, dims.as_mut_ptr(), &mut nt, &mut nattrs) == FAIL
            {
                result = Err(format!("SDgetinfo of data set {i} failed"));
                break;
            }
            let name = std::ffi::CStr::from_ptr(name.as_ptr()).to_string_lossy().into_owned();
            let size = match nt & 0xfff {
                3 | 4 | 20 | 21 => 1,
                22 | 23 => 2,
                5 | 24 | 25 => 4,
                6 | 26 | 27 => 8,
                other => {
                    result = Err(format!("{name}: number type {other}"));
                    break;
                }
            };
            let n: u64 = dims[..rank as usize].iter().map(|&d| d as u64).product();
            let mut bytes = vec![0u8; n as usize * size];
            let mut start = [0i32; 32];
            let data = bytes.as_mut_ptr().cast();
            if n > 0 && SDreaddata(sds, start.as_mut_ptr(), std::ptr::null_mut(), dims.as_mut_ptr(), data) == FAIL {
                result = Err(format!("{name}: SDreaddata failed"));
                SDendaccess(sds);
                break;
            }
            SDendaccess(sds);
            out.push((name, bytes));
        }
        SDend(sd);
        result.map(|()| out)
    }
}

/// The shape `SDgetinfo` reports for data set `name` of `path` (an unlimited dimension's current
/// extent).
pub(crate) fn libhdf4_shape(path: &Path, name: &str) -> Vec<u64> {
    let read = libhdf4(path).into_iter().find(|r| r.name == name);
    read.unwrap_or_else(|| panic!("{}: no data set {name}", path.display())).shape
}

/// The values of data set `name` of `path` as libhdf4 reads them (native-endian).
pub(crate) fn libhdf4_values(path: &Path, name: &str) -> Vec<u8> {
    let read = libhdf4(path).into_iter().find(|r| r.name == name);
    let read = read.unwrap_or_else(|| panic!("{}: no data set {name}", path.display()));
    read.bytes.unwrap_or_else(|| panic!("{}: libhdf4 cannot read {name}", path.display()))
}

#[test]
fn every_value_of_every_fixture_equals_libhdf4() {
    let options = ScanOptions { skip_unsupported: true, ..Default::default() };
    let mut typed = 0;
    for path in fixtures() {
        let (dataset, arrays) = read_back(&path, &options);
        // Warnings about the whole file (tables, images) name no variable.
        let left_out: Vec<&str> =
            dataset.warnings.iter().map(|w| w.variable.as_str()).filter(|v| !v.is_empty()).collect();
        let expected = libhdf4(&path);
        // A data set a vgroup holds is an array of its group (`vgroups`).
        let groups = super::vgroups::tree(&path).of_dataset;
        let path_of = |name: &str| groups.get(name).map_or(name.to_string(), |g| format!("{g}/{name}"));
        for read in &expected {
            if left_out.contains(&path_of(&read.name).as_str()) {
                eprintln!("{}: {}: left out by vzarr", path.display(), read.name);
                continue;
            }
            let (_, shape, bytes) = arrays
                .iter()
                .find(|(name, ..)| *name == path_of(&read.name))
                .unwrap_or_else(|| panic!("{}: vzarr has no array {}", path.display(), read.name));
            assert_eq!(shape, &read.shape, "{}: {}: shape", path.display(), read.name);
            let theirs =
                read.bytes.as_ref().unwrap_or_else(|| panic!("{}: libhdf4 cannot read {}", path.display(), read.name));
            assert!(bytes == theirs, "{}: {}: values differ from libhdf4's", path.display(), read.name);
            let array = dataset.arrays.iter().find(|a| a.path == path_of(&read.name)).unwrap();
            typed += assert_attribute_types(&path, read, &array.metadata);
        }
        // Beyond libhdf4's data sets, vzarr adds only the coordinates of HDF-EOS2 geographic grids.
        let extra: Vec<&str> = arrays
            .iter()
            .map(|(n, ..)| n.as_str())
            .filter(|n| !expected.iter().any(|r| path_of(&r.name) == *n))
            .collect();
        assert!(extra.iter().all(|n| ["XDim", "YDim"].contains(n)), "{}: extra arrays {extra:?}", path.display());
        assert_eq!(arrays.len() - extra.len(), expected.len() - left_out.len(), "{}: array count", path.display());
    }
    assert!(typed > 0, "the fixtures have typed attributes (scale_factor, valid_range, ...)");
}

/// The attribute types vzarr notes (`zarr.json`'s extension field "vzarr") are libhdf4's number types
/// of the attributes, but for text, the `int64`/`float64` JSON numbers read back as, and a float
/// array's `_FillValue` (a string: xarray's base64 form). Returns how many attributes had a type to
/// note.
fn assert_attribute_types(path: &Path, read: &Read, metadata: &vzarr::dataset::ArrayMetadata) -> usize {
    let expected: std::collections::BTreeMap<&str, &str> = read
        .attributes
        .iter()
        .filter(|(name, _)| !(name == "_FillValue" && metadata.data_type.is_float()))
        .filter_map(|(name, nt)| {
            let t = match nt & 0xfff {
                20 => "int8",
                21 => "uint8",
                22 => "int16",
                23 => "uint16",
                24 => "int32",
                25 => "uint32",
                27 => "uint64",
                5 => "float32",
                _ => return None, // char8/uchar8 text, int64, float64
            };
            Some((name.as_str(), t))
        })
        .collect();
    let ours: std::collections::BTreeMap<&str, &str> =
        metadata.notes.types.iter().map(|(n, t)| (n.as_str(), t.name())).collect();
    assert_eq!(ours, expected, "{}: {}: attribute types", path.display(), read.name);
    expected.len()
}

/// `verify` (libhdf4 as its oracle) on the store of every fixture: every array is proven equal (the
/// coordinates of HDF-EOS2 grids against the structural metadata libhdf4 reads).
#[cfg(feature = "verify")]
#[test]
fn verify_proves_hdf4_stores() {
    use vzarr::pipeline::{write_dataset, Format, Output};
    use vzarr::read::blocking::BlockingStore;
    use vzarr::read::Authorization;
    let runtime = vzarr::pipeline::runtime().unwrap();
    for path in fixtures() {
        let options = ScanOptions { skip_unsupported: true, ..Default::default() };
        let dataset = vzarr::scan_file(&path, &options).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let store_path = dir.path().join("store.vzarr");
        let written = write_dataset(&dataset, &Output::new(&store_path, Format::Native)).unwrap();
        let store = BlockingStore::open(store_path.to_str().unwrap(), &Authorization::new(written.source_containers()))
            .unwrap();
        let _turn = LIBHDF4.lock().unwrap_or_else(|e| e.into_inner());
        let verdicts = runtime
            .block_on(vzarr::verify::verify_store(store.as_async(), &Default::default(), &|_, _, _| {}))
            .unwrap();
        for v in &verdicts {
            assert!(v.ok(), "{}: {}: {v:?}", path.display(), v.path);
        }
        assert_eq!(verdicts.len(), dataset.arrays.len());
    }
}

/// libhdf4 and libnetcdf in one process: `verify` proves an HDF4 store, then a netCDF store, then the
/// HDF4 store again (the plain libmfhdf's netCDF-2 symbols made libnetcdf fail here: "65536 is not a
/// valid cdfid").
#[cfg(feature = "verify")]
#[test]
fn verify_proves_hdf4_and_netcdf_stores_in_one_process() {
    use vzarr::pipeline::{write_dataset, Format, Output};
    use vzarr::read::blocking::BlockingStore;
    use vzarr::read::Authorization;
    let runtime = vzarr::pipeline::runtime().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/sample/tas_2023-01.nc");
    let sources = [super::fixture("types.hdf"), sample, super::fixture("chunked_deflate.hdf")];
    for (i, path) in sources.iter().enumerate() {
        let dataset = vzarr::scan_file(path, &ScanOptions::default()).unwrap();
        let store_path = dir.path().join(format!("store{i}.vzarr"));
        let written = write_dataset(&dataset, &Output::new(&store_path, Format::Native)).unwrap();
        let store = BlockingStore::open(store_path.to_str().unwrap(), &Authorization::new(written.source_containers()))
            .unwrap();
        let _turn = LIBHDF4.lock().unwrap_or_else(|e| e.into_inner());
        let verdicts = runtime
            .block_on(vzarr::verify::verify_store(store.as_async(), &Default::default(), &|_, _, _| {}))
            .unwrap();
        assert_eq!(verdicts.len(), dataset.arrays.len(), "{}", path.display());
        for v in &verdicts {
            assert!(v.ok(), "{}: {}: {v:?}", path.display(), v.path);
        }
    }
}
