//! Local glob patterns, matched one path component at a time against directory entries.
//!
//! The `glob` crate skips entries whose names are not UTF-8, so an archive with Latin-1 file names
//! would silently lose files. Here each entry's name is matched in its lossy UTF-8 form (an invalid
//! byte matches `?` or `*`, never a literal), and the path returned is the entry's real one. `**` as a
//! whole component matches any number of directories, as in the `glob` crate.

use std::path::{Component, Path, PathBuf};

use glob::{MatchOptions, Pattern};

use super::InputError;

const WILDCARDS: [char; 3] = ['*', '?', '['];

/// Every existing path matching `pattern`, sorted.
///
/// # Errors
/// An invalid pattern component, or a directory on the way that exists but cannot be read.
pub(crate) fn matches(pattern: &str) -> Result<Vec<PathBuf>, InputError> {
    let mut base = PathBuf::new();
    let mut components = Path::new(pattern).components().peekable();
    while let Some(c) = components.next_if(|c| !c.as_os_str().to_string_lossy().contains(WILDCARDS)) {
        base.push(c);
    }
    let mut found = vec![base];
    let mut last_literal = true;
    for component in components {
        let Component::Normal(text) = component else {
            found = found.into_iter().map(|p| p.join(component)).collect();
            continue;
        };
        let text = text.to_string_lossy();
        last_literal = !text.contains(WILDCARDS);
        found = if text == "**" {
            let mut all = Vec::new();
            for dir in found {
                descend(&dir, &mut all)?;
            }
            all
        } else if last_literal {
            found.into_iter().map(|p| p.join(text.as_ref())).collect()
        } else {
            let component =
                Pattern::new(&text).map_err(|source| InputError::Pattern { pattern: pattern.to_string(), source })?;
            let mut next = Vec::new();
            for dir in found {
                next.extend(children(&dir)?.into_iter().filter(|child| {
                    let name = child.file_name().map(|n| n.to_string_lossy()).unwrap_or_default();
                    component.matches_with(&name, MatchOptions::new())
                }));
            }
            next
        };
    }
    if last_literal {
        found.retain(|p| p.symlink_metadata().is_ok());
    }
    found.sort();
    found.dedup();
    Ok(found)
}

/// The entries of `dir`; none when it does not exist or is not a directory.
fn children(dir: &Path) -> Result<Vec<PathBuf>, InputError> {
    let listing = if dir.as_os_str().is_empty() { Path::new(".") } else { dir };
    let entries = match std::fs::read_dir(listing) {
        Ok(entries) => entries,
        Err(e) if matches!(e.kind(), std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory) => {
            return Ok(Vec::new())
        }
        Err(source) => return Err(InputError::Directory { path: listing.to_path_buf(), source }),
    };
    let mut out = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|source| InputError::Directory { path: listing.to_path_buf(), source })?;
        out.push(dir.join(entry.file_name()));
    }
    Ok(out)
}

/// `dir` and every directory below it (symlinked directories are not followed, so no cycles).
fn descend(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), InputError> {
    out.push(dir.to_path_buf());
    for child in children(dir)? {
        if child.symlink_metadata().is_ok_and(|m| m.is_dir()) {
            descend(&child, out)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;

    #[test]
    fn matches_like_glob_and_finds_names_that_are_not_utf8() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for name in ["a/2001.nc", "a/2002.nc", "a/x.txt", "b/c/2003.nc", ".h/2004.nc"] {
            let path = root.join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, b"").unwrap();
        }
        let odd = root.join("a").join(OsStr::from_bytes(b"caf\xe9.nc"));
        std::fs::write(&odd, b"").unwrap();
        let text = |p: &str| format!("{}/{p}", root.display());
        let ours = |p: &str| matches(&text(p)).unwrap();
        let theirs = |p: &str| glob::glob(&text(p)).unwrap().collect::<Result<Vec<_>, _>>().unwrap();
        for pattern in ["a/*.nc", "*/*.nc", "**/*.nc", "[ab]/2*.nc", "a/200?.nc", "nowhere/*.nc", "a/x.txt", "*/c"] {
            let mut expected = theirs(pattern);
            if pattern.ends_with("*.nc") && pattern != "[ab]/2*.nc" && !pattern.starts_with("nowhere") {
                expected.push(odd.clone());
                expected.sort();
            }
            assert_eq!(ours(pattern), expected, "{pattern}");
        }
        assert_eq!(ours("a/caf?.nc"), vec![odd]);
        assert!(matches(&text("a/[.nc")).is_err());
    }
}
