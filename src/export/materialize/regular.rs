//! Regular copies (issue 40): a real Zarr v3 store whose arrays have a REGULAR chunk grid of the
//! shape asked for (`--chunks time=90,lat=45,lon=90`), which any Zarr v3 reader opens without the
//! rectilinear extension.
//!
//! Input: an opened [`Store`] and the target chunk length per dimension name (dimensions not named
//! keep the store's chunk length where it is regular, else the whole extent). Output: the directory
//! store, every chunk decoded from the source chunks it overlaps (through the store's reader) and
//! re-encoded with the array's codecs, padded with the fill value past the array's end.
//!
//! Plan (`regular/plan`, as rechunker plans it): target chunks are produced a block at a time (whole
//! target chunks, grown within a quarter of `max_memory`), each block read once through the store
//! and its chunks encoded and written in parallel while the next block is read (`regular/blocks`).
//! When source and target chunks cross badly (the blocks would decode each source chunk many times),
//! the copy goes through an intermediate array (`regular/intermediate`): blocks of whole source
//! chunks into intermediate chunks, then the target blocks from those.
//!
//! Resumable: chunks are written into `DEST.partial/` (each file written under a temporary name and
//! renamed, so a chunk file present is complete; a marker file records the store and the chunk spec).
//! A rerun with the same store and spec skips the chunks already there. When every chunk is written,
//! the metadata is written and the directory is published at the destination in one step
//! (`store/publish`), as the other writers do.

use std::path::{Path, PathBuf};

use rayon::prelude::*;

mod blocks;
mod intermediate;
mod plan;
#[cfg(feature = "icechunk")]
mod repo;
mod target;

#[cfg(feature = "icechunk")]
pub use repo::materialize_update;

use super::{ArrayLayout, MaterializeReport, Sharding};
use crate::chunking::ChunkLength;
use crate::formats::{checked_nodes, store_inputs, ExportError};
use crate::grid::{DimSelection, Selection};
use crate::metadata::{chunk_key, node_key};
use crate::read::{ArrayReader, ReadOptions, Store};
use crate::rechunk::Region;
use crate::store::{io_error, OutputKind, Staged, WriteError};
use intermediate::Scratch;
use target::{DimLength, Target};

/// Objects uploaded at once to an object-store destination.
const UPLOADS: usize = 16;

/// The marker file of a partial copy: the store and the chunk spec it was started with.
const MARKER: &str = ".vzarr-partial";

/// What a regular copy writes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum RegularFormat {
    /// A Zarr v3 directory store (resumable from `DEST.partial`). The default.
    #[default]
    Zarr,
    /// An Icechunk repository (a directory or an object-store URL), written with one commit.
    Icechunk,
}

/// Options of [`materialize_regular`].
#[derive(Debug, Clone)]
pub struct RegularOptions {
    /// Target chunk length per dimension name. Required (at least one). A calendar unit (`month`)
    /// or `by:VAR` along a dimension gives a rectilinear grid along it (one chunk per month, per run
    /// of equal values of VAR), which readers open with the rectilinear extension.
    pub chunks: Vec<(String, ChunkLength)>,
    /// Pack the chunks into `sharding_indexed` shards of these lengths per dimension name (each a
    /// multiple of the chunk length; dimensions not named: one chunk per shard). A calendar unit or
    /// `by:VAR` gives rectilinear shard boundaries (one shard per month), each holding whole regular
    /// inner chunks. Default: `None`.
    pub shards: Option<Vec<(String, ChunkLength)>>,
    /// Memory the copy's buffers may take, in bytes: two blocks of target chunks of at most a quarter
    /// of it each, the reader's fetch batches, the chunks being encoded. Default: 1 GiB.
    pub max_memory: u64,
    /// Replace an existing Zarr v3 store (or commit over an existing repository). Default: false.
    pub overwrite: bool,
    /// Encode the chunks with this compression instead of the array's codecs. Default: `None`.
    pub codec: Option<crate::codec::Recode>,
    /// The output format. Default: [`RegularFormat::Zarr`].
    pub format: RegularFormat,
    /// Icechunk only: the branch committed to. Default: `main`.
    pub branch: String,
    /// Icechunk only: the commit message. Default: one naming the store and the chunks.
    pub message: Option<String>,
    /// Icechunk only: how an object-store repository is reached. Default: the environment's.
    pub remote: crate::source::RemoteOptions,
}

