//! Codec chain: the Zarr v3 codecs that describe HDF5-filtered chunks, with decode and encode.
//!
//! Stage: shared by `scan` (which maps HDF5 filter pipelines to a [`CodecChain`]), `metadata`
//! (which writes and reads the chain as the `codecs` array of `zarr.json`) and `read` (which
//! decodes fetched chunks). Pure: no I/O.
//!
//! Inputs and outputs: [`CodecChain::decode_into`] turns the stored bytes of one chunk into
//! element bytes in NATIVE byte order, writing straight into the caller's buffer;
//! [`CodecChain::encode`] is its inverse. [`CodecChain::to_json`] / [`CodecChain::from_json`]
//! convert to and from the `codecs` JSON array.
//!
//! Spec: Zarr v3 core, "Codecs" (exactly one array -> bytes codec, `bytes` with `endian`, then
//! bytes -> bytes codecs in encode order) and the zarr-extensions `numcodecs.*` codec names.
//! HDF5 filter equivalents: deflate (1) = `numcodecs.zlib`, shuffle (2) = `numcodecs.shuffle`,
//! fletcher32 (3) = `numcodecs.fletcher32`, zstd (32015) = `zstd`. The HDF5 pipeline order is the
//! encode order, which is also the order of the bytes -> bytes codecs here.
//!
//! vzarr writes no array -> array codecs, so a chain is always `bytes` followed by zero or more
//! bytes -> bytes codecs.
//!
//! ```
//! use vzarr::dataset::{Codec, CodecChain, Endian};
//! let chain = CodecChain::new(vec![
//!     Codec::Bytes { endian: Some(Endian::Little) },
//!     Codec::Shuffle { element_size: 4 },
//!     Codec::Zlib { level: 4 },
//! ])?;
//! let native: Vec<u8> = (0..1000u32).flat_map(|v| v.to_ne_bytes()).collect();
//! let stored = chain.encode(&native, 4)?;
//! assert_eq!(chain.decode(&stored, 4, native.len())?, native);
//! # Ok::<(), vzarr::dataset::CodecError>(())
//! ```

mod blosc;
mod blosc2;
mod byte_swap;
mod compress;
mod fletcher32;
mod json;
mod lzf;
mod lzo;
mod pipeline;
mod recode;
pub(crate) mod scratch;
pub(crate) mod sharding;
mod shuffle;
mod szip;
mod vlen;

use std::borrow::Cow;

pub use blosc::{BloscCompressor, BloscShuffle};
pub use blosc2::{Blosc2Params, Blosc2ParamsError};
pub(crate) use byte_swap::{ByteSwap, SwapSpan};
pub use recode::Recode;
pub use szip::{SzipParams, SzipParamsError};

/// A filter of source files that no Zarr codec zarr-python reads describes: vzarr decodes it (and
/// stores such chunks re-encoded with a codec that has a name), never writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SourceFilter {
    /// HDF5's szip (filter 4): Adaptive Entropy Coding (CCSDS 121.0-B-3), through libaec or szlib.
    Szip(SzipParams),
    /// PyTables' LZO (HDF5 filter 305): one LZO1X stream per chunk.
    Lzo,
    /// h5py's LZF (HDF5 filter 32000): one LibLZF stream per chunk.
    Lzf,
    /// The hdf5-blosc2 filter (HDF5 filter 32026): one Blosc2 frame per chunk, a super-chunk or a
    /// b2nd array.
    Blosc2(Blosc2Params),
}

impl SourceFilter {
    /// A short name for messages.
    #[must_use]
    pub(crate) fn name(&self) -> &'static str {
        match self {
            SourceFilter::Szip(_) => "szip",
            SourceFilter::Lzo => "lzo",
            SourceFilter::Lzf => "lzf",
            SourceFilter::Blosc2(_) => "blosc2",
        }
    }

    /// Decodes one stored chunk into at most `limit` bytes.
    fn decode(&self, input: &[u8], limit: usize) -> Result<Vec<u8>, CodecError> {
        match self {
            SourceFilter::Szip(params) => szip::decompress(params, input, limit),
            SourceFilter::Lzo => lzo::decompress(input, limit),
            SourceFilter::Lzf => lzf::decompress(input, limit),
            SourceFilter::Blosc2(params) => blosc2::decompress(params, input, limit),
        }
    }
}

