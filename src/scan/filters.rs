//! HDF5 filter pipeline -> Zarr v3 codec chain (the HDF5 specification's filter ids; the Zarr v3 codec specifications for
//! the codec names the Python stack uses).
//!
//! The pipeline order in the dataset creation property list is the encode order, which is also the
//! order of bytes->bytes codecs in `zarr.json`, after the `bytes` codec.

use crate::codec::{Codec, CodecChain, Endian};

/// HDF5 filter ids vzarr maps to codecs.
const DEFLATE: i32 = 1;
const SHUFFLE: i32 = 2;
const FLETCHER32: i32 = 3;
const ZSTD: i32 = 32015;

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
        id => Err(UnsupportedFilter { id, name: filter.name.to_string() }),
    }
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
    fn unsupported_filters_are_named() {
        let err = filter_codec(&FilterSpec { id: 32001, name: "blosc", cd_values: &[] }, 4).unwrap_err();
        assert_eq!(err.to_string(), "unsupported HDF5 filter id 32001 (blosc) named \"blosc\"");
        assert!(codec_chain(&[spec(1, &[4]), spec(4, &[])], None, 1).is_err());
    }
}
