//! Standard base64 (RFC 4648, with padding; the `base64` crate): the `fill_value` of byte-string data
//! types and the `base64:` values of kerchunk references. Decoding accepts canonical input only.

use ::base64::engine::general_purpose::STANDARD;
use ::base64::Engine as _;

/// Encodes `bytes`.
pub(crate) fn encode(bytes: &[u8]) -> String {
    STANDARD.encode(bytes)
}

/// Decodes `text`; None when it is not valid, canonical, padded base64.
pub(crate) fn decode(text: &str) -> Option<Vec<u8>> {
    STANDARD.decode(text).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_refuses_non_canonical_input() {
        for n in 0..8 {
            let bytes: Vec<u8> = (0..n).map(|i| (i * 37 + 11) as u8).collect();
            assert_eq!(decode(&encode(&bytes)).unwrap(), bytes);
        }
        assert_eq!(encode(b"vzarr"), "dnphcnI=");
        assert!(decode("dnphcnI").is_none(), "missing padding");
        assert!(decode("dnphcnJ=").is_none(), "non-zero trailing bits");
        assert!(decode("dnph*nI=").is_none());
    }
}
