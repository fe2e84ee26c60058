//! Special elements (HDF4 Specification, "Special Elements"; the library's `hblocks.c`, `hcomp.c`,
//! `hchunks.c`): an object whose tag has the special bit holds a header saying where its bytes
//! really are.
//!
//! - linked blocks (`SPECIAL_LINKED`): `length, block_length, number_blocks: u32, link_ref: u16`; each
//!   link table `(DFTAG_LINKED, ref)` holds `next_ref: u16` and `number_blocks` block refs, each block
//!   `(DFTAG_LINKED, ref)` a run of the element's bytes. Link tables are followed with a visited set.
//! - compressed (`SPECIAL_COMP`): `version: u16, length: u32, comp_ref: u16, model: u16, coder: u16`
//!   and the coder's parameters; the compressed bytes are the element `(DFTAG_COMPRESSED, comp_ref)`,
//!   itself possibly special (linked blocks when appended to).
//! - chunked (`SPECIAL_CHUNKED`): `header_len: u32, version: u8, flag: u32, total_len, chunk_size,
//!   nt_size: u32, table_tag, table_ref, sp_tag, sp_ref: u16, ndims: u32`, per dimension
//!   `flag, length, chunk_length: u32`, then `fill_len: u32` and the fill value. The chunk table is
//!   the vdata `table_ref`; each chunk is `(DFTAG_CHUNK, ref)`, plain or compressed.
//! - external (`SPECIAL_EXT`, `hextelt.c`): `length, offset, name_length: u32` and the file name (not
//!   NUL-terminated); the element is `length` bytes at `offset` of that file. Only a data set's own
//!   element may be external (libhdf4 cannot make a compressed or chunked element external).
//!
//! Input: the DD index and the file; output: a [`Storage`] describing the element.

use std::collections::HashSet;

use super::cursor::Cursor;
use super::dd::DdIndex;
use super::errors::Hdf4Error;
use super::read_exact;
use crate::source::ByteSource;

/// The tag of linked blocks and their link tables.
pub(crate) const DFTAG_LINKED: u16 = 20;
/// The tag of the bytes of a compressed element.
pub(crate) const DFTAG_COMPRESSED: u16 = 40;
/// The tag of one chunk of a chunked element.
pub(crate) const DFTAG_CHUNK: u16 = 61;

const SPECIAL_LINKED: u16 = 1;
const SPECIAL_EXT: u16 = 2;
const SPECIAL_COMP: u16 = 3;
const SPECIAL_CHUNKED: u16 = 5;

/// Most special elements nested in one another (a chunk compressed, its bytes in linked blocks).
const MAX_DEPTH: u32 = 4;
/// Most bytes of a special element header (chunked headers for 32 dimensions are under 500).
const MAX_HEADER: u64 = 4096;

/// How an element's bytes are stored.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Storage {
    /// Contiguous bytes of the file.
    Plain {
        /// Byte offset in the file.
        offset: u64,
        /// Length in bytes.
        length: u64,
    },
    /// Linked blocks: the element is the blocks' bytes in order, cut at `length`.
    Linked {
        /// The element's length in bytes.
        length: u64,
        /// (offset, length) of each block, in order.
        blocks: Vec<(u64, u64)>,
    },
    /// Compressed: `data` holds `coder`'s encoding of `length` bytes.
    Compressed {
        /// The uncompressed length in bytes.
        length: u64,
        /// How the bytes are encoded.
        coder: Coder,
        /// Where the encoded bytes are.
        data: Box<Storage>,
    },
    /// Chunked: a chunk table and chunks.
    Chunked(Chunked),
    /// In an external file (`SDsetexternalfile`).
    External {
        /// The file's name as stored (resolved by `external`).
        name: String,
        /// Byte offset in the external file.
        offset: u64,
        /// Length in bytes.
        length: u64,
    },
}

impl Storage {
    /// The element's length in bytes as libhdf4's `Hlength` gives it (a special element's header
    /// length: the uncompressed length of a compressed one); `None` for a chunked element, whose
    /// extents vzarr takes from the dimension record.
    pub(crate) fn element_length(&self) -> Option<u64> {
        match self {
            Storage::Plain { length, .. }
            | Storage::Linked { length, .. }
            | Storage::Compressed { length, .. }
            | Storage::External { length, .. } => Some(*length),
            Storage::Chunked(_) => None,
        }
    }
}