/// One stage of a source file's filter pipeline: a codec, or a filter vzarr only decodes.
#[derive(Debug, Clone, PartialEq)]
pub enum Filter {
    /// A filter a Zarr codec describes.
    Codec(Codec),
    /// A filter only vzarr decodes.
    Source(SourceFilter),
}

/// Decodes one stored chunk through `filters` (a bytes -> bytes pipeline in encode order, run in
/// reverse) into `out`, which must be exactly the decoded length. No byte swapping: the output is in
/// the stored byte order.
///
/// # Errors
/// Any stage's error, as [`CodecChain::decode_into`]'s.
pub fn decode_filters(filters: &[Filter], encoded: &[u8], out: &mut [u8]) -> Result<(), CodecError> {
    pipeline::decode_into(filters, encoded, out)
}

/// Byte order of multi-byte elements in stored chunks (the `endian` of the `bytes` codec).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Endian {
    /// Least significant byte first (`"little"`).
    Little,
    /// Most significant byte first (`"big"`).
    Big,
}

impl Endian {
    /// The byte order of the machine this code runs on.
    #[must_use]
    pub fn native() -> Self {
        if cfg!(target_endian = "big") {
            Endian::Big
        } else {
            Endian::Little
        }
    }

    /// The Zarr JSON spelling: `"little"` or `"big"`.
    #[must_use]
    pub fn as_str(&self) -> &'static str {
        match self {
            Endian::Little => "little",
            Endian::Big => "big",
        }
    }

    /// Parses the Zarr JSON spelling (`"little"` or `"big"`); `None` for anything else.
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "little" => Some(Endian::Little),
            "big" => Some(Endian::Big),
            _ => None,
        }
    }
}

/// One Zarr v3 codec, as vzarr understands it.
#[derive(Debug, Clone, PartialEq)]
pub enum Codec {
    /// Core `"bytes"` (array -> bytes) `{"endian": "little"|"big"}`. `endian` is `None` only for
    /// 1-byte types (the JSON then has no configuration, or no `endian` key).
    Bytes {
        /// Byte order of the stored elements; `None` for 1-byte types.
        endian: Option<Endian>,
    },
    /// `"numcodecs.shuffle"` `{"elementsize": n}`: HDF5 shuffle (byte transposition by element).
    Shuffle {
        /// Size in bytes of the elements whose bytes are transposed (>= 1).
        element_size: usize,
    },
    /// `"numcodecs.zlib"` `{"level": n}`: a zlib stream (what the HDF5 deflate filter 1 writes).
    Zlib {
        /// Compression level, 0..=9 (only used when encoding).
        level: u32,
    },
    /// Core `"gzip"` `{"level": n}`: one or more gzip members.
    Gzip {
        /// Compression level, 0..=9 (only used when encoding).
        level: u32,
    },
    /// Core `"zstd"` `{"level": n, "checksum": bool}`: one zstd frame (what HDF5 filter 32015
    /// writes).
    Zstd {
        /// Compression level (zstd's range, negative levels allowed; only used when encoding).
        level: i32,
        /// Whether encoding writes the frame's content checksum.
        checksum: bool,
    },
    /// `"numcodecs.fletcher32"` (no configuration, or `{}`): HDF5's fletcher32 (filter 3), a
    /// 4-byte little-endian checksum appended to the data; decode verifies and strips it.
    Fletcher32,
    /// Core `"blosc"` `{"cname", "clevel", "shuffle", "typesize", "blocksize"}`: one Blosc 1 frame
    /// (what the hdf5-blosc filter, HDF5 filter 32001, writes). Decoding reads everything it needs
    /// from the frame; the configuration only steers encoding (vzarr writes plain-copy frames).
    Blosc {
        /// The compressor named in the configuration.
        cname: BloscCompressor,
        /// Compression level, 0..=9.
        clevel: u8,
        /// The shuffle named in the configuration.
        shuffle: BloscShuffle,
        /// Bytes per element the shuffle works on (>= 1).
        typesize: usize,
        /// Block size in bytes (0: Blosc's automatic choice).
        blocksize: usize,
    },
    /// Core `"vlen-utf8"` (array -> bytes, no configuration): variable-length UTF-8 strings, as a
    /// little-endian u32 item count, then per item a little-endian u32 byte length and the bytes
    /// (what zarr-python writes for the `string` data type). Decoded by
    /// [`CodecChain::decode_strings`], not by the fixed-size element paths.
    VlenUtf8,
}

