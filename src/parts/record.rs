//! One file's scan ([`VirtualDataset`] of a single source) as bytes, and back, exactly.
//!
//! ```text
//! u32 meta length | meta: JSON (groups, warnings, provenance, coordinate names, per array: path,
//!                   zarr.json, rewritten count, digest, tail dims)
//! blob: sources.bin                                          (the source table encoding)
//! per concatenation coordinate: f64s values [, f64s bounds]  (raw little-endian, NaN kept bit for bit)
//! per array: blob manifest.bin (its chunk table), blob owned bytes,
//!            per tail: u64s chunk indices, blob manifest.bin of the trimmed entries
//! ```
//!
//! A blob is a u64 length then the bytes; `f64s`/`u64s` a u64 count then 8 bytes each. Every length is
//! checked against the bytes left before anything is allocated. Chunk entries reuse the manifest
//! encoding (`docs/design/001-manifest-format.md`) with its checksums; the whole record is covered by
//! the part's CRC as well (`parts/part`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::dataset::OwnedBytesError;
use crate::dataset::{
    ChunkTable, ConcatCoordinate, GroupNode, Hdf5Links, OwnedBytes, OwnedBytesBudget, Provenance, ScanWarning,
    TailChunks, VirtualArray, VirtualDataset,
};
use crate::manifest::{encode_manifest, ChunkEntry, ManifestError, ManifestIndex, SourceTable};
use crate::metadata::{ArrayMetadata, Attributes, MetadataError};

