//! How many source files the oracle opened in this process and in the oracle workers it ended: the
//! count tests read to check that `verify` opens each source once, not once per variable.

use std::sync::atomic::{AtomicU64, Ordering};

/// Source files opened by the oracle in this process (and counted from its ended workers).
static OPENS: AtomicU64 = AtomicU64::new(0);

/// Number of source files the oracle opened in this process and in the oracle workers it ended.
pub(crate) fn oracle_opens() -> u64 {
    OPENS.load(Ordering::Relaxed)
}

/// Counts `n` files opened (by a library in this process, or by an oracle worker that ended).
pub(crate) fn add_opens(n: u64) {
    OPENS.fetch_add(n, Ordering::Relaxed);
}
