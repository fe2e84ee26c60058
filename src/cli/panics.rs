//! Panics in a command-line run. Some libraries vzarr calls refuse damaged input by panicking
//! (Icechunk on an unknown node type in a snapshot); the library turns those it expects into errors,
//! and the default hook's message and backtrace must not reach the user beside that error. So the
//! command line replaces the hook with one that only remembers the message, and a panic that does
//! reach the top of the run is reported as one line.

use std::sync::Mutex;

/// The message and location of the last panic of this process.
static LAST: Mutex<Option<String>> = Mutex::new(None);

/// Runs `run` with the quiet hook; `Err(message)` when it panicked.
pub(crate) fn caught<T>(run: impl FnOnce() -> T) -> Result<T, String> {
    std::panic::set_hook(Box::new(|info| {
        let payload = info.payload();
        let message = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or("a panic");
        let location = info.location().map(|l| format!(" at {}:{}", l.file(), l.line())).unwrap_or_default();
        *LAST.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(format!("{message}{location}"));
    }));
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(run)).map_err(|_| {
        let last = LAST.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take();
        last.unwrap_or_else(|| "a panic".to_string())
    })
}
