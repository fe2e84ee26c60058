//! libhdf4 as the oracle for HDF4 sources (Debian's libnetcdf is built without HDF4): a data set read
//! with the SD interface of libmfhdf (`SDstart`, `SDselect`, `SDreaddata`), independent of vzarr's own
//! HDF4 reader. Part of the `verify` feature.
//!
//! The library linked is the "alt" build of libhdf4 (Debian `libhdf4-0-alt`: `libmfhdfalt.so.0`,
//! `libdfalt.so.0`), configured without libhdf4's netCDF-2 API: the plain `libmfhdf` exports `ncopen`,
//! `ncvarget`, `NC_check_id`, ... which shadow libnetcdf's in one process (libnetcdf then fails with
//! "65536 is not a valid cdfid"), while the alt build renames them (`sd_ncopen`, ...) and shares no
//! exported symbol with libnetcdf or libhdf5. The shared objects are named by their soname (`+verbatim`),
//! so only the runtime package is needed: `libhdf4-alt-dev` conflicts with `libhdf4-dev`, which the
//! fixture tools (`hdf4-tools`) come with, and vzarr declares the few functions it calls itself.
//!
//! The `XDim`/`YDim` coordinates vzarr derives for an HDF-EOS2 geographic grid are not data sets:
//! they are derived again here from the structural metadata as libhdf4 reads it.
//!
//! libhdf4 is not thread-safe: every call holds one process-wide lock. The file last read stays open
//! (or its failure to open is remembered) until another is read or it is forgotten: one `SDstart` per
//! file per verify, not one per array (`SDstart` of a corrupt file can take seconds).

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::path::Path;
use std::sync::{Mutex, OnceLock};

mod szip;

/// Serialises every libhdf4 call.
static LOCK: Mutex<()> = Mutex::new(());

/// The file libhdf4 holds open: its name and `SDstart`'s id, or why it cannot be opened.
static OPEN_FILE: Mutex<Option<(CString, Result<i32, String>)>> = Mutex::new(None);

/// The SD id of `file`, opening it unless it is the file open now (the caller holds the lock).
fn sd_of(file: &CStr) -> Result<i32, netcdf::Error> {
    let mut open = OPEN_FILE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, sd)) = open.as_ref().filter(|(name, _)| name.as_c_str() == file) {
        return sd.clone().map_err(error);
    }
    if let Some((_, Ok(sd))) = open.take() {
        // SAFETY: an id SDstart returned, ended once.
        unsafe { SDend(sd) };
    }
    // SAFETY: a NUL-terminated name; the id is checked.
    let sd = unsafe {
        if Hishdf(file.as_ptr()) != 1 {
            Err(format!("{}: libhdf4 does not read it as HDF4", file.to_string_lossy()))
        } else {
            match SDstart(file.as_ptr(), DFACC_READ) {
                FAIL => Err(format!("{}: libhdf4 cannot open it", file.to_string_lossy())),
                sd => Ok(sd),
            }
        }
    };
    crate::verify::opens::add_opens(1);
    *open = Some((file.to_owned(), sd.clone()));
    sd.map_err(error)
}

/// Closes `file` if libhdf4 holds it open (before a temporary copy of it is removed).
pub(crate) fn forget(file: &str) {
    let _guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let mut open = OPEN_FILE.lock().unwrap_or_else(|e| e.into_inner());
    if open.as_ref().is_some_and(|(name, _)| name.to_bytes() == file.as_bytes()) {
        if let Some((_, Ok(sd))) = open.take() {
            // SAFETY: an id SDstart returned, ended once.
            unsafe { SDend(sd) };
        }
    }
}

// Debian's libmfhdfalt does not record its dependency on libdfalt: calling a libdfalt function
// (`Hishdf`) keeps libdfalt linked under `--as-needed`.
#[link(name = "libdfalt.so.0", kind = "dylib", modifiers = "+verbatim")]
extern "C" {
    fn Hishdf(name: *const c_char) -> c_int;
    fn HXsetdir(dir: *const c_char) -> c_int;
    fn HCget_config_info(coder: c_int, info: *mut u32) -> c_int;
}

