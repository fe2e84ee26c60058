//! The in-memory virtual dataset: what scanning produces, combining merges and writers persist.
//!
//! Pure data model: a table of source files, the group tree, and per array its metadata plus a dense
//! chunk table (one [`ChunkEntry`] per grid chunk, in row-major order, and a blob of store-owned
//! bytes), held as compact columns: 12 bytes a chunk, no heap object per reference
//! (`dataset/chunk_table`). Store-owned bytes stay in memory up to the budget they are given and spill to
//! the budget's spill file past it (`dataset/owned_bytes`).

mod chunk_table;
mod coordinate_values;
mod owned_bytes;

pub use chunk_table::{ChunkStats, ChunkTable, Entries};
pub use coordinate_values::CoordinateValues;
pub use owned_bytes::{OwnedBytes, OwnedBytesBudget, OwnedBytesError, SpillFile, SpillFiles, DEFAULT_MEMORY_BUDGET};

pub use crate::manifest::sources::{SourceFile, SourceTable};
pub use crate::manifest::ChunkEntry;
// The Zarr v3 model of an array (`metadata/`: data types, fill values, attributes) and its codec
// chain (`codec/`), part of the dataset model.
pub use crate::codec::*;
pub use crate::metadata::*;
use std::collections::BTreeMap;

/// A group of the hierarchy (`path` is `""` for the root, else `a/b` without leading slash).
#[derive(Debug, Clone, PartialEq)]
pub struct GroupNode {
    /// Slash-separated path from the root.
    pub path: String,
    /// Group attributes.
    pub attributes: Attributes,
    /// Attributes whose bytes JSON text cannot hold (HDF5 opaque values, strings that are not valid
    /// UTF-8), name -> how they are written (`"base64"`): the `zarr.json`'s `vzarr` note.
    pub attribute_encodings: BTreeMap<String, String>,
}

impl GroupNode {
    /// A group of plain attributes (none written as base64).
    pub fn new(path: impl Into<String>, attributes: Attributes) -> Self {
        GroupNode { path: path.into(), attributes, attribute_encodings: BTreeMap::new() }
    }
}

/// One array of the virtual dataset.
#[derive(Debug, Clone, PartialEq)]
pub struct VirtualArray {
    /// Slash-separated path from the root (`tas`, `grp/tas`).
    pub path: String,
    /// Its `zarr.json` content.
    pub metadata: ArrayMetadata,
    /// Where its chunks are.
    pub chunks: ChunkTable,
    /// Chunks vzarr had to rewrite (cropped partial chunks, chunks with skipped filters).
    pub rewritten_chunks: u64,
    /// Hash of the decoded values (small arrays only), to check arrays taken once are identical
    /// across files.
    pub digest: Option<u64>,
    /// For every non-empty set of concatenation dimensions along which the file's last chunk is
    /// partial: the chunks of that corner trimmed to their valid extent along exactly those
    /// dimensions, used where this file is not the last along them. Empty when no chunk is partial.
    pub tails: Vec<TailChunks>,
}

/// The last chunks along a set of concatenation dimensions, trimmed to the extent they really hold
/// along those dimensions.
///
/// HDF5 stores a file's last chunk at the full chunk shape even when the file ends inside it; inside a
/// concatenation that chunk must decode to exactly its valid extent. With several concatenation
/// dimensions (tiles along `y` and `x`) a file's corner chunk may be interior along one, the other or
/// both, so one [`TailChunks`] exists per non-empty set of partial dimensions. Each entry is either the
/// valid byte prefix of the stored chunk (uncompressed, cropped along the leading dimension only) or a
/// cropped, re-encoded copy in the array's owned bytes.
#[derive(Debug, Clone, PartialEq)]
pub struct TailChunks {
    /// Array axes cropped (ascending); the chunk's valid length along each is its grid's `valid`.
    pub dims: Vec<usize>,
    /// (linear index in this file's grid, trimmed entry) for every chunk that is the last along all
    /// of `dims`.
    pub entries: Vec<(u64, ChunkEntry)>,
    /// How many of them were decoded, cropped and re-encoded.
    pub rewritten: u64,
}

/// Something the scan could not virtualize but did not stop for.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ScanWarning {
    /// The source file.
    pub file: String,
    /// The variable (or group) concerned; empty for the whole file.
    pub variable: String,
    /// What was left out and why.
    pub message: String,
}

impl std::fmt::Display for ScanWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.variable.is_empty() {
            write!(f, "{}: {}", self.file, self.message)
        } else {
            write!(f, "{}: {}: {}", self.file, self.variable, self.message)
        }
    }
}

/// How the arrays of a combined dataset map back to their source files, for `verify`.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Provenance {
    /// The concatenation dimension, when files were concatenated along exactly one existing
    /// dimension (stores written before several dimensions were supported have only this).
    pub concat_dim: Option<String>,
    /// Per source (in concatenation order): its id and the index range it covers along
    /// `concat_dim` (one-dimensional concatenations only).
    pub parts: Vec<SourcePart>,
    /// Every concatenation dimension, outermost first.
    #[serde(default)]
    pub concat_dims: Vec<ConcatDimInfo>,
    /// Per source: the box it covers along every concatenation dimension, and the arrays it
    /// provides. Empty in stores written before several dimensions were supported.
    #[serde(default)]
    pub boxes: Vec<SourceBox>,
    /// Gaps in the concatenation coordinate between consecutive files, described.
    #[serde(default)]
    pub gaps: Vec<String>,
    /// When the coordinate was re-encoded to the first file's units: the variables re-encoded.
    #[serde(default)]
    pub reencoded: Vec<String>,
    /// The units and calendar re-encoded values are in.
    #[serde(default)]
    pub units: Option<(String, Option<String>)>,
    /// How the dataset was combined, so that `vzarr append` can combine new files the same way.
    /// Absent in stores written before appending was supported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recipe: Option<Recipe>,
}

