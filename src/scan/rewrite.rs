//! Chunks that cannot be referenced as stored and are rewritten into store-owned bytes.
//!
//! Three cases arise when scanning one file: a chunk whose filter mask says some filters were skipped
//! (its bytes do not match the array's codec list), a chunk that straddles the end of its HDF5
//! dataset while the netCDF view of the variable is longer (libnetcdf reads the part past the dataset
//! as the fill value, whatever the chunk holds there), and every chunk of a variable whose pipeline
//! has a filter no Zarr codec describes (szip, PyTables' LZO: [`crate::codec::SourceFilter`]), whose
//! array codecs are then the pipeline's shuffle and zstd. Each is decoded with the filters actually
//! applied, patched, and re-encoded with the array's full codec chain, one chunk at a time.
//!
//! A fourth case stores every chunk of a variable: HDF5 compounds with padding, whose stored elements
//! are not the packed Zarr struct's ([`ArrayCodecs::repack`]): each chunk is decoded with the file's
//! filters, its elements packed, and encoded with the array's chain, one chunk at a time.

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
        let mut native = self.decode(stored, mask, chunk_shape)?;
        fill_outside(&mut native, chunk_shape, valid, fill);
        self.full.encode(&native, self.swap)
    }

    /// The elements of a chunk of `chunk_shape` stored as `stored` (written with `mask`), in native
    /// byte order as [`ArrayCodecs::swap`] gives it.
    fn decode(&self, stored: &[u8], mask: u32, chunk_shape: &[u64]) -> Result<Vec<u8>, CodecError> {
        let len = chunk_shape.iter().product::<u64>() as usize * self.element_size;
        let mut decoded = vec![0; len];
        decode_filters(&self.applied(mask), stored, &mut decoded)?;
        CodecChain::new(vec![self.bytes.clone()])?.decode(&decoded, self.swap, len)
    }
}

impl ArrayCodecs {
    /// Decodes `stored` (written with `mask`; these are the file's codecs over the stored elements,
    /// whose [`ArrayCodecs::swap`] is `Unit(1)`: the bytes stay in file order), turns the stored
    /// elements into `packed`'s elements with `pack` (same count, same byte order), sets those outside
    /// `valid` to `fill` (native order) and encodes the result with `packed`'s full chain.
    /// `chunk_shape` is the chunk's full shape.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn repack(
        &self,
        stored: &[u8],
        mask: u32,
        chunk_shape: &[u64],
        valid: &[u64],
        fill: &[u8],
        pack: &dyn Fn(&[u8]) -> Vec<u8>,
        packed: &ArrayCodecs,
    ) -> Result<Vec<u8>, CodecError> {
        let source = self.decode(stored, mask, chunk_shape)?;
        let mut native = pack(&source);
        drop(source);
        if packed.full.endian().is_some_and(|e| e != crate::codec::Endian::native()) {
            packed.swap.apply(&mut native);
        }
        fill_outside(&mut native, chunk_shape, valid, fill);
        packed.full.encode(&native, packed.swap)
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
    fn padded_elements_are_packed_and_reencoded_with_the_packed_chain() {
        // Stored elements of 4 bytes, a big-endian u16 then 2 bytes of padding; packed: the u16.
        let chain = |size| {
            let bytes = Codec::Bytes { endian: Some(Endian::Big) };
            let filters = vec![Codec::Shuffle { element_size: size }, Codec::Zlib { level: 1 }];
            let full = CodecChain::new([vec![bytes.clone()], filters.clone()].concat()).unwrap();
            (bytes, filters.into_iter().map(Filter::Codec).collect::<Vec<_>>(), full)
        };
        let (bytes, filters, full) = chain(4);
        let source = ArrayCodecs { bytes, filters, full, element_size: 4, swap: ByteSwap::Unit(1) };
        let (bytes, filters, full) = chain(2);
        let packed = ArrayCodecs { bytes, filters, full, element_size: 2, swap: ByteSwap::Unit(2) };
        let stored: Vec<u8> = (0..6u16).flat_map(|v| [v.to_be_bytes()[0], v.to_be_bytes()[1], 0xee, 0xee]).collect();
        let encoded = source.full.encode(&stored, 1).unwrap();
        let pack = |s: &[u8]| s.chunks_exact(4).flat_map(|e| e[..2].to_vec()).collect::<Vec<u8>>();
        let fill = 9u16.to_ne_bytes();
        let out = source.repack(&encoded, 0, &[2, 3], &[2, 2], &fill, &pack, &packed).unwrap();
        let values: Vec<u16> =
            packed.full.decode(&out, 2, 12).unwrap().chunks(2).map(|b| u16::from_ne_bytes([b[0], b[1]])).collect();
        assert_eq!(values, [0, 1, 9, 3, 4, 9]);
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