#[link(name = "libmfhdfalt.so.0", kind = "dylib", modifiers = "+verbatim")]
extern "C" {
    fn SDstart(name: *const c_char, access: i32) -> i32;
    fn SDnametoindex(sd: i32, name: *const c_char) -> i32;
    fn SDfileinfo(sd: i32, datasets: *mut i32, attributes: *mut i32) -> c_int;
    fn SDselect(sd: i32, index: i32) -> i32;
    fn SDgetinfo(sds: i32, name: *mut c_char, rank: *mut i32, dims: *mut i32, nt: *mut i32, nattrs: *mut i32) -> c_int;
    fn SDreaddata(sds: i32, start: *mut i32, stride: *mut i32, edge: *mut i32, data: *mut c_void) -> c_int;
    fn SDfindattr(id: i32, name: *const c_char) -> i32;
    fn SDattrinfo(id: i32, index: i32, name: *mut c_char, nt: *mut i32, count: *mut i32) -> c_int;
    fn SDreadattr(id: i32, index: i32, data: *mut c_void) -> c_int;
    fn SDgetcomptype(sds: i32, coder: *mut c_int) -> c_int;
    fn SDgetcompinfo(sds: i32, coder: *mut c_int, info: *mut i32) -> c_int;
    fn SDgetchunkinfo(sds: i32, def: *mut i32, flags: *mut i32) -> c_int;
    fn SDgetdatainfo(
        sds: i32,
        chunk: *mut i32,
        start_block: u32,
        count: u32,
        offsets: *mut i32,
        lengths: *mut i32,
    ) -> c_int;
    fn SDendaccess(sds: i32) -> c_int;
    fn SDend(sd: i32) -> c_int;
}

const DFACC_READ: i32 = 1;
const FAIL: c_int = -1;
/// libhdf4's `H4_MAX_VAR_DIMS`.
const MAX_RANK: usize = 32;
/// Longest attribute text read.
const MAX_TEXT: i32 = 1 << 24;

/// The name of the compression method of data set `sds` when the linked libhdf4 cannot decode it
/// (Debian's libhdf4 is built without szip; the caller holds the lock).
fn missing_decoder(sds: i32) -> Option<&'static str> {
    const COMP_DECODER_ENABLED: u32 = 1;
    let mut coder = 0;
    let mut info = 0u32;
    // SAFETY: out-pointers to an int and a u32, as `SDgetcomptype` and `HCget_config_info` take.
    let known = unsafe { SDgetcomptype(sds, &mut coder) != FAIL && HCget_config_info(coder, &mut info) != FAIL };
    let name = match coder {
        1 => "RLE",
        2 => "NBIT",
        3 => "skipping Huffman",
        4 => "deflate",
        5 => "szip",
        7 => "JPEG",
        _ => return None,
    };
    (!known || info & COMP_DECODER_ENABLED == 0).then_some(name)
}

fn error(message: String) -> netcdf::Error {
    netcdf::Error::Str(message)
}

/// One data set of an HDF4 file, by name.
pub(crate) struct Hdf4Dataset {
    file: CString,
    /// The data set's name (the last component of an array path in a vgroup's group).
    name: CString,
    /// Whether the array is in a vgroup's group: the name must then be the only data set of it.
    in_group: bool,
    shape: Vec<u64>,
    number_type: i32,
    /// The values of an HDF-EOS2 grid coordinate (not a data set of the file).
    derived: Option<Vec<f64>>,
    /// Every value of an szip data set this libhdf4 cannot decode, as libaec decoded them.
    by_libaec: OnceLock<Vec<u8>>,
}

/// An open data set, closed when dropped (its file stays open: [`sd_of`]).
struct Open {
    sds: i32,
}

impl Drop for Open {
    fn drop(&mut self) {
        // SAFETY: an id returned by SDselect, closed once.
        unsafe {
            SDendaccess(self.sds);
        }
    }
}