impl RegularOptions {
    /// `chunks` (numbers, or [`ChunkLength`]s), every other option at its default.
    pub fn new<L: Into<ChunkLength>>(chunks: Vec<(String, L)>) -> Self {
        RegularOptions {
            chunks: chunks.into_iter().map(|(d, l)| (d, l.into())).collect(),
            shards: None,
            max_memory: 1 << 30,
            overwrite: false,
            codec: None,
            format: RegularFormat::Zarr,
            branch: "main".into(),
            message: None,
            remote: crate::source::RemoteOptions::default(),
        }
    }

    fn spec(&self) -> String {
        let join =
            |l: &[(String, ChunkLength)]| l.iter().map(|(d, n)| format!("{d}={n}")).collect::<Vec<_>>().join(",");
        let mut spec = join(&self.chunks);
        if let Some(shards) = &self.shards {
            spec.push_str(&format!(" shards {}", join(shards)));
        }
        if let Some(codec) = self.codec {
            spec.push_str(&format!(" codec {codec}"));
        }
        spec
    }
}

/// Where a regular copy's objects (chunks or shards) go.
pub(super) trait Objects: Sync {
    /// Whether object `coords` of `array` is to be written (not there yet; touched by an update).
    fn wanted(&self, array: &str, coords: &[u64]) -> bool;

    /// Stores object `coords` of `array`.
    ///
    /// # Errors
    /// The write error naming the object.
    fn put(&self, array: &str, coords: &[u64], bytes: Vec<u8>) -> Result<(), ExportError>;
}

/// Files under a (partial) directory store, each written under a temporary name and renamed.
struct DirObjects<'a> {
    root: &'a Path,
}

impl Objects for DirObjects<'_> {
    fn wanted(&self, array: &str, coords: &[u64]) -> bool {
        !self.root.join(chunk_key(array, coords)).exists()
    }

    fn put(&self, array: &str, coords: &[u64], bytes: Vec<u8>) -> Result<(), ExportError> {
        write_atomic(&self.root.join(chunk_key(array, coords)), &bytes)?;
        crate::codec::scratch::give_back(bytes);
        Ok(())
    }
}

/// Writes `store` as a copy with regular chunk grids at `destination`: a Zarr v3 directory store, or
/// an Icechunk repository ([`RegularOptions::format`]; `destination` may then be an object-store
/// URL). `progress(n)` is called as `n` target objects are written.
///
/// # Errors
/// [`ExportError::Node`] for a chunk length of 0, a dimension no array has, shard lengths that are not
/// multiples of the chunk lengths, or a `DEST.partial` directory that is not a partial copy of this
/// store with these chunks; read, encode and write errors naming the array. Nothing reaches
/// `destination` on error (`DEST.partial` is kept to resume; a repository's branch does not move).
pub async fn materialize_regular(
    store: &Store,
    destination: &Path,
    options: &RegularOptions,
    progress: &(dyn Fn(u64) + Send + Sync),
) -> Result<MaterializeReport, ExportError> {
    store.all_sources().await?;
    let (groups, arrays) = checked_nodes(store)?;
    let mut readers = Vec::with_capacity(arrays.len());
    for path in &arrays {
        readers.push(store.array(path).await?);
    }
    let targets = targets(store, &readers, options).await?;
    if options.format == RegularFormat::Icechunk {
        #[cfg(feature = "icechunk")]
        return repo::write_repository(store, &groups, &readers, &targets, destination, options, progress).await;
        #[cfg(not(feature = "icechunk"))]
        {
            let reason = "this build of vzarr has no Icechunk support (feature `icechunk`)".into();
            return Err(ExportError::Node { store: store.location().into(), node: "/".into(), reason });
        }
    }
    if let Some(url) = crate::source::Location::from(destination).as_url() {
        return write_remote(store, &groups, &readers, &targets, url, options, progress).await;
    }
    write_local(store, &groups, &readers, &targets, destination, options, progress).await
}

