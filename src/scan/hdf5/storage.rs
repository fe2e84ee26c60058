//! Raw libhdf5 queries the high-level bindings do not expose: storage layout, filter pipeline, file
//! byte order, fill value bytes, chunk locations and raw (file-order) reads.
//!
//! Every call runs under the bindings' global HDF5 lock (`hdf5_sys::LOCK`), which the netCDF bindings
//! share, so libhdf5 is never entered from two threads at once.

use std::ffi::{c_char, c_int, c_uint, c_void};

use hdf5_sys::h5::{haddr_t, herr_t, hsize_t, HADDR_UNDEF};
use hdf5_sys::h5d::{
    H5D_layout_t, H5Dget_chunk_info_by_coord, H5Dget_create_plist, H5Dget_offset, H5Dget_storage_size, H5Dget_type,
    H5Dread,
};
use hdf5_sys::h5i::hid_t;
use hdf5_sys::h5p::{
    H5Pclose, H5Pget_chunk, H5Pget_external_count, H5Pget_fill_value, H5Pget_filter2, H5Pget_layout, H5Pget_nfilters,
    H5P_DEFAULT,
};
use hdf5_sys::h5s::H5S_ALL;
use hdf5_sys::h5t::{
    H5T_class_t, H5T_direction_t, H5T_order_t, H5T_sign_t, H5Tclose, H5Tget_class, H5Tget_native_type, H5Tget_order,
    H5Tget_sign, H5Tget_size,
};

use crate::codec::Endian;
use crate::metadata::DataType;

/// A failed libhdf5 call: which call, on which dataset.
#[derive(Debug)]
pub(crate) struct RawError(pub(crate) String);

impl std::fmt::Display for RawError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for RawError {}

type RawResult<T> = Result<T, RawError>;

fn check(ret: herr_t, call: &str) -> RawResult<()> {
    if ret < 0 {
        Err(RawError(format!("{call} failed")))
    } else {
        Ok(())
    }
}

/// An hid_t closed on drop.
struct Handle(hid_t, unsafe extern "C" fn(hid_t) -> herr_t);

impl Handle {
    fn new(id: hid_t, close: unsafe extern "C" fn(hid_t) -> herr_t, call: &str) -> RawResult<Self> {
        if id < 0 {
            return Err(RawError(format!("{call} failed")));
        }
        Ok(Handle(id, close))
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        // SAFETY: the id was returned valid by libhdf5 and is closed exactly once, under the lock.
        let _guard = hdf5_sys::LOCK.lock();
        unsafe { (self.1)(self.0) };
    }
}

/// How a dataset's elements are laid out in the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Layout {
    /// Chunked with this chunk shape.
    Chunked(Vec<u64>),
    /// One block at `address` (None: never allocated) of `size` bytes.
    Contiguous { address: Option<u64>, size: u64 },
    /// Stored in the object header.
    Compact,
    /// External files, virtual datasets and other layouts vzarr cannot reference.
    Other(String),
}

/// One filter of the pipeline, in encode order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RawFilter {
    pub(crate) id: i32,
    pub(crate) name: String,
    pub(crate) cd_values: Vec<u32>,
}

/// The element type as stored in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ElementType {
    /// A supported numeric type in this byte order (None for one-byte types).
    Numeric(DataType, Option<Endian>),
    /// Anything else, described for the warning.
    Unsupported(&'static str),
}

/// What vzarr needs to know about one dataset's storage.
#[derive(Debug, Clone)]
pub(crate) struct StorageInfo {
    pub(crate) layout: Layout,
    pub(crate) filters: Vec<RawFilter>,
    pub(crate) element: ElementType,
    /// Fill value bytes in native order (zero when the type is unsupported).
    pub(crate) fill: Vec<u8>,
}

