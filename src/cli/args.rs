//! Command-line arguments. No logic here: each subcommand turns these into library options.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// Virtual Zarr v3 datasets over archives of HDF5 and NetCDF files.
#[derive(Debug, Parser)]
#[command(name = "vzarr", version, about, after_help = EXIT_CODES)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

const EXIT_CODES: &str = "Exit codes: 0 success; 1 failure (bad input, I/O error, verify found differences); \
2 usage error; 3 done, but variables were left out (--skip-unsupported).";

/// Largest `--max-slab-mib` (1 TiB): `MiB << 20` cannot overflow.
const MAX_SLAB_MIB: u64 = 1 << 20;

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
    /// Internal: the libnetcdf side of `verify`, run in a child process (requests on stdin).
    #[command(hide = true)]
    OracleWorker,
}

/// What `scan` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub(crate) enum ScanFormat {
    /// A native *.vzarr store (directory).
    #[default]
    Native,
    /// kerchunk reference JSON (one file), as `vzarr export --kerchunk` writes.
    KerchunkJson,
    /// An Icechunk repository (a directory or an s3:// URL): created, or given a new snapshot with
    /// --branch / --message.
    Icechunk,
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
    /// Reach object stores without credentials (public buckets).
    #[arg(long)]
    pub(crate) anonymous: bool,
    /// The store to write (a directory, conventionally named *.vzarr).
    #[arg(short, long)]
    pub(crate) output: PathBuf,
    /// Replace an existing store of the same format (atomically). Never replaces anything else: an
    /// ordinary directory or file, or one of the inputs.
    #[arg(long)]
    pub(crate) overwrite: bool,
    /// Leave out variables vzarr cannot virtualize (listed as warnings; exit code 3) instead of failing.
    #[arg(long)]
    pub(crate) skip_unsupported: bool,
    /// Concatenate the files along this dimension. Repeatable: the first is outermost. `DIM`: an
    /// existing dimension, files ordered by its coordinate values (`time`; tiles along `y` and `x`).
    /// `DIM=attr:NAME`: a new dimension keyed by a global attribute (`member=attr:variant_label`).
    /// `DIM=path:REGEX`: a new dimension keyed by the first capture group of REGEX over the file
    /// name (`member=path:'_(r\d+i\d+p\d+f\d+)_'`). Files holding different variables are merged.
    #[arg(long, value_name = "DIM[=attr:NAME|=path:REGEX]")]
    pub(crate) concat: Vec<vzarr::combine::ConcatDim>,
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
    /// Largest slab, in MiB, that an unchunked (contiguous) variable is split into (1 to 1048576).
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u64).range(1..=MAX_SLAB_MIB))]
    pub(crate) max_slab_mib: u64,
    /// What to write at --output.
    #[arg(long, value_enum, default_value_t = ScanFormat::Native)]
    pub(crate) format: ScanFormat,
    /// With --format kerchunk-json: rewrite source locations starting with OLD to start with NEW
    /// (e.g. `/archive/=s3://bucket/archive/`). Repeatable; the first match applies.
    #[arg(long, value_name = "OLD=NEW")]
    pub(crate) url_prefix: Vec<vzarr::store::UrlPrefix>,
    /// With --format icechunk: the branch to commit to (default `main`); an existing repository
    /// gets a new snapshot on it.
    #[arg(long, value_name = "BRANCH")]
    pub(crate) branch: Option<String>,
    /// With --format icechunk: the commit message; an existing repository gets a new snapshot.
    #[arg(long, value_name = "TEXT")]
    pub(crate) message: Option<String>,
}

#[derive(Debug, Args)]
pub(crate) struct InfoArgs {
    /// The store.
    pub(crate) store: String,
    /// Print JSON instead of text.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct ReadArgs {
    /// The store.
    pub(crate) store: String,
    /// The variable (`tas`, `group/tas`).
    pub(crate) variable: String,
    /// NumPy-style selection per dimension, e.g. `0:31,:,10` or `-1` (default: everything).
    #[arg(short, long, default_value = "", allow_hyphen_values = true)]
    pub(crate) select: String,
    /// The .npy file to write.
    #[arg(short, long)]
    pub(crate) output: PathBuf,
    /// Replace an existing .npy file (atomically; never anything else).
    #[arg(long)]
    pub(crate) overwrite: bool,
}

#[derive(Debug, Args)]
pub(crate) struct VerifyArgs {
    /// The store.
    pub(crate) store: String,
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
    /// The kerchunk reference JSON file to write (version 1, Zarr v3 keys).
    #[arg(long, value_name = "REFS.json")]
    pub(crate) kerchunk: PathBuf,
    /// Rewrite source locations (paths or URLs) starting with OLD to start with NEW, e.g.
    /// `/archive/=s3://bucket/archive/`. Repeatable; the first match applies. Default: absolute
    /// file:// URLs.
    #[arg(long, value_name = "OLD=NEW")]
    pub(crate) url_prefix: Vec<vzarr::store::UrlPrefix>,
    /// Replace an existing kerchunk reference file (atomically; never anything else).
    #[arg(long)]
    pub(crate) overwrite: bool,
}

#[derive(Debug, Args)]
pub(crate) struct MaterializeArgs {
    /// The store.
    pub(crate) store: String,
    /// The Zarr v3 directory store to write.
    pub(crate) output: PathBuf,
    /// Replace an existing Zarr v3 store (atomically; never any other directory).
    #[arg(long)]
    pub(crate) overwrite: bool,
    /// Chunks copied at once (1 to 1024).
    #[arg(long, default_value_t = 16, value_parser = parse_jobs)]
    pub(crate) jobs: usize,
    /// Pack chunks into Zarr v3 shards (`sharding_indexed`), copied verbatim: `file` for one shard per
    /// source file along the concatenation dimension (whole extent on the others), or a shard shape
    /// such as `365,180,360` (arrays of that many dimensions). Arrays whose chunks cannot be packed
    /// verbatim are written unsharded, with the reason printed.
    #[arg(long, value_name = "file|N,N,..")]
    pub(crate) shards: Option<vzarr::store::ShardSpec>,
    /// Shards assembled and written at once (memory holds about this many shards).
    #[arg(long, default_value_t = 4)]
    pub(crate) shard_jobs: usize,
}
