//! What combining needs from a sidecar's scan beyond the references, as the other scanners give it
//! (input: a translated array and the data file; output: its digest, its trimmed partial last chunks,
//! the concatenation coordinate's values): values are read back through the array's own chunk table
//! and codecs, so they are exactly what a reader of the store sees. Only arrays chunked along their
//! first dimension alone (every coordinate, every contiguous layout) are read back whole; others get
//! no digest (the digest is an extra check, not a requirement).

use super::Context;
use crate::dataset::{ConcatCoordinate, VirtualArray};
use crate::manifest::ChunkEntry;
use crate::metadata::DataType;
use crate::scan::tail::{prepare_tails, TailError};
use crate::scan::{concat_axes, digest, wants_digest, ScanError};

/// Most bytes of values read back for a coordinate.
const MAX_VALUE_BYTES: u64 = 128 << 20;

/// Why values could not be read back.
#[derive(Debug, thiserror::Error)]
pub(super) enum ValuesError {
    /// An array chunked along more than its first dimension.
    #[error("{0} is chunked along more than its first dimension")]
    Chunking(String),
    /// An array larger than the limit.
    #[error("{path} holds more than {limit} bytes")]
    TooLarge {
        /// The array.
        path: String,
        /// The limit.
        limit: u64,
    },
    /// A chunk larger than the limit.
    #[error("a chunk larger than the limit")]
    ChunkTooLarge,
    /// Stored bytes could not be read.
    #[error("{0}")]
    Read(#[from] super::files::FilesError),
    /// A chunk does not decode.
    #[error("{0}")]
    Decode(#[from] crate::codec::CodecError),
    /// A store-owned chunk could not be read.
    #[error("{0}")]
    Owned(#[from] crate::dataset::OwnedBytesError),
}

/// Sets the digest of a small array and prepares its trimmed last chunks along the concatenation
/// dimensions.
pub(super) fn complete(ctx: &Context<'_>, array: &mut VirtualArray) -> Result<(), ScanError> {
    let numeric = !matches!(
        array.metadata.data_type,
        DataType::Struct(_)
            | DataType::FixedBytes(_)
            | DataType::String
            | DataType::RawBytes(_)
            | DataType::FixedUtf32(_)
    );
    if numeric && wants_digest(ctx.options, array) {
        array.digest = values(ctx, array, ctx.options.digest_max_bytes).ok().map(|v| digest(&v));
    }
    let names = array.metadata.dimension_names.clone().unwrap_or_default();
    let axes: Vec<usize> = concat_axes(ctx.options, &names).collect();
    if axes.is_empty() {
        return Ok(());
    }
    let variable = array.path.clone();
    let failed = |what: &str, why: crate::scan::BoxError| ctx.variable_error(&variable, what, why);
    let mut read = |source: u32, offset: u64, length: u64| {
        ctx.files.read(source, offset, length).map_err(|why| failed("reading a partial last chunk", why.into()))
    };
    prepare_tails(array, &axes, &mut read).map_err(|e| match e {
        TailError::Read(e) => e,
        TailError::Codec(e) => failed("trimming the partial last chunk", e.into()),
        TailError::Owned(source) => ctx.owned_error(&variable, source),
    })
}

/// The coordinate array of `dim` (named `dim`, one-dimensional along `dim`), decoded to f64.
pub(super) fn concat_coordinate(
    ctx: &Context<'_>,
    arrays: &[VirtualArray],
    dim: &str,
) -> Result<Option<ConcatCoordinate>, ValuesError> {
    crate::scan::coordinate::concat_coordinate(arrays, dim, |a| values(ctx, a, MAX_VALUE_BYTES))
}

/// The native-endian values of `array`, when it is chunked along its first dimension only and holds
/// at most `limit` bytes.
fn values(ctx: &Context<'_>, array: &VirtualArray, limit: u64) -> Result<Vec<u8>, ValuesError> {
    let meta = &array.metadata;
    let dims = meta.chunk_grid.dims();
    let es = meta.data_type.size();
    if dims.iter().skip(1).any(|d| d.num_chunks() != 1 || d.edge(0) != d.extent()) {
        return Err(ValuesError::Chunking(array.path.clone()));
    }
    let total = meta.shape().iter().try_fold(es as u64, |n, &d| n.checked_mul(d)).filter(|&t| t <= limit);
    let total = total.ok_or_else(|| ValuesError::TooLarge { path: array.path.clone(), limit })?;
    let row = dims.iter().skip(1).map(|d| d.extent()).product::<u64>() * es as u64;
    let rows: Vec<(u64, u64)> = match dims.first() {
        Some(d) => (0..d.num_chunks()).map(|k| (d.edge(k), d.valid(k))).collect(),
        None => vec![(1, 1)],
    };
    let mut out = Vec::with_capacity(total as usize);
    for (k, &(edge, valid)) in rows.iter().enumerate() {
        let decoded_len = edge.checked_mul(row).filter(|&n| n <= limit.max(row)).ok_or(ValuesError::ChunkTooLarge)?;
        let decoded_len = decoded_len as usize;
        let decoded = match array.chunks.get(k).unwrap_or(ChunkEntry::Missing) {
            ChunkEntry::Missing => meta.fill_value.as_bytes().repeat(decoded_len / es.max(1)),
            ChunkEntry::Source { source, offset, length } => {
                let stored = ctx.files.read(source, offset, length)?;
                meta.codecs.decode(&stored, es, decoded_len)?
            }
            ChunkEntry::Owned { offset, length } => {
                let stored = array.chunks.owned_chunk(offset, length)?;
                meta.codecs.decode(&stored, es, decoded_len)?
            }
        };
        let keep = ((valid * row) as usize).min(decoded.len());
        out.extend_from_slice(&decoded[..keep]);
    }
    Ok(out)
}