/// Why one file's scan does not encode ([`encode_dataset`]) or its record does not decode
/// ([`decode_dataset`]). Each variant names the part of the record, or the array, it is about.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RecordError {
    /// The metadata does not encode as JSON.
    #[error("encoding metadata: {0}")]
    EncodeMetadata(#[source] serde_json::Error),
    /// The metadata's JSON is longer than its u32 length can say.
    #[error("metadata over 4 GiB")]
    MetadataTooLong,
    /// An array's chunk entries do not encode (an entry whose range overflows).
    #[error("{array}: encoding chunk entries: {source}")]
    EncodeEntries {
        /// The array.
        array: String,
        /// The manifest encoder's error.
        source: ManifestError,
    },
    /// An array's owned bytes cannot be read back from their spill file.
    #[error("{array}: copying owned bytes: {source}")]
    CopyOwned {
        /// The array.
        array: String,
        /// The owned bytes' error.
        source: OwnedBytesError,
    },
    /// Fewer bytes left than a field needs.
    #[error("{what}: truncated: need {need} bytes, have {have}")]
    Truncated {
        /// The field.
        what: String,
        /// Bytes it needs.
        need: usize,
        /// Bytes left.
        have: usize,
    },
    /// A fixed-size field that is not its size.
    #[error("{what}")]
    Malformed {
        /// The field.
        what: String,
    },
    /// A count of 8-byte items larger than memory can address.
    #[error("{what}: count {count} too large")]
    CountTooLarge {
        /// The field.
        what: String,
        /// The count.
        count: u64,
    },
    /// A blob length larger than memory can address.
    #[error("{what}: length {len} too large")]
    LengthTooLarge {
        /// The field.
        what: String,
        /// The length.
        len: u64,
    },
    /// The metadata is not JSON of its shape.
    #[error("metadata: {0}")]
    Metadata(#[source] serde_json::Error),
    /// The source table does not decode.
    #[error("source table: {0}")]
    Sources(#[source] ManifestError),
    /// Bytes after the last array.
    #[error("{len} bytes follow the last array")]
    Trailing {
        /// How many.
        len: usize,
    },
    /// An array's `zarr.json` is invalid.
    #[error("{array}: {source}")]
    ArrayMetadata {
        /// The array.
        array: String,
        /// The metadata's error.
        source: MetadataError,
    },
    /// An array's chunk entries (or a tail's) do not decode.
    #[error("{array}: {source}")]
    Entries {
        /// The array.
        array: String,
        /// The manifest decoder's error.
        source: ManifestError,
    },
    /// An array's chunk entries do not match its grid.
    #[error("{array}: {entries} chunk entries for a grid of {chunks} chunks")]
    EntryCount {
        /// The array.
        array: String,
        /// Entries in the record.
        entries: usize,
        /// Chunks in the grid.
        chunks: u64,
    },
    /// An array's owned bytes could not be held.
    #[error("{array}: {source}")]
    Owned {
        /// The array.
        array: String,
        /// The owned bytes' error.
        source: OwnedBytesError,
    },
    /// A tail whose indices and entries do not pair up.
    #[error("{array}: {indices} tail indices but {entries} tail entries")]
    TailCount {
        /// The array.
        array: String,
        /// Tail chunk indices.
        indices: usize,
        /// Tail entries.
        entries: usize,
    },
    /// A chunk entry outside its source file or the array's owned bytes.
    #[error("{array}: a chunk entry lies outside {within}: {entry:?}")]
    Outside {
        /// The array.
        array: String,
        /// What it should lie within (`source file N`, `the owned bytes`).
        within: String,
        /// The entry.
        entry: ChunkEntry,
    },
}

#[derive(Serialize, Deserialize)]
struct Meta {
    groups: Vec<(String, Attributes)>,
    /// Per group path, its attributes written as base64 (groups without any left out).
    #[serde(default)]
    group_encodings: BTreeMap<String, BTreeMap<String, String>>,
    /// One HDF5 file's links as stored (empty for other formats).
    #[serde(default)]
    hdf5_links: Hdf5Links,
    warnings: Vec<ScanWarning>,
    provenance: Provenance,
    concat: Vec<CoordinateMeta>,
    arrays: Vec<ArrayMeta>,
}

#[derive(Serialize, Deserialize)]
struct CoordinateMeta {
    dim: String,
    units: Option<String>,
    calendar: Option<String>,
    bounds: Option<String>,
}

#[derive(Serialize, Deserialize)]
struct ArrayMeta {
    path: String,
    metadata: serde_json::Value,
    rewritten_chunks: u64,
    digest: Option<u64>,
    tails: Vec<(Vec<usize>, u64)>,
}

/// Encodes one file's scan.
///
/// # Errors
/// [`RecordError`] naming the array whose chunk table cannot be encoded (an entry whose range
/// overflows, owned bytes that cannot be read back from the spill file).
pub fn encode_dataset(dataset: &VirtualDataset) -> Result<Vec<u8>, RecordError> {
    let meta = Meta {
        groups: dataset.groups.iter().map(|g| (g.path.clone(), g.attributes.clone())).collect(),
        group_encodings: dataset
            .groups
            .iter()
            .filter(|g| !g.attribute_encodings.is_empty())
            .map(|g| (g.path.clone(), g.attribute_encodings.clone()))
            .collect(),
        hdf5_links: dataset.hdf5_links.clone(),
        warnings: dataset.warnings.clone(),
        provenance: dataset.provenance.clone(),
        concat: dataset.concat.iter().map(coordinate_meta).collect(),
        arrays: dataset.arrays.iter().map(array_meta).collect(),
    };
    let json = serde_json::to_vec(&meta).map_err(RecordError::EncodeMetadata)?;
    let mut out = Vec::with_capacity(json.len() + 64);
    out.extend_from_slice(&u32::try_from(json.len()).map_err(|_| RecordError::MetadataTooLong)?.to_le_bytes());
    out.extend_from_slice(&json);
    put_blob(&mut out, &dataset.sources.encode());
    for coordinate in &dataset.concat {
        put_f64s(&mut out, coordinate.values.iter());
        if let Some((_, bounds)) = &coordinate.bounds {
            put_f64s(&mut out, bounds.iter());
        }
    }
    for array in &dataset.arrays {
        let error = |source| RecordError::EncodeEntries { array: array.path.clone(), source };
        put_blob(&mut out, &encode_manifest(&array.chunks).map_err(error)?);
        put_u64(&mut out, array.chunks.owned.len());
        array
            .chunks
            .owned
            .copy_to(&mut out)
            .map_err(|source| RecordError::CopyOwned { array: array.path.clone(), source })?;
        for tail in &array.tails {
            put_u64(&mut out, tail.entries.len() as u64);
            tail.entries.iter().for_each(|(index, _)| put_u64(&mut out, *index));
            put_blob(&mut out, &encode_manifest(tail.entries.iter().map(|(_, e)| *e)).map_err(error)?);
        }
    }
    Ok(out)
}

fn coordinate_meta(c: &ConcatCoordinate) -> CoordinateMeta {
    CoordinateMeta {
        dim: c.dim.clone(),
        units: c.units.clone(),
        calendar: c.calendar.clone(),
        bounds: c.bounds.as_ref().map(|(name, _)| name.clone()),
    }
}

fn array_meta(a: &VirtualArray) -> ArrayMeta {
    ArrayMeta {
        path: a.path.clone(),
        metadata: a.metadata.to_json(),
        rewritten_chunks: a.rewritten_chunks,
        digest: a.digest,
        tails: a.tails.iter().map(|t| (t.dims.clone(), t.rewritten)).collect(),
    }
}

fn put_u64(out: &mut Vec<u8>, value: u64) {
    out.extend_from_slice(&value.to_le_bytes());
}

fn put_blob(out: &mut Vec<u8>, bytes: &[u8]) {
    put_u64(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

fn put_f64s(out: &mut Vec<u8>, values: impl ExactSizeIterator<Item = f64>) {
    put_u64(out, values.len() as u64);
    values.for_each(|v| out.extend_from_slice(&v.to_bits().to_le_bytes()));
}

/// Decodes what [`encode_dataset`] wrote. Never panics on any input.
///
/// # Errors
/// [`RecordError`] saying what is wrong (truncated, bad JSON, corrupt manifest, entry counts that do
/// not match an array's grid, trailing bytes).
pub fn decode_dataset(bytes: &[u8], budget: &OwnedBytesBudget) -> Result<VirtualDataset, RecordError> {
    let mut cur = Reader { bytes };
    let len = u32::from_le_bytes(
        cur.take(4, "metadata length")?
            .try_into()
            .map_err(|_| RecordError::Malformed { what: "metadata length".into() })?,
    );
    let meta: Meta = serde_json::from_slice(cur.take(len as usize, "metadata")?).map_err(RecordError::Metadata)?;
    let sources = SourceTable::decode(cur.blob("source table")?).map_err(RecordError::Sources)?;
    let mut concat = Vec::with_capacity(meta.concat.len());
    for c in meta.concat {
        let values = cur.f64s(&c.dim)?.into();
        let bounds = match c.bounds {
            Some(name) => Some((name.clone(), cur.f64s(&name)?.into())),
            None => None,
        };
        concat.push(ConcatCoordinate { dim: c.dim, values, units: c.units, calendar: c.calendar, bounds });
    }
    let mut arrays = Vec::with_capacity(meta.arrays.len());
    for a in meta.arrays {
        arrays.push(decode_array(&mut cur, a, budget)?);
    }
    if !cur.bytes.is_empty() {
        return Err(RecordError::Trailing { len: cur.bytes.len() });
    }
    for array in &arrays {
        check_entries(array, &sources)?;
    }
    let mut encodings = meta.group_encodings;
    let groups = meta
        .groups
        .into_iter()
        .map(|(path, attributes)| {
            let attribute_encodings = encodings.remove(&path).unwrap_or_default();
            GroupNode { path, attributes, attribute_encodings }
        })
        .collect();
    Ok(VirtualDataset {
        sources,
        groups,
        arrays,
        warnings: meta.warnings,
        provenance: meta.provenance,
        concat,
        hdf5_links: meta.hdf5_links,
    })
}

fn decode_array(cur: &mut Reader<'_>, a: ArrayMeta, budget: &OwnedBytesBudget) -> Result<VirtualArray, RecordError> {
    let array = || a.path.clone();
    let metadata = ArrayMetadata::from_json(&a.metadata)
        .map_err(|source| RecordError::ArrayMetadata { array: array(), source })?;
    let entries_error = |source| RecordError::Entries { array: array(), source };
    let entries = ManifestIndex::decode_all(cur.blob("chunk entries")?).map_err(entries_error)?;
    if entries.len() as u64 != metadata.chunk_grid.num_chunks() {
        let chunks = metadata.chunk_grid.num_chunks();
        return Err(RecordError::EntryCount { array: array(), entries: entries.len(), chunks });
    }
    let owned = OwnedBytes::from_vec(cur.blob("owned bytes")?.to_vec(), budget)
        .map_err(|source| RecordError::Owned { array: array(), source })?;
    let mut tails = Vec::with_capacity(a.tails.len());
    for (dims, rewritten) in a.tails {
        let indices = cur.u64s("tail chunk indices")?;
        let trimmed = ManifestIndex::decode_all(cur.blob("tail entries")?).map_err(entries_error)?;
        if trimmed.len() != indices.len() {
            return Err(RecordError::TailCount { array: array(), indices: indices.len(), entries: trimmed.len() });
        }
        tails.push(TailChunks { dims, entries: indices.into_iter().zip(trimmed).collect(), rewritten });
    }
    Ok(VirtualArray {
        path: a.path,
        metadata,
        chunks: ChunkTable::from_entries(entries, owned),
        rewritten_chunks: a.rewritten_chunks,
        digest: a.digest,
        tails,
    })
}

/// Every entry of the array (its tails too) points inside its source file (as the scan checked) or
/// inside the array's owned bytes.
fn check_entries(array: &VirtualArray, sources: &SourceTable) -> Result<(), RecordError> {
    let tails = array.tails.iter().flat_map(|t| t.entries.iter().map(|(_, e)| *e));
    for entry in array.chunks.iter().chain(tails) {
        let (end, limit, within) = match entry {
            ChunkEntry::Missing => continue,
            ChunkEntry::Source { source, offset, length } => {
                let size = sources.get(source).map(|s| s.size);
                (offset.checked_add(length), size, format!("source file {source}"))
            }
            ChunkEntry::Owned { offset, length } => {
                (offset.checked_add(length), Some(array.chunks.owned.len()), "the owned bytes".to_string())
            }
        };
        if !matches!((end, limit), (Some(end), Some(limit)) if end <= limit) {
            return Err(RecordError::Outside { array: array.path.clone(), within, entry });
        }
    }
    Ok(())
}

/// A cursor over a record's bytes; every read is checked against what is left.
struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, len: usize, what: &str) -> Result<&'a [u8], RecordError> {
        if len > self.bytes.len() {
            return Err(RecordError::Truncated { what: what.into(), need: len, have: self.bytes.len() });
        }
        let (head, rest) = self.bytes.split_at(len);
        self.bytes = rest;
        Ok(head)
    }

    fn u64(&mut self, what: &str) -> Result<u64, RecordError> {
        let bytes = self.take(8, what)?;
        Ok(u64::from_le_bytes(bytes.try_into().map_err(|_| RecordError::Malformed { what: what.into() })?))
    }

    /// A u64 count of 8-byte items, checked against the bytes left: the items' bytes.
    fn items(&mut self, what: &str) -> Result<&'a [u8], RecordError> {
        let count = self.u64(what)?;
        let len = count
            .checked_mul(8)
            .and_then(|n| usize::try_from(n).ok())
            .ok_or_else(|| RecordError::CountTooLarge { what: what.into(), count })?;
        self.take(len, what)
    }

    fn blob(&mut self, what: &str) -> Result<&'a [u8], RecordError> {
        let len = self.u64(what)?;
        self.take(usize::try_from(len).map_err(|_| RecordError::LengthTooLarge { what: what.into(), len })?, what)
    }

    fn u64s(&mut self, what: &str) -> Result<Vec<u64>, RecordError> {
        let raw = self.items(what)?;
        Ok(raw.chunks_exact(8).map(|b| u64::from_le_bytes(b.try_into().unwrap_or_default())).collect())
    }

    fn f64s(&mut self, what: &str) -> Result<Vec<f64>, RecordError> {
        Ok(self.u64s(what)?.into_iter().map(f64::from_bits).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncations_and_garbage_are_errors() {
        let dataset = VirtualDataset {
            concat: vec![ConcatCoordinate {
                dim: "time".into(),
                values: vec![0.5, f64::NAN].into(),
                units: Some("days".into()),
                calendar: None,
                bounds: Some(("time_bnds".into(), vec![0.0, 1.0, 1.0, 2.0].into())),
            }],
            ..VirtualDataset::default()
        };
        let bytes = encode_dataset(&dataset).unwrap();
        let back = decode_dataset(&bytes, &OwnedBytesBudget::unlimited()).unwrap();
        assert_eq!(back.concat[0].values.get(0), Some(0.5));
        assert_eq!(back.concat[0].values.get(1).map(f64::to_bits), Some(f64::NAN.to_bits()));
        assert_eq!(back.concat[0].bounds, dataset.concat[0].bounds);
        for len in 0..bytes.len() {
            assert!(
                decode_dataset(&bytes[..len], &OwnedBytesBudget::unlimited()).is_err(),
                "truncated at {len} accepted"
            );
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(decode_dataset(&longer, &OwnedBytesBudget::unlimited()).is_err());
        let mut huge = bytes;
        let at = huge.len() - 8 * 4 - 8;
        huge[at..at + 8].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(decode_dataset(&huge, &OwnedBytesBudget::unlimited()).is_err());
    }
}
