//! Reused buffers for the chunk-sized temporaries of decoding and encoding: a decompressor's output
//! before the unshuffle, the shuffled bytes before the compressor, a chunk decoded before it is
//! placed, a chunk assembled before it is encoded, a compressed chunk once it is written.
//!
//! A new buffer of a megabyte or more comes from the kernel as fresh pages, each faulted in and
//! zeroed on first touch, and goes back to it when freed; a copy that decodes and encodes
//! thousands of such chunks spends a tenth of its time in those page faults. Each of rayon's worker
//! threads, which decode and encode chunks in parallel, keeps up to [`KEPT`] buffers of
//! [`KEPT_MIN`] to [`KEPT_BYTES`] bytes instead: what one chunk's work takes, which the memory bounds already count
//! for each such thread. Other threads (a runtime's, the caller's) keep none, so an idle process
//! holds no more than before.

use std::cell::RefCell;

/// Buffers a thread keeps for reuse.
const KEPT: usize = 2;

/// The largest buffer a thread keeps (larger ones are freed as usual).
const KEPT_BYTES: usize = 8 << 20;

/// The smallest buffer a thread keeps. Smaller ones the allocator reuses itself: glibc serves them
/// from its heap once a freed buffer of their size has raised its mmap threshold past them.
const KEPT_MIN: usize = 1 << 20;

thread_local! {
    static KEPT_BUFFERS: RefCell<Vec<Vec<u8>>> = const { RefCell::new(Vec::new()) };
}

/// A buffer of `len` zero bytes: one this thread gave back, or a new one.
pub(crate) fn zeroed(len: usize) -> Vec<u8> {
    match kept(len) {
        Some(mut buffer) => {
            buffer.resize(len, 0);
            buffer
        }
        None => vec![0; len],
    }
}

/// An empty buffer with room for `capacity` bytes (a compressor's output): one this thread gave
/// back, or a new one.
pub(crate) fn with_capacity(capacity: usize) -> Vec<u8> {
    kept(capacity).unwrap_or_else(|| Vec::with_capacity(capacity))
}

/// A kept buffer with room for `len` bytes, emptied. When none has room, every kept buffer is
/// freed: a thread never keeps buffers while it allocates a new one.
fn kept(len: usize) -> Option<Vec<u8>> {
    let mut buffer = KEPT_BUFFERS.with_borrow_mut(|kept| match kept.iter().position(|b| b.capacity() >= len) {
        Some(at) => Some(kept.swap_remove(at)),
        None => {
            kept.clear();
            None
        }
    })?;
    buffer.clear();
    Some(buffer)
}

/// Gives `buffer` back for [`zeroed`] on this thread (kept on a rayon worker thread, when small
/// enough and a place is free).
pub(crate) fn give_back(buffer: Vec<u8>) {
    let size = buffer.capacity();
    if !(KEPT_MIN..=KEPT_BYTES).contains(&size) || rayon::current_thread_index().is_none() {
        return;
    }
    KEPT_BUFFERS.with_borrow_mut(|kept| {
        if kept.len() < KEPT {
            kept.push(buffer);
        } else if let Some(smallest) = kept.iter_mut().min_by_key(|b| b.capacity()) {
            if smallest.capacity() < buffer.capacity() {
                *smallest = buffer;
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `f` on one of rayon's worker threads.
    fn on_worker<T: Send>(f: impl FnOnce() -> T + Send) -> T {
        rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap().install(f)
    }

    #[test]
    fn a_buffer_given_back_is_reused_zeroed() {
        on_worker(reuse_zeroed);
    }

    #[test]
    fn other_threads_keep_nothing() {
        give_back(vec![0; KEPT_MIN]);
        KEPT_BUFFERS.with_borrow(|kept| assert!(kept.is_empty()));
    }

    fn reuse_zeroed() {
        let mut buffer = zeroed(KEPT_MIN);
        buffer.iter_mut().for_each(|b| *b = 7);
        let address = buffer.as_ptr();
        give_back(buffer);
        let again = zeroed(KEPT_MIN - 200);
        assert_eq!(again.as_ptr(), address, "the buffer given back is reused");
        assert!(again.len() == KEPT_MIN - 200 && again.iter().all(|&b| b == 0));
    }

    #[test]
    fn large_buffers_are_not_kept_and_at_most_a_few_are() {
        on_worker(keep_few);
    }

    fn keep_few() {
        give_back(vec![0; KEPT_BYTES + 1]);
        give_back(vec![0; KEPT_MIN - 1]);
        for _ in 0..KEPT + 2 {
            give_back(vec![0; KEPT_MIN]);
        }
        KEPT_BUFFERS.with_borrow(|kept| {
            assert_eq!(kept.len(), KEPT);
            assert!(kept.iter().all(|b| (KEPT_MIN..=KEPT_BYTES).contains(&b.capacity())));
        });
    }
}