/// A compression method of a compressed element (`comp_coder_t` in `hcomp.h`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Coder {
    /// Stored as is.
    None,
    /// HDF4's run-length encoding.
    Rle,
    /// N-bit packing: `bits` bits of each value, the highest at bit `top` (counted from the value's
    /// least significant bit), with the rest filled with ones or zeros, or sign-extended.
    Nbit(Nbit),
    /// Adaptive ("skipping") Huffman coding of each byte position of `skip` byte elements.
    SkipHuffman {
        /// Bytes per element (the byte positions coded separately).
        skip: u32,
    },
    /// A zlib stream.
    Deflate {
        /// The level it was deflated with.
        level: u16,
    },
    /// szip (Adaptive Entropy Coding through szlib), with its parameters.
    Szip(Szip),
    /// A coder code this reader does not know (JPEG, ...).
    Other(u16),
}

impl std::fmt::Display for Coder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Coder::None => f.write_str("no compression"),
            Coder::Rle => f.write_str("RLE"),
            Coder::Nbit(_) => f.write_str("NBIT"),
            Coder::SkipHuffman { skip } => write!(f, "skipping Huffman (skip {skip})"),
            Coder::Deflate { .. } => f.write_str("deflate"),
            Coder::Szip(_) => f.write_str("szip"),
            Coder::Other(code) => write!(f, "compression method {code}"),
        }
    }
}

/// The parameters of an NBIT element (`comp_coder_nbit_info_t`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Nbit {
    /// The number type of the values (`DFNT_*`).
    pub(crate) number_type: u32,
    /// Whether the stored bits are sign-extended.
    pub(crate) sign_extend: bool,
    /// Whether the bits outside the stored ones are ones (else zeros).
    pub(crate) fill_one: bool,
    /// The highest stored bit, from the least significant bit of the value.
    pub(crate) top: u32,
    /// How many bits are stored per value.
    pub(crate) bits: u32,
}

/// The parameters of an szip element (`comp_coder_szip_info_t`; `hcomp.c` stores them as
/// `pixels, pixels_per_scanline, options_mask: u32, bits_per_pixel, pixels_per_block: u8`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Szip {
    /// Values in the element (of one chunk, when chunked).
    pub(crate) pixels: u32,
    /// Pixels per scanline (one reference sample interval).
    pub(crate) pixels_per_scanline: u32,
    /// szlib's options mask; bit `0x10000` (`SZ_H4_REV_2`) marks elements written since HDF 4.2r1,
    /// whose bytes start with a 5-byte preamble.
    pub(crate) options_mask: u32,
    /// Bits per pixel (8 times the size of the number type).
    pub(crate) bits_per_pixel: u8,
    /// Pixels per block.
    pub(crate) pixels_per_block: u8,
}

/// A chunked element's header.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Chunked {
    /// Per dimension, (length, chunk length) in elements.
    pub(crate) dims: Vec<(u64, u64)>,
    /// Bytes of one element.
    pub(crate) element_size: u64,
    /// The fill value's bytes (as stored).
    pub(crate) fill: Vec<u8>,
    /// The ref of the chunk table vdata.
    pub(crate) table_ref: u16,
}

/// How the element (tag, ref) is stored; `None` when the file has no such element.
///
/// # Errors
/// [`Hdf4Error`] for malformed headers, loops, external files and elements past the end of the file.
pub(crate) fn storage(
    file: &dyn ByteSource,
    index: &DdIndex,
    tag: u16,
    reference: u16,
) -> Result<Option<Storage>, Hdf4Error> {
    match index.get(tag, reference, &format!("element (tag {tag}, ref {reference})"))? {
        None => Ok(None),
        Some(_) => storage_at(file, index, tag, reference, 0).map(Some),
    }
}

