//! The `vzarr` command line (feature `cli`): clap arguments -> library options -> one library call.
//!
//! Needs feature `cli`.
//!
//! The `vzarr` binary and the Python package's `vzarr` command both run [`run_command_line`].
//!
//! Exit codes: 0 success; 1 failure (bad input, I/O error, or `verify` found differences);
//! 2 usage error; 3 finished, but variables were left out (`--skip-unsupported`).

/// `println!` that returns the write error (a closed pipe ends the command quietly, see `main`).
/// A line on standard output, control characters in it escaped (`cli/escape`; its newlines kept).
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let text = format!($($arg)*);
        writeln!(std::io::stdout().lock(), "{}", $crate::cli::escape::escaped(&text, true))?
    }};
}

/// A line on standard error, every control character in it escaped (`cli/escape`): one line.
macro_rules! errln {
    ($($arg:tt)*) => {{
        let text = format!($($arg)*);
        eprintln!("{}", $crate::cli::escape::escaped(&text, false))
    }};
}

mod append;
pub(crate) mod args;
mod check_sidecars;
mod compact;
mod escape;
mod export;
mod info;
mod materialize;
mod merge;
mod open;
mod output;
mod panics;
mod progress;
mod read;
mod scan;
mod sidecars;
mod trust;
#[cfg(feature = "verify")]
mod verify;
mod write;

use std::ffi::OsString;

use args::{Cli, Command};
use clap::Parser;

/// Parses `args` (the program name first, as in `std::env::args_os`), runs the command and returns its
/// exit code; errors are printed to standard error as one line.
pub fn run_command_line<I, T>(args: I) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(err) => {
            // --help and --version print to standard output and succeed; usage errors exit 2.
            let _ = err.print();
            return u8::try_from(err.exit_code()).unwrap_or(2);
        }
    };
    // The owned-bytes budget comes from the environment (`ScanOptions`' default): refused here when
    // it is not a size, instead of being taken as unset.
    if let Err(message) = crate::source::owned_bytes_budget_from_env() {
        errln!("error: {message}");
        return 2;
    }
    let result = match panics::caught(|| run(cli)) {
        Ok(result) => result,
        Err(message) => {
            errln!("error: internal error: {message} (a bug in vzarr: please report it)");
            return 101;
        }
    };
    #[cfg(debug_assertions)]
    if std::env::var_os("VZARR_TEST_COUNTERS").is_some_and(|v| v == "1") {
        // Test builds only: syncs per store and source opens per verify, for tests that check work grows
        // linearly; the peak resident memory of this process (its own address space's, which a
        // parent's `wait4` does not give: Linux carries the spawning process's peak across `exec`).
        // `vm_peak_kib`: the peak of its address space (what an RLIMIT_AS limits).
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        let field = |name: &str| -> u64 {
            let line = status.lines().find_map(|l| l.strip_prefix(name));
            line.and_then(|v| v.split_whitespace().next()?.parse().ok()).unwrap_or(0)
        };
        errln!(
            "counters: syncs={} oracle_opens={} peak_kib={} vm_peak_kib={}",
            crate::store::sync_count(),
            oracle_opens(),
            field("VmHWM:"),
            field("VmPeak:")
        );
    }
    match result {
        Ok(outcome) => outcome as u8,
        Err(err) if is_broken_pipe(&err) => 0,
        Err(err) => {
            errln!("error: {}", describe(&err));
            1
        }
    }
}

/// How a successful run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Everything done.
    Done = 0,
    /// Ran to the end, but found differences (verify, check-sidecars).
    Failed = 1,
    /// A usage error found after the arguments were parsed (options that do not fit the store).
    Usage = 2,
    /// Done, with variables left out.
    Partial = 3,
    /// Nothing differs, but some arrays cannot be proven on this machine (verify: the oracle's
    /// libhdf5 lacks a filter of the source).
    #[cfg_attr(not(feature = "verify"), allow(dead_code))]
    Unprovable = 4,
}

/// Runs the parsed command.
fn run(cli: Cli) -> anyhow::Result<Outcome> {
    let runtime = crate::pipeline::runtime()?;
    match cli.command {
        Command::Scan(a) => scan::run(a),
        Command::Append(a) => append::run(a),
        Command::Compact(a) => compact::run(a),
        Command::Info(a) => runtime.block_on(info::run(a)),
        Command::Read(a) => runtime.block_on(read::run(a)),
        #[cfg(feature = "verify")]
        Command::Verify(a) => runtime.block_on(verify::run(a)),
        Command::Export(a) => runtime.block_on(export::run(a)),
        Command::Materialize(a) => runtime.block_on(materialize::run(a)),
        Command::Trust(a) => runtime.block_on(trust::run(a)),
        Command::Merge(a) => merge::run(a),
        Command::CheckSidecars(a) => check_sidecars::run(a),
        #[cfg(not(feature = "verify"))]
        Command::Verify(_) => anyhow::bail!(
            "verify compares with libnetcdf and libhdf5, which this build of vzarr leaves out: use a vzarr \
             built with the `verify` feature (`cargo install vzarr`) and the libraries installed"
        ),
    }
}

