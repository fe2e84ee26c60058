//! The hdf5-blosc2 filter (HDF5 filter 32026, PyTables' and hdf5plugin's `blosc2_filter.c`): every
//! HDF5 chunk is one Blosc2 contiguous frame, decoded in pure Rust.
//!
//! Stage: inside [`crate::codec`]; a [`super::SourceFilter`], decoded only (no Zarr codec reads these
//! frames: vzarr stores such chunks re-encoded, see `scan/rewrite`).
//!
//! What the filter writes (`blosc2_filter_function`): for a chunk of rank 2 to 8 (its `cd_values`
//! then hold the rank at index 7 and the chunk's shape after it), a b2nd array of the chunk's shape
//! (`b2nd_to_cframe`, see [`b2nd`]); else, and when an earlier filter (fletcher32) changed the
//! chunk's size, a super-chunk of one Blosc2 chunk (`blosc2_schunk_to_buffer`). Reading, the filter
//! goes by the frame, not the `cd_values`: a frame with a `b2nd` or `caterva` metalayer is decoded
//! as the array, in C order, checked against the rank and shape of the `cd_values` when they have
//! them; any other frame is its first chunk's bytes. The rest of the `cd_values` (block size, type
//! size, level, shuffle, compressor) only steer compression: every Blosc2 chunk names its own.
//!
//! Modules: [`frame`] (the frame: header, metalayers, chunk index), [`chunk`] (one Blosc2 chunk:
//! header, special values, streams, filters), [`b2nd`] (the array layout). The streams' codecs and the
//! bit shuffle are Blosc 1's (`blosc/block.rs`), the byte shuffle HDF5's.
//!
//! Hostile input: the decoded size is at most the caller's limit (the HDF5 chunk's size); see each
//! module for how it keeps to it.

mod b2nd;
mod chunk;
mod frame;
#[cfg(test)]
mod testing;

use super::CodecError;

/// The name errors carry.
const NAME: &str = "blosc2";
/// The most dimensions the filter writes b2nd arrays for (`BLOSC2_MAX_DIM`).
const MAX_DIM: usize = 8;

fn corrupt(reason: impl Into<String>) -> CodecError {
    CodecError::Corrupt { codec: NAME, source: std::io::Error::new(std::io::ErrorKind::InvalidData, reason.into()) }
}

fn unsupported(feature: impl Into<String>) -> CodecError {
    CodecError::Unsupported { codec: NAME, feature: feature.into() }
}

/// Why the blosc2 filter's `cd_values` are refused ([`Blosc2Params::from_cd_values`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Blosc2ParamsError {
    /// Fewer than the four values every blosc2 filter stores.
    #[error("{count} client data values, fewer than 4")]
    TooFew {
        /// How many values there are.
        count: usize,
    },
    /// A chunk rank outside 2 to 8.
    #[error("chunk rank {rank}, outside 2..={}", MAX_DIM)]
    Rank {
        /// The rank the values give.
        rank: u32,
    },
    /// Fewer chunk dimensions than the rank.
    #[error("{count} chunk dimensions of {rank}")]
    Dimensions {
        /// How many dimensions follow the rank.
        count: usize,
        /// The rank.
        rank: u32,
    },
}

/// What the blosc2 filter's `cd_values` say about decoding: the HDF5 chunk's rank and shape, which
/// the filter stores for b2nd chunks (rank 2 to 8) and checks b2nd arrays against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Blosc2Params {
    /// The chunk's rank when the `cd_values` give one (0: they do not).
    rank: u8,
    /// The chunk's shape, in the first `rank` entries.
    shape: [u32; MAX_DIM],
}

impl Blosc2Params {
    /// The parameters of the filter's `cd_values` (filter revision, block size, type size, chunk
    /// size, level, shuffle, compressor, then rank and chunk shape), refused as the filter refuses
    /// them when decoding.
    ///
    /// # Errors
    /// [`Blosc2ParamsError`], saying which value is missing or out of range.
    pub fn from_cd_values(cd: &[u32]) -> Result<Self, Blosc2ParamsError> {
        if cd.len() < 4 {
            return Err(Blosc2ParamsError::TooFew { count: cd.len() });
        }
        let Some(&rank) = cd.get(7) else { return Ok(Blosc2Params::default()) };
        if !(2..=MAX_DIM as u32).contains(&rank) {
            return Err(Blosc2ParamsError::Rank { rank });
        }
        let dims = cd.get(8..8 + rank as usize).ok_or(Blosc2ParamsError::Dimensions { count: cd.len() - 8, rank })?;
        let mut shape = [0; MAX_DIM];
        shape[..dims.len()].copy_from_slice(dims);
        Ok(Blosc2Params { rank: rank as u8, shape })
    }

    /// The HDF5 chunk's shape, when the `cd_values` give it.
    #[must_use]
    pub(crate) fn chunk_shape(&self) -> Option<&[u32]> {
        (self.rank > 0).then(|| &self.shape[..usize::from(self.rank)])
    }
}

/// Decodes one HDF5 chunk's frame into at most `limit` bytes.
///
/// # Errors
/// [`CodecError::DecodedTooLong`] when the frame holds more than `limit` bytes,
/// [`CodecError::Truncated`] or [`CodecError::Corrupt`] for a frame, chunk or stream that does not
/// hold together, [`CodecError::Unsupported`] for a feature vzarr does not decode (dictionaries,
/// user-defined codecs and filters, sparse frames, variable-length blocks).
pub(super) fn decompress(params: &Blosc2Params, input: &[u8], limit: usize) -> Result<Vec<u8>, CodecError> {
    // Every chunk of a frame holds at least one byte (or, in a b2nd array, one element).
    let frame = frame::Frame::parse(input, limit.max(1))?;
    let meta = match frame.metalayer("b2nd")? {
        Some(meta) => Some(meta),
        None => frame.metalayer("caterva")?,
    };
    if let Some(meta) = meta {
        return b2nd::decode(&frame, &b2nd::Layout::parse(meta)?, params, limit);
    }
    if frame.nchunks() == 0 {
        return Err(corrupt("a frame with no chunk"));
    }
    let bytes = frame.chunk(0, limit)?;
    let chunk = bytes.parse()?;
    if chunk.nbytes() > limit {
        return Err(CodecError::DecodedTooLong { codec: NAME, limit });
    }
    let mut out = vec![0; chunk.nbytes()];
    chunk.decode_into(&mut out)?;
    Ok(out)
}

#[cfg(test)]
mod tests;
