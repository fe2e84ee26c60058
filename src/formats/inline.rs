//! Inlining the small arrays a reference set cannot describe chunk by chunk, as kerchunk inlines
//! small arrays (`inline_threshold`, bytes): stage 3 of the kerchunk JSON and Parquet writers.
//!
//! Input: a [`VirtualDataset`] and a threshold in bytes. Output: the same dataset in which every
//! array whose chunk grid is rectilinear and whose decoded values take at most the threshold is ONE
//! regular chunk holding the whole array, decoded (read through vzarr's own reader, `read/`, from the
//! sources the dataset references), stored as a store-owned chunk with the codecs those bytes are
//! (`bytes` in the machine's byte order, nothing else). The writers then write it as inline data: a
//! `raw` row of a Parquet reference file, a `base64:` value of a JSON document.
//!
//! Why: the everyday archive (monthly files with an unlimited `time`, which libnetcdf chunks by 512
//! values) concatenates into a `time` of edges `[31, 29, ..., 30, 512]`. Zarr v2, the metadata of a
//! kerchunk Parquet set, has one chunk shape per array and cannot say that; kerchunk's
//! `MultiZarrToZarr` users inline such coordinates, and so does vzarr, by default up to
//! [`DEFAULT_INLINE_THRESHOLD`]. A larger rectilinear array stays as it is (the Parquet writer then
//! refuses it by name, with the threshold). Arrays of strings and structs are never inlined.
//!
//! Unlike kerchunk's `inline_threshold`, which inlines every chunk smaller than the threshold, this
//! one inlines whole arrays and only those whose grid is rectilinear: regular arrays keep their
//! references (a reference set that copies every small chunk grows with the archive).

use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;

use super::kerchunk::read::{ReferenceTable, ReferenceView};
use crate::codec::{Codec, CodecChain, Endian};
use crate::dataset::{ChunkTable, OwnedBytes, VirtualArray, VirtualDataset};
use crate::grid::{ChunkGrid, Selection};
use crate::manifest::ChunkEntry;
use crate::metadata::{ArrayMetadata, DataType};
use crate::read::{OpenOptions, ReadOptions, Store, StoreInner};
use crate::store::{ArrayInfo, StoreInfo, WriteError};

/// The default `--inline-threshold`: 1 MiB of decoded values. A rectilinear array up to that size is
/// written inline; it holds a daily `time` coordinate of 130,000 years (8-byte values) or its
/// `time_bnds`, and no data variable of an archive worth virtualizing. kerchunk's own default
/// (`SingleHdf5ToZarr`, 500 bytes) would inline 62 doubles, fewer than a `time` of two months.
pub const DEFAULT_INLINE_THRESHOLD: u64 = 1 << 20;

/// The arrays inlined and the rectilinear arrays too large to be.
#[derive(Debug, Default)]
pub(crate) struct Inlined {
    /// The arrays written as one inline chunk.
    pub(crate) inlined: Vec<String>,
    /// `(array, decoded bytes)` of every rectilinear array larger than the threshold.
    pub(crate) too_large: Vec<(String, Option<u64>)>,
}

#[cfg(feature = "kerchunk-parquet")]
impl Inlined {
    /// The refusal of the first array too large to inline, for a format that cannot express it.
    pub(crate) fn refusal(&self, destination: &Path, threshold: u64, format: &str) -> Option<WriteError> {
        let (array, bytes) = self.too_large.first()?;
        Some(too_large(destination, array, *bytes, threshold, format))
    }
}

/// The refusal of rectilinear array `array` of `bytes` decoded bytes, over `threshold`, in `format`.
#[cfg(feature = "kerchunk-parquet")]
pub(crate) fn too_large(
    destination: &Path,
    array: &str,
    bytes: Option<u64>,
    threshold: u64,
    format: &str,
) -> WriteError {
    let size = bytes.map_or_else(|| "more than 2^64".to_string(), |b| b.to_string());
    WriteError::BadName {
        path: destination.to_path_buf(),
        node: array.to_string(),
        reason: format!(
            "its chunk grid is rectilinear, which Zarr v2 ({format}) cannot express, and its {size} decoded \
             bytes exceed the inline threshold of {threshold} bytes (--inline-threshold BYTES inlines it; \
             skipping unsupported arrays writes the others without it)"
        ),
    }
}

