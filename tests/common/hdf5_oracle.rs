//! The libhdf5 oracle for the native HDF5 reader: where libhdf5 says each chunk is
//! (`H5Dget_chunk_info_by_coord`, one B-tree lookup) and what it reads for a whole dataset (`H5Dread`
//! into the native type). Never calls vzarr code.

use std::path::Path;

use hdf5_sys::h5::{haddr_t, hsize_t, HADDR_UNDEF};
use hdf5_sys::h5d::{H5Dget_chunk_info_by_coord, H5Dget_type, H5Dread};
use hdf5_sys::h5p::H5P_DEFAULT;
use hdf5_sys::h5s::H5S_ALL;
use hdf5_sys::h5t::{H5T_direction_t, H5Tclose, H5Tget_native_type};

use super::with_hdf5_files;

/// A chunk as libhdf5 reports it: absolute file offset (user block included) and stored size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LibChunk {
    pub offset: u64,
    pub length: u64,
    pub filter_mask: u32,
}

/// Whether libhdf5 (Debian's 1.10) opens `file` and every dataset in it (it opens an HDF5 2.0
/// file but none of its datasets: "bad version number for layout message").
pub fn libhdf5_opens(file: &Path) -> bool {
    fn datasets_open(group: &hdf5::Group) -> bool {
        let (Ok(datasets), Ok(groups)) = (group.datasets(), group.groups()) else { return false };
        datasets.iter().all(|d| d.shape().len() < usize::MAX) && groups.iter().all(datasets_open)
    }
    with_hdf5_files(|| hdf5::File::open(file).is_ok_and(|f| datasets_open(&f)))
}

/// The HDF5 paths of every dataset in `file`, groups walked depth first.
pub fn dataset_paths(file: &Path) -> Vec<String> {
    fn walk(group: &hdf5::Group, out: &mut Vec<String>) {
        for ds in group.datasets().unwrap() {
            out.push(ds.name().trim_start_matches('/').to_string());
        }
        for g in group.groups().unwrap() {
            walk(&g, out);
        }
    }
    with_hdf5_files(|| {
        let f = hdf5::File::open(file).unwrap();
        let mut out = Vec::new();
        walk(&f, &mut out);
        out
    })
}

/// libhdf5's chunk shape of `dataset` (None when not chunked).
pub fn chunk_shape(file: &Path, dataset: &str) -> Option<Vec<u64>> {
    with_hdf5_files(|| {
        let ds = hdf5::File::open(file).unwrap().dataset(dataset).unwrap();
        ds.chunk().map(|c| c.iter().map(|&n| n as u64).collect())
    })
}

/// The chunk whose first element is `origin`, as libhdf5 finds it (None: never written).
pub fn chunk_at(file: &Path, dataset: &str, origin: &[u64]) -> Option<LibChunk> {
    with_hdf5_files(|| {
        let f = hdf5::File::open(file).unwrap();
        let ds = f.dataset(dataset).unwrap();
        let (mut mask, mut addr, mut size): (u32, haddr_t, hsize_t) = (0, HADDR_UNDEF, 0);
        let _guard = hdf5_sys::LOCK.lock();
        // SAFETY: `origin` has one entry per dataset dimension, as the call reads.
        let ret = unsafe { H5Dget_chunk_info_by_coord(ds.id(), origin.as_ptr(), &mut mask, &mut addr, &mut size) };
        assert!(ret >= 0, "{}: {dataset}: H5Dget_chunk_info_by_coord({origin:?}) failed", file.display());
        // libhdf5 before 1.14.4 leaves the user block out of chunk addresses (HDF Group issue 3003).
        let shift = if library_version() < (1, 14, 4) { f.userblock() } else { 0 };
        (addr != HADDR_UNDEF).then(|| LibChunk { offset: addr + shift, length: size, filter_mask: mask })
    })
}

