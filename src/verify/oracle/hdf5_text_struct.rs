//! The oracle's read of HDF5 compounds with variable-length string or object reference members,
//! which vzarr reads at scan time and stores as structs whose text fields are UTF-32.
//!
//! libhdf5 reads the whole dataset into a memory type built here: the members in file offset order,
//! each string member as a variable-length UTF-8 C string, each reference member as an old-style
//! object reference, every other member in the packed native form the fallback gives compounds.
//! Each element is then laid out as vzarr's struct: a string as its text, a reference as the path of
//! the object libhdf5 dereferences it to (h5py's `f[ref].name`; empty when null), both NUL-padded
//! UTF-32 as wide as the longest value of that member in the dataset (at least one code point). The
//! widths come from the source alone, as the scanner derives them, so a store whose text was cut or
//! padded differently compares unequal.

use std::ffi::{c_char, CStr};

use hdf5_sys::h5d::{H5Dget_type, H5Dread};
use hdf5_sys::h5i::hid_t;
use hdf5_sys::h5p::H5P_DEFAULT;
use hdf5_sys::h5s::H5S_ALL;
use hdf5_sys::h5t::{
    H5T_class_t, H5T_cset_t, H5Tclose, H5Tcopy, H5Tcreate, H5Tequal, H5Tget_class, H5Tget_member_name,
    H5Tget_member_offset, H5Tget_member_type, H5Tget_nmembers, H5Tget_size, H5Tinsert, H5Tis_variable_str, H5Tset_cset,
    H5Tset_size, H5T_C_S1, H5T_STD_REF_OBJ, H5T_VARIABLE,
};

use super::hdf5_memory::{error, member_memory_type, reference_paths};

/// Most bytes of values (and of text) the oracle reads for one such dataset.
const MAX_BYTES: usize = 1 << 30;

/// What one member of the memory type holds.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    /// Bytes copied as libhdf5 converted them (this many).
    Copied(usize),
    /// A C string pointer.
    Text,
    /// An old-style object reference (a file address).
    Reference,
}

/// A dataset's elements in vzarr's layout.
pub(super) struct TextValues {
    /// Every element, in C order.
    pub(super) bytes: Vec<u8>,
    /// Bytes of one element.
    pub(super) size: usize,
    /// The bytes of each text field, in field order.
    pub(super) widths: Vec<u32>,
}

/// The members of the memory type: each one's name and type, and what each holds.
type Members = (Vec<(std::ffi::CString, hid_t)>, Vec<Kind>);

/// The dataset's elements in vzarr's layout, or None when the dataset is no compound with string or
/// reference members.
pub(super) fn read_text_compound(dataset: &hdf5::Dataset) -> Result<Option<TextValues>, netcdf::Error> {
    let count: usize = dataset.shape().iter().product();
    let columns = {
        let _guard = hdf5_sys::LOCK.lock();
        // SAFETY: every id is created here and closed before returning; the buffer holds `count`
        // elements of the memory type's size (checked against MAX_BYTES), and every C string
        // libhdf5 allocated into it is read once and freed with H5free_memory.
        let Some((memory, kinds)) = (unsafe { memory_type(dataset.id()) }) else { return Ok(None) };
        let read = unsafe { read_columns(dataset.id(), memory, &kinds, count) };
        unsafe { H5Tclose(memory) };
        read?
    };
    let file = dataset.file().map_err(error)?;
    let mut fields = Vec::with_capacity(columns.len());
    for column in columns {
        fields.push(match column {
            Column::Bytes(bytes, size) => Field::Bytes(bytes, size),
            Column::Text(values) => Field::text(values),
            Column::References(addresses) => Field::text(reference_paths(&file, &addresses)?),
        });
    }
    let size: usize = fields.iter().map(Field::size).sum();
    if count.saturating_mul(size) > MAX_BYTES {
        return Err(error(format!("{count} elements of {size} bytes are more than verify reads")));
    }
    let mut out = Vec::with_capacity(count * size);
    for i in 0..count {
        for field in &fields {
            field.put(i, &mut out);
        }
    }
    let widths = fields.iter().filter(|f| matches!(f, Field::Text(..))).map(|f| f.size() as u32).collect();
    Ok(Some(TextValues { bytes: out, size, widths }))
}

/// One member's values as read.
enum Column {
    /// Native bytes, this many an element.
    Bytes(Vec<u8>, usize),
    Text(Vec<String>),
    References(Vec<u64>),
}

/// One member's values in vzarr's layout.
enum Field {
    Bytes(Vec<u8>, usize),
    /// Each value's code points, and the width in code points.
    Text(Vec<Vec<char>>, usize),
}

impl Field {
    fn text(values: Vec<String>) -> Field {
        let values: Vec<Vec<char>> = values.iter().map(|v| v.chars().collect()).collect();
        let width = values.iter().map(Vec::len).max().unwrap_or(0).max(1);
        Field::Text(values, width)
    }

    fn size(&self) -> usize {
        match self {
            Field::Bytes(_, size) => *size,
            Field::Text(_, width) => 4 * width,
        }
    }

    /// Appends element `i`'s bytes (native byte order) to `out`.
    fn put(&self, i: usize, out: &mut Vec<u8>) {
        match self {
            Field::Bytes(bytes, size) => out.extend_from_slice(&bytes[i * size..(i + 1) * size]),
            Field::Text(values, width) => {
                let value = &values[i];
                out.extend(value.iter().flat_map(|&c| u32::from(c).to_ne_bytes()));
                out.resize(out.len() + 4 * (width - value.len()), 0);
            }
        }
    }
}

