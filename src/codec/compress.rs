//! Compressors: `numcodecs.zlib` (HDF5 deflate, filter 1), `gzip`, `zstd` (HDF5 filter 32015).
//!
//! Stage: inside [`crate::codec`]. Backed by `flate2` (zlib-rs) and, for zstd, libzstd (the `zstd`
//! feature, on by default) or else the pure-Rust `ruzstd` (which encodes at its fastest level,
//! about libzstd's level 1, whatever level the codec names: any zstd decoder reads the result).
//!
//! Decompression writes into a caller-sized buffer and never grows it: output that would not
//! fit is an error ([`CodecError::DecodedTooLong`]), so corrupt input cannot make vzarr allocate
//! more than the expected decoded length. Input that ends before the stream does is an error
//! ([`CodecError::Truncated`]), including a missing zlib Adler-32 trailer.
//!
//! Trailing bytes after the end of a zlib stream are ignored, as HDF5's deflate filter and
//! Python's `zlib.decompress` (numcodecs) do. Gzip input may hold several members, which decode
//! to their concatenation. Zstd input may hold several frames; the frame checksum, when present,
//! is verified.

use std::io::{Read, Write};

use flate2::{Decompress, FlushDecompress, Status};

use super::{Codec, CodecError};

/// Decompresses `input` into `dst` and returns the number of bytes written.
///
/// # Errors
/// [`CodecError::DecodedTooLong`] when the output does not fit in `dst`,
/// [`CodecError::Truncated`] for incomplete input, [`CodecError::Corrupt`] for invalid data.
pub(super) fn decompress_into(codec: &Codec, input: &[u8], dst: &mut [u8]) -> Result<usize, CodecError> {
    match codec {
        Codec::Zlib { .. } => inflate_into(input, dst),
        Codec::Gzip { .. } => gunzip_into(input, dst),
        Codec::Zstd { .. } => unzstd_into(input, dst),
        _ => Err(CodecError::ChainShape { reason: format!("{} is not a compressor", codec.name()) }),
    }
}

/// Compresses `input` with `codec`'s settings.
///
/// # Errors
/// [`CodecError::Encode`] when the compressor fails (e.g. an invalid zstd level).
pub(super) fn compress(codec: &Codec, input: &[u8]) -> Result<Vec<u8>, CodecError> {
    let encode_error = |source| CodecError::Encode { codec: codec.name(), source };
    let capacity = input.len() / 2 + 64;
    match *codec {
        Codec::Zlib { level } => deflate(level.min(9), input, capacity).map_err(encode_error),
        Codec::Gzip { level } => {
            let level = flate2::Compression::new(level.min(9));
            let mut encoder = flate2::write::GzEncoder::new(Vec::with_capacity(capacity), level);
            encoder.write_all(input).map_err(encode_error)?;
            encoder.finish().map_err(encode_error)
        }
        #[cfg(feature = "zstd")]
        Codec::Zstd { level, checksum } => {
            let mut compressor = zstd::bulk::Compressor::new(level).map_err(encode_error)?;
            compressor.set_parameter(zstd::zstd_safe::CParameter::ChecksumFlag(checksum)).map_err(encode_error)?;
            compressor.compress(input).map_err(encode_error)
        }
        #[cfg(not(feature = "zstd"))]
        Codec::Zstd { .. } => Ok(ruzstd::encoding::compress_to_vec(input, ruzstd::encoding::CompressionLevel::Fastest)),
        _ => Err(CodecError::ChainShape { reason: format!("{} is not a compressor", codec.name()) }),
    }
}

thread_local! {
    /// This thread's zlib encoder for each level used: its state (hundreds of KiB, zeroed when set
    /// up) is set up once per thread, not once per chunk.
    static DEFLATERS: std::cell::RefCell<Vec<(u32, flate2::write::ZlibEncoder<Vec<u8>>)>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// One zlib stream of `input` at `level`, from this thread's encoder for the level, reset after
/// each stream (a reset encoder writes what a new one writes).
fn deflate(level: u32, input: &[u8], capacity: usize) -> std::io::Result<Vec<u8>> {
    DEFLATERS.with_borrow_mut(|encoders| {
        let at = match encoders.iter().position(|(l, _)| *l == level) {
            Some(at) => at,
            None => {
                let encoder = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::new(level));
                encoders.push((level, encoder));
                encoders.len() - 1
            }
        };
        let encoder = &mut encoders[at].1;
        *encoder.get_mut() = super::scratch::with_capacity(capacity);
        let written = encoder.write_all(input).and_then(|()| encoder.reset(Vec::new()));
        if written.is_err() {
            encoders.swap_remove(at); // its stream is half written: the next stream gets a new one
        }
        written
    })
}

