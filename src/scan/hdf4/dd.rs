//! The data descriptor (DD) blocks of an HDF4 file (HDF4 Specification, "Data Descriptor Block"): a
//! linked list of blocks, each `ndds: u16, next: u32` then `ndds` descriptors of
//! `tag: u16, ref: u16, offset: u32, length: u32`, all big-endian. Objects are addressed by (tag, ref).
//!
//! Input: the file's bytes; output: a [`DdIndex`] from (tag, ref) to where the object's bytes lie. The
//! chain of blocks is followed with a visited set (a loop is an error), and the number of descriptors
//! is bounded by the file size (12 bytes each), so no allocation is sized by an untrusted count.
//!
//! Damage libhdf4 refuses is refused here too: a block of no descriptors (libhdf4 cannot open a
//! file whose first block is empty), and an object whose bytes overlap the signature or a DD block
//! (a descriptor pointed at offset 0, say): such an object is recorded as damaged, and whoever asks
//! for it gets an error naming it instead of the signature's bytes read as its contents.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};

use super::errors::Hdf4Error;
use super::read_exact;
use crate::source::ByteSource;

/// The HDF4 signature at offset 0.
pub(crate) const SIGNATURE: [u8; 4] = [0x0e, 0x03, 0x13, 0x01];

/// The tag bit that marks a special element (linked blocks, external, compressed, chunked).
pub(crate) const SPECIAL_BIT: u16 = 0x4000;
/// The empty descriptor's tag.
const DFTAG_NULL: u16 = 1;
/// Bytes of one descriptor.
const DD_BYTES: u64 = 12;
/// Bytes of a block header.
const BLOCK_HEADER: u64 = 6;

/// Where one object's bytes lie.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Dd {
    /// Byte offset in the file.
    pub(crate) offset: u64,
    /// Length in bytes.
    pub(crate) length: u64,
    /// Whether the tag had the special bit: the bytes are then a special element header.
    pub(crate) special: bool,
}

/// Bytes of structure (headers, tables, attribute values, compressed input) the reader may read for
/// one file beyond four times its size: descriptors may point many objects at the same bytes, and
/// the budget keeps such a file from costing more than a bounded amount of work.
const BUDGET_BASE: u64 = 64 << 20;

/// The offset and length of a descriptor of an object with no bytes (libhdf4's `INVALID_OFFSET`,
/// `INVALID_LENGTH`).
const NO_BYTES: u64 = 0xffff_ffff;

/// Every object of a file by (base tag, ref), the special bit removed from the tag.
#[derive(Debug, Default)]
pub(crate) struct DdIndex {
    objects: HashMap<(u16, u16), Dd>,
    /// Objects whose bytes overlap the file's own structure (signature, DD blocks): why each is
    /// damaged.
    damaged: HashMap<(u16, u16), String>,
    /// (base tag, ref) in the order the descriptors appear.
    order: Vec<(u16, u16)>,
    /// Bytes the reader may still read for the file's structures.
    budget: AtomicU64,
}

impl DdIndex {
    /// The object (tag, ref), special or not; `None` when the file has no such object.
    ///
    /// # Errors
    /// [`Hdf4Error::Malformed`] naming `what` when the object's descriptor is damaged (its bytes
    /// overlap the signature or a DD block).
    pub(crate) fn get(&self, tag: u16, reference: u16, what: &str) -> Result<Option<Dd>, Hdf4Error> {
        if let Some(reason) = self.damaged.get(&(tag, reference)) {
            return Err(Hdf4Error::malformed(what, format!("its object (tag {tag}, ref {reference}) {reason}")));
        }
        Ok(self.objects.get(&(tag, reference)).copied())
    }

    /// The object (tag, ref), or an error naming `what` referred to it.
    ///
    /// # Errors
    /// [`Hdf4Error::Missing`] when the file has no such object; [`Hdf4Error::Malformed`] when its
    /// descriptor is damaged.
    pub(crate) fn require(&self, tag: u16, reference: u16, what: &str) -> Result<Dd, Hdf4Error> {
        self.get(tag, reference, what)?.ok_or_else(|| Hdf4Error::Missing { what: what.to_string(), tag, reference })
    }