impl Codec {
    /// The codec's `name` in `zarr.json`.
    #[must_use]
    pub fn name(&self) -> &'static str {
        match self {
            Codec::Bytes { .. } => "bytes",
            Codec::Shuffle { .. } => "numcodecs.shuffle",
            Codec::Zlib { .. } => "numcodecs.zlib",
            Codec::Gzip { .. } => "gzip",
            Codec::Zstd { .. } => "zstd",
            Codec::Fletcher32 => "numcodecs.fletcher32",
            Codec::Blosc { .. } => "blosc",
            Codec::VlenUtf8 => "vlen-utf8",
        }
    }

    /// The codec as one element of the `codecs` JSON array: `{"name": ..., "configuration": ...}`.
    #[must_use]
    pub fn to_json(&self) -> serde_json::Value {
        json::codec_to_json(self)
    }

    /// Parses one element of the `codecs` JSON array (an object, or a bare name string for codecs
    /// without required configuration).
    ///
    /// # Errors
    /// [`CodecError::UnknownCodec`] for a name vzarr does not know, [`CodecError::InvalidJson`]
    /// for a malformed object, [`CodecError::InvalidConfig`] for a missing, mistyped, unknown or
    /// out-of-range configuration value.
    pub fn from_json(value: &serde_json::Value) -> Result<Self, CodecError> {
        json::codec_from_json(value)
    }

    /// Checks the configuration values (levels in range, element size >= 1).
    ///
    /// # Errors
    /// [`CodecError::InvalidConfig`] naming the codec and the offending value.
    pub fn validate(&self) -> Result<(), CodecError> {
        let bad = |reason: String| Err(CodecError::InvalidConfig { codec: self.name().to_owned(), reason });
        match *self {
            Codec::Shuffle { element_size: 0 } => bad("elementsize must be >= 1".to_owned()),
            Codec::Zlib { level } | Codec::Gzip { level } if level > 9 => {
                bad(format!("level {level} is outside 0..=9"))
            }
            Codec::Blosc { clevel, .. } if clevel > 9 => bad(format!("clevel {clevel} is outside 0..=9")),
            Codec::Blosc { typesize: 0, .. } => bad("typesize must be >= 1".to_owned()),
            Codec::Zstd { level, .. } if !compress::zstd_levels().contains(&level) => {
                let range = compress::zstd_levels();
                bad(format!("level {level} is outside {}..={}", range.start(), range.end()))
            }
            _ => Ok(()),
        }
    }
}

/// Errors from building, parsing, decoding or encoding a codec chain.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CodecError {
    /// The codec list does not have the shape vzarr supports.
    #[error("invalid codec chain: {reason}")]
    ChainShape {
        /// What is wrong with the list.
        reason: String,
    },
    /// A codec name vzarr does not know.
    #[error("unknown codec {name:?}")]
    UnknownCodec {
        /// The name as found in the JSON.
        name: String,
    },
    /// The `codecs` JSON is not an array of codec objects.
    #[error("invalid codecs json: {reason}")]
    InvalidJson {
        /// What is wrong with the JSON.
        reason: String,
    },
    /// A codec's configuration is missing a value, has an unknown key or a value out of range.
    #[error("invalid configuration for codec {codec}: {reason}")]
    InvalidConfig {
        /// The codec's name.
        codec: String,
        /// What is wrong.
        reason: String,
    },
    /// The element size passed to decode/encode is unusable.
    #[error("invalid element size {element_size} for a buffer of {len} bytes")]
    ElementSize {
        /// The element size in bytes.
        element_size: usize,
        /// The buffer length in bytes.
        len: usize,
    },
    /// Elements wider than one byte need a byte order, but the `bytes` codec has none.
    #[error("the bytes codec has no endian but elements are {element_size} bytes wide")]
    MissingEndian {
        /// The element size in bytes.
        element_size: usize,
    },
    /// A stage produced fewer or more bytes than the chain requires.
    #[error("{codec}: decoded {actual} bytes, expected {expected}")]
    DecodedLength {
        /// The codec (or "chain") whose output has the wrong length.
        codec: &'static str,
        /// Bytes expected.
        expected: usize,
        /// Bytes produced.
        actual: usize,
    },
    /// A decompressor would produce more bytes than the chain requires (decoding stopped).
    #[error("{codec}: decoded data exceeds the expected {limit} bytes")]
    DecodedTooLong {
        /// The codec.
        codec: &'static str,
        /// The most bytes it was allowed to produce.
        limit: usize,
    },
    /// The input ends before the codec's data does.
    #[error("{codec}: input of {len} bytes is truncated")]
    Truncated {
        /// The codec.
        codec: &'static str,
        /// The length of the input it was given.
        len: usize,
    },
    /// The data uses a feature of its format vzarr does not decode (a Blosc2 dictionary, a
    /// user-defined codec or filter, a sparse frame whose chunks live in other files).
    #[error("{codec}: unsupported {feature}")]
    Unsupported {
        /// The codec.
        codec: &'static str,
        /// The feature, as the format's documentation names it.
        feature: String,
    },
    /// The fletcher32 checksum stored after the data does not match the data.
    #[error("fletcher32 checksum mismatch: stored {stored:#010x}, computed {computed:#010x}")]
    ChecksumMismatch {
        /// The checksum stored in the chunk.
        stored: u32,
        /// The checksum of the data.
        computed: u32,
    },
    /// The compressed data is corrupt (the decompressor reported an error).
    #[error("{codec}: corrupt data")]
    Corrupt {
        /// The codec.
        codec: &'static str,
        /// The decompressor's error.
        #[source]
        source: std::io::Error,
    },
    /// The compressor failed.
    #[error("{codec}: encoding failed")]
    Encode {
        /// The codec.
        codec: &'static str,
        /// The compressor's error.
        #[source]
        source: std::io::Error,
    },
}

