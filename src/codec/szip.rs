//! HDF5's szip filter (filter 4): Adaptive Entropy Coding (CCSDS 121.0-B-3), decoded in pure Rust.
//!
//! Stage: inside [`crate::codec`]; a [`super::SourceFilter`], decoded only (no Zarr codec names it:
//! vzarr stores such chunks re-encoded, see `scan/rewrite`).
//!
//! Chunk format (HDF5 `H5Zszip.c`): a little-endian u32, the decoded size, then the AEC stream
//! libhdf5 wrote through libaec's szlib interface (`sz_compat.c`), whose parameters are the filter's
//! `cd_values`: options mask, pixels per block, bits per pixel, pixels per scanline. That interface
//! maps the mask's MSB bit (16) to big-endian samples and its NN bit (32) to the unit-delay
//! preprocessor (EC, bit 4, is plain entropy coding; K13, CHIP, LSB and RAW change nothing when
//! decoding); blocks of any even size are allowed. Samples are 1, 2 or 4 bytes (up to 8, 16 and 32
//! bits). Two more rules of that interface:
//! - 32- and 64-bit pixels are coded as bytes, the buffer byte-shuffled first (byte j of element i
//!   at j * n + i, HDF5's shuffle).
//! - A scanline is one reference sample interval (RSI) of ceil(pps / ppb) blocks; when pps is not a
//!   multiple of ppb each scanline, the last one included, was padded to whole blocks, and the
//!   padding is dropped after decoding.
//!
//! The coded stream, per RSI: blocks of `ppb` samples, each an option id (3, 4 or 5 bits for samples
//! of up to 8, 16 or 32 bits) then: id 0 and a 0 bit, a run of zero blocks (fundamental sequence
//! count + 1; 5 means "to the end of the RSI or of the 64-block segment", above 5 one less); id 0
//! and a 1 bit, the second extension (pairs coded as one FS value); the highest id, the samples as
//! they are; other ids k + 1, split samples (FS codes of the high bits, then the k low bits of every
//! sample). With the preprocessor the first block of each RSI also holds the reference sample (right
//! after the id, or as the first raw sample), and every other value is the mapped difference from
//! the previous sample. Decoding stops once the chunk is full; the stream's last block may hold
//! padding, which is dropped.
//!
//! Hostile input: every read is checked, a zero-block run may not pass the end of its RSI, the output
//! never exceeds the decoded size, which the caller bounds by the chunk's shape (the header's claim
//! is checked against that bound before anything is allocated), and the working buffer is one RSI.

use super::{shuffle, CodecError};

/// The name errors carry.
const NAME: &str = "szip";
/// szlib's option bits (`szlib.h`).
const MSB_OPTION: u32 = 16;
const NN_OPTION: u32 = 32;
/// The most blocks one RSI may have (libaec).
const MAX_RSI: u32 = 4096;
/// The zero-block count that means "the rest of the RSI or 64-block segment".
const ROS: usize = 5;

/// Why the szip filter's `cd_values` are refused ([`SzipParams::parse`]), as libaec refuses them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SzipParamsError {
    /// Not the filter's four values.
    #[error("{count} client data values, not 4")]
    Count {
        /// How many values there are.
        count: usize,
    },
    /// Bits per pixel outside 1 to 32 and not 64.
    #[error("{bits_per_pixel} bits per pixel")]
    BitsPerPixel {
        /// The bits per pixel given.
        bits_per_pixel: u32,
    },
    /// Pixels per block odd or outside 2 to 64.
    #[error("{pixels_per_block} pixels per block")]
    PixelsPerBlock {
        /// The pixels per block given.
        pixels_per_block: u32,
    },
    /// No pixels per scanline, or a scanline of more blocks than an RSI may hold.
    #[error("{pixels_per_scanline} pixels per scanline for {pixels_per_block} per block")]
    PixelsPerScanline {
        /// The pixels per scanline given.
        pixels_per_scanline: u32,
        /// The pixels per block given.
        pixels_per_block: u32,
    },
}

/// The szip filter's parameters, as its `cd_values` store them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SzipParams {
    /// The szlib options mask (EC 4, LSB 8, MSB 16, NN 32, RAW 128, ...).
    pub options_mask: u32,
    /// Pixels per block (even, 2..=64).
    pub pixels_per_block: u32,
    /// Bits per pixel (1..=32, or 64).
    pub bits_per_pixel: u32,
    /// Pixels per scanline.
    pub pixels_per_scanline: u32,
}

