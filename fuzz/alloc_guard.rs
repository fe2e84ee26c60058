//! The allocation guard: a global allocator around the system's that fails the running case when one
//! allocation exceeds [`MAX_ALLOCATION`] or the live total exceeds [`MAX_LIVE`] (a size taken from an
//! untrusted number). The case's input is saved first ([`crate::watch::fail_now`]), then the process
//! exits non-zero: an allocator must not unwind, so the case cannot be failed and skipped.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Largest single allocation a case may make.
pub const MAX_ALLOCATION: usize = 1 << 30;
/// Largest total of live allocations (each at most [`MAX_ALLOCATION`]) while a case runs.
pub const MAX_LIVE: usize = 4 << 30;

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
            let what = if size > MAX_ALLOCATION {
                format!("one allocation of {size} bytes (limit {MAX_ALLOCATION})")
            } else {
                format!("{live} live bytes after an allocation of {size} (limit {MAX_LIVE})")
            };
            crate::watch::fail_now(&what, true);
        }
    }
}

// SAFETY: every call is forwarded to `System` with the caller's arguments; the guard only counts.
unsafe impl GlobalAlloc for Guard {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        Self::check(layout.size(), layout.size());
        LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        // SAFETY: forwarded as received.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        Self::check(layout.size(), layout.size());
        LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        // SAFETY: forwarded as received.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: forwarded as received.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        Self::check(new_size, new_size.saturating_sub(layout.size()));
        LIVE.fetch_add(new_size, Ordering::Relaxed);
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: forwarded as received.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}