/// A Zarr copy for an object store: written in a private local directory, then uploaded
/// (`store/publish_remote`: the objects first, the root `zarr.json` last).
async fn write_remote(
    store: &Store,
    groups: &[String],
    readers: &[ArrayReader],
    targets: &[Target],
    url: &str,
    options: &RegularOptions,
    progress: &(dyn Fn(u64) + Send + Sync),
) -> Result<MaterializeReport, ExportError> {
    let mut inputs = crate::store::url_sources(&store.sources());
    if let Some(url) = store.address().as_url() {
        inputs.push(url.to_string());
    }
    let output = crate::store::RemoteOutput::begin(
        url,
        OutputKind::ZarrStore,
        options.overwrite,
        &inputs,
        &options.remote,
        UPLOADS,
    )
    .await?;
    let local = RegularOptions { overwrite: false, ..options.clone() };
    let report = write_local(store, groups, readers, targets, output.local_path(), &local, progress).await?;
    output.publish().await?;
    Ok(report)
}

/// A Zarr copy in a local directory, through `DEST.partial`.
async fn write_local(
    store: &Store,
    groups: &[String],
    readers: &[ArrayReader],
    targets: &[Target],
    destination: &Path,
    options: &RegularOptions,
    progress: &(dyn Fn(u64) + Send + Sync),
) -> Result<MaterializeReport, ExportError> {
    // Staged first: it holds the output's lock while `DEST.partial` is written (two runs onto the
    // same output take turns, the second then finds the first's output).
    let staged = Staged::begin(destination, OutputKind::ZarrStore, options.overwrite, &store_inputs(store))?;
    let partial = partial_dir(store, destination, options)?;
    let mut report = MaterializeReport::default();
    for (reader, target) in readers.iter().zip(targets) {
        let objects = DirObjects { root: &partial };
        let scratch = partial.join(intermediate::SCRATCH);
        let layout = copy_array(store, reader, target, &objects, options, &scratch, progress).await?;
        report.add(layout);
    }
    for node in std::iter::once(&String::new()).chain(groups) {
        write_atomic(&partial.join(node_key(node)), &store.node_metadata(node).await?)?;
    }
    for (reader, target) in readers.iter().zip(targets) {
        write_atomic(&partial.join(node_key(reader.path())), &regular_metadata(store, reader, target).await?)?;
    }
    let scratch = partial.join(intermediate::SCRATCH);
    if scratch.exists() {
        std::fs::remove_dir_all(&scratch).map_err(io_error(&scratch, "removing the intermediate arrays"))?;
    }
    std::fs::remove_file(partial.join(MARKER)).map_err(io_error(&partial, "removing the marker"))?;
    std::fs::remove_dir(staged.path()).map_err(io_error(staged.path(), "replacing the staging directory"))?;
    std::fs::rename(&partial, staged.path()).map_err(io_error(&partial, "moving into the staging directory"))?;
    staged.publish()?;
    Ok(report)
}

/// Every array's target layout: every named dimension is some array's, every length >= 1, a
/// calendar unit or `by:VAR` resolved to edges over the store (once per dimension), every array's
/// shards hold whole chunks.
async fn targets(store: &Store, readers: &[ArrayReader], options: &RegularOptions) -> Result<Vec<Target>, ExportError> {
    let bad = |reason: String| ExportError::Node { store: store.location().to_string(), node: "/".into(), reason };
    if options.chunks.is_empty() {
        return Err(bad("the chunk lengths name no dimension".into()));
    }
    let chunks = resolve_all(store, readers, "chunks", &options.chunks).await.map_err(bad)?;
    let shards = match &options.shards {
        Some(shards) => Some(resolve_all(store, readers, "shards", shards).await.map_err(bad)?),
        None => None,
    };
    readers
        .iter()
        .map(|reader| {
            Target::of(reader.metadata(), &chunks, shards.as_deref(), options.codec).map_err(|reason| {
                ExportError::Node { store: store.location().into(), node: reader.path().into(), reason }
            })
        })
        .collect()
}

