//! `vzarr check-sidecars`: each DMR++ sidecar compared with vzarr's own scan of its data file
//! (`scan::dmrpp::check`); every difference printed as `sidecar: variable: chunk N: what: sidecar
//! X, file Y`, exit code 1 when any sidecar differs or cannot be checked. A sidecar none of whose
//! variables could be compared is never said to match (exit code 1: nothing was checked).

use super::args::CheckSidecarsArgs;
use super::Outcome;
use crate::scan::dmrpp::check::check_sidecar;

pub(crate) fn run(args: CheckSidecarsArgs) -> anyhow::Result<Outcome> {
    let runtime = crate::pipeline::runtime()?;
    let remote = args.remote.options();
    let sidecars = super::scan::input_files(&args.sidecars, None, &remote, runtime.handle())?;
    let options = crate::scan::ScanOptions {
        runtime: Some(runtime.handle().clone()),
        remote,
        max_concurrent_requests: super::args::scans_at_once(args.remote.max_concurrent_requests),
        // Data files named by absolute URLs may lie in the containers the user trusts.
        link_authorization: super::trust::authorization(&[])?,
        ..Default::default()
    };
    let checks: Vec<_> = {
        use rayon::prelude::*;
        sidecars.par_iter().map(|sidecar| (sidecar, check_sidecar(sidecar, &options))).collect()
    };
    let (mut differing, mut failed, mut incomplete) = (0usize, 0usize, 0usize);
    for (sidecar, check) in checks {
        let name = sidecar.display();
        if let Ok(check) = &check {
            for skipped in &check.not_compared {
                outln!("{name}: not compared: {skipped}");
            }
        }
        match check {
            Ok(check) if check.differences.is_empty() && check.compared == 0 && !check.not_compared.is_empty() => {
                incomplete += 1;
                outln!("{name}: nothing compared with {}: every variable left out", check.data_file);
            }
            Ok(check) if check.differences.is_empty() => {
                outln!("{name}: matches {} ({} variables compared)", check.data_file, check.compared);
            }
            Ok(check) => {
                differing += 1;
                for difference in &check.differences {
                    outln!("{name}: {difference}");
                }
            }
            Err(e) => {
                failed += 1;
                errln!("error: {e}");
            }
        }
    }
    outln!(
        "{} sidecar(s): {differing} differ from their files, {incomplete} with nothing compared, {failed} could not be checked",
        sidecars.len()
    );
    Ok(if differing + failed + incomplete > 0 { Outcome::Failed } else { Outcome::Done })
}
