//! `vzarr verify`: every array read through the store equals the source files, bit for bit. The
//! oracle (libnetcdf, libhdf5, libhdf4) runs in the `vzarr-oracle` program beside this one, so that
//! `vzarr` itself links none of the C libraries and starts fast for every other command.

use std::path::PathBuf;

use super::args::VerifyArgs;
use super::progress::bar;
use super::Outcome;
use crate::read::ReadOptions;
use crate::verify::verify_store_in_worker;

/// The oracle program's name: installed beside `vzarr` (`cargo install vzarr` installs both).
const ORACLE: &str = "vzarr-oracle";

pub(crate) async fn run(args: VerifyArgs) -> anyhow::Result<Outcome> {
    let store = args.open.open().await?;
    store.set_check_sources(!args.open.no_check_sources);
    let progress = bar(0, "verifying");
    let report = |path: &str, done: u64, total: u64| {
        progress.set_length(total);
        progress.set_position(done);
        progress.set_message(path.to_string());
    };
    // libnetcdf runs in a child process: a corrupt source that hangs libhdf5 times out instead.
    let oracle = (oracle_program()?, std::time::Duration::from_secs(args.oracle_timeout));
    let verdicts = verify_store_in_worker(&store, &ReadOptions::default(), oracle, &report).await?;
    progress.finish_and_clear();
    let unprovable = verdicts.iter().filter(|v| v.unprovable_here()).count();
    let failed = verdicts.iter().filter(|v| !v.ok()).count() - unprovable;
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&verdicts)?);
    } else {
        for v in &verdicts {
            match (&v.error, &v.first_mismatch) {
                (None, None) if v.unprovable.is_some() => {
                    outln!("SKIP {}: {}", v.path, v.unprovable.as_deref().unwrap_or_default())
                }
                (Some(e), _) => outln!("FAIL {}: {e}", v.path),
                (None, Some(m)) => {
                    outln!("FAIL {}: {} of {} elements differ; first at {m}", v.path, v.mismatches, v.elements)
                }
                (None, None) if v.undefined_in_source > 0 => outln!(
                    "ok   {}: {} elements equal ({} never written in the source, whose fill time is 'never': \
                     undefined there, not compared)",
                    v.path,
                    v.elements - v.undefined_in_source,
                    v.undefined_in_source
                ),
                (None, None) => match &v.oracle {
                    Some(oracle) => outln!("ok   {}: {} elements equal ({oracle})", v.path, v.elements),
                    None => outln!("ok   {}: {} elements equal", v.path, v.elements),
                },
            }
        }
        let elements: u64 = verdicts.iter().map(|v| v.elements).sum();
        let skipped = if unprovable > 0 { format!(", {unprovable} not provable here") } else { String::new() };
        outln!(
            "{} arrays, {elements} elements compared with the source files: {failed} failed{skipped}",
            verdicts.len()
        );
    }
    Ok(match (failed, unprovable) {
        (0, 0) => Outcome::Done,
        (0, _) => Outcome::Unprovable,
        _ => Outcome::Failed,
    })
}

/// The `vzarr-oracle` program: `VZARR_ORACLE` when set, else the one beside this executable.
fn oracle_program() -> anyhow::Result<PathBuf> {
    let exe = std::env::current_exe()?;
    let (program, named_by) = match std::env::var_os("VZARR_ORACLE") {
        Some(program) => (PathBuf::from(program), "VZARR_ORACLE names it".to_string()),
        None => (exe.with_file_name(ORACLE), format!("it is not beside {}", exe.display())),
    };
    anyhow::ensure!(
        program.is_file(),
        "verify reads the sources with libnetcdf in {ORACLE}, and {named_by} but there is no {}: install it \
         with vzarr (`cargo install vzarr` installs both) or set VZARR_ORACLE to its path",
        program.display()
    );
    Ok(program)
}