/// The whole dataset read by libhdf5 into its native type, as bytes.
pub fn read_native(file: &Path, dataset: &str, len: usize) -> Vec<u8> {
    try_read_native(file, dataset, len)
        .unwrap_or_else(|| panic!("{}: {dataset}: libhdf5 cannot read it", file.display()))
}

/// As [`read_native`]; None when libhdf5 cannot open the file or the dataset, or cannot read it.
pub fn try_read_native(file: &Path, dataset: &str, len: usize) -> Option<Vec<u8>> {
    with_hdf5_files(|| {
        let ds = hdf5::File::open(file).ok()?.dataset(dataset).ok()?;
        let mut buf = vec![0u8; len];
        let _guard = hdf5_sys::LOCK.lock();
        // SAFETY: the memory type is the dataset's native type, whose size times the element count
        // the caller passes as `len`.
        let ret = unsafe {
            let ftype = H5Dget_type(ds.id());
            let native = H5Tget_native_type(ftype, H5T_direction_t::H5T_DIR_ASCEND);
            let ret = H5Dread(ds.id(), native, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf.as_mut_ptr().cast());
            H5Tclose(native);
            H5Tclose(ftype);
            ret
        };
        (ret >= 0).then_some(buf)
    })
}

/// The whole dataset read by libhdf5 in its own file type with little-endian byte order, as bytes:
/// for types libhdf5 1.10 would widen into a native type (2-byte floats), the values as stored.
pub fn read_as_stored_le(file: &Path, dataset: &str, len: usize) -> Vec<u8> {
    use hdf5_sys::h5t::{H5T_order_t, H5Tcopy, H5Tset_order};
    with_hdf5_files(|| {
        let ds = hdf5::File::open(file).unwrap().dataset(dataset).unwrap();
        let mut buf = vec![0u8; len];
        let _guard = hdf5_sys::LOCK.lock();
        // SAFETY: the memory type is the file type (byte order changed), whose size times the element
        // count the caller passes as `len`.
        let ret = unsafe {
            let ftype = H5Dget_type(ds.id());
            let memory = H5Tcopy(ftype);
            H5Tset_order(memory, H5T_order_t::H5T_ORDER_LE);
            let ret = H5Dread(ds.id(), memory, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf.as_mut_ptr().cast());
            H5Tclose(memory);
            H5Tclose(ftype);
            ret
        };
        assert!(ret >= 0, "{}: {dataset}: H5Dread failed", file.display());
        buf
    })
}

/// The linked libhdf5's version (major, minor, release).
pub fn library_version() -> (u32, u32, u32) {
    let (mut major, mut minor, mut release) = (0, 0, 0);
    // SAFETY: H5get_libversion only writes the three integers.
    unsafe { hdf5_sys::h5::H5get_libversion(&mut major, &mut minor, &mut release) };
    (major, minor, release)
}

/// Attribute `name` of the object at `object` (`""`: the root group) read by libhdf5: numbers as f64.
pub fn attr_numbers(file: &Path, object: &str, name: &str) -> Vec<f64> {
    with_hdf5_files(|| attribute(file, object, name).read_raw::<f64>().unwrap())
}

/// Attribute `name` of the object at `object` read by libhdf5 into its type's native form, as bytes
/// (bitfields, which the hdf5 crate converts to no Rust type, included).
pub fn attr_native(file: &Path, object: &str, name: &str) -> Vec<u8> {
    use hdf5_sys::h5a::{H5Aget_type, H5Aread};
    use hdf5_sys::h5t::H5Tget_size;
    with_hdf5_files(|| {
        let attr = attribute(file, object, name);
        let elements = attr.size();
        let _guard = hdf5_sys::LOCK.lock();
        // SAFETY: both type ids are created and closed here; the buffer holds `elements` values of the
        // native type's size.
        unsafe {
            let ftype = H5Aget_type(attr.id());
            let native = H5Tget_native_type(ftype, H5T_direction_t::H5T_DIR_ASCEND);
            let mut buf = vec![0u8; elements * H5Tget_size(native)];
            let ret = H5Aread(attr.id(), native, buf.as_mut_ptr().cast());
            H5Tclose(native);
            H5Tclose(ftype);
            assert!(ret >= 0, "{}: {object}: attribute {name}: H5Aread failed", file.display());
            buf
        }
    })
}

