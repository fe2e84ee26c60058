//! Containers: the location prefixes (ending in `/`) that hold a store's sources.

use std::collections::BTreeSet;

use crate::manifest::SourceTable;
use crate::source::Location;

/// The container of one source location, lexically: everything up to and including its last `/`
/// (`/data/a/x.nc` -> `/data/a/`, `s3://bucket/p/x.nc` -> `s3://bucket/p/`, `s3://bucket` ->
/// `s3://bucket/`).
pub fn container_of(location: &str) -> String {
    let body_start = match Location::parse(location) {
        Location::Url(_) => location.find("://").map_or(0, |i| i + 3),
        Location::Local(_) => 0,
    };
    let body = &location[body_start..];
    match body.rfind('/') {
        Some(i) => location[..body_start + i + 1].to_string(),
        None => format!("{location}/"),
    }
}

/// The containers of a store's source table, as written to `vzarr.json`: local files are resolved
/// (symlinks, `..`) when they exist, so the recorded directory is the one a reader will find them
/// in; containers inside another listed container are left out. Sorted.
pub fn containers_of(sources: &SourceTable) -> Vec<String> {
    let resolved: Vec<String> = sources
        .iter()
        .map(|s| {
            if Location::parse(&s.location).is_url() {
                return s.location.clone();
            }
            match std::fs::canonicalize(&s.location) {
                Ok(path) => path.to_str().map_or_else(|| s.location.clone(), str::to_string),
                Err(_) => s.location.clone(),
            }
        })
        .collect();
    containers_of_locations(resolved.iter().map(String::as_str))
}

/// The containers of some locations, lexically (no file system access); nested ones left out.
pub fn containers_of_locations<'a>(locations: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let all: BTreeSet<String> = locations.into_iter().map(container_of).collect();
    minimal(all)
}

/// Leaves out every container that lies inside another one of the set.
fn minimal(all: BTreeSet<String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    // Sorted order puts a prefix before everything it contains.
    for c in all {
        if !out.iter().any(|kept| c.starts_with(kept.as_str())) {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn containers_are_parent_prefixes() {
        assert_eq!(container_of("/data/a/x.nc"), "/data/a/");
        assert_eq!(container_of("s3://bucket/p/x.nc"), "s3://bucket/p/");
        assert_eq!(container_of("s3://bucket"), "s3://bucket/");
        assert_eq!(container_of("https://host/x.nc"), "https://host/");
        assert_eq!(container_of("file:///d/x.nc"), "file:///d/");
    }

    #[test]
    fn nested_containers_collapse() {
        let got = containers_of_locations(["/d/a/x.nc", "/d/a/b/y.nc", "/d/ab/z.nc", "s3://b/k/1.nc"]);
        assert_eq!(got, ["/d/a/", "/d/ab/", "s3://b/k/"]);
    }
}
