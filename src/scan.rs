//! Stage 1, files -> scan: read one source file's structure and record where every chunk of every
//! variable lives, as a single-source [`VirtualDataset`].
//!
//! Format is chosen by content, never by file name: the HDF5 signature (at offset 0, 512, 1024, ...)
//! selects the HDF5 / NetCDF-4 scanner, `CDF` the NetCDF-3 one and `0e 03 13 01` the HDF4 one; an XML
//! document (a DMR++ sidecar) the DMR++ scanner, whose dataset references the data file the sidecar
//! describes. Everything format-specific stays under `scan/`.

mod chars;
mod contiguous;
mod coordinate;
pub(crate) mod dmrpp;
mod filters;
mod format;
mod hdf4;
mod hdf5;
mod netcdf3;
mod rewrite;
mod tail;

pub use dmrpp::files::Sidecars;
// The byte sources every scanner reads through (`source/`): local files and object stores, cached.
pub use crate::source::{ByteSource, CacheOptions, CachedSource, FetchStats, FetchTotals, LocalFile, RangeError};
pub use format::{detect_format, detect_format_of, FileFormat};
#[cfg(feature = "verify")]
pub(crate) use hdf4::geo_coordinates as hdf_eos_geo_coordinates;
#[cfg(feature = "verify")]
pub(crate) use hdf4::NumberType as Hdf4NumberType;
pub use hdf5::scan_hdf5;

use std::path::{Path, PathBuf};

use crate::dataset::{ScanWarning, VirtualArray, VirtualDataset};
use crate::manifest::SourceFile;

pub(crate) type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// A source file that could not be scanned. Every variant names the file; variable-level problems
/// also name the variable. Messages read `path: variable: problem: cause`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ScanError {
    /// The file could not be opened or read.
    #[error("{}: cannot read file: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The content is neither HDF5, NetCDF nor HDF4.
    #[error("{}: not an HDF5, NetCDF or HDF4 file ({reason})", path.display())]
    UnknownFormat {
        /// The file.
        path: PathBuf,
        /// What was found instead.
        reason: String,
    },
    /// The file looks like a supported format but its library refused it.
    #[error("{}: cannot open as {format}: {source}", path.display())]
    Open {
        /// The file.
        path: PathBuf,
        /// The format it was opened as.
        format: FileFormat,
        /// The library's error.
        source: BoxError,
    },
    /// A variable uses something vzarr cannot reference (filter, type, layout).
    #[error("{}: {variable}: {problem}", path.display())]
    Unsupported {
        /// The file.
        path: PathBuf,
        /// The variable path.
        variable: String,
        /// What is not supported.
        problem: String,
    },
    /// The bytes of a chunk vzarr copies into the store could not be kept (the spill file past the
    /// memory budget could not be created or written). Never skipped by `skip_unsupported`: it is a
    /// problem of the machine, not of the variable.
    #[error("{}: {variable}: keeping a copied chunk: {source}", path.display())]
    Owned {
        /// The file.
        path: PathBuf,
        /// The variable path.
        variable: String,
        /// What failed.
        source: Box<crate::dataset::OwnedBytesError>,
    },
    /// Reading a variable's structure or a chunk failed.
    #[error("{}: {variable}: {what}: {source}", path.display())]
    Variable {
        /// The file.
        path: PathBuf,
        /// The variable path.
        variable: String,
        /// What was being done.
        what: String,
        /// The cause.
        source: BoxError,
    },
}

/// Object-store files scanned at once by default: object stores answer thousands of requests at
/// once, and a file's scan waits on one round trip at a time, so a scan's pace is the files in flight.
pub const DEFAULT_SCANS_IN_FLIGHT: usize = 256;

