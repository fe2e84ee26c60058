//! HDF5 filter pipeline -> Zarr v3 codec chain (the HDF5 specification's filter ids; the Zarr v3 codec specifications for
//! the codec names the Python stack uses).
//!
//! The pipeline order in the dataset creation property list is the encode order, which is also the
//! order of bytes->bytes codecs in `zarr.json`, after the `bytes` codec.

use crate::codec::{BloscCompressor, BloscShuffle, Codec, CodecChain, Endian};

/// HDF5 filter ids vzarr maps to codecs.
const DEFLATE: i32 = 1;
const SHUFFLE: i32 = 2;
const FLETCHER32: i32 = 3;
const ZSTD: i32 = 32015;
const BLOSC: i32 = 32001;

/// A filter with no Zarr codec vzarr can describe it with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnsupportedFilter {
    /// HDF5 filter id.
    pub id: i32,
    /// Filter name as registered in the file.
    pub name: String,
}

impl std::fmt::Display for UnsupportedFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let known = match self.id {
            4 => " (szip)",
            5 => " (nbit)",
            6 => " (scaleoffset)",
            32000 => " (lzf)",
            32001 => " (blosc)",
            32026 => " (blosc2)",
            32004 => " (lz4)",
            32008 => " (bitshuffle)",
            _ => "",
        };
        write!(f, "unsupported HDF5 filter id {}{known}", self.id)?;
        if !self.name.is_empty() {
            write!(f, " named \"{}\"", self.name)?;
        }
        Ok(())
    }
}

/// One filter as read from the file: id, name and client data values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilterSpec<'a> {
    /// HDF5 filter id.
    pub id: i32,
    /// Registered name.
    pub name: &'a str,
    /// Client data (`cd_values`).
    pub cd_values: &'a [u32],
}

/// The codec for one HDF5 filter. `element_size` is the dataset's type size (shuffle's default).
///
/// # Errors
/// [`UnsupportedFilter`] for every filter id vzarr does not map.
pub fn filter_codec(filter: &FilterSpec<'_>, element_size: usize) -> Result<Codec, UnsupportedFilter> {
    let first = filter.cd_values.first().copied();
    match filter.id {
        DEFLATE => Ok(Codec::Zlib { level: first.unwrap_or(6).min(9) }),
        SHUFFLE => Ok(Codec::Shuffle { element_size: first.map_or(element_size, |v| v as usize) }),
        FLETCHER32 => Ok(Codec::Fletcher32),
        ZSTD => Ok(Codec::Zstd { level: first.map_or(3, |v| v as i32), checksum: false }),
        BLOSC => blosc_codec(filter, element_size),
        id => Err(UnsupportedFilter { id, name: filter.name.to_string() }),
    }
}

/// The `blosc` codec of the hdf5-blosc filter: every chunk is one Blosc 1 frame, the bytes Zarr's
/// `blosc` codec decodes. The filter's `cd_values` are its revision, the Blosc format version, the
/// type size, the chunk's size in bytes, then (when set) the compression level, the shuffle (0 none,
/// 1 bytes, 2 bits) and the compressor code; the filter's defaults (level 5, byte shuffle, blosclz)
/// apply to those it leaves out. A value out of range is refused as the filter would be, and so is
/// snappy, which vzarr's decoder lacks.
fn blosc_codec(filter: &FilterSpec<'_>, element_size: usize) -> Result<Codec, UnsupportedFilter> {
    let cd = |i: usize| filter.cd_values.get(i).copied();
    let refused = |what: String| UnsupportedFilter { id: BLOSC, name: format!("{} ({what})", filter.name) };
    let typesize = cd(2).filter(|&t| t > 0).map_or(element_size, |t| t as usize).max(1);
    let clevel = cd(4).unwrap_or(5);
    let clevel = u8::try_from(clevel).ok().filter(|&l| l <= 9).ok_or_else(|| refused(format!("level {clevel}")))?;
    let shuffle = cd(5).unwrap_or(1);
    let shuffle = BloscShuffle::from_code(shuffle).ok_or_else(|| refused(format!("shuffle {shuffle}")))?;
    let code = cd(6).unwrap_or(0);
    let cname = BloscCompressor::from_code(code).ok_or_else(|| refused(format!("compressor {code}")))?;
    if cname == BloscCompressor::Snappy {
        // vzarr's decoder has no snappy, and numcodecs' Blosc is commonly built without it.
        return Err(refused("the snappy compressor, which vzarr cannot decode".into()));
    }
    Ok(Codec::Blosc { cname, clevel, shuffle, typesize, blocksize: 0 })
}