impl SzipParams {
    /// The parameters of the filter's four `cd_values`, checked as libaec checks them.
    ///
    /// # Errors
    /// [`SzipParamsError`], saying which value is missing or out of range.
    pub fn parse(cd: &[u32]) -> Result<Self, SzipParamsError> {
        let [options_mask, pixels_per_block, bits_per_pixel, pixels_per_scanline] = *cd else {
            return Err(SzipParamsError::Count { count: cd.len() });
        };
        let params = SzipParams { options_mask, pixels_per_block, bits_per_pixel, pixels_per_scanline };
        if !(1..=32).contains(&bits_per_pixel) && bits_per_pixel != 64 {
            return Err(SzipParamsError::BitsPerPixel { bits_per_pixel });
        }
        if !(2..=64).contains(&pixels_per_block) || pixels_per_block % 2 == 1 {
            return Err(SzipParamsError::PixelsPerBlock { pixels_per_block });
        }
        if pixels_per_scanline == 0 || params.rsi_blocks() > MAX_RSI {
            return Err(SzipParamsError::PixelsPerScanline { pixels_per_scanline, pixels_per_block });
        }
        Ok(params)
    }

    /// [`Self::parse`] with its error as text, for the HDF4 decoder (`scan/hdf4/decode/szip.rs`),
    /// whose `DecodeError::SzipParameters` still holds the text.
    ///
    /// # Errors
    /// [`SzipParamsError`]'s message.
    pub(crate) fn from_cd_values(cd: &[u32]) -> Result<Self, String> {
        Self::parse(cd).map_err(|e| e.to_string())
    }

    /// Blocks per RSI: one scanline, padded to whole blocks.
    fn rsi_blocks(&self) -> u32 {
        self.pixels_per_scanline.div_ceil(self.pixels_per_block)
    }

    /// Bytes per element whose bytes were shuffled and coded as 8-bit samples (32- and 64-bit pixels).
    fn interleaved(&self) -> Option<usize> {
        matches!(self.bits_per_pixel, 32 | 64).then_some(self.bits_per_pixel as usize / 8)
    }
}

/// Decodes one stored chunk (size header and AEC stream) into at most `limit` bytes.
///
/// # Errors
/// [`CodecError::Truncated`] for a stream that ends early, [`CodecError::DecodedTooLong`] when the
/// header claims more than `limit` bytes, [`CodecError::Corrupt`] for an invalid stream or a size
/// that is not a whole number of samples.
pub(super) fn decompress(params: &SzipParams, input: &[u8], limit: usize) -> Result<Vec<u8>, CodecError> {
    let Some((header, stream)) = input.split_first_chunk::<4>() else {
        return Err(CodecError::Truncated { codec: NAME, len: input.len() });
    };
    let size = u32::from_le_bytes(*header) as usize;
    if size > limit {
        return Err(CodecError::DecodedTooLong { codec: NAME, limit });
    }
    params.decode_framed(stream, size, 4)
}

impl SzipParams {
    /// Decodes a bare AEC stream, as szlib's `SZ_BufftoBuffDecompress` does, into exactly `size`
    /// bytes (the caller bounds `size`: nothing larger is allocated). HDF5 chunks prefix the stream
    /// with its decoded size (`decompress`); HDF4's compressed elements frame it their own way.
    ///
    /// # Errors
    /// [`CodecError::Truncated`] for a stream that ends before `size` bytes, [`CodecError::Corrupt`]
    /// for an invalid stream or a size that is not a whole number of samples.
    pub(crate) fn decode_stream(&self, stream: &[u8], size: usize) -> Result<Vec<u8>, CodecError> {
        self.decode_framed(stream, size, 0)
    }

    /// [`Self::decode_stream`] of a stream that followed `header` bytes of framing (errors report
    /// the framed length).
    fn decode_framed(&self, stream: &[u8], size: usize, header: usize) -> Result<Vec<u8>, CodecError> {
        let mut out = vec![0; size];
        match self.interleaved() {
            Some(width) => {
                if !size.is_multiple_of(width) {
                    return Err(corrupt(format!("{size} bytes are not whole {width}-byte pixels")));
                }
                let mut planes = vec![0; size];
                decode(self, 8, (stream, header), &mut planes)?;
                shuffle::unshuffle_into(&planes, &mut out, width);
            }
            None => decode(self, self.bits_per_pixel, (stream, header), &mut out)?,
        }
        Ok(out)
    }
}

