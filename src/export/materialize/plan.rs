//! Planning a sharded array (pure): which outer grid, which inner chunk shape, or why not.
//!
//! Input: an array's metadata (its chunk grid is the source chunk grid), the [`ShardSpec`] asked for
//! and, for `--shards file`, the extent each source file covers along the concatenation dimension.
//! Output: a [`ShardLayout`] (outer chunk grid + inner chunk shape) or the reason the array cannot be
//! sharded with its chunks copied verbatim ([`Unshardable`]).
//!
//! The rules follow the Zarr v3 `sharding_indexed` codec: the inner chunk shape is one shape for the
//! whole array, every shard's extent along each dimension is a whole multiple of it, and every inner
//! chunk decodes to the full inner chunk shape. So the source grid must be regular along every
//! dimension (a source dimension with varying edges, such as whole-month chunks or files ending inside
//! a chunk, has no single inner chunk shape), and every shard boundary must fall on a chunk boundary.
//! One exception is repaired instead of refused: equal edges followed by a shorter LAST one (an
//! uncompressed slab cut at the array's end); that chunk is padded to the inner shape when written.
//! A shard at the end of a dimension is extended to a whole number of chunks: the outer grid's last
//! chunk may extend past the array (Zarr v3 core specification, chunk grids; zarr-extensions `rectilinear`), and the source's own last chunk already
//! does.

use std::str::FromStr;

use crate::grid::{ChunkDim, ChunkGrid};
use crate::metadata::ArrayMetadata;

/// Most inner chunks in one shard (its index is 16 bytes per chunk: 64 MiB).
pub const MAX_CHUNKS_PER_SHARD: u64 = 1 << 22;
/// Most manifest entries held for one slab of shards along the first dimension (24 bytes each).
pub const MAX_SLAB_ENTRIES: u64 = 1 << 24;

/// How `materialize` groups chunks into shards.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShardSpec {
    /// One shard per source file along the concatenation dimension, the whole extent along the
    /// others (arrays without that dimension: one shard).
    File,
    /// A fixed shard shape (elements per dimension), for arrays of exactly that many dimensions.
    Shape(Vec<u64>),
}

impl FromStr for ShardSpec {
    type Err = String;

    /// `file`, or a comma-separated shape such as `365,180,360`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s == "file" {
            return Ok(ShardSpec::File);
        }
        let shape: Result<Vec<u64>, _> = s.split(',').map(|p| p.trim().parse::<u64>()).collect();
        match shape {
            Ok(shape) if !shape.is_empty() && !shape.contains(&0) => Ok(ShardSpec::Shape(shape)),
            _ => Err(format!("{s:?}: expected `file` or a shard shape of positive integers such as 365,180,360")),
        }
    }
}

/// One source file's slice of the concatenation dimension.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileExtent {
    /// The file, for messages.
    pub file: String,
    /// First index along the dimension.
    pub start: u64,
    /// Number of indices.
    pub length: u64,
}

/// The files of a store along its concatenation dimension, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileExtents {
    /// The concatenation dimension's name (`None` for a store scanned from one file).
    pub dim: Option<String>,
    /// The files' extents, in concatenation order.
    pub files: Vec<FileExtent>,
}

/// How one array is sharded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardLayout {
    /// The outer (shard) grid: what `chunk_grid` of the sharded `zarr.json` says.
    pub grid: ChunkGrid,
    /// The inner chunk shape: the source chunks' shape.
    pub chunk_shape: Vec<u64>,
    /// Per dimension, the edge of the source's last chunk when it is shorter than the inner chunk (an
    /// uncompressed slab cut at the array's end): those chunks are decoded, padded with the fill
    /// value to the inner chunk shape and re-encoded; every other chunk is copied verbatim.
    pub short_last: Vec<Option<u64>>,
}

