//! The intermediate array of a regular copy whose source and target chunks cross badly (`plan`): pass
//! 1 reads blocks of whole source chunks through the store and writes them as intermediate chunks;
//! pass 2 reads the target's write blocks back from those chunks.
//!
//! The intermediate chunks are files of raw decoded elements (no codec: they are written and read
//! once each, by this process's own byte order), one per chunk of a regular grid over the array,
//! each holding the chunk's part inside the array, under a scratch directory: `DEST.partial/
//! .vzarr-intermediate/<array>/` for a Zarr copy (so that a rerun after a kill keeps the chunks
//! already written; removed when the array is done, and before the copy is published), a temporary
//! directory for an Icechunk repository. Each file is written under a temporary name and renamed,
//! so a file present is complete; a marker names the chunk shape, and a rerun planning another shape
//! (another `--max-memory`) starts the intermediate array again.

use std::path::{Path, PathBuf};

use rayon::prelude::*;

use super::{read_region, write_atomic, RegularOptions};
use crate::export::ExportError;
use crate::grid::ChunkGrid;
use crate::ndcopy::{copy_box, unravel, DimCopy};
use crate::read::ArrayReader;
use crate::rechunk::Region;
use crate::store::io_error;

/// The scratch directory's name inside `DEST.partial`.
pub(super) const SCRATCH: &str = ".vzarr-intermediate";

/// The marker of an array's intermediate chunks: their shape and element size.
const MARKER: &str = ".vzarr-chunks";

/// One array's intermediate chunks.
pub(super) struct Scratch {
    dir: PathBuf,
    grid: ChunkGrid,
    size: usize,
}

impl Scratch {
    /// The intermediate array of `array` (shape `shape`, elements of `size` bytes) in chunks of
    /// `chunks` under `root`: an earlier run's when it has the same chunks, else a new one.
    ///
    /// # Errors
    /// The directory cannot be made, or the chunk shape does not fit the array.
    pub(super) fn open(
        root: &Path,
        array: &str,
        shape: &[u64],
        chunks: &[u64],
        size: usize,
    ) -> Result<Self, ExportError> {
        let dir = root.join(if array.is_empty() { "root" } else { array });
        let grid = ChunkGrid::regular(shape, chunks).map_err(|e| ExportError::Node {
            store: root.display().to_string(),
            node: array.to_string(),
            reason: format!("intermediate chunks {chunks:?}: {e}"),
        })?;
        let marker = format!("{chunks:?} {size}\n");
        if std::fs::read_to_string(dir.join(MARKER)).ok().as_deref() != Some(marker.as_str()) {
            if dir.exists() {
                std::fs::remove_dir_all(&dir).map_err(io_error(&dir, "removing an earlier intermediate array"))?;
            }
            write_atomic(&dir.join(MARKER), marker.as_bytes())?;
        }
        Ok(Scratch { dir, grid, size })
    }

    fn path(&self, coords: &[u64]) -> PathBuf {
        let name: Vec<String> = coords.iter().map(u64::to_string).collect();
        self.dir.join(format!("c{}", name.join(".")))
    }

    /// The valid region of intermediate chunk `coords`.
    fn region(&self, coords: &[u64]) -> Region {
        let shape = coords.iter().enumerate().map(|(d, &c)| self.grid.dim(d).valid(c)).collect();
        Region { origin: self.grid.chunk_origin(coords), shape }
    }

    /// The coordinates of the intermediate chunks overlapping `region`.
    fn overlapping(&self, region: &Region) -> Vec<Vec<u64>> {
        let ranges: Vec<(u64, u64)> = (0..self.grid.ndim())
            .map(|d| {
                let dim = self.grid.dim(d);
                let (o, n) = (region.origin[d], region.shape[d]);
                let first = dim.locate(o).map_or(0, |(c, _)| c);
                let last = dim.locate(o + n.max(1) - 1).map_or(first, |(c, _)| c);
                (first, last + 1 - first)
            })
            .collect();
        let counts: Vec<u64> = ranges.iter().map(|r| r.1).collect();
        (0..counts.iter().product::<u64>())
            .map(|k| unravel(k, &counts).iter().zip(&ranges).map(|(i, r)| r.0 + i).collect())
            .collect()
    }