    /// Takes `bytes` from the file's budget of structure reads.
    ///
    /// # Errors
    /// [`Hdf4Error::Malformed`] naming `what` once the budget is spent.
    pub(crate) fn spend(&self, bytes: u64, what: &str) -> Result<(), Hdf4Error> {
        let taken = self.budget.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |left| left.checked_sub(bytes));
        taken.map(|_| ()).map_err(|_| {
            Hdf4Error::malformed(
                what,
                "the file's structures take more reading than four times its size (objects sharing bytes?)",
            )
        })
    }

    /// The refs of every object with base tag `tag`, in file order.
    pub(crate) fn refs_of(&self, tag: u16) -> impl Iterator<Item = u16> + '_ {
        self.order.iter().filter(move |(t, _)| *t == tag).map(|&(_, r)| r)
    }
}

/// Reads every DD block of the file.
///
/// # Errors
/// [`Hdf4Error`] when the signature is wrong, a block lies outside the file, or the chain loops.
pub(crate) fn read_index(file: &dyn ByteSource) -> Result<DdIndex, Hdf4Error> {
    let size = file.len();
    let magic = read_exact(file, 0, 4, "the signature")?;
    if magic.as_ref() != SIGNATURE {
        return Err(Hdf4Error::malformed("signature", "not 0e 03 13 01"));
    }
    let mut index = DdIndex { budget: AtomicU64::new(BUDGET_BASE + 4 * size), ..DdIndex::default() };
    let mut seen = HashSet::new();
    // The file's own structure: the signature and every DD block, (start, end) in bytes.
    let mut structure = vec![(0u64, 4u64)];
    let mut at = 4u64;
    while at != 0 {
        if !seen.insert(at) {
            return Err(Hdf4Error::malformed(format!("DD block at {at}"), "the chain of DD blocks loops"));
        }
        let what = format!("DD block at {at}");
        let head = read_exact(file, at, BLOCK_HEADER, &what)?;
        let count = u64::from(u16::from_be_bytes([head[0], head[1]]));
        let next = u64::from(u32::from_be_bytes([head[2], head[3], head[4], head[5]]));
        if count == 0 {
            return Err(Hdf4Error::malformed(what, "a block of no descriptors (libhdf4 cannot open such a file)"));
        }
        let bytes = count * DD_BYTES;
        if at + BLOCK_HEADER + bytes > size {
            return Err(Hdf4Error::malformed(
                what,
                format!("{count} descriptors lie past the end of the {size}-byte file"),
            ));
        }
        let dds = read_exact(file, at + BLOCK_HEADER, bytes, &what)?;
        for dd in dds.chunks_exact(DD_BYTES as usize) {
            add(&mut index, dd);
        }
        structure.push((at, at + BLOCK_HEADER + bytes));
        at = next;
    }
    mark_damaged(&mut index, &structure);
    Ok(index)
}

/// Records as damaged every object whose bytes overlap `structure` (the signature, the DD blocks).
fn mark_damaged(index: &mut DdIndex, structure: &[(u64, u64)]) {
    for (&key, dd) in &index.objects {
        if dd.offset == NO_BYTES || dd.length == NO_BYTES || dd.length == 0 {
            continue;
        }
        let end = dd.offset.saturating_add(dd.length);
        if let Some(&(start, stop)) = structure.iter().find(|&&(start, stop)| dd.offset < stop && start < end) {
            let inside =
                if start == 0 { "the file's signature".to_string() } else { format!("the DD block at {start}") };
            let reason = format!(
                "is said to lie at bytes {}..{end}, over {inside} (bytes {start}..{stop}): its descriptor is damaged",
                dd.offset
            );
            index.damaged.insert(key, reason);
        }
    }
}

