//! The write blocks of a regular copy and the loop over them: each block (whole target objects) is
//! read, through the store or from the intermediate array, then cut into its objects, which are
//! encoded and written in parallel.
//!
//! Pipelined on a multi-threaded runtime: while one block's objects are encoded and written (on a
//! scoped thread, the encoding on rayon), the next block is read, so that the reads' waits for their
//! files are filled with encoding. Two blocks are then held at once, so a block is at most a quarter
//! of `--max-memory` (the reader's fetch batches take another quarter), and at most [`BLOCK_MAX`],
//! so that an array of a few hundred MB is a few blocks, not one.

use super::intermediate::Scratch;
use super::target::Target;
use super::{read_region_into, write_objects, Objects, RegularOptions};
use crate::export::materialize::ArrayLayout;
use crate::export::ExportError;
use crate::grid::ChunkGrid;
use crate::ndcopy::unravel;
use crate::read::ArrayReader;
use crate::rechunk::Region;

/// The largest write block, in bytes.
pub(super) const BLOCK_MAX: u64 = 64 << 20;

/// The bytes one block may hold under `max_memory`.
pub(super) fn budget(max_memory: u64) -> u64 {
    (max_memory / 4).min(BLOCK_MAX)
}

/// The write blocks of an array: regions of whole target objects, `block` elements per dimension.
pub(super) struct Blocks<'a> {
    grid: &'a ChunkGrid,
    /// Objects per block along each dimension.
    per_block: Vec<u64>,
    /// Blocks along each dimension.
    counts: Vec<u64>,
}

impl<'a> Blocks<'a> {
    /// Blocks of `block` elements per dimension, in whole objects of `grid` counted by its longest
    /// object (months along `time`: a block of 3 x 31 days holds 3 months).
    pub(super) fn new(grid: &'a ChunkGrid, block: &[u64]) -> Self {
        let object = super::target::largest_chunk(grid);
        let per_block: Vec<u64> = block.iter().zip(&object).map(|(b, o)| b.div_ceil(*o).max(1)).collect();
        let counts = grid.grid_shape().iter().zip(&per_block).map(|(n, p)| n.div_ceil(*p)).collect();
        Blocks { grid, per_block, counts }
    }

    fn count(&self) -> u64 {
        self.counts.iter().product()
    }

    /// Block `k`'s region (the valid part of its objects) and the objects of it `objects` wants.
    fn block(&self, k: u64, array: &str, objects: &dyn Objects) -> (Region, Vec<Vec<u64>>) {
        let at = unravel(k, &self.counts);
        let first: Vec<u64> = at.iter().zip(&self.per_block).map(|(a, p)| a * p).collect();
        let n: Vec<u64> =
            first.iter().zip(&self.per_block).zip(self.grid.grid_shape()).map(|((f, p), g)| (*p).min(g - f)).collect();
        let origin = self.grid.chunk_origin(&first);
        let shape = (0..n.len())
            .map(|d| {
                let last = first[d] + n[d] - 1;
                self.grid.dim(d).start(last) + self.grid.dim(d).valid(last) - origin[d]
            })
            .collect();
        let todo = (0..n.iter().product::<u64>())
            .map(|i| unravel(i, &n).iter().zip(&first).map(|(i, f)| i + f).collect::<Vec<u64>>())
            .filter(|c| objects.wanted(array, c))
            .collect();
        (Region { origin, shape }, todo)
    }

    /// The bounding region of the blocks holding an object `objects` wants; `None` when none does.
    pub(super) fn wanted_bounds(&self, array: &str, objects: &dyn Objects) -> Option<Region> {
        let mut bounds: Option<(Vec<u64>, Vec<u64>)> = None;
        for k in 0..self.count() {
            let (region, todo) = self.block(k, array, objects);
            if todo.is_empty() {
                continue;
            }
            let end: Vec<u64> = region.origin.iter().zip(&region.shape).map(|(o, n)| o + n).collect();
            bounds = Some(match bounds {
                None => (region.origin, end),
                Some((lo, hi)) => (
                    lo.iter().zip(&region.origin).map(|(a, b)| *a.min(b)).collect(),
                    hi.iter().zip(&end).map(|(a, b)| *a.max(b)).collect(),
                ),
            });
        }
        bounds.map(|(lo, hi)| Region { shape: hi.iter().zip(&lo).map(|(h, l)| h - l).collect(), origin: lo })
    }
}