fn storage_at(
    file: &dyn ByteSource,
    index: &DdIndex,
    tag: u16,
    reference: u16,
    depth: u32,
) -> Result<Storage, Hdf4Error> {
    let what = format!("element (tag {tag}, ref {reference})");
    let dd = index.require(tag, reference, &what)?;
    in_file(file, dd.offset, dd.length, &what)?;
    if !dd.special {
        return Ok(Storage::Plain { offset: dd.offset, length: dd.length });
    }
    if depth >= MAX_DEPTH {
        return Err(Hdf4Error::malformed(what, format!("special elements nested more than {MAX_DEPTH} deep")));
    }
    index.spend(dd.length.min(MAX_HEADER), &what)?;
    let header = read_exact(file, dd.offset, dd.length.min(MAX_HEADER), &what)?;
    let mut c = Cursor::new(&header, &what);
    match c.u16()? {
        SPECIAL_LINKED => linked(file, index, &mut c, &what),
        SPECIAL_COMP => compressed(file, index, &mut c, &what, depth),
        SPECIAL_CHUNKED => chunked(&mut c, &what).map(Storage::Chunked),
        SPECIAL_EXT if depth > 0 => {
            Err(Hdf4Error::malformed(what, "an external file inside a compressed or chunked element"))
        }
        SPECIAL_EXT => external(&mut c, &what),
        code => Err(Hdf4Error::Unsupported(format!("{what} is a special element of kind {code}"))),
    }
}

fn in_file(file: &dyn ByteSource, offset: u64, length: u64, what: &str) -> Result<(), Hdf4Error> {
    let size = file.len();
    if offset.checked_add(length).is_none_or(|end| end > size) {
        return Err(Hdf4Error::malformed(
            what,
            format!("{length} bytes at offset {offset} lie past the end of the {size}-byte file"),
        ));
    }
    Ok(())
}

fn linked(file: &dyn ByteSource, index: &DdIndex, c: &mut Cursor<'_>, what: &str) -> Result<Storage, Hdf4Error> {
    let length = u64::from(c.u32()?);
    let _block_length = c.u32()?;
    let per_table = c.u32()?;
    let mut link = c.u16()?;
    let mut blocks = Vec::new();
    let (mut covered, mut seen) = (0u64, HashSet::new());
    while link != 0 && covered < length {
        if !seen.insert(link) {
            return Err(Hdf4Error::malformed(what, format!("its linked blocks loop (link table {link} seen twice)")));
        }
        let table_what = format!("{what}: link table {link}");
        let dd = index.require(DFTAG_LINKED, link, &table_what)?;
        in_file(file, dd.offset, dd.length, &table_what)?;
        let wanted = 2 + 2 * u64::from(per_table);
        index.spend(dd.length.min(wanted), &table_what)?;
        let table = read_exact(file, dd.offset, dd.length.min(wanted), &table_what)?;
        let mut t = Cursor::new(&table, &table_what);
        let next = t.u16()?;
        while let (Ok(block), true) = (t.u16(), covered < length) {
            if block == 0 {
                break;
            }
            let block_what = format!("{what}: block {block}");
            let b = index.require(DFTAG_LINKED, block, &block_what)?;
            in_file(file, b.offset, b.length, &block_what)?;
            let take = b.length.min(length - covered);
            blocks.push((b.offset, take));
            covered += take;
        }
        link = next;
    }
    if covered < length {
        return Err(Hdf4Error::malformed(what, format!("its linked blocks hold {covered} of its {length} bytes")));
    }
    Ok(Storage::Linked { length, blocks })
}

