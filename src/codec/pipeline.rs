//! Runs the bytes -> bytes codecs of a chain: decode in reverse order, encode in order.
//!
//! Stage: inside [`crate::codec`]; the `bytes` codec (byte order) is handled by the caller.
//!
//! Decoding knows the final length (the caller's buffer), so it works out, before running any
//! stage, how many bytes each stage must produce: exactly, when no compressor sits between the
//! stage and the final output (shuffle keeps the length, fletcher32 adds 4 bytes), or at most a
//! bound, when one does (a compressor's output length is not known in advance; the bound is the
//! worst-case expansion of the compressors vzarr knows). Every decompressor writes into a buffer
//! of that size and fails as soon as it would overflow it, so corrupt input cannot make decoding
//! allocate more than the expected length plus a small slack.
//!
//! Copies: fletcher32 decoding only shortens the current buffer; the last decode stage
//! (decompressor or unshuffle) writes straight into the caller's buffer, so a chain such as
//! `bytes, zlib` decodes with no intermediate buffer and `bytes, shuffle, zlib` with one.

use std::borrow::Cow;

use super::{blosc, compress, fletcher32, scratch, shuffle, Codec, CodecError, Filter, SourceFilter};

/// One decode stage: a Zarr codec, or a source file's filter vzarr only decodes.
#[derive(Clone, Copy)]
pub(super) enum Stage<'a> {
    Codec(&'a Codec),
    Source(&'a SourceFilter),
}

impl Stage<'_> {
    fn name(self) -> &'static str {
        match self {
            Stage::Codec(codec) => codec.name(),
            Stage::Source(filter) => filter.name(),
        }
    }
}

/// What a decode stage list holds: chains decode [`Codec`]s, rewritten chunks [`Filter`]s.
pub(super) trait AsStage {
    fn stage(&self) -> Stage<'_>;
}

impl AsStage for Codec {
    fn stage(&self) -> Stage<'_> {
        Stage::Codec(self)
    }
}

impl AsStage for Filter {
    fn stage(&self) -> Stage<'_> {
        match self {
            Filter::Codec(codec) => Stage::Codec(codec),
            Filter::Source(filter) => Stage::Source(filter),
        }
    }
}

/// How many bytes a decode stage must produce.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expected {
    /// Exactly this many.
    Exact(usize),
    /// Any number up to this many.
    AtMost(usize),
}

impl Expected {
    fn limit(self) -> usize {
        match self {
            Expected::Exact(n) | Expected::AtMost(n) => n,
        }
    }
}

/// An upper bound of the compressed size of `n` bytes for zlib, gzip and zstd (each expands
/// incompressible data by well under 1% plus a header of at most a few hundred bytes).
fn compressed_bound(n: usize) -> usize {
    n.saturating_add(n / 8).saturating_add(1024)
}

/// For each bytes -> bytes codec (encode order), the length its decode must produce, given the
/// final decoded length `len`.
fn decoded_lengths(stages: &[impl AsStage], len: usize) -> Vec<Expected> {
    let mut current = Expected::Exact(len);
    let mut lengths = Vec::with_capacity(stages.len());
    for stage in stages {
        lengths.push(current);
        let Stage::Codec(codec) = stage.stage() else {
            current = Expected::AtMost(compressed_bound(current.limit()));
            continue;
        };
        current = match (codec, current) {
            (Codec::Fletcher32, Expected::Exact(n)) => Expected::Exact(n.saturating_add(4)),
            (Codec::Fletcher32, Expected::AtMost(n)) => Expected::AtMost(n.saturating_add(4)),
            (Codec::Bytes { .. } | Codec::VlenUtf8 | Codec::Shuffle { .. }, _) => current,
            (Codec::Zlib { .. } | Codec::Gzip { .. } | Codec::Zstd { .. } | Codec::Blosc { .. }, _) => {
                Expected::AtMost(compressed_bound(current.limit()))
            }
        };
    }
    lengths
}

