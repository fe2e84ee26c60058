//! Chunk grid JSON: the `chunk_grid` member of an array's `zarr.json`, in and out.
//!
//! Stage: pure data model (metadata writing and reading). Input/output: a `serde_json::Value` plus the
//! array shape. Follows the Zarr v3 core `regular` grid and the zarr-extensions `rectilinear` grid
//! (Zarr v3 core specification, chunk grids; zarr-extensions `rectilinear`):
//! - all dimensions regular: `{"name": "regular", "configuration": {"chunk_shape": [..]}}`;
//! - otherwise `{"name": "rectilinear", "configuration": {"kind": "inline", "chunk_shapes": [..]}}`
//!   where a regular dimension is a bare integer and a varying one a list in which maximal runs of
//!   length >= 2 are written `[value, count]`.
//!
//! Parsing never allocates from a count found in the JSON: runs are clamped arithmetically to the
//! chunks that start inside the extent, and trailing chunks starting at or beyond it are dropped.

use super::dim::RunsBuilder;
use super::{ChunkDim, ChunkGrid, GridError};
use serde_json::{json, Map, Value};

/// What a rectilinear list item must look like.
const ITEM: &str = "a positive integer or a [value, count] pair of positive integers";
/// Longest `found` excerpt in an error message, in characters.
const FOUND_MAX: usize = 60;

impl ChunkGrid {
    /// The `chunk_grid` JSON for this grid: `regular` when every dimension is regular, otherwise
    /// `rectilinear` (kind `inline`) with run-length encoded edge lists.
    pub fn to_json(&self) -> Value {
        if self.is_regular() {
            let sizes: Vec<u64> = self.dims.iter().filter_map(ChunkDim::regular_size).collect();
            return json!({"name": "regular", "configuration": {"chunk_shape": sizes}});
        }
        let shapes: Vec<Value> = self.dims.iter().map(dim_to_json).collect();
        json!({
            "name": "rectilinear",
            "configuration": {"kind": "inline", "chunk_shapes": shapes},
        })
    }

    /// Parses a `chunk_grid` JSON value for an array of `shape`. Accepts `regular` and `rectilinear`
    /// (kind `inline`). Round trip: `from_json(&g.to_json(), &g.shape()) == Ok(g)`.
    ///
    /// # Errors
    /// [`GridError::InvalidJson`] for a malformed value (wrong type, negative, float, zero, wrong
    /// arity), [`GridError::UnknownGridName`], [`GridError::UnsupportedKind`],
    /// [`GridError::RankMismatch`] when the entries do not match `shape`, and
    /// [`GridError::InDimension`] when a dimension's edges do not cover its extent.
    pub fn from_json(value: &Value, shape: &[u64]) -> Result<Self, GridError> {
        let grid = object(value, "chunk_grid")?;
        let name = member(grid, "chunk_grid", "name")?;
        let name = name.as_str().ok_or_else(|| invalid("chunk_grid.name", "a string", name))?;
        let config = object(member(grid, "chunk_grid", "configuration")?, "chunk_grid.configuration")?;
        match name {
            "regular" => regular_from_json(config, shape),
            "rectilinear" => rectilinear_from_json(config, shape),
            other => Err(GridError::UnknownGridName { name: other.to_owned() }),
        }
    }
}

/// One `chunk_shapes` entry: the bare size of a regular dimension, or the run-length encoded edges.
fn dim_to_json(dim: &ChunkDim) -> Value {
    if let Some(size) = dim.regular_size() {
        return Value::from(size);
    }
    let items = dim
        .runs()
        .into_iter()
        .map(|(edge, count)| match count {
            1 => Value::from(edge),
            _ => json!([edge, count]),
        })
        .collect();
    Value::Array(items)
}

fn regular_from_json(config: &Map<String, Value>, shape: &[u64]) -> Result<ChunkGrid, GridError> {
    const AT: &str = "chunk_grid.configuration.chunk_shape";
    let items = array_of_rank(member(config, "chunk_grid.configuration", "chunk_shape")?, AT, shape)?;
    let dims = items
        .iter()
        .zip(shape)
        .enumerate()
        .map(|(d, (item, &extent))| {
            let size = positive(item).ok_or_else(|| invalid(format!("{AT}[{d}]"), "a positive integer", item))?;
            ChunkDim::regular(extent, size).map_err(|e| e.in_dim(d))
        })
        .collect::<Result<_, _>>()?;
    Ok(ChunkGrid::new(dims))
}