/// Converts a zlib library counter to an index (counters never exceed the slice lengths).
fn counter(value: u64) -> usize {
    usize::try_from(value).unwrap_or(usize::MAX)
}

/// Inflates one zlib stream into `dst`, with the exact end-of-stream and overflow checks that a
/// `Read`-based decoder cannot give.
fn inflate_into(input: &[u8], dst: &mut [u8]) -> Result<usize, CodecError> {
    const CODEC: &str = "numcodecs.zlib";
    let mut inflater = Decompress::new(true);
    // A one-byte spill buffer tells "stream ends exactly at dst.len()" (only the trailer is
    // left) from "stream has more data than dst holds".
    let mut spill = [0u8; 1];
    loop {
        let (in_pos, out_pos) = (counter(inflater.total_in()), counter(inflater.total_out()));
        let rest_in = input.get(in_pos..).unwrap_or(&[]);
        let full = out_pos >= dst.len();
        let rest_out = if full { &mut spill[..] } else { dst.get_mut(out_pos..).unwrap_or(&mut []) };
        let status = inflater.decompress(rest_in, rest_out, FlushDecompress::None).map_err(|e| {
            CodecError::Corrupt { codec: CODEC, source: std::io::Error::new(std::io::ErrorKind::InvalidData, e) }
        })?;
        let produced = counter(inflater.total_out()) - out_pos;
        if full && produced > 0 {
            return Err(CodecError::DecodedTooLong { codec: CODEC, limit: dst.len() });
        }
        match status {
            Status::StreamEnd => return Ok(counter(inflater.total_out())),
            Status::Ok | Status::BufError => {
                let consumed = counter(inflater.total_in()) - in_pos;
                if consumed == 0 && produced == 0 {
                    return Err(CodecError::Truncated { codec: CODEC, len: input.len() });
                }
            }
        }
    }
}

/// Decodes gzip member(s) into `dst`.
fn gunzip_into(input: &[u8], dst: &mut [u8]) -> Result<usize, CodecError> {
    const CODEC: &str = "gzip";
    let corrupt = |source: std::io::Error| {
        if source.kind() == std::io::ErrorKind::UnexpectedEof {
            CodecError::Truncated { codec: CODEC, len: input.len() }
        } else {
            CodecError::Corrupt { codec: CODEC, source }
        }
    };
    if input.is_empty() {
        return Err(CodecError::Truncated { codec: CODEC, len: 0 });
    }
    let mut decoder = flate2::bufread::MultiGzDecoder::new(input);
    let mut filled = 0;
    while filled < dst.len() {
        let buf = dst.get_mut(filled..).unwrap_or(&mut []);
        match decoder.read(buf).map_err(corrupt)? {
            0 => return Ok(filled),
            n => filled += n,
        }
    }
    let mut spill = [0u8; 1];
    match decoder.read(&mut spill).map_err(corrupt)? {
        0 => Ok(filled),
        _ => Err(CodecError::DecodedTooLong { codec: CODEC, limit: dst.len() }),
    }
}

/// The compression levels zstd accepts.
pub(super) fn zstd_levels() -> std::ops::RangeInclusive<i32> {
    #[cfg(feature = "zstd")]
    return zstd::compression_level_range();
    #[cfg(not(feature = "zstd"))]
    return -131_072..=22;
}

