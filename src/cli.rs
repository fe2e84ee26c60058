//! The command-line front end (binary only): clap arguments -> library options -> one library call.

/// `println!` that returns the write error (a closed pipe ends the command quietly, see `main`).
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        writeln!(std::io::stdout().lock(), $($arg)*)?
    }};
}

mod append;
pub(crate) mod args;
mod export;
mod glob_walk;
mod info;
mod materialize;
mod merge;
mod open;
mod output;
mod progress;
mod read;
mod scan;
mod trust;
mod verify;

use args::{Cli, Command};

/// How a successful run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Everything done.
    Done = 0,
    /// Ran to the end, but found differences (verify).
    Failed = 1,
    /// Done, with variables left out.
    Partial = 3,
}

/// Runs the parsed command.
pub(crate) fn run(cli: Cli) -> anyhow::Result<Outcome> {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    if let Some(remote) = cli.command.remote() {
        vzarr::source::set_remote_defaults(remote.options());
    }
    match cli.command {
        Command::Scan(a) => scan::run(a),
        Command::Append(a) => append::run(a),
        Command::Info(a) => runtime.block_on(info::run(a)),
        Command::Read(a) => runtime.block_on(read::run(a)),
        Command::Verify(a) => runtime.block_on(verify::run(a)),
        Command::Export(a) => runtime.block_on(export::run(a)),
        Command::Materialize(a) => runtime.block_on(materialize::run(a)),
        Command::Trust(a) => runtime.block_on(trust::run(a)),
        Command::Merge(a) => merge::run(a),
        Command::OracleWorker => verify::worker(),
    }
}

/// True when the command stopped because its output pipe was closed (`vzarr info | head`).
pub(crate) fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|c| c.downcast_ref::<std::io::Error>().is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe))
}

/// One line: the error and its causes, without repeating a cause already in the message.
pub(crate) fn describe(err: &anyhow::Error) -> String {
    let mut line = err.to_string();
    for cause in err.chain().skip(1) {
        let text = cause.to_string();
        if !line.contains(&text) {
            line.push_str(": ");
            line.push_str(&text);
        }
    }
    line.replace('\n', " ")
}