fn corrupt(what: String) -> CodecError {
    CodecError::Corrupt { codec: NAME, source: std::io::Error::other(what) }
}

/// Decodes the AEC stream (after `header` bytes of framing) of samples of `bits` bits into `out`
/// (whole samples).
fn decode(params: &SzipParams, bits: u32, (stream, header): (&[u8], usize), out: &mut [u8]) -> Result<(), CodecError> {
    let width = match bits {
        0..=8 => 1,
        9..=16 => 2,
        _ => 4,
    };
    if !out.len().is_multiple_of(width) {
        return Err(corrupt(format!("{} bytes are not whole {width}-byte samples", out.len())));
    }
    let coder = Coder::new(params, bits);
    let (samples, keep) = (out.len() / width, params.pixels_per_scanline as usize);
    let padded = coder.rsi_samples != keep;
    let msb = params.options_mask & MSB_OPTION != 0;
    let mut reader = BitReader { data: stream, header, pos: 0, acc: 0, bits: 0 };
    let mut rsi = Vec::with_capacity(coder.rsi_samples + coder.block);
    let mut written = 0;
    while written < samples {
        // A padded scanline is always whole in the stream; otherwise the last RSI ends with the data.
        let need = if padded { coder.rsi_samples } else { coder.rsi_samples.min(samples - written) };
        coder.decode_rsi(&mut reader, &mut rsi, need)?;
        let take = keep.min(samples - written);
        let values = rsi.get(..take).ok_or_else(|| corrupt("an RSI shorter than its scanline".into()))?;
        let dst = &mut out[written * width..(written + take) * width];
        for (d, &v) in dst.chunks_exact_mut(width).zip(values) {
            match (width, msb) {
                (1, _) => d[0] = v as u8,
                (2, true) => d.copy_from_slice(&(v as u16).to_be_bytes()),
                (2, false) => d.copy_from_slice(&(v as u16).to_le_bytes()),
                (_, true) => d.copy_from_slice(&v.to_be_bytes()),
                (_, false) => d.copy_from_slice(&v.to_le_bytes()),
            }
        }
        written += take;
    }
    Ok(())
}

/// The fixed parameters of one stream's decoding.
struct Coder {
    bits: u32,
    block: usize,
    rsi_blocks: usize,
    rsi_samples: usize,
    id_len: u32,
    preprocess: bool,
}

/// The second extension's table: for each FS value m, (sum of the pair, first m of that sum).
const SE_TABLE: [(u32, u32); 91] = {
    let mut table = [(0, 0); 91];
    let (mut sum, mut m) = (0, 0);
    while sum < 13 {
        let first = m as u32;
        let mut j = 0;
        while j <= sum {
            table[m] = (sum, first);
            m += 1;
            j += 1;
        }
        sum += 1;
    }
    table
};

impl Coder {
    fn new(params: &SzipParams, bits: u32) -> Self {
        let block = params.pixels_per_block as usize;
        let rsi_blocks = params.rsi_blocks() as usize;
        let id_len = match bits {
            0..=8 => 3,
            9..=16 => 4,
            _ => 5,
        };
        let preprocess = params.options_mask & NN_OPTION != 0;
        Coder { bits, block, rsi_blocks, rsi_samples: block * rsi_blocks, id_len, preprocess }
    }

    /// Decodes blocks of one RSI into `rsi` until it holds at least `need` samples, then undoes the
    /// preprocessor.
    fn decode_rsi(&self, reader: &mut BitReader<'_>, rsi: &mut Vec<u32>, need: usize) -> Result<(), CodecError> {
        rsi.clear();
        let uncompressed = (1 << self.id_len) - 1;
        while rsi.len() < need {
            let reference = usize::from(self.preprocess && rsi.is_empty());
            let id = reader.read(self.id_len)?;
            if id == uncompressed {
                for _ in 0..self.block {
                    rsi.push(reader.read(self.bits)?);
                }
                continue;
            }
            let second_extension = id == 0 && reader.read(1)? == 1;
            if reference == 1 {
                rsi.push(reader.read(self.bits)?);
            }
            if second_extension {
                self.second_extension(reader, rsi, reference)?;
            } else if id == 0 {
                self.zero_blocks(reader, rsi, reference)?;
            } else {
                let (k, start) = (id - 1, rsi.len());
                for _ in reference..self.block {
                    rsi.push(reader.fundamental_sequence()?.wrapping_shl(k));
                }
                if k > 0 {
                    for value in &mut rsi[start..] {
                        *value = value.wrapping_add(reader.read(k)?);
                    }
                }
            }
        }
        if self.preprocess {
            self.postprocess(rsi);
        }
        Ok(())
    }

