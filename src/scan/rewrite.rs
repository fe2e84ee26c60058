//! Chunks that cannot be referenced as stored and are rewritten into store-owned bytes.
//!
//! Three cases arise when scanning one file: a chunk whose filter mask says some filters were skipped
//! (its bytes do not match the array's codec list), a chunk that straddles the end of its HDF5
//! dataset while the netCDF view of the variable is longer (libnetcdf reads the part past the dataset
//! as the fill value, whatever the chunk holds there), and every chunk of a variable whose pipeline
//! has a filter no Zarr codec describes (szip, PyTables' LZO: [`crate::codec::SourceFilter`]), whose
//! array codecs are then the pipeline's shuffle and zstd. Each is decoded with the filters actually
//! applied, patched, and re-encoded with the array's full codec chain, one chunk at a time.

use crate::codec::{decode_filters, ByteSwap, Codec, CodecChain, CodecError, Filter};
use crate::ndcopy::fill_outside;

/// The codecs of one array, per pipeline position, so that masked chunks can be decoded.
#[derive(Debug, Clone)]
pub(crate) struct ArrayCodecs {
    /// The `bytes` codec.
    pub(crate) bytes: Codec,
    /// One stage per HDF5 filter, in pipeline (encode) order.
    pub(crate) filters: Vec<Filter>,
    /// The full chain written to `zarr.json`.
    pub(crate) full: CodecChain,
    /// Bytes per element.
    pub(crate) element_size: usize,
    /// How elements are byte-swapped (`DataType::byte_swap`).
    pub(crate) swap: ByteSwap,
}

impl ArrayCodecs {
    /// The filters a chunk written with filter mask `mask` went through (bit i set: filter i skipped).
    fn applied(&self, mask: u32) -> Vec<Filter> {
        let applied = self.filters.iter().enumerate().filter(|&(i, _)| i >= 32 || mask & (1 << i) == 0);
        applied.map(|(_, filter)| filter.clone()).collect()
    }

    /// Decodes `stored` (written with `mask`), sets elements outside `valid` to `fill`, and encodes the
    /// result with the full chain. `chunk_shape` is the chunk's full shape.
    pub(crate) fn rewrite(
        &self,
        stored: &[u8],
        mask: u32,
        chunk_shape: &[u64],
        valid: &[u64],
        fill: &[u8],
    ) -> Result<Vec<u8>, CodecError> {
        let len = chunk_shape.iter().product::<u64>() as usize * self.element_size;
        let mut decoded = vec![0; len];
        decode_filters(&self.applied(mask), stored, &mut decoded)?;
        let mut native = CodecChain::new(vec![self.bytes.clone()])?.decode(&decoded, self.swap, len)?;
        fill_outside(&mut native, chunk_shape, valid, fill);
        self.full.encode(&native, self.swap)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::Endian;

    fn codecs() -> ArrayCodecs {
        let bytes = Codec::Bytes { endian: Some(Endian::Big) };
        let codecs = vec![Codec::Shuffle { element_size: 4 }, Codec::Zlib { level: 1 }];
        let full = CodecChain::new([vec![bytes.clone()], codecs.clone()].concat()).unwrap();
        let filters = codecs.into_iter().map(Filter::Codec).collect();
        ArrayCodecs { bytes, filters, full, element_size: 4, swap: ByteSwap::Unit(4) }
    }

    #[test]
    fn masked_chunk_is_reencoded_with_all_filters() {
        let c = codecs();
        let values: Vec<u8> = (0..12u32).flat_map(u32::to_ne_bytes).collect();
        // Written with zlib skipped (bit 1): only shuffle applied.
        let only_shuffle = CodecChain::new(vec![c.bytes.clone(), Codec::Shuffle { element_size: 4 }]).unwrap();
        let stored = only_shuffle.encode(&values, 4).unwrap();
        let rewritten = c.rewrite(&stored, 0b10, &[3, 4], &[3, 4], &[0; 4]).unwrap();
        assert_eq!(c.full.decode(&rewritten, 4, 48).unwrap(), values);
    }

    #[test]
    fn elements_past_the_dataset_become_fill() {
        let c = codecs();
        let values: Vec<u8> = (0..12u32).flat_map(u32::to_ne_bytes).collect();
        let stored = c.full.encode(&values, 4).unwrap();
        let fill = 7u32.to_ne_bytes();
        let out = c.full.decode(&c.rewrite(&stored, 0, &[3, 4], &[2, 4], &fill).unwrap(), 4, 48).unwrap();
        let got: Vec<u32> = out.chunks(4).map(|b| u32::from_ne_bytes([b[0], b[1], b[2], b[3]])).collect();
        assert_eq!(got, [0, 1, 2, 3, 4, 5, 6, 7, 7, 7, 7, 7]);
    }
}
