//! Finding a variable by its `group/name` path in a file opened with libnetcdf, for the oracle
//! reads of `verify` (scanning does not use libnetcdf).

use netcdf::{Group, Variable};

/// Runs `f` on the variable at `path` (`grp/sub/var`), or returns None when there is none.
///
/// # Errors
/// The error `f` returns.
pub(super) fn with_variable<T>(
    file: &netcdf::File,
    path: &str,
    f: impl FnOnce(&Variable<'_>) -> Result<T, netcdf::Error>,
) -> Result<Option<T>, netcdf::Error> {
    let (groups, name) = path.rsplit_once('/').unwrap_or(("", path));
    if groups.is_empty() {
        return described(path, || file.variable(name))?.map(|v| f(&v)).transpose();
    }
    let Some(root) = file.root() else { return Ok(None) };
    let segments: Vec<&str> = groups.split('/').collect();
    in_group(&root, &segments, name, f)
}

/// The variable `lookup` finds, or an error when the netcdf crate panics describing it: it unwraps
/// libnetcdf's errors, and libnetcdf gives a variable whose `DIMENSION_LIST` entry is missing or names
/// no dimension scale an invalid dimension id (`NC_EBADDIM`). The error makes the oracle read the
/// dataset with libhdf5.
fn described<'f>(
    path: &str,
    lookup: impl FnOnce() -> Option<Variable<'f>>,
) -> Result<Option<Variable<'f>>, netcdf::Error> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(lookup)).map_err(|panic| {
        let what = panic
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| panic.downcast_ref::<&str>().copied())
            .unwrap_or("a panic");
        netcdf::Error::Str(format!("libnetcdf cannot describe variable {path}: {what}"))
    })
}

fn in_group<T>(
    group: &Group<'_>,
    segments: &[&str],
    name: &str,
    f: impl FnOnce(&Variable<'_>) -> Result<T, netcdf::Error>,
) -> Result<Option<T>, netcdf::Error> {
    match segments.split_first() {
        None => described(name, || group.variable(name))?.map(|v| f(&v)).transpose(),
        Some((first, rest)) => match group.group(first) {
            Some(child) => in_group(&child, rest, name, f),
            None => Ok(None),
        },
    }
}