/// Why an array is written unsharded (one object per chunk) instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Unshardable {
    /// A 0-d array has one chunk; there is nothing to shard.
    #[error("0-d array (one chunk)")]
    Scalar,
    /// An array with a zero-length dimension has no chunks.
    #[error("no elements")]
    Empty,
    /// The source chunk edges vary along a dimension.
    #[error(
        "chunk edges along {dim} vary ({min}..{max}: files chunked differently or ending inside a chunk), \
         sharding needs one inner chunk shape"
    )]
    VaryingEdges {
        /// The dimension.
        dim: String,
        /// Smallest edge.
        min: u64,
        /// Largest edge.
        max: u64,
    },
    /// A file does not start or end on a chunk boundary.
    #[error("{file} covers {dim} {start}..{end}, not whole chunks of {chunk}")]
    FileInsideChunk {
        /// The file.
        file: String,
        /// The dimension.
        dim: String,
        /// First index.
        start: u64,
        /// One past the last index.
        end: u64,
        /// The chunk length.
        chunk: u64,
    },
    /// The files recorded for the store do not tile the dimension.
    #[error("the files' extents along {dim} do not cover 0..{extent} in order")]
    FilesDoNotTile {
        /// The dimension.
        dim: String,
        /// Its extent.
        extent: u64,
    },
    /// A fixed shard shape of another rank.
    #[error("shard shape has {shard} dimensions, the array {array}")]
    Rank {
        /// Dimensions of the shard shape.
        shard: usize,
        /// Dimensions of the array.
        array: usize,
    },
    /// Shards (or one slab of them) would hold more chunks than the writer keeps in memory.
    #[error("{what} would hold {count} chunks (at most {limit}); choose a smaller shard shape")]
    TooLarge {
        /// "a shard" or "a slab of shards".
        what: &'static str,
        /// Chunks.
        count: u64,
        /// The limit.
        limit: u64,
    },
    /// A fixed shard extent that is not a multiple of the chunk.
    #[error("shard extent {shard} along {dim} is not a multiple of the chunk length {chunk}")]
    NotMultiple {
        /// The dimension.
        dim: String,
        /// The shard extent asked for.
        shard: u64,
        /// The chunk length.
        chunk: u64,
    },
}

/// The shard layout of an array with metadata `metadata`, or why it has none.
///
/// # Errors
/// [`Unshardable`] naming the dimension (and file) that prevents a verbatim copy.
pub fn plan_shards(
    metadata: &ArrayMetadata,
    spec: &ShardSpec,
    files: &FileExtents,
) -> Result<ShardLayout, Unshardable> {
    let grid = &metadata.chunk_grid;
    let name = |d: usize| dim_name(metadata, d);
    if grid.ndim() == 0 {
        return Err(Unshardable::Scalar);
    }
    if grid.shape().contains(&0) {
        return Err(Unshardable::Empty);
    }
    let (chunk_shape, short_last): (Vec<u64>, Vec<Option<u64>>) = grid
        .dims()
        .iter()
        .enumerate()
        .map(|(d, dim)| {
            inner_edge(dim).ok_or_else(|| {
                let (min, max) = dim.held_range().unwrap_or((0, 0));
                Unshardable::VaryingEdges { dim: name(d), min, max }
            })
        })
        .collect::<Result<Vec<_>, _>>()?
        .into_iter()
        .unzip();
    let dims = match spec {
        ShardSpec::File => file_dims(metadata, &chunk_shape, files)?,
        ShardSpec::Shape(shape) => shape_dims(metadata, &chunk_shape, shape)?,
    };
    let layout = ShardLayout { grid: ChunkGrid::new(dims), chunk_shape, short_last };
    check_size(&layout, grid)?;
    Ok(layout)
}