impl Hdf4Dataset {
    /// The data set `name` of the HDF4 file at `file`.
    pub(crate) fn open(file: &Path, name: &str) -> Result<Self, netcdf::Error> {
        let c = |s: &str| CString::new(s).map_err(|_| error(format!("{s}: a NUL in the name")));
        let file = c(&file.to_string_lossy())?;
        let (in_group, last) = (name.contains('/'), name.rsplit('/').next().unwrap_or(name));
        let mut dataset = Hdf4Dataset {
            file,
            name: c(last)?,
            in_group,
            shape: Vec::new(),
            number_type: 0,
            derived: None,
            by_libaec: OnceLock::new(),
        };
        let _guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
        let open = match dataset.select() {
            Ok(open) => open,
            Err(e) => return dataset.grid_coordinate(name).ok_or(e),
        };
        let mut dims = [0i32; MAX_RANK];
        let (mut rank, mut nt, mut nattrs) = (0, 0, 0);
        let mut buf = [0 as c_char; 256];
        // SAFETY: `buf` holds libhdf4's longest name (64) and `dims` its most dimensions.
        let status =
            unsafe { SDgetinfo(open.sds, buf.as_mut_ptr(), &mut rank, dims.as_mut_ptr(), &mut nt, &mut nattrs) };
        if status == FAIL || !(0..=MAX_RANK as i32).contains(&rank) {
            return Err(error(format!("libhdf4 cannot describe {name}")));
        }
        dataset.shape = dims[..rank as usize].iter().map(|&d| d.max(0) as u64).collect();
        dataset.number_type = nt;
        Ok(dataset)
    }

    /// `XDim` or `YDim` of the file's HDF-EOS2 geographic grid (the caller holds the lock).
    fn grid_coordinate(mut self, name: &str) -> Option<Self> {
        let text = struct_metadata(&self.file)?;
        let (lon, lat) = crate::scan::hdf_eos_geo_coordinates(&text)?;
        let values = match name {
            "XDim" => lon,
            "YDim" => lat,
            _ => return None,
        };
        self.shape = vec![values.len() as u64];
        self.number_type = 6;
        self.derived = Some(values);
        Some(self)
    }

    /// Opens the file and selects the data set (the caller holds the lock).
    fn select(&self) -> Result<Open, netcdf::Error> {
        let name = self.name.to_string_lossy();
        let sd = sd_of(&self.file)?;
        // SAFETY: NUL-terminated strings; ids checked before use.
        unsafe {
            if self.in_group && self.count_named(sd) > 1 {
                return Err(error(format!("several data sets named {name}: libhdf4's SD interface cannot tell which")));
            }
            let index = SDnametoindex(sd, self.name.as_ptr());
            let sds = if index == FAIL { FAIL } else { SDselect(sd, index) };
            if sds == FAIL {
                return Err(error(format!("no data set {name} in the HDF4 file")));
            }
            Ok(Open { sds })
        }
    }

    /// How many data sets of file `sd` have this name (the SD interface names them, not their
    /// vgroups: a name in a vgroup's group is compared only when it is the file's only one).
    fn count_named(&self, sd: i32) -> usize {
        let (mut count, mut attributes) = (0, 0);
        // SAFETY: ids checked before use; `buf` holds libhdf4's longest name and `dims` its most
        // dimensions.
        unsafe {
            if SDfileinfo(sd, &mut count, &mut attributes) == FAIL {
                return 0;
            }
            (0..count)
                .filter(|&i| {
                    let sds = SDselect(sd, i);
                    let mut buf = [0 as c_char; 256];
                    let (mut rank, mut nt, mut nattrs, mut dims) = (0, 0, 0, [0i32; MAX_RANK]);
                    let named = sds != FAIL
                        && SDgetinfo(sds, buf.as_mut_ptr(), &mut rank, dims.as_mut_ptr(), &mut nt, &mut nattrs) != FAIL
                        && CStr::from_ptr(buf.as_ptr()) == self.name.as_c_str();
                    if sds != FAIL {
                        SDendaccess(sds);
                    }
                    named
                })
                .count()
        }
    }

