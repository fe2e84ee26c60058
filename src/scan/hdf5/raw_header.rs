//! Object-header messages read raw, for the few fields `hdf5-reader` parses differently from libhdf5
//! or does not keep: legacy (version 1 and 2) data layout messages, and whether a fill value is
//! undefined (`hdf5-reader` reports an undefined and a default fill value alike).
//!
//! Reads are bounded: at most 64 header blocks of at most 1 MiB each; anything malformed is `None`
//! (the caller keeps `hdf5-reader`'s reading).

use hdf5_reader::Hdf5File;

/// Message type of a header continuation.
const CONTINUATION: u16 = 0x10;
/// Message type of the dataspace message.
pub(super) const DATASPACE: u16 = 0x01;
/// Message type of the (new) fill value message.
pub(super) const FILL_VALUE: u16 = 0x05;
/// Message type of the data layout message.
pub(super) const DATA_LAYOUT: u16 = 0x08;

/// A little-endian unsigned integer of up to 8 bytes.
pub(super) fn le(bytes: &[u8]) -> u64 {
    bytes.iter().rev().fold(0, |n, &b| (n << 8) | u64::from(b))
}

/// The body of the first message of type `kind` in the object header at `address` (format version
/// 1 or 2), following continuation blocks.
pub(super) fn message_body(file: &Hdf5File, address: u64, kind: u16) -> Option<Vec<u8>> {
    let storage = file.storage();
    let offset_size = usize::from(file.superblock().offset_size);
    let length_size = usize::from(file.superblock().length_size);
    let prefix = storage.read_range(address, 64).ok()?;
    let v2 = prefix.get(..4) == Some(b"OHDR");
    let first = if v2 {
        let flags = *prefix.get(5)?;
        let mut at = 6 + if flags & 0x20 != 0 { 16 } else { 0 } + if flags & 0x10 != 0 { 4 } else { 0 };
        let width = 1usize << (flags & 0x03);
        let size = le(prefix.get(at..at + width)?);
        at += width;
        (address + at as u64, size)
    } else if prefix.first() == Some(&1) {
        (address + 16, u64::from(u32::from_le_bytes(prefix.get(8..12)?.try_into().ok()?)))
    } else {
        return None;
    };
    let creation_order = v2 && prefix.get(5).is_some_and(|f| f & 0x04 != 0);
    let mut blocks = vec![first];
    for _ in 0..64 {
        let (start, len) = blocks.pop()?;
        let block = storage.read_range(start, usize::try_from(len.min(1 << 20)).ok()?).ok()?;
        let messages = match v2 {
            // Continuation blocks of version 2 headers start with `OCHK` and end with a checksum.
            true if block.get(..4) == Some(b"OCHK") => block.get(4..block.len().saturating_sub(4))?,
            _ => &block[..],
        };
        let mut at = 0;
        loop {
            let (kind_here, size, head) = if v2 {
                let Some(head) = messages.get(at..at + 4) else { break };
                let extra = if creation_order { 2 } else { 0 };
                (u16::from(head[0]), usize::from(u16::from_le_bytes([head[1], head[2]])), 4 + extra)
            } else {
                let Some(head) = messages.get(at..at + 8) else { break };
                (u16::from_le_bytes([head[0], head[1]]), usize::from(u16::from_le_bytes([head[2], head[3]])), 8)
            };
            let Some(body) = messages.get(at + head..at + head + size) else { break };
            if kind_here == kind {
                return Some(body.to_vec());
            }
            if kind_here == CONTINUATION {
                let target = le(body.get(..offset_size)?);
                blocks.push((target, le(body.get(offset_size..offset_size + length_size)?)));
            }
            at += head + size;
        }
    }
    None
}

/// True when the dataset's fill value message says the fill value is undefined (version 1 and 2:
/// the "defined" byte is 0; version 3: flag bit 4), as libhdf5's `H5Pfill_value_defined` reports
/// `H5D_FILL_VALUE_UNDEFINED`.
pub(super) fn fill_value_undefined(file: &Hdf5File, address: u64) -> bool {
    let Some(body) = message_body(file, address, FILL_VALUE) else { return false };
    match body.first() {
        Some(1 | 2) => body.get(3) == Some(&0),
        Some(3) => body.get(1).is_some_and(|flags| flags & 0x10 != 0),
        _ => false,
    }
}

/// True when a datatype message body (`hdf5-reader`'s `Dataset::raw_datatype`, which follows a shared
/// (committed) datatype to its message) describes an IEEE 754 binary16 float: class 1 (floating
/// point), 2 bytes, 16 bits of precision at offset 0, sign at bit 15, exponent of 5 bits at bit 10
/// with bias 15, mantissa of 10 bits at bit 0, normalization implied (the HDF5 file format
/// specification, datatype message, class 1 properties).
pub(super) fn is_ieee_half(body: &[u8]) -> bool {
    let Some(properties) = body.get(8..20) else { return false };
    let class = body[0] & 0x0f;
    let bits = [body[1], body[2]];
    let size = le(&body[4..8]);
    let normalization = (bits[0] >> 4) & 0x03;
    let sign_location = bits[1];
    let (offset, precision) = (le(&properties[0..2]), le(&properties[2..4]));
    let (exponent_location, exponent_size, mantissa_location, mantissa_size) =
        (properties[4], properties[5], properties[6], properties[7]);
    let bias = le(&properties[8..12]);
    class == 1
        && size == 2
        && normalization == 2
        && sign_location == 15
        && (offset, precision) == (0, 16)
        && (exponent_location, exponent_size, mantissa_location, mantissa_size) == (10, 5, 0, 10)
        && bias == 15
}

/// True when the dataset's dataspace is null (`H5S_NULL`: no elements at all, not even one; h5py's
/// `h5py.Empty`): a version 2 dataspace message of type 2 (version 1 cannot encode it).
/// `hdf5-reader` gives such a dataset the shape of a scalar.
pub(super) fn null_dataspace(file: &Hdf5File, address: u64) -> bool {
    let Some(body) = message_body(file, address, DATASPACE) else { return false };
    body.first() == Some(&2) && body.get(3) == Some(&2)
}

/// The reference type of a datatype message body of the reference class (7), its bits 0-3: 0 for
/// old-style object references (`H5R_OBJECT1`), 1 for old-style region references, 2 to 4 for the
/// new-style (HDF5 1.12) object, region and attribute references. None for another class.
/// (`hdf5-reader` reads every type but 1 as an object reference.)
pub(super) fn reference_kind(datatype: &[u8]) -> Option<u8> {
    let (class_and_version, bits) = (*datatype.first()?, *datatype.get(1)?);
    (class_and_version & 0x0f == 7).then_some(bits & 0x0f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_kinds_are_read_from_the_class_bits() {
        assert_eq!(reference_kind(&[0x17, 0, 0, 0, 8, 0, 0, 0]), Some(0), "H5R_OBJECT1");
        assert_eq!(reference_kind(&[0x17, 1, 0, 0, 12, 0, 0, 0]), Some(1), "H5R_DATASET_REGION1");
        assert_eq!(reference_kind(&[0x47, 0x12, 0, 0, 16, 0, 0, 0]), Some(2), "H5R_OBJECT2");
        assert_eq!(reference_kind(&[0x13, 0, 0, 0]), None, "a string type");
        assert_eq!(reference_kind(&[0x17]), None, "truncated");
    }
}
