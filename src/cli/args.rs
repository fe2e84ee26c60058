//! Command-line arguments. No logic here: each subcommand turns these into library options.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::store::StoreFormat;

/// Virtual Zarr v3 datasets over archives of HDF5 and NetCDF files.
#[derive(Debug, Parser)]
#[command(name = "vzarr", version, about, after_help = EXIT_CODES)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

const EXIT_CODES: &str = "Exit codes: 0 success; 1 failure (bad input, I/O error, a source changed since the \
scan, verify found differences); 2 usage error; 3 done, but something was left out and warned about \
(variables with --skip-unsupported, attributes vzarr cannot represent); 4 verify found no difference but \
could not prove some arrays here (the oracle's libhdf5 lacks a filter: set HDF5_PLUGIN_PATH).";

/// Largest `--max-slab-mib` (1 TiB): `MiB << 20` cannot overflow.
const MAX_SLAB_MIB: u64 = 1 << 20;

/// A size in bytes: a number, whole or decimal (`1.5`), with an optional binary unit `K`, `M`, `G`
/// or `T` (also written `KB`/`KiB` and so on), such as `40K`, `1.5G`, `512MiB`; at least 1 byte
/// (a fraction of a byte is dropped).
fn parse_size(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let upper = text.to_ascii_uppercase();
    let unit_end =
        upper.strip_suffix("IB").or_else(|| upper.strip_suffix('B').filter(|u| u.ends_with(['K', 'M', 'G', 'T'])));
    let number = unit_end.unwrap_or(&upper);
    let (digits, shift) = match number.chars().last() {
        Some('K') => (&number[..number.len() - 1], 10),
        Some('M') => (&number[..number.len() - 1], 20),
        Some('G') => (&number[..number.len() - 1], 30),
        Some('T') => (&number[..number.len() - 1], 40),
        _ if unit_end.is_some() => return Err(format!("{text:?}: expected a size such as 40K, 1.5G or 512MiB")),
        _ => (number, 0),
    };
    let bad = || format!("{text:?}: expected a size such as 40K, 1.5G or 512MiB");
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
    if whole.is_empty() && fraction.is_empty() || !fraction.bytes().all(|b| b.is_ascii_digit()) || fraction.len() > 18 {
        return Err(bad());
    }
    let whole: u64 = if whole.is_empty() { 0 } else { whole.parse().map_err(|_| bad())? };
    let fraction_bytes = match fraction.is_empty() {
        true => 0,
        false => {
            let numerator: u128 = fraction.parse().map_err(|_| bad())?;
            (numerator << shift) / 10u128.pow(fraction.len() as u32)
        }
    };
    let bytes = u128::from(whole) << shift;
    u64::try_from(bytes + fraction_bytes)
        .ok()
        .filter(|&b| b > 0)
        .ok_or_else(|| format!("{text:?}: not a size between 1 byte and 2^64"))
}

fn parse_jobs(text: &str) -> Result<usize, String> {
    let jobs: usize = text.parse().map_err(|e| format!("{e}"))?;
    if !(1..=1024).contains(&jobs) {
        return Err(format!("{jobs} is not in 1..=1024"));
    }
    Ok(jobs)
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Scan files and write a virtual Zarr v3 store (*.vzarr).
    Scan(ScanArgs),
    /// Add new files to a native store along its concatenation dimension, without rescanning it.
    Append(AppendArgs),
    /// Fold runs of small chunks along a dimension (daily appends) into target-size chunks, in place
    /// (native stores atomically; Icechunk repositories in one commit).
    Compact(CompactArgs),
    /// Describe a store: arrays, grids, references, rewritten chunks, sources.
    Info(InfoArgs),
    /// Read one variable (or a selection of it) into a NumPy .npy file.
    Read(ReadArgs),
    /// Read every variable through the store and compare bit for bit with the source files.
    Verify(VerifyArgs),
    /// Export a store as kerchunk reference JSON (for fsspec, zarr-python and xarray).
    Export(ExportArgs),
    /// Write a real Zarr v3 directory store: metadata plus every chunk's bytes, copied verbatim.
    Materialize(MaterializeArgs),
    /// Print the source containers of a store (what it can make vzarr read) and add them to your
    /// trust list.
    Trust(TrustArgs),
    /// Combine the parts of a sharded scan (`scan --shard`) into one store, as one scan would have.
    Merge(MergeArgs),
    /// Compare DMR++ sidecars with their data files: variables, types, fill values, filters and every
    /// chunk's offset and length. Prints each difference; exit code 1 when there is any.
    CheckSidecars(CheckSidecarsArgs),
}