    /// Pass 1: every intermediate chunk inside `bounds` written from the store, a read block (whole
    /// intermediate chunks, `read` elements per dimension) at a time; chunks already there are kept.
    ///
    /// # Errors
    /// Read errors naming the array, write errors naming the file.
    pub(super) async fn fill(
        &self,
        reader: &ArrayReader,
        read: &[u64],
        bounds: &Region,
        options: &RegularOptions,
    ) -> Result<(), ExportError> {
        let blocks = ChunkGrid::regular(&self.grid.shape(), read).map_err(|e| ExportError::Node {
            store: self.dir.display().to_string(),
            node: reader.path().to_string(),
            reason: format!("read blocks {read:?}: {e}"),
        })?;
        let block_of = |c: &[u64]| -> Vec<u64> { c.iter().zip(read).map(|(i, r)| i / r).collect() };
        let first = block_of(&bounds.origin);
        let last: Vec<u64> = bounds.origin.iter().zip(&bounds.shape).map(|(o, n)| o + n.max(&1) - 1).collect();
        let counts: Vec<u64> = block_of(&last).iter().zip(&first).map(|(l, f)| l + 1 - f).collect();
        for k in 0..counts.iter().product::<u64>() {
            let coords: Vec<u64> = unravel(k, &counts).iter().zip(&first).map(|(i, f)| i + f).collect();
            let shape = coords.iter().enumerate().map(|(d, &c)| blocks.dim(d).valid(c)).collect();
            let block = Region { origin: blocks.chunk_origin(&coords), shape };
            let missing: Vec<Vec<u64>> =
                self.overlapping(&block).into_iter().filter(|c| !self.path(c).exists()).collect();
            if missing.is_empty() {
                continue;
            }
            let data = read_region(reader, &block, options).await?;
            missing.par_iter().try_for_each(|c| self.put(c, &block, &data))?;
            crate::test_hooks::crash_point("intermediate-block-written");
        }
        Ok(())
    }

    /// Writes intermediate chunk `coords`, cut from `data` (the elements of `region`, which holds it).
    fn put(&self, coords: &[u64], region: &Region, data: &[u8]) -> Result<(), ExportError> {
        let chunk = self.region(coords);
        let dims: Vec<DimCopy> = (0..coords.len())
            .map(|d| DimCopy {
                src_start: chunk.origin[d] - region.origin[d],
                src_step: 1,
                dst_start: 0,
                count: chunk.shape[d],
            })
            .collect();
        let mut bytes = vec![0u8; chunk.shape.iter().product::<u64>() as usize * self.size];
        copy_box(data, &region.shape, &mut bytes, &chunk.shape, &dims, self.size);
        Ok(write_atomic(&self.path(coords), &bytes)?)
    }

    /// Pass 2: the elements of `region` from the intermediate chunks.
    ///
    /// # Errors
    /// A chunk file missing or of the wrong size (the scratch directory was changed), naming it.
    pub(super) fn read(&self, region: &Region) -> Result<Vec<u8>, ExportError> {
        let mut out = vec![0u8; region.shape.iter().product::<u64>() as usize * self.size];
        for coords in self.overlapping(region) {
            let chunk = self.region(&coords);
            let path = self.path(&coords);
            let bytes = std::fs::read(&path).map_err(io_error(&path, "reading an intermediate chunk"))?;
            if bytes.len() as u64 != chunk.shape.iter().product::<u64>() * self.size as u64 {
                let reason =
                    format!("intermediate chunk {} has {} bytes, not its shape's", path.display(), bytes.len());
                return Err(ExportError::Node { store: self.dir.display().to_string(), node: String::new(), reason });
            }
            let dims: Vec<DimCopy> = (0..coords.len())
                .map(|d| {
                    let start = chunk.origin[d].max(region.origin[d]);
                    let end = (chunk.origin[d] + chunk.shape[d]).min(region.origin[d] + region.shape[d]);
                    DimCopy {
                        src_start: start - chunk.origin[d],
                        src_step: 1,
                        dst_start: start - region.origin[d],
                        count: end - start,
                    }
                })
                .collect();
            copy_box(&bytes, &chunk.shape, &mut out, &region.shape, &dims, self.size);
        }
        Ok(out)
    }

    /// Removes the intermediate chunks (the array is written).
    ///
    /// # Errors
    /// The directory cannot be removed.
    pub(super) fn remove(self) -> Result<(), ExportError> {
        std::fs::remove_dir_all(&self.dir).map_err(io_error(&self.dir, "removing the intermediate array"))?;
        Ok(())
    }
}
