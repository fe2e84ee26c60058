//! Runs one target: every regression input, every seed as it is, then mutated seeds until the time
//! budget is spent. A panic (on any thread) fails the case, which is saved and reported, and the
//! run goes on; a hang or an oversized allocation ends the process ([`crate::watch`]).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::rng::Rng;
use crate::targets::{Context, Target};
use crate::watch;

/// The panics on any thread since the last [`take_panics`]: whether each came from a dependency
/// (a crate of the registry), and its message.
static PANICS: Mutex<Vec<(bool, String)>> = Mutex::new(Vec::new());

/// Records panics (message and place) instead of printing them.
pub fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        let message = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| (*s).to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "(no message)".to_string());
        let place = info.location().map(|l| format!(" at {}:{}", l.file(), l.line())).unwrap_or_default();
        // RUST_BACKTRACE=1 adds where it came from.
        let trace = std::backtrace::Backtrace::capture();
        let trace = match trace.status() {
            std::backtrace::BacktraceStatus::Captured => format!("\n{trace}"),
            _ => String::new(),
        };
        let dependency = info.location().is_some_and(|l| l.file().contains("/.cargo/registry/"));
        let panic = (dependency, format!("panicked: {message}{place}{trace}"));
        PANICS.lock().unwrap_or_else(|e| e.into_inner()).push(panic);
    }));
}

fn take_panics() -> Vec<(bool, String)> {
    std::mem::take(&mut *PANICS.lock().unwrap_or_else(|e| e.into_inner()))
}

/// The folder of the fuzz harness (`fuzz/` of the package).
pub fn fuzz_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fuzz")
}

/// The files of `dir`, sorted by name (none when it does not exist).
pub fn inputs(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut files: Vec<(String, Vec<u8>)> = entries
        .filter_map(Result::ok)
        .filter(|e| e.path().is_file())
        .filter_map(|e| Some((e.file_name().to_string_lossy().into_owned(), std::fs::read(e.path()).ok()?)))
        .collect();
    files.sort();
    files
}

/// What one target's run found.
pub struct Outcome {
    /// Cases run (regressions, seeds and mutations).
    pub cases: u64,
    /// Failing cases: label and message.
    pub failures: Vec<String>,
}

/// Runs one case, returning its failure message.
pub fn run_case(target: &Target, ctx: &Context, label: String, input: Vec<u8>, case: u64) -> Option<String> {
    let (max_allocation, max_live) = ceiling(target.name, input.len());
    crate::alloc_guard::set_case_ceiling(max_allocation, max_live);
    let input = Arc::new(input);
    watch::start(target.name, label.clone(), Arc::clone(&input));
    let result = catch_unwind(AssertUnwindSafe(|| (target.run)(ctx, &input, case)));
    watch::finish();
    // A panic that escapes fails the case, and so does one in vzarr's own code (or the standard
    // library's) even when something caught it; a dependency's panic that vzarr contains (turned
    // into an error) does not.
    let panics = take_panics();
    let own = panics.iter().find(|(dependency, _)| !dependency);
    if result.is_ok() && own.is_none() {
        panics.iter().for_each(|(_, message)| crate::targets::show("contained", message));
        return None;
    }
    let path = watch::save_failure(target.name, &input);
    let message = own.or(panics.first()).map_or_else(|| "panicked".to_string(), |(_, m)| m.clone());
    eprintln!("FUZZ FAILURE [{}] {label}: {message}", target.name);
    eprintln!("  input saved to {}", path.display());
    eprintln!("  replay: ./dev fuzz --replay {} {}", target.name, path.display());
    Some(format!("{label}: {message} (input {})", path.display()))
}

/// Targets whose readers must bound what they allocate by what they read (issue 52: a DMR++ sidecar
/// of empty elements took 26 bytes per byte of XML, a kerchunk Parquet page of zeros declared 30,000
/// times its file): a case may allocate at most 64 MiB plus 16 bytes per input byte at once, and hold
/// at most 256 MiB plus 32 per input byte (the harness's own data included).
const BOUNDED_BY_INPUT: [&str; 2] = ["dmrpp", "kerchunk-parquet"];

/// The largest allocation and live total a case of `target` with an input of `len` bytes may make.
fn ceiling(target: &str, len: usize) -> (usize, usize) {
    if !BOUNDED_BY_INPUT.contains(&target) {
        return (usize::MAX, usize::MAX);
    }
    ((64 << 20) + 16 * len, (256 << 20) + 32 * len)
}

/// Runs `target`'s regressions and seeds, then mutations for `budget`.
pub fn run_target(target: &Target, ctx: &Context, budget: Duration, seed: u64) -> Outcome {
    let mut outcome = Outcome { cases: 0, failures: Vec::new() };
    let regressions = inputs(&fuzz_dir().join("regressions").join(target.name));
    let seeds = inputs(&fuzz_dir().join("corpus").join(target.name));
    // Seeds too large to commit (a sidecar of 20 MB), made at run time; never mutated.
    let generated = crate::seeds::generated(target.name);
    for (kind, files) in [("regression", &regressions), ("seed", &seeds), ("generated seed", &generated)] {
        for (name, bytes) in files {
            // Both option variants of the targets that vary by case (even and odd).
            for variant in 0..2 {
                outcome.cases += 1;
                let failure = run_case(target, ctx, format!("{kind} {name}"), bytes.clone(), variant);
                outcome.failures.extend(failure);
            }
        }
    }
    if seeds.is_empty() {
        outcome.failures.push(format!("no seeds in fuzz/corpus/{}", target.name));
        return outcome;
    }
    let pool: Vec<&[u8]> = seeds.iter().map(|(_, b)| b.as_slice()).collect();
    let start = Instant::now();
    let mut case = 0u64;
    while start.elapsed() < budget {
        let mut rng = Rng::for_case(seed, target.name, case);
        let k = rng.below(pool.len());
        let mut input = (target.mutate)(&mut rng, pool[k], &pool);
        while rng.one_in(4) {
            input = (target.mutate)(&mut rng, &input, &pool);
        }
        let label = format!("case {case} (seed {seed}, from {})", seeds[k].0);
        outcome.failures.extend(run_case(target, ctx, label, input, case));
        outcome.cases += 1;
        case += 1;
    }
    outcome
}

/// Runs one saved input of `target` once.
pub fn replay(target: &Target, ctx: &Context, path: &Path) -> Option<String> {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    (0..2).find_map(|variant| run_case(target, ctx, format!("replay {}", path.display()), bytes.clone(), variant))
}