/// The sidecars `scan --sidecars` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum SidecarKind {
    /// DMR++ (`<file>.dmrpp`), as OPeNDAP's `get_dmrpp` writes them beside NASA's granules.
    Dmrpp,
}

#[derive(Debug, Args)]
pub(crate) struct CheckSidecarsArgs {
    /// DMR++ sidecars (paths, URLs or quoted glob patterns such as 'granules/*.dmrpp').
    #[arg(required = true)]
    pub(crate) sidecars: Vec<std::ffi::OsString>,
    #[command(flatten)]
    pub(crate) remote: RemoteArgs,
}

/// What `scan` writes: the library's [`StoreFormat`], named on the command line as in Python.
impl clap::ValueEnum for StoreFormat {
    fn value_variants<'a>() -> &'a [Self] {
        &StoreFormat::ALL
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        let help = match self {
            StoreFormat::Native => "A native *.vzarr store (directory)",
            StoreFormat::KerchunkJson => "kerchunk reference JSON (one file), as `vzarr export --kerchunk` writes",
            StoreFormat::Icechunk => {
                "An Icechunk repository (a directory or an s3:// URL): created, or given a new snapshot with \
                 --branch / --message"
            }
            StoreFormat::KerchunkParquet => {
                "A kerchunk Parquet reference set (a directory: `.zmetadata`, `<var>/refs.N.parq`), as kerchunk's \
                 `refs_to_dataframe` writes; Zarr v2, so arrays on a rectilinear grid are refused"
            }
            StoreFormat::Dmrpp => {
                "One DMR++ sidecar per input file, `OUTPUT/<file name>.dmrpp` (OUTPUT a directory), as OPeNDAP's \
                 get_dmrpp writes: each file's own chunks; nothing is combined"
            }
        };
        Some(clap::builder::PossibleValue::new(self.name()).help(help))
    }
}

#[derive(Debug, Args)]
pub(crate) struct ScanArgs {
    /// Input files, or quoted glob patterns such as 'archive/*.nc' (an argument naming an existing
    /// file is that file, even when its name contains `*`, `?` or `[`); object-store URLs and URL globs
    /// (`s3://bucket/cmip/*.nc`, `gs://`, `az://`) and `https://` URLs.
    #[arg(required_unless_present = "files_from")]
    pub(crate) inputs: Vec<std::ffi::OsString>,
    /// Also read inputs from FILE, one path, URL or pattern a line (`-`: standard input), for
    /// archives too large for a command line.
    #[arg(long, value_name = "FILE")]
    pub(crate) files_from: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) remote: RemoteArgs,
    #[command(flatten)]
    pub(crate) combine: CombineArgs,
    /// Leave out variables vzarr cannot virtualize (listed as warnings; exit code 3) instead of failing.
    #[arg(long)]
    pub(crate) skip_unsupported: bool,
    /// Scan a file's sidecar in place of the file where one exists (`dmrpp`: `<file>.dmrpp`, OPeNDAP's
    /// DMR++); the others are scanned themselves. The report says how many came from sidecars.
    #[arg(long, value_enum, value_name = "KIND")]
    pub(crate) sidecars: Option<SidecarKind>,
    /// Largest slab, in MiB, that an unchunked (contiguous) variable is split into (1 to 1048576).
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u64).range(1..=MAX_SLAB_MIB))]
    pub(crate) max_slab_mib: u64,
    /// Scan only shard I of N (contiguous slices of the sorted inputs) and write a partial result
    /// (a part) at --output for `vzarr merge`. Without it, a job-array task takes its shard from the
    /// scheduler (Slurm, Kubernetes Indexed Job, AWS Batch). An --output that is a directory (or ends
    /// in `/`) gets `part-IIIII-of-NNNNN.vzpart` inside.
    #[arg(long, value_name = "I/N", conflicts_with = "no_shard")]
    pub(crate) shard: Option<crate::parts::Shard>,
    /// The number of shards where the scheduler does not say (Kubernetes Indexed Jobs: the Job's
    /// `completions`; AWS Batch without AWS_BATCH_JOB_ARRAY_SIZE).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) shard_count: Option<u32>,
    /// Scan every input into a store even inside a job-array task.
    #[arg(long)]
    pub(crate) no_shard: bool,
    /// With --format icechunk: the branch to commit to (default `main`); an existing repository
    /// gets a new snapshot on it.
    #[arg(long, value_name = "BRANCH")]
    pub(crate) branch: Option<String>,
    /// With --format icechunk: the commit message; an existing repository gets a new snapshot.
    #[arg(long, value_name = "TEXT")]
    pub(crate) message: Option<String>,
}