/// Attribute `name` read by libhdf5 as strings (variable-length UTF-8, or fixed-length, NUL-trimmed).
pub fn attr_strings(file: &Path, object: &str, name: &str) -> Vec<String> {
    use hdf5::types::{FixedAscii, VarLenUnicode};
    with_hdf5_files(|| {
        let attr = attribute(file, object, name);
        match attr.read_raw::<VarLenUnicode>() {
            Ok(v) => v.iter().map(|s| s.as_str().to_string()).collect(),
            Err(_) => attr.read_raw::<FixedAscii<256>>().unwrap().iter().map(|s| s.as_str().to_string()).collect(),
        }
    })
}

/// Every string of variable-length string dataset `dataset`, read by libhdf5, in C order.
pub fn dataset_strings(file: &Path, dataset: &str) -> Vec<String> {
    use hdf5::types::VarLenUnicode;
    with_hdf5_files(|| {
        let ds = hdf5::File::open(file).unwrap().dataset(dataset).unwrap();
        ds.read_raw::<VarLenUnicode>().unwrap().iter().map(|s| s.as_str().to_string()).collect()
    })
}

/// True when libhdf5 reports dataset `dataset`'s fill value as undefined (`H5Pfill_value_defined`).
pub fn fill_value_undefined(file: &Path, dataset: &str) -> bool {
    with_hdf5_files(|| {
        let ds = hdf5::File::open(file).unwrap().dataset(dataset).unwrap();
        ds.dcpl().unwrap().fill_value_defined() == hdf5::plist::dataset_create::FillValue::Undefined
    })
}

/// The members (name, value) of enum dataset `dataset`'s type, as libhdf5 describes it.
pub fn enum_members(file: &Path, dataset: &str) -> Vec<(String, i64)> {
    use hdf5::types::TypeDescriptor;
    with_hdf5_files(|| {
        let ds = hdf5::File::open(file).unwrap().dataset(dataset).unwrap();
        match ds.dtype().unwrap().to_descriptor().unwrap() {
            TypeDescriptor::Enum(e) => e.members.iter().map(|m| (m.name.clone(), m.value as i64)).collect(),
            other => panic!("{dataset} is not an enum: {other:?}"),
        }
    })
}

fn attribute(file: &Path, object: &str, name: &str) -> hdf5::Attribute {
    let f = hdf5::File::open(file).unwrap();
    let found = if object.is_empty() {
        f.attr(name)
    } else {
        match f.dataset(object) {
            Ok(ds) => ds.attr(name),
            Err(_) => f.group(object).unwrap().attr(name),
        }
    };
    found.unwrap_or_else(|e| panic!("{}: {object}: attribute {name}: {e}", file.display()))
}

