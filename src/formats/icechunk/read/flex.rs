//! Checks of the flexbuffers inside a repository's `repo` file before Icechunk deserializes them.
//!
//! The `repo` file keeps the repository's configuration and the commit properties (the
//! repository's and each snapshot's) as flexbuffers, which Icechunk deserializes with serde, one
//! call per level of nesting. A flexbuffer's values are offsets, and nothing stops a damaged one
//! from nesting without end: an offset that points back at one of its own containers is a cycle,
//! and serde recurses until the stack overflows, which aborts the process (found by the `icechunk`
//! fuzz target). Before Icechunk reads the file, vzarr walks each of its flexbuffers, keys and
//! values, to a bounded depth and a bounded number of values, and refuses the file past either
//! bound.

use flexbuffers::{FlexBufferType, Reader};

/// The deepest nesting accepted: a repository's configuration nests a few levels.
const MAX_DEPTH: usize = 64;

/// The most values one flexbuffer may hold (a shared child counts each time it is reached, so a
/// buffer that reuses children to grow exponentially is refused too).
const MAX_VALUES: usize = 1 << 20;

/// Why a flexbuffer is refused ([`check_flexbuffer`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum FlexError {
    /// More than [`MAX_VALUES`] values.
    #[error("a flexbuffer holds more than {} values", MAX_VALUES)]
    TooMany,
    /// Nesting deeper than [`MAX_DEPTH`].
    #[error("a flexbuffer nests deeper than {} levels (a cycle?)", MAX_DEPTH)]
    TooDeep,
}

/// Checks that `bytes` is a flexbuffer Icechunk can deserialize without unbounded recursion.
///
/// # Errors
/// Why it is refused: nesting deeper than [`MAX_DEPTH`] (a cycle nests without end), or more than
/// [`MAX_VALUES`] values.
pub(crate) fn check_flexbuffer(bytes: &[u8]) -> Result<(), FlexError> {
    // What does not even have a root is left to Icechunk, which refuses it in its own words.
    let Ok(root) = Reader::get_root(bytes) else { return Ok(()) };
    let mut values = 0;
    walk(&root, 0, &mut values)
}

fn walk(value: &Reader<&[u8]>, depth: usize, values: &mut usize) -> Result<(), FlexError> {
    *values += 1;
    if *values > MAX_VALUES {
        return Err(FlexError::TooMany);
    }
    let kind = value.flexbuffer_type();
    if !kind.is_vector() {
        return Ok(());
    }
    if depth >= MAX_DEPTH {
        return Err(FlexError::TooDeep);
    }
    if kind == FlexBufferType::Map {
        // A map's keys are deserialized too: a key that is not a string is followed as a value.
        if let Ok(map) = value.get_map() {
            for key in map.keys_vector().iter() {
                walk(&key, depth + 1, values)?;
            }
        }
    }
    if let Ok(vector) = value.get_vector() {
        for child in vector.iter() {
            walk(&child, depth + 1, values)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinary_flexbuffers_pass() {
        let config = serde_json::json!({"inline_chunk_threshold_bytes": 512, "caching": {"snapshots": [1, 2, 3]},
            "virtual_chunk_containers": {"file:///data/": {"url_prefix": "file:///data/", "store": null}}});
        assert_eq!(check_flexbuffer(&flexbuffers::to_vec(&config).unwrap()), Ok(()));
        assert_eq!(check_flexbuffer(&[]), Ok(()));
    }

    #[test]
    fn deep_or_huge_flexbuffers_are_refused() {
        let mut deep = serde_json::json!(1);
        for _ in 0..MAX_DEPTH + 1 {
            deep = serde_json::json!([deep]);
        }
        let refused = check_flexbuffer(&flexbuffers::to_vec(&deep).unwrap()).unwrap_err().to_string();
        assert!(refused.contains("nests deeper"), "{refused}");
        let wide: Vec<u8> = vec![0; MAX_VALUES + 1];
        let refused = check_flexbuffer(&flexbuffers::to_vec(&wide).unwrap()).unwrap_err().to_string();
        assert!(refused.contains("more than"), "{refused}");
    }

    #[test]
    fn a_cycle_is_refused() {
        // A vector of one element whose offset points at the vector itself: [[[...]]]. One byte
        // wide: the length (1), the element (offset 0: the vector at 1), the element's type, then
        // the root: its offset (2, back to the vector at 1), its type and its byte width.
        let vector = (FlexBufferType::Vector as u8) << 2;
        let cyclic = [1u8, 0, vector, 2, vector, 1];
        let refused = check_flexbuffer(&cyclic).unwrap_err().to_string();
        assert!(refused.contains("nests deeper"), "{refused}");
    }
}