/// Options for scanning one file.
#[derive(Debug, Clone)]
pub struct ScanOptions {
    /// Leave out variables vzarr cannot virtualize (with a warning) instead of failing.
    /// Default: false.
    pub skip_unsupported: bool,
    /// Contiguous (unchunked) variables larger than this are referenced as slabs along their first
    /// dimension of at most this many bytes, so a small read fetches little. Default: 16 MiB.
    pub max_slab_bytes: u64,
    /// The dimensions files will be concatenated along, outermost first. For each one the file has,
    /// the scan records its coordinate values ([`VirtualDataset::concat`]) and prepares trimmed copies
    /// of partial last chunks ([`VirtualArray::tails`]); a dimension the file lacks (a new one, such as
    /// an ensemble member) needs nothing. A non-empty list also turns on digests of small arrays
    /// without any of these dimensions. Default: empty (no concatenation).
    pub concat_dims: Vec<String>,
    /// Arrays of at most this many bytes get a digest of their values, so that arrays taken once
    /// from the first file can be checked identical in the others. Default: 1 MiB.
    pub digest_max_bytes: u64,
    /// How object-store URLs among the inputs are reached. Default: the environment's configuration.
    pub remote: crate::source::RemoteOptions,
    /// The tokio runtime remote reads block on (the caller's; the library builds none). Default:
    /// None, and URL inputs are then refused with an error that says so.
    pub runtime: Option<tokio::runtime::Handle>,
    /// Object-store inputs scanned at once by [`scan_files`] (each waits on one request at a time, so
    /// this is also the most requests in flight). Default: [`DEFAULT_SCANS_IN_FLIGHT`].
    pub max_concurrent_requests: usize,
    /// Remote objects scanned, their bytes, and the requests and bytes it took, summed over every
    /// scan sharing these options (clones share the totals).
    pub fetched: std::sync::Arc<crate::source::FetchTotals>,
    /// Where HDF5 external links may lead besides the directory (or object-store prefix) of the file
    /// scanned: a link to a file outside both is not followed (a warning). Default: nothing more.
    pub link_authorization: crate::trust::Authorization,
    /// The memory budget of the chunk bytes the scan copies into the store (shared by every file
    /// scanned with these options; past it they spill to a temporary file). Default: what
    /// `VZARR_OWNED_MEMORY` sets, else 64 MiB ([`crate::source::owned_bytes_budget_from_env`]).
    pub owned_budget: crate::dataset::OwnedBytesBudget,
    /// HDF5 files: also record every group's links as stored and the group attributes holding object
    /// references ([`crate::dataset::Hdf5Links`]), which VirtualiZarr's links and references
    /// convention needs; a second listing of each group's links. Default: false.
    pub record_hdf5_links: bool,
}

impl Default for ScanOptions {
    fn default() -> Self {
        ScanOptions {
            skip_unsupported: false,
            max_slab_bytes: 16 << 20,
            concat_dims: Vec::new(),
            digest_max_bytes: 1 << 20,
            remote: crate::source::RemoteOptions::default(),
            runtime: None,
            max_concurrent_requests: DEFAULT_SCANS_IN_FLIGHT,
            fetched: std::sync::Arc::default(),
            link_authorization: crate::trust::Authorization::default(),
            owned_budget: crate::source::owned_bytes_budget_from_env()
                .unwrap_or_else(|_| crate::source::owned_bytes_budget(crate::dataset::DEFAULT_MEMORY_BUDGET)),
            record_hdf5_links: false,
        }
    }
}

/// Scans one file, choosing the scanner by its content.
///
/// # Errors
/// [`ScanError`] when the file cannot be read, is not a supported format, or has a variable that cannot
/// be virtualized (unless `options.skip_unsupported`).
pub fn scan_file(path: &Path, options: &ScanOptions) -> Result<VirtualDataset, ScanError> {
    let io = |source| ScanError::Io { path: path.to_path_buf(), source };
    let absolute = std::path::absolute(path).map_err(io)?;
    let source = crate::source::fingerprint(&absolute).map_err(io)?;
    let bytes = open_local(&absolute)?;
    let input = format::input_format_of(&absolute, bytes.as_ref())?;
    let dataset = (input.scan)(&absolute, bytes, source, options)?;
    check_references(&absolute, &dataset)?;
    Ok(dataset)
}

/// A local regular file as a byte source with a block cache (what every scanner reads through).
///
/// # Errors
/// [`ScanError::Io`] when the file cannot be opened or is not a regular file.
pub(crate) fn open_local(path: &Path) -> Result<std::sync::Arc<dyn crate::source::ByteSource>, ScanError> {
    use crate::source::{CacheOptions, CachedSource, LocalFile};
    let file = LocalFile::open(path).map_err(|source| ScanError::Io { path: path.to_path_buf(), source })?;
    Ok(std::sync::Arc::new(CachedSource::new(std::sync::Arc::new(file), CacheOptions::local())))
}

