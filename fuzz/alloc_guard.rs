//! The allocation guard: a global allocator around the system's that fails the running case when one
//! allocation exceeds [`MAX_ALLOCATION`] or the live total exceeds [`MAX_LIVE`] (a size taken from an
//! untrusted number), or the lower ceiling a target sets for the case by its input's size
//! ([`set_case_ceiling`]: the readers that must bound what they allocate by what they read). The case's input is saved first ([`crate::watch::fail_now`]), then the process
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
static CASE_ALLOCATION: AtomicUsize = AtomicUsize::new(MAX_ALLOCATION);
static CASE_LIVE: AtomicUsize = AtomicUsize::new(MAX_LIVE);

/// Sets the ceilings of the next case (each at most the global one): its largest allocation and its
/// largest live total.
pub fn set_case_ceiling(max_allocation: usize, max_live: usize) {
    CASE_ALLOCATION.store(max_allocation.min(MAX_ALLOCATION), Ordering::SeqCst);
    CASE_LIVE.store(max_live.min(MAX_LIVE), Ordering::SeqCst);
}
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
        let (max_allocation, max_live) = (CASE_ALLOCATION.load(Ordering::Relaxed), CASE_LIVE.load(Ordering::Relaxed));
        if (size > max_allocation || live > max_live) && !TRIPPED.swap(true, Ordering::SeqCst) {
            ARMED.store(false, Ordering::SeqCst);
            let what = if size > max_allocation {
                format!("one allocation of {size} bytes (limit {max_allocation})")
            } else {
                format!("{live} live bytes after an allocation of {size} (limit {max_live})")
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