/// What `scan` and `merge` write, and how they combine the files: the options the two share.
#[derive(Debug, Args)]
pub(crate) struct CombineArgs {
    /// The store to write (a directory, conventionally named *.vzarr), the kerchunk file or the
    /// Icechunk repository (--format).
    #[arg(short, long)]
    pub(crate) output: PathBuf,
    /// Replace an existing store of the same format (atomically). Never replaces anything else: an
    /// ordinary directory or file, or one of the inputs.
    #[arg(long)]
    pub(crate) overwrite: bool,
    /// Concatenate the files along this dimension. Repeatable: the first is outermost. `DIM`: an
    /// existing dimension, files ordered by its coordinate values (`time`; tiles along `y` and `x`).
    /// `DIM=attr:NAME`: a new dimension keyed by a global attribute (`member=attr:variant_label`).
    /// `DIM=path:REGEX`: a new dimension keyed by the first capture group of REGEX over the file
    /// name (`member=path:'_(r\d+i\d+p\d+f\d+)_'`). Files holding different variables are merged.
    #[arg(long, value_name = "DIM[=attr:NAME|=path:REGEX]")]
    pub(crate) concat: Vec<crate::combine::ConcatDim>,
    /// Keep the first file's global attributes where files differ (default: drop those that differ).
    #[arg(long)]
    pub(crate) first_global_attributes: bool,
    /// Take this variable (one without the concatenation dimensions) from the first file even if it
    /// differs in others. Repeatable.
    #[arg(long, value_name = "VAR")]
    pub(crate) take_first: Vec<String>,
    /// Leave out (with a warning) variables missing from some files instead of failing.
    #[arg(long)]
    pub(crate) drop_missing: bool,
    /// What to write at --output.
    #[arg(long, value_enum, default_value_t = StoreFormat::Native)]
    pub(crate) format: StoreFormat,
    /// With --format kerchunk-parquet: references per Parquet file (kerchunk's `record_size`; at most
    /// 4194304, the most vzarr reads).
    #[arg(long, value_name = "ROWS", default_value_t = crate::formats::DEFAULT_RECORD_SIZE as u64,
          value_parser = clap::value_parser!(u64).range(1..=4_194_304))]
    pub(crate) record_size: u64,
    /// With --format kerchunk-json or kerchunk-parquet: an array whose chunk grid is rectilinear
    /// (Zarr v2 cannot express it: a `time` of monthly files in chunks of 512) and whose decoded
    /// values take at most BYTES is written as one inline chunk of those values, as kerchunk inlines
    /// small arrays; a larger one is refused by name with kerchunk-parquet. 0 inlines nothing.
    /// Default: 1048576 (1 MiB) for kerchunk-parquet; 0 for kerchunk-json, whose Zarr v3 keys say
    /// a rectilinear grid.
    #[arg(long, value_name = "BYTES")]
    pub(crate) inline_threshold: Option<u64>,
    /// With --format kerchunk-json or kerchunk-parquet: rewrite source locations starting with OLD to start with NEW
    /// (e.g. `/archive/=s3://bucket/archive/`). Repeatable; the first match applies.
    #[arg(long, value_name = "OLD=NEW")]
    pub(crate) url_prefix: Vec<crate::formats::UrlPrefix>,
}

