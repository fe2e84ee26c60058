//! The binding trailer of a version-2 `manifest.bin` (store format 2): what the manifest was written
//! for, so that an edited `zarr.json` or a swapped `sources.bin` is an error instead of wrong values,
//! and the CRC-32C of every store-owned chunk, so that a flipped bit in `owned.bin` is too.
//!
//! It follows the block index (which version-1 readers take as the end of what they read, so they
//! still read these manifests):
//!
//! ```text
//! [ footer: 96 bytes ][ owned sums: count x 20 bytes ]
//! footer: magic "VZBIND\0\x01" | SHA-256 of the decoding metadata (32) | SHA-256 of sources.bin (32)
//!         | count: u64 | 12 reserved zero bytes | CRC-32 (IEEE) of bytes 0..92
//! owned sum: offset u64 | length u64 | CRC-32C u32   (sorted by offset, one per distinct range)
//! ```

pub(crate) use super::sha256::sha256;
/// Why store-owned bytes fail their check ([`Binding::check_owned`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum OwnedCheckError {
    /// Bytes whose CRC-32C differs from the recorded one.
    #[error(
        "store-owned chunk at offset {offset}: CRC-32C mismatch (stored {stored:#010x}, computed {computed:#010x})"
    )]
    Mismatch {
        /// Their offset in `owned.bin`.
        offset: u64,
        /// The CRC-32C recorded.
        stored: u32,
        /// The CRC-32C of the bytes read.
        computed: u32,
    },
    /// A range no checksum is recorded for.
    #[error("store-owned bytes {offset}+{length}: no checksum recorded in the manifest")]
    NoChecksum {
        /// Their offset in `owned.bin`.
        offset: u64,
        /// Their length.
        length: u64,
    },
}

#[cfg(test)]
use super::ChunkEntry;
use super::{crc32, ManifestError};

/// Magic bytes opening the binding footer.
pub(crate) const BINDING_MAGIC: [u8; 8] = *b"VZBIND\0\x01";
/// Length of the binding footer.
pub(crate) const FOOTER_LEN: u64 = 96;
/// Length of one owned-chunk checksum record.
pub(crate) const OWNED_SUM_LEN: u64 = 20;

/// The Zarr v3 `zarr.json` fields that decide how stored bytes decode.
pub(crate) const DECODING_FIELDS: [&str; 5] = ["shape", "data_type", "chunk_grid", "codecs", "fill_value"];

/// A manifest's binding: the digests it was written with and its owned-chunk checksums.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Binding {
    /// [`metadata_digest`] of the array's `zarr.json`.
    pub metadata_digest: [u8; 32],
    /// SHA-256 of the store's `sources.bin`.
    pub sources_digest: [u8; 32],
    /// CRC-32C of each store-owned chunk, sorted by offset.
    pub owned: Vec<OwnedSum>,
}

/// The checksum of one store-owned byte range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct OwnedSum {
    /// Offset in `owned.bin`.
    pub offset: u64,
    /// Length in bytes.
    pub length: u64,
    /// CRC-32C (Castagnoli) of the bytes.
    pub crc32c: u32,
}

/// SHA-256 of the decoding fields of a `zarr.json` document (`DECODING_FIELDS`, objects with their
/// keys sorted, so that only a change of value counts). Attributes and dimension names are left out:
/// editing them stays free.
pub fn metadata_digest(doc: &serde_json::Value) -> [u8; 32] {
    let mut text = String::new();
    for field in DECODING_FIELDS {
        text.push_str(field);
        text.push('=');
        canonical(doc.get(field).unwrap_or(&serde_json::Value::Null), &mut text);
        text.push('\n');
    }
    sha256(text.as_bytes())
}