/// Why an object a scan follows (a linked, external or data file) could not be opened. Messages
/// start with the URL.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ObjectError {
    /// No runtime to block on.
    #[error("{url}: reading it needs ScanOptions::runtime")]
    NoRuntime {
        /// The object.
        url: url::Url,
    },
    /// No store can be built for the URL.
    #[error("{url}: {source}")]
    Store {
        /// The object.
        url: url::Url,
        /// Why.
        source: Box<crate::source::RemoteError>,
    },
    /// The store has no such object.
    #[error("{url}: not found")]
    NotFound {
        /// The object.
        url: url::Url,
    },
    /// The HEAD request failed.
    #[error("{url}: {}", crate::source::describe_error(error))]
    Request {
        /// The object.
        url: url::Url,
        /// The store's error (shown in one line, a server's error body left out; so not a `source`,
        /// whose full text would be repeated after it).
        error: Box<object_store::Error>,
    },
}

/// An object-store object as a byte source with a block cache, and its fingerprint, from one HEAD
/// request through `options.runtime` (what a scan reads a linked or external file through).
///
/// # Errors
/// [`ObjectError`] naming the object when it is missing or cannot be reached.
pub(crate) fn open_object(
    url: &url::Url,
    options: &ScanOptions,
) -> Result<(SourceFile, std::sync::Arc<dyn crate::source::ByteSource>), ObjectError> {
    use crate::source::{CacheOptions, CachedSource, ObjectSource};
    use object_store::ObjectStoreExt;
    let runtime = options.runtime.as_ref().ok_or_else(|| ObjectError::NoRuntime { url: url.clone() })?;
    let (store, object) = crate::source::store_for_url(url, &options.remote)
        .map_err(|source| ObjectError::Store { url: url.clone(), source: Box::new(source) })?;
    let meta = runtime.block_on(store.head(&object)).map_err(|e| match e {
        object_store::Error::NotFound { .. } => ObjectError::NotFound { url: url.clone() },
        error => ObjectError::Request { url: url.clone(), error: Box::new(error) },
    })?;
    let source = crate::source::object_fingerprint(url.as_str(), &meta);
    let object = ObjectSource::new(url.to_string(), store, object, meta.size, runtime.clone()).with_etag(meta.e_tag);
    Ok((source, std::sync::Arc::new(CachedSource::new(std::sync::Arc::new(object), CacheOptions::remote()))))
}

/// Refuses a chunk reference that does not lie inside its source file (`offset + length <= size`),
/// whatever scanner produced it: a corrupt file must fail at scan, not later at read.
fn check_references(path: &Path, dataset: &VirtualDataset) -> Result<(), ScanError> {
    use crate::manifest::ChunkEntry;
    for array in &dataset.arrays {
        for entry in &array.chunks {
            let ChunkEntry::Source { source, offset, length } = entry else { continue };
            let size = dataset.sources.get(source).map(|s| s.size);
            let end = offset.checked_add(length);
            if let (Some(size), Some(end)) = (size, end) {
                if end <= size {
                    continue;
                }
            }
            let size = size.map_or_else(|| format!("no source file {source}"), |s| format!("the {s}-byte file"));
            return Err(ScanError::Variable {
                path: path.to_path_buf(),
                variable: array.path.clone(),
                what: "chunk reference".into(),
                source: format!("bytes {offset}..{} lie past the end of {size}", offset.saturating_add(length)).into(),
            });
        }
    }
    Ok(())
}

/// A scanned object of an object store and what scanning it cost.
#[derive(Debug, Clone)]
pub struct RemoteScan {
    /// The scanned dataset (source 0 is the URL).
    pub dataset: VirtualDataset,
    /// Ranged requests sent and bytes fetched while scanning (the HEAD request not counted).
    pub fetched: crate::source::FetchStats,
}

