//! What kind of failure an error is: [`ErrorKind`], what every public error's `kind()` returns
//! (the `kind()` methods are in `src/kinds.rs`, one exhaustive match each).
//!
//! Callers (the Python package, the command line, a pipeline) decide what to do by kind, never by
//! an error's message text or its `what`/`reason` strings, which are for people and may change.

/// The kind of a failure, for callers that react to it (`match err.kind()`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// Nothing at the location given: no file, store, array, branch, or no input matched.
    NotFound,
    /// The output exists and replacing it was not asked for.
    AlreadyExists,
    /// A source or link lies outside the authorized containers.
    NotAuthorized,
    /// A source file changed since it was scanned or written.
    SourceChanged,
    /// Options, a selection or arguments that do not fit (the caller's to fix).
    InvalidInput,
    /// Something vzarr cannot represent or read (a filter, a type, a layout, a file format).
    Unsupported,
    /// Files that do not combine with each other or do not follow a store's end.
    Mismatch,
    /// Bytes that are not what they must be: a damaged file, store, manifest, part or repository.
    Corrupt,
    /// The store is being written by another vzarr.
    Busy,
    /// A result larger than the limit set for it.
    TooLarge,
    /// Reading or writing failed: a file system, network or object-store error.
    Io,
}