/// One array's copy, block by block.
pub(super) struct Copy<'a> {
    /// The store's location, for messages.
    pub(super) store: &'a str,
    pub(super) reader: &'a ArrayReader,
    pub(super) target: &'a Target,
    pub(super) objects: &'a dyn Objects,
    pub(super) options: &'a RegularOptions,
    /// The intermediate array the blocks are read from, if the plan has one.
    pub(super) scratch: Option<&'a Scratch>,
}

/// The bytes and objects one block wrote.
type BlockWritten = (u64, u64);

impl Copy<'_> {
    /// Writes every wanted object of `blocks`, counting them in `layout`.
    ///
    /// # Errors
    /// Read, encode and write errors naming the array.
    pub(super) async fn run(
        &self,
        blocks: &Blocks<'_>,
        layout: &mut ArrayLayout,
        progress: &(dyn Fn(u64) + Send + Sync),
    ) -> Result<(), ExportError> {
        let mut count = |(bytes, objects): BlockWritten| {
            layout.chunks_copied += objects;
            layout.objects += objects;
            layout.bytes += bytes;
            progress(objects);
            crate::test_hooks::crash_point("regular-row-written");
        };
        let handle = tokio::runtime::Handle::try_current().ok();
        if let Some(handle) = handle.filter(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread) {
            return tokio::task::block_in_place(|| self.pipelined(&handle, blocks, &mut count));
        }
        let mut data = Vec::new();
        for block in 0..blocks.count() {
            let (region, todo) = blocks.block(block, self.reader.path(), self.objects);
            if todo.is_empty() {
                continue;
            }
            data = self.read(&region, data).await?;
            count(self.write(&todo, &region, &data)?);
        }
        Ok(())
    }

    /// The blocks read on this thread (`handle` runs the reads), each written on a scoped thread
    /// while the next is read. The two block buffers are used in turn: a block is read into the one
    /// the block before last was written from.
    fn pipelined(
        &self,
        handle: &tokio::runtime::Handle,
        blocks: &Blocks<'_>,
        count: &mut dyn FnMut(BlockWritten),
    ) -> Result<(), ExportError> {
        std::thread::scope(|scope| {
            let mut writing: Option<std::thread::ScopedJoinHandle<'_, Written>> = None;
            let mut spare = Vec::new();
            for block in 0..blocks.count() {
                let (region, todo) = blocks.block(block, self.reader.path(), self.objects);
                if todo.is_empty() {
                    continue;
                }
                let data = handle.block_on(self.read(&region, std::mem::take(&mut spare)))?;
                if let Some(previous) = writing.take() {
                    let (written, buffer) = joined(previous)?;
                    count(written);
                    spare = buffer;
                }
                writing = Some(scope.spawn(move || Ok((self.write(&todo, &region, &data)?, data))));
            }
            if let Some(last) = writing {
                count(joined(last)?.0);
            }
            Ok(())
        })
    }

    /// The elements of `region` (in `buffer`, when read through the store): from the intermediate
    /// array in the second pass of a copy through one, else through the store's reader.
    async fn read(&self, region: &Region, buffer: Vec<u8>) -> Result<Vec<u8>, ExportError> {
        match self.scratch {
            Some(scratch) => scratch.read(region),
            None => read_region_into(self.reader, region, self.options, buffer).await,
        }
    }

    /// Writes the objects `todo` cut from `data` (the elements of `region`).
    fn write(&self, todo: &[Vec<u64>], region: &Region, data: &[u8]) -> Result<BlockWritten, ExportError> {
        let path = self.reader.path();
        let bytes = write_objects(self.store, self.target, path, self.objects, todo, region, data)?;
        Ok((bytes, todo.len() as u64))
    }
}

/// What a writing thread gives back: what it wrote, and the block's buffer.
type Written = Result<(BlockWritten, Vec<u8>), ExportError>;

/// The result of a writing thread (a panic in it is resumed here).
fn joined(handle: std::thread::ScopedJoinHandle<'_, Written>) -> Written {
    handle.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}