/// Reverses the byte order of every `unit`-byte group of `buf`, in place.
///
/// `unit` is the element size for numbers (2, 4, 8); `unit` 0 or 1 leaves `buf` unchanged.
/// Complex types would need `unit` = half the element size (vzarr does not handle them yet).
/// Trailing bytes (`buf.len() % unit`) are left unchanged; [`CodecChain`] never passes such a
/// buffer.
pub fn swap_bytes(buf: &mut [u8], unit: usize) {
    match unit {
        0 | 1 => {}
        2 => buf.chunks_exact_mut(2).for_each(|c| c.swap(0, 1)),
        4 => {
            for c in buf.chunks_exact_mut(4) {
                if let Ok(a) = <&mut [u8; 4]>::try_from(c) {
                    *a = u32::from_ne_bytes(*a).swap_bytes().to_ne_bytes();
                }
            }
        }
        8 => {
            for c in buf.chunks_exact_mut(8) {
                if let Ok(a) = <&mut [u8; 8]>::try_from(c) {
                    *a = u64::from_ne_bytes(*a).swap_bytes().to_ne_bytes();
                }
            }
        }
        _ => buf.chunks_exact_mut(unit).for_each(<[u8]>::reverse),
    }
}

/// Ordered codec list as written in `zarr.json`: exactly one [`Codec::Bytes`], first (vzarr
/// writes no array -> array codecs), then bytes -> bytes codecs in ENCODE order.
#[derive(Debug, Clone, PartialEq)]
pub struct CodecChain {
    codecs: Vec<Codec>,
}

impl CodecChain {
    /// Builds a chain, checking its shape and every codec's configuration.
    ///
    /// # Errors
    /// [`CodecError::ChainShape`] when the list is empty, does not start with `bytes`, or has
    /// another `bytes` later; [`CodecError::InvalidConfig`] for an out-of-range configuration.
    pub fn new(codecs: Vec<Codec>) -> Result<Self, CodecError> {
        match codecs.first() {
            Some(Codec::Bytes { .. }) => {}
            Some(Codec::VlenUtf8) if codecs.len() == 1 => return Ok(CodecChain { codecs }),
            Some(other) => {
                return Err(CodecError::ChainShape {
                    reason: format!("first codec is {:?}, expected \"bytes\"", other.name()),
                })
            }
            None => {
                return Err(CodecError::ChainShape { reason: "no codecs (a \"bytes\" codec is required)".to_owned() })
            }
        }
        if let Some(pos) = codecs.iter().skip(1).position(|c| matches!(c, Codec::Bytes { .. })) {
            return Err(CodecError::ChainShape {
                reason: format!("second \"bytes\" codec at position {} (exactly one is allowed)", pos + 1),
            });
        }
        codecs.iter().try_for_each(Codec::validate)?;
        Ok(CodecChain { codecs })
    }

