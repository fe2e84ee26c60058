//! szip-compressed data sets (`fixtures/hdf4/szip`, written by `make_szip.c` with a libhdf4 built with
//! szip, which Debian's libhdf4 and pyhdf's wheel are not).
//!
//! The live oracle: every value vzarr reads through its store equals libaec's decode of the data
//! set's szip elements (szlib's `SZ_BufftoBuffDecompress`, the call a libhdf4 built with szip makes),
//! the elements located and described by Debian's libhdf4 itself, which cannot decode them:
//! `SDgetcompinfo` (the szip parameters of the element headers), `SDgetchunkinfo` (the chunk shape) and
//! `SDgetdatainfo` (offset and length of each element's compressed bytes, read from the file there).
//! The framing (5-byte preamble, values stored as they are) is libhdf4's `cszip.c`.
//!
//! A second check: the values equal the szip-enabled libhdf4's own read recorded next to the fixture
//! (`szip.values`) when it was written. Hostile szip elements (bad parameters, a corrupt stream or
//! preamble) give one-line errors naming the file and the data set.

use std::collections::BTreeMap;
use std::ffi::{c_char, c_int, c_void, CString};
use std::path::{Path, PathBuf};

use vzarr::{scan_file, ScanOptions};

use super::hostile::every_descriptor;
use super::oracle::{
    SDend, SDendaccess, SDfileinfo, SDgetchunkinfo, SDgetcompinfo, SDgetdatainfo, SDgetinfo, SDreaddata, SDselect,
    SDstart,
};
use super::read_back;

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/hdf4/szip")
}

/// `szip.values`: per data set, a u32 name length, the name, a u64 byte count and the values as
/// libhdf4 read them (little-endian).
fn libhdf4_values() -> BTreeMap<String, Vec<u8>> {
    let bytes = std::fs::read(dir().join("szip.values")).unwrap();
    let (mut out, mut at) = (BTreeMap::new(), 0);
    while at < bytes.len() {
        let n = u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
        let name = String::from_utf8(bytes[at + 4..at + 4 + n].to_vec()).unwrap();
        at += 4 + n;
        let len = u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap()) as usize;
        out.insert(name, bytes[at + 8..at + 8 + len].to_vec());
        at += 8 + len;
    }
    out
}

/// The second check: the szip-enabled libhdf4's read recorded with the fixture.
#[test]
#[cfg(target_endian = "little")]
fn every_value_equals_the_recorded_libhdf4_read() {
    let expected = libhdf4_values();
    assert_eq!(expected.len(), 8);
    let (dataset, arrays) = read_back(&dir().join("szip.hdf"), &ScanOptions::default());
    assert!(dataset.warnings.is_empty(), "{:?}", dataset.warnings);
    for (name, want) in &expected {
        let (_, shape, got) = arrays.iter().find(|(n, ..)| n == name).unwrap_or_else(|| panic!("{name} missing"));
        assert_eq!(got.len(), want.len(), "{name} {shape:?}");
        assert!(got == want, "{name}: values differ from libhdf4's");
        let array = dataset.arrays.iter().find(|a| &a.path == name).unwrap();
        let owned = array.chunks.iter().all(|c| matches!(c, vzarr::dataset::ChunkEntry::Owned { .. }));
        assert!(owned, "{name}: szip chunks are decoded and kept by the store");
    }
}

// libaec's szlib (Debian `libsz2`, which libhdf5 links too).
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

