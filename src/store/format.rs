//! [`StoreFormat`]: the one name of each store format vzarr writes or reads, used by the library
//! (`Store::kind`, the writers' outputs), the command line (`scan --format`) and the Python package
//! (`format=` arguments) alike. Each format's code lives in its folder of `formats/`.

use std::fmt;
use std::str::FromStr;

use super::OutputKind;

/// A store format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum StoreFormat {
    /// A native `*.vzarr` store: Zarr v3 metadata, a binary manifest per array.
    #[default]
    Native,
    /// A kerchunk reference document (JSON, version 1; Zarr v3 or v2 keys).
    KerchunkJson,
    /// A kerchunk Parquet reference set (`.zmetadata` and `<array>/refs.N.parq`; feature
    /// `kerchunk-parquet`).
    KerchunkParquet,
    /// A branch of an Icechunk repository (feature `icechunk`).
    Icechunk,
    /// DMR++ sidecars, one per scanned file (OPeNDAP's XML chunk manifest; written only: a sidecar
    /// is read as an input format).
    Dmrpp,
}

impl StoreFormat {
    /// Every store format, in the order the command line lists them.
    pub const ALL: [StoreFormat; 5] = [
        StoreFormat::Native,
        StoreFormat::KerchunkJson,
        StoreFormat::Icechunk,
        StoreFormat::KerchunkParquet,
        StoreFormat::Dmrpp,
    ];

    /// The format's name on the command line and in Python (`kerchunk-json`).
    pub fn name(self) -> &'static str {
        match self {
            StoreFormat::Native => "native",
            StoreFormat::KerchunkJson => "kerchunk-json",
            StoreFormat::KerchunkParquet => "kerchunk-parquet",
            StoreFormat::Icechunk => "icechunk",
            StoreFormat::Dmrpp => "dmrpp",
        }
    }

    /// What a store of the format is called in messages ("a vzarr store").
    pub fn describe(self) -> &'static str {
        match self {
            StoreFormat::Native => "a vzarr store",
            StoreFormat::Icechunk => "an Icechunk repository",
            StoreFormat::KerchunkJson => "a kerchunk reference document",
            StoreFormat::KerchunkParquet => "a kerchunk Parquet reference set",
            StoreFormat::Dmrpp => "a DMR++ sidecar",
        }
    }

    /// The output kind a destination of this format must be to be replaced (`None` for Icechunk,
    /// whose repositories are committed to, never replaced).
    pub fn output_kind(self) -> Option<OutputKind> {
        match self {
            StoreFormat::Native => Some(OutputKind::VzarrStore),
            StoreFormat::KerchunkJson => Some(OutputKind::KerchunkJson),
            StoreFormat::KerchunkParquet => Some(OutputKind::KerchunkParquet),
            StoreFormat::Dmrpp => Some(OutputKind::Dmrpp),
            StoreFormat::Icechunk => None,
        }
    }
}

impl fmt::Display for StoreFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.describe())
    }
}

/// A name that is no store format.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown store format {name:?} (formats: native, kerchunk-json, icechunk, kerchunk-parquet, dmrpp)")]
pub struct UnknownFormat {
    /// The name given.
    pub name: String,
}

impl FromStr for StoreFormat {
    type Err = UnknownFormat;

    /// The format named `text` ([`StoreFormat::name`]).
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        StoreFormat::ALL.into_iter().find(|f| f.name() == text).ok_or_else(|| UnknownFormat { name: text.to_string() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back() {
        for format in StoreFormat::ALL {
            assert_eq!(format.name().parse::<StoreFormat>(), Ok(format));
        }
        assert_eq!("zarr".parse::<StoreFormat>(), Err(UnknownFormat { name: "zarr".into() }));
    }
}