/// Source files the verify oracle opened in this process (test builds' counters).
#[cfg(debug_assertions)]
fn oracle_opens() -> u64 {
    #[cfg(feature = "verify")]
    return crate::verify::oracle_opens();
    #[cfg(not(feature = "verify"))]
    0
}

/// True when the command stopped because its output pipe was closed (`vzarr info | head`).
fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|c| c.downcast_ref::<std::io::Error>().is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe))
}

/// One line: the error and its causes, without repeating a cause already in the message.
fn describe(err: &anyhow::Error) -> String {
    let mut line = err.to_string();
    for cause in err.chain().skip(1) {
        let text = cause.to_string();
        if !line.contains(&text) {
            line.push_str(": ");
            line.push_str(&text);
        }
    }
    // Names in the message are the files': escaped. The hint is vzarr's own text.
    let mut line = escape::escaped(&line, false).into_owned();
    if let Some(hint) = err.chain().find_map(hint) {
        line.push_str(&hint.replace('\n', " "));
    }
    line
}

/// The command-line flag that answers a library error, when one does (library messages name no flag).
fn hint(err: &(dyn std::error::Error + 'static)) -> Option<String> {
    use crate::combine::CombineError;
    use crate::pipeline::PipelineError;
    use crate::read::ReadError;
    use crate::scan::ScanError;
    use crate::store::{IcechunkError, WriteError};
    use crate::trust::TrustError;
    if let Some(e) = err.downcast_ref::<PipelineError>() {
        return match e {
            PipelineError::Scan(e) => hint(e),
            PipelineError::Combine(e) => hint(e),
            PipelineError::Write { source, .. } => hint(source),
            PipelineError::Icechunk(e) => hint(e),
            PipelineError::Append(e) => hint(e),
            PipelineError::Parts(e) => hint(e),
            _ => None,
        };
    }
    if let Some(ReadError::Untrusted(e)) = err.downcast_ref::<ReadError>() {
        return hint(e);
    }
    if let Some(crate::export::ExportError::Write(e)) = err.downcast_ref::<crate::export::ExportError>() {
        return hint(e);
    }
    if let Some(WriteError::Icechunk(e)) = err.downcast_ref::<WriteError>() {
        return hint(e.as_ref());
    }
    let text = match err {
        e if matches!(e.downcast_ref(), Some(WriteError::Exists { .. })) => " (pass --overwrite to replace it)".into(),
        e if matches!(e.downcast_ref(), Some(ScanError::Unsupported { .. })) => {
            " (pass --skip-unsupported to leave such variables out)".into()
        }
        e if matches!(e.downcast_ref(), Some(CombineError::MissingVariable { .. })) => {
            " (pass --drop-missing to leave such variables out)".into()
        }
        e if matches!(e.downcast_ref(), Some(IcechunkError::Exists { .. })) => {
            " (pass --branch or --message to commit a new snapshot to it)".into()
        }
        e if matches!(e.downcast_ref(), Some(crate::append::AppendError::Gap { .. })) => {
            " (pass --allow-gaps to append anyway)".into()
        }
        e if matches!(e.downcast_ref(), Some(ReadError::TooLarge { .. })) => " (raise it with --max-memory)".into(),
        e if matches!(e.downcast_ref(), Some(crate::parts::ShardError::NoShard(_))) => " (pass --shard I/N)".into(),
        e if matches!(e.downcast_ref(), Some(crate::parts::ShardError::NoCount(_))) => " (pass --shard-count N)".into(),
        e => match (e.downcast_ref::<CombineError>(), e.downcast_ref::<TrustError>()) {
            (Some(CombineError::Mismatch { variable, take_first_possible: true, .. }), _) => {
                format!(" (pass --take-first {variable} to take the first file's)")
            }
            (_, Some(TrustError::Unauthorized { container, .. })) => {
                format!(" (--allow-source {container}, or `vzarr trust STORE`)")
            }
            _ => return None,
        },
    };
    Some(text)
}
