//! Targets of the chunk decoders: each input is an 8-byte header (four parameter bytes, then the
//! decoded length as a little-endian `u32`, at most 4 MiB) and the stored chunk. The decoders are
//! called through the public [`vzarr::codec`] API as the reader calls them, with a buffer of the
//! length the array's metadata gives. `codec-chain` decodes a whole chain described by JSON (the
//! `codecs` of a store's `zarr.json`).

use vzarr::dataset::{
    decode_filters, Blosc2Params, BloscCompressor, BloscShuffle, Codec, CodecChain, Filter, SourceFilter, SzipParams,
};
use vzarr::testing::parse_shard;

use super::{Context, Target};
use crate::bundle;
use crate::mutate::{mutate, LE};

/// Largest decoded length a header asks for.
const MAX_DECODED: u32 = 4 << 20;

/// The filters of a decoder target, from its input's parameter bytes.
type MakeFilters = fn([u8; 4]) -> Option<Vec<Filter>>;

/// The decoder targets.
pub fn targets() -> Vec<Target> {
    let mut targets: Vec<Target> = vec![];
    let filters: [(&'static str, &'static str, MakeFilters); 9] = [
        ("deflate", "zlib and gzip streams (HDF5 deflate, numcodecs.zlib, gzip)", |p| {
            Some(vec![Filter::Codec(if p[0] % 2 == 0 { Codec::Zlib { level: 4 } } else { Codec::Gzip { level: 4 } })])
        }),
        ("shuffle", "HDF5 shuffle (byte transposition)", |p| {
            Some(vec![Filter::Codec(Codec::Shuffle { element_size: 1 + usize::from(p[0]) })])
        }),
        ("fletcher32", "HDF5 fletcher32 (checksum, stripped)", |_| Some(vec![Filter::Codec(Codec::Fletcher32)])),
        ("zstd", "zstd frames", |_| Some(vec![Filter::Codec(Codec::Zstd { level: 3, checksum: false })])),
        ("blosc", "Blosc 1 frames (blosclz, lz4, zlib, zstd; byte and bit shuffle)", |p| {
            Some(vec![Filter::Codec(Codec::Blosc {
                cname: BloscCompressor::from_code(u32::from(p[0] % 6)).unwrap_or(BloscCompressor::Lz4),
                clevel: p[1] % 10,
                shuffle: BloscShuffle::from_code(u32::from(p[2] % 3)).unwrap_or(BloscShuffle::Shuffle),
                typesize: 1 + usize::from(p[3] % 16),
                blocksize: 0,
            })])
        }),
        ("szip", "szip (CCSDS 121.0 adaptive entropy coding) chunks with their size header", |p| {
            let bits = [8, 16, 32, 64, 1, 4, 12, 24][usize::from(p[2] % 8)];
            let block = 2 * (1 + u32::from(p[1] % 32));
            let cd = [u32::from(p[0]), block, bits, block * (1 + u32::from(p[3] % 64))];
            SzipParams::parse(&cd).ok().map(|s| vec![Filter::Source(SourceFilter::Szip(s))])
        }),
        ("lzo", "PyTables LZO (LZO1X) chunks", |_| Some(vec![Filter::Source(SourceFilter::Lzo)])),
        ("lzf", "h5py LZF (LibLZF) chunks", |_| Some(vec![Filter::Source(SourceFilter::Lzf)])),
        ("blosc2", "Blosc2 super-chunk frames and b2nd arrays (hdf5-blosc2)", |p| {
            let mut cd = vec![2, 0, 1 + u32::from(p[0] % 8), 0, 5, 1, 0];
            if p[1] % 2 == 1 {
                let rank = 2 + u32::from(p[1] % 3);
                cd.push(rank);
                cd.extend((0..rank).map(|d| 1 + u32::from(p[2].rotate_left(d) % 64)));
            }
            Blosc2Params::from_cd_values(&cd).ok().map(|b| vec![Filter::Source(SourceFilter::Blosc2(b))])
        }),
    ];
    for (name, about, make) in filters {
        targets.push(Target {
            name,
            about,
            mutate: |rng, input, others| mutate(rng, input, others, LE),
            run: Box::new(move |_, input, _| decode(make, input)),
        });
    }
    targets.extend([
        Target {
            name: "vlen",
            about: "vlen-utf8 chunks (item count, lengths, UTF-8)",
            mutate: |rng, input, others| mutate(rng, input, others, LE),
            run: Box::new(|_, input, _| {
                let (p, len, stored) = header(input);
                let count = (len as usize) >> (p[0] % 8);
                let _ = CodecChain::vlen_utf8().decode_strings(stored, count);
            }),
        },
        Target {
            name: "sharding",
            about: "sharding_indexed shard indexes (offsets, lengths, CRC-32C)",
            mutate: |rng, input, others| mutate(rng, input, others, LE),
            run: Box::new(|_, input, _| {
                let Some((inner, shard)) = input.split_first_chunk::<8>() else { return };
                let _ = parse_shard(shard, u64::from_le_bytes(*inner));
            }),
        },
        Target {
            name: "codec-chain",
            about: "codec chains from JSON (a zarr.json's codecs) decoding a chunk: codecs.json + chunk.bin",
            mutate: |rng, input, others| bundle::mutate(rng, input, others, "chunk.bin", LE),
            run: Box::new(run_chain),
        },
    ]);
    targets
}

/// The parameter bytes, the decoded length and the stored chunk of a decoder input.
fn header(input: &[u8]) -> ([u8; 4], u32, &[u8]) {
    let mut head = [0u8; 8];
    let n = input.len().min(8);
    head[..n].copy_from_slice(&input[..n]);
    let len = u32::from_le_bytes([head[4], head[5], head[6], head[7]]) % (MAX_DECODED + 1);
    ([head[0], head[1], head[2], head[3]], len, &input[n..])
}

/// Decodes `input`'s chunk through the filters `make` builds from its parameters.
fn decode(make: MakeFilters, input: &[u8]) {
    let (p, len, stored) = header(input);
    let Some(filters) = make(p) else { return };
    let mut out = vec![0u8; len as usize];
    let _ = decode_filters(&filters, stored, &mut out);
}

/// Decodes `chunk.bin` (first 8 bytes: element size and decoded length) through the chain of
/// `codecs.json`.
fn run_chain(_: &Context, input: &[u8], _: u64) {
    let files = bundle::parse(input);
    let find = |name: &str| files.iter().find(|(n, _)| n == name).map(|(_, d)| d.as_slice());
    let (Some(json), Some(chunk)) = (find("codecs.json"), find("chunk.bin")) else { return };
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(json) else { return };
    let Ok(chain) = CodecChain::from_json(&value) else { return };
    let (p, len, stored) = header(chunk);
    if chain.is_strings() {
        let _ = chain.decode_strings(stored, len as usize);
    } else {
        let _ = chain.decode(stored, usize::from(p[0] % 9).max(1), len as usize);
    }
}