#[derive(Debug, Args)]
pub(crate) struct MergeArgs {
    /// The parts written by `vzarr scan --shard` (files, or quoted glob patterns such as
    /// 'parts/*.vzpart', also on object stores: 's3://bucket/run/*.vzpart'), every shard of one run
    /// exactly once. The options are those of `scan`; --concat must name the dimensions the parts
    /// were scanned with.
    #[arg(required = true)]
    pub(crate) parts: Vec<std::ffi::OsString>,
    #[command(flatten)]
    pub(crate) remote: RemoteArgs,
    #[command(flatten)]
    pub(crate) combine: CombineArgs,
}

#[derive(Debug, Args)]
pub(crate) struct AppendArgs {
    /// The native store (*.vzarr) to extend, replaced atomically (or left as it was on error); or an
    /// Icechunk repository (a directory or an s3:// URL), which gets one new commit on --branch.
    pub(crate) store: PathBuf,
    /// The new files, or quoted glob patterns, as for `scan`; they must start after the store's end
    /// along its concatenation dimension (for a member x time store: files for every member).
    #[arg(required_unless_present = "files_from")]
    pub(crate) inputs: Vec<std::ffi::OsString>,
    /// Also read inputs from FILE, one path, URL or pattern a line (`-`: standard input).
    #[arg(long, value_name = "FILE")]
    pub(crate) files_from: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) remote: RemoteArgs,
    /// Accept new files that leave a gap after the store's end (or between them) in a store that has
    /// no gap (default: refused, so that a missed file does not go unnoticed).
    #[arg(long)]
    pub(crate) allow_gaps: bool,
    /// For an Icechunk repository: the branch to append to (default `main`).
    #[arg(long, value_name = "BRANCH")]
    pub(crate) branch: Option<String>,
    /// For an Icechunk repository: the commit message (default: `vzarr append:` and the new files).
    #[arg(long, value_name = "TEXT")]
    pub(crate) message: Option<String>,
    /// Keep the store's grid along DIM: the new steps fold into the last chunk until it holds a
    /// whole LENGTH (`time=month`; also `season`, `year`, `day`, a duration such as `10d`, `by:VAR`
    /// or a number of steps), then into the next; only the last stored period is read again.
    #[arg(long, value_name = "DIM=LENGTH", value_parser = parse_dim_length)]
    pub(crate) chunks: Option<(String, crate::chunking::ChunkLength)>,
}

#[derive(Debug, Args)]
pub(crate) struct CompactArgs {
    /// The native store (*.vzarr), replaced atomically, or the Icechunk repository (a directory or an
    /// object-store URL), which gets one commit on --branch.
    pub(crate) store: String,
    /// The dimension along which chunks are folded (with --target).
    #[arg(long, value_name = "DIM", requires = "target", conflicts_with = "chunks")]
    pub(crate) dim: Option<String>,
    /// The target chunk length along --dim: a number N (runs of chunks shorter than it are folded
    /// into chunks of N and one of the remainder); a calendar unit, `day`, `month`, `season` (DJF,
    /// MAM, JJA, SON), `year`, or a duration such as `6h` or `10d` (each chunk becomes the steps of
    /// one period, from the dimension's CF time coordinate in its calendar); or `by:VAR` (one chunk
    /// per run of equal values of the 1-D variable VAR).
    #[arg(long, value_name = "LENGTH", requires = "dim")]
    pub(crate) target: Option<crate::chunking::ChunkLength>,
    /// The same as --dim DIM --target LENGTH, written DIM=LENGTH (`time=30`, `time=month`).
    #[arg(long, value_name = "DIM=LENGTH", value_parser = parse_dim_length)]
    pub(crate) chunks: Option<(String, crate::chunking::ChunkLength)>,
    /// Fold only the chunks after the last chunk of the target length (after `vzarr append`).
    #[arg(long)]
    pub(crate) tail: bool,
    /// Print the plan (every array's chunk edges before and after); write nothing.
    #[arg(long)]
    pub(crate) dry_run: bool,
    /// For an Icechunk repository: the branch (default `main`).
    #[arg(long, value_name = "BRANCH")]
    pub(crate) branch: Option<String>,
    /// For an Icechunk repository: the commit message (default `vzarr compact: DIM to chunks of N`).
    #[arg(long, value_name = "TEXT")]
    pub(crate) message: Option<String>,
    /// Largest buffer one read allocates (a folded slab): bytes, or with a K, M, G or T suffix.
    /// Default: 1G.
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub(crate) max_memory: Option<u64>,
    /// Also trust sources under PREFIX, besides the trust list and VZARR_ALLOW_SOURCES. Repeatable.
    #[arg(long = "allow-source", value_name = "PREFIX")]
    pub(crate) allow_source: Vec<String>,
    #[command(flatten)]
    pub(crate) remote: RemoteArgs,
}

