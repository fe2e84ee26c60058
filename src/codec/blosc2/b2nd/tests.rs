use super::*;
use crate::codec::blosc2::testing::{b2nd_chunks, b2nd_meta, chunk, frame, Part, Spec};

/// A frame of a b2nd array of 2-byte `values` with `filters`, and the array's bytes.
fn array(shape: &[usize], chunks: &[usize], blocks: &[usize], filters: [u8; 6]) -> (Vec<u8>, Vec<u8>) {
    let n: usize = shape.iter().product();
    let values: Vec<u8> = (0..n as u16).flat_map(|i| (i.wrapping_mul(7) / 3).to_le_bytes()).collect();
    let block_len = blocks.iter().product::<usize>() * 2;
    let parts: Vec<Part> = b2nd_chunks(&values, 2, shape, chunks, blocks)
        .iter()
        .map(|c| Part::Stored(chunk(c, &Spec { filters, ..Spec::new(2, block_len, 4) })))
        .collect();
    let ext = b2nd_chunks(&values, 2, shape, chunks, blocks)[0].len();
    let to = |v: &[usize]| v.iter().map(|&x| x as i32).collect::<Vec<_>>();
    let shape64: Vec<i64> = shape.iter().map(|&s| s as i64).collect();
    let meta = b2nd_meta(&shape64, &to(chunks), &to(blocks));
    let bytes = frame(&parts, 2, ext as i32, (ext * parts.len()) as i64, &[("b2nd", meta)]);
    (bytes, values)
}

fn decode_with(bytes: &[u8], params: &Blosc2Params, limit: usize) -> Result<Vec<u8>, CodecError> {
    let frame = Frame::parse(bytes, limit)?;
    let meta = frame.metalayer("b2nd")?.ok_or_else(|| corrupt("no b2nd metalayer"))?;
    decode(&frame, &Layout::parse(meta)?, params, limit)
}

#[test]
fn blocks_map_back_to_c_order() {
    let cases: [(&[usize], &[usize], &[usize]); 5] = [
        (&[5, 7, 3], &[5, 7, 3], &[2, 4, 2]),
        (&[7, 5], &[4, 3], &[3, 2]),
        (&[10, 1, 9], &[4, 1, 9], &[4, 1, 4]),
        (&[33], &[10], &[4]),
        (&[3, 4, 5, 2], &[3, 4, 5, 2], &[2, 2, 2, 2]),
    ];
    for (shape, chunks, blocks) in cases {
        for filters in [[0, 0, 0, 0, 0, 1], [0, 0, 0, 0, 3, 2]] {
            let (bytes, values) = array(shape, chunks, blocks, filters);
            let out = decode_with(&bytes, &Blosc2Params::default(), values.len()).unwrap();
            assert!(out == values, "{shape:?} {chunks:?} {blocks:?} {filters:?}");
        }
    }
}

#[test]
fn the_filters_chunk_shape_is_checked() {
    let (bytes, values) = array(&[5, 7], &[5, 7], &[2, 4], [0, 0, 0, 0, 0, 1]);
    let ok = Blosc2Params::from_cd_values(&[1, 0, 2, 70, 5, 1, 5, 2, 5, 7]).unwrap();
    assert_eq!(decode_with(&bytes, &ok, 70).unwrap(), values);
    let transposed = Blosc2Params::from_cd_values(&[1, 0, 2, 70, 5, 1, 5, 2, 7, 5]).unwrap();
    assert!(decode_with(&bytes, &transposed, 70).is_err());
    let rank3 = Blosc2Params::from_cd_values(&[1, 0, 2, 70, 5, 1, 5, 3, 5, 7, 1]).unwrap();
    assert!(decode_with(&bytes, &rank3, 70).is_err());
    assert!(matches!(
        decode_with(&bytes, &ok, 69),
        Err(CodecError::DecodedTooLong { .. }) | Err(CodecError::Corrupt { .. })
    ));
}