/// The codec chain for a dataset: `bytes` with the file's byte order, then each filter's codec.
///
/// # Errors
/// [`UnsupportedFilter`] naming the first filter that has no codec.
pub fn codec_chain(
    filters: &[FilterSpec<'_>],
    endian: Option<Endian>,
    element_size: usize,
) -> Result<CodecChain, UnsupportedFilter> {
    let mut codecs = vec![Codec::Bytes { endian }];
    for filter in filters {
        codecs.push(filter_codec(filter, element_size)?);
    }
    // A bytes codec followed by bytes->bytes codecs is always a valid chain.
    CodecChain::new(codecs).map_err(|e| UnsupportedFilter { id: -1, name: e.to_string() })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(id: i32, cd: &[u32]) -> FilterSpec<'_> {
        FilterSpec { id, name: "", cd_values: cd }
    }

    #[test]
    fn maps_the_netcdf4_pipeline_in_order() {
        let chain = codec_chain(&[spec(2, &[4]), spec(1, &[5]), spec(3, &[])], Some(Endian::Little), 4).unwrap();
        assert_eq!(
            chain.codecs(),
            &[
                Codec::Bytes { endian: Some(Endian::Little) },
                Codec::Shuffle { element_size: 4 },
                Codec::Zlib { level: 5 },
                Codec::Fletcher32,
            ]
        );
    }

    #[test]
    fn zstd_level_and_defaults() {
        assert_eq!(filter_codec(&spec(32015, &[7]), 2).unwrap(), Codec::Zstd { level: 7, checksum: false });
        assert_eq!(filter_codec(&spec(2, &[]), 8).unwrap(), Codec::Shuffle { element_size: 8 });
    }

    #[test]
    fn blosc_cd_values_name_the_codec() {
        let blosc = filter_codec(&spec(32001, &[2, 2, 8, 8000, 7, 2, 5]), 4).unwrap();
        let expected = Codec::Blosc {
            cname: BloscCompressor::Zstd,
            clevel: 7,
            shuffle: BloscShuffle::BitShuffle,
            typesize: 8,
            blocksize: 0,
        };
        assert_eq!(blosc, expected);
        let defaults = filter_codec(&spec(32001, &[2, 2, 0, 400]), 2).unwrap();
        let expected = Codec::Blosc {
            cname: BloscCompressor::BloscLz,
            clevel: 5,
            shuffle: BloscShuffle::Shuffle,
            typesize: 2,
            blocksize: 0,
        };
        assert_eq!(defaults, expected);
        assert!(filter_codec(&spec(32001, &[2, 2, 4, 400, 5, 1, 9]), 4).is_err(), "an unknown compressor");
        let snappy = filter_codec(&FilterSpec { id: 32001, name: "blosc", cd_values: &[2, 2, 4, 400, 5, 1, 3] }, 4);
        assert!(snappy.unwrap_err().to_string().contains("snappy"), "snappy is refused");
    }

    #[test]
    fn unsupported_filters_are_named() {
        let err = filter_codec(&FilterSpec { id: 32026, name: "blosc2", cd_values: &[] }, 4).unwrap_err();
        assert_eq!(err.to_string(), "unsupported HDF5 filter id 32026 (blosc2) named \"blosc2\"");
        assert!(codec_chain(&[spec(1, &[4]), spec(4, &[])], None, 1).is_err());
    }
}