/// Decodes zstd frame(s) into `dst` (pure Rust): frame by frame, each frame's declared size and
/// checksum checked.
#[cfg(not(feature = "zstd"))]
fn unzstd_into(input: &[u8], dst: &mut [u8]) -> Result<usize, CodecError> {
    use ruzstd::decoding::{BlockDecodingStrategy, FrameDecoder};
    const CODEC: &str = "zstd";
    let corrupt = |e: &dyn std::fmt::Display| CodecError::Corrupt {
        codec: CODEC,
        source: std::io::Error::new(std::io::ErrorKind::InvalidData, e.to_string()),
    };
    if input.is_empty() {
        return Err(CodecError::Truncated { codec: CODEC, len: 0 });
    }
    let (mut rest, mut written) = (input, 0usize);
    let mut decoder = FrameDecoder::new();
    while !rest.is_empty() {
        decoder.init(&mut rest).map_err(|e| corrupt(&e))?;
        if decoder.content_size() > (dst.len() - written) as u64 {
            return Err(CodecError::DecodedTooLong { codec: CODEC, limit: dst.len() });
        }
        while !decoder.is_finished() {
            if rest.is_empty() {
                return Err(CodecError::Truncated { codec: CODEC, len: input.len() });
            }
            decoder.decode_blocks(&mut rest, BlockDecodingStrategy::UptoBytes(1 << 20)).map_err(|e| corrupt(&e))?;
            written += decoder.read(&mut dst[written..]).map_err(|e| corrupt(&e))?;
            if decoder.can_collect() != 0 {
                return Err(CodecError::DecodedTooLong { codec: CODEC, limit: dst.len() });
            }
        }
        written += decoder.read(&mut dst[written..]).map_err(|e| corrupt(&e))?;
        if decoder.can_collect() != 0 {
            return Err(CodecError::DecodedTooLong { codec: CODEC, limit: dst.len() });
        }
        if let (Some(stored), Some(computed)) = (decoder.get_checksum_from_data(), decoder.get_calculated_checksum()) {
            if stored != computed {
                return Err(corrupt(&format!("frame checksum {stored:#010x}, data give {computed:#010x}")));
            }
        }
    }
    Ok(written)
}