/// Bounds the inner chunks of one shard and the entries of one slab (shards sharing the first outer
/// coordinate), which the writer holds in memory.
fn check_size(layout: &ShardLayout, source: &ChunkGrid) -> Result<(), Unshardable> {
    let per_dim: Vec<u64> = layout
        .grid
        .dims()
        .iter()
        .zip(&layout.chunk_shape)
        .map(|(d, c)| d.edge_range().map_or(0, |(_, max)| max / c))
        .collect();
    let count = per_dim.iter().fold(1u64, |a, &n| a.saturating_mul(n));
    if count > MAX_CHUNKS_PER_SHARD {
        return Err(Unshardable::TooLarge { what: "a shard", count, limit: MAX_CHUNKS_PER_SHARD });
    }
    let rest = source.grid_shape().iter().skip(1).fold(1u64, |a, &n| a.saturating_mul(n));
    let count = per_dim.first().copied().unwrap_or(1).saturating_mul(rest);
    if count > MAX_SLAB_ENTRIES {
        return Err(Unshardable::TooLarge { what: "a slab of shards", count, limit: MAX_SLAB_ENTRIES });
    }
    Ok(())
}

/// The inner chunk edge of a source dimension and, when its last chunk is shorter, that chunk's edge:
/// a regular dimension, or equal edges followed by one shorter last edge; `None` when edges vary
/// otherwise.
fn inner_edge(dim: &ChunkDim) -> Option<(u64, Option<u64>)> {
    if let Some(size) = dim.regular_size() {
        return Some((size, None));
    }
    match dim.runs().as_slice() {
        [(edge, _), (last, 1)] if last < edge => Some((*edge, Some(*last))),
        _ => None,
    }
}

fn dim_name(metadata: &ArrayMetadata, d: usize) -> String {
    metadata.dimension_names.as_ref().and_then(|n| n.get(d)).cloned().unwrap_or_else(|| format!("dimension {d}"))
}

/// `extent` rounded up to whole chunks of `chunk`: the extent of a shard holding the whole dimension.
fn whole_chunks(extent: u64, chunk: u64) -> u64 {
    extent.div_ceil(chunk).saturating_mul(chunk)
}

/// A regular outer dimension of shards of `size` (a positive multiple of `chunk`).
fn regular(extent: u64, size: u64, chunk: u64, dim: impl FnOnce() -> String) -> Result<ChunkDim, Unshardable> {
    match ChunkDim::regular(extent, size) {
        Ok(d) if size.is_multiple_of(chunk) => Ok(d),
        _ => Err(Unshardable::NotMultiple { dim: dim(), shard: size, chunk }),
    }
}

/// `--shards file`: the concatenation dimension split at the files, the others whole.
fn file_dims(metadata: &ArrayMetadata, chunks: &[u64], files: &FileExtents) -> Result<Vec<ChunkDim>, Unshardable> {
    let shape = metadata.shape();
    let concat = files.dim.as_ref().and_then(|dim| metadata.dimension_names.as_ref()?.iter().position(|n| n == dim));
    let mut dims = (0..shape.len())
        .map(|d| regular(shape[d], whole_chunks(shape[d], chunks[d]), chunks[d], || dim_name(metadata, d)))
        .collect::<Result<Vec<_>, _>>()?;
    if let Some(d) = concat.filter(|_| files.files.len() > 1) {
        dims[d] = file_dim(&dim_name(metadata, d), shape[d], chunks[d], &files.files)?;
    }
    Ok(dims)
}

/// One shard per file along a dimension of `extent` chunked by `chunk`.
fn file_dim(dim: &str, extent: u64, chunk: u64, files: &[FileExtent]) -> Result<ChunkDim, Unshardable> {
    let mut edges = Vec::with_capacity(files.len());
    let mut next = 0u64;
    for (i, f) in files.iter().enumerate() {
        let end = f.start.checked_add(f.length).filter(|_| f.start == next && f.length > 0);
        let end = end.ok_or(Unshardable::FilesDoNotTile { dim: dim.to_string(), extent })?;
        let last = i + 1 == files.len();
        if f.start % chunk != 0 || (!last && f.length % chunk != 0) {
            let (file, dim) = (f.file.clone(), dim.to_string());
            return Err(Unshardable::FileInsideChunk { file, dim, start: f.start, end, chunk });
        }
        edges.push(if last { whole_chunks(f.length, chunk) } else { f.length });
        next = end;
    }
    if next != extent {
        return Err(Unshardable::FilesDoNotTile { dim: dim.to_string(), extent });
    }
    ChunkDim::from_edges(extent, &edges).map_err(|_| Unshardable::FilesDoNotTile { dim: dim.to_string(), extent })
}