/// Inspects the layout, filters, type and fill value of dataset `ds`.
pub(crate) fn inspect(ds: hid_t) -> RawResult<StorageInfo> {
    let _guard = hdf5_sys::LOCK.lock();
    // SAFETY: `ds` is an open dataset id owned by the caller; every returned id is wrapped in a
    // Handle and closed; buffers passed to libhdf5 are sized as the calls require.
    unsafe {
        let dcpl = Handle::new(H5Dget_create_plist(ds), H5Pclose, "H5Dget_create_plist")?;
        let ftype = Handle::new(H5Dget_type(ds), H5Tclose, "H5Dget_type")?;
        let element = element_type(ftype.0);
        let layout = layout(ds, dcpl.0)?;
        let filters = filters(dcpl.0)?;
        let fill = match element {
            ElementType::Numeric(t, _) => fill_value(dcpl.0, ftype.0, t.size())?,
            ElementType::Unsupported(_) => Vec::new(),
        };
        Ok(StorageInfo { layout, filters, element, fill })
    }
}

unsafe fn element_type(ftype: hid_t) -> ElementType {
    let size = H5Tget_size(ftype);
    let order = match H5Tget_order(ftype) {
        H5T_order_t::H5T_ORDER_LE => Some(Endian::Little),
        H5T_order_t::H5T_ORDER_BE => Some(Endian::Big),
        _ => None,
    };
    let t = match H5Tget_class(ftype) {
        H5T_class_t::H5T_INTEGER => {
            let signed = H5Tget_sign(ftype) != H5T_sign_t::H5T_SGN_NONE;
            match (size, signed) {
                (1, true) => DataType::Int8,
                (2, true) => DataType::Int16,
                (4, true) => DataType::Int32,
                (8, true) => DataType::Int64,
                (1, false) => DataType::UInt8,
                (2, false) => DataType::UInt16,
                (4, false) => DataType::UInt32,
                (8, false) => DataType::UInt64,
                _ => return ElementType::Unsupported("integer of unusual size"),
            }
        }
        H5T_class_t::H5T_FLOAT => match size {
            4 => DataType::Float32,
            8 => DataType::Float64,
            _ => return ElementType::Unsupported("floating point type of unusual size"),
        },
        H5T_class_t::H5T_STRING => return ElementType::Unsupported("string type"),
        H5T_class_t::H5T_VLEN => return ElementType::Unsupported("variable-length type"),
        H5T_class_t::H5T_COMPOUND => return ElementType::Unsupported("compound type"),
        H5T_class_t::H5T_ENUM => return ElementType::Unsupported("enum type"),
        H5T_class_t::H5T_OPAQUE => return ElementType::Unsupported("opaque type"),
        H5T_class_t::H5T_REFERENCE => return ElementType::Unsupported("reference type"),
        _ => return ElementType::Unsupported("unsupported HDF5 type class"),
    };
    match (size, order) {
        (1, _) => ElementType::Numeric(t, None),
        (_, Some(e)) => ElementType::Numeric(t, Some(e)),
        _ => ElementType::Unsupported("mixed or VAX byte order"),
    }
}

unsafe fn layout(ds: hid_t, dcpl: hid_t) -> RawResult<Layout> {
    if H5Pget_external_count(dcpl) > 0 {
        return Ok(Layout::Other("external storage".into()));
    }
    Ok(match H5Pget_layout(dcpl) {
        H5D_layout_t::H5D_CHUNKED => {
            let mut dims = [0 as hsize_t; 32];
            let n = H5Pget_chunk(dcpl, 32, dims.as_mut_ptr());
            if n < 0 {
                return Err(RawError("H5Pget_chunk failed".into()));
            }
            Layout::Chunked(dims[..n as usize].to_vec())
        }
        H5D_layout_t::H5D_CONTIGUOUS => {
            let address = H5Dget_offset(ds);
            let size = H5Dget_storage_size(ds);
            let address = (address != HADDR_UNDEF).then_some(address);
            Layout::Contiguous { address, size }
        }
        H5D_layout_t::H5D_COMPACT => Layout::Compact,
        other => Layout::Other(format!("layout {other:?}")),
    })
}

