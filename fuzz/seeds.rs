//! Seeds: the source files the store seeds reference (installed into
//! [`crate::targets::SOURCES`] before a run) and the decoder targets' seeds, written with vzarr's
//! own encoders (`--codec-seeds`; the scanner and store seeds come from `fuzz/make_seeds.sh`).

use std::path::Path;

use vzarr::dataset::{BloscCompressor, BloscShuffle, Codec, CodecChain};
use vzarr::testing::ShardBuilder;

use crate::harness::{fuzz_dir, inputs};
use crate::targets::SOURCES;

/// Copies `fuzz/corpus/sources/*` into [`SOURCES`] where missing or different (by rename, so
/// that runs at the same time never see a half-written file).
pub fn install_sources() {
    let dir = Path::new(SOURCES);
    std::fs::create_dir_all(dir).expect("sources directory");
    for (name, bytes) in inputs(&fuzz_dir().join("corpus/sources")) {
        let path = dir.join(&name);
        if std::fs::read(&path).is_ok_and(|old| old == bytes) {
            continue;
        }
        let partial = dir.join(format!(".{name}.{}", std::process::id()));
        std::fs::write(&partial, &bytes).and_then(|()| std::fs::rename(&partial, &path)).expect("source file");
    }
}

/// The seeds of `target` made at run time from a committed one (too large to commit): for `dmrpp`, a
/// sidecar of 5 million empty elements (20 MB of XML, under both documented limits: it took 26
/// bytes per byte before the tree's memory was bounded); for `kerchunk-parquet`, a record file whose
/// first `raw` cell decompresses to 96 MiB (a few KiB of zstd; the array's chunks are 48 bytes).
pub fn generated(target: &str) -> Vec<(String, Vec<u8>)> {
    let corpus = fuzz_dir().join("corpus").join(target);
    let from = |name: &str| crate::bundle::parse(&std::fs::read(corpus.join(name)).expect("committed seed"));
    match target {
        "dmrpp" => {
            let mut files = from("SDS_simple_chunk_comp.bundle");
            for (name, bytes) in files.iter_mut().filter(|(n, _)| n.ends_with(".dmrpp")) {
                let text = String::from_utf8_lossy(bytes).into_owned();
                let at = text.rfind("</Dataset>").unwrap_or_else(|| panic!("{name}: no </Dataset>"));
                *bytes = [&text.as_bytes()[..at], &b"<a/>".repeat(5_000_000), &text.as_bytes()[at..]].concat();
            }
            vec![("empty-elements-20mb".into(), crate::bundle::encode(&files))]
        }
        "kerchunk-parquet" => {
            let mut files = from("chunked.bundle");
            for (name, bytes) in files.iter_mut().filter(|(n, _)| n.ends_with("refs.0.parq")) {
                *bytes = inline_bomb(96 << 20).unwrap_or_else(|e| panic!("{name}: {e}"));
            }
            vec![("raw-cell-of-96-mib".into(), crate::bundle::encode(&files))]
        }
        _ => Vec::new(),
    }
}

/// A kerchunk Parquet record file of 4 inline rows, the first `size` bytes of zeros (zstd).
fn inline_bomb(size: usize) -> parquet::errors::Result<Vec<u8>> {
    use parquet::basic::{Compression, ZstdLevel};
    use parquet::data_type::{ByteArray, ByteArrayType, Int64Type};
    let schema =
        "message m { optional binary path (UTF8); required int64 offset; required int64 size; optional binary raw; }";
    let schema = std::sync::Arc::new(parquet::schema::parser::parse_message_type(schema)?);
    let properties = parquet::file::properties::WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::try_new(1)?));
    let mut out = Vec::new();
    let mut writer = parquet::file::writer::SerializedFileWriter::new(&mut out, schema, properties.build().into())?;
    let mut group = writer.next_row_group()?;
    let mut column = group.next_column()?.expect("path");
    column.typed::<ByteArrayType>().write_batch(&[], Some(&[0; 4]), None)?;
    column.close()?;
    for _ in 0..2 {
        let mut column = group.next_column()?.expect("offset, size");
        column.typed::<Int64Type>().write_batch(&[0; 4], None, None)?;
        column.close()?;
    }
    let mut column = group.next_column()?.expect("raw");
    let mut cells = vec![ByteArray::from(vec![0u8; size])];
    cells.extend((0..3).map(|_| ByteArray::from(vec![0u8; 48])));
    column.typed::<ByteArrayType>().write_batch(&cells, Some(&[1; 4]), None)?;
    column.close()?;
    group.close()?;
    writer.close()?;
    Ok(out)
}

/// A decoder input: parameter bytes, decoded length, stored chunk.
fn framed(params: [u8; 4], decoded: usize, stored: &[u8]) -> Vec<u8> {
    let mut out = params.to_vec();
    out.extend_from_slice(&(decoded as u32).to_le_bytes());
    out.extend_from_slice(stored);
    out
}

/// Element bytes that compress a little: a ramp with some noise.
fn values(n: usize) -> Vec<u8> {
    (0..n).map(|i| ((i / 3) as u8).wrapping_add((i * 7 % 5) as u8)).collect()
}

fn encode(codecs: Vec<Codec>, native: &[u8], swap: usize) -> Vec<u8> {
    let chain = CodecChain::new(codecs).expect("seed chain");
    chain.encode(native, swap).expect("seed encoding")
}