/// Member `path` (member names from the dataset's compound inward) of every element of the compound
/// dataset `dataset` of `elements` elements, as libhdf5 reads it: the member picked by name through a
/// memory type holding only it, converted to the member type's native form. Below a member of array
/// type the path names one element of the array by its indices, one name per dimension (`c`, `1`,
/// `2` for `c[1, 2]`, as vzarr's nested structs name them): libhdf5 reads the whole array (of the
/// picked member's memory type) and the element's bytes are cut from it. For a dataset of an array
/// datatype of compounds, `elements` counts the compounds (the dataset's elements times the
/// array's), read through an array of that memory type. None when libhdf5 cannot.
pub fn read_member(file: &Path, dataset: &str, path: &[&str], elements: usize) -> Option<Vec<u8>> {
    use hdf5_sys::h5t::{
        H5T_class_t, H5Tarray_create2, H5Tcreate, H5Tget_class, H5Tget_member_index, H5Tget_member_type, H5Tget_size,
        H5Tget_super, H5Tinsert,
    };
    /// One step from the dataset's type inward: a member by name, or one element of an array.
    enum Step {
        Member(std::ffi::CString),
        Element { dims: Vec<u64>, index: u64 },
    }
    with_hdf5_files(|| {
        let ds = hdf5::File::open(file).ok()?.dataset(dataset).ok()?;
        let _guard = hdf5_sys::LOCK.lock();
        // SAFETY: every type id is created here and closed before returning; the buffer holds
        // `elements` values of the picked memory type's size.
        unsafe {
            let mut leaf = H5Dget_type(ds.id());
            let mut outer_array = Vec::new();
            if H5Tget_class(leaf) == H5T_class_t::H5T_ARRAY {
                outer_array = array_dims(leaf)?;
                let base = H5Tget_super(leaf);
                H5Tclose(leaf);
                leaf = base;
            }
            let mut steps = Vec::new();
            let mut names = path.iter();
            while let Some(&name) = names.next() {
                if H5Tget_class(leaf) == H5T_class_t::H5T_ARRAY {
                    let dims = array_dims(leaf)?;
                    let mut index = name.parse::<u64>().ok()?;
                    for &d in &dims[1..] {
                        index = index * d + names.next()?.parse::<u64>().ok()?;
                    }
                    let base = H5Tget_super(leaf);
                    H5Tclose(leaf);
                    leaf = base;
                    steps.push(Step::Element { dims, index });
                    continue;
                }
                let name = std::ffi::CString::new(name).unwrap();
                let index = H5Tget_member_index(leaf, name.as_ptr());
                let member = if index < 0 { -1 } else { H5Tget_member_type(leaf, index as u32) };
                H5Tclose(leaf);
                if member < 0 {
                    return None;
                }
                leaf = member;
                steps.push(Step::Member(name));
            }
            let mut memory = H5Tget_native_type(leaf, H5T_direction_t::H5T_DIR_ASCEND);
            H5Tclose(leaf);
            let size = H5Tget_size(memory);
            let mut offset = 0;
            for step in steps.iter().rev() {
                let outer = match step {
                    Step::Member(name) => {
                        let outer = H5Tcreate(H5T_class_t::H5T_COMPOUND, H5Tget_size(memory));
                        H5Tinsert(outer, name.as_ptr(), 0, memory);
                        outer
                    }
                    Step::Element { dims, index } => {
                        offset += *index as usize * H5Tget_size(memory);
                        H5Tarray_create2(memory, dims.len() as u32, dims.as_ptr())
                    }
                };
                H5Tclose(memory);
                memory = outer;
            }
            let stride = H5Tget_size(memory);
            if !outer_array.is_empty() {
                let outer = H5Tarray_create2(memory, outer_array.len() as u32, outer_array.as_ptr());
                H5Tclose(memory);
                memory = outer;
            }
            let mut buf = vec![0u8; elements * stride];
            let ret = H5Dread(ds.id(), memory, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf.as_mut_ptr().cast());
            H5Tclose(memory);
            (ret >= 0).then(|| buf.chunks_exact(stride).flat_map(|e| e[offset..offset + size].to_vec()).collect())
        }
    })
}

/// The dimensions of array datatype `array`, None when libhdf5 cannot say.
///
/// # Safety
/// `array` must be a valid array datatype id.
unsafe fn array_dims(array: hdf5_sys::h5i::hid_t) -> Option<Vec<u64>> {
    use hdf5_sys::h5t::{H5Tget_array_dims2, H5Tget_array_ndims};
    let rank = H5Tget_array_ndims(array);
    let mut dims = vec![0u64; rank.clamp(0, 32) as usize];
    (rank > 0 && rank <= 32 && H5Tget_array_dims2(array, dims.as_mut_ptr()) >= 0).then_some(dims)
}