fn canonical(value: &serde_json::Value, out: &mut String) {
    match value {
        serde_json::Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&serde_json::Value::String(k.clone()).to_string());
                out.push(':');
                canonical(&map[k], out);
            }
            out.push('}');
        }
        serde_json::Value::Array(items) => {
            out.push('[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(v, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

impl Binding {
    /// Why the array's `zarr.json` (`doc`) or the store's `sources.bin` (SHA-256 `sources_digest`)
    /// is not what this manifest was written for, or `None` when both are: the native store's one
    /// binding check, shared by its reader and `append`.
    #[must_use]
    pub(crate) fn mismatch(&self, doc: &serde_json::Value, sources_digest: &[u8; 32]) -> Option<String> {
        let what = if self.metadata_digest != metadata_digest(doc) {
            format!("zarr.json ({})", DECODING_FIELDS.join(", "))
        } else if self.sources_digest != *sources_digest {
            "sources.bin".to_string()
        } else {
            return None;
        };
        Some(format!("{what} differs from the one its manifest was written for (edited or swapped?)"))
    }

    /// The binding of an array: digests plus the CRC-32C of each owned range of `entries` in
    /// `owned` (ranges outside `owned` are left out; the writer has checked them).
    #[cfg(test)]
    pub(crate) fn new<E: std::borrow::Borrow<ChunkEntry>>(
        metadata_digest: [u8; 32],
        sources_digest: [u8; 32],
        entries: impl IntoIterator<Item = E>,
        owned: &[u8],
    ) -> Self {
        let sums: Vec<OwnedSum> = entries
            .into_iter()
            .filter_map(|e| match *e.borrow() {
                ChunkEntry::Owned { offset, length } => {
                    let (from, to) =
                        (usize::try_from(offset).ok()?, usize::try_from(offset.checked_add(length)?).ok()?);
                    Some(OwnedSum { offset, length, crc32c: crc32c::crc32c(owned.get(from..to)?) })
                }
                _ => None,
            })
            .collect();
        Binding::with_sums(metadata_digest, sources_digest, sums)
    }

    /// The binding of an array whose owned-chunk checksums the caller computed (owned bytes that
    /// are not one slice in memory): `sums` in any order, repeated ranges once.
    pub(crate) fn with_sums(metadata_digest: [u8; 32], sources_digest: [u8; 32], mut sums: Vec<OwnedSum>) -> Self {
        sums.sort_by_key(|s| (s.offset, s.length));
        sums.dedup();
        Binding { metadata_digest, sources_digest, owned: sums }
    }

    /// The trailer bytes: footer, then the owned sums.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(FOOTER_LEN as usize + self.owned.len() * OWNED_SUM_LEN as usize);
        out.extend_from_slice(&BINDING_MAGIC);
        out.extend_from_slice(&self.metadata_digest);
        out.extend_from_slice(&self.sources_digest);
        out.extend_from_slice(&(self.owned.len() as u64).to_le_bytes());
        out.extend_from_slice(&[0u8; 12]);
        let crc = crc32(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        for s in &self.owned {
            out.extend_from_slice(&s.offset.to_le_bytes());
            out.extend_from_slice(&s.length.to_le_bytes());
            out.extend_from_slice(&s.crc32c.to_le_bytes());
        }
        out
    }

    /// Parses the footer: the binding without its owned sums, and their count, checked to be at most
    /// `max_owned` (the header's owned-entry count) before anything is allocated for them.
    ///
    /// # Errors
    /// [`ManifestError`] for a short footer, bad magic, checksum mismatch, non-zero reserved bytes
    /// or a count above `max_owned`.
    pub(crate) fn parse_footer(bytes: &[u8], max_owned: u64) -> Result<(Self, u64), ManifestError> {
        let needed = FOOTER_LEN;
        if (bytes.len() as u64) < needed {
            let available = bytes.len() as u64;
            return Err(ManifestError::Truncated { what: "manifest binding", needed, available });
        }
        if bytes[..8] != BINDING_MAGIC {
            return Err(ManifestError::BadMagic { file: "manifest binding", found: bytes[..8].to_vec() });
        }
        let (stored, computed) =
            (u32::from_le_bytes(bytes[92..96].try_into().unwrap_or_default()), crc32(&bytes[..92]));
        if stored != computed {
            return Err(ManifestError::ChecksumMismatch { what: "manifest binding".into(), stored, computed });
        }
        let count = u64::from_le_bytes(bytes[72..80].try_into().unwrap_or_default());
        if bytes[80..92].iter().any(|&b| b != 0) || count > max_owned {
            return Err(ManifestError::InvalidHeader { reason: "binding footer: bad reserved bytes or owned count" });
        }
        let mut binding = Binding::default();
        binding.metadata_digest.copy_from_slice(&bytes[8..40]);
        binding.sources_digest.copy_from_slice(&bytes[40..72]);
        Ok((binding, count))
    }

    /// Adds the owned sums parsed from `bytes` (exactly `count` records, sorted by offset).
    ///
    /// # Errors
    /// [`ManifestError`] when `bytes` is not `count` records or they are not sorted.
    pub(crate) fn parse_sums(&mut self, bytes: &[u8], count: u64) -> Result<(), ManifestError> {
        let needed = count.saturating_mul(OWNED_SUM_LEN);
        if bytes.len() as u64 != needed {
            let available = bytes.len() as u64;
            return Err(ManifestError::Truncated { what: "manifest owned checksums", needed, available });
        }
        let le = |b: &[u8]| u64::from_le_bytes(b.try_into().unwrap_or_default());
        self.owned = bytes
            .chunks_exact(OWNED_SUM_LEN as usize)
            .map(|r| OwnedSum {
                offset: le(&r[0..8]),
                length: le(&r[8..16]),
                crc32c: u32::from_le_bytes(r[16..20].try_into().unwrap_or_default()),
            })
            .collect();
        if self.owned.windows(2).any(|w| (w[0].offset, w[0].length) >= (w[1].offset, w[1].length)) {
            return Err(ManifestError::InvalidHeader { reason: "binding: owned checksums not sorted" });
        }
        Ok(())
    }

    /// Checks `bytes`, read at `offset` of `owned.bin`, against their recorded CRC-32C.
    ///
    /// # Errors
    /// [`OwnedCheckError`] when no checksum is recorded for the range or it differs.
    pub(crate) fn check_owned(&self, offset: u64, bytes: &[u8]) -> Result<(), OwnedCheckError> {
        let length = bytes.len() as u64;
        let at = self.owned.partition_point(|s| (s.offset, s.length) < (offset, length));
        match self.owned.get(at) {
            Some(s) if s.offset == offset && s.length == length => {
                let computed = crc32c::crc32c(bytes);
                if computed == s.crc32c {
                    Ok(())
                } else {
                    Err(OwnedCheckError::Mismatch { offset, stored: s.crc32c, computed })
                }
            }
            _ => Err(OwnedCheckError::NoChecksum { offset, length }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_checks() {
        let owned = b"hello world".to_vec();
        let entries = [
            ChunkEntry::Owned { offset: 6, length: 5 },
            ChunkEntry::Missing,
            ChunkEntry::Owned { offset: 0, length: 5 },
            ChunkEntry::Owned { offset: 0, length: 5 },
        ];
        let b = Binding::new([1; 32], [2; 32], entries.iter(), &owned);
        assert_eq!(b.owned.len(), 2);
        let bytes = b.encode();
        let (mut parsed, count) = Binding::parse_footer(&bytes, 3).unwrap();
        parsed.parse_sums(&bytes[FOOTER_LEN as usize..], count).unwrap();
        assert_eq!(parsed, b);
        assert!(parsed.check_owned(6, b"world").is_ok());
        assert!(parsed.check_owned(6, b"worle").unwrap_err().to_string().contains("CRC-32C mismatch"));
        assert!(parsed.check_owned(5, b" worl").unwrap_err().to_string().contains("no checksum"));
        assert!(Binding::parse_footer(&bytes, 1).is_err());
        let mut flipped = bytes.clone();
        flipped[20] ^= 1;
        assert!(matches!(Binding::parse_footer(&flipped, 3), Err(ManifestError::ChecksumMismatch { .. })));
    }

    #[test]
    fn metadata_digest_ignores_attributes_and_key_order() {
        let a = serde_json::json!({"shape": [3], "data_type": "int16", "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}], "attributes": {"x": 1}});
        let b = serde_json::json!({"attributes": {"x": 2}, "codecs": [{"configuration": {"endian": "little"}, "name": "bytes"}], "data_type": "int16", "shape": [3]});
        assert_eq!(metadata_digest(&a), metadata_digest(&b));
        let c = serde_json::json!({"shape": [3], "data_type": "int16", "codecs": [{"name": "bytes", "configuration": {"endian": "big"}}]});
        assert_ne!(metadata_digest(&a), metadata_digest(&c));
    }
}