/// Scans one object of an object store (`s3://`, `gs://`, `az://`, `http(s)://` URL) through ranged
/// reads with a block cache, never downloading it whole. The first request fetches the head (as
/// many bytes as the structure of the files scanned before with these options took:
/// [`FetchTotals::head_bytes`](crate::source::FetchTotals::head_bytes)); its answer also gives the fingerprint: the object's size, last-modified time and ETag (when the
/// server gives one). A server that cannot answer it (an empty object) is asked with a HEAD request
/// instead. Blocking: call it from outside `runtime`'s threads.
///
/// # Errors
/// [`ScanError`] naming the URL: not found, access denied, no credentials, timeouts (after retries),
/// or any scan error.
pub fn scan_url(
    url: &str,
    options: &ScanOptions,
    remote: &crate::source::RemoteOptions,
    runtime: &tokio::runtime::Handle,
) -> Result<RemoteScan, ScanError> {
    use crate::source::{ByteSource, CacheOptions, CachedSource, ObjectSource};
    let name = PathBuf::from(url);
    let io = |e: std::io::Error| ScanError::Io { path: name.clone(), source: e };
    let parsed = url::Url::parse(url).map_err(|e| io(std::io::Error::new(std::io::ErrorKind::InvalidInput, e)))?;
    let (store, object) = crate::source::store_for_url(&parsed, remote)
        .map_err(|e| io(std::io::Error::new(std::io::ErrorKind::InvalidInput, e)))?;
    let cache = CacheOptions::remote();
    let mut head_bytes = options.fetched.head_bytes();
    if url.ends_with(".dmrpp") {
        // A sidecar is read whole: one request for most (a few thousand chunks), whatever came before.
        head_bytes = head_bytes.max(SIDECAR_HEAD_BYTES);
    }
    let (meta, head) =
        runtime.block_on(first_block(&store, &object, head_bytes)).map_err(|e| io(remote_io_error(e)))?;
    let fingerprint = crate::source::object_fingerprint(url, &meta);
    let object: std::sync::Arc<dyn ByteSource> = std::sync::Arc::new(
        ObjectSource::new(url.to_string(), store, object, meta.size, runtime.clone()).with_etag(meta.e_tag.clone()),
    );
    let cached = std::sync::Arc::new(match &head {
        Some(head) => CachedSource::primed(object, cache, head),
        None => CachedSource::new(object, cache),
    });
    let bytes: std::sync::Arc<dyn ByteSource> = cached.clone();
    let input = format::input_format_of(&name, bytes.as_ref())?;
    // Linked, external and data files are read (and fingerprinted) through the same runtime and stores.
    let options_here = ScanOptions { runtime: Some(runtime.clone()), remote: remote.clone(), ..options.clone() };
    let dataset = (input.scan)(&name, bytes, fingerprint, &options_here)?;
    check_references(&name, &dataset)?;
    let fetched = cached.stats();
    options.fetched.add(meta.size, fetched);
    options.fetched.learn_front(cached.front());
    Ok(RemoteScan { dataset, fetched })
}

/// Bytes of a `.dmrpp` object asked for by its first request (the XML of about 10^4 chunks).
const SIDECAR_HEAD_BYTES: u64 = 1 << 20;

/// The object's metadata and its first `block` bytes, in one ranged GET. Where the server cannot
/// answer a range (an empty object, a server that ignores ranges) the metadata comes from a HEAD
/// request and no bytes do; not found, access denied and other failures are returned as they are.
async fn first_block(
    store: &std::sync::Arc<dyn object_store::ObjectStore>,
    path: &object_store::path::Path,
    block: u64,
) -> Result<(object_store::ObjectMeta, Option<bytes::Bytes>), object_store::Error> {
    // A reply covering less than the block (of an object at least that long) is asked again.
    let mut last = None;
    for _ in 0..3 {
        let options = object_store::GetOptions { range: Some((0..block).into()), ..Default::default() };
        let error = match store.get_opts(path, options).await {
            Ok(got) => {
                let meta = got.meta.clone();
                let bytes = got.bytes().await?;
                if bytes.len() as u64 == block.min(meta.size) {
                    return Ok((meta, Some(bytes)));
                }
                let source = format!("bytes 0..{block}: the server sent {} bytes, fewer than asked for", bytes.len());
                object_store::Error::Generic { store: "object store", source: source.into() }
            }
            Err(e) if is_range_refusal(&e) => {
                return Ok((object_store::ObjectStoreExt::head(store, path).await?, None))
            }
            Err(e) if crate::source::short_range_reply(&e).is_some() => e,
            Err(e) => return Err(e),
        };
        last = Some(error);
    }
    Err(last.unwrap_or_else(|| object_store::Error::Generic { store: "object store", source: "no attempt".into() }))
}

