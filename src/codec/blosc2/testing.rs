//! Test-only writers of Blosc2 chunks, frames and b2nd arrays, by the format documents (not by the
//! decoder), so that the unit tests can craft well-formed input and then break it.

use crate::codec::{compress, shuffle::shuffle_into, Codec};

/// How [`chunk`] encodes.
#[derive(Debug, Clone, Copy)]
pub(super) struct Spec {
    pub(super) typesize: u8,
    pub(super) blocksize: usize,
    /// Codec format: 1 lz4, 3 zlib, 4 zstd (0: streams stored raw, blosclz's code).
    pub(super) format: u8,
    pub(super) filters: [u8; 6],
    pub(super) split: bool,
    pub(super) memcpyed: bool,
}

impl Spec {
    pub(super) fn new(typesize: u8, blocksize: usize, format: u8) -> Self {
        Spec { typesize, blocksize, format, filters: [0, 0, 0, 0, 0, 1], split: true, memcpyed: false }
    }
}

/// Bit-shuffles a block by the definition (the leading multiple of 8 elements; the rest as is).
fn bit_shuffle(src: &[u8], typesize: usize) -> Vec<u8> {
    let n = src.len() / typesize / 8 * 8;
    let mut out = src.to_vec();
    out[..n * typesize].fill(0);
    for i in 0..n {
        for j in 0..typesize {
            for k in 0..8 {
                if src[i * typesize + j] >> k & 1 != 0 {
                    out[(j * 8 + k) * (n / 8) + i / 8] |= 1 << (i % 8);
                }
            }
        }
    }
    out
}

/// Blosc2's delta encoding of one block (`delta.c`): XOR with the previous element in block 0, with
/// block 0's element elsewhere (`first` is block 0's original bytes).
fn delta(block: &[u8], first: &[u8], is_first: bool, typesize: usize) -> Vec<u8> {
    let w = match typesize {
        1 | 2 | 4 | 8 => typesize,
        t if t % 8 == 0 => 8,
        _ => 1,
    };
    let whole = block.len() / w * w;
    let mut out = block.to_vec();
    for j in 0..whole {
        out[j] = if is_first {
            if j < w {
                block[j]
            } else {
                block[j] ^ block[j - w]
            }
        } else {
            block[j] ^ first[j]
        };
    }
    out
}

fn compress_stream(format: u8, part: &[u8]) -> Vec<u8> {
    match format {
        1 => lz4_flex::block::compress(part),
        3 => compress::compress(&Codec::Zlib { level: 6 }, part).unwrap(),
        4 => compress::compress(&Codec::Zstd { level: 3, checksum: false }, part).unwrap(),
        _ => part.to_vec(),
    }
}

/// One stream: a run of zeros or of one byte as Blosc2 writes them, else compressed or raw.
fn stream(format: u8, part: &[u8], out: &mut Vec<u8>) {
    if part.iter().all(|&b| b == 0) {
        out.extend_from_slice(&0i32.to_le_bytes());
    } else if part.len() > 1 && part.iter().all(|&b| b == part[0]) {
        out.extend_from_slice(&(-i32::from(part[0])).to_le_bytes());
        out.push(0x01);
    } else {
        let c = compress_stream(format, part);
        let c = if c.len() >= part.len() { part.to_vec() } else { c };
        out.extend_from_slice(&(c.len() as i32).to_le_bytes());
        out.extend_from_slice(&c);
    }
}

/// The 32-byte header.
fn header(spec: &Spec, flags: u8, nbytes: usize, cbytes: usize) -> Vec<u8> {
    let mut h = vec![5, 1, flags, spec.typesize];
    for v in [nbytes, spec.blocksize, cbytes] {
        h.extend_from_slice(&(v as i32).to_le_bytes());
    }
    h.extend_from_slice(&spec.filters);
    h.extend_from_slice(&[0; 10]);
    h
}

