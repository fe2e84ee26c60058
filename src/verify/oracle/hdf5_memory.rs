//! What verify's two libhdf5 readers share (`hdf5_fallback`, `hdf5_text_struct`): the memory types
//! values are read into, so that their bytes are vzarr's elements in native byte order, the paths
//! object references name, and the form of libhdf5's errors.

use hdf5_sys::h5t::{H5T_direction_t, H5Tclose, H5Tget_native_type, H5Tget_size};

/// An error of libhdf5's, as the oracle reports it.
pub(super) fn error(what: impl std::fmt::Display) -> netcdf::Error {
    netcdf::Error::Str(format!("libhdf5: {what}"))
}

/// The memory type values are read into: the file type's native form, except for 2-byte floats
/// (libhdf5 1.10 has no native half float and would widen them), read as they are in little-endian
/// order, as vzarr stores `float16`, and compounds, whose native form is packed (see the module docs).
///
/// # Safety
/// `file_type` must be a valid datatype id; the caller closes the returned id.
pub(super) unsafe fn memory_type(file_type: hdf5_sys::h5i::hid_t) -> hdf5_sys::h5i::hid_t {
    use hdf5_sys::h5t::{H5T_class_t, H5T_order_t, H5Tcopy, H5Tget_class, H5Tset_order};
    if H5Tget_class(file_type) == H5T_class_t::H5T_FLOAT && H5Tget_size(file_type) == 2 {
        let copy = H5Tcopy(file_type);
        if copy >= 0 {
            H5Tset_order(copy, H5T_order_t::H5T_ORDER_LE);
        }
        return copy;
    }
    if H5Tget_class(file_type) == H5T_class_t::H5T_COMPOUND {
        return packed_native(file_type, 0);
    }
    if H5Tget_class(file_type) == H5T_class_t::H5T_ARRAY {
        return array_native(file_type);
    }
    H5Tget_native_type(file_type, H5T_direction_t::H5T_DIR_ASCEND)
}

/// An array datatype's memory type: an array of the same dimensions of its base type's memory type
/// (a packed compound, a half float as stored; nested arrays likewise, as libhdf5 converts only
/// between arrays of the same dimensions). Its bytes are the base type's elements in C order, the
/// flattened dimensions of [`array_dims`]. -1 on any failure.
///
/// # Safety
/// `array` must be a valid array datatype id; the caller closes the returned id.
unsafe fn array_native(array: hdf5_sys::h5i::hid_t) -> hdf5_sys::h5i::hid_t {
    use hdf5_sys::h5t::{H5Tarray_create2, H5Tget_array_dims2, H5Tget_array_ndims, H5Tget_super};
    let rank = H5Tget_array_ndims(array);
    let mut dims = vec![0u64; rank.clamp(0, 32) as usize];
    if rank <= 0 || rank > 32 || H5Tget_array_dims2(array, dims.as_mut_ptr()) < 0 {
        return -1;
    }
    let base = H5Tget_super(array);
    if base < 0 {
        return -1;
    }
    let memory = memory_type(base);
    H5Tclose(base);
    if memory < 0 {
        return -1;
    }
    let out = H5Tarray_create2(memory, rank as u32, dims.as_ptr());
    H5Tclose(memory);
    out
}

/// Closes every valid type id of `parts`.
///
/// # Safety
/// Each id of `parts` is a valid datatype id or negative.
unsafe fn close_all(parts: &[(u32, hdf5_sys::h5i::hid_t)]) {
    for &(_, t) in parts.iter().filter(|&&(_, t)| t >= 0) {
        H5Tclose(t);
    }
}

