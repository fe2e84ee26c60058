//! Stage 5, read -> other stores: an opened [`Store`](crate::read::Store) exported for other readers.
//!
//! Each reference format exports itself from its own folder (`formats/kerchunk/export`: kerchunk
//! reference JSON, the same document as its writer's; `formats/parquet/export`: a kerchunk Parquet
//! reference set, feature `kerchunk-parquet`); they are re-exported here with what they share
//! (`formats/exports`). `export/materialize` writes a real Zarr v3 store with the chunk bytes
//! copied, optionally packed into `sharding_indexed` shards, or regular chunk grids. All walk the
//! store the same way: every node's `zarr.json`, then every array's manifest entries a round (or,
//! for Parquet, a record) at a time ([`ENTRIES_PER_ROUND`](crate::read::ENTRIES_PER_ROUND)), so
//! memory stays bounded whatever the archive's size. This room depends on `read/`, `formats/` and
//! `store/`; none depends on it.

mod materialize;

pub use crate::formats::{export_kerchunk, store_inputs, store_urls, ExportError, KerchunkOptions};
#[cfg(feature = "kerchunk-parquet")]
pub use crate::formats::{export_kerchunk_parquet, KerchunkParquetOptions, KerchunkParquetReport};
#[cfg(feature = "icechunk")]
pub use materialize::materialize_update;
pub use materialize::{
    file_extents, materialize, materialize_regular, plan_shards, ArrayLayout, FileExtent, FileExtents,
    MaterializeOptions, MaterializeReport, RegularFormat, RegularOptions, ShardLayout, ShardSpec, Sharding,
    Unshardable, MAX_CHUNKS_PER_SHARD, MAX_SLAB_ENTRIES,
};