/// What `materialize --chunks` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum MaterializeFormat {
    /// A Zarr v3 directory store (or an s3:// prefix).
    Zarr,
    /// An Icechunk repository, one commit.
    Icechunk,
}

/// `materialize --shards`: a verbatim shard layout, or shard lengths by dimension name.
#[derive(Debug, Clone)]
pub(crate) enum ShardsArg {
    /// `file` or `N,N,..` (verbatim copies).
    Layout(crate::export::ShardSpec),
    /// `DIM=LENGTH,..` (regular copies; a calendar unit or `by:VAR` gives rectilinear shards).
    Named(Vec<(String, crate::chunking::ChunkLength)>),
}

fn parse_shards(text: &str) -> Result<ShardsArg, String> {
    if text.contains('=') {
        return parse_chunk_spec(text).map(|spec| ShardsArg::Named(spec.0));
    }
    text.parse().map(ShardsArg::Layout)
}

/// Chunk lengths by dimension name (`materialize --chunks`).
#[derive(Debug, Clone)]
pub(crate) struct ChunkSpec(pub(crate) Vec<(String, crate::chunking::ChunkLength)>);

/// `DIM=LENGTH,DIM=LENGTH`: chunk lengths by dimension name (`time=90`, `time=month`).
/// A dimension named twice is refused (`time=10,time=20`: which one was meant?).
fn parse_chunk_spec(text: &str) -> Result<ChunkSpec, String> {
    let spec: Vec<(String, crate::chunking::ChunkLength)> =
        text.split(',').map(|part| parse_dim_length(part.trim())).collect::<Result<_, _>>()?;
    for (k, (dim, _)) in spec.iter().enumerate() {
        if spec[..k].iter().any(|(d, _)| d == dim) {
            return Err(format!("{text:?}: dimension {dim:?} given twice"));
        }
    }
    Ok(ChunkSpec(spec))
}

/// `DIM=LENGTH`: a dimension name and a [`ChunkLength`](crate::chunking::ChunkLength) (`time=30`,
/// `time=month`, `basin=by:basin_id`).
fn parse_dim_length(text: &str) -> Result<(String, crate::chunking::ChunkLength), String> {
    let (dim, length) =
        text.split_once('=').ok_or_else(|| format!("{text:?}: expected DIM=LENGTH, such as time=365 or time=month"))?;
    if dim.trim().is_empty() || dim.contains(',') {
        return Err(format!("{text:?}: expected one DIM=LENGTH, such as time=month"));
    }
    Ok((dim.trim().to_string(), length.parse()?))
}

/// The store `info`, `read` and `verify` open, and how.
#[derive(Debug, Args)]
pub(crate) struct StoreArgs {
    /// The store: a native store or an Icechunk repository, a local path or a URL.
    pub(crate) store: std::ffi::OsString,
    #[command(flatten)]
    pub(crate) remote: RemoteArgs,
    /// For an Icechunk repository: the branch to read (default `main`).
    #[arg(long, value_name = "BRANCH")]
    pub(crate) branch: Option<String>,
    /// Also trust sources under PREFIX (a directory, `s3://bucket/prefix/`, `https://host/path/`),
    /// besides the trust list and VZARR_ALLOW_SOURCES. Repeatable.
    #[arg(long = "allow-source", value_name = "PREFIX")]
    pub(crate) allow_source: Vec<String>,
    /// Read the sources even when their size, ETag or modification time differ from the scan's
    /// (by default such a source is an error naming it: its bytes may have moved); for an Icechunk
    /// repository, also do not compare them with the references' checksums.
    #[arg(long)]
    pub(crate) no_check_sources: bool,
}