fn compressed(
    file: &dyn ByteSource,
    index: &DdIndex,
    c: &mut Cursor<'_>,
    what: &str,
    depth: u32,
) -> Result<Storage, Hdf4Error> {
    let _version = c.u16()?;
    let length = u64::from(c.u32()?);
    let data_ref = c.u16()?;
    let _model = c.u16()?;
    let coder = match c.u16()? {
        0 => Coder::None,
        1 => Coder::Rle,
        2 => Coder::Nbit(Nbit {
            number_type: c.u32()?,
            sign_extend: c.u16()? != 0,
            fill_one: c.u16()? != 0,
            top: c.u32()?,
            bits: c.u32()?,
        }),
        3 => Coder::SkipHuffman { skip: c.u32()? },
        // `comp_coder_deflate_info_t`: the level the writer deflated with (hcomp.c's header); a
        // header cut short of it says no level (zlib's default 6 then describes the stream).
        4 => Coder::Deflate { level: c.u16().unwrap_or(6) },
        5 => Coder::Szip(Szip {
            pixels: c.u32()?,
            pixels_per_scanline: c.u32()?,
            options_mask: c.u32()?,
            bits_per_pixel: c.u8()?,
            pixels_per_block: c.u8()?,
        }),
        code => Coder::Other(code),
    };
    let data = match index.get(DFTAG_COMPRESSED, data_ref, what)? {
        Some(_) => storage_at(file, index, DFTAG_COMPRESSED, data_ref, depth + 1)?,
        // Compressed, but nothing written yet.
        None if length == 0 => Storage::Plain { offset: 0, length: 0 },
        None => return Err(Hdf4Error::Missing { what: what.to_string(), tag: DFTAG_COMPRESSED, reference: data_ref }),
    };
    Ok(Storage::Compressed { length, coder, data: Box::new(data) })
}

fn external(c: &mut Cursor<'_>, what: &str) -> Result<Storage, Hdf4Error> {
    let length = u64::from(c.u32()?);
    let offset = u64::from(c.u32()?);
    let name_length = c.u32()? as usize;
    let name = super::cursor::text(c.take(name_length)?);
    if name.is_empty() {
        return Err(Hdf4Error::malformed(what, format!("an external file name {name:?}")));
    }
    Ok(Storage::External { name, offset, length })
}

fn chunked(c: &mut Cursor<'_>, what: &str) -> Result<Chunked, Hdf4Error> {
    let _header_len = c.u32()?;
    let _version = c.u8()?;
    let _flag = c.u32()?;
    let _total = c.u32()?;
    let _chunk_size = c.u32()?;
    let element_size = u64::from(c.u32()?);
    let _table_tag = c.u16()?;
    let table_ref = c.u16()?;
    c.skip(4)?;
    let ndims = c.u32()?;
    if ndims == 0 || ndims > 32 {
        return Err(Hdf4Error::malformed(what, format!("chunked element of {ndims} dimensions")));
    }
    let mut dims = Vec::with_capacity(ndims as usize);
    for _ in 0..ndims {
        let _flag = c.u32()?;
        let length = u64::from(c.u32()?);
        let chunk = u64::from(c.u32()?);
        if chunk == 0 {
            return Err(Hdf4Error::malformed(what, "a chunk length of 0"));
        }
        dims.push((length, chunk));
    }
    let fill_len = c.u32()? as usize;
    let fill = c.take(fill_len)?.to_vec();
    Ok(Chunked { dims, element_size, fill, table_ref })
}

/// Reads the bytes of a plain or linked element (at most `limit` bytes), from the file's budget.
///
/// # Errors
/// [`Hdf4Error`] when the element is larger than `limit` or the budget, compressed or chunked, or
/// unreadable.
pub(crate) fn read_stored(
    file: &dyn ByteSource,
    index: &DdIndex,
    storage: &Storage,
    limit: u64,
    what: &str,
) -> Result<Vec<u8>, Hdf4Error> {
    let too_big = |n: u64| Hdf4Error::Unsupported(format!("{what}: {n} bytes, more than vzarr's limit of {limit}"));
    match storage {
        Storage::Plain { offset, length } => {
            if *length > limit {
                return Err(too_big(*length));
            }
            index.spend(*length, what)?;
            Ok(read_exact(file, *offset, *length, what)?.to_vec())
        }
        Storage::Linked { length, blocks } => {
            if *length > limit {
                return Err(too_big(*length));
            }
            index.spend(*length, what)?;
            let mut out = Vec::with_capacity(*length as usize);
            for &(offset, length) in blocks {
                out.extend_from_slice(&read_exact(file, offset, length, what)?);
            }
            Ok(out)
        }
        Storage::Compressed { .. } | Storage::Chunked(_) | Storage::External { .. } => Err(Hdf4Error::Unsupported(
            format!("{what}: a compressed, chunked or external element where plain bytes were expected"),
        )),
    }
}