/// A compound's native form with its members in file offset order and no padding (nested compounds
/// likewise): the layout of vzarr's `struct` elements. -1 on any failure.
///
/// # Safety
/// `compound` must be a valid compound datatype id; the caller closes the returned id.
unsafe fn packed_native(compound: hdf5_sys::h5i::hid_t, depth: usize) -> hdf5_sys::h5i::hid_t {
    use hdf5_sys::h5t::{
        H5T_class_t, H5Tcreate, H5Tget_member_name, H5Tget_member_offset, H5Tget_member_type, H5Tget_nmembers,
        H5Tinsert,
    };
    let count = H5Tget_nmembers(compound);
    if count <= 0 || depth > crate::metadata::MAX_STRUCT_DEPTH {
        return -1;
    }
    let mut members: Vec<(usize, u32)> = (0..count as u32).map(|i| (H5Tget_member_offset(compound, i), i)).collect();
    members.sort_unstable();
    let mut parts = Vec::with_capacity(members.len());
    for &(_, i) in &members {
        let member = H5Tget_member_type(compound, i);
        let native = nested_memory_type(member, depth + 1);
        H5Tclose(member);
        parts.push((i, native));
    }
    let size: usize = parts.iter().map(|&(_, t)| if t < 0 { 0 } else { H5Tget_size(t) }).sum();
    let packed = if parts.iter().all(|&(_, t)| t >= 0) { H5Tcreate(H5T_class_t::H5T_COMPOUND, size) } else { -1 };
    let mut at = 0;
    for &(i, native) in &parts {
        if packed >= 0 {
            let name = H5Tget_member_name(compound, i);
            let inserted = !name.is_null() && H5Tinsert(packed, name, at, native) >= 0;
            if !name.is_null() {
                hdf5_sys::h5::H5free_memory(name.cast());
            }
            if !inserted {
                H5Tclose(packed);
                close_all(&parts);
                return -1;
            }
            at += H5Tget_size(native);
        }
    }
    close_all(&parts);
    packed
}

/// The memory type of a compound's member: nested compounds packed, `depth` compounds deep.
///
/// # Safety
/// `member` must be a valid datatype id; the caller closes the returned id.
unsafe fn nested_memory_type(member: hdf5_sys::h5i::hid_t, depth: usize) -> hdf5_sys::h5i::hid_t {
    use hdf5_sys::h5t::{H5T_class_t, H5Tget_class};
    match H5Tget_class(member) {
        H5T_class_t::H5T_COMPOUND => packed_native(member, depth),
        // An array member's native form would be an array of padded native compounds.
        H5T_class_t::H5T_ARRAY => array_native(member),
        _ => H5Tget_native_type(member, H5T_direction_t::H5T_DIR_ASCEND),
    }
}

/// The memory type of a member of a top-level compound ([`nested_memory_type`] one level deep).
///
/// # Safety
/// As [`nested_memory_type`].
pub(super) unsafe fn member_memory_type(member: hdf5_sys::h5i::hid_t) -> hdf5_sys::h5i::hid_t {
    nested_memory_type(member, 1)
}

/// The dimensions of an array datatype, nested arrays flattened (empty for any other type).
///
/// # Safety
/// `datatype` must be a valid datatype id.
pub(super) unsafe fn array_dims(datatype: hdf5_sys::h5i::hid_t) -> Vec<u64> {
    use hdf5_sys::h5t::{H5T_class_t, H5Tget_array_dims2, H5Tget_array_ndims, H5Tget_class, H5Tget_super};
    let mut dims = Vec::new();
    let mut current = hdf5_sys::h5t::H5Tcopy(datatype);
    for _ in 0..crate::metadata::MAX_STRUCT_DEPTH {
        if current < 0 || H5Tget_class(current) != H5T_class_t::H5T_ARRAY {
            break;
        }
        let rank = H5Tget_array_ndims(current).max(0) as usize;
        let mut here = vec![0u64; rank.min(32)];
        if rank > here.len() || H5Tget_array_dims2(current, here.as_mut_ptr()) < 0 {
            break;
        }
        dims.extend(here);
        let base = H5Tget_super(current);
        H5Tclose(current);
        current = base;
    }
    if current >= 0 {
        H5Tclose(current);
    }
    dims
}

/// The paths of the objects `addresses` (old-style object references) name, as libhdf5 dereferences
/// them; the empty string for a null reference.
pub(super) fn reference_paths(file: &hdf5::File, addresses: &[u64]) -> Result<Vec<String>, netcdf::Error> {
    use hdf5::{ObjectReference, ObjectReference1};
    addresses
        .iter()
        .map(|&address| {
            if address == 0 {
                return Ok(String::new());
            }
            // SAFETY: `ObjectReference1` is `repr(transparent)` over `hobj_ref_t`, a file address.
            let reference: ObjectReference1 = unsafe { std::mem::transmute_copy(&address) };
            Ok(match reference.dereference(file).map_err(error)? {
                hdf5::ReferencedObject::Group(g) => g.name(),
                hdf5::ReferencedObject::Dataset(d) => d.name(),
                hdf5::ReferencedObject::Datatype(t) => {
                    return Err(error(format!("a reference to a committed datatype ({t:?}) has no path here")))
                }
            })
        })
        .collect()
}
