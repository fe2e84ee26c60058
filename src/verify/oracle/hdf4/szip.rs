//! szip data sets where the linked libhdf4 has no szip decoder (Debian's is built without szip): the
//! values are decoded by libaec's szlib (`SZ_BufftoBuffDecompress`, Debian `libsz2`), the decoder a
//! libhdf4 built with szip calls itself, independent of vzarr's own AEC decoder.
//!
//! libhdf4 still describes the data set: `SDgetcompinfo` gives the szip parameters of its elements
//! (read from their headers), `SDgetchunkinfo` the chunk shape, and `SDgetdatainfo` the offset and
//! length of each element's compressed bytes in the file, which are read from there. Each element is
//! framed as libhdf4's `cszip.c` frames it (`HCIcszip_decode`): with the options-mask bit
//! `SZ_H4_REV_2`, a 5-byte preamble (a flag byte, 1 for values stored as they are, and the big-endian
//! length of what follows); the options mask without that bit goes to szlib. The decoded element holds
//! the file's values (big-endian unless the number type says little-endian), a whole chunk for a chunked
//! data set (edge chunks padded), converted here to native byte order.

use std::ffi::{c_int, c_void};
use std::io::{Read, Seek, SeekFrom};

use super::{error, SDgetchunkinfo, SDgetcompinfo, SDgetdatainfo, FAIL, MAX_RANK};

#[link(name = "libsz.so.2", kind = "dylib", modifiers = "+verbatim")]
extern "C" {
    fn SZ_BufftoBuffDecompress(
        dest: *mut c_void,
        dest_len: *mut usize,
        source: *const c_void,
        source_len: usize,
        param: *mut SzCom,
    ) -> c_int;
}

/// szlib's `SZ_com_t`.
#[repr(C)]
struct SzCom {
    options_mask: c_int,
    bits_per_pixel: c_int,
    pixels_per_block: c_int,
    pixels_per_scanline: c_int,
}

/// The options-mask bit of elements with a preamble.
const SZ_H4_REV_2: i32 = 0x10000;
/// libhdf4's `COMP_CODE_SZIP`.
const COMP_CODE_SZIP: c_int = 5;
/// `SDgetchunkinfo`'s flag of a chunked data set.
const HDF_CHUNK: i32 = 1;
/// libhdf4's `DFNT_LITEND`.
const DFNT_LITEND: i32 = 0x4000;
/// Largest element decoded.
const MAX_ELEMENT: u64 = 1 << 32;

/// Every value of szip data set `sds` (of the file at `file`, `shape`, number type `nt` of `size`
/// bytes) as native-endian bytes in C order, decoded by libaec (the caller holds libhdf4's lock).
pub(super) fn read_all(
    file: &std::ffi::CStr,
    sds: i32,
    shape: &[u64],
    nt: i32,
    size: usize,
) -> Result<Vec<u8>, String> {
    let (mut coder, mut info) = (0, [0i32; 16]);
    // SAFETY: `info` is larger than libhdf4's `comp_info` union (whose szip member is 5 int32s).
    if unsafe { SDgetcompinfo(sds, &mut coder, info.as_mut_ptr()) } == FAIL || coder != COMP_CODE_SZIP {
        return Err("libhdf4 does not describe its szip compression".into());
    }
    let [options_mask, pixels_per_block, pixels_per_scanline, bits_per_pixel, pixels, ..] = info;
    let (mut def, mut flags) = ([0i32; 4 * MAX_RANK], 0);
    // SAFETY: `def` is larger than libhdf4's `HDF_CHUNK_DEF` union (chunk lengths, then compression).
    if unsafe { SDgetchunkinfo(sds, def.as_mut_ptr(), &mut flags) } == FAIL {
        return Err("libhdf4 does not describe its chunks".into());
    }
    let chunk: Vec<u64> = if flags & HDF_CHUNK != 0 {
        def[..shape.len()].iter().map(|&c| u64::try_from(c).unwrap_or(0)).collect()
    } else {
        shape.to_vec()
    };
    if chunk.contains(&0) && !shape.contains(&0) {
        return Err("a chunk of length 0".into());
    }
    let element_values: u64 = chunk.iter().product();
    if u64::try_from(pixels).ok() != Some(element_values) {
        return Err(format!("szip parameters of {pixels} pixels for elements of {element_values} values"));
    }
    let pixel_bytes = match (bits_per_pixel.max(0) as u64).div_ceil(8) {
        3 => 4,
        n => n,
    };
    if pixel_bytes != size as u64 || element_values * pixel_bytes > MAX_ELEMENT {
        return Err(format!("szip elements of {pixels} pixels of {bits_per_pixel} bits for values of {size} bytes"));
    }
    let mut param =
        SzCom { options_mask: options_mask & !SZ_H4_REV_2, bits_per_pixel, pixels_per_block, pixels_per_scanline };
    let total: u64 = shape.iter().product();
    let mut out = vec![0u8; usize::try_from(total * size as u64).map_err(|_| "too large".to_string())?];
    let mut source = std::fs::File::open(std::path::Path::new(&*file.to_string_lossy()))
        .map_err(|e| format!("cannot open the file: {e}"))?;
    let grid: Vec<u64> = shape.iter().zip(&chunk).map(|(s, c)| s.div_ceil(*c)).collect();
    let chunks: u64 = grid.iter().product();
    for index in 0..chunks {
        let mut coord = vec![0i32; shape.len()];
        let mut rest = index;
        for d in (0..grid.len()).rev() {
            coord[d] = (rest % grid[d]) as i32;
            rest /= grid[d];
        }
        let (mut offset, mut length) = (0i32, 0i32);
        let at = if flags & HDF_CHUNK != 0 { coord.as_mut_ptr() } else { std::ptr::null_mut() };
        // SAFETY: `coord` has one entry per dimension; one offset and one length are asked for.
        let count = unsafe { SDgetdatainfo(sds, at, 0, 1, &mut offset, &mut length) };
        if count != 1 || offset < 0 || length < 0 {
            return Err(format!(
                "libhdf4 locates no szip element for chunk {coord:?} (unwritten chunks are not compared)"
            ));
        }
        let mut input = vec![0u8; length as usize];
        source
            .seek(SeekFrom::Start(offset as u64))
            .and_then(|_| source.read_exact(&mut input))
            .map_err(|e| format!("cannot read the element at {offset}: {e}"))?;
        let mut element = decode(&input, options_mask, &mut param, (element_values * pixel_bytes) as usize)?;
        if (nt & DFNT_LITEND != 0) != cfg!(target_endian = "little") {
            element.chunks_exact_mut(size).for_each(<[u8]>::reverse);
        }
        let origin: Vec<u64> = coord.iter().zip(&chunk).map(|(&c, &l)| c as u64 * l).collect();
        place(&element, &chunk, &origin, shape, size, &mut out);
    }
    Ok(out)
}