/// The options a combined dataset was made with (besides [`Provenance::concat_dims`]): what
/// appending needs to scan and combine new files exactly as a fresh scan of every file would.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct Recipe {
    /// Variables taken from the first file even where others differ (`--take-first`).
    #[serde(default)]
    pub take_first: Vec<String>,
    /// Variables missing from some files were left out (`--drop-missing`).
    #[serde(default)]
    pub drop_missing: bool,
    /// The first file's global attributes were kept (`--first-global-attributes`).
    #[serde(default)]
    pub first_global_attributes: bool,
    /// A line was prepended to the root `history` attribute.
    #[serde(default)]
    pub history_line: bool,
    /// Unsupported variables were left out (`--skip-unsupported`); set by the scan, not by combine.
    #[serde(default)]
    pub skip_unsupported: bool,
    /// The largest slab of a contiguous variable, in bytes (`--max-slab-mib`); set by the scan, not
    /// by combine (`None`: the default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_slab_bytes: Option<u64>,
}

/// One concatenation dimension as recorded in the store.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ConcatDimInfo {
    /// The dimension name.
    pub name: String,
    /// Where each file's position comes from: `"coordinate"` (an existing dimension ordered by its
    /// coordinate values), `"attr:NAME"` (a global attribute) or `"path:REGEX"` (the first capture
    /// group of a regular expression over the file name).
    pub key: String,
}

/// The part of the combined arrays one source file provides.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SourceBox {
    /// Index into the source table.
    pub source: u32,
    /// Per concatenation dimension (the order of [`Provenance::concat_dims`]): first index and count.
    pub ranges: Vec<(u64, u64)>,
    /// The concatenated arrays whose values in the box come from this file.
    pub arrays: Vec<String>,
}

/// The slice of the concatenation dimension one source file provides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SourcePart {
    /// Index into the source table.
    pub source: u32,
    /// First index along the concatenation dimension.
    pub start: u64,
    /// Number of indices.
    pub length: u64,
}

/// The values of one concatenation dimension's coordinate in one file, for ordering, overlap checks
/// and re-encoding times.
#[derive(Debug, Clone, PartialEq)]
pub struct ConcatCoordinate {
    /// The dimension (and coordinate variable) name.
    pub dim: String,
    /// Values in the file's own units (a progression in a few bytes: [`CoordinateValues`]).
    pub values: CoordinateValues,
    /// The `units` attribute.
    pub units: Option<String>,
    /// The `calendar` attribute.
    pub calendar: Option<String>,
    /// The bounds variable (named by `bounds`) and its values, row-major.
    pub bounds: Option<(String, CoordinateValues)>,
}

/// Where an HDF5 link of a group points, as stored (not followed).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum LinkTarget {
    /// A hard link: the object's source file (index into the sources) and object header address,
    /// the same for every name of the object.
    Hard {
        /// The source file the object lies in.
        file: usize,
        /// Its object header address.
        address: u64,
    },
    /// A soft link: the path as written (absolute, or relative to the group).
    Soft(String),
    /// An external link: the file name and the object path as written.
    External {
        /// The linked file, as written.
        file: String,
        /// The object's path in it.
        path: String,
    },
}

/// What a single-file HDF5 scan knows of the file's links and group reference attributes, beyond
/// the group tree it gives (which follows every link): what VirtualiZarr's Links and Object
/// References convention records. Empty for other formats and combined archives.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Hdf5Links {
    /// (group path, member name, target) of every link of every group walked, by group in walk order
    /// and by name within a group.
    pub links: Vec<(String, String, LinkTarget)>,
    /// (group path, attribute name) of the group attributes that hold object references (stored as
    /// their targets' absolute paths).
    pub reference_attributes: Vec<(String, String)>,
}

/// A whole virtual dataset: sources, groups and arrays.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct VirtualDataset {
    /// Every source file, indexed by the `source` of chunk entries.
    pub sources: SourceTable,
    /// Groups, the root first.
    pub groups: Vec<GroupNode>,
    /// Arrays, in a stable order (as found in the first file).
    pub arrays: Vec<VirtualArray>,
    /// What was left out.
    pub warnings: Vec<ScanWarning>,
    /// How arrays map to sources.
    pub provenance: Provenance,
    /// The coordinates of the concatenation dimensions a single-file scan was asked for (the scan
    /// options' `concat_dims`) and that the file has, in the order asked.
    pub concat: Vec<ConcatCoordinate>,
    /// The links of a single HDF5 file (empty otherwise).
    pub hdf5_links: Hdf5Links,
}

impl VirtualDataset {
    /// The array at `path`, if any.
    pub fn array(&self, path: &str) -> Option<&VirtualArray> {
        self.arrays.iter().find(|a| a.path == path)
    }
}
