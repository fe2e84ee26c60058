use super::*;
use crate::codec::blosc2::testing::{chunk, Spec};

/// Smooth values of `ts` bytes: they compress, and their high bytes repeat (runs).
fn values(n: usize, ts: usize) -> Vec<u8> {
    (0..n).flat_map(|i| ((i as u128 * 37 / 5) ^ (i as u128 % 3)).to_le_bytes()[..ts].to_vec()).collect()
}

fn decode(bytes: &[u8]) -> Result<Vec<u8>, CodecError> {
    let chunk = Chunk::parse(bytes)?;
    // As the callers do: no allocation past a limit.
    if chunk.nbytes() > 1 << 20 {
        return Err(CodecError::DecodedTooLong { codec: NAME, limit: 1 << 20 });
    }
    let mut out = vec![0; chunk.nbytes()];
    chunk.decode_into(&mut out)?;
    Ok(out)
}

#[test]
fn every_codec_filter_split_and_type_size_round_trips() {
    let pipelines =
        [[0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 1], [0, 0, 0, 0, 0, 2], [0, 0, 0, 0, 3, 1], [0, 0, 0, 0, 4, 2]];
    for format in [0, 1, 3, 4] {
        for filters in pipelines {
            for ts in [1u8, 2, 3, 4, 8, 12] {
                for split in [true, false] {
                    // Blocks of 40 elements, the last one short.
                    let data = values(1000, usize::from(ts));
                    let spec = Spec { filters, split, ..Spec::new(ts, 40 * usize::from(ts), format) };
                    let what = format!("format {format} filters {filters:?} ts {ts} split {split}");
                    assert_eq!(decode(&chunk(&data, &spec)).expect(&what), data, "{what}");
                }
            }
        }
    }
}

#[test]
fn plain_copies_runs_and_raw_streams_decode() {
    let data = values(300, 4);
    let memcpyed = chunk(&data, &Spec { memcpyed: true, ..Spec::new(4, 256, 0) });
    assert_eq!(decode(&memcpyed).unwrap(), data);
    let mut runs = vec![0u8; 512];
    runs[256..].fill(7);
    assert_eq!(decode(&chunk(&runs, &Spec::new(4, 128, 4))).unwrap(), runs);
    // A shuffle whose metadata groups 2 bytes, not the type size.
    let mut spec = Spec::new(8, 64, 1);
    let mut shuffled = vec![0u8; data.len()];
    crate::codec::shuffle::shuffle_into(&data[..64], &mut shuffled[..64], 2);
    spec.filters = [0; 6];
    let mut bytes = chunk(&shuffled[..64], &spec);
    bytes[21] = SHUFFLE;
    bytes[29] = 2;
    assert_eq!(decode(&bytes).unwrap(), &data[..64]);
}

#[test]
fn blosclz_streams_decode() {
    // One block, one stream: a literal "abc", a 6-byte match at distance 3, a run of 5 'c', "z".
    let stream = [2, b'a', b'b', b'c', (4 << 5), 2, (3 << 5), 0, 0, b'z'];
    let spec = Spec { filters: [0; 6], split: false, ..Spec::new(1, 15, 0) };
    let mut bytes = chunk(b"abcabcabccccccz", &spec);
    bytes.truncate(32 + 4);
    bytes.extend_from_slice(&(stream.len() as i32).to_le_bytes());
    bytes.extend_from_slice(&stream);
    let cbytes = bytes.len() as i32;
    bytes[12..16].copy_from_slice(&cbytes.to_le_bytes());
    assert_eq!(decode(&bytes).unwrap(), b"abcabcabccccccz");
}

#[test]
fn special_chunks_fill_their_values() {
    let zeros = special_header(Special::Zeros, 24, 4, 8);
    assert_eq!(decode(&zeros).unwrap(), [0; 24]);
    let uninit = special_header(Special::Uninit, 16, 8, 16);
    assert_eq!(decode(&uninit).unwrap(), [0; 16]);
    let nans = decode(&special_header(Special::Nans, 16, 8, 16)).unwrap();
    assert!(nans.chunks(8).all(|b| f64::from_le_bytes(b.try_into().unwrap()).is_nan()));
    let nans = decode(&special_header(Special::Nans, 12, 4, 8)).unwrap();
    assert!(nans.chunks(4).all(|b| f32::from_le_bytes(b.try_into().unwrap()).is_nan()));
    assert!(decode(&special_header(Special::Nans, 12, 2, 8)).is_err(), "NaNs of 2 bytes");
    // A repeated 3-byte value: its size is what follows the header.
    let mut value = special_header(Special::Value, 12, 1, 6).to_vec();
    value.extend_from_slice(&[1, 2, 3]);
    value[12..16].copy_from_slice(&35i32.to_le_bytes());
    assert_eq!(decode(&value).unwrap(), [1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3]);
    value[4..8].copy_from_slice(&13i32.to_le_bytes());
    assert!(decode(&value).is_err(), "13 bytes of 3-byte values");
}

