//! The allocation guard: a global allocator around the system's that fails the running case when one
//! allocation exceeds [`MAX_ALLOCATION`] or the live total exceeds [`MAX_LIVE`] (a size taken from an
//! untrusted number). The case's input is saved first ([`crate::watch::fail_now`]), then the process
//! exits non-zero: an allocator must not unwind, so the case cannot be failed and skipped.
//!
//! One known allocation of a dependency is tolerated ([`TOLERATED`]): it is upstream behaviour vzarr
//! cannot change from outside, and the docs say so (docs/internals/fuzzing.md).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Largest single allocation a case may make.
pub const MAX_ALLOCATION: usize = 1 << 30;
/// Largest total of live allocations (each at most [`MAX_ALLOCATION`]) while a case runs.
pub const MAX_LIVE: usize = 4 << 30;

/// Functions whose oversized allocations are tolerated, and why.
const TOLERATED: &[(&str, &str)] = &[(
    "icechunk::asset_manager::decompress_frame",
    "icechunk 2.3 allocates the decoded size a zstd frame declares, up to 16 GiB, before decoding",
)];

/// Whether a case is running (the guard only judges cases, not the harness's own setup).
pub static ARMED: AtomicBool = AtomicBool::new(false);
static LIVE: AtomicUsize = AtomicUsize::new(0);
static TRIPPED: AtomicBool = AtomicBool::new(false);

/// The system allocator with the guard in front.
pub struct Guard;

impl Guard {
    /// Judges an allocation of `size` bytes that adds `growth` live bytes.
    fn check(size: usize, growth: usize) {
        if !ARMED.load(Ordering::Relaxed) {
            return;
        }
        let live = LIVE.load(Ordering::Relaxed).saturating_add(growth);
        if (size > MAX_ALLOCATION || live > MAX_LIVE) && !TRIPPED.swap(true, Ordering::SeqCst) {
            ARMED.store(false, Ordering::SeqCst);
            if size > MAX_ALLOCATION && tolerated() {
                TRIPPED.store(false, Ordering::SeqCst);
                ARMED.store(true, Ordering::SeqCst);
                return;
            }
            let what = if size > MAX_ALLOCATION {
                format!("one allocation of {size} bytes (limit {MAX_ALLOCATION})")
            } else {
                format!("{live} live bytes after an allocation of {size} (limit {MAX_LIVE})")
            };
            crate::watch::fail_now(&what, true);
        }
    }
}

/// Whether the allocation being made comes from a [`TOLERATED`] function (the guard is disarmed:
/// the backtrace's own allocations pass).
fn tolerated() -> bool {
    let trace = std::backtrace::Backtrace::force_capture().to_string();
    TOLERATED.iter().any(|(function, why)| {
        let found = trace.contains(function);
        if found {
            crate::targets::show("tolerated oversized allocation", why);
        }
        found
    })
}

/// The live bytes an allocation of `size` counts for: those over [`MAX_ALLOCATION`] (tolerated ones)
/// are not counted, in allocation and release alike.
fn counted(size: usize) -> usize {
    if size > MAX_ALLOCATION {
        0
    } else {
        size
    }
}

// SAFETY: every call is forwarded to `System` with the caller's arguments; the guard only counts.
unsafe impl GlobalAlloc for Guard {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        Self::check(layout.size(), counted(layout.size()));
        LIVE.fetch_add(counted(layout.size()), Ordering::Relaxed);
        // SAFETY: forwarded as received.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        Self::check(layout.size(), counted(layout.size()));
        LIVE.fetch_add(counted(layout.size()), Ordering::Relaxed);
        // SAFETY: forwarded as received.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(counted(layout.size()), Ordering::Relaxed);
        // SAFETY: forwarded as received.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        Self::check(new_size, counted(new_size).saturating_sub(counted(layout.size())));
        LIVE.fetch_add(counted(new_size), Ordering::Relaxed);
        LIVE.fetch_sub(counted(layout.size()), Ordering::Relaxed);
        // SAFETY: forwarded as received.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}