/// One element decoded by libaec into `length` bytes, framed as `HCIcszip_decode` frames it.
fn decode(input: &[u8], options_mask: i32, param: &mut SzCom, length: usize) -> Result<Vec<u8>, String> {
    let stream = if options_mask & SZ_H4_REV_2 != 0 {
        let Some(([flag, count @ ..], rest)) = input.split_first_chunk::<5>() else {
            return Err("an szip element shorter than its preamble".into());
        };
        let count = usize::try_from(i32::from_be_bytes(*count)).map_err(|_| "a negative szip preamble length")?;
        let stored = rest.get(..count).ok_or("an szip preamble longer than its element")?;
        if *flag == 1 {
            return Ok(stored.to_vec());
        }
        stored
    } else {
        input
    };
    let mut out = vec![0u8; length];
    let mut got = length;
    // SAFETY: `out` holds `got` bytes, `stream` is read within its length; `param` is an `SZ_com_t`.
    let status = unsafe {
        SZ_BufftoBuffDecompress(out.as_mut_ptr().cast(), &mut got, stream.as_ptr().cast(), stream.len(), param)
    };
    if status != 0 || got != length {
        return Err(format!("libaec cannot decode an szip element (status {status}, {got} of {length} bytes)"));
    }
    Ok(out)
}

/// Copies the part of chunk `element` (of shape `chunk`, at `origin`) inside `shape` into `out`.
fn place(element: &[u8], chunk: &[u64], origin: &[u64], shape: &[u64], size: usize, out: &mut [u8]) {
    let rank = shape.len();
    if rank == 0 {
        out.copy_from_slice(&element[..out.len()]);
        return;
    }
    let inside: Vec<u64> = (0..rank).map(|d| chunk[d].min(shape[d].saturating_sub(origin[d]))).collect();
    if inside.contains(&0) {
        return;
    }
    let row = inside[rank - 1] as usize * size;
    let rows: u64 = inside[..rank - 1].iter().product();
    for r in 0..rows {
        let (mut rest, mut from, mut to) = (r, 0u64, 0u64);
        let mut index = vec![0u64; rank];
        for d in (0..rank - 1).rev() {
            index[d] = rest % inside[d];
            rest /= inside[d];
        }
        for d in 0..rank {
            from = from * chunk[d] + index[d];
            to = to * shape[d] + origin[d] + index[d];
        }
        let (from, to) = (from as usize * size, to as usize * size);
        out[to..to + row].copy_from_slice(&element[from..from + row]);
    }
}

/// The values of the box at `starts` with `edges` of C-order `all` (of `shape`).
pub(super) fn cut(all: &[u8], shape: &[u64], starts: &[u64], edges: &[u64], size: usize) -> Result<Vec<u8>, String> {
    let rank = shape.len();
    if (0..rank).any(|d| starts[d] + edges[d] > shape[d]) {
        return Err("a box past the data set's end".into());
    }
    if rank == 0 {
        return Ok(all.to_vec());
    }
    let row = edges[rank - 1] as usize * size;
    let rows: u64 = edges[..rank - 1].iter().product();
    let mut out = Vec::with_capacity(rows as usize * row);
    for r in 0..rows {
        let (mut rest, mut from) = (r, 0u64);
        let mut index = vec![0u64; rank];
        for d in (0..rank - 1).rev() {
            index[d] = rest % edges[d];
            rest /= edges[d];
        }
        for d in 0..rank {
            from = from * shape[d] + starts[d] + index[d];
        }
        let from = from as usize * size;
        out.extend_from_slice(&all[from..from + row]);
    }
    Ok(out)
}

/// The error of a failed libaec decode of data set `name`.
pub(super) fn oracle_error(name: &str, why: String) -> netcdf::Error {
    error(format!(
        "{name} is szip-compressed, which this libhdf4 cannot decode, and libaec's decode of it failed: {why}"
    ))
}
