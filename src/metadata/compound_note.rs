//! The part of vzarr's array notes (`zarr.json` extension field `"vzarr"`, key `"compound"`) that
//! says how a Zarr `struct` array looked in its source, an HDF5 compound, where the struct cannot say
//! it itself:
//!
//! ```json
//! "compound": {"member_order": ["test_5", "test_10", "test_15"],
//!              "array_members": {"ID": [8], "pos": [5, 10]},
//!              "members": {"inner": {"member_order": ["b", "a"]}}}
//! ```
//!
//! - `member_order`: the members in the order the compound declares them, when it is not the
//!   struct's field order (the fields follow the members' byte offsets, so that the struct's packed
//!   bytes are the compound's). h5py and netCDF4 list the members in the declared order.
//! - `array_members`: members of HDF5 array type, name -> dimensions. The struct holds each as
//!   nested structs whose fields are named "0", "1", ..., one level per dimension (zarr-python's
//!   struct has no subarray fields); h5py and netCDF4 show a NumPy subarray field of that shape.
//! - `members`: the same note for a member that is itself a compound (for an array member: its base
//!   compound, the type of each element), by name; only members with something to say are listed.
//!
//! Each level is a note on one compound: the top level on the array's own type, a nested one on a
//! nested compound, so that nesting follows the struct's. Absent keys mean nothing to say (the
//! struct's order, no array members). vzarr's Python `Array.dtype` applies the note: the NumPy
//! dtype h5py gives, over the same packed bytes.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::{DataType, StructType, MAX_STRUCT_DEPTH};

/// What a struct cannot say about the HDF5 compound it holds (see the module docs).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CompoundNote {
    /// The members in declared order, when it differs from the struct's field order.
    pub member_order: Option<Vec<String>>,
    /// Array members: name -> dimensions (one nested struct level each).
    pub array_members: BTreeMap<String, Vec<u64>>,
    /// Notes on member compounds (an array member's base compound), by member name.
    pub members: BTreeMap<String, CompoundNote>,
}

impl CompoundNote {
    /// Whether the note says nothing (the struct alone describes the compound).
    pub fn is_empty(&self) -> bool {
        self.member_order.is_none() && self.array_members.is_empty() && self.members.is_empty()
    }

    /// The note as JSON (keys with nothing to say left out).
    pub fn to_json(&self) -> Value {
        let mut out = Map::new();
        if let Some(order) = &self.member_order {
            out.insert("member_order".into(), Value::from(order.clone()));
        }
        if !self.array_members.is_empty() {
            let arrays = self.array_members.iter().map(|(name, dims)| (name.clone(), Value::from(dims.clone())));
            out.insert("array_members".into(), Value::Object(arrays.collect()));
        }
        if !self.members.is_empty() {
            let members = self.members.iter().map(|(name, note)| (name.clone(), note.to_json()));
            out.insert("members".into(), Value::Object(members.collect()));
        }
        Value::Object(out)
    }

    /// Parses a note `depth` compounds deep; the error says what is malformed.
    pub(super) fn from_json(value: &Value, depth: usize) -> Result<Self, NoteError> {
        if depth >= MAX_STRUCT_DEPTH {
            return Err(NoteError::TooDeep);
        }
        let object = value.as_object().ok_or_else(|| NoteError::NotObject { value: value.clone() })?;
        let mut note = Self::default();
        if let Some(order) = object.get("member_order") {
            let names = order.as_array().and_then(|names| names.iter().map(|n| n.as_str().map(String::from)).collect());
            note.member_order = Some(names.ok_or_else(|| NoteError::MemberOrder { order: order.clone() })?);
        }
        if let Some(arrays) = object.get("array_members") {
            let arrays = arrays.as_object().ok_or_else(|| NoteError::ArrayMembers { arrays: arrays.clone() })?;
            for (name, dims) in arrays {
                let parsed: Option<Vec<u64>> = dims.as_array().and_then(|d| d.iter().map(Value::as_u64).collect());
                let parsed = parsed
                    .filter(|d| !d.is_empty() && d.iter().all(|&n| n > 0))
                    .ok_or_else(|| NoteError::Dimensions { name: name.clone(), dims: dims.clone() })?;
                note.array_members.insert(name.clone(), parsed);
            }
        }
        if let Some(members) = object.get("members") {
            let members = members.as_object().ok_or_else(|| NoteError::Members { members: members.clone() })?;
            for (name, nested) in members {
                let nested = Self::from_json(nested, depth + 1).map_err(|why| member(name, why))?;
                note.members.insert(name.clone(), nested);
            }
        }
        Ok(note)
    }