/// Each of `lengths` (of `--chunks` or `--shards`, `flag`) resolved: see [`resolve`].
async fn resolve_all(
    store: &Store,
    readers: &[ArrayReader],
    flag: &str,
    lengths: &[(String, ChunkLength)],
) -> Result<Vec<(String, DimLength)>, String> {
    let mut resolved = Vec::with_capacity(lengths.len());
    for (dim, length) in lengths {
        resolved.push((dim.clone(), resolve(store, readers, flag, dim, length).await?));
    }
    Ok(resolved)
}

/// `length` along dimension `dim` (of `--chunks` or `--shards`, `flag`): a fixed length, or the
/// edges a calendar unit or `by:VAR` gives over the dimension's extent.
async fn resolve(
    store: &Store,
    readers: &[ArrayReader],
    flag: &str,
    dim: &str,
    length: &ChunkLength,
) -> Result<DimLength, String> {
    let mut extents = readers.iter().filter_map(|r| {
        let names = r.metadata().dimension_names.as_deref().unwrap_or_default();
        names.iter().position(|n| n == dim).map(|d| r.shape()[d])
    });
    let Some(extent) = extents.next() else {
        return Err(format!("{flag}: no array has a dimension named {dim:?}"));
    };
    if let ChunkLength::Elements(n) = length {
        return match n {
            0 => Err(format!("{flag} {dim}=0: a length must be at least 1")),
            n => Ok(DimLength::Fixed(*n)),
        };
    }
    if extents.any(|e| e != extent) {
        return Err(format!("{flag} {dim}={length}: the arrays along {dim} differ in length"));
    }
    let edges = crate::chunking::resolve_edges(store, dim, length, extent).await.map_err(|e| format!("{flag}: {e}"))?;
    Ok(DimLength::Edges(edges))
}

/// `DEST.partial`: created with its marker, or an earlier run's with the same marker (resumed).
fn partial_dir(store: &Store, destination: &Path, options: &RegularOptions) -> Result<PathBuf, ExportError> {
    let mut name = destination.file_name().unwrap_or_default().to_os_string();
    name.push(".partial");
    let partial = destination.with_file_name(name);
    let marker = format!("{}\n{}\n", store.location(), options.spec());
    match std::fs::read_to_string(partial.join(MARKER)) {
        Ok(found) if found == marker => return Ok(partial),
        _ if partial.symlink_metadata().is_ok() => {
            let reason = format!(
                "{} exists and is not a partial copy of this store with chunks {}: remove it",
                partial.display(),
                options.spec()
            );
            return Err(ExportError::Node { store: store.location().to_string(), node: "/".into(), reason });
        }
        _ => {}
    }
    std::fs::create_dir_all(&partial).map_err(io_error(&partial, "creating directory"))?;
    write_atomic(&partial.join(MARKER), marker.as_bytes())?;
    Ok(partial)
}

/// The array's `zarr.json` as stored, with the target's regular grid (and sharding codec).
async fn regular_metadata(store: &Store, reader: &ArrayReader, target: &Target) -> Result<Vec<u8>, ExportError> {
    let stored = store.node_metadata(reader.path()).await?;
    let node_error =
        |reason: String| ExportError::Node { store: store.location().into(), node: reader.path().into(), reason };
    let mut doc: serde_json::Value = crate::metadata::from_text(&stored).map_err(|e| node_error(e.to_string()))?;
    let object = doc.as_object_mut().ok_or_else(|| node_error("zarr.json is not an object".into()))?;
    target.zarr_json(object);
    Ok(crate::metadata::to_text(&doc).into_bytes())
}