#[derive(Debug, Args)]
pub(crate) struct InfoArgs {
    #[command(flatten)]
    pub(crate) open: StoreArgs,
    /// Print JSON instead of text.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct ReadArgs {
    #[command(flatten)]
    pub(crate) open: StoreArgs,
    /// The variable (`tas`, `group/tas`).
    pub(crate) variable: String,
    /// NumPy-style selection per dimension, e.g. `0:31,:,10` or `-1` (default: everything).
    #[arg(short, long, default_value = "", allow_hyphen_values = true)]
    pub(crate) select: String,
    /// The .npy file to write (`-`: standard output; an existing FIFO or character device is written
    /// through, never replaced).
    #[arg(short, long)]
    pub(crate) output: PathBuf,
    /// Replace an existing .npy file (atomically; never anything else).
    #[arg(long)]
    pub(crate) overwrite: bool,
    /// Largest buffer the read allocates (the selection, each decoded chunk): bytes, or with a
    /// K, M, G or T suffix (powers of 1024). Default: half of the physical memory.
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub(crate) max_memory: Option<u64>,
}

/// How object stores (`s3://`, `gs://`, `az://`, `https://`) are reached, by inputs and by the
/// sources a store references. Credentials, regions and endpoints come from the standard
/// environment variables (`AWS_*`, `GOOGLE_*`, `AZURE_*`).
#[derive(Debug, Clone, Args)]
pub(crate) struct RemoteArgs {
    /// Reach object stores without credentials (public buckets).
    #[arg(long)]
    pub(crate) anonymous: bool,
    /// Accept the charges of requester-pays S3 buckets.
    #[arg(long)]
    pub(crate) requester_pays: bool,
    /// Retries of a failed request (timeouts, 5xx, throttling), with exponential backoff.
    #[arg(long, value_name = "N", default_value_t = 5, value_parser = clap::value_parser!(u64).range(0..=100))]
    pub(crate) retries: u64,
    /// Seconds one request may take before it is abandoned (and retried).
    #[arg(long, value_name = "SECS", default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub(crate) request_timeout: u64,
    /// Remote files scanned at once (`scan`, `append`, `merge`, `check-sidecars`; default 256), or
    /// source files read from, or objects uploaded, at once (`read`, `verify`, `materialize`, `export`,
    /// object-store outputs; default 16).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub(crate) max_concurrent_requests: Option<u64>,
}

/// Remote files scanned at once: `--max-concurrent-requests`, else the scanner's default
/// ([`crate::scan::DEFAULT_SCANS_IN_FLIGHT`]).
pub(crate) fn scans_at_once(flag: Option<u64>) -> usize {
    flag.map_or(crate::scan::DEFAULT_SCANS_IN_FLIGHT, |n| n as usize)
}

/// Source files read from, or objects uploaded, at once: `--max-concurrent-requests`, else 16.
pub(crate) fn requests_at_once(flag: Option<u64>) -> usize {
    flag.map_or(16, |n| n as usize)
}

impl RemoteArgs {
    /// The library's options for these flags.
    pub(crate) fn options(&self) -> crate::source::RemoteOptions {
        crate::source::RemoteOptions {
            anonymous: self.anonymous,
            requester_pays: self.requester_pays,
            max_retries: self.retries as usize,
            request_timeout: std::time::Duration::from_secs(self.request_timeout),
            ..Default::default()
        }
    }
}

#[derive(Debug, Args)]
pub(crate) struct VerifyArgs {
    #[command(flatten)]
    pub(crate) open: StoreArgs,
    /// Print the report as JSON.
    #[arg(long)]
    pub(crate) json: bool,
    /// Seconds to wait for libnetcdf to read one slab of a source before giving up on that array
    /// (a corrupt file can make libhdf5 loop forever).
    #[arg(long, value_name = "SECS", default_value_t = 120, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub(crate) oracle_timeout: u64,
}