/// Whether a ranged GET failed because of the range itself: 416 (the object is empty) or a server
/// answering with the whole object.
fn is_range_refusal(e: &object_store::Error) -> bool {
    let text = e.to_string();
    text.contains("416") || text.contains("Range Not Satisfiable") || text.contains("non-partial response")
}

/// An object store error as an I/O error of the kind that says what failed, in one line (a server's
/// XML or JSON error body left out).
fn remote_io_error(e: object_store::Error) -> std::io::Error {
    use std::io::ErrorKind;
    let kind = match &e {
        object_store::Error::NotFound { .. } => ErrorKind::NotFound,
        object_store::Error::PermissionDenied { .. } | object_store::Error::Unauthenticated { .. } => {
            ErrorKind::PermissionDenied
        }
        _ => ErrorKind::Other,
    };
    let text = e.to_string();
    let line = text.lines().next().unwrap_or_default();
    let line = line.split(": <").next().unwrap_or(line).trim_end_matches(':');
    std::io::Error::new(kind, line.to_string())
}

/// Scans many files in parallel (rayon), in the given order. `progress(files_done, references)` is
/// called after each file. With object-store URLs among them, `options.max_concurrent_requests` files
/// are scanned at once (on that many threads of their own), however few cores there are.
///
/// libhdf5 and libnetcdf calls are serialised behind one lock, so parallelism overlaps the rest of the
/// work (reading and re-encoding tail chunks, building tables) with the library calls.
///
/// # Errors
/// A [`ScanError`] naming a file that could not be scanned (with several, one of them: files scan in
/// parallel).
pub fn scan_files(
    paths: &[PathBuf],
    options: &ScanOptions,
    progress: &(dyn Fn(usize, u64) + Sync),
) -> Result<Vec<VirtualDataset>, ScanError> {
    let remote = paths.iter().any(|p| crate::source::Location::from(p).is_remote());
    let wanted = options.max_concurrent_requests.max(1).min(paths.len());
    if remote && wanted > rayon::current_num_threads() {
        // Remote scans wait on the network, one request at a time per file: keep `wanted` in flight.
        return scan_on_threads(paths, options, progress, wanted);
    }
    scan_each(paths, options, progress)
}

/// Scans `paths` on `threads` threads of their own, each taking the next file when it is done with
/// one; after a failure no new file is started. For remote scans, which wait on the network: a
/// thread blocked on a reply costs nothing, where each idle worker of a rayon pool spins before it
/// sleeps (hundreds of them took longer than the scans).
fn scan_on_threads(
    paths: &[PathBuf],
    options: &ScanOptions,
    progress: &(dyn Fn(usize, u64) + Sync),
    threads: usize,
) -> Result<Vec<VirtualDataset>, ScanError> {
    use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
    let (next, done, refs, failed) =
        (AtomicUsize::new(0), AtomicUsize::new(0), AtomicU64::new(0), AtomicBool::new(false));
    let results: Vec<std::sync::Mutex<Option<Result<VirtualDataset, ScanError>>>> =
        paths.iter().map(|_| std::sync::Mutex::new(None)).collect();
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                while !failed.load(Ordering::Relaxed) {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(path) = paths.get(i) else { break };
                    let result = scan_input(path, options);
                    match &result {
                        Ok(dataset) => {
                            let found: u64 = dataset.arrays.iter().map(|a| a.chunks.len() as u64).sum();
                            let refs = refs.fetch_add(found, Ordering::Relaxed) + found;
                            progress(done.fetch_add(1, Ordering::Relaxed) + 1, refs);
                        }
                        Err(_) => failed.store(true, Ordering::Relaxed),
                    }
                    *results[i].lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(result);
                }
            });
        }
    });
    results
        .into_iter()
        .filter_map(|slot| slot.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner))
        .collect()
}

