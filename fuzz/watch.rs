//! The case being run, as the watchdog and the allocation guard see it: a case that runs longer than
//! its time limit, or allocates past the guard's limits, has its input saved and ends the process
//! with a failure (a hung thread cannot be stopped, and an allocator must not unwind).

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The running case: its target, case label, input and start time.
struct Running {
    target: &'static str,
    label: String,
    input: Arc<Vec<u8>>,
    started: Instant,
}

static RUNNING: Mutex<Option<Running>> = Mutex::new(None);

/// Marks `input` of `target` as running (armed: the guard and the watchdog judge it). With
/// `VZARR_FUZZ_LAST=FILE`, the input is first written to FILE: a failure that ends the process
/// before any handler runs (a stack overflow aborts it) leaves its input there, when the run is
/// repeated with the seed it printed.
pub fn start(target: &'static str, label: String, input: Arc<Vec<u8>>) {
    if let Some(last) = std::env::var_os("VZARR_FUZZ_LAST") {
        if let Err(e) = std::fs::write(&last, input.as_slice()) {
            eprintln!("  (could not write the case to {}: {e})", PathBuf::from(last).display());
        }
    }
    *RUNNING.lock().unwrap_or_else(|e| e.into_inner()) =
        Some(Running { target, label, input, started: Instant::now() });
    crate::alloc_guard::ARMED.store(true, Ordering::SeqCst);
}

/// Marks the running case as finished.
pub fn finish() {
    crate::alloc_guard::ARMED.store(false, Ordering::SeqCst);
    *RUNNING.lock().unwrap_or_else(|e| e.into_inner()) = None;
}

/// Starts the watchdog thread: a case running longer than `limit` is a hang.
pub fn spawn_watchdog(limit: Duration) {
    std::thread::spawn(move || loop {
        std::thread::sleep(Duration::from_millis(100));
        let overdue =
            RUNNING.lock().unwrap_or_else(|e| e.into_inner()).as_ref().is_some_and(|r| r.started.elapsed() > limit);
        if overdue {
            crate::alloc_guard::ARMED.store(false, Ordering::SeqCst);
            fail_now(&format!("still running after {} s (a hang)", limit.as_secs()), false);
        }
    });
}

/// Saves the running case's input, says what went wrong (with the calling thread's backtrace when
/// `trace` and `RUST_BACKTRACE` is set) and exits the process with status 1.
pub fn fail_now(what: &str, trace: bool) -> ! {
    let running = RUNNING.try_lock().ok().and_then(|mut r| r.take());
    match running {
        Some(r) => {
            let path = save_failure(r.target, &r.input);
            eprintln!("FUZZ FAILURE [{}] {}: {what}", r.target, r.label);
            let backtrace = std::backtrace::Backtrace::capture();
            if trace && backtrace.status() == std::backtrace::BacktraceStatus::Captured {
                eprintln!("{backtrace}");
            }
            eprintln!("  input saved to {}", path.display());
            eprintln!("  replay: ./dev fuzz --replay {} {}", r.target, path.display());
        }
        None => eprintln!("FUZZ FAILURE (no case recorded): {what}"),
    }
    std::process::exit(1)
}

/// Writes a failing input to `target/fuzz-failures/<target>/<hash>.bin` and returns its path.
pub fn save_failure(target: &str, input: &[u8]) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/fuzz-failures").join(target);
    let path = dir.join(format!("{:016x}.bin", fnv1a(input)));
    if let Err(e) = std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(&path, input)) {
        eprintln!("  (could not save the input to {}: {e})", path.display());
    }
    path
}

/// FNV-1a of `bytes`: names saved inputs by content.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3))
}
