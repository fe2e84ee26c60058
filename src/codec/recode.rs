//! [`Recode`]: the codecs a rewrite (`vzarr compact --codec`, `vzarr materialize --codec`) encodes
//! chunks with instead of the array's own: the array's `bytes` codec (its byte order) followed by one
//! compressor, or none.
//!
//! Spec: Zarr v3 core codecs `bytes`, `zstd` and `gzip`. Blosc is not offered: vzarr encodes Blosc
//! only as plain-copy frames (no compression), which would be no reason to re-encode.

use std::str::FromStr;

use super::{Codec, CodecChain, CodecError};

/// The compression of re-encoded chunks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recode {
    /// No compression: the `bytes` codec alone (`none`).
    Raw,
    /// Core `zstd` at this level (`zstd`, level 3, or `zstd:LEVEL`), without the content checksum.
    Zstd(i32),
    /// Core `gzip` at this level (`gzip`, level 6, or `gzip:LEVEL`, 0..=9).
    Gzip(u32),
}

impl FromStr for Recode {
    type Err = String;

    /// `none`, `zstd`, `zstd:LEVEL`, `gzip` or `gzip:LEVEL`.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let (name, level) = match text.split_once(':') {
            Some((name, level)) => (name, Some(level)),
            None => (text, None),
        };
        let bad = || format!("{text:?}: expected none, zstd, zstd:LEVEL, gzip or gzip:LEVEL");
        let recode = match (name, level) {
            ("none", None) => Recode::Raw,
            ("zstd", None) => Recode::Zstd(3),
            ("zstd", Some(level)) => Recode::Zstd(level.parse().map_err(|_| bad())?),
            ("gzip", None) => Recode::Gzip(6),
            ("gzip", Some(level)) => Recode::Gzip(level.parse().map_err(|_| bad())?),
            _ => return Err(bad()),
        };
        recode.chain(&CodecChain::raw(None)).map_err(|e| format!("{text:?}: {e}"))?;
        Ok(recode)
    }
}

impl std::fmt::Display for Recode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Recode::Raw => write!(f, "none"),
            Recode::Zstd(level) => write!(f, "zstd:{level}"),
            Recode::Gzip(level) => write!(f, "gzip:{level}"),
        }
    }
}

impl Recode {
    /// The chain replacing `codecs`: its `bytes` codec (the same byte order), then the compressor.
    ///
    /// # Errors
    /// [`CodecError::InvalidConfig`] for a level out of the codec's range;
    /// [`CodecError::ChainShape`] for a string chain (`vlen-utf8`), which is not re-encoded.
    pub fn chain(&self, codecs: &CodecChain) -> Result<CodecChain, CodecError> {
        if codecs.is_strings() {
            return Err(CodecError::ChainShape { reason: "a string array keeps its vlen-utf8 codec".into() });
        }
        let mut chain = vec![Codec::Bytes { endian: codecs.endian() }];
        match *self {
            Recode::Raw => {}
            Recode::Zstd(level) => chain.push(Codec::Zstd { level, checksum: false }),
            Recode::Gzip(level) => chain.push(Codec::Gzip { level }),
        }
        CodecChain::new(chain)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_and_bad_levels_are_refused() {
        assert_eq!("zstd:5".parse::<Recode>(), Ok(Recode::Zstd(5)));
        assert_eq!("zstd".parse::<Recode>(), Ok(Recode::Zstd(3)));
        assert_eq!("gzip".parse::<Recode>(), Ok(Recode::Gzip(6)));
        assert_eq!("none".parse::<Recode>(), Ok(Recode::Raw));
        assert!("gzip:12".parse::<Recode>().unwrap_err().contains("outside 0..=9"));
        assert!("blosc".parse::<Recode>().is_err());
        assert!("zstd:x".parse::<Recode>().is_err());
    }

    #[test]
    fn the_chain_keeps_the_byte_order_and_round_trips() {
        let big = CodecChain::new(vec![Codec::Bytes { endian: Some(super::super::Endian::Big) }]).unwrap();
        let chain = Recode::Zstd(1).chain(&big).unwrap();
        assert_eq!(chain.endian(), Some(super::super::Endian::Big));
        let data: Vec<u8> = (0..400u32).flat_map(|v| (v * 7).to_le_bytes()).collect();
        let encoded = chain.encode(&data, crate::codec::ByteSwap::Unit(1)).unwrap();
        assert_eq!(chain.decode(&encoded, crate::codec::ByteSwap::Unit(1), data.len()).unwrap(), data);
    }
}