/// One szip data set as libhdf4 describes it, its values decoded by libaec: name, shape, native-endian
/// values, and whether an element was stored as it is (preamble flag 1).
fn libaec_decode(path: &Path) -> Vec<(String, Vec<u64>, Vec<u8>)> {
    const SZ_H4_REV_2: i32 = 0x10000;
    let file = std::fs::read(path).unwrap();
    let cpath = CString::new(path.to_str().unwrap()).unwrap();
    let _turn = super::oracle::LIBHDF4.lock().unwrap_or_else(|e| e.into_inner());
    let mut out = Vec::new();
    // SAFETY: plain C calls with buffers larger than the library's structures (`comp_info`: 5 int32s
    // for szip; `HDF_CHUNK_DEF`: 32 chunk lengths, then the compression) and `SZ_com_t` as declared.
    unsafe {
        let sd = SDstart(cpath.as_ptr(), 1);
        assert_ne!(sd, -1);
        let (mut count, mut attrs) = (0, 0);
        assert_ne!(SDfileinfo(sd, &mut count, &mut attrs), -1);
        for i in 0..count {
            let sds = SDselect(sd, i);
            let mut name = [0 as c_char; 256];
            let (mut rank, mut nt, mut nattrs, mut dims) = (0, 0, 0, [0i32; 32]);
            assert_ne!(SDgetinfo(sds, name.as_mut_ptr(), &mut rank, dims.as_mut_ptr(), &mut nt, &mut nattrs), -1);
            let name = std::ffi::CStr::from_ptr(name.as_ptr()).to_string_lossy().into_owned();
            let shape: Vec<u64> = dims[..rank as usize].iter().map(|&d| d as u64).collect();
            let (mut coder, mut info) = (0, [0i32; 16]);
            assert_ne!(SDgetcompinfo(sds, &mut coder, info.as_mut_ptr()), -1, "{name}");
            assert_eq!(coder, 5, "{name}: not szip");
            // The test is worth it only while the linked libhdf4 cannot decode szip itself.
            let mut probe = [0u8; 8];
            let (mut start, mut edge) = (vec![0i32; shape.len()], vec![1i32; shape.len()]);
            let read =
                SDreaddata(sds, start.as_mut_ptr(), std::ptr::null_mut(), edge.as_mut_ptr(), probe.as_mut_ptr().cast());
            assert_eq!(read, -1, "{name}: this libhdf4 decodes szip: compare with SDreaddata instead");
            let [mask, ppb, ppsl, bpp, pixels, ..] = info;
            let (mut def, mut flags) = ([0i32; 128], 0);
            assert_ne!(SDgetchunkinfo(sds, def.as_mut_ptr(), &mut flags), -1);
            let chunked = flags & 1 != 0;
            let chunk: Vec<u64> =
                if chunked { def[..shape.len()].iter().map(|&c| c as u64).collect() } else { shape.clone() };
            assert_eq!(pixels as u64, chunk.iter().product::<u64>(), "{name}");
            let size = (bpp as usize).div_ceil(8);
            let grid: Vec<u64> = shape.iter().zip(&chunk).map(|(s, c)| s.div_ceil(*c)).collect();
            let mut values = vec![0u8; shape.iter().product::<u64>() as usize * size];
            for index in 0..grid.iter().product::<u64>() {
                let mut coord = vec![0i32; shape.len()];
                let mut rest = index;
                for d in (0..grid.len()).rev() {
                    coord[d] = (rest % grid[d]) as i32;
                    rest /= grid[d];
                }
                let (mut offset, mut length) = (0, 0);
                let at = if chunked { coord.as_mut_ptr() } else { std::ptr::null_mut() };
                assert_eq!(SDgetdatainfo(sds, at, 0, 1, &mut offset, &mut length), 1, "{name} {coord:?}");
                let element = &file[offset as usize..(offset + length) as usize];
                // libhdf4's framing (`HCIcszip_decode`): a preamble when SZ_H4_REV_2 is set.
                assert_ne!(mask & SZ_H4_REV_2, 0, "{name}: the fixture's elements have preambles");
                let stored = i32::from_be_bytes(element[1..5].try_into().unwrap()) as usize;
                let stream = &element[5..5 + stored];
                let mut decoded = vec![0u8; pixels as usize * size];
                if element[0] == 1 {
                    decoded.copy_from_slice(stream);
                } else {
                    let mut param = SzCom {
                        options_mask: mask & !SZ_H4_REV_2,
                        bits_per_pixel: bpp,
                        pixels_per_block: ppb,
                        pixels_per_scanline: ppsl,
                    };
                    let mut got = decoded.len();
                    let status = SZ_BufftoBuffDecompress(
                        decoded.as_mut_ptr().cast(),
                        &mut got,
                        stream.as_ptr().cast(),
                        stream.len(),
                        &mut param,
                    );
                    assert_eq!((status, got), (0, decoded.len()), "{name} {coord:?}: libaec");
                }
                // The file's big-endian values (no little-endian number type here), in native order.
                assert_eq!(nt & 0x4000, 0);
                if cfg!(target_endian = "little") {
                    decoded.chunks_exact_mut(size).for_each(<[u8]>::reverse);
                }
                // The chunk's part inside the data set (edge chunks are padded).
                let rank = shape.len();
                let origin: Vec<u64> = coord.iter().zip(&chunk).map(|(&c, &l)| c as u64 * l).collect();
                let inside: Vec<u64> = (0..rank).map(|d| chunk[d].min(shape[d] - origin[d])).collect();
                let row = inside[rank - 1] as usize * size;
                for r in 0..inside[..rank - 1].iter().product::<u64>() {
                    let (mut rest, mut from, mut to) = (r, 0u64, 0u64);
                    let mut at = vec![0u64; rank];
                    for d in (0..rank - 1).rev() {
                        at[d] = rest % inside[d];
                        rest /= inside[d];
                    }
                    for d in 0..rank {
                        from = from * chunk[d] + at[d];
                        to = to * shape[d] + origin[d] + at[d];
                    }
                    let (from, to) = (from as usize * size, to as usize * size);
                    values[to..to + row].copy_from_slice(&decoded[from..from + row]);
                }
            }
            out.push((name, shape, values));
            SDendaccess(sds);
        }
        SDend(sd);
    }
    out
}