fn rectilinear_from_json(config: &Map<String, Value>, shape: &[u64]) -> Result<ChunkGrid, GridError> {
    const AT: &str = "chunk_grid.configuration.chunk_shapes";
    let kind = member(config, "chunk_grid.configuration", "kind")?;
    match kind.as_str() {
        Some("inline") => {}
        Some(other) => return Err(GridError::UnsupportedKind { kind: other.to_owned() }),
        None => return Err(invalid("chunk_grid.configuration.kind", "\"inline\"", kind)),
    }
    let entries = array_of_rank(member(config, "chunk_grid.configuration", "chunk_shapes")?, AT, shape)?;
    let dims = entries
        .iter()
        .zip(shape)
        .enumerate()
        .map(|(d, (entry, &extent))| {
            dim_from_json(entry, extent, &format!("{AT}[{d}]")).map_err(|e| match e {
                GridError::InvalidJson { .. } => e,
                other => other.in_dim(d),
            })
        })
        .collect::<Result<_, _>>()?;
    Ok(ChunkGrid::new(dims))
}

/// One `chunk_shapes` entry for a dimension of `extent` elements.
fn dim_from_json(entry: &Value, extent: u64, at: &str) -> Result<ChunkDim, GridError> {
    if let Some(size) = positive(entry) {
        return ChunkDim::regular(extent, size);
    }
    let items = entry
        .as_array()
        .ok_or_else(|| invalid(at, "a positive integer or a list of edges and [value, count] pairs", entry))?;
    let mut builder = RunsBuilder::new(extent);
    for (i, item) in items.iter().enumerate() {
        let (edge, count) = run_item(item).ok_or_else(|| invalid(format!("{at}[{i}]"), ITEM, item))?;
        // Keep only the chunks that start inside the extent; the rest are trailing overflow.
        builder.push(edge, count.min(builder.room(edge)))?;
    }
    builder.finish()
}

/// A bare edge `e` as `(e, 1)` or a pair `[value, count]`, all positive integers.
fn run_item(item: &Value) -> Option<(u64, u64)> {
    if let Some(edge) = positive(item) {
        return Some((edge, 1));
    }
    match item.as_array()?.as_slice() {
        [value, count] => Some((positive(value)?, positive(count)?)),
        _ => None,
    }
}

/// A JSON integer >= 1.
fn positive(value: &Value) -> Option<u64> {
    value.as_u64().filter(|&n| n >= 1)
}

fn object<'a>(value: &'a Value, at: &str) -> Result<&'a Map<String, Value>, GridError> {
    value.as_object().ok_or_else(|| invalid(at, "an object", value))
}

fn member<'a>(map: &'a Map<String, Value>, at: &str, key: &str) -> Result<&'a Value, GridError> {
    map.get(key).ok_or_else(|| GridError::InvalidJson {
        at: format!("{at}.{key}"),
        expected: "a value",
        found: "nothing".to_owned(),
    })
}

/// An array with one entry per dimension of `shape`.
fn array_of_rank<'a>(value: &'a Value, at: &str, shape: &[u64]) -> Result<&'a [Value], GridError> {
    let items = value.as_array().ok_or_else(|| invalid(at, "an array", value))?;
    if items.len() != shape.len() {
        return Err(GridError::RankMismatch {
            what: if at.ends_with("chunk_shapes") { "chunk_shapes" } else { "chunk_shape" },
            expected: shape.len(),
            got: items.len(),
        });
    }
    Ok(items)
}

fn invalid(at: impl Into<String>, expected: &'static str, found: &Value) -> GridError {
    let text = found.to_string();
    let found = if text.chars().count() > FOUND_MAX {
        let mut short: String = text.chars().take(FOUND_MAX - 3).collect();
        short.push_str("...");
        short
    } else {
        text
    };
    GridError::InvalidJson { at: at.into(), expected, found }
}

#[cfg(test)]
mod tests {
    use super::super::strategies::{edges_and_extent, grid};
    use super::*;
    use proptest::prelude::*;