    fn second_extension(&self, reader: &mut BitReader<'_>, rsi: &mut Vec<u32>, first: usize) -> Result<(), CodecError> {
        let mut i = first;
        while i < self.block {
            let m = reader.fundamental_sequence()?;
            let &(sum, first_m) =
                SE_TABLE.get(m as usize).ok_or_else(|| corrupt(format!("second extension code {m}")))?;
            let second = m - first_m;
            if i.is_multiple_of(2) {
                rsi.push(sum.wrapping_sub(second));
                i += 1;
            }
            if i < self.block {
                rsi.push(second);
                i += 1;
            }
        }
        Ok(())
    }

    fn zero_blocks(&self, reader: &mut BitReader<'_>, rsi: &mut Vec<u32>, reference: usize) -> Result<(), CodecError> {
        let mut count = (reader.fundamental_sequence()? as usize).saturating_add(1);
        let done = rsi.len() / self.block;
        if count == ROS {
            count = (self.rsi_blocks - done).min(64 - done % 64);
        } else if count > ROS {
            count -= 1;
        }
        let zeros = count.saturating_mul(self.block) - reference;
        if rsi.len().saturating_add(zeros) > self.rsi_samples {
            return Err(corrupt(format!("a run of {count} zero blocks past the end of its RSI")));
        }
        rsi.resize(rsi.len() + zeros, 0);
        Ok(())
    }

    /// Undoes the unit-delay preprocessor (unsigned samples; HDF5 never sets libaec's signed flag):
    /// `rsi[0]` is the reference sample, every other value the mapped difference from the previous.
    fn postprocess(&self, rsi: &mut [u32]) {
        let Some((&mut first, rest)) = rsi.split_first_mut() else { return };
        let xmax = if self.bits >= 32 { u32::MAX } else { (1 << self.bits) - 1 };
        let med = xmax / 2 + 1;
        let mut x = first;
        for value in rest {
            let d = *value;
            let mask = if x & med != 0 { xmax } else { 0 };
            if (d >> 1) + (d & 1) <= mask ^ x {
                // Even: x + d/2; odd: x - (d+1)/2.
                x = if d & 1 == 0 { x.wrapping_add(d >> 1) } else { x.wrapping_sub((d >> 1) + 1) };
            } else {
                x = mask ^ d;
            }
            *value = x;
        }
    }
}

/// Reads a stream most significant bit first.
struct BitReader<'a> {
    data: &'a [u8],
    /// Bytes of framing before `data` (reported in errors).
    header: usize,
    pos: usize,
    /// Bits read ahead; the low `bits` of them are unread.
    acc: u64,
    bits: u32,
}

