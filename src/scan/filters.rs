//! HDF5 filter pipeline -> Zarr v3 codec chain (the HDF5 specification's filter ids; the Zarr v3 codec specifications for
//! the codec names the Python stack uses).
//!
//! The pipeline order in the dataset creation property list is the encode order, which is also the
//! order of bytes->bytes codecs in `zarr.json`, after the `bytes` codec.

use crate::codec::{Blosc2Params, BloscCompressor, BloscShuffle, Codec, Filter, SourceFilter, SzipParams};
#[cfg(test)]
use crate::codec::{CodecChain, Endian};

/// HDF5 filter ids vzarr maps to codecs.
const DEFLATE: i32 = 1;
const SHUFFLE: i32 = 2;
const FLETCHER32: i32 = 3;
const ZSTD: i32 = 32015;
const BLOSC: i32 = 32001;
/// HDF5 filter ids vzarr decodes itself, storing the chunks re-encoded.
const SZIP: i32 = 4;
const LZO: i32 = 305;
const LZF: i32 = 32000;
const BLOSC2: i32 = 32026;

/// The zstd level chunks of variables with a [`SourceFilter`] are re-encoded with.
const COPY_ZSTD_LEVEL: i32 = 3;

/// A filter with no Zarr codec vzarr can describe it with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UnsupportedFilter {
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
            305 => " (lzo)",
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
pub(crate) struct FilterSpec<'a> {
    /// HDF5 filter id.
    pub id: i32,
    /// Registered name.
    pub name: &'a str,
    /// Client data (`cd_values`).
    pub cd_values: &'a [u32],
}

/// The usual name of an HDF5 filter (h5py's and the HDF Group's registry's), else `recorded`, the
/// name the file records (HDF5 may record none for its own filters).
#[must_use]
pub(crate) fn filter_name(id: i32, recorded: &str) -> String {
    let known = match id {
        DEFLATE => "deflate",
        SHUFFLE => "shuffle",
        FLETCHER32 => "fletcher32",
        SZIP => "szip",
        5 => "nbit",
        6 => "scaleoffset",
        LZO => "lzo",
        307 => "bzip2",
        LZF => "lzf",
        BLOSC => "blosc",
        32004 => "lz4",
        32008 => "bitshuffle",
        ZSTD => "zstd",
        BLOSC2 => "blosc2",
        _ => return recorded.trim().to_string(),
    };
    known.to_string()
}