/// A Blosc2 chunk of `data`.
pub(super) fn chunk(data: &[u8], spec: &Spec) -> Vec<u8> {
    let ts = usize::from(spec.typesize);
    let mut flags = (spec.format << 5) | 0x05 | if spec.split { 0 } else { 0x10 };
    if spec.memcpyed {
        flags |= 0x02;
        let mut out = header(spec, flags, data.len(), 32 + data.len());
        out.extend_from_slice(data);
        return out;
    }
    let blocks: Vec<&[u8]> = data.chunks(spec.blocksize).collect();
    let mut body = Vec::new();
    let mut starts = Vec::new();
    let base = 32 + 4 * blocks.len();
    for (k, block) in blocks.iter().enumerate() {
        let mut filtered = block.to_vec();
        for &f in &spec.filters {
            filtered = match f {
                1 => {
                    let mut out = vec![0; filtered.len()];
                    shuffle_into(&filtered, &mut out, ts);
                    out
                }
                2 => bit_shuffle(&filtered, ts),
                3 => delta(&filtered, blocks[0], k == 0, ts),
                _ => filtered,
            };
        }
        starts.push((base + body.len()) as i32);
        let leftover = block.len() < spec.blocksize;
        let streams = if spec.split && !leftover { ts } else { 1 };
        for part in filtered.chunks(filtered.len() / streams) {
            stream(spec.format, part, &mut body);
        }
    }
    let mut out = header(spec, flags, data.len(), base + body.len());
    starts.iter().for_each(|s| out.extend_from_slice(&s.to_le_bytes()));
    out.extend_from_slice(&body);
    out
}

/// One chunk of a frame: stored, or special (code 1 zeros, 2 NaNs, 4 uninitialized) in the index.
pub(super) enum Part {
    Stored(Vec<u8>),
    Special(u8),
}

fn push_be(out: &mut Vec<u8>, marker: u8, bytes: &[u8]) {
    out.push(marker);
    out.extend_from_slice(bytes);
}