fn bytes() -> Codec {
    Codec::Bytes { endian: None }
}

/// A 128-byte chunk h5py 3.16 wrote with `compression="lzf"`.
const LZF_CHUNK: &[u8] = &[
    7, 0, 1, 2, 3, 4, 5, 6, 0, 224, 31, 6, 0, 0, 224, 30, 0, 31, 100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110,
    111, 112, 113, 114, 115, 116, 117, 118, 119, 120, 121, 122, 123, 124, 125, 126, 127, 128, 129, 130, 131, 7, 132,
    133, 134, 135, 136, 137, 138, 139,
];

/// Writes the seeds of the decoder targets under `corpus`.
pub fn write_codec_seeds(corpus: &Path) {
    let data = values(1000);
    let le4 = || Codec::Bytes { endian: Some(vzarr::dataset::Endian::Little) };
    let mut seeds: Vec<(&str, &str, Vec<u8>)> = vec![
        ("deflate", "zlib", framed([0; 4], 1000, &encode(vec![bytes(), Codec::Zlib { level: 6 }], &data, 1))),
        ("deflate", "gzip", framed([1, 0, 0, 0], 1000, &encode(vec![bytes(), Codec::Gzip { level: 1 }], &data, 1))),
        (
            "shuffle",
            "four",
            framed([3, 0, 0, 0], 1000, &encode(vec![le4(), Codec::Shuffle { element_size: 4 }], &data, 4)),
        ),
        ("fletcher32", "sum", framed([0; 4], 1000, &encode(vec![bytes(), Codec::Fletcher32], &data, 1))),
        (
            "zstd",
            "frame",
            framed([0; 4], 1000, &encode(vec![bytes(), Codec::Zstd { level: 3, checksum: true }], &data, 1)),
        ),
        ("lzo", "literals", framed([0; 4], 8, &[25, 1, 2, 3, 4, 5, 6, 7, 8, 0x11, 0, 0])),
        ("lzo", "match", framed([0; 4], 16, &[25, 1, 2, 3, 4, 5, 6, 7, 8, 252, 0, 0x11, 0, 0])),
        ("lzf", "literals", framed([0; 4], 8, &[7, 1, 2, 3, 4, 5, 6, 7, 8])),
        // A chunk h5py wrote (src/codec/lzf.rs's test): references with a length byte, long literal runs.
        ("lzf", "references", framed([0; 4], 128, LZF_CHUNK)),
        ("szip", "raw", framed([4, 7, 0, 3], 64, &[&64u32.to_le_bytes()[..], &values(80)].concat())),
    ];
    for (i, cname) in [BloscCompressor::BloscLz, BloscCompressor::Lz4, BloscCompressor::Zstd].into_iter().enumerate() {
        let blosc = Codec::Blosc { cname, clevel: 5, shuffle: BloscShuffle::Shuffle, typesize: 4, blocksize: 0 };
        let frame = encode(vec![le4(), blosc], &data, 4);
        seeds.push(("blosc", ["blosclz", "lz4", "zstd"][i], framed([i as u8, 5, 1, 3], 1000, &frame)));
        seeds.push(("blosc2", ["blosclz", "lz4", "zstd"][i], framed([3, i as u8, 4, 0], 1000, &frame)));
    }
    let strings: Vec<String> =
        ["", "a", "température", "x".repeat(40).as_str()].iter().map(|s| s.to_string()).collect();
    seeds.push((
        "vlen",
        "strings",
        framed([0; 4], 4, &CodecChain::vlen_utf8().encode_strings(&strings).expect("vlen")),
    ));
    let mut shard = ShardBuilder::new(4);
    for chunk in [Some(&b"first"[..]), None, Some(&b"third chunk"[..]), Some(&b""[..])] {
        shard.push(chunk);
    }
    seeds.push(("sharding", "four", [&4u64.to_le_bytes()[..], &shard.finish()].concat()));
    for (name, codecs, swap) in [
        ("zlib", vec![le4(), Codec::Shuffle { element_size: 4 }, Codec::Zlib { level: 4 }], 4),
        ("fletcher", vec![le4(), Codec::Fletcher32, Codec::Zstd { level: 1, checksum: false }], 4),
        (
            "blosc",
            vec![
                le4(),
                Codec::Blosc {
                    cname: BloscCompressor::Lz4,
                    clevel: 5,
                    shuffle: BloscShuffle::BitShuffle,
                    typesize: 4,
                    blocksize: 0,
                },
            ],
            4,
        ),
    ] {
        let chain = CodecChain::new(codecs).expect("seed chain");
        let chunk = framed([swap as u8, 0, 0, 0], 1000, &chain.encode(&data, swap).expect("seed encoding"));
        let json = serde_json::to_vec(&chain.to_json()).expect("json");
        let files = vec![("codecs.json".to_string(), json), ("chunk.bin".to_string(), chunk)];
        seeds.push(("codec-chain", name, crate::bundle::encode(&files)));
    }
    for (target, name, bytes) in seeds {
        let dir = corpus.join(target);
        std::fs::create_dir_all(&dir).expect("corpus directory");
        std::fs::write(dir.join(format!("{name}.bin")), bytes).expect("seed file");
    }
}