/// Decodes zstd frame(s) into `dst`.
#[cfg(feature = "zstd")]
fn unzstd_into(input: &[u8], dst: &mut [u8]) -> Result<usize, CodecError> {
    const CODEC: &str = "zstd";
    // libzstd decodes an empty input as zero frames, successfully; it cannot be a zstd chunk.
    if input.is_empty() {
        return Err(CodecError::Truncated { codec: CODEC, len: 0 });
    }
    // A declared content size lets a too-long frame fail with a clear error before decoding.
    if let Ok(Some(size)) = zstd::zstd_safe::get_frame_content_size(input) {
        if usize::try_from(size).map_or(true, |size| size > dst.len()) {
            return Err(CodecError::DecodedTooLong { codec: CODEC, limit: dst.len() });
        }
    }
    zstd::bulk::decompress_to_buffer(input, dst).map_err(|source| CodecError::Corrupt { codec: CODEC, source })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const ZLIB: Codec = Codec::Zlib { level: 6 };
    const GZIP: Codec = Codec::Gzip { level: 6 };
    const ZSTD: Codec = Codec::Zstd { level: 3, checksum: true };

    fn sample(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i * 7 % 251) as u8).collect()
    }

    /// A new zlib encoder's stream, as flate2 writes it.
    fn fresh_deflate(level: u32, input: &[u8]) -> Vec<u8> {
        let mut encoder = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::new(level));
        encoder.write_all(input).unwrap();
        encoder.finish().unwrap()
    }

    /// The thread's reused encoders write byte for byte what a new encoder writes, stream after
    /// stream, at every level, with levels interleaved.
    #[test]
    fn reused_deflaters_write_what_new_ones_write() {
        let noise: Vec<u8> = (0u64..300_000).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8).collect();
        let inputs = [sample(100_000), noise.clone(), Vec::new(), sample(7), noise[..70_001].to_vec()];
        for round in 0..3 {
            for level in [1, 6, 9, 1] {
                for input in &inputs {
                    let reused = compress(&Codec::Zlib { level }, input).unwrap();
                    assert!(
                        reused == fresh_deflate(level, input),
                        "round {round}, level {level}, {} bytes",
                        input.len()
                    );
                }
            }
        }
    }

    #[test]
    fn round_trip_each_compressor_exact_buffer() {
        for codec in [ZLIB, GZIP, ZSTD] {
            for len in [0, 1, 1000, 70_000] {
                let data = sample(len);
                let encoded = compress(&codec, &data).unwrap();
                let mut out = vec![0; len];
                assert_eq!(decompress_into(&codec, &encoded, &mut out).unwrap(), len);
                assert_eq!(out, data, "{codec:?} {len}");
            }
        }
    }

    #[test]
    fn known_zlib_stream_decodes() {
        // Python: zlib.compress(b"hello") (also what HDF5's deflate filter writes for these bytes)
        let stream = [0x78, 0x9c, 0xcb, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00, 0x06, 0x2c, 0x02, 0x15];
        let mut out = [0u8; 5];
        assert_eq!(inflate_into(&stream, &mut out).unwrap(), 5);
        assert_eq!(&out, b"hello");
    }

    #[test]
    fn output_larger_than_buffer_fails() {
        for codec in [ZLIB, GZIP, ZSTD] {
            let encoded = compress(&codec, &sample(1000)).unwrap();
            let mut out = vec![0; 999];
            let err = decompress_into(&codec, &encoded, &mut out).unwrap_err();
            assert!(matches!(err, CodecError::DecodedTooLong { limit: 999, .. }), "{codec:?}: {err}");
        }
    }

    #[test]
    fn output_smaller_than_buffer_reports_length() {
        for codec in [ZLIB, GZIP, ZSTD] {
            let encoded = compress(&codec, &sample(1000)).unwrap();
            let mut out = vec![0; 1001];
            assert_eq!(decompress_into(&codec, &encoded, &mut out).unwrap(), 1000);
        }
    }

    #[test]
    fn every_truncation_fails() {
        for codec in [ZLIB, GZIP, ZSTD] {
            let encoded = compress(&codec, &sample(3000)).unwrap();
            for cut in 0..encoded.len() {
                let mut out = vec![0; 3000];
                let result = decompress_into(&codec, &encoded[..cut], &mut out);
                assert!(result.is_err(), "{codec:?} cut at {cut}: {result:?}");
            }
        }
    }

    #[test]
    fn zlib_truncated_trailer_is_an_error() {
        let encoded = compress(&ZLIB, b"abcdefgh").unwrap();
        let mut out = [0u8; 8];
        let result = inflate_into(&encoded[..encoded.len() - 1], &mut out);
        assert!(matches!(result, Err(CodecError::Truncated { .. })));
    }

    #[test]
    fn zlib_ignores_trailing_bytes_gzip_reads_all_members() {
        let mut encoded = compress(&ZLIB, b"abc").unwrap();
        encoded.extend_from_slice(b"junk");
        let mut out = [0u8; 3];
        assert_eq!(inflate_into(&encoded, &mut out).unwrap(), 3);
        assert_eq!(&out, b"abc");

        let mut members = compress(&GZIP, b"abc").unwrap();
        members.extend(compress(&GZIP, b"def").unwrap());
        let mut out = [0u8; 6];
        assert_eq!(gunzip_into(&members, &mut out).unwrap(), 6);
        assert_eq!(&out, b"abcdef");
    }

    #[test]
    fn zstd_checksum_flag_is_written_and_verified() {
        let data = sample(500);
        #[cfg(feature = "zstd")]
        {
            let with = compress(&ZSTD, &data).unwrap();
            let without = compress(&Codec::Zstd { level: 3, checksum: false }, &data).unwrap();
            assert_eq!(with.len(), without.len() + 4);
        }
        // A frame with a content checksum (libzstd's, from the dev-dependency in either build) decodes;
        // with its checksum (last 4 bytes) corrupted, decoding fails.
        let mut compressor = zstd::bulk::Compressor::new(3).unwrap();
        compressor.set_parameter(zstd::zstd_safe::CParameter::ChecksumFlag(true)).unwrap();
        let with = compressor.compress(&data).unwrap();
        let mut good = vec![0; 500];
        assert_eq!(unzstd_into(&with, &mut good).unwrap(), 500);
        assert_eq!(good, data);
        let mut bad = with.clone();
        let last = bad.len() - 1;
        bad[last] ^= 0xff;
        let mut out = vec![0; 500];
        assert!(matches!(unzstd_into(&bad, &mut out), Err(CodecError::Corrupt { codec: "zstd", .. })));
    }

    proptest! {
        #[test]
        fn random_input_never_panics(
            input in proptest::collection::vec(any::<u8>(), 0..200),
            len in 0usize..300,
        ) {
            for codec in [ZLIB, GZIP, ZSTD] {
                let mut out = vec![0; len];
                if let Ok(n) = decompress_into(&codec, &input, &mut out) {
                    prop_assert!(n <= len);
                }
            }
        }

        #[test]
        fn random_data_round_trips(data in proptest::collection::vec(any::<u8>(), 0..2000)) {
            for codec in [ZLIB, GZIP, ZSTD] {
                let encoded = compress(&codec, &data).unwrap();
                let mut out = vec![0; data.len()];
                prop_assert_eq!(decompress_into(&codec, &encoded, &mut out).unwrap(), data.len());
                prop_assert_eq!(&out, &data);
            }
        }
    }
}
