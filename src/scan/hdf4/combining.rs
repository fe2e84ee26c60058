//! What combining HDF4 files needs from the scan (as the other scanners give it): digests of small
//! arrays taken once from the first file, the concatenation coordinate's values, and trimmed copies
//! of partial last chunks along concatenation dimensions (`scan/tail`).
//!
//! Values are read back through the array's own chunk table and codecs, so they are exactly what a
//! reader of the store sees, from the file or from the external files its data sets lie in
//! ([`Sources`]). Only arrays chunked along their first dimension alone (every coordinate, every
//! contiguous or whole-array layout) are read this way; others get no digest.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use crate::dataset::{ConcatCoordinate, VirtualArray};
use crate::manifest::{ChunkEntry, SourceTable};
use crate::scan::tail::{prepare_tails, TailError};
use crate::scan::{concat_axes, digest, wants_digest, ScanError, ScanOptions};
use crate::source::ByteSource;

/// Why values could not be read back.
#[derive(Debug, thiserror::Error)]
pub(super) enum ValuesError {
    /// Reading stored bytes failed.
    #[error("{0}")]
    Read(#[source] Box<super::Hdf4Error>),
    /// A chunk names a source the table does not have.
    #[error("no source {0}")]
    NoSource(u32),
    /// An external file could not be opened.
    #[error("{0}")]
    Open(#[from] super::external::OpenError),
    /// An array chunked along more than its first dimension.
    #[error("{0} is chunked along more than its first dimension")]
    Chunking(String),
    /// An array larger than the limit.
    #[error("{path} holds {total} bytes, more than {limit}")]
    TooLarge {
        /// The array.
        path: String,
        /// Its bytes.
        total: u64,
        /// The limit.
        limit: u64,
    },
    /// A chunk larger than the limit.
    #[error("a chunk larger than the limit")]
    ChunkTooLarge,
    /// A chunk does not decode.
    #[error("{0}")]
    Decode(#[from] crate::codec::CodecError),
    /// A store-owned chunk could not be read.
    #[error("{0}")]
    Owned(#[from] crate::dataset::OwnedBytesError),
}

/// The bytes of a scan's sources: the HDF4 file (source 0) and its external files, opened when first
/// read (local files, or objects through `ScanOptions::runtime`).
pub(super) struct Sources<'a> {
    file: &'a dyn ByteSource,
    table: &'a SourceTable,
    options: &'a ScanOptions,
    opened: HashMap<u32, Arc<dyn ByteSource>>,
}

impl<'a> Sources<'a> {
    pub(super) fn new(file: &'a dyn ByteSource, table: &'a SourceTable, options: &'a ScanOptions) -> Self {
        Sources { file, table, options, opened: HashMap::new() }
    }

    /// `length` bytes at `offset` of source `source`.
    fn read(&mut self, source: u32, offset: u64, length: u64) -> Result<Vec<u8>, ValuesError> {
        let failed = |e| ValuesError::Read(Box::new(e));
        if source == 0 {
            return super::read_exact(self.file, offset, length, "stored values").map(|b| b.to_vec()).map_err(failed);
        }
        let bytes = match self.opened.get(&source) {
            Some(bytes) => bytes.clone(),
            None => {
                let location = self.table.get(source).ok_or(ValuesError::NoSource(source))?.location.clone();
                let bytes = super::external::open(&location, self.options)?;
                self.opened.insert(source, bytes.clone());
                bytes
            }
        };
        let what = format!("external file {}", self.table.get(source).map_or("?", |s| s.location.as_str()));
        super::read_exact(bytes.as_ref(), offset, length, &what).map(|b| b.to_vec()).map_err(failed)
    }
}

/// Most bytes of values read back for a coordinate.
const MAX_VALUE_BYTES: u64 = 128 << 20;

/// The native-endian values of `array`, when it is chunked along its first dimension only.
fn values(sources: &mut Sources<'_>, array: &VirtualArray, limit: u64) -> Result<Vec<u8>, ValuesError> {
    let meta = &array.metadata;
    let dims = meta.chunk_grid.dims();
    let es = meta.data_type.size();
    if dims.iter().skip(1).any(|d| d.num_chunks() != 1 || d.edge(0) != d.extent()) {
        return Err(ValuesError::Chunking(array.path.clone()));
    }
    let total = meta.shape().iter().product::<u64>() * es as u64;
    if total > limit {
        return Err(ValuesError::TooLarge { path: array.path.clone(), total, limit });
    }
    let row = dims.iter().skip(1).map(|d| d.extent()).product::<u64>() * es as u64;
    // (edge, valid) rows of each chunk along the first dimension; a scalar is one chunk of one.
    let rows: Vec<(u64, u64)> = match dims.first() {
        Some(d) => (0..d.num_chunks()).map(|k| (d.edge(k), d.valid(k))).collect(),
        None => vec![(1, 1)],
    };
    let mut out = Vec::with_capacity(total as usize);
    for (k, &(edge, valid)) in rows.iter().enumerate() {
        let decoded_len = edge.checked_mul(row).filter(|&n| n <= limit.max(row)).ok_or(ValuesError::ChunkTooLarge)?;
        let decoded_len = decoded_len as usize;
        let entry = array.chunks.get(k).unwrap_or(ChunkEntry::Missing);
        let decoded = match entry {
            ChunkEntry::Missing => meta.fill_value.as_bytes().repeat(decoded_len / es.max(1)),
            ChunkEntry::Source { source, offset, length } => {
                let stored = sources.read(source, offset, length)?;
                meta.codecs.decode(&stored, es, decoded_len)?
            }
            ChunkEntry::Owned { offset, length } => {
                let stored = array.chunks.owned_chunk(offset, length)?;
                meta.codecs.decode(&stored, es, decoded_len)?
            }
        };
        out.extend_from_slice(&decoded[..(valid * row) as usize]);
    }
    Ok(out)
}

/// Sets the digest of a small array (no digest when its values cannot be read back).
pub(super) fn add_digest(sources: &mut Sources<'_>, options: &ScanOptions, array: &mut VirtualArray) {
    if wants_digest(options, array) {
        array.digest = values(sources, array, options.digest_max_bytes).ok().map(|v| digest(&v));
    }
}

/// The coordinate array of `dim` (named `dim`, one-dimensional along `dim`), decoded to f64.
///
/// # Errors
/// [`ValuesError`] when its values cannot be read back.
pub(super) fn concat_coordinate(
    sources: &mut Sources<'_>,
    arrays: &[VirtualArray],
    dim: &str,
) -> Result<Option<ConcatCoordinate>, ValuesError> {
    crate::scan::coordinate::concat_coordinate(arrays, dim, |a| values(sources, a, MAX_VALUE_BYTES))
}

/// Prepares trimmed copies of the partial last chunks along the concatenation dimensions.
///
/// # Errors
/// [`ScanError`] naming the array when a chunk cannot be read, decoded or re-encoded.
pub(super) fn add_tails(
    path: &Path,
    sources: &mut Sources<'_>,
    options: &ScanOptions,
    array: &mut VirtualArray,
) -> Result<(), ScanError> {
    let names = array.metadata.dimension_names.clone().unwrap_or_default();
    let axes: Vec<usize> = concat_axes(options, &names).collect();
    if axes.is_empty() {
        return Ok(());
    }
    let variable = array.path.clone();
    let failed = |what: &str, source: Box<dyn std::error::Error + Send + Sync>| ScanError::Variable {
        path: path.to_path_buf(),
        variable: variable.clone(),
        what: what.into(),
        source,
    };
    let mut read = |source: u32, offset: u64, length: u64| {
        sources.read(source, offset, length).map_err(|e| failed("reading a partial last chunk", e.into()))
    };
    prepare_tails(array, &axes, &mut read).map_err(|e| match e {
        TailError::Read(e) => e,
        TailError::Codec(e) => failed("trimming the partial last chunk", e.into()),
        TailError::Owned(source) => {
            ScanError::Owned { path: path.to_path_buf(), variable: variable.clone(), source: Box::new(source) }
        }
    })
}