impl BitReader<'_> {
    fn refill(&mut self) {
        while self.bits <= 56 {
            let Some(&byte) = self.data.get(self.pos) else { break };
            self.acc = (self.acc << 8) | u64::from(byte);
            self.bits += 8;
            self.pos += 1;
        }
    }

    fn truncated(&self) -> CodecError {
        CodecError::Truncated { codec: NAME, len: self.data.len() + self.header }
    }

    /// The next `n` (<= 32) bits.
    fn read(&mut self, n: u32) -> Result<u32, CodecError> {
        if n == 0 {
            return Ok(0);
        }
        if self.bits < n {
            self.refill();
            if self.bits < n {
                return Err(self.truncated());
            }
        }
        self.bits -= n;
        Ok(((self.acc >> self.bits) & ((1 << n) - 1)) as u32)
    }

    /// A fundamental sequence code: the number of 0 bits before the next 1 bit.
    fn fundamental_sequence(&mut self) -> Result<u32, CodecError> {
        let mut count = 0u32;
        loop {
            if self.bits == 0 {
                self.refill();
                if self.bits == 0 {
                    return Err(self.truncated());
                }
            }
            let unread = self.acc & (u64::MAX >> (64 - self.bits));
            if unread == 0 {
                count = count.saturating_add(self.bits);
                self.bits = 0;
                continue;
            }
            let zeros = unread.leading_zeros() - (64 - self.bits);
            self.bits -= zeros + 1;
            return Ok(count.saturating_add(zeros));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(mask: u32, ppb: u32, bpp: u32, pps: u32) -> SzipParams {
        SzipParams::from_cd_values(&[mask, ppb, bpp, pps]).unwrap()
    }

    /// A stream of whole bytes, from (value, bit count) pairs, most significant bit first.
    fn bits(fields: &[(u32, u32)]) -> Vec<u8> {
        let (mut out, mut acc, mut n) = (Vec::new(), 0u64, 0);
        for &(value, count) in fields {
            acc = (acc << count) | u64::from(value);
            n += count;
            while n >= 8 {
                n -= 8;
                out.push((acc >> n) as u8);
            }
        }
        if n > 0 {
            out.push((acc << (8 - n)) as u8);
        }
        out
    }

    fn chunk(size: u32, stream: &[u8]) -> Vec<u8> {
        [&size.to_le_bytes()[..], stream].concat()
    }

    #[test]
    fn cd_values_are_checked() {
        assert!(SzipParams::from_cd_values(&[141, 32, 16, 256]).is_ok());
        assert!(SzipParams::from_cd_values(&[141, 32, 16]).is_err());
        assert!(SzipParams::from_cd_values(&[141, 7, 16, 256]).is_err(), "odd block");
        assert!(SzipParams::from_cd_values(&[141, 8, 48, 256]).is_err(), "48 bits");
        assert!(SzipParams::from_cd_values(&[141, 2, 8, 2 * 4097]).is_err(), "RSI of 4097 blocks");
        assert!(SzipParams::from_cd_values(&[141, 8, 8, 0]).is_err());
    }

    #[test]
    fn uncompressed_and_split_blocks_without_preprocessing() {
        // 8-bit samples, blocks of 2, one block per RSI: an uncompressed block (id 7) then a
        // split block with k = 1 (id 2): FS codes 2 and 0 (001, 1), low bits 1 and 0 -> 5, 0.
        let stream = bits(&[(7, 3), (200, 8), (13, 8), (2, 3), (1, 3), (1, 1), (1, 1), (0, 1)]);
        let out = decompress(&params(4, 2, 8, 2), &chunk(4, &stream), 4).unwrap();
        assert_eq!(out, [200, 13, 5, 0]);
    }

    #[test]
    fn zero_run_to_the_end_of_the_rsi_and_preprocessing() {
        // 16-bit samples, MSB, preprocessed, blocks of 2 and 3 blocks per RSI: id 0, bit 0, the
        // reference 1000, then FS 4 (ROS: the rest of the RSI): every sample equals the reference.
        let stream = bits(&[(0, 4), (0, 1), (1000, 16), (1, 5)]);
        let out = decompress(&params(16 | 32, 2, 16, 6), &chunk(12, &stream), 12).unwrap();
        assert_eq!(out, 1000u16.to_be_bytes().repeat(6));
    }

    #[test]
    fn hostile_streams_fail_cleanly() {
        let p = params(4 | 32, 8, 16, 32);
        let claims_more = chunk(1 << 20, &[0xff; 16]);
        assert!(matches!(decompress(&p, &claims_more, 64), Err(CodecError::DecodedTooLong { .. })));
        assert!(matches!(decompress(&p, &[1, 0], 64), Err(CodecError::Truncated { .. })));
        // A zero-block run of 100 blocks in an RSI of 4.
        let run = chunk(64, &bits(&[(0, 4), (0, 1), (0, 16), (0, 25), (0, 25), (0, 25), (0, 25), (1, 1)]));
        let err = decompress(&p, &run, 64).unwrap_err();
        let cause = std::error::Error::source(&err).map(ToString::to_string).unwrap_or_default();
        assert!(cause.contains("zero blocks"), "{err}: {cause}");
        for len in 0..40 {
            let mut state = 0x9e37_79b9_u32.wrapping_mul(len + 1);
            let noise: Vec<u8> = (0..len)
                .map(|_| {
                    state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                    (state >> 24) as u8
                })
                .collect();
            let _ = decompress(&p, &chunk(64, &noise), 64);
            let _ = decompress(&params(141, 32, 64, 32), &chunk(64, &noise), 64);
        }
    }
}
