//! Fault-injection hooks for vzarr's own tests, read from the environment in debug builds only: a
//! release build (`cargo build --release`, `cargo install`, the Python wheel) compiles every hook to
//! nothing, so no environment variable can change what it does.
//!
//! - `VZARR_TEST_CRASH_AT=<point>` kills the process (SIGKILL, as kill -9 would) at a named point of
//!   publishing an output ([`crash_point`]).
//! - `VZARR_TEST_NO_RENAMEAT2=1` makes local publishing take its portable fallbacks.
//! - `VZARR_TEST_SINGLE_PUT_MAX=<bytes>` lowers the size above which remote outputs are uploaded in parts.
//! - `VZARR_TEST_ORACLE_CRASH=<array path>` makes `verify`'s oracle worker crash (SIGSEGV) when
//!   libnetcdf is asked for that variable, as libnetcdf does on some files ([`oracle_crash`]).
//! - `VZARR_TEST_FAIL_AT=<point>` makes a write fail with an error at a named point ([`fail_point`]),
//!   as a full file system would there.

/// Kills this process (SIGKILL) when `VZARR_TEST_CRASH_AT` names `point` (debug builds only).
#[cfg(debug_assertions)]
pub(crate) fn crash_point(point: &str) {
    if std::env::var_os("VZARR_TEST_CRASH_AT").is_some_and(|v| v == point) {
        // SAFETY: kill(2) on our own PID; the process ends here, as with kill -9.
        unsafe {
            libc::kill(libc::getpid(), libc::SIGKILL);
        }
    }
}

/// Does nothing: release builds have no crash points.
#[cfg(not(debug_assertions))]
#[inline(always)]
pub(crate) fn crash_point(_point: &str) {}

/// Whether `VZARR_TEST_NO_RENAMEAT2=1` asks publishing to take its fallbacks (debug builds only).
pub(crate) fn renameat2_disabled() -> bool {
    cfg!(debug_assertions) && std::env::var_os("VZARR_TEST_NO_RENAMEAT2").is_some_and(|v| v == "1")
}

/// `VZARR_TEST_SINGLE_PUT_MAX` in bytes, when set (debug builds only).
pub(crate) fn single_put_max() -> Option<u64> {
    if !cfg!(debug_assertions) {
        return None;
    }
    std::env::var("VZARR_TEST_SINGLE_PUT_MAX").ok().and_then(|s| s.parse::<u64>().ok())
}

/// Whether `VZARR_TEST_FAIL_AT` names `point`: the caller then fails as if the write there had failed
/// (debug builds only; always `false` in release builds).
#[cfg_attr(not(feature = "icechunk"), allow(dead_code))]
pub(crate) fn fail_point(point: &str) -> bool {
    cfg!(debug_assertions) && std::env::var_os("VZARR_TEST_FAIL_AT").is_some_and(|v| v == point)
}

/// Crashes this process (SIGSEGV, after a line on stderr) when `VZARR_TEST_ORACLE_CRASH` names
/// `path` (debug builds only).
#[cfg_attr(not(feature = "verify"), allow(dead_code))]
pub(crate) fn oracle_crash(path: &str) {
    if cfg!(debug_assertions) && std::env::var_os("VZARR_TEST_ORACLE_CRASH").is_some_and(|v| v == path) {
        eprintln!("test hook: libnetcdf crashes reading {path}");
        // SAFETY: raise(3) on this process; the default action ends it, as a segfault in libnetcdf would.
        unsafe {
            libc::signal(libc::SIGSEGV, libc::SIG_DFL);
            libc::raise(libc::SIGSEGV);
        }
    }
}