    /// Checks that the note describes `data_type`: a struct whose fields `member_order` lists once
    /// each, whose array members are nested structs of fields "0", "1", ... as deep and wide as their
    /// dimensions, and whose noted member compounds are structs.
    pub(super) fn check(&self, data_type: DataType) -> Result<(), NoteError> {
        let DataType::Struct(s) = data_type else { return Err(NoteError::NotStruct { data_type }) };
        if let Some(order) = &self.member_order {
            let mut declared: Vec<&str> = order.iter().map(String::as_str).collect();
            let mut fields: Vec<&str> = s.fields().iter().map(|f| f.name.as_str()).collect();
            declared.sort_unstable();
            fields.sort_unstable();
            if declared != fields {
                return Err(NoteError::Order { order: order.clone() });
            }
        }
        for (name, dims) in &self.array_members {
            array_base(field(s, name)?, dims).map_err(|why| array_member(name, why))?;
        }
        for (name, nested) in &self.members {
            let mut member = field(s, name)?;
            if let Some(dims) = self.array_members.get(name) {
                member = array_base(member, dims).map_err(|why| array_member(name, why))?;
            }
            nested.check(member).map_err(|why| self::member(name, why))?;
        }
        Ok(())
    }
}

/// Why a compound note is malformed, or does not describe its struct.
#[derive(Debug, thiserror::Error)]
pub(crate) enum NoteError {
    /// Notes nested deeper than structs may be.
    #[error("notes nested more than {} deep", MAX_STRUCT_DEPTH)]
    TooDeep,
    /// A note that is not an object.
    #[error("{value} is not an object")]
    NotObject {
        /// The note.
        value: Value,
    },
    /// A `member_order` that is not a list of names.
    #[error("member_order: {order} is not a list of names")]
    MemberOrder {
        /// The `member_order`.
        order: Value,
    },
    /// An `array_members` that is not an object.
    #[error("array_members: {arrays} is not an object")]
    ArrayMembers {
        /// The `array_members`.
        arrays: Value,
    },
    /// An array member's dimensions that are not a list of positive integers.
    #[error("array member {name}: {dims} is not a list of dimensions")]
    Dimensions {
        /// The member.
        name: String,
        /// Its dimensions as noted.
        dims: Value,
    },
    /// A `members` that is not an object.
    #[error("members: {members} is not an object")]
    Members {
        /// The `members`.
        members: Value,
    },
    /// What is wrong with a member's own note.
    #[error("member {name}: {source}")]
    Member {
        /// The member.
        name: String,
        /// What is wrong.
        source: Box<NoteError>,
    },
    /// A note of a type that is no struct.
    #[error("the data type {data_type} is no struct")]
    NotStruct {
        /// The type.
        data_type: DataType,
    },
    /// A `member_order` that does not list the struct's fields once each.
    #[error("member_order {order:?} does not list the struct's fields once each")]
    Order {
        /// The `member_order`.
        order: Vec<String>,
    },
    /// What is wrong with an array member's type.
    #[error("array member {name}: {source}")]
    ArrayMember {
        /// The member.
        name: String,
        /// What is wrong.
        source: Box<NoteError>,
    },
    /// A member the struct has no field for.
    #[error("no field {name} in the struct")]
    NoField {
        /// The member.
        name: String,
    },
    /// An array level that is no struct.
    #[error("{level} is no struct of {fields} fields")]
    LevelNotStruct {
        /// The level's type.
        level: DataType,
        /// The fields it should have.
        fields: u64,
    },
    /// An array level that is not `fields` fields "0".. of one type.
    #[error("the struct is not {fields} fields \"0\".. of one type")]
    NotIndexed {
        /// The fields it should have.
        fields: u64,
    },
}

fn member(name: &str, why: NoteError) -> NoteError {
    NoteError::Member { name: name.to_string(), source: Box::new(why) }
}

fn array_member(name: &str, why: NoteError) -> NoteError {
    NoteError::ArrayMember { name: name.to_string(), source: Box::new(why) }
}

