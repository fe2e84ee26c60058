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
use crate::grid::ChunkGrid;
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

/// Each dimension's length from `lengths` by name, else `default(d)`, at most the extent.
fn lengths_by_name(metadata: &ArrayMetadata, lengths: &[(String, u64)], default: impl Fn(usize) -> u64) -> Vec<u64> {
    let names = metadata.dimension_names.clone().unwrap_or_default();
    let grid = &metadata.chunk_grid;
    (0..grid.ndim())
        .map(|d| {
            let extent = grid.dim(d).extent().max(1);
            let asked = names.get(d).and_then(|n| lengths.iter().find(|(c, _)| c == n)).map(|(_, n)| *n);
            asked.unwrap_or_else(|| default(d)).min(extent)
        })
        .collect()
}

impl Target {
    /// The target of an array: chunks of `chunks` (dimensions not named keep the array's chunk length
    /// where it is regular, else the whole extent), in shards of `shards` when given (dimensions not
    /// named: one chunk per shard; a shard length is rounded up to whole chunks when it reaches past
    /// the extent).
    ///
    /// # Errors
    /// A shard length that is not a multiple of the chunk length, or a grid that cannot be built.
    pub(crate) fn of(
        stored: &ArrayMetadata,
        chunks: &[(String, u64)],
        shards: Option<&[(String, u64)]>,
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
        let chunk_shape = lengths_by_name(metadata, chunks, |d| {
            grid.dim(d).regular_size().unwrap_or_else(|| grid.dim(d).extent().max(1))
        });
        let with_grid = |lengths: &[u64]| -> Result<ArrayMetadata, String> {
            let mut m = metadata.clone();
            m.chunk_grid = ChunkGrid::regular(&shape, lengths).map_err(|e| e.to_string())?;
            Ok(m)
        };
        let Some(shards) = shards else {
            return Ok(Target { metadata: with_grid(&chunk_shape)?, inner: None, recoded });
        };
        let mut shard_shape = lengths_by_name(metadata, shards, |d| chunk_shape[d]);
        for (d, (s, c)) in shard_shape.iter_mut().zip(&chunk_shape).enumerate() {
            if *s >= shape[d] {
                *s = shape[d].max(1).div_ceil(*c) * c; // one shard along the dimension
            }
            if *s % c != 0 {
                let name =
                    metadata.dimension_names.as_ref().and_then(|n| n.get(d)).cloned().unwrap_or_else(|| d.to_string());
                return Err(format!("shard length {name}={s} is not a multiple of the chunk length {c}"));
            }
        }
        Ok(Target { metadata: with_grid(&shard_shape)?, inner: Some(with_grid(&chunk_shape)?), recoded })
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