#[test]
fn unsupported_features_are_named() {
    let good = chunk(&values(2000, 4), &Spec::new(4, 8000, 4));
    let cases: [(usize, u8, &str); 6] = [
        (31, USE_DICT, "dictionaries"),
        (31, LAZY, "lazy chunks"),
        (31, INSTRUMENTED, "instrumented"),
        (30, VL_BLOCKS, "variable-length blocks"),
        (21, 35, "filter 35"),
        (2, 6 << 5 | 0x05, "user-defined codec 7"),
    ];
    for (at, value, says) in cases {
        let mut bytes = good.clone();
        if at == 2 {
            bytes[2] = value;
            bytes[22] = 7;
        } else {
            bytes[at] |= value;
        }
        let err = decode(&bytes).unwrap_err();
        assert!(matches!(err, CodecError::Unsupported { .. }) && err.to_string().contains(says), "{says}: {err}");
    }
    // Delta with a shuffle after it in decode order (slot 5 delta, slot 4 shuffle).
    let mut bytes = good;
    bytes[20..22].copy_from_slice(&[SHUFFLE, DELTA]);
    assert!(decode(&bytes).unwrap_err().to_string().contains("delta"));
}

#[test]
fn hostile_headers_and_streams_fail() {
    let good = chunk(&values(200, 4), &Spec::new(4, 256, 1));
    for len in 0..good.len() {
        assert!(decode(&good[..len]).is_err(), "cut at {len}");
    }
    let patch = |at: usize, v: i32| {
        let mut bytes = good.clone();
        bytes[at..at + 4].copy_from_slice(&v.to_le_bytes());
        decode(&bytes)
    };
    assert!(patch(4, -1).is_err(), "negative size");
    assert!(patch(8, 0).is_err(), "block size 0");
    assert!(patch(12, i32::MAX).is_err(), "compressed size past the input");
    assert!(patch(32, 0).is_err(), "block at the header");
    assert!(patch(32, i32::MAX).is_err(), "block past the chunk");
    assert!(patch(4, 10_000).is_err(), "more blocks than starts");
    let first = i32::from_le_bytes(good[32..36].try_into().unwrap()) as usize;
    assert!(patch(first, 1 << 30).is_err(), "stream past the chunk");
    assert!(patch(first, -300).is_err(), "a run of a 300 byte");
    let mut token = good.clone();
    token[first..first + 4].copy_from_slice(&(-5i32).to_le_bytes());
    token[first + 4] = 0x02;
    assert!(matches!(decode(&token), Err(CodecError::Unsupported { .. })), "unknown token");
}

proptest::proptest! {
    /// Chunks with random bytes after a plausible header, and random mutations of a good chunk, fail
    /// or decode to their declared size; never panic.
    #[test]
    fn random_chunks_never_panic(
        flags in 0u8..=255,
        typesize in 1u8..=16,
        nbytes in 0i32..2000,
        blocksize in 1i32..700,
        extended in proptest::collection::vec(proptest::prelude::any::<u8>(), 16),
        body in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..600),
        at in 0usize..400,
        byte in proptest::prelude::any::<u8>(),
    ) {
        let mut bytes = vec![5, 1, flags, typesize];
        for v in [nbytes, blocksize, 32 + body.len() as i32] {
            bytes.extend_from_slice(&v.to_le_bytes());
        }
        bytes.extend_from_slice(&extended);
        bytes.extend_from_slice(&body);
        if let Ok(out) = decode(&bytes) {
            proptest::prop_assert_eq!(out.len(), nbytes as usize);
        }
        let mut good = chunk(&values(100, 4), &Spec::new(4, 128, 4));
        let at = at % good.len();
        good[at] = byte;
        if let Ok(out) = decode(&good) {
            proptest::prop_assert!(out.len() <= 1 << 31);
        }
    }
}
