//! A variable-length string scalar whose sidecar lists its HDF5 heap descriptor as its data (input:
//! a read of the data file; output: the string), as older BES versions wrote them (a `String` with
//! one chunk of 16 bytes) and newer ones still do, marking them
//! `fillValue="unsupported-variable-length-string"`.
//!
//! The 16 bytes of a contiguous variable-length string dataset are its heap descriptor: the string's
//! length (4 bytes), the address of its global heap collection and the object's index in it (4
//! bytes). The string is that object's bytes (HDF5 File Format Specification, "Global Heap"). A
//! descriptor is taken as one only when the superblock gives 8-byte offsets and lengths, the address
//! holds a collection (`GCOL`, version 1) inside the file, and the collection holds an object of
//! that index and length; otherwise the 16 bytes are what the sidecar says, a fixed-length string.

use super::files::{Files, FilesError};

/// The HDF5 signature.
const SIGNATURE: [u8; 8] = *b"\x89HDF\r\n\x1a\n";
/// Bytes of a heap descriptor with 8-byte addresses.
pub(super) const DESCRIPTOR: u64 = 16;
/// Largest collection read (a collection holds whole objects; one string this size is refused).
const MAX_COLLECTION: u64 = 64 << 20;

/// The string the heap descriptor `descriptor` of source `source` names, or None when the bytes
/// are no descriptor of the file's global heap.
///
/// # Errors
/// [`FilesError`] when the file cannot be read.
pub(super) fn heap_string(files: &Files<'_>, source: u32, descriptor: &[u8]) -> Result<Option<Vec<u8>>, FilesError> {
    let [l0, l1, l2, l3, a0, a1, a2, a3, a4, a5, a6, a7, i0, i1, i2, i3] = *descriptor else { return Ok(None) };
    let length = u64::from(u32::from_le_bytes([l0, l1, l2, l3]));
    let address = u64::from_le_bytes([a0, a1, a2, a3, a4, a5, a6, a7]);
    let index = u32::from_le_bytes([i0, i1, i2, i3]);
    let Some(base) = base_address(files, source)? else { return Ok(None) };
    let Some(at) = base.checked_add(address) else { return Ok(None) };
    let Ok(header) = files.read(source, at, 16) else { return Ok(None) };
    let size = u64::from_le_bytes(header[8..16].try_into().unwrap_or_default());
    if header[..5] != *b"GCOL\x01" || !(16..=MAX_COLLECTION).contains(&size) {
        return Ok(None);
    }
    let Ok(collection) = files.read(source, at, size) else { return Ok(None) };
    Ok(object(&collection, index, length).map(<[u8]>::to_vec))
}

/// The base address (the superblock's position) when the file's superblock gives 8-byte offsets
/// and lengths; None otherwise. The superblock lies at 0, 512, 1024, 2048, ... (a user block).
fn base_address(files: &Files<'_>, source: u32) -> Result<Option<u64>, FilesError> {
    let mut at = 0u64;
    loop {
        let Ok(head) = files.read(source, at, 16) else { return Ok(None) };
        if head[..8] == SIGNATURE {
            // Versions 0 and 1 give the sizes at bytes 13 and 14, versions 2 and 3 at 9 and 10.
            let sizes = match head[8] {
                0 | 1 => (head[13], head[14]),
                2 | 3 => (head[9], head[10]),
                _ => return Ok(None),
            };
            return Ok((sizes == (8, 8)).then_some(at));
        }
        at = if at == 0 { 512 } else { at * 2 };
        if at > 1 << 20 {
            return Ok(None);
        }
    }
}

/// Object `index` of a collection, when it is `length` bytes long.
fn object(collection: &[u8], index: u32, length: u64) -> Option<&[u8]> {
    let mut at = 16usize;
    while at + 16 <= collection.len() {
        let id = u16::from_le_bytes([collection[at], collection[at + 1]]);
        let size = u64::from_le_bytes(collection[at + 8..at + 16].try_into().ok()?);
        if id == 0 {
            return None;
        }
        let start = at + 16;
        let end = start.checked_add(usize::try_from(size).ok()?)?;
        if end > collection.len() {
            return None;
        }
        if u32::from(id) == index {
            return (size == length).then(|| &collection[start..end]);
        }
        // Object data is padded to a multiple of eight bytes.
        at = start.checked_add(usize::try_from(size.div_ceil(8) * 8).ok()?)?;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::object;

    fn collection(objects: &[(u16, &[u8])]) -> Vec<u8> {
        let mut c = b"GCOL\x01\0\0\0".to_vec();
        c.extend(0u64.to_le_bytes());
        for (id, data) in objects {
            c.extend(id.to_le_bytes());
            c.extend([1, 0, 0, 0, 0, 0]);
            c.extend((data.len() as u64).to_le_bytes());
            c.extend(*data);
            c.resize(c.len().div_ceil(8) * 8, 0);
        }
        c.extend([0u8; 16]);
        let size = c.len() as u64;
        c[8..16].copy_from_slice(&size.to_le_bytes());
        c
    }

    #[test]
    fn objects_are_found_by_index_and_length() {
        let c = collection(&[(1, b"first"), (2, b"a longer second string")]);
        assert_eq!(object(&c, 2, 22), Some(&b"a longer second string"[..]));
        assert_eq!(object(&c, 1, 5), Some(&b"first"[..]));
        // Another length than the descriptor's, or an index not there: no such string.
        assert_eq!(object(&c, 1, 6), None);
        assert_eq!(object(&c, 3, 5), None);
        // A size past the collection's end.
        let mut bad = c.clone();
        bad[24..32].copy_from_slice(&u64::MAX.to_le_bytes());
        assert_eq!(object(&bad, 2, 22), None);
    }
}