fn add(index: &mut DdIndex, dd: &[u8]) {
    let be16 = |i: usize| u16::from_be_bytes([dd[i], dd[i + 1]]);
    let be32 = |i: usize| u64::from(u32::from_be_bytes([dd[i], dd[i + 1], dd[i + 2], dd[i + 3]]));
    let (tag, reference) = (be16(0), be16(2));
    if tag == DFTAG_NULL || tag == 0 {
        return;
    }
    let special = tag & 0x8000 == 0 && tag & SPECIAL_BIT != 0;
    let base = if special { tag & !SPECIAL_BIT } else { tag };
    let entry = Dd { offset: be32(4), length: be32(8), special };
    if index.objects.insert((base, reference), entry).is_none() {
        index.order.push((base, reference));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scan::hdf4::testing::MemorySource;

    fn file(blocks: &[(u64, &[[u8; 12]], u32)], size: usize) -> MemorySource {
        let mut bytes = vec![0u8; size];
        bytes[..4].copy_from_slice(&SIGNATURE);
        for &(at, dds, next) in blocks {
            let at = at as usize;
            bytes[at..at + 2].copy_from_slice(&(dds.len() as u16).to_be_bytes());
            bytes[at + 2..at + 6].copy_from_slice(&next.to_be_bytes());
            for (i, dd) in dds.iter().enumerate() {
                bytes[at + 6 + 12 * i..at + 18 + 12 * i].copy_from_slice(dd);
            }
        }
        MemorySource::new("test.hdf", bytes)
    }

    fn dd(tag: u16, reference: u16, offset: u32, length: u32) -> [u8; 12] {
        let mut d = [0u8; 12];
        d[0..2].copy_from_slice(&tag.to_be_bytes());
        d[2..4].copy_from_slice(&reference.to_be_bytes());
        d[4..8].copy_from_slice(&offset.to_be_bytes());
        d[8..12].copy_from_slice(&length.to_be_bytes());
        d
    }

    #[test]
    fn follows_the_chain_and_marks_special_elements() {
        let f =
            file(&[(4, &[dd(702, 3, 100, 8), dd(1, 0, 0, 0)], 40), (40, &[dd(702 | SPECIAL_BIT, 5, 120, 20)], 0)], 200);
        let index = read_index(&f).unwrap();
        assert_eq!(index.get(702, 3, "x").unwrap(), Some(Dd { offset: 100, length: 8, special: false }));
        assert!(index.get(702, 5, "x").unwrap().unwrap().special);
        assert_eq!(index.refs_of(702).collect::<Vec<_>>(), [3, 5]);
    }

    #[test]
    fn structure_reads_are_bounded_by_the_budget() {
        let f = file(&[(4, &[dd(702, 3, 100, 8)], 0)], 200);
        let index = read_index(&f).unwrap();
        index.spend(BUDGET_BASE, "headers").unwrap();
        index.spend(800, "headers").unwrap();
        assert!(index.spend(1, "vgroup 7").unwrap_err().to_string().starts_with("vgroup 7: "));
    }

    #[test]
    fn empty_blocks_and_objects_over_the_structure_are_damage() {
        let f = file(&[(4, &[], 0)], 200);
        assert!(read_index(&f).unwrap_err().to_string().contains("no descriptors"));
        let f = file(&[(4, &[dd(702, 3, 0, 8), dd(106, 4, 12, 4), dd(701, 5, 100, 4)], 0)], 200);
        let index = read_index(&f).unwrap();
        let signature = index.require(702, 3, "data set a").unwrap_err().to_string();
        assert!(signature.starts_with("data set a: ") && signature.contains("signature"), "{signature}");
        assert!(index.get(106, 4, "number type 4").unwrap_err().to_string().contains("DD block at 4"));
        assert!(index.get(701, 5, "x").unwrap().is_some());
    }

    #[test]
    fn a_looping_chain_and_a_block_past_the_end_are_errors() {
        let f = file(&[(4, &[dd(702, 3, 100, 8)], 40), (40, &[dd(702, 4, 100, 8)], 4)], 200);
        assert!(read_index(&f).unwrap_err().to_string().contains("loops"));
        let f = file(&[(4, &[dd(702, 3, 100, 8)], 197)], 200);
        assert!(read_index(&f).is_err());
    }
}