#[derive(Debug, Args)]
pub(crate) struct ExportArgs {
    /// The store.
    pub(crate) store: String,
    #[command(flatten)]
    pub(crate) remote: RemoteArgs,
    /// Also trust sources under PREFIX (a directory, `s3://bucket/prefix/`, `https://host/path/`),
    /// besides the trust list and VZARR_ALLOW_SOURCES. Repeatable.
    #[arg(long = "allow-source", value_name = "PREFIX")]
    pub(crate) allow_source: Vec<String>,
    /// The kerchunk reference JSON file to write (version 1, Zarr v3 keys; `-`: standard output; an
    /// existing FIFO or character device is written through; an object-store URL).
    #[arg(
        long,
        value_name = "REFS.json",
        required_unless_present = "kerchunk_parquet",
        conflicts_with = "kerchunk_parquet"
    )]
    pub(crate) kerchunk: Option<PathBuf>,
    /// Or the kerchunk Parquet reference set (a directory, or an object-store URL) to write: Zarr v2
    /// metadata in `.zmetadata` and `refs.<n>.parq` files per array, as kerchunk's `refs_to_dataframe`
    /// writes them and fsspec, kerchunk and VirtualiZarr read them.
    #[arg(long, value_name = "REFS.parq")]
    pub(crate) kerchunk_parquet: Option<PathBuf>,
    /// With --kerchunk-parquet: references per Parquet file (kerchunk's `record_size`; at most
    /// 4194304, the most vzarr reads). Default: 100000.
    #[arg(long, value_name = "ROWS", value_parser = clap::value_parser!(u64).range(1..=4_194_304))]
    pub(crate) record_size: Option<u64>,
    /// With --kerchunk-parquet: leave out the arrays Zarr v2 cannot express (a rectilinear chunk
    /// grid larger than --inline-threshold, a struct data type), each named in a warning (exit code
    /// 3), instead of failing.
    #[arg(long)]
    pub(crate) skip_unsupported: bool,
    /// An array whose chunk grid is rectilinear (Zarr v2 cannot express it) and whose decoded values
    /// take at most BYTES is written as one inline chunk of those values, read through the store,
    /// as kerchunk inlines small arrays; 0 inlines nothing. Default: 1048576 (1 MiB) for
    /// --kerchunk-parquet; 0 for --kerchunk, whose Zarr v3 keys say a rectilinear grid.
    #[arg(long, value_name = "BYTES")]
    pub(crate) inline_threshold: Option<u64>,
    /// Rewrite source locations (paths or URLs) starting with OLD to start with NEW, e.g.
    /// `/archive/=s3://bucket/archive/`. Repeatable; the first match applies. Default: absolute
    /// file:// URLs.
    #[arg(long, value_name = "OLD=NEW")]
    pub(crate) url_prefix: Vec<crate::formats::UrlPrefix>,
    /// Replace an existing kerchunk reference file or set (atomically; never anything else).
    #[arg(long)]
    pub(crate) overwrite: bool,
    /// Export even when a source's size, ETag or modification time differ from the scan's (by
    /// default such a source is an error naming it, as for every command that reads: the references
    /// would point at bytes that may have moved).
    #[arg(long)]
    pub(crate) no_check_sources: bool,
}

