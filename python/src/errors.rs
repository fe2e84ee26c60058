//! vzarr's typed errors as Python exceptions: `vzarr.Error` and one subclass per kind a caller may
//! want to catch, each carrying vzarr's one-line message.

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::PyErr;
use vzarr::pipeline::PipelineError;
use vzarr::read::ReadError;
use vzarr::ErrorKind;

create_exception!(_vzarr, Error, PyException, "Every error vzarr raises.");
create_exception!(_vzarr, NotFound, Error, "No store, file or array at the location given.");
create_exception!(_vzarr, NotAuthorized, Error, "A source lies outside the authorized containers.");
create_exception!(_vzarr, SourceChanged, Error, "A source file changed since it was scanned.");
create_exception!(_vzarr, SelectionError, Error, "A selection that does not fit the array.");
create_exception!(_vzarr, ScanError, Error, "A file that cannot be scanned, or inputs that do not combine.");
create_exception!(_vzarr, AlreadyExists, Error, "The output exists and overwriting was not asked for.");

/// The Python exception for an error of `kind`, carrying `text`.
pub(crate) fn by_kind(kind: ErrorKind, text: String) -> PyErr {
    match kind {
        ErrorKind::NotFound => NotFound::new_err(text),
        ErrorKind::SourceChanged => SourceChanged::new_err(text),
        ErrorKind::NotAuthorized => NotAuthorized::new_err(text),
        ErrorKind::AlreadyExists => AlreadyExists::new_err(text),
        _ => Error::new_err(text),
    }
}

/// The Python exception for a read error.
pub(crate) fn read_error(e: ReadError) -> PyErr {
    match e {
        ReadError::Selection { .. } => SelectionError::new_err(e.to_string()),
        e => by_kind(e.kind(), e.to_string()),
    }
}

/// The Python exception for a scan, combine or write error.
pub(crate) fn pipeline_error(e: PipelineError) -> PyErr {
    let (kind, text) = (e.kind(), e.to_string());
    match kind {
        ErrorKind::NotFound | ErrorKind::AlreadyExists => by_kind(kind, text),
        _ if matches!(
            e,
            PipelineError::Scan(_)
                | PipelineError::Combine(_)
                | PipelineError::Inputs(_)
                | PipelineError::Append(_)
                | PipelineError::Parts(_)
                | PipelineError::PartsDimensions { .. }
        ) =>
        {
            ScanError::new_err(text)
        }
        _ => by_kind(kind, text),
    }
}

/// Runs `f`, turning a panic (a bug in vzarr) into `vzarr.Error` instead of letting it cross into
/// Python.
pub(crate) fn guard<T>(what: &str, f: impl FnOnce() -> pyo3::PyResult<T>) -> pyo3::PyResult<T> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(result) => result,
        Err(panic) => {
            let message = panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("unknown cause");
            Err(Error::new_err(format!("{what}: internal error in vzarr (please report it): {message}")))
        }
    }
}