/// The memory type of the compound `dataset` holds (see the module docs) and what each of its
/// members holds; None when the dataset's type is no compound with a string or reference member.
///
/// # Safety
/// `dataset` must be a valid dataset id; the caller holds the library lock and closes the type.
unsafe fn memory_type(dataset: hid_t) -> Option<(hid_t, Vec<Kind>)> {
    let file_type = H5Dget_type(dataset);
    if file_type < 0 {
        return None;
    }
    let built = (H5Tget_class(file_type) == H5T_class_t::H5T_COMPOUND).then(|| members(file_type)).flatten();
    H5Tclose(file_type);
    let (parts, kinds) = built?;
    let size: usize = parts.iter().map(|&(_, t)| H5Tget_size(t)).sum();
    let memory = H5Tcreate(H5T_class_t::H5T_COMPOUND, size);
    let mut at = 0;
    let mut ok = memory >= 0;
    for (name, t) in &parts {
        ok = ok && H5Tinsert(memory, name.as_ptr(), at, *t) >= 0;
        at += H5Tget_size(*t);
        H5Tclose(*t);
    }
    if !ok {
        if memory >= 0 {
            H5Tclose(memory);
        }
        return None;
    }
    Some((memory, kinds))
}

/// Each member of `compound` in offset order: its name and memory type, and what it holds; None
/// when no member is a string or a reference, or a member has no memory type.
///
/// # Safety
/// `compound` must be a valid compound type id; the caller closes the returned types.
unsafe fn members(compound: hid_t) -> Option<Members> {
    let n = H5Tget_nmembers(compound);
    if n <= 0 {
        return None;
    }
    let mut order: Vec<(usize, u32)> = (0..n as u32).map(|i| (H5Tget_member_offset(compound, i), i)).collect();
    order.sort_unstable();
    let (mut parts, mut kinds) = (Vec::new(), Vec::new());
    for (_, i) in order {
        let member = H5Tget_member_type(compound, i);
        let class = H5Tget_class(member);
        let (t, kind) = if class == H5T_class_t::H5T_STRING && H5Tis_variable_str(member) > 0 {
            let t = H5Tcopy(*H5T_C_S1);
            H5Tset_size(t, H5T_VARIABLE);
            H5Tset_cset(t, H5T_cset_t::H5T_CSET_UTF8);
            (t, Kind::Text)
        } else if class == H5T_class_t::H5T_REFERENCE && H5Tequal(member, *H5T_STD_REF_OBJ) > 0 {
            (H5Tcopy(*H5T_STD_REF_OBJ), Kind::Reference)
        } else {
            let t = member_memory_type(member);
            (t, Kind::Copied(if t < 0 { 0 } else { H5Tget_size(t) }))
        };
        H5Tclose(member);
        let name = H5Tget_member_name(compound, i);
        let owned = (!name.is_null()).then(|| CStr::from_ptr(name).to_owned());
        if !name.is_null() {
            hdf5_sys::h5::H5free_memory(name.cast());
        }
        parts.push((owned.unwrap_or_default(), t));
        kinds.push(kind);
    }
    let usable = parts.iter().all(|&(_, t)| t >= 0) && kinds.iter().any(|k| !matches!(k, Kind::Copied(_)));
    if !usable {
        parts.iter().filter(|&&(_, t)| t >= 0).for_each(|&(_, t)| {
            H5Tclose(t);
        });
        return None;
    }
    Some((parts, kinds))
}

/// Reads `count` elements of the dataset into `memory` and splits them into one column per member.
///
/// # Safety
/// As [`read_text_compound`]'s block: valid ids, the library lock held.
unsafe fn read_columns(
    dataset: hid_t,
    memory: hid_t,
    kinds: &[Kind],
    count: usize,
) -> Result<Vec<Column>, netcdf::Error> {
    let size = H5Tget_size(memory);
    let bytes = count.checked_mul(size).filter(|&b| b <= MAX_BYTES);
    let bytes = bytes.ok_or_else(|| error(format!("{count} elements of {size} bytes are more than verify reads")))?;
    let mut buf = vec![0u8; bytes];
    if H5Dread(dataset, memory, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf.as_mut_ptr().cast()) < 0 {
        return Err(error("H5Dread failed"));
    }
    let width = |k: &Kind| match k {
        Kind::Copied(n) => *n,
        Kind::Text => std::mem::size_of::<*const c_char>(),
        Kind::Reference => std::mem::size_of::<hdf5_sys::h5r::hobj_ref_t>(),
    };
    let mut columns = Vec::with_capacity(kinds.len());
    let mut at = 0;
    let mut text_bytes = 0usize;
    for kind in kinds {
        let n = width(kind);
        let cells = (0..count).map(|e| &buf[e * size + at..e * size + at + n]);
        columns.push(match kind {
            Kind::Copied(_) => Column::Bytes(cells.flat_map(|c| c.iter().copied()).collect(), n),
            Kind::Reference => {
                Column::References(cells.map(|c| u64::from_ne_bytes(c.try_into().unwrap_or([0; 8]))).collect())
            }
            Kind::Text => Column::Text(
                cells
                    .map(|c| {
                        let pointer = std::ptr::read_unaligned(c.as_ptr().cast::<*mut c_char>());
                        if pointer.is_null() {
                            return String::new();
                        }
                        let text = CStr::from_ptr(pointer).to_string_lossy().into_owned();
                        hdf5_sys::h5::H5free_memory(pointer.cast());
                        text_bytes += text.len();
                        text
                    })
                    .collect(),
            ),
        });
        at += n;
    }
    if text_bytes > MAX_BYTES {
        return Err(error(format!("{text_bytes} bytes of strings are more than verify reads")));
    }
    Ok(columns)
}