#[derive(Debug, Args)]
pub(crate) struct MaterializeArgs {
    /// The store.
    pub(crate) store: String,
    #[command(flatten)]
    pub(crate) remote: RemoteArgs,
    /// Also trust sources under PREFIX (a directory, `s3://bucket/prefix/`, `https://host/path/`),
    /// besides the trust list and VZARR_ALLOW_SOURCES. Repeatable.
    #[arg(long = "allow-source", value_name = "PREFIX")]
    pub(crate) allow_source: Vec<String>,
    /// The Zarr v3 directory store to write.
    pub(crate) output: PathBuf,
    /// Replace an existing Zarr v3 store (atomically; never any other directory).
    #[arg(long)]
    pub(crate) overwrite: bool,
    /// Chunks copied at once (1 to 1024).
    #[arg(long, default_value_t = 16, value_parser = parse_jobs)]
    pub(crate) jobs: usize,
    /// Pack chunks into Zarr v3 shards (`sharding_indexed`). Without --chunks, copied verbatim: `file`
    /// for one shard per source file along the concatenation dimension (whole extent on the others),
    /// or a shard shape such as `365,180,360` (arrays of that many dimensions); arrays whose chunks
    /// cannot be packed verbatim are written unsharded, with the reason printed. With --chunks: shard
    /// lengths by dimension name, each a multiple of the chunk length, such as `time=360,lat=90`
    /// (dimensions not named: one chunk per shard); `time=month` (also `year`, `season`, `by:VAR`)
    /// writes one shard per month, whose regular inner chunks (`--chunks time=1,..`) divide each.
    #[arg(long, value_name = "file|N,N,..|DIM=LENGTH,..", value_parser = parse_shards)]
    pub(crate) shards: Option<ShardsArg>,
    /// Shards assembled and written at once (memory holds about this many shards).
    #[arg(long, default_value_t = 4)]
    pub(crate) shard_jobs: usize,
    /// Write a regular chunk grid of this shape instead of copying chunks: `time=90,lat=45,lon=90`
    /// (dimensions not named keep their chunk length where it is regular, else the whole extent).
    /// Along a time dimension a calendar unit, `time=month` (also `day`, `season`, `year`, `6h`,
    /// `10d`), gives one chunk per period of its CF time coordinate (a rectilinear grid); `DIM=by:VAR`
    /// one chunk per run of equal values of VAR. Every chunk is decoded and re-encoded; a rerun of a
    /// Zarr copy after an interruption continues from the chunks already written (in OUTPUT.partial).
    #[arg(long, value_name = "DIM=LENGTH,..", value_parser = parse_chunk_spec)]
    pub(crate) chunks: Option<ChunkSpec>,
    /// With --chunks: encode the chunks with this compression instead of the array's codecs: `none`,
    /// `zstd`, `zstd:LEVEL`, `gzip` or `gzip:LEVEL`.
    #[arg(long, value_name = "CODEC", requires = "chunks")]
    pub(crate) codec: Option<crate::codec::Recode>,
    /// With --chunks: write a Zarr v3 store (`zarr`, the default) or an Icechunk repository
    /// (`icechunk`: one commit; OUTPUT a directory or an s3:// URL).
    #[arg(long, value_enum, default_value_t = MaterializeFormat::Zarr, requires = "chunks")]
    pub(crate) format: MaterializeFormat,
    /// Bring a regular copy in an Icechunk repository (OUTPUT) up to date after `vzarr append` grew the
    /// store: only the chunks the new region touches are rewritten, in one commit. The chunk shape is
    /// the repository's.
    #[arg(long, conflicts_with_all = ["chunks", "shards", "overwrite"])]
    pub(crate) update: bool,
    /// Icechunk: the branch to commit to (default `main`).
    #[arg(long, value_name = "BRANCH")]
    pub(crate) branch: Option<String>,
    /// Icechunk: the commit message.
    #[arg(long, value_name = "TEXT")]
    pub(crate) message: Option<String>,
    /// With --chunks or --update: the largest region read at once (bytes, or with a K, M, G or T
    /// suffix). Default: 1G.
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub(crate) max_memory: Option<u64>,
    /// Read the sources even when their size, ETag or modification time differ from the scan's
    /// (by default such a source is an error naming it: its bytes may have moved).
    #[arg(long)]
    pub(crate) no_check_sources: bool,
}

#[derive(Debug, Args)]
pub(crate) struct TrustArgs {
    /// The store whose source containers to trust.
    pub(crate) store: String,
    /// Only print the containers; do not change the trust list.
    #[arg(long)]
    pub(crate) list: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chunking::{CalendarUnit, ChunkLength};

    #[test]
    fn sizes_take_decimals_and_binary_units() {
        assert_eq!(parse_size("40K"), Ok(40 << 10));
        assert_eq!(parse_size("1.5G"), Ok(3 << 29));
        assert_eq!(parse_size("512MiB"), Ok(512 << 20));
        assert_eq!(parse_size("2gb"), Ok(2 << 30));
        assert_eq!(parse_size("1000"), Ok(1000));
        assert_eq!(parse_size(".5K"), Ok(512));
        for bad in ["", "K", "1.5.2G", "-1", "0", "1X", "1B", "0.1"] {
            assert!(parse_size(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_dimension_given_twice_is_refused() {
        let err = parse_chunk_spec("time=10,time=20").unwrap_err();
        assert!(err.contains("\"time\" given twice"), "{err}");
        let spec = parse_chunk_spec("time=month,lat=4").unwrap().0;
        assert_eq!(
            spec,
            [("time".to_string(), ChunkLength::Calendar(CalendarUnit::Month)), ("lat".to_string(), 4.into())]
        );
    }
}
