//! Finding a variable by its `group/name` path in a file opened with libnetcdf, for the oracle
//! reads of `verify` (scanning does not use libnetcdf).

use netcdf::{Group, Variable};

/// Runs `f` on the variable at `path` (`grp/sub/var`), or returns None when there is none.
///
/// # Errors
/// The error `f` returns; an error naming `path` when it is no path libnetcdf can look up (see
/// [`check_path`]).
pub(super) fn with_variable<T>(
    file: &netcdf::File,
    path: &str,
    f: impl FnOnce(&Variable<'_>) -> Result<T, netcdf::Error>,
) -> Result<Option<T>, netcdf::Error> {
    check_path(path)?;
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

/// Refuses an array path libnetcdf cannot look a variable up by: an empty, `.` or `..` component, a
/// NUL or a control character. (A store may name its arrays anything, a kerchunk document `../x`; the
/// netcdf crate unwraps libnetcdf's `NC_EBADNAME` for such a group name, a panic that ended the oracle
/// worker.)
///
/// # Errors
/// A one-line error naming the path and why.
pub(crate) fn check_path(path: &str) -> Result<(), netcdf::Error> {
    let bad = path.split('/').find(|c| c.is_empty() || *c == "." || *c == ".." || c.chars().any(char::is_control));
    match bad {
        None => Ok(()),
        Some(component) => Err(netcdf::Error::Str(format!(
            "array path {path:?} names no variable of a source (its component {component:?} is no netCDF name)"
        ))),
    }
}

fn in_group<T>(
    group: &Group<'_>,
    segments: &[&str],
    name: &str,
    f: impl FnOnce(&Variable<'_>) -> Result<T, netcdf::Error>,
) -> Result<Option<T>, netcdf::Error> {
    match segments.split_first() {
        None => described(name, || group.variable(name))?.map(|v| f(&v)).transpose(),
        Some((first, rest)) => match described_group(first, || group.group(first))? {
            Some(child) => in_group(&child, rest, name, f),
            None => Ok(None),
        },
    }
}

/// The group `lookup` finds, or an error when the netcdf crate panics on libnetcdf's error.
fn described_group<'f>(
    name: &str,
    lookup: impl FnOnce() -> Option<Group<'f>>,
) -> Result<Option<Group<'f>>, netcdf::Error> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(lookup))
        .map_err(|_| netcdf::Error::Str(format!("libnetcdf cannot look up group {name:?}")))
}

#[cfg(test)]
mod tests {
    #[test]
    fn paths_libnetcdf_cannot_look_up_are_refused() {
        for bad in ["../x", "a/../x", "./x", "a//x", "/x", "x/", "a\u{1}b"] {
            let message = super::check_path(bad).unwrap_err().to_string();
            assert!(message.contains("names no variable"), "{bad}: {message}");
        }
        for good in ["x", "grp/sub/tas", "a b", "x.y"] {
            assert!(super::check_path(good).is_ok(), "{good}");
        }
    }
}