    /// The chain that stores element bytes as they are: just the `bytes` codec.
    #[must_use]
    pub fn raw(endian: Option<Endian>) -> Self {
        CodecChain { codecs: vec![Codec::Bytes { endian }] }
    }

    /// All codecs, the `bytes` codec first.
    #[must_use]
    pub fn codecs(&self) -> &[Codec] {
        &self.codecs
    }

    /// The bytes -> bytes codecs, in encode order.
    fn bytes_to_bytes(&self) -> &[Codec] {
        self.codecs.get(1..).unwrap_or(&[])
    }

    /// The byte order of the `bytes` codec (`None` for 1-byte types).
    #[must_use]
    pub fn endian(&self) -> Option<Endian> {
        match self.codecs.first() {
            Some(Codec::Bytes { endian }) => *endian,
            _ => None,
        }
    }

    /// True when stored bytes are the element bytes (only the `bytes` codec): any byte prefix of
    /// a chunk is then a valid smaller chunk (vzarr uses this to trim partial chunks).
    #[must_use]
    pub fn is_raw(&self) -> bool {
        self.codecs.len() == 1 && matches!(self.codecs[0], Codec::Bytes { .. })
    }

    /// The chain of a store-owned string array: `vlen-utf8` alone.
    #[must_use]
    pub fn vlen_utf8() -> Self {
        CodecChain { codecs: vec![Codec::VlenUtf8] }
    }

    /// True when the chain decodes to variable-length strings.
    #[must_use]
    pub fn is_strings(&self) -> bool {
        matches!(self.codecs.first(), Some(Codec::VlenUtf8))
    }

    /// Decodes a `vlen-utf8` chunk into exactly `count` strings.
    ///
    /// # Errors
    /// [`CodecError::ChainShape`] when the chain is not `vlen-utf8`; [`CodecError::Truncated`] or
    /// [`CodecError::Corrupt`] when the bytes do not hold `count` UTF-8 strings.
    pub fn decode_strings(&self, encoded: &[u8], count: usize) -> Result<Vec<String>, CodecError> {
        if !self.is_strings() {
            return Err(CodecError::ChainShape { reason: "not a vlen-utf8 chain".to_owned() });
        }
        vlen::decode(encoded, count)
    }

    /// Encodes strings with `vlen-utf8`.
    ///
    /// # Errors
    /// [`CodecError::ChainShape`] when the chain is not `vlen-utf8`; [`CodecError::Encode`] for a
    /// string longer than 4 GiB.
    pub fn encode_strings(&self, items: &[String]) -> Result<Vec<u8>, CodecError> {
        if !self.is_strings() {
            return Err(CodecError::ChainShape { reason: "not a vlen-utf8 chain".to_owned() });
        }
        vlen::encode(items)
    }

    /// Whether elements swapped by `swap` must be byte-swapped between the stored and the native
    /// order.
    fn needs_swap(&self, swap: ByteSwap, len: usize) -> Result<bool, CodecError> {
        let element_size = swap.granule();
        if element_size == 0 || !len.is_multiple_of(element_size) {
            return Err(CodecError::ElementSize { element_size, len });
        }
        if !swap.reorders() {
            return Ok(false);
        }
        match self.endian() {
            Some(endian) => Ok(endian != Endian::native()),
            None => Err(CodecError::MissingEndian { element_size }),
        }
    }

    /// Decodes one stored chunk into `out`, which must be exactly the decoded length (a multiple of
    /// the swap's granule: the swap unit for numbers, a struct's size). The output is in NATIVE byte order. Decompression writes straight
    /// into `out` when it is the last decode stage, and byte swapping happens in place.
    ///
    /// # Errors
    /// [`CodecError::ElementSize`] when the granule is 0 or does not divide `out.len()`;
    /// [`CodecError::MissingEndian`]; any stage's error ([`CodecError::Corrupt`],
    /// [`CodecError::Truncated`], [`CodecError::ChecksumMismatch`],
    /// [`CodecError::DecodedTooLong`]); [`CodecError::DecodedLength`] when the decoded length is
    /// not `out.len()`.
    pub fn decode_into(&self, encoded: &[u8], swap: impl Into<ByteSwap>, out: &mut [u8]) -> Result<(), CodecError> {
        let swap = swap.into();
        if self.is_strings() {
            return Err(CodecError::ChainShape { reason: "vlen-utf8 decodes to strings, not elements".to_owned() });
        }
        let swapped = self.needs_swap(swap, out.len())?;
        pipeline::decode_into(self.bytes_to_bytes(), encoded, out)?;
        if swapped {
            swap.apply(out);
        }
        Ok(())
    }