/// `--shards N,N,..`: a regular outer grid, each extent clipped to the array's whole chunks.
fn shape_dims(metadata: &ArrayMetadata, chunks: &[u64], shard: &[u64]) -> Result<Vec<ChunkDim>, Unshardable> {
    let shape = metadata.shape();
    if shard.len() != shape.len() {
        return Err(Unshardable::Rank { shard: shard.len(), array: shape.len() });
    }
    (0..shape.len())
        .map(|d| {
            let (extent, chunk, size) = (shape[d], chunks[d], shard[d]);
            if size % chunk != 0 {
                return Err(Unshardable::NotMultiple { dim: dim_name(metadata, d), shard: size, chunk });
            }
            regular(extent, size.min(whole_chunks(extent, chunk)), chunk, || dim_name(metadata, d))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::CodecChain;
    use crate::metadata::{DataType, FillValue};

    fn array(grid: ChunkGrid, names: &[&str]) -> ArrayMetadata {
        ArrayMetadata {
            data_type: DataType::Float32,
            chunk_grid: grid,
            fill_value: FillValue::zero(DataType::Float32),
            codecs: CodecChain::raw(Some(crate::codec::Endian::Little)),
            dimension_names: Some(names.iter().map(|n| n.to_string()).collect()),
            attributes: Default::default(),
            notes: Default::default(),
        }
    }

    fn files(lengths: &[u64]) -> FileExtents {
        let mut start = 0;
        let files = lengths
            .iter()
            .enumerate()
            .map(|(i, &length)| {
                let f = FileExtent { file: format!("f{i}.nc"), start, length };
                start += length;
                f
            })
            .collect();
        FileExtents { dim: Some("time".into()), files }
    }

    #[test]
    fn one_shard_per_file_along_time() {
        let months = [31u64, 28, 31, 30];
        let grid = ChunkGrid::regular(&[120, 10, 12], &[1, 5, 6]).unwrap();
        let layout = plan_shards(&array(grid, &["time", "lat", "lon"]), &ShardSpec::File, &files(&months)).unwrap();
        assert_eq!(layout.chunk_shape, vec![1, 5, 6]);
        assert_eq!(layout.grid.dim(0).edges().collect::<Vec<_>>(), months);
        assert_eq!((layout.grid.dim(1).regular_size(), layout.grid.dim(2).regular_size()), (Some(10), Some(12)));
        // An array without the concatenation dimension: one shard, rounded up to whole chunks.
        let lat = array(ChunkGrid::regular(&[10], &[4]).unwrap(), &["lat"]);
        let layout = plan_shards(&lat, &ShardSpec::File, &files(&months)).unwrap();
        assert_eq!(layout.grid.dim(0).regular_size(), Some(12));
    }

    #[test]
    fn last_file_is_rounded_up_to_whole_chunks() {
        let grid = ChunkGrid::regular(&[25, 4], &[5, 4]).unwrap();
        let layout = plan_shards(&array(grid, &["time", "x"]), &ShardSpec::File, &files(&[10, 10, 5])).unwrap();
        assert_eq!(layout.grid.dim(0).edges().collect::<Vec<_>>(), vec![10, 10, 5]);
        let grid = ChunkGrid::regular(&[23, 4], &[5, 4]).unwrap();
        let layout = plan_shards(&array(grid, &["time", "x"]), &ShardSpec::File, &files(&[10, 10, 3])).unwrap();
        assert_eq!(layout.grid.dim(0).edges().collect::<Vec<_>>(), vec![10, 10, 5]);
    }

    #[test]
    fn reasons_name_the_dimension_and_file() {
        let names = ["time", "x"];
        let varying =
            ChunkGrid::new(vec![ChunkDim::from_edges(59, &[28, 31]).unwrap(), ChunkDim::regular(4, 4).unwrap()]);
        let err = plan_shards(&array(varying, &names), &ShardSpec::File, &files(&[28, 31])).unwrap_err();
        assert_eq!(err, Unshardable::VaryingEdges { dim: "time".into(), min: 28, max: 31 });
        let grid = ChunkGrid::regular(&[20, 4], &[4, 4]).unwrap();
        let err = plan_shards(&array(grid.clone(), &names), &ShardSpec::File, &files(&[10, 10])).unwrap_err();
        assert!(err.to_string().starts_with("f0.nc covers time 0..10, not whole chunks of 4"), "{err}");
        let err = plan_shards(&array(grid.clone(), &names), &ShardSpec::File, &files(&[8, 8])).unwrap_err();
        assert!(matches!(err, Unshardable::FilesDoNotTile { .. }), "{err}");
        let shape = ShardSpec::Shape(vec![6, 4]);
        let err = plan_shards(&array(grid.clone(), &names), &shape, &files(&[])).unwrap_err();
        assert_eq!(err, Unshardable::NotMultiple { dim: "time".into(), shard: 6, chunk: 4 });
        let err = plan_shards(&array(grid, &names), &ShardSpec::Shape(vec![8]), &files(&[])).unwrap_err();
        assert_eq!(err, Unshardable::Rank { shard: 1, array: 2 });
        let scalar = array(ChunkGrid::new(vec![]), &[]);
        assert_eq!(plan_shards(&scalar, &ShardSpec::File, &files(&[])), Err(Unshardable::Scalar));
    }

    #[test]
    fn fixed_shape_is_clipped_to_the_array() {
        let grid = ChunkGrid::regular(&[365, 10, 12], &[1, 5, 6]).unwrap();
        let layout =
            plan_shards(&array(grid, &["time", "lat", "lon"]), &ShardSpec::Shape(vec![31, 180, 6]), &files(&[]))
                .unwrap();
        assert_eq!(layout.grid.grid_shape(), vec![12, 1, 2]);
        assert_eq!(layout.grid.chunk_shape(&[0, 0, 0]), vec![31, 10, 6]);
    }

    #[test]
    fn a_short_last_chunk_is_padded() {
        // Uncompressed slabs of 100 rows, the last one 9 rows.
        let rows = ChunkDim::from_edges(309, &[100, 100, 100, 9]).unwrap();
        let grid = ChunkGrid::new(vec![rows, ChunkDim::regular(6, 6).unwrap()]);
        let layout = plan_shards(&array(grid, &["row", "col"]), &ShardSpec::File, &files(&[])).unwrap();
        assert_eq!((layout.chunk_shape, layout.short_last), (vec![100, 6], vec![Some(9), None]));
        assert_eq!(layout.grid.dim(0).regular_size(), Some(400), "one shard of whole chunks");
        // A short chunk anywhere but last still has no inner chunk shape.
        let rows = ChunkDim::from_edges(309, &[100, 9, 100, 100]).unwrap();
        let grid = ChunkGrid::new(vec![rows, ChunkDim::regular(6, 6).unwrap()]);
        let err = plan_shards(&array(grid, &["row", "col"]), &ShardSpec::File, &files(&[])).unwrap_err();
        assert!(matches!(err, Unshardable::VaryingEdges { .. }), "{err}");
    }

    #[test]
    fn huge_shards_are_refused() {
        let grid = ChunkGrid::regular(&[1 << 12, 1 << 12], &[1, 1]).unwrap();
        let err = plan_shards(&array(grid, &["y", "x"]), &ShardSpec::File, &files(&[])).unwrap_err();
        assert!(matches!(err, Unshardable::TooLarge { what: "a shard", .. }), "{err}");
    }

    #[test]
    fn specs_parse() {
        assert_eq!("file".parse(), Ok(ShardSpec::File));
        assert_eq!("365,180, 360".parse(), Ok(ShardSpec::Shape(vec![365, 180, 360])));
        assert!("0,3".parse::<ShardSpec>().is_err());
        assert!("files".parse::<ShardSpec>().is_err());
        assert!("".parse::<ShardSpec>().is_err());
    }
}
