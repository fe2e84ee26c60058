//! Chunks that cannot be referenced as stored and are rewritten into store-owned bytes.
//!
//! Two cases arise when scanning one file: a chunk whose filter mask says some filters were skipped
//! (its bytes do not match the array's codec list), and a chunk that straddles the end of its HDF5
//! dataset while the netCDF view of the variable is longer (libnetcdf reads the part past the dataset
//! as the fill value, whatever the chunk holds there). Both are decoded with the filters actually
//! applied, patched, and re-encoded with the array's full codec chain.

use crate::codec::{ByteSwap, Codec, CodecChain, CodecError};
use crate::ndcopy::fill_outside;

/// The codecs of one array, per pipeline position, so that masked chunks can be decoded.
#[derive(Debug, Clone)]
pub(crate) struct ArrayCodecs {
    /// The `bytes` codec.
    pub(crate) bytes: Codec,
    /// One codec per HDF5 filter, in pipeline (encode) order.
    pub(crate) filters: Vec<Codec>,
    /// The full chain written to `zarr.json`.
    pub(crate) full: CodecChain,
    /// Bytes per element.
    pub(crate) element_size: usize,
    /// How elements are byte-swapped (`DataType::byte_swap`).
    pub(crate) swap: ByteSwap,
}

impl ArrayCodecs {
    /// The chain that decodes a chunk written with filter mask `mask` (bit i set: filter i skipped).
    fn applied(&self, mask: u32) -> Result<CodecChain, CodecError> {
        let mut codecs = vec![self.bytes.clone()];
        for (i, codec) in self.filters.iter().enumerate() {
            if i >= 32 || mask & (1 << i) == 0 {
                codecs.push(codec.clone());
            }
        }
        CodecChain::new(codecs)
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
        let elements: u64 = chunk_shape.iter().product();
        let mut native = self.applied(mask)?.decode(stored, self.swap, elements as usize * self.element_size)?;
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
        let filters = vec![Codec::Shuffle { element_size: 4 }, Codec::Zlib { level: 1 }];
        let full = CodecChain::new([vec![bytes.clone()], filters.clone()].concat()).unwrap();
        ArrayCodecs { bytes, filters, full, element_size: 4, swap: ByteSwap::Unit(4) }
    }

    #[test]
    fn masked_chunk_is_reencoded_with_all_filters() {
        let c = codecs();
        let values: Vec<u8> = (0..12u32).flat_map(u32::to_ne_bytes).collect();
        // Written with zlib skipped (bit 1): only shuffle applied.
        let only_shuffle = CodecChain::new(vec![c.bytes.clone(), c.filters[0].clone()]).unwrap();
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