    /// Decodes one stored chunk into a new buffer of `decoded_len` bytes, in native byte order.
    ///
    /// # Errors
    /// As [`CodecChain::decode_into`].
    pub fn decode(&self, encoded: &[u8], swap: impl Into<ByteSwap>, decoded_len: usize) -> Result<Vec<u8>, CodecError> {
        let swap = swap.into();
        // Validate before allocating, so a bad element size costs nothing.
        self.needs_swap(swap, decoded_len)?;
        let mut out = vec![0; decoded_len];
        self.decode_into(encoded, swap, &mut out)?;
        Ok(out)
    }

    /// Encodes element bytes in native byte order (`native`) into the stored bytes.
    ///
    /// # Errors
    /// [`CodecError::ElementSize`], [`CodecError::MissingEndian`], or
    /// [`CodecError::Encode`] when a compressor fails.
    pub fn encode(&self, native: &[u8], swap: impl Into<ByteSwap>) -> Result<Vec<u8>, CodecError> {
        let swap = swap.into();
        let mut data = Cow::Borrowed(native);
        if self.needs_swap(swap, native.len())? {
            swap.apply(data.to_mut());
        }
        pipeline::encode(self.bytes_to_bytes(), data)
    }

    /// The chain as the `codecs` JSON array of `zarr.json`.
    #[must_use]
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::Value::Array(self.codecs.iter().map(Codec::to_json).collect())
    }

    /// Parses the `codecs` JSON array of `zarr.json`.
    ///
    /// # Errors
    /// [`CodecError::InvalidJson`] when `value` is not an array of codec objects,
    /// [`CodecError::UnknownCodec`] naming an unknown codec, [`CodecError::InvalidConfig`], and
    /// the shape errors of [`CodecChain::new`].
    pub fn from_json(value: &serde_json::Value) -> Result<Self, CodecError> {
        let items = value
            .as_array()
            .ok_or_else(|| CodecError::InvalidJson { reason: format!("expected an array of codecs, found {value}") })?;
        let codecs = items.iter().map(Codec::from_json).collect::<Result<Vec<_>, _>>()?;
        CodecChain::new(codecs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn chain(codecs: Vec<Codec>) -> CodecChain {
        CodecChain::new(codecs).unwrap()
    }

    const LE: Codec = Codec::Bytes { endian: Some(Endian::Little) };
    const BE: Codec = Codec::Bytes { endian: Some(Endian::Big) };

    /// The chains vzarr meets in HDF5 files, in both byte orders, for elements of `size` bytes.
    fn typical_chains(size: usize) -> Vec<CodecChain> {
        let mut chains = Vec::new();
        for bytes in [LE, BE] {
            let tails = vec![
                vec![],
                vec![Codec::Zlib { level: 4 }],
                vec![Codec::Shuffle { element_size: size }, Codec::Zlib { level: 1 }],
                vec![Codec::Shuffle { element_size: size }, Codec::Zlib { level: 9 }, Codec::Fletcher32],
                vec![Codec::Fletcher32],
                vec![Codec::Shuffle { element_size: size }, Codec::Fletcher32],
                vec![Codec::Zstd { level: 3, checksum: false }],
                vec![Codec::Shuffle { element_size: size }, Codec::Zstd { level: -1, checksum: true }],
                vec![Codec::Gzip { level: 6 }],
            ];
            for tail in tails {
                let mut codecs = vec![bytes.clone()];
                codecs.extend(tail);
                chains.push(chain(codecs));
            }
        }
        chains
    }

    #[test]
    fn endian_basics() {
        assert_eq!(Endian::native(), if cfg!(target_endian = "little") { Endian::Little } else { Endian::Big });
        assert_eq!(Endian::Little.as_str(), "little");
        assert_eq!(Endian::parse("big"), Some(Endian::Big));
        assert_eq!(Endian::parse("Big"), None);
    }

    #[test]
    fn swap_bytes_by_unit() {
        let mut buf: Vec<u8> = (0..12).collect();
        swap_bytes(&mut buf, 2);
        assert_eq!(buf, [1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10]);
        let mut buf: Vec<u8> = (0..12).collect();
        swap_bytes(&mut buf, 4);
        assert_eq!(buf, [3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8]);
        let mut buf: Vec<u8> = (0..10).collect();
        swap_bytes(&mut buf, 8);
        assert_eq!(buf, [7, 6, 5, 4, 3, 2, 1, 0, 8, 9]);
        let mut buf: Vec<u8> = (0..7).collect();
        swap_bytes(&mut buf, 3);
        assert_eq!(buf, [2, 1, 0, 5, 4, 3, 6]);
        let mut buf: Vec<u8> = (0..3).collect();
        swap_bytes(&mut buf, 1);
        assert_eq!(buf, [0, 1, 2]);
    }

    #[test]
    fn raw_chains_store_the_declared_byte_order() {
        let values = [1u32, 0x0102_0304, u32::MAX - 5];
        let native: Vec<u8> = values.iter().flat_map(|v| v.to_ne_bytes()).collect();
        let big: Vec<u8> = values.iter().flat_map(|v| v.to_be_bytes()).collect();
        let little: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        let be = CodecChain::raw(Some(Endian::Big));
        let le = CodecChain::raw(Some(Endian::Little));
        assert!(be.is_raw() && le.is_raw());
        assert_eq!(be.endian(), Some(Endian::Big));
        assert_eq!(be.encode(&native, 4).unwrap(), big);
        assert_eq!(le.encode(&native, 4).unwrap(), little);
        assert_eq!(be.decode(&big, 4, 12).unwrap(), native);
        assert_eq!(le.decode(&little, 4, 12).unwrap(), native);
    }

    #[test]
    fn decodes_hdf5_style_shuffle_zlib_fletcher_chunk() {
        // Build the stored bytes the way HDF5 does (big-endian int16 data, shuffle, deflate,
        // fletcher32) from independent pieces, then decode with the chain.
        let values: Vec<i16> = (0..100).map(|i| i * 300 - 7000).collect();
        let big: Vec<u8> = values.iter().flat_map(|v| v.to_be_bytes()).collect();
        let n = values.len();
        let mut shuffled = vec![0u8; big.len()];
        for i in 0..n {
            shuffled[i] = big[2 * i];
            shuffled[n + i] = big[2 * i + 1];
        }
        let mut deflated = Vec::new();
        let mut encoder = flate2::read::ZlibEncoder::new(&shuffled[..], flate2::Compression::new(6));
        std::io::Read::read_to_end(&mut encoder, &mut deflated).unwrap();
        let sum = super::fletcher32::checksum(&deflated);
        deflated.extend_from_slice(&sum.to_le_bytes());

        let chain = chain(vec![BE, Codec::Shuffle { element_size: 2 }, Codec::Zlib { level: 6 }, Codec::Fletcher32]);
        let decoded = chain.decode(&deflated, 2, 200).unwrap();
        let got: Vec<i16> = decoded.chunks_exact(2).map(|c| i16::from_ne_bytes([c[0], c[1]])).collect();
        assert_eq!(got, values);
        assert!(!chain.is_raw());
    }

    #[test]
    fn chain_shape_is_validated() {
        assert!(matches!(CodecChain::new(vec![]), Err(CodecError::ChainShape { .. })));
        assert!(matches!(CodecChain::new(vec![Codec::Zlib { level: 1 }, LE]), Err(CodecError::ChainShape { .. })));
        assert!(matches!(CodecChain::new(vec![LE, Codec::Fletcher32, BE]), Err(CodecError::ChainShape { .. })));
        assert!(matches!(CodecChain::new(vec![LE, Codec::Gzip { level: 11 }]), Err(CodecError::InvalidConfig { .. })));
        assert!(matches!(
            CodecChain::new(vec![LE, Codec::Shuffle { element_size: 0 }]),
            Err(CodecError::InvalidConfig { .. })
        ));
    }

    #[test]
    fn element_size_and_endian_errors() {
        let raw = CodecChain::raw(None);
        assert_eq!(raw.decode(b"abc", 1, 3).unwrap(), b"abc");
        assert!(matches!(raw.decode(b"abcd", 2, 4), Err(CodecError::MissingEndian { element_size: 2 })));
        let le = CodecChain::raw(Some(Endian::Little));
        assert!(matches!(le.decode(b"abc", 0, 3), Err(CodecError::ElementSize { .. })));
        assert!(matches!(le.decode(b"abc", 2, 3), Err(CodecError::ElementSize { .. })));
        assert!(matches!(le.encode(b"abc", 2), Err(CodecError::ElementSize { .. })));
    }

    #[test]
    fn decoded_length_mismatch_is_an_error() {
        let native: Vec<u8> = (0..64).collect();
        for chain in typical_chains(4) {
            let encoded = chain.encode(&native, 4).unwrap();
            for wrong in [60, 68] {
                let result = chain.decode(&encoded, 4, wrong);
                assert!(
                    matches!(result, Err(CodecError::DecodedLength { .. } | CodecError::DecodedTooLong { .. })),
                    "{:?} decoded into {wrong}: {result:?}",
                    chain.codecs()
                );
            }
        }
    }

    #[test]
    fn corrupt_byte_is_detected_with_fletcher32() {
        let chain = chain(vec![LE, Codec::Shuffle { element_size: 8 }, Codec::Zlib { level: 5 }, Codec::Fletcher32]);
        let native: Vec<u8> = (0..800u32).map(|i| (i % 13) as u8).collect();
        let encoded = chain.encode(&native, 8).unwrap();
        for i in 0..encoded.len() {
            let mut bad = encoded.clone();
            bad[i] = bad[i].wrapping_add(1);
            assert!(chain.decode(&bad, 8, native.len()).is_err(), "byte {i}");
        }
    }

    #[test]
    fn json_round_trip_and_shape() {
        for chain in typical_chains(8) {
            let value = chain.to_json();
            assert_eq!(CodecChain::from_json(&value).unwrap(), chain, "{value}");
        }
        let value = json!([
            {"name": "bytes", "configuration": {"endian": "little"}},
            {"name": "numcodecs.shuffle", "configuration": {"elementsize": 4}},
            {"name": "numcodecs.zlib", "configuration": {"level": 1}},
            {"name": "numcodecs.fletcher32"}
        ]);
        let parsed = CodecChain::from_json(&value).unwrap();
        assert_eq!(
            parsed.codecs(),
            [LE, Codec::Shuffle { element_size: 4 }, Codec::Zlib { level: 1 }, Codec::Fletcher32]
        );
        // Written back with the empty configuration zarr-python requires for fletcher32.
        let mut written = value.clone();
        written[3] = json!({"name": "numcodecs.fletcher32", "configuration": {}});
        assert_eq!(parsed.to_json(), written);
        assert!(matches!(CodecChain::from_json(&json!({"name": "bytes"})), Err(CodecError::InvalidJson { .. })));
        assert!(matches!(
            CodecChain::from_json(&json!([{"name": "numcodecs.zlib", "configuration": {"level": 1}}])),
            Err(CodecError::ChainShape { .. })
        ));
        let err = CodecChain::from_json(&json!(["bytes", {"name": "lzf"}])).unwrap_err();
        assert!(err.to_string().contains("lzf"), "{err}");
    }

    fn element_sizes() -> impl Strategy<Value = usize> {
        prop_oneof![Just(1usize), Just(2), Just(4), Just(8)]
    }

    proptest! {
        #[test]
        fn every_chain_round_trips(
            size in element_sizes(),
            elements in proptest::collection::vec(any::<u8>(), 0..400),
        ) {
            let len = elements.len() / size * size;
            let native = &elements[..len];
            for chain in typical_chains(size) {
                let encoded = chain.encode(native, size).unwrap();
                let decoded = chain.decode(&encoded, size, len).unwrap();
                prop_assert_eq!(&decoded[..], native, "{:?}", chain.codecs());
            }
        }

        #[test]
        fn big_endian_storage_is_byte_reversed_little(
            values in proptest::collection::vec(any::<u64>(), 0..50),
        ) {
            let native: Vec<u8> = values.iter().flat_map(|v| v.to_ne_bytes()).collect();
            let big = CodecChain::raw(Some(Endian::Big)).encode(&native, 8).unwrap();
            let expected: Vec<u8> = values.iter().flat_map(|v| v.to_be_bytes()).collect();
            prop_assert_eq!(big, expected);
        }

        #[test]
        fn random_bytes_never_panic(
            encoded in proptest::collection::vec(any::<u8>(), 0..300),
            elements in 0usize..100,
        ) {
            for chain in typical_chains(4) {
                if let Ok(decoded) = chain.decode(&encoded, 4, elements * 4) {
                    prop_assert_eq!(decoded.len(), elements * 4);
                }
            }
        }
    }
}