#[test]
fn hostile_layouts_fail() {
    let meta = |shape: &[i64], chunks: &[i32], blocks: &[i32]| Layout::parse(&b2nd_meta(shape, chunks, blocks));
    assert!(meta(&[4, 4], &[4, 4], &[2, 2]).is_ok());
    assert!(meta(&[4, 4], &[4, 0], &[2, 2]).is_err(), "chunk dimension 0");
    assert!(meta(&[4, 4], &[4, 4], &[2, 5]).is_err(), "block larger than the chunk");
    assert!(meta(&[-1, 4], &[4, 4], &[2, 2]).is_err(), "negative shape");
    assert!(matches!(meta(&[], &[], &[]), Err(CodecError::Unsupported { .. })), "rank 0");
    let good = b2nd_meta(&[4, 4], &[4, 4], &[2, 2]);
    for len in 0..good.len() - 10 {
        assert!(Layout::parse(&good[..len]).is_err(), "cut at {len}");
    }
    // A chunk count other than the layout's.
    let (bytes, _) = array(&[7, 5], &[4, 3], &[3, 2], [0, 0, 0, 0, 0, 1]);
    let frame = Frame::parse(&bytes, 100).unwrap();
    let wrong = Layout::parse(&b2nd_meta(&[7, 5], &[7, 5], &[3, 2])).unwrap();
    assert!(decode(&frame, &wrong, &Blosc2Params::default(), 100).is_err());
    // A chunk far larger than the array: blocks fit the limit, the padding they decode does not.
    let (bytes, _) = array(&[5, 7], &[5, 7], &[2, 4], [0, 0, 0, 0, 0, 1]);
    let frame = Frame::parse(&bytes, 4000).unwrap();
    let padded = Layout { shape: vec![1, 1000], chunk: vec![1000, 1000], block: vec![1000, 1] };
    let err = decode(&frame, &padded, &Blosc2Params::default(), 4000).unwrap_err();
    assert!(format!("{err:?}").contains("pad the array too much"), "{err:?}");
    let huge = Layout { shape: vec![1, 1], chunk: vec![64, 64], block: vec![64, 64] };
    assert!(decode(&frame, &huge, &Blosc2Params::default(), 4000).is_err(), "a block larger than the limit");
    // Chunk shapes whose product overflows.
    let wide = Layout { shape: vec![1; 8], chunk: vec![i32::MAX as usize; 8], block: vec![1; 8] };
    assert!(decode(&frame, &wide, &Blosc2Params::default(), 4000).is_err());
    let wide = Layout { shape: vec![1; 8], chunk: vec![i32::MAX as usize; 8], block: vec![i32::MAX as usize; 8] };
    assert!(decode(&frame, &wide, &Blosc2Params::default(), usize::MAX).is_err());
}

proptest::proptest! {
    /// Any byte of a b2nd frame changed: decoding fails, or gives the array the (possibly changed)
    /// metalayer describes, never more than the limit; never panics. A changed shape can describe a
    /// smaller array (a byte of the shape set from 7 to 5): the decoder gives that array, and the
    /// codec chain refuses a chunk of another length than its grid's (`CodecError::DecodedLength`).
    #[test]
    fn mutated_arrays_never_panic(at in 0usize..3000, byte in proptest::prelude::any::<u8>()) {
        let (mut bytes, values) = array(&[7, 5, 3], &[4, 3, 3], &[3, 2, 2], [0, 0, 0, 0, 0, 1]);
        let at = at % bytes.len();
        bytes[at] = byte;
        if let Ok(out) = decode_with(&bytes, &Blosc2Params::default(), values.len()) {
            let frame = Frame::parse(&bytes, values.len()).unwrap();
            let layout = Layout::parse(frame.metalayer("b2nd").unwrap().unwrap()).unwrap();
            let described = layout.shape.iter().product::<usize>() * frame.typesize();
            proptest::prop_assert_eq!(out.len(), described);
            proptest::prop_assert!(out.len() <= values.len());
        }
    }
}