fn scan_each(
    paths: &[PathBuf],
    options: &ScanOptions,
    progress: &(dyn Fn(usize, u64) + Sync),
) -> Result<Vec<VirtualDataset>, ScanError> {
    use rayon::prelude::*;
    use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
    let (done, refs) = (AtomicUsize::new(0), AtomicU64::new(0));
    paths
        .par_iter()
        .map(|path| {
            let dataset = scan_input(path, options)?;
            let found: u64 = dataset.arrays.iter().map(|a| a.chunks.len() as u64).sum();
            let refs = refs.fetch_add(found, Ordering::Relaxed) + found;
            progress(done.fetch_add(1, Ordering::Relaxed) + 1, refs);
            Ok(dataset)
        })
        .collect()
}

/// Scans a local path, or an object-store URL through [`scan_url`] (with `options.runtime`).
pub(crate) fn scan_input(path: &Path, options: &ScanOptions) -> Result<VirtualDataset, ScanError> {
    let location = crate::source::Location::from(path);
    let Some(url) = location.as_url().filter(|_| location.is_remote()) else {
        return scan_file(path, options);
    };
    let Some(runtime) = &options.runtime else {
        let why = "scanning object-store URLs needs ScanOptions::runtime (a tokio runtime handle)";
        return Err(ScanError::Io { path: path.to_path_buf(), source: std::io::Error::other(why) });
    };
    scan_url(url, options, &options.remote, runtime).map(|scan| scan.dataset)
}

/// Most chunks one array's grid may have: its dense chunk table (12 bytes a chunk, on zeroed pages
/// that take memory as chunks are found) is allocated before the index is read, so a crafted extent
/// must not size it. 2^27 chunks is a 1.5 GiB table.
pub const MAX_CHUNKS_PER_ARRAY: u64 = 1 << 27;

/// A table of missing chunks for `grid`, or an error naming the variable when the grid has more than
/// [`MAX_CHUNKS_PER_ARRAY`] chunks.
pub(crate) fn chunk_table_for(
    path: &Path,
    variable: &str,
    grid: &crate::grid::ChunkGrid,
) -> Result<crate::dataset::ChunkTable, ScanError> {
    match grid.checked_num_chunks() {
        Some(n) if n <= MAX_CHUNKS_PER_ARRAY => Ok(crate::dataset::ChunkTable::missing(n as usize)),
        count => Err(ScanError::Unsupported {
            path: path.to_path_buf(),
            variable: variable.to_string(),
            problem: match count {
                Some(n) => format!(
                    "shape {:?} has {n} chunks, more than vzarr's limit of {MAX_CHUNKS_PER_ARRAY} per array",
                    grid.shape()
                ),
                None => format!("shape {:?} has more chunks than fit in 64 bits", grid.shape()),
            },
        }),
    }
}

/// Whether an array gets a digest of its values: only arrays without any concatenation dimension are
/// taken once from the first file and compared across files, and only small ones.
pub(crate) fn wants_digest(options: &ScanOptions, array: &VirtualArray) -> bool {
    if options.concat_dims.is_empty() {
        return false;
    }
    let has_dim =
        array.metadata.dimension_names.as_ref().is_some_and(|names| concat_axes(options, names).next().is_some());
    let bytes = array.metadata.shape().iter().product::<u64>() * array.metadata.element_size() as u64;
    !has_dim && bytes <= options.digest_max_bytes
}

/// The axes of an array (by its dimension names) that are concatenation dimensions.
pub(crate) fn concat_axes<'a>(options: &'a ScanOptions, names: &'a [String]) -> impl Iterator<Item = usize> + 'a {
    names.iter().enumerate().filter(|(_, n)| options.concat_dims.contains(n)).map(|(d, _)| d)
}

/// The digest of an array's values (or stored bytes; each scanner hashes the same form for every file).
pub(crate) fn digest(bytes: &[u8]) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    std::hash::Hash::hash(bytes, &mut hasher);
    std::hash::Hasher::finish(&hasher)
}

/// Records an unsupported variable: an error, or a warning when the options allow skipping.
pub(crate) fn unsupported(
    path: &Path,
    variable: &str,
    problem: String,
    options: &ScanOptions,
    warnings: &mut Vec<ScanWarning>,
) -> Result<(), ScanError> {
    if !options.skip_unsupported {
        return Err(ScanError::Unsupported { path: path.to_path_buf(), variable: variable.to_string(), problem });
    }
    warnings.push(ScanWarning {
        file: path.display().to_string(),
        variable: variable.to_string(),
        message: format!("left out: {problem}"),
    });
    Ok(())
}
