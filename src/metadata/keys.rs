//! Zarr v3 store keys with the default `/` chunk key encoding: where a node's `zarr.json` and an
//! array's chunks live in a store (a directory, an object store prefix, kerchunk's `refs`).

/// The key (and relative file path) of node `path`'s metadata: `zarr.json` for the root, else
/// `<path>/zarr.json`.
pub fn node_key(path: &str) -> String {
    if path.is_empty() {
        "zarr.json".into()
    } else {
        format!("{path}/zarr.json")
    }
}

/// The Zarr v3 key of chunk `coords` of `array` with the default `/` chunk key encoding:
/// `<array>/c/i/j/k`, and `<array>/c` for a 0-d array.
pub fn chunk_key(array: &str, coords: &[u64]) -> String {
    let mut key = format!("{array}/c");
    for c in coords {
        key.push('/');
        key.push_str(&c.to_string());
    }
    key
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_follow_the_default_chunk_key_encoding() {
        assert_eq!(node_key(""), "zarr.json");
        assert_eq!(node_key("grp/tas"), "grp/tas/zarr.json");
        assert_eq!(chunk_key("tas", &[0, 12, 3]), "tas/c/0/12/3");
        assert_eq!(chunk_key("grp/crs", &[]), "grp/crs/c");
    }
}
