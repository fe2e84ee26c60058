//! The target layout of one array of a regular copy: the regular grid of the objects written (chunks,
//! or shards holding whole chunks), and how one object is cut from a decoded region and encoded.
//!
//! Input: the array's metadata and the options' chunk (and shard) lengths by dimension name. Output:
//! a [`Target`], whose [`Target::encode`] gives one object's bytes. Unsharded, an object is one chunk
//! encoded with the array's codecs (`rechunk::encode_chunk`). Sharded (Zarr v3 core, "Sharding codec",
//! `sharding_indexed`), an object is one shard: its inner chunks in C order, each encoded the same
//! way, plus the index (`codec/sharding`); inner chunks wholly past the array's end are left empty
//! (readers give the fill value). With `--codec` ([`Recode`]) the chunks are encoded with those
//! codecs instead of the array's.

use crate::codec::sharding::{ShardBuilder, ShardingIndexed};
use crate::codec::{CodecError, Recode};
use crate::grid::{ChunkDim, ChunkGrid};
use crate::metadata::ArrayMetadata;
use crate::ndcopy::unravel;
use crate::rechunk::{encode_chunk, Region};

/// One array's objects: their grid and codecs, and the inner chunk grid when they are shards.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    /// The array's metadata with the objects' regular grid (chunks, or shards).
    pub(crate) metadata: ArrayMetadata,
    /// Sharded: the array's metadata with the inner chunks' regular grid.
    pub(crate) inner: Option<ArrayMetadata>,
    /// The codecs are not the stored array's (`--codec`).
    pub(crate) recoded: bool,
}

/// One dimension's length in a regular copy, resolved over the store: a fixed length (a regular
/// grid), or edges (a calendar unit over the time coordinate, the runs of a grouping variable).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum DimLength {
    /// Chunks of this many elements (the last one padded past the extent).
    Fixed(u64),
    /// These edges, summing to the extent.
    Edges(Vec<u64>),
}

/// Each dimension's length from `lengths` by name, else `default(d)`.
fn lengths_by_name(
    metadata: &ArrayMetadata,
    lengths: &[(String, DimLength)],
    default: impl Fn(usize) -> DimLength,
) -> Vec<DimLength> {
    (0..metadata.chunk_grid.ndim())
        .map(|d| {
            lengths.iter().find(|(n, _)| *n == dim_name(metadata, d)).map_or_else(|| default(d), |(_, l)| l.clone())
        })
        .collect()
}

/// Dimension `d`'s name, or its number when the array names none.
fn dim_name(metadata: &ArrayMetadata, d: usize) -> String {
    metadata.dimension_names.as_ref().and_then(|n| n.get(d)).cloned().unwrap_or_else(|| d.to_string())
}

/// The grid dimension `length` gives over `extent` (a fixed length at most the extent).
fn grid_dim(name: &str, extent: u64, length: &DimLength) -> Result<ChunkDim, String> {
    match length {
        DimLength::Fixed(n) => ChunkDim::regular(extent, (*n).min(extent.max(1))).map_err(|e| e.to_string()),
        DimLength::Edges(edges) => ChunkDim::from_edges(extent, edges).map_err(|e| {
            let sum: u64 = edges.iter().sum();
            format!("{name}: {} chunks of {sum} elements in all, along {extent}: {e}", edges.len())
        }),
    }
}

/// The shard edges `length` gives along a dimension of `extent` whose inner chunks are `chunk`
/// long: each a multiple of `chunk` (the last rounded up to one, as a regular grid's last shard is).
fn shard_dim(name: &str, extent: u64, chunk: u64, length: &DimLength) -> Result<ChunkDim, String> {
    let not_multiple = |s: u64| format!("shard length {name}={s} is not a multiple of the chunk length {chunk}");
    match length {
        DimLength::Fixed(s) => {
            let s = if *s >= extent { extent.max(1).div_ceil(chunk) * chunk } else { *s }; // one shard
            if s % chunk != 0 {
                return Err(not_multiple(s));
            }
            ChunkDim::regular(extent, s).map_err(|e| e.to_string())
        }
        DimLength::Edges(edges) => {
            let mut rounded = edges.clone();
            if let Some(last) = rounded.last_mut() {
                *last = last.div_ceil(chunk) * chunk;
            }
            if let Some((k, s)) = rounded.iter().enumerate().find(|(_, s)| *s % chunk != 0) {
                return Err(format!("{}, shard {k} of {}", not_multiple(*s), rounded.len()));
            }
            grid_dim(name, extent, &DimLength::Edges(rounded))
        }
    }
}