/// A contiguous frame of `parts` (each of `chunksize` bytes but maybe the last; `nbytes` in all).
pub(super) fn frame(parts: &[Part], typesize: u8, chunksize: i32, nbytes: i64, meta: &[(&str, Vec<u8>)]) -> Vec<u8> {
    let mut h = vec![0x9e, 0xa8];
    h.extend_from_slice(b"b2frame\0");
    push_be(&mut h, 0xd2, &[0; 4]); // header length, set below
    push_be(&mut h, 0xcf, &[0; 8]); // frame length, set below
    h.extend_from_slice(&[0xa4, 0x12, 0x00, 0x04, 0x00]);
    let mut chunks = Vec::new();
    let mut offsets = Vec::new();
    for part in parts {
        match part {
            Part::Stored(c) => {
                offsets.push(chunks.len() as i64);
                chunks.extend_from_slice(c);
            }
            Part::Special(code) => offsets.push(i64::from_le_bytes([0, 0, 0, 0, 0, 0, 0, 0x80 | code])),
        }
    }
    push_be(&mut h, 0xd3, &nbytes.to_be_bytes());
    push_be(&mut h, 0xd3, &(chunks.len() as i64).to_be_bytes());
    push_be(&mut h, 0xd2, &i32::from(typesize).to_be_bytes());
    push_be(&mut h, 0xd2, &chunksize.to_be_bytes());
    push_be(&mut h, 0xd2, &chunksize.to_be_bytes());
    push_be(&mut h, 0xd1, &[0, 1]);
    push_be(&mut h, 0xd1, &[0, 1]);
    h.push(0xc2);
    h.extend_from_slice(&[0xd8, 6, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    assert_eq!(h.len(), 87);
    h.extend_from_slice(&[0x93, 0xcd, 0, 0, 0xde, 0, meta.len() as u8]);
    let mut slots = Vec::new();
    for (name, _) in meta {
        h.push(0xa0 | name.len() as u8);
        h.extend_from_slice(name.as_bytes());
        h.push(0xd2);
        slots.push(h.len());
        h.extend_from_slice(&[0; 4]);
    }
    h.extend_from_slice(&[0xdc, 0, meta.len() as u8]);
    for ((_, content), slot) in meta.iter().zip(slots) {
        let at = h.len() as i32;
        h[slot..slot + 4].copy_from_slice(&at.to_be_bytes());
        push_be(&mut h, 0xc6, &(content.len() as i32).to_be_bytes());
        h.extend_from_slice(content);
    }
    let header_len = h.len() as i32;
    h[11..15].copy_from_slice(&header_len.to_be_bytes());
    let raw: Vec<u8> = offsets.iter().flat_map(|o| o.to_le_bytes()).collect();
    let index = chunk(&raw, &Spec { memcpyed: true, ..Spec::new(8, raw.len().max(1), 0) });
    h.extend_from_slice(&chunks);
    h.extend_from_slice(&index);
    h.extend_from_slice(&[0x94, 0x01, 0xc6, 0, 0, 0, 0]); // a trailer decoding does not read
    let frame_len = h.len() as u64;
    h[16..24].copy_from_slice(&frame_len.to_be_bytes());
    h
}

/// A `b2nd` metalayer.
pub(super) fn b2nd_meta(shape: &[i64], chunk: &[i32], block: &[i32]) -> Vec<u8> {
    let rank = shape.len() as u8;
    let mut m = vec![0x97, 0, rank, 0x90 | rank];
    shape.iter().for_each(|s| push_be(&mut m, 0xd3, &s.to_be_bytes()));
    m.push(0x90 | rank);
    chunk.iter().for_each(|c| push_be(&mut m, 0xd2, &c.to_be_bytes()));
    m.push(0x90 | rank);
    block.iter().for_each(|b| push_be(&mut m, 0xd2, &b.to_be_bytes()));
    m.extend_from_slice(&[0, 0xdb, 0, 0, 0, 3]);
    m.extend_from_slice(b"<i2");
    m
}

/// The chunks of a b2nd array of `values` (C order, `ts`-byte elements) laid out as b2nd lays them
/// out: chunks in C order, each its extended shape as blocks in C order; padding is 0xee.
pub(super) fn b2nd_chunks(values: &[u8], ts: usize, shape: &[usize], chunk: &[usize], block: &[usize]) -> Vec<Vec<u8>> {
    let rank = shape.len();
    let grid: Vec<usize> = (0..rank).map(|d| shape[d].div_ceil(chunk[d])).collect();
    let blocks: Vec<usize> = (0..rank).map(|d| chunk[d].div_ceil(block[d])).collect();
    let unravel = |mut n: usize, dims: &[usize]| {
        let mut c = vec![0; dims.len()];
        for d in (0..dims.len()).rev() {
            c[d] = n % dims[d];
            n /= dims[d];
        }
        c
    };
    let count = |dims: &[usize]| dims.iter().product::<usize>();
    let mut out = Vec::new();
    for n in 0..count(&grid) {
        let cc = unravel(n, &grid);
        let mut bytes = Vec::new();
        for k in 0..count(&blocks) {
            let bc = unravel(k, &blocks);
            for e in 0..count(block) {
                let ec = unravel(e, block);
                let local: Vec<usize> = (0..rank).map(|d| bc[d] * block[d] + ec[d]).collect();
                let global: Vec<usize> = (0..rank).map(|d| cc[d] * chunk[d] + local[d]).collect();
                if (0..rank).all(|d| local[d] < chunk[d] && global[d] < shape[d]) {
                    let flat = global.iter().zip(shape).fold(0, |f, (g, s)| f * s + g);
                    bytes.extend_from_slice(&values[flat * ts..(flat + 1) * ts]);
                } else {
                    bytes.extend(std::iter::repeat_n(0xee, ts));
                }
            }
        }
        out.push(bytes);
    }
    out
}
