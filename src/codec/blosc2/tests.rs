use super::testing::{b2nd_meta, chunk, frame, Part, Spec};
use super::*;

#[test]
fn cd_values_are_checked_as_the_filter_checks_them() {
    assert_eq!(Blosc2Params::from_cd_values(&[1, 0, 4, 400]).unwrap().chunk_shape(), None);
    assert_eq!(Blosc2Params::from_cd_values(&[1, 0, 4, 400, 5, 1, 5]).unwrap().chunk_shape(), None);
    let params = Blosc2Params::from_cd_values(&[1, 0, 4, 400, 5, 1, 5, 2, 10, 10]).unwrap();
    assert_eq!(params.chunk_shape(), Some(&[10u32, 10][..]));
    assert!(Blosc2Params::from_cd_values(&[1, 0, 4]).unwrap_err().to_string().contains("fewer than 4"));
    assert!(Blosc2Params::from_cd_values(&[1, 0, 4, 400, 5, 1, 5, 1, 10]).unwrap_err().to_string().contains("rank 1"));
    assert!(Blosc2Params::from_cd_values(&[1, 0, 4, 400, 5, 1, 5, 9]).unwrap_err().to_string().contains("rank 9"));
    assert!(Blosc2Params::from_cd_values(&[1, 0, 4, 400, 5, 1, 5, 3, 10, 10]).is_err(), "a dimension missing");
}

#[test]
fn a_super_chunk_is_its_first_chunk() {
    let data: Vec<u8> = (0..1000u16).flat_map(|i| (i / 7).to_le_bytes()).collect();
    let bytes = frame(&[Part::Stored(chunk(&data, &Spec::new(2, 512, 4)))], 2, 2000, 2000, &[]);
    assert_eq!(decompress(&Blosc2Params::default(), &bytes, 2000).unwrap(), data);
    assert!(matches!(decompress(&Blosc2Params::default(), &bytes, 1999), Err(CodecError::DecodedTooLong { .. })));
    let zeros = frame(&[Part::Special(1)], 2, 2000, 2000, &[]);
    assert_eq!(decompress(&Blosc2Params::default(), &zeros, 2000).unwrap(), vec![0; 2000]);
    let empty = frame(&[], 2, 2000, 0, &[]);
    assert!(decompress(&Blosc2Params::default(), &empty, 2000).is_err(), "a frame with no chunk");
}

#[test]
fn a_b2nd_or_caterva_frame_is_decoded_as_an_array() {
    // A 2 x 3 array of 2-byte values in one chunk of one 2 x 3 block: C order already.
    let data: Vec<u8> = (0..6u16).flat_map(u16::to_le_bytes).collect();
    let stored = || Part::Stored(chunk(&data, &Spec::new(2, 12, 1)));
    let meta = b2nd_meta(&[2, 3], &[2, 3], &[2, 3]);
    for name in ["b2nd", "caterva"] {
        let bytes = frame(&[stored()], 2, 12, 12, &[(name, meta.clone())]);
        assert_eq!(decompress(&Blosc2Params::default(), &bytes, 12).unwrap(), data, "{name}");
    }
}