/// Where a decode stage left its output.
enum Output<'a> {
    /// In this buffer (borrowed from the input when the stage only strips bytes).
    Buffer(Cow<'a, [u8]>),
    /// In the caller's buffer, `n` bytes.
    Written(usize),
}

/// Decodes `encoded` through `stages` (encode order, run in reverse) into `out`.
pub(super) fn decode_into<S: AsStage>(stages: &[S], encoded: &[u8], out: &mut [u8]) -> Result<(), CodecError> {
    let lengths = decoded_lengths(stages, out.len());
    let mut current = Cow::Borrowed(encoded);
    for (index, (stage, expected)) in stages.iter().zip(lengths).enumerate().rev() {
        let dst = if index == 0 { Some(&mut *out) } else { None };
        let stage = stage.stage();
        let output = match stage {
            Stage::Codec(codec) => decode_stage(codec, current, expected, dst)?,
            Stage::Source(filter) => Output::Buffer(Cow::Owned(filter.decode(&current, expected.limit())?)),
        };
        match output {
            Output::Buffer(buffer) => {
                check_length(stage.name(), expected, buffer.len())?;
                current = buffer;
            }
            Output::Written(n) => return check_length(stage.name(), expected, n),
        }
    }
    // The last stage did not write into `out` (no stages, or fletcher32 last): copy.
    if current.len() != out.len() {
        return Err(CodecError::DecodedLength { codec: "chain", expected: out.len(), actual: current.len() });
    }
    out.copy_from_slice(&current);
    give_back(current);
    Ok(())
}

/// Gives a buffer the chain owns (a stage's input, once read) back to the thread's reused buffers.
fn give_back(buffer: Cow<'_, [u8]>) {
    if let Cow::Owned(buffer) = buffer {
        scratch::give_back(buffer);
    }
}

/// Fails when a stage produced a length other than the exact one expected.
fn check_length(codec: &'static str, expected: Expected, actual: usize) -> Result<(), CodecError> {
    match expected {
        Expected::Exact(n) if n != actual => Err(CodecError::DecodedLength { codec, expected: n, actual }),
        _ => Ok(()),
    }
}

/// Decodes one stage. `dst`, when given, is the caller's buffer (this is the last stage) and has
/// exactly the expected length.
fn decode_stage<'a>(
    codec: &Codec,
    input: Cow<'a, [u8]>,
    expected: Expected,
    dst: Option<&mut [u8]>,
) -> Result<Output<'a>, CodecError> {
    match *codec {
        Codec::Fletcher32 => fletcher32::strip(input).map(Output::Buffer),
        Codec::Shuffle { element_size } => {
            check_length(codec.name(), expected, input.len())?;
            Ok(match dst {
                Some(dst) if dst.len() == input.len() => {
                    shuffle::unshuffle_into(&input, dst, element_size);
                    give_back(input);
                    Output::Written(dst.len())
                }
                _ => {
                    let mut buffer = scratch::zeroed(input.len());
                    shuffle::unshuffle_into(&input, &mut buffer, element_size);
                    give_back(input);
                    Output::Buffer(Cow::Owned(buffer))
                }
            })
        }
        Codec::Zlib { .. } | Codec::Gzip { .. } | Codec::Zstd { .. } | Codec::Blosc { .. } => {
            let decompress = |input: &[u8], dst: &mut [u8]| match codec {
                Codec::Blosc { .. } => blosc::decompress_into(input, dst),
                _ => compress::decompress_into(codec, input, dst),
            };
            if let Some(dst) = dst {
                let written = decompress(&input, dst);
                give_back(input);
                return written.map(Output::Written);
            }
            let mut buffer = scratch::zeroed(expected.limit());
            let n = decompress(&input, &mut buffer);
            give_back(input);
            buffer.truncate(n?);
            Ok(Output::Buffer(Cow::Owned(buffer)))
        }
        Codec::Bytes { .. } | Codec::VlenUtf8 => {
            Err(CodecError::ChainShape { reason: "array -> bytes codec after the first position".to_owned() })
        }
    }
}

