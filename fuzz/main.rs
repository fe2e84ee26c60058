//! vzarr's fuzz targets: a seeded, structure-aware mutation harness over every parser of untrusted
//! bytes (docs/explanation/fuzzing.md). `cargo test` runs every target for a few seconds
//! (`VZARR_FUZZ_SECONDS`, default 3); `./dev fuzz [TARGET] [SECONDS]` runs longer.
//!
//! ```text
//! fuzz [TARGET|all] [SECONDS] [--seed N] [--case-limit SECONDS]
//! fuzz --replay TARGET FILE        run one saved input
//! fuzz --list                      the targets
//! fuzz --bundle DIR OUT            write the files under DIR as one bundle input (seeds)
//! fuzz --codec-seeds               write the decoder targets' seeds (encoded with vzarr's encoders)
//! ```
//!
//! Each target replays its regressions (`fuzz/regressions/<target>/`: inputs that once failed, kept
//! after the fix) and its seeds (`fuzz/corpus/<target>/`), then runs mutated seeds until its time is
//! spent. A case fails on a panic on any thread, on running longer than the case limit (a watchdog),
//! or on an allocation over 1 GiB (the global allocator below; lower for the readers bounded by their
//! input, `harness::ceiling`); the input is saved under
//! `target/fuzz-failures/<target>/` and the command to replay it printed.

mod alloc_guard;
mod bundle;
mod harness;
mod mutate;
mod rng;
mod seeds;
mod targets;
mod watch;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

#[global_allocator]
static GUARD: alloc_guard::Guard = alloc_guard::Guard;

/// The seed of runs that name none: fixed, so that `cargo test` explores the same cases each time.
const DEFAULT_SEED: u64 = 0x7a61_7272;

/// What the command line asked for.
struct Args {
    target: String,
    seconds: f64,
    seed: u64,
    case_limit: u64,
    replay: Option<(String, PathBuf)>,
    list: bool,
    bundle: Option<(PathBuf, PathBuf)>,
    codec_seeds: bool,
}

fn parse_args() -> Args {
    let default_seconds = std::env::var("VZARR_FUZZ_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(3.0);
    let mut args = Args {
        target: "all".to_string(),
        seconds: default_seconds,
        seed: DEFAULT_SEED,
        case_limit: 20,
        replay: None,
        list: false,
        bundle: None,
        codec_seeds: false,
    };
    let mut raw = std::env::args().skip(1);
    let mut positional = Vec::new();
    while let Some(arg) = raw.next() {
        let mut value = || raw.next().unwrap_or_else(|| panic!("{arg} needs a value"));
        match arg.as_str() {
            "--seed" => args.seed = parse_seed(&value()),
            "--case-limit" => args.case_limit = value().parse().expect("--case-limit SECONDS"),
            "--replay" => args.replay = Some((value(), PathBuf::from(value()))),
            "--bundle" => args.bundle = Some((PathBuf::from(value()), PathBuf::from(value()))),
            "--codec-seeds" => args.codec_seeds = true,
            "--list" => args.list = true,
            // Flags cargo's test runner passes (--quiet, --nocapture, ...) mean nothing here.
            flag if flag.starts_with('-') => {}
            _ => positional.push(arg),
        }
    }
    if let Some(target) = positional.first() {
        args.target = target.clone();
    }
    if let Some(seconds) = positional.get(1) {
        args.seconds = seconds.parse().expect("SECONDS: a number");
    }
    args
}

/// A seed: a number, or `random` (the clock's nanoseconds; printed, so the run can be repeated).
fn parse_seed(text: &str) -> u64 {
    if text == "random" {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        return now.as_nanos() as u64 % 1_000_000_007;
    }
    text.parse().expect("--seed N (a number, or random)")
}

fn main() -> ExitCode {
    let args = parse_args();
    if let Some((dir, out)) = &args.bundle {
        std::fs::write(out, bundle::from_dir(dir).expect("bundle directory")).expect("bundle output");
        return ExitCode::SUCCESS;
    }
    if args.codec_seeds {
        seeds::write_codec_seeds(&harness::fuzz_dir().join("corpus"));
        return ExitCode::SUCCESS;
    }
    let targets = targets::all();
    if args.list {
        targets.iter().for_each(|t| println!("{:<18} {}", t.name, t.about));
        return ExitCode::SUCCESS;
    }
    harness::install_panic_hook();
    watch::spawn_watchdog(Duration::from_secs(args.case_limit));
    seeds::install_sources();
    let scratch = tempfile::tempdir().expect("scratch directory");
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    let mut ctx = targets::Context { scratch: scratch.path().join("case"), runtime };
    if let Some((name, path)) = &args.replay {
        let target =
            targets.iter().find(|t| t.name == name.as_str()).unwrap_or_else(|| panic!("no fuzz target {name}"));
        return match harness::replay(target, &ctx, path) {
            None => {
                println!("replay {}: no failure", path.display());
                ExitCode::SUCCESS
            }
            Some(_) => ExitCode::FAILURE,
        };
    }
    let chosen: Vec<&targets::Target> =
        targets.iter().filter(|t| args.target == "all" || t.name == args.target).collect();
    if chosen.is_empty() {
        eprintln!("no fuzz target {} (see --list)", args.target);
        return ExitCode::FAILURE;
    }
    println!("fuzz: {} targets, {} s each, seed {}", chosen.len(), args.seconds, args.seed);
    let (mut passed, mut failed) = (0, 0);
    let start = Instant::now();
    for target in chosen {
        ctx.scratch = scratch.path().join(target.name);
        let outcome = harness::run_target(target, &ctx, Duration::from_secs_f64(args.seconds), args.seed);
        let verdict = if outcome.failures.is_empty() { "ok" } else { "FAILED" };
        println!("fuzz {:<18} {:>7} cases  {verdict}", target.name, outcome.cases);
        for failure in &outcome.failures {
            println!("    {failure}");
        }
        if outcome.failures.is_empty() {
            passed += 1;
        } else {
            failed += 1;
        }
    }
    println!("fuzz: {passed} passed, {failed} failed ({:.1} s)", start.elapsed().as_secs_f64());
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