    /// The shape and bytes per value, as libhdf4 reads them.
    pub(crate) fn shape(&self) -> Result<(Vec<u64>, usize), netcdf::Error> {
        let size = u32::try_from(self.number_type)
            .ok()
            .and_then(crate::scan::Hdf4NumberType::value_size)
            .map(|n| n as usize)
            .ok_or_else(|| error(format!("HDF4 number type {} has no size here", self.number_type)))?;
        Ok((self.shape.clone(), size))
    }

    /// `counts` values from `starts` along the first dimensions and everything along the others, as
    /// native-endian bytes in C order.
    pub(crate) fn read_box(&self, starts: &[u64], counts: &[u64]) -> Result<Vec<u8>, netcdf::Error> {
        if starts.len() != counts.len() || starts.len() > self.shape.len() {
            return Err(error(format!("a box of rank {} for rank {}", starts.len(), self.shape.len())));
        }
        // Dimensions the box leaves out are read whole.
        let mut origin = starts.to_vec();
        let mut edges = counts.to_vec();
        origin.extend(std::iter::repeat_n(0, self.shape.len() - starts.len()));
        edges.extend_from_slice(&self.shape[counts.len()..]);
        self.read(&origin, &edges)
    }

    /// Every value, as native-endian bytes.
    pub(crate) fn read_all(&self) -> Result<Vec<u8>, netcdf::Error> {
        self.read(&vec![0; self.shape.len()], &self.shape.clone())
    }

    fn read(&self, starts: &[u64], edges: &[u64]) -> Result<Vec<u8>, netcdf::Error> {
        if let Some(values) = &self.derived {
            let (start, count) =
                (starts.first().copied().unwrap_or(0) as usize, edges.first().copied().unwrap_or(0) as usize);
            let slab = values.get(start..start + count).ok_or_else(|| error("past the coordinate's end".into()))?;
            return Ok(slab.iter().flat_map(|v| v.to_ne_bytes()).collect());
        }
        let (_, size) = self.shape()?;
        let values = edges.iter().try_fold(1u64, |n, &e| n.checked_mul(e)).filter(|&n| n <= 1 << 32);
        let values = values.ok_or_else(|| error("a slab too large for libhdf4".into()))?;
        let mut out = vec![0u8; values as usize * size];
        if values == 0 {
            return Ok(out);
        }
        let to_i32 = |v: &[u64]| {
            v.iter()
                .map(|&x| i32::try_from(x).map_err(|_| error("an index past 2^31".into())))
                .collect::<Result<Vec<_>, _>>()
        };
        let (mut start, mut edge) = (to_i32(starts)?, to_i32(edges)?);
        if let Some(all) = self.by_libaec.get() {
            return szip::cut(all, &self.shape, starts, edges, size).map_err(error);
        }
        let _guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
        let open = self.select()?;
        self.find_external_files_next_to_the_file();
        // SAFETY: `out` holds product(edge) values of `size` bytes; start/edge have rank entries.
        let status = unsafe {
            SDreaddata(open.sds, start.as_mut_ptr(), std::ptr::null_mut(), edge.as_mut_ptr(), out.as_mut_ptr().cast())
        };
        if status == FAIL {
            if missing_decoder(open.sds) == Some("szip") {
                // Debian's libhdf4 has no szip: libaec decodes the elements libhdf4 locates.
                let name = self.name.to_string_lossy();
                let all = szip::read_all(&self.file, open.sds, &self.shape, self.number_type, size)
                    .map_err(|why| szip::oracle_error(&name, why))?;
                let all = self.by_libaec.get_or_init(|| all);
                return szip::cut(all, &self.shape, starts, edges, size).map_err(error);
            }
            let why = missing_decoder(open.sds)
                .map(|c| format!(": it is {c}-compressed and this libhdf4 has no {c} decoder"));
            return Err(error(format!(
                "libhdf4 cannot read {}{}",
                self.name.to_string_lossy(),
                why.unwrap_or_default()
            )));
        }
        Ok(out)
    }