#[test]
fn every_value_equals_libaecs_decode_of_the_elements_libhdf4_locates() {
    let path = dir().join("szip.hdf");
    let expected = libaec_decode(&path);
    assert_eq!(expected.len(), 8);
    let (_, arrays) = read_back(&path, &ScanOptions::default());
    for (name, shape, want) in &expected {
        let (_, got_shape, got) = arrays.iter().find(|(n, ..)| n == name).unwrap_or_else(|| panic!("{name} missing"));
        assert_eq!(got_shape, shape, "{name}");
        assert!(got == want, "{name}: values differ from libaec's decode");
    }
    // The recorded read of the szip-enabled libhdf4 (little-endian) agrees with libaec's decode.
    for (name, want) in libhdf4_values().into_iter().filter(|_| cfg!(target_endian = "little")) {
        assert!(
            expected.iter().any(|(n, _, v)| *n == name && *v == want),
            "{name}: libaec and the recorded read differ"
        );
    }
}

/// The offsets of every szip header (special compressed elements with coder 5).
fn szip_headers(bytes: &[u8]) -> Vec<usize> {
    every_descriptor(bytes)
        .into_iter()
        .filter_map(|(_, tag, _, offset, _)| {
            let o = offset as usize;
            let special = tag & 0x4000 != 0 && tag & 0x8000 == 0;
            (special && bytes.get(o..o + 2) == Some(&[0, 3]) && bytes.get(o + 12..o + 14) == Some(&[0, 5])).then_some(o)
        })
        .collect()
}

/// The offset of the compressed bytes (tag 40) of the element whose header is at `header`.
fn data_of(bytes: &[u8], header: usize) -> (usize, usize) {
    let comp_ref = u16::from_be_bytes([bytes[header + 8], bytes[header + 9]]);
    every_descriptor(bytes)
        .into_iter()
        .find(|&(_, t, r, ..)| t == 40 && r == comp_ref)
        .map(|(.., o, l)| (o as usize, l as usize))
        .unwrap()
}

fn scan_error(bytes: &[u8]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hostile_szip.hdf");
    std::fs::write(&path, bytes).unwrap();
    let err = scan_file(&path, &ScanOptions::default()).expect_err("a hostile szip element must not scan");
    let message = err.to_string();
    assert!(!message.contains('\n'), "not one line: {message}");
    assert!(message.contains("hostile_szip.hdf"), "does not name the file: {message}");
    assert!(message.contains("i16_nn"), "does not name the data set: {message}");
    message
}

fn hostile(change: impl Fn(&mut Vec<u8>, usize)) -> String {
    let mut bytes = std::fs::read(dir().join("szip.hdf")).unwrap();
    let first = szip_headers(&bytes)[0];
    change(&mut bytes, first);
    let message = scan_error(&bytes);
    eprintln!("{message}");
    message
}

#[test]
fn hostile_szip_elements_name_file_and_data_set() {
    assert_eq!(szip_headers(&std::fs::read(dir().join("szip.hdf")).unwrap()).len(), 27);
    // Header: special 3, version, length, comp_ref, model, coder 5, then pixels, pixels per
    // scanline, options mask (u32), bits per pixel, pixels per block (u8).
    let odd_block = hostile(|b, h| b[h + 27] = 7);
    assert!(odd_block.contains("7 pixels per block"), "{odd_block}");
    let no_scanline = hostile(|b, h| b[h + 18..h + 22].fill(0));
    assert!(no_scanline.contains("pixels per scanline"), "{no_scanline}");
    let bits = hostile(|b, h| b[h + 26] = 48);
    assert!(bits.contains("not the element's"), "{bits}");
    let absurd = hostile(|b, h| b[h + 14..h + 18].fill(0xff));
    assert!(absurd.contains("4294967295 pixels"), "{absurd}");
    let preamble = hostile(|b, h| {
        let (data, _) = data_of(b, h);
        b[data + 1..data + 5].copy_from_slice(&0x7fff_0000i32.to_be_bytes());
    });
    assert!(preamble.contains("preamble claims"), "{preamble}");
    let zeros = hostile(|b, h| {
        let (data, len) = data_of(b, h);
        b[data + 5..data + len].fill(0);
    });
    assert!(zeros.contains("szip"), "{zeros}");
    let noise = hostile(|b, h| {
        let (data, len) = data_of(b, h);
        let mut state = 0x2545_f491_u32;
        for byte in &mut b[data + 5..data + len] {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            *byte = state as u8;
        }
        // Noise may decode to other values without error; make the stream short too.
        b[data + 1..data + 5].copy_from_slice(&8i32.to_be_bytes());
    });
    assert!(noise.contains("szip"), "{noise}");
}