/// The codec for one HDF5 filter. `element_size` is the dataset's type size (shuffle's default).
///
/// # Errors
/// [`UnsupportedFilter`] for every filter id vzarr does not map.
pub(crate) fn filter_codec(filter: &FilterSpec<'_>, element_size: usize) -> Result<Codec, UnsupportedFilter> {
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

/// The pipeline stage of one HDF5 filter: its codec ([`filter_codec`]), or, for szip (4),
/// PyTables' LZO (305), h5py's LZF (32000) and blosc2 (32026), a [`SourceFilter`] vzarr decodes
/// itself.
///
/// # Errors
/// [`UnsupportedFilter`] for a filter id vzarr neither maps nor decodes, for szip parameters
/// libaec would refuse, and for blosc2 parameters the filter would refuse.
pub(crate) fn filter_stage(filter: &FilterSpec<'_>, element_size: usize) -> Result<Filter, UnsupportedFilter> {
    match filter.id {
        SZIP => SzipParams::from_cd_values(filter.cd_values)
            .map(|params| Filter::Source(SourceFilter::Szip(params)))
            .map_err(|why| UnsupportedFilter { id: SZIP, name: format!("{} ({why})", filter.name) }),
        LZO => Ok(Filter::Source(SourceFilter::Lzo)),
        LZF => Ok(Filter::Source(SourceFilter::Lzf)),
        BLOSC2 => Blosc2Params::from_cd_values(filter.cd_values)
            .map(|params| Filter::Source(SourceFilter::Blosc2(params)))
            .map_err(|why| UnsupportedFilter { id: BLOSC2, name: format!("{} ({why})", filter.name) }),
        _ => filter_codec(filter, element_size).map(Filter::Codec),
    }
}

/// The bytes -> bytes codecs a pipeline's chunks are stored with: its codecs when every filter has
/// one; else, when a [`SourceFilter`] is in it (its chunks are then stored re-encoded), the
/// pipeline's shuffles followed by zstd.
#[must_use]
pub(crate) fn stored_codecs(filters: &[Filter]) -> Vec<Codec> {
    if filters.iter().any(|f| matches!(f, Filter::Source(_))) {
        let shuffles = filters.iter().filter_map(|f| match f {
            Filter::Codec(codec @ Codec::Shuffle { .. }) => Some(codec.clone()),
            _ => None,
        });
        shuffles.chain([Codec::Zstd { level: COPY_ZSTD_LEVEL, checksum: false }]).collect()
    } else {
        filters.iter().filter_map(|f| if let Filter::Codec(c) = f { Some(c.clone()) } else { None }).collect()
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
#[cfg(test)]
pub(crate) fn codec_chain(
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
    fn szip_lzo_and_lzf_are_decoded_and_stored_as_shuffle_zstd() {
        let szip = filter_stage(&spec(4, &[141, 32, 16, 512]), 2).unwrap();
        let params =
            SzipParams { options_mask: 141, pixels_per_block: 32, bits_per_pixel: 16, pixels_per_scanline: 512 };
        assert_eq!(szip, Filter::Source(SourceFilter::Szip(params)));
        let bad = filter_stage(&FilterSpec { id: 4, name: "szip", cd_values: &[141, 33, 16, 512] }, 2).unwrap_err();
        assert!(bad.to_string().contains("33 pixels per block"), "{bad}");
        let lzo = filter_stage(&spec(305, &[1, 20, 1]), 8).unwrap();
        assert_eq!(lzo, Filter::Source(SourceFilter::Lzo));
        let lzf = filter_stage(&spec(32000, &[4, 261, 400]), 8).unwrap();
        assert_eq!(lzf, Filter::Source(SourceFilter::Lzf));
        assert_eq!(stored_codecs(&[lzf]), [Codec::Zstd { level: COPY_ZSTD_LEVEL, checksum: false }]);
        let shuffle = filter_stage(&spec(2, &[8]), 8).unwrap();
        let zstd = Codec::Zstd { level: COPY_ZSTD_LEVEL, checksum: false };
        let fletcher = Filter::Codec(Codec::Fletcher32);
        assert_eq!(
            stored_codecs(&[shuffle.clone(), lzo, fletcher.clone()]),
            [Codec::Shuffle { element_size: 8 }, zstd]
        );
        assert_eq!(stored_codecs(&[shuffle, fletcher]), [Codec::Shuffle { element_size: 8 }, Codec::Fletcher32]);
    }

    #[test]
    fn blosc2_is_decoded_and_refused_as_the_filter_refuses_it() {
        let b2nd = filter_stage(&spec(32026, &[1, 0, 4, 400, 5, 1, 5, 2, 10, 10]), 4).unwrap();
        let params = Blosc2Params::from_cd_values(&[1, 0, 4, 400, 5, 1, 5, 2, 10, 10]).unwrap();
        assert_eq!(b2nd, Filter::Source(SourceFilter::Blosc2(params)));
        assert_eq!(stored_codecs(&[b2nd]), [Codec::Zstd { level: COPY_ZSTD_LEVEL, checksum: false }]);
        let few = FilterSpec { id: 32026, name: "blosc2", cd_values: &[] };
        let err = filter_stage(&few, 4).unwrap_err();
        assert!(err.to_string().contains("32026 (blosc2)") && err.to_string().contains("fewer than 4"), "{err}");
    }

    #[test]
    fn filters_have_their_usual_names() {
        assert_eq!(filter_name(4, ""), "szip");
        assert_eq!(filter_name(32000, "lzf"), "lzf");
        assert_eq!(filter_name(32017, " SZ "), "SZ");
    }

    #[test]
    fn unsupported_filters_are_named() {
        let err = filter_codec(&FilterSpec { id: 32026, name: "blosc2", cd_values: &[] }, 4).unwrap_err();
        assert_eq!(err.to_string(), "unsupported HDF5 filter id 32026 (blosc2) named \"blosc2\"");
        assert!(codec_chain(&[spec(1, &[4]), spec(4, &[])], None, 1).is_err(), "szip has no codec");
    }
}