/// Whether `metadata` is an array this module inlines: `Some(bytes)` its decoded size when its grid is rectilinear and its values are numbers (not strings, not structs).
pub(crate) fn candidate(metadata: &ArrayMetadata) -> Option<Option<u64>> {
    if metadata.chunk_grid.is_regular() || metadata.codecs.is_strings() {
        return None;
    }
    if matches!(metadata.data_type, DataType::Struct(_) | DataType::String) {
        return None;
    }
    let elements = metadata.shape().iter().try_fold(1u64, |acc, &n| acc.checked_mul(n));
    Some(elements.and_then(|n| n.checked_mul(metadata.element_size() as u64)))
}

/// `dataset` with every rectilinear array of at most `threshold` decoded bytes inlined (see the module
/// docs); the arrays inlined and those too large are reported. `destination` names the output in
/// messages. Reads run on a runtime of their own, on a thread of their own (so callers on a runtime
/// may call it).
///
/// # Errors
/// [`WriteError::BadName`] naming the array when reading it fails (a source missing or changed);
/// [`WriteError::Owned`] when its bytes cannot be kept.
pub(crate) fn inline_rectilinear<'a>(
    dataset: &'a VirtualDataset,
    threshold: u64,
    destination: &Path,
) -> Result<(std::borrow::Cow<'a, VirtualDataset>, Inlined), WriteError> {
    let mut report = Inlined::default();
    let mut chosen = Vec::new();
    for (index, array) in dataset.arrays.iter().enumerate() {
        match candidate(&array.metadata) {
            None => {}
            Some(Some(bytes)) if bytes <= threshold => chosen.push(index),
            Some(bytes) => report.too_large.push((array.path.clone(), bytes)),
        }
    }
    if chosen.is_empty() {
        return Ok((std::borrow::Cow::Borrowed(dataset), report));
    }
    let values = read_arrays(dataset, &chosen, destination, "inline it")?;
    let mut out = dataset.clone();
    for (index, bytes) in chosen.into_iter().zip(values) {
        let array = &mut out.arrays[index];
        *array = inlined_array(array, &bytes, destination)?;
        report.inlined.push(array.path.clone());
    }
    Ok((std::borrow::Cow::Owned(out), report))
}

/// `metadata` of an array inlined: one regular chunk of the whole shape, its codecs only `bytes` in
/// the machine's byte order (what the decoded values read through vzarr are).
///
/// # Errors
/// [`WriteError::BadName`] naming `path` (never for the metadata of a valid array).
pub(crate) fn inlined_metadata(
    metadata: &ArrayMetadata,
    path: &str,
    destination: &Path,
) -> Result<ArrayMetadata, WriteError> {
    let bad = |reason: String| WriteError::BadName { path: destination.to_path_buf(), node: path.to_string(), reason };
    let shape = metadata.shape();
    let chunk: Vec<u64> = shape.iter().map(|&n| n.max(1)).collect();
    let mut metadata = metadata.clone();
    metadata.chunk_grid = ChunkGrid::regular(&shape, &chunk).map_err(|e| bad(e.to_string()))?;
    let endian = (metadata.element_size() > 1).then(Endian::native);
    metadata.codecs = CodecChain::new(vec![Codec::Bytes { endian }]).map_err(|e| bad(e.to_string()))?;
    Ok(metadata)
}

/// The decoded values of the array `reader` reads, whole (an inlined array).
///
/// # Errors
/// As [`ArrayReader::read`](crate::read::ArrayReader::read).
pub(crate) async fn read_whole(reader: &crate::read::ArrayReader) -> Result<Vec<u8>, crate::read::ReadError> {
    let selection = Selection::all(&reader.shape());
    Ok(reader.read(&selection, &ReadOptions::default()).await?.bytes)
}

/// The array as one regular chunk holding `values` (decoded, the machine's byte order), store-owned.
fn inlined_array(array: &VirtualArray, values: &[u8], destination: &Path) -> Result<VirtualArray, WriteError> {
    let metadata = inlined_metadata(&array.metadata, &array.path, destination)?;
    let shape = metadata.shape();
    let mut owned = OwnedBytes::with_budget(array.chunks.owned.budget());
    let owned_error =
        |e| WriteError::Owned { path: destination.to_path_buf(), array: array.path.clone(), source: Box::new(e) };
    let entries = if shape.contains(&0) {
        Vec::new()
    } else {
        let offset = owned.push(values).map_err(owned_error)?;
        vec![ChunkEntry::Owned { offset, length: values.len() as u64 }]
    };
    Ok(VirtualArray {
        path: array.path.clone(),
        metadata,
        chunks: ChunkTable::from_entries(entries, owned),
        rewritten_chunks: array.rewritten_chunks,
        digest: array.digest,
        tails: Vec::new(),
    })
}