/// Encodes `data` (stored element bytes) through `stages` in order.
pub(super) fn encode(stages: &[Codec], data: Cow<'_, [u8]>) -> Result<Vec<u8>, CodecError> {
    let mut current = data;
    for codec in stages {
        let next = match *codec {
            Codec::Fletcher32 => {
                let mut buffer = std::mem::take(&mut current).into_owned();
                fletcher32::append(&mut buffer);
                Cow::Owned(buffer)
            }
            Codec::Shuffle { element_size } => {
                let mut buffer = scratch::zeroed(current.len());
                shuffle::shuffle_into(&current, &mut buffer, element_size);
                Cow::Owned(buffer)
            }
            Codec::Zlib { .. } | Codec::Gzip { .. } | Codec::Zstd { .. } => {
                Cow::Owned(compress::compress(codec, &current)?)
            }
            Codec::Blosc { typesize, cname, .. } => Cow::Owned(blosc::compress_memcpyed(&current, typesize, cname)?),
            Codec::Bytes { .. } | Codec::VlenUtf8 => {
                return Err(CodecError::ChainShape { reason: "\"bytes\" codec after the first position".to_owned() })
            }
        };
        give_back(std::mem::replace(&mut current, next));
    }
    Ok(current.into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_are_exact_until_a_compressor() {
        let stages =
            [Codec::Shuffle { element_size: 4 }, Codec::Fletcher32, Codec::Zlib { level: 1 }, Codec::Fletcher32];
        let lengths = decoded_lengths(&stages, 100);
        assert_eq!(
            lengths,
            vec![Expected::Exact(100), Expected::Exact(100), Expected::Exact(104), Expected::AtMost(104 + 13 + 1024),]
        );
    }

    #[test]
    fn bound_covers_incompressible_data() {
        // Pseudo-random bytes do not compress; every compressor must stay under the bound.
        let mut state = 0x1234_5678_u32;
        let data: Vec<u8> = (0..10_000)
            .map(|_| {
                state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                state.to_be_bytes()[0]
            })
            .collect();
        for codec in [Codec::Zlib { level: 0 }, Codec::Gzip { level: 9 }, Codec::Zstd { level: 1, checksum: true }] {
            for len in [0, 1, 100, data.len()] {
                let encoded = compress::compress(&codec, &data[..len]).unwrap();
                assert!(encoded.len() <= compressed_bound(len), "{codec:?} {len}");
            }
        }
    }

    #[test]
    fn encode_then_decode_double_compression() {
        let stages = [Codec::Zstd { level: 3, checksum: false }, Codec::Fletcher32, Codec::Gzip { level: 6 }];
        let data: Vec<u8> = (0..5000u32).map(|i| (i % 7) as u8).collect();
        let encoded = encode(&stages, Cow::Borrowed(&data)).unwrap();
        let mut out = vec![0; data.len()];
        decode_into(&stages, &encoded, &mut out).unwrap();
        assert_eq!(out, data);
    }

    #[test]
    fn fletcher32_last_stage_copies_into_out() {
        let stages = [Codec::Fletcher32];
        let encoded = encode(&stages, Cow::Borrowed(b"abcdef")).unwrap();
        let mut out = [0u8; 6];
        decode_into(&stages, &encoded, &mut out).unwrap();
        assert_eq!(&out, b"abcdef");
        let mut short = [0u8; 5];
        assert!(matches!(
            decode_into(&stages, &encoded, &mut short),
            Err(CodecError::DecodedLength { codec: "numcodecs.fletcher32", expected: 5, actual: 6 })
        ));
    }

    #[test]
    fn no_stages_copies_and_checks_length() {
        let mut out = [0u8; 3];
        decode_into::<Codec>(&[], b"xyz", &mut out).unwrap();
        assert_eq!(&out, b"xyz");
        assert!(matches!(
            decode_into::<Codec>(&[], b"xy", &mut out),
            Err(CodecError::DecodedLength { codec: "chain", expected: 3, actual: 2 })
        ));
    }
}