/// The type of field `name` of `s`.
fn field(s: &StructType, name: &str) -> Result<DataType, NoteError> {
    let found = s.fields().iter().find(|f| f.name == name);
    found.map(|f| f.data_type).ok_or_else(|| NoteError::NoField { name: name.to_string() })
}

/// The base type of an array member held as `data_type` of dimensions `dims`: each level a struct
/// of fields "0" to "d-1" of one type.
fn array_base(data_type: DataType, dims: &[u64]) -> Result<DataType, NoteError> {
    let mut level = data_type;
    for &d in dims {
        let DataType::Struct(s) = level else { return Err(NoteError::LevelNotStruct { level, fields: d }) };
        let fields = s.fields();
        let indexed = fields.len() as u64 == d
            && fields.iter().enumerate().all(|(i, f)| f.name == i.to_string() && f.data_type == fields[0].data_type);
        if !indexed {
            return Err(NoteError::NotIndexed { fields: d });
        }
        level = fields[0].data_type;
    }
    Ok(level)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::metadata::StructField;

    fn structs(fields: Vec<(&str, DataType)>) -> DataType {
        let fields = fields.into_iter().map(|(name, data_type)| StructField { name: name.into(), data_type }).collect();
        DataType::Struct(StructType::intern(fields).unwrap())
    }

    /// `c: struct{"0": struct{"0": i1, "1": i1}, "1": ...}` (an int8 array member of [2, 2]), then a
    /// nested compound `n: struct{b, a}`.
    fn sample() -> DataType {
        let row = structs(vec![("0", DataType::Int8), ("1", DataType::Int8)]);
        let nested = structs(vec![("b", DataType::Int16), ("a", DataType::Int8)]);
        structs(vec![("z", DataType::Float32), ("c", structs(vec![("0", row), ("1", row)])), ("n", nested)])
    }

    #[test]
    fn notes_round_trip_and_fit_their_struct() {
        let doc = json!({"member_order": ["n", "c", "z"],
                         "array_members": {"c": [2, 2]},
                         "members": {"n": {"member_order": ["a", "b"]}}});
        let note = CompoundNote::from_json(&doc, 0).unwrap();
        assert_eq!(note.to_json(), doc);
        assert_eq!(note.member_order.as_deref().map(<[String]>::len), Some(3));
        note.check(sample()).unwrap();
        assert!(CompoundNote::default().is_empty());
        assert_eq!(CompoundNote::default().to_json(), json!({}));
    }

    #[test]
    fn notes_that_do_not_fit_the_struct_are_refused() {
        for (bad, why) in [
            (json!({"member_order": ["n", "c"]}), "does not list the struct's fields"),
            (json!({"member_order": ["n", "c", "z", "z"]}), "does not list the struct's fields"),
            (json!({"array_members": {"c": [2, 3]}}), "array member c: the struct is not 3 fields"),
            (json!({"array_members": {"c": [2, 2, 2]}}), "array member c: int8 is no struct"),
            (json!({"array_members": {"x": [2]}}), "no field x"),
            (json!({"members": {"z": {}}}), "member z: the data type float32 is no struct"),
            (json!({"members": {"n": {"member_order": ["a"]}}}), "member n: member_order"),
        ] {
            let note = CompoundNote::from_json(&bad, 0).unwrap();
            let err = note.check(sample()).unwrap_err().to_string();
            assert!(err.contains(why), "{bad}: {err}");
        }
        assert!(CompoundNote::default().check(DataType::Int8).is_err());
    }

    #[test]
    fn malformed_notes_are_named() {
        for (bad, why) in [
            (json!([]), "is not an object"),
            (json!({"member_order": "a"}), "member_order"),
            (json!({"member_order": [1]}), "member_order"),
            (json!({"array_members": []}), "array_members"),
            (json!({"array_members": {"c": []}}), "array member c"),
            (json!({"array_members": {"c": [0]}}), "array member c"),
            (json!({"array_members": {"c": [-1]}}), "array member c"),
            (json!({"members": {"n": {"member_order": {}}}}), "member n: member_order"),
        ] {
            let err = CompoundNote::from_json(&bad, 0).unwrap_err().to_string();
            assert!(err.contains(why), "{bad}: {err}");
        }
        let mut deep = json!({});
        for _ in 0..MAX_STRUCT_DEPTH {
            deep = json!({"members": {"x": deep}});
        }
        assert!(CompoundNote::from_json(&deep, 0).unwrap_err().to_string().contains("nested more than"));
    }
}