    /// Whether this libhdf4 cannot decode the data set because it is szip-compressed, so that its
    /// values are read through libaec instead.
    pub(crate) fn decoded_by_libaec(&self) -> bool {
        if self.derived.is_some() {
            return false;
        }
        let _guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
        self.select().is_ok_and(|open| missing_decoder(open.sds) == Some("szip"))
    }

    /// Makes libhdf4 look for external files in the directory of the file first, as vzarr's scanner
    /// does (`HXsetdir`; the caller holds the lock).
    fn find_external_files_next_to_the_file(&self) {
        let path = Path::new(self.file.to_str().unwrap_or_default());
        let dir = path.parent().and_then(|d| CString::new(d.to_string_lossy().into_owned()).ok());
        if let Some(dir) = dir {
            // SAFETY: a NUL-terminated string, which libhdf4 copies.
            unsafe { HXsetdir(dir.as_ptr()) };
        }
    }

    /// The data set's element type as vzarr names it when it is a plain integer or float (the
    /// character types are none: vzarr may store them as text).
    pub(crate) fn numeric_type(&self) -> Option<crate::metadata::DataType> {
        use crate::metadata::DataType as D;
        Some(match self.number_type & 0xfff {
            21 => D::UInt8,
            20 => D::Int8,
            22 => D::Int16,
            23 => D::UInt16,
            24 => D::Int32,
            25 => D::UInt32,
            5 => D::Float32,
            6 => D::Float64,
            26 => D::Int64,
            27 => D::UInt64,
            _ => return None,
        })
    }

    /// The values as f64, with the `units` and `calendar` attributes.
    pub(crate) fn read_f64(&self) -> Result<crate::verify::TimeValues, netcdf::Error> {
        let bytes = self.read_all()?;
        let data_type = match self.number_type & 0xfff {
            3 | 21 => crate::metadata::DataType::UInt8,
            4 | 20 => crate::metadata::DataType::Int8,
            22 => crate::metadata::DataType::Int16,
            23 => crate::metadata::DataType::UInt16,
            24 => crate::metadata::DataType::Int32,
            25 => crate::metadata::DataType::UInt32,
            5 => crate::metadata::DataType::Float32,
            6 => crate::metadata::DataType::Float64,
            26 => crate::metadata::DataType::Int64,
            27 => crate::metadata::DataType::UInt64,
            nt => return Err(error(format!("HDF4 number type {nt} is not numeric"))),
        };
        if self.derived.is_some() {
            return Ok((data_type.values_to_f64(&bytes), None, None));
        }
        let _guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
        let open = self.select()?;
        Ok((data_type.values_to_f64(&bytes), text_attribute(open.sds, "units"), text_attribute(open.sds, "calendar")))
    }
}

/// `StructMetadata.0` (and `.1`, ... continuing it) of the file, as libhdf4 reads them (the caller
/// holds the lock).
fn struct_metadata(file: &CStr) -> Option<String> {
    let sd = sd_of(file).ok()?;
    let text: String = (0..).map_while(|i| text_attribute(sd, &format!("StructMetadata.{i}"))).collect();
    (!text.is_empty()).then_some(text)
}

/// A text attribute of a file or data set id.
fn text_attribute(id: i32, name: &str) -> Option<String> {
    let cname = CString::new(name).ok()?;
    // SAFETY: the attribute's count is checked before its bytes are read into a buffer of that size.
    unsafe {
        let index = SDfindattr(id, cname.as_ptr());
        if index == FAIL {
            return None;
        }
        let mut buf = [0 as c_char; 256];
        let (mut nt, mut count) = (0, 0);
        if SDattrinfo(id, index, buf.as_mut_ptr(), &mut nt, &mut count) == FAIL
            || !matches!(nt & 0xfff, 3 | 4)
            || !(0..=MAX_TEXT).contains(&count)
        {
            return None;
        }
        let mut text = vec![0u8; count as usize + 1];
        if SDreadattr(id, index, text.as_mut_ptr().cast()) == FAIL {
            return None;
        }
        Some(CStr::from_bytes_until_nul(&text).ok()?.to_string_lossy().into_owned())
    }
}