    fn rect(shapes: Value) -> Value {
        json!({"name": "rectilinear", "configuration": {"kind": "inline", "chunk_shapes": shapes}})
    }

    fn edges_of(value: Value, extent: u64) -> Result<Vec<u64>, GridError> {
        let g = ChunkGrid::from_json(&rect(json!([value])), &[extent])?;
        Ok(g.dim(0).edges().collect())
    }

    #[test]
    fn spec_examples() {
        assert_eq!(edges_of(json!([[1, 3], 3]), 6), Ok(vec![1, 1, 1, 3]));
        assert_eq!(edges_of(json!([[4, 2]]), 8), Ok(vec![4, 4]));
        // A bare integer repeats until the extent is covered.
        assert_eq!(edges_of(json!(4), 10), Ok(vec![4, 4, 4]));
    }

    #[test]
    fn rle_output() {
        let dims = vec![
            ChunkDim::from_edges(31, &[10, 10, 10, 1]).unwrap(),
            ChunkDim::from_edges(120, &[31, 28, 31, 30]).unwrap(),
            ChunkDim::regular(8, 4).unwrap(),
        ];
        let g = ChunkGrid::new(dims);
        assert_eq!(g.to_json(), rect(json!([[[10, 3], 1], [31, 28, 31, 30], 4])));
        assert_eq!(ChunkGrid::from_json(&g.to_json(), &g.shape()), Ok(g));
    }

    #[test]
    fn regular_output_and_scalar() {
        let g = ChunkGrid::regular(&[10, 3], &[4, 3]).unwrap();
        let expected = json!({"name": "regular", "configuration": {"chunk_shape": [4, 3]}});
        assert_eq!(g.to_json(), expected);
        assert_eq!(ChunkGrid::from_json(&expected, &[10, 3]), Ok(g));
        let scalar = ChunkGrid::new(vec![]);
        assert_eq!(scalar.to_json()["configuration"]["chunk_shape"], json!([]));
        assert_eq!(ChunkGrid::from_json(&scalar.to_json(), &[]), Ok(scalar));
    }

    #[test]
    fn uniform_list_collapses_to_regular() {
        let g = ChunkGrid::from_json(&rect(json!([[[4, 2]], 3])), &[8, 5]).unwrap();
        assert!(g.is_regular());
        assert_eq!(g, ChunkGrid::regular(&[8, 5], &[4, 3]).unwrap());
        assert_eq!(g.to_json()["name"], "regular");
    }

    #[test]
    fn trailing_overflow_is_dropped() {
        assert_eq!(edges_of(json!([[10, 1000], 5]), 25), Ok(vec![10, 10, 10]));
        assert_eq!(edges_of(json!([3, 3, 9, 9]), 7), Ok(vec![3, 3, 9]));
        assert_eq!(edges_of(json!([[2, 5]]), 0), Ok(vec![]));
        // Huge counts are clamped arithmetically, not expanded.
        assert_eq!(edges_of(json!([[1, u64::MAX]]), 3), Ok(vec![1, 1, 1]));
        let g = ChunkGrid::from_json(&rect(json!([[[1, u64::MAX], 2]])), &[u64::MAX]).unwrap();
        assert_eq!(g.dim(0).num_chunks(), u64::MAX);
        assert!(g.dim(0).is_regular());
    }

    #[test]
    fn rejects_bad_json() {
        let bad = [
            json!([[1, 0]]),
            json!([[0, 2]]),
            json!([0]),
            json!([-1, 5]),
            json!([2.5, 5]),
            json!([[1, 2, 3]]),
            json!([[1]]),
            json!([[1, 1e18]]),
            json!(["4"]),
            json!(0),
            json!(-3),
            json!({"a": 1}),
        ];
        for value in bad {
            let err = edges_of(value.clone(), 6).unwrap_err();
            assert!(matches!(err, GridError::InvalidJson { .. }), "{value}: {err:?}");
        }
        // An invalid item after the extent is covered is still an error.
        assert!(edges_of(json!([6, 0]), 6).is_err());
    }