unsafe fn filters(dcpl: hid_t) -> RawResult<Vec<RawFilter>> {
    let n = H5Pget_nfilters(dcpl);
    if n < 0 {
        return Err(RawError("H5Pget_nfilters failed".into()));
    }
    let mut out = Vec::with_capacity(n as usize);
    for i in 0..n as c_uint {
        let mut flags: c_uint = 0;
        let mut cd_nelmts: usize = 16;
        let mut cd_values = [0 as c_uint; 16];
        let mut name = [0 as c_char; 256];
        let mut config: c_uint = 0;
        let id = H5Pget_filter2(
            dcpl,
            i,
            &mut flags,
            &mut cd_nelmts,
            cd_values.as_mut_ptr(),
            name.len(),
            name.as_mut_ptr(),
            &mut config,
        );
        if id < 0 {
            return Err(RawError("H5Pget_filter2 failed".into()));
        }
        let name = std::ffi::CStr::from_ptr(name.as_ptr()).to_string_lossy().into_owned();
        let count = cd_nelmts.min(cd_values.len());
        out.push(RawFilter { id, name, cd_values: cd_values[..count].to_vec() });
    }
    Ok(out)
}

unsafe fn fill_value(dcpl: hid_t, ftype: hid_t, size: usize) -> RawResult<Vec<u8>> {
    let native =
        Handle::new(H5Tget_native_type(ftype, H5T_direction_t::H5T_DIR_ASCEND), H5Tclose, "H5Tget_native_type")?;
    let mut buf = vec![0u8; size.max(H5Tget_size(native.0))];
    check(H5Pget_fill_value(dcpl, native.0, buf.as_mut_ptr().cast()), "H5Pget_fill_value")?;
    buf.truncate(size);
    Ok(buf)
}

/// A stored chunk as libhdf5 reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct StoredChunk {
    pub(crate) filter_mask: u32,
    pub(crate) address: u64,
    pub(crate) size: u64,
}

/// Looks up the chunk whose first element is at `offset` (element coordinates): one B-tree lookup.
/// Returns None when the chunk was never written.
pub(crate) fn chunk_by_coord(ds: hid_t, offset: &[u64]) -> RawResult<Option<StoredChunk>> {
    let _guard = hdf5_sys::LOCK.lock();
    let mut mask: c_uint = 0;
    let mut addr: haddr_t = HADDR_UNDEF;
    let mut size: hsize_t = 0;
    // SAFETY: `offset` has one entry per dataset dimension, as H5Dget_chunk_info_by_coord reads.
    let ret = unsafe { H5Dget_chunk_info_by_coord(ds, offset.as_ptr(), &mut mask, &mut addr, &mut size) };
    check(ret, "H5Dget_chunk_info_by_coord")?;
    Ok((addr != HADDR_UNDEF).then_some(StoredChunk { filter_mask: mask, address: addr, size }))
}

type ChunkIterOp = unsafe extern "C" fn(*const hsize_t, c_uint, haddr_t, hsize_t, *mut c_void) -> c_int;
type ChunkIterFn = unsafe extern "C" fn(hid_t, hid_t, Option<ChunkIterOp>, *mut c_void) -> herr_t;

/// `H5Dchunk_iter` when the loaded libhdf5 has it (1.10.10+, 1.12.3+, 1.14+), found at run time so
/// one binary works with any libhdf5.
fn chunk_iter_fn() -> Option<ChunkIterFn> {
    static FOUND: std::sync::OnceLock<Option<usize>> = std::sync::OnceLock::new();
    let addr = *FOUND.get_or_init(|| {
        if std::env::var_os("VZARR_HDF5_CHUNK_LOOKUP").is_some_and(|v| v == "coord") {
            return None;
        }
        // SAFETY: dlsym with RTLD_DEFAULT and a NUL-terminated name only looks a symbol up.
        let ptr = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"H5Dchunk_iter".as_ptr()) };
        (!ptr.is_null()).then_some(ptr as usize)
    });
    // SAFETY: the symbol is libhdf5's H5Dchunk_iter, whose C signature ChunkIterFn mirrors.
    addr.map(|a| unsafe { std::mem::transmute::<usize, ChunkIterFn>(a) })
}