/// The decoded values (native byte order) of arrays `chosen` of `dataset`, read through vzarr's
/// reader from the sources the dataset references, on a thread of their own (the caller may be
/// inside a runtime); `purpose` completes an error's "reading it to ...".
///
/// # Errors
/// [`WriteError::BadName`] naming the array that cannot be read, and why.
pub(crate) fn read_arrays(
    dataset: &VirtualDataset,
    chosen: &[usize],
    destination: &Path,
    purpose: &str,
) -> Result<Vec<Vec<u8>>, WriteError> {
    if chosen.is_empty() {
        return Ok(Vec::new());
    }
    std::thread::scope(|scope| {
        scope
            .spawn(|| read_values(dataset, chosen, destination, purpose))
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p))
    })
}

/// The decoded values of arrays `chosen` of `dataset`, read through a store over the dataset's
/// references (a reference view: the sources were scanned just now, so there are no fingerprints to
/// compare; the sources' own containers are trusted).
fn read_values(
    dataset: &VirtualDataset,
    chosen: &[usize],
    destination: &Path,
    purpose: &str,
) -> Result<Vec<Vec<u8>>, WriteError> {
    let failed = |array: &str, reason: String| WriteError::BadName {
        path: destination.to_path_buf(),
        node: array.to_string(),
        reason: format!("reading it to {purpose}: {reason}"),
    };
    let first = dataset.arrays.get(chosen[0]).map_or("", |a| a.path.as_str());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| failed(first, format!("starting I/O runtime: {e}")))?;
    let store = dataset_store(dataset, chosen, destination).map_err(|(array, reason)| failed(&array, reason))?;
    runtime.block_on(async {
        let mut out = Vec::with_capacity(chosen.len());
        for &index in chosen {
            let path = &dataset.arrays[index].path;
            let reader = store.array(path).await.map_err(|e| failed(path, e.to_string()))?;
            out.push(read_whole(&reader).await.map_err(|e| failed(path, e.to_string()))?);
        }
        Ok(out)
    })
}

/// A store over arrays `chosen` of `dataset` as they are in memory (a reference view over their
/// chunk tables: the sources were scanned just now, so there are no fingerprints to compare; the
/// sources' own containers are trusted), named `destination` in messages.
///
/// # Errors
/// (array, why) when an array's store-owned bytes cannot be read back.
pub(crate) fn dataset_store(
    dataset: &VirtualDataset,
    chosen: &[usize],
    destination: &Path,
) -> Result<Store, (String, String)> {
    let mut view = ReferenceView::default();
    let mut arrays = Vec::with_capacity(chosen.len());
    for &index in chosen {
        let array = &dataset.arrays[index];
        let table = reference_table(array).map_err(|e| (array.path.clone(), e.to_string()))?;
        view.insert_array(&array.path, array.metadata.clone(), table);
        arrays.push(ArrayInfo::of(array));
    }
    let info = StoreInfo::of(dataset, "kerchunk", arrays);
    let authorization = crate::trust::Authorization::new(crate::trust::containers_of(&dataset.sources));
    let options = OpenOptions::new(authorization).with_check_sources(false);
    let opened = crate::read::Opened {
        info,
        sources: crate::read::sources::SourceRegistry::fixed(dataset.sources.clone()),
        backend: Arc::new(view),
    };
    let location = crate::source::Location::Local(destination.to_path_buf());
    let name = destination.display().to_string();
    Ok(Store::from_inner(StoreInner::new(&location, &name, opened, &options, None)))
}

/// The array's chunk entries as a reference view holds them (store-owned bytes by index).
fn reference_table(array: &VirtualArray) -> Result<ReferenceTable, crate::dataset::OwnedBytesError> {
    let mut table = ReferenceTable::default();
    for entry in array.chunks.iter() {
        table.entries.push(match entry {
            ChunkEntry::Owned { offset, length } => {
                let bytes = array.chunks.owned_chunk(offset, length)?;
                table.owned.push(Bytes::copy_from_slice(&bytes));
                ChunkEntry::Owned { offset: table.owned.len() as u64 - 1, length }
            }
            other => other,
        });
    }
    Ok(table)
}