/// Writes every target object of one array that `objects` wants, a block of objects at a time
/// (`plan`), through an intermediate array under `scratch` when the plan says so.
pub(super) async fn copy_array(
    store: &Store,
    reader: &ArrayReader,
    target: &Target,
    objects: &dyn Objects,
    options: &RegularOptions,
    scratch: &Path,
    progress: &(dyn Fn(u64) + Send + Sync),
) -> Result<ArrayLayout, ExportError> {
    if reader.metadata().codecs.is_strings() {
        let reason = "a string array cannot be rechunked yet".into();
        return Err(ExportError::Node { store: store.location().into(), node: reader.path().into(), reason });
    }
    let grid = &target.metadata.chunk_grid;
    let size = target.metadata.element_size() as u64;
    let budget = blocks::budget(options.max_memory);
    let plan = plan::plan(&reader.metadata().chunk_grid, &target.largest_object(), size, budget);
    let mut layout = ArrayLayout {
        path: reader.path().to_string(),
        sharding: target.sharding(),
        chunks_copied: 0,
        padded_chunks: 0,
        objects: 0,
        bytes: 0,
        intermediate: None,
    };
    let blocks = blocks::Blocks::new(grid, &plan.write);
    let pass = match &plan.intermediate {
        Some(pass) => match blocks.wanted_bounds(reader.path(), objects) {
            Some(bounds) => {
                let scratch = Scratch::open(scratch, reader.path(), &grid.shape(), &pass.chunks, size as usize)?;
                scratch.fill(reader, &pass.read, &bounds, options).await?;
                layout.intermediate = Some(pass.chunks.clone());
                Some(scratch)
            }
            None => None, // every object already written
        },
        None => None,
    };
    let copy = blocks::Copy { store: store.location(), reader, target, objects, options, scratch: pass.as_ref() };
    copy.run(&blocks, &mut layout, progress).await?;
    if let Some(scratch) = pass {
        scratch.remove()?;
    }
    Ok(layout)
}

/// The elements of `region`, read through the store; the reader's fetch batches kept to an eighth of
/// `max_memory` (two are in flight beside the region).
pub(super) async fn read_region(
    reader: &ArrayReader,
    region: &Region,
    options: &RegularOptions,
) -> Result<Vec<u8>, ExportError> {
    read_region_into(reader, region, options, Vec::new()).await
}

/// The elements of `region` read through the store, in `out` (a buffer used before, resized: the
/// read writes every element).
pub(super) async fn read_region_into(
    reader: &ArrayReader,
    region: &Region,
    options: &RegularOptions,
    mut out: Vec<u8>,
) -> Result<Vec<u8>, ExportError> {
    let dims = region.origin.iter().zip(&region.shape).map(|(&o, &n)| DimSelection::from(o..o + n));
    let selection = Selection::new(dims, &reader.shape())
        .map_err(|source| crate::read::ReadError::Selection { array: reader.path().to_string(), source })?;
    let defaults = ReadOptions::default();
    let batch_bytes = (options.max_memory / 8).clamp(1 << 16, defaults.batch_bytes);
    let read = ReadOptions { max_memory: options.max_memory, batch_bytes, ..defaults };
    let len = selection.len().saturating_mul(reader.metadata().element_size() as u64);
    if len > options.max_memory {
        // The reader refuses it, naming the limit.
        return Ok(reader.read(&selection, &read).await?.bytes);
    }
    out.resize(len as usize, 0);
    reader.read_into(&selection, &mut out, &read).await?;
    Ok(out)
}

/// Cuts, pads, encodes and writes the objects `coords` from `data` (the elements of `region`).
pub(super) fn write_objects(
    store: &str,
    target: &Target,
    array: &str,
    objects: &dyn Objects,
    coords: &[Vec<u64>],
    region: &Region,
    data: &[u8],
) -> Result<u64, ExportError> {
    let sizes: Result<Vec<u64>, ExportError> = coords
        .par_iter()
        .map(|c| {
            let encoded = target.encode(c, region, data).map_err(|e| ExportError::Node {
                store: store.to_string(),
                node: array.to_string(),
                reason: format!("chunk {c:?}: encoding: {e}"),
            })?;
            let len = encoded.len() as u64;
            objects.put(array, c, encoded)?;
            Ok(len)
        })
        .collect();
    Ok(sizes?.iter().sum())
}

/// Writes `bytes` at `path` under a temporary name, then renames it: a file present is complete.
pub(super) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), WriteError> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io_error(dir, "creating directory"))?;
    }
    let mut tmp = path.as_os_str().to_os_string();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    crate::formats::write_file(&tmp, bytes)?;
    std::fs::rename(&tmp, path).map_err(io_error(path, "renaming into place"))
}