/// Whether chunk locations come from one `H5Dchunk_iter` pass (true) or per-chunk lookups.
pub(crate) fn has_chunk_iter() -> bool {
    chunk_iter_fn().is_some()
}

struct IterState<'a> {
    visit: &'a mut dyn FnMut(&[u64], StoredChunk),
    ndim: usize,
}

unsafe extern "C" fn iter_callback(
    offset: *const hsize_t,
    filter_mask: c_uint,
    addr: haddr_t,
    size: hsize_t,
    data: *mut c_void,
) -> c_int {
    // SAFETY: `data` is the IterState passed to H5Dchunk_iter below; `offset` has ndim entries.
    let state = &mut *data.cast::<IterState<'_>>();
    let offset = std::slice::from_raw_parts(offset, state.ndim);
    let visit = std::panic::AssertUnwindSafe(|| {
        (state.visit)(offset, StoredChunk { filter_mask, address: addr, size });
    });
    match std::panic::catch_unwind(visit) {
        Ok(()) => 0,
        Err(_) => -1,
    }
}

/// Visits every written chunk once with `H5Dchunk_iter`, passing its element offset. Returns
/// Ok(false) when the linked libhdf5 has no chunk iteration (use [`chunk_by_coord`] instead).
pub(crate) fn visit_chunks(ds: hid_t, ndim: usize, visit: &mut dyn FnMut(&[u64], StoredChunk)) -> RawResult<bool> {
    let Some(iter) = chunk_iter_fn() else {
        return Ok(false);
    };
    let mut state = IterState { visit, ndim };
    let _guard = hdf5_sys::LOCK.lock();
    // SAFETY: the callback only touches `state`, which outlives the call, and never unwinds.
    let ret = unsafe { iter(ds, H5P_DEFAULT, Some(iter_callback), (&mut state as *mut IterState<'_>).cast()) };
    check(ret, "H5Dchunk_iter")?;
    Ok(true)
}

/// The linked libhdf5's version (major, minor, release).
pub(crate) fn library_version() -> (u32, u32, u32) {
    let (mut major, mut minor, mut release) = (0, 0, 0);
    let _guard = hdf5_sys::LOCK.lock();
    // SAFETY: H5get_libversion only writes the three integers.
    unsafe { hdf5_sys::h5::H5get_libversion(&mut major, &mut minor, &mut release) };
    (major, minor, release)
}

/// Whether the chunk addresses libhdf5 reports leave out the file's user block: true before 1.14.4
/// (HDF Group issue 3003, fixed by pull request 4236), for both `H5Dchunk_iter` and
/// `H5Dget_chunk_info_by_coord`. `H5Dget_offset` always included it.
pub(crate) fn chunk_addresses_skip_userblock() -> bool {
    library_version() < (1, 14, 4)
}

/// Reads the whole dataset in its file byte order (no type conversion): `len` bytes.
pub(crate) fn read_file_order(ds: hid_t, len: usize) -> RawResult<Vec<u8>> {
    let _guard = hdf5_sys::LOCK.lock();
    let mut buf = vec![0u8; len];
    // SAFETY: the memory type is the file type, so libhdf5 writes exactly `len` bytes (the caller
    // computes len = elements * type size).
    unsafe {
        let ftype = Handle::new(H5Dget_type(ds), H5Tclose, "H5Dget_type")?;
        check(H5Dread(ds, ftype.0, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf.as_mut_ptr().cast()), "H5Dread")?;
    }
    Ok(buf)
}
