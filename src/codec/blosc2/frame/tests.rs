use super::*;
use crate::codec::blosc2::testing::{chunk, frame, Part, Spec};

fn two_chunks() -> (Vec<u8>, Vec<u8>) {
    let data: Vec<u8> = (0..700u32).flat_map(|i| (i / 3).to_le_bytes()).collect();
    let parts = [
        Part::Stored(chunk(&data[..1600], &Spec::new(4, 512, 4))),
        Part::Stored(chunk(&data[1600..], &Spec::new(4, 512, 1))),
    ];
    (frame(&parts, 4, 1600, 2800, &[("extra", vec![1, 2, 3])]), data)
}

fn decode_all(frame: &Frame<'_>) -> Result<Vec<u8>, CodecError> {
    let mut out = Vec::new();
    for n in 0..frame.nchunks() {
        let bytes = frame.chunk(n, 64)?;
        let chunk = bytes.parse()?;
        if chunk.nbytes() > 1 << 20 {
            return Err(CodecError::DecodedTooLong { codec: NAME, limit: 1 << 20 });
        }
        let mut part = vec![0; chunk.nbytes()];
        chunk.decode_into(&mut part)?;
        out.extend_from_slice(&part);
    }
    Ok(out)
}

#[test]
fn chunks_index_and_metalayers_are_read() {
    let (bytes, data) = two_chunks();
    let frame = Frame::parse(&bytes, 100).unwrap();
    assert_eq!((frame.nchunks(), frame.typesize()), (2, 4));
    assert_eq!(decode_all(&frame).unwrap(), data);
    assert_eq!(frame.metalayer("extra").unwrap(), Some(&[1u8, 2, 3][..]));
    assert_eq!(frame.metalayer("b2nd").unwrap(), None);
    // Trailing bytes after the frame are ignored.
    let mut longer = bytes.clone();
    longer.extend_from_slice(&[9; 10]);
    assert_eq!(decode_all(&Frame::parse(&longer, 100).unwrap()).unwrap(), data);
    assert!(Frame::parse(&bytes, 1).is_err(), "more chunks than the caller allows");
}

#[test]
fn special_offsets_are_special_chunks() {
    let stored = chunk(&[5u8; 40], &Spec::new(8, 40, 4));
    let parts = [Part::Special(1), Part::Stored(stored), Part::Special(2), Part::Special(4)];
    let bytes = frame(&parts, 8, 40, 150, &[]);
    let frame = Frame::parse(&bytes, 100).unwrap();
    let out = decode_all(&frame).unwrap();
    assert_eq!(out.len(), 150, "the last chunk is short");
    assert!(out[..40].iter().all(|&b| b == 0) && out[40..80].iter().all(|&b| b == 5));
    assert!(out[80..120].chunks(8).all(|b| f64::from_le_bytes(b.try_into().unwrap()).is_nan()));
    assert!(out[120..].iter().all(|&b| b == 0), "uninitialized: zeros");
    let value = with_offset(&bytes, 0, i64::from_le_bytes([0, 0, 0, 0, 0, 0, 0, 0x83]));
    assert!(Frame::parse(&value, 100).unwrap().chunk(0, 8).is_err(), "a repeated value needs its value");
}

/// `bytes` with the `n`th index offset replaced (the index is a plain-copy chunk before the trailer).
pub(super) fn with_offset(bytes: &[u8], n: usize, offset: i64) -> Vec<u8> {
    let header_len = u32::from_be_bytes(bytes[11..15].try_into().unwrap()) as usize;
    let cbytes = u64::from_be_bytes(bytes[39..47].try_into().unwrap()) as usize;
    let at = header_len + cbytes + 32 + 8 * n;
    let mut out = bytes.to_vec();
    out[at..at + 8].copy_from_slice(&offset.to_le_bytes());
    out
}

#[test]
fn unsupported_frames_are_named() {
    let (bytes, _) = two_chunks();
    for (at, value, says) in [
        (26, 1, "sparse frames"),
        (26, 5, "frame type 5"),
        (25, 0x14, "format version 4"),
        (25, 0x92, "variable-length blocks"),
    ] {
        let mut bad = bytes.clone();
        bad[at] = value;
        let err = Frame::parse(&bad, 100).unwrap_err();
        assert!(matches!(err, CodecError::Unsupported { .. }) && err.to_string().contains(says), "{says}: {err}");
    }
}

#[test]
fn hostile_frames_fail() {
    let (bytes, _) = two_chunks();
    for len in 0..bytes.len() - 7 {
        let frame = Frame::parse(&bytes[..len], 100);
        assert!(frame.is_err() || decode_all(&frame.unwrap()).is_err(), "cut at {len}");
    }
    for offset in [-1, 1 << 40, i64::MAX, 2800] {
        let bad = with_offset(&bytes, 1, offset);
        let frame = Frame::parse(&bad, 100).unwrap();
        assert!(frame.chunk(1, 64).and_then(|c| c.parse().map(|_| ())).is_err(), "offset {offset}");
    }
    let patch = |at: usize, field: &[u8]| {
        let mut bad = bytes.clone();
        bad[at..at + field.len()].copy_from_slice(field);
        Frame::parse(&bad, 100).and_then(|f| decode_all(&f))
    };
    assert!(patch(0, b"\x9e\xa8b3").is_err(), "magic");
    assert!(patch(11, &40i32.to_be_bytes()).is_err(), "header shorter than its fields");
    assert!(patch(11, &i32::MAX.to_be_bytes()).is_err(), "header past the frame");
    assert!(patch(39, &(1i64 << 40).to_be_bytes()).is_err(), "chunks past the frame");
    assert!(patch(30, &(1i64 << 40).to_be_bytes()).is_err(), "more chunks than the index");
    assert!(patch(48, &0i32.to_be_bytes()).is_err(), "type size 0");
    assert!(patch(58, &(-5i32).to_be_bytes()).is_err(), "negative chunk size");
    let (at, _) = bytes.windows(5).enumerate().find(|(_, w)| w == b"extra").unwrap();
    let mut bad = bytes.clone();
    bad[at + 6..at + 10].copy_from_slice(&10_000i32.to_be_bytes());
    assert!(Frame::parse(&bad, 100).unwrap().metalayer("extra").is_err(), "metalayer past the header");
}

proptest::proptest! {
    /// Any byte of a frame changed: parsing and decoding fail or succeed, never panic.
    #[test]
    fn mutated_frames_never_panic(at in 0usize..2000, byte in proptest::prelude::any::<u8>()) {
        let (mut bytes, _) = two_chunks();
        let at = at % bytes.len();
        bytes[at] = byte;
        if let Ok(frame) = Frame::parse(&bytes, 100) {
            let _ = frame.metalayer("b2nd");
            let _ = decode_all(&frame);
        }
    }
}