/// Member `member` of every element of compound dataset `dataset` as text, as libhdf5 reads it: a
/// variable-length string member through a memory type holding only it as a UTF-8 C string, an
/// object reference member as the path of the object libhdf5 dereferences it to (h5py's
/// `f[ref].name`; empty for a null reference). None when libhdf5 cannot, or the member is neither.
pub fn read_member_text(file: &Path, dataset: &str, member: &str) -> Option<Vec<String>> {
    use hdf5_sys::h5t::{
        H5T_class_t, H5T_cset_t, H5Tcopy, H5Tcreate, H5Tequal, H5Tget_class, H5Tget_member_index, H5Tget_member_type,
        H5Tinsert, H5Tis_variable_str, H5Tset_cset, H5Tset_size, H5T_C_S1, H5T_STD_REF_OBJ, H5T_VARIABLE,
    };
    with_hdf5_files(|| {
        let h5 = hdf5::File::open(file).ok()?;
        let ds = h5.dataset(dataset).ok()?;
        let count: usize = ds.shape().iter().product();
        let name = std::ffi::CString::new(member).ok()?;
        let (words, is_text) = {
            let _guard = hdf5_sys::LOCK.lock();
            // SAFETY: every type id is created here and closed before returning; the buffer holds one
            // 8-byte word (a C string pointer or an object address) per element; each string libhdf5
            // allocated is copied, then freed with H5free_memory.
            unsafe {
                let file_type = H5Dget_type(ds.id());
                let index = H5Tget_member_index(file_type, name.as_ptr());
                let member_type = if index < 0 { -1 } else { H5Tget_member_type(file_type, index as u32) };
                H5Tclose(file_type);
                if member_type < 0 {
                    return None;
                }
                let class = H5Tget_class(member_type);
                let text = class == H5T_class_t::H5T_STRING && H5Tis_variable_str(member_type) > 0;
                let reference = class == H5T_class_t::H5T_REFERENCE && H5Tequal(member_type, *H5T_STD_REF_OBJ) > 0;
                H5Tclose(member_type);
                let leaf = if text {
                    let t = H5Tcopy(*H5T_C_S1);
                    H5Tset_size(t, H5T_VARIABLE);
                    H5Tset_cset(t, H5T_cset_t::H5T_CSET_UTF8);
                    t
                } else if reference {
                    H5Tcopy(*H5T_STD_REF_OBJ)
                } else {
                    return None;
                };
                let memory = H5Tcreate(H5T_class_t::H5T_COMPOUND, 8);
                H5Tinsert(memory, name.as_ptr(), 0, leaf);
                H5Tclose(leaf);
                let mut words = vec![0u64; count];
                let ret = H5Dread(ds.id(), memory, H5S_ALL, H5S_ALL, H5P_DEFAULT, words.as_mut_ptr().cast());
                H5Tclose(memory);
                if ret < 0 {
                    return None;
                }
                let words: Vec<Result<String, u64>> = words
                    .into_iter()
                    .map(|w| match (text, w) {
                        (true, 0) => Ok(String::new()),
                        (true, pointer) => {
                            let pointer = pointer as usize as *mut std::ffi::c_char;
                            let value = std::ffi::CStr::from_ptr(pointer).to_string_lossy().into_owned();
                            hdf5_sys::h5::H5free_memory(pointer.cast());
                            Ok(value)
                        }
                        (false, address) => Err(address),
                    })
                    .collect();
                (words, text)
            }
        };
        if is_text {
            return words.into_iter().collect::<Result<Vec<_>, _>>().ok();
        }
        words
            .into_iter()
            .map(|w| {
                use hdf5::{ObjectReference, ObjectReference1};
                let address = w.err()?;
                if address == 0 {
                    return Some(String::new());
                }
                // SAFETY: `ObjectReference1` is `repr(transparent)` over `hobj_ref_t`, a file address.
                let reference: ObjectReference1 = unsafe { std::mem::transmute_copy(&address) };
                match reference.dereference(&h5).ok()? {
                    hdf5::ReferencedObject::Group(g) => Some(g.name()),
                    hdf5::ReferencedObject::Dataset(d) => Some(d.name()),
                    hdf5::ReferencedObject::Datatype(_) => None,
                }
            })
            .collect()
    })
}