    #[test]
    fn error_messages_name_the_place() {
        let err = edges_of(json!([[1, 3], -2]), 6).unwrap_err();
        assert_eq!(
            err.to_string(),
            "chunk_grid.configuration.chunk_shapes[0][1]: expected \
             a positive integer or a [value, count] pair of positive integers, found -2"
        );
        let err = edges_of(json!([1, 2]), 6).unwrap_err();
        assert_eq!(err, GridError::EdgesTooShort { sum: 3, extent: 6 }.in_dim(0));
    }

    #[test]
    fn rejects_bad_structure() {
        let shape = [4];
        let kind = |k: Value| json!({"name": "rectilinear", "configuration": {"kind": k, "chunk_shapes": [2]}});
        assert!(ChunkGrid::from_json(&kind(json!("inline")), &shape).is_ok());
        assert_eq!(
            ChunkGrid::from_json(&kind(json!("file")), &shape),
            Err(GridError::UnsupportedKind { kind: "file".into() })
        );
        assert!(ChunkGrid::from_json(&kind(json!(1)), &shape).is_err());
        let no_kind = json!({"name": "rectilinear", "configuration": {"chunk_shapes": [2]}});
        assert!(ChunkGrid::from_json(&no_kind, &shape).is_err());
        let named = json!({"name": "irregular", "configuration": {}});
        assert_eq!(ChunkGrid::from_json(&named, &shape), Err(GridError::UnknownGridName { name: "irregular".into() }));
        assert_eq!(
            ChunkGrid::from_json(&rect(json!([2, 2])), &shape),
            Err(GridError::RankMismatch { what: "chunk_shapes", expected: 1, got: 2 })
        );
        let regular = json!({"name": "regular", "configuration": {"chunk_shape": [0]}});
        assert!(matches!(ChunkGrid::from_json(&regular, &shape), Err(GridError::InvalidJson { .. })));
        for value in [json!(null), json!([]), json!({"name": "regular"})] {
            assert!(ChunkGrid::from_json(&value, &shape).is_err());
        }
        let long = json!({"name": "regular", "configuration": {"chunk_shape": "x".repeat(500)}});
        match ChunkGrid::from_json(&long, &shape) {
            Err(GridError::InvalidJson { found, .. }) => assert_eq!(found.chars().count(), 60),
            other => panic!("{other:?}"),
        }
    }

    /// Random JSON values, biased towards integers and small arrays.
    fn any_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            (0u64..8).prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<f64>().prop_map(Value::from),
            "[a-z]{0,8}".prop_map(Value::from),
            Just(Value::from("inline")),
        ];
        leaf.prop_recursive(4, 32, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map("[a-z]{0,3}", inner, 0..3)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn json_round_trip(g in grid()) {
            prop_assert_eq!(ChunkGrid::from_json(&g.to_json(), &g.shape()), Ok(g));
        }

        #[test]
        fn rle_round_trip((edges, extent) in edges_and_extent()) {
            let dim = ChunkDim::from_edges(extent, &edges).unwrap();
            let entry = dim_to_json(&dim);
            // Runs are maximal: no two neighbouring items share a value.
            if let Value::Array(items) = &entry {
                let values: Vec<u64> = items.iter().map(|i| i.as_u64().or_else(|| i[0].as_u64()).unwrap()).collect();
                prop_assert!(values.windows(2).all(|w| w[0] != w[1]));
            }
            prop_assert_eq!(edges_of(entry, extent), Ok(edges));
        }

        #[test]
        fn hostile_json_never_panics(
            chunk_shapes in any_json(),
            whole in any_json(),
            shape in prop::collection::vec(0u64..10, 0..3),
        ) {
            // Errors are fine; panics or huge allocations are not.
            let _ = ChunkGrid::from_json(&whole, &shape);
            if let Ok(g) = ChunkGrid::from_json(&rect(chunk_shapes), &shape) {
                prop_assert_eq!(g.shape(), shape.clone());
                prop_assert_eq!(ChunkGrid::from_json(&g.to_json(), &shape), Ok(g));
            }
        }

        #[test]
        fn hostile_edge_lists(items in prop::collection::vec(any_json(), 0..6), extent in 0u64..20) {
            if let Ok(edges) = edges_of(Value::Array(items), extent) {
                let sum: u128 = edges.iter().map(|&e| u128::from(e)).sum();
                prop_assert!(sum >= u128::from(extent));
                prop_assert!(edges.iter().all(|&e| e >= 1));
            }
        }
    }
}