impl Target {
    /// The target of an array: chunks of `chunks` (dimensions not named keep the array's chunk length
    /// where it is regular, else the whole extent), in shards of `shards` when given (dimensions not
    /// named: one chunk per shard; a shard length is rounded up to whole chunks when it reaches past
    /// the extent). Edges (a calendar unit, `by:VAR`) give a rectilinear grid; as shards, they hold
    /// regular inner chunks that divide each of them.
    ///
    /// # Errors
    /// A shard length that is not a multiple of the chunk length, varying inner chunks, or a grid that
    /// cannot be built.
    pub(crate) fn of(
        stored: &ArrayMetadata,
        chunks: &[(String, DimLength)],
        shards: Option<&[(String, DimLength)]>,
        codec: Option<Recode>,
    ) -> Result<Target, String> {
        let mut recoded = stored.clone();
        if let Some(codec) = codec {
            recoded.codecs = codec.chain(&stored.codecs).map_err(|e| format!("codec {codec}: {e}"))?;
        }
        let metadata = &recoded;
        let recoded = codec.is_some();
        let grid = &metadata.chunk_grid;
        let shape = grid.shape();
        let chunk_lengths = lengths_by_name(metadata, chunks, |d| {
            DimLength::Fixed(grid.dim(d).regular_size().unwrap_or_else(|| grid.dim(d).extent().max(1)))
        });
        let with_grid = |dims: Vec<ChunkDim>| -> ArrayMetadata {
            let mut m = metadata.clone();
            m.chunk_grid = ChunkGrid::new(dims);
            m
        };
        let chunk_dims: Vec<ChunkDim> = (0..shape.len())
            .map(|d| grid_dim(&dim_name(metadata, d), shape[d], &chunk_lengths[d]))
            .collect::<Result<_, _>>()?;
        let Some(shards) = shards else {
            return Ok(Target { metadata: with_grid(chunk_dims), inner: None, recoded });
        };
        let mut inner = Vec::with_capacity(shape.len());
        for (d, dim) in chunk_dims.iter().enumerate() {
            let Some(size) = dim.regular_size() else {
                return Err(format!(
                    "{}: varying chunk lengths cannot be the inner chunks of shards (a shard's inner chunks \
                     are regular): give the calendar unit or by:VAR to --shards and a number to --chunks",
                    dim_name(metadata, d)
                ));
            };
            inner.push(size);
        }
        let shard_lengths = lengths_by_name(metadata, shards, |d| DimLength::Fixed(inner[d]));
        let shard_dims: Vec<ChunkDim> = (0..shape.len())
            .map(|d| shard_dim(&dim_name(metadata, d), shape[d], inner[d], &shard_lengths[d]))
            .collect::<Result<_, _>>()?;
        let inner_grid = ChunkGrid::regular(&shape, &inner).map_err(|e| e.to_string())?;
        let mut inner_metadata = metadata.clone();
        inner_metadata.chunk_grid = inner_grid;
        Ok(Target { metadata: with_grid(shard_dims), inner: Some(inner_metadata), recoded })
    }

    /// The largest object along each dimension (a rectilinear grid's longest edge), which the copy's
    /// blocks are planned by.
    pub(crate) fn largest_object(&self) -> Vec<u64> {
        largest_chunk(&self.metadata.chunk_grid)
    }

    /// The object `coords` of the target grid cut from `data` (the elements of `region`, which holds
    /// the object's valid part) and encoded.
    ///
    /// # Errors
    /// The codec error of a chunk that does not encode.
    pub(crate) fn encode(&self, coords: &[u64], region: &Region, data: &[u8]) -> Result<Vec<u8>, CodecError> {
        let Some(inner) = &self.inner else {
            return encode_chunk(&self.metadata, coords, region, data);
        };
        let outer = &self.metadata.chunk_grid;
        let inner_grid = &inner.chunk_grid;
        let inner_shape = inner_grid.chunk_shape(&vec![0; coords.len()]);
        let per_shard: Vec<u64> =
            outer.chunk_shape(coords).iter().zip(&inner_shape).map(|(s, c)| s / c.max(&1)).collect();
        let first: Vec<u64> = outer.chunk_origin(coords).iter().zip(&inner_shape).map(|(o, c)| o / c.max(&1)).collect();
        let count: u64 = per_shard.iter().product();
        let inner_counts = inner_grid.grid_shape();
        let mut shard = ShardBuilder::new(count);
        for k in 0..count {
            let local = unravel(k, &per_shard);
            let global: Vec<u64> = local.iter().zip(&first).map(|(l, f)| l + f).collect();
            if global.iter().zip(&inner_counts).any(|(g, n)| g >= n) {
                shard.push(None);
                continue;
            }
            shard.push(Some(&encode_chunk(inner, &global, region, data)?));
        }
        Ok(shard.finish())
    }

    /// How the array is written, for the report.
    pub(crate) fn sharding(&self) -> super::Sharding {
        let Some(inner) = &self.inner else { return super::Sharding::Unsharded };
        let ndim = inner.chunk_grid.ndim();
        super::Sharding::Sharded(super::super::ShardLayout {
            grid: self.metadata.chunk_grid.clone(),
            chunk_shape: inner.chunk_grid.chunk_shape(&vec![0; ndim]),
            short_last: vec![None; ndim],
        })
    }

    /// `zarr.json` of the copy: the stored document `doc` with the target's regular grid, the
    /// `--codec` codecs, and for shards the codecs moved inside a `sharding_indexed` codec.
    pub(crate) fn zarr_json(&self, doc: &mut serde_json::Map<String, serde_json::Value>) {
        doc.insert("chunk_grid".into(), self.metadata.chunk_grid.to_json());
        if self.recoded {
            doc.insert("codecs".into(), self.metadata.codecs.to_json());
        }
        if let Some(inner) = &self.inner {
            let chunk_shape = inner.chunk_grid.chunk_shape(&vec![0; inner.chunk_grid.ndim()]);
            let codec = ShardingIndexed { chunk_shape, codecs: inner.codecs.clone() };
            doc.insert("codecs".into(), serde_json::Value::Array(vec![codec.to_json()]));
        }
    }
}

/// The longest chunk along each dimension of `grid` (at least 1).
pub(crate) fn largest_chunk(grid: &ChunkGrid) -> Vec<u64> {
    grid.dims().iter().map(|d| d.edge_range().map_or(1, |(_, max)| max.max(1))).collect()
}
