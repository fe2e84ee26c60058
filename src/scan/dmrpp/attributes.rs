//! DAP4 attributes (`<Attribute name type><Value>..</Value></Attribute>`) as JSON attribute values,
//! in the forms the HDF5 scanner gives the same attributes (`scan/hdf5/attributes`): one value a
//! scalar, several a list, strings text, non-finite floats the markers, numbers typed in the notes.
//! A `Container` attribute (nested attributes) is a JSON object of its members, recursively.
//!
//! Attributes BES adds that are not the file's are left out: the root's `build_dmrpp_metadata`
//! (the writer's configuration), HDF4's `dmr_sds_ref`, the HDF5 handler's `fullnamepath` and
//! `origname`, and the netCDF-4 / dimension-scale bookkeeping the HDF5 scanner hides too.

use crate::scan::hdf5::BOOKKEEPING;
use serde_json::Value;

use super::types::{atomic, parse_float};
use super::xml::Element;
use crate::metadata::{float_attribute, ArrayNotes, Attributes, DataType};

/// BES's own attributes, never taken from a sidecar (besides the netCDF-4/HDF5 bookkeeping the HDF5
/// scanner hides too, [`BOOKKEEPING`]).
const BES_OWN: [&str; 4] = ["build_dmrpp_metadata", "dmr_sds_ref", "fullnamepath", "origname"];

/// Deepest `Container` nesting turned into JSON (the XML's own depth is bounded too).
const MAX_NESTING: usize = 32;

/// The attributes among `element`'s children, their number types, and (name, why) for those left
/// out because they have no JSON form.
pub(super) fn attributes(element: &Element) -> (Attributes, ArrayNotes, Vec<(String, String)>) {
    let (mut out, mut notes, mut dropped) = (Attributes::new(), ArrayNotes::default(), Vec::new());
    for attr in element.children_named("Attribute") {
        let Some(name) = attr.attr("name") else { continue };
        if BES_OWN.contains(&name) || BOOKKEEPING.contains(&name) {
            continue;
        }
        match attribute_json(attr, 0) {
            Ok((value, data_type)) => {
                if let Some(t) = data_type {
                    notes.note_type(name, t);
                }
                out.insert(name.to_string(), value);
            }
            Err(why) => dropped.push((name.to_string(), why.to_string())),
        }
    }
    (out, notes, dropped)
}

/// The HDF5 path BES's HDF5 handler gives the dataset behind variable `element` (its `fullnamepath`
/// attribute, without the leading `/`), when there is one.
pub(super) fn hdf5_path(element: &Element) -> Option<String> {
    let attr = element.children_named("Attribute").find(|a| a.attr("name") == Some("fullnamepath"))?;
    let path = attr.child("Value")?.text.trim();
    let path = path.strip_prefix('/').unwrap_or(path);
    (!path.is_empty()).then(|| path.to_string())
}

/// One attribute's JSON value and, for numbers, its type.
/// Why an attribute has no JSON value (the text of the warning that leaves it out).
#[derive(Debug, thiserror::Error)]
enum AttributeError {
    /// Containers nested too deep.
    #[error("containers nested deeper than {MAX_NESTING}")]
    TooDeep,
    /// A `Char` attribute.
    #[error("a Char attribute")]
    Char,
    /// An attribute of a type with no JSON form.
    #[error("an attribute of type {0:?}")]
    Type(String),
    /// An attribute without values.
    #[error("an attribute without values")]
    NoValues,
    /// A value that does not parse.
    #[error("{0}")]
    Value(#[from] super::types::ValueError),
}

fn attribute_json(attr: &Element, depth: usize) -> Result<(Value, Option<DataType>), AttributeError> {
    let kind = attr.attr("type").unwrap_or("");
    let values: Vec<&str> = attr.children_named("Value").map(|v| v.text.as_str()).collect();
    if kind == "Container" {
        if depth >= MAX_NESTING {
            return Err(AttributeError::TooDeep);
        }
        let mut map = serde_json::Map::new();
        for member in attr.children_named("Attribute") {
            let Some(name) = member.attr("name") else { continue };
            map.insert(name.to_string(), attribute_json(member, depth + 1)?.0);
        }
        return Ok((Value::Object(map), None));
    }
    if matches!(kind, "String" | "URL") {
        let strings = values.iter().map(|v| Value::from(*v)).collect();
        return Ok((one_or_list(strings).unwrap_or_else(|| Value::from("")), None));
    }
    let data_type = atomic(kind).filter(|t| *t != DataType::FixedBytes(1)).ok_or_else(|| match kind {
        "Char" => AttributeError::Char,
        _ => AttributeError::Type(kind.to_string()),
    })?;
    let numbers = values.iter().map(|v| number(data_type, v)).collect::<Result<Vec<_>, _>>()?;
    let value = one_or_list(numbers).ok_or(AttributeError::NoValues)?;
    Ok((value, Some(data_type)))
}

/// One number of `data_type` written as text.
fn number(data_type: DataType, text: &str) -> Result<Value, AttributeError> {
    let text = text.trim();
    let bad = || AttributeError::Value(super::types::ValueError::NotA { text: text.to_string(), data_type });
    if data_type.is_float() {
        let v = parse_float(text).ok_or_else(bad)?;
        let v = if data_type == DataType::Float32 { f64::from(v as f32) } else { v };
        return Ok(float_attribute(v));
    }
    let bytes = super::types::value_bytes(data_type, text)?;
    let value = data_type.values_to_f64(&bytes);
    Ok(match data_type {
        DataType::UInt64 => Value::from(u64::from_ne_bytes(bytes.try_into().map_err(|_| bad())?)),
        DataType::Int64 => Value::from(i64::from_ne_bytes(bytes.try_into().map_err(|_| bad())?)),
        _ => Value::from(value.first().copied().ok_or_else(bad)? as i64),
    })
}

/// A single value as itself, several as a list, none as `None`.
fn one_or_list(mut values: Vec<Value>) -> Option<Value> {
    match values.len() {
        0 => None,
        1 => values.pop(),
        _ => Some(Value::Array(values)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(xml: &str) -> (Attributes, ArrayNotes, Vec<(String, String)>) {
        attributes(&super::super::xml::parse(xml.as_bytes()).unwrap())
    }

    #[test]
    fn typed_nested_and_left_out_attributes() {
        let (attrs, notes, dropped) = parsed(
            r#"<v><Attribute name="units" type="String"><Value>K</Value></Attribute>
            <Attribute name="valid" type="Int16"><Value>1</Value><Value>-2</Value></Attribute>
            <Attribute name="scale" type="Float32"><Value>0.5</Value></Attribute>
            <Attribute name="big" type="UInt64"><Value>18446744073709551615</Value></Attribute>
            <Attribute name="c" type="Container"><Attribute name="x" type="Float64"><Value>nan</Value></Attribute></Attribute>
            <Attribute name="fullnamepath" type="String"><Value>/v</Value></Attribute>
            <Attribute name="odd" type="OtherXML"><Value>x</Value></Attribute></v>"#,
        );
        assert_eq!(attrs["units"], "K");
        assert_eq!(attrs["valid"], serde_json::json!([1, -2]));
        assert_eq!(attrs["scale"], 0.5);
        assert_eq!(attrs["big"], u64::MAX);
        assert_eq!(attrs["c"]["x"], float_attribute(f64::NAN));
        assert!(!attrs.contains_key("fullnamepath"));
        assert_eq!(notes.types.get("valid"), Some(&DataType::Int16));
        assert_eq!(dropped.len(), 1);
        assert!(dropped[0].1.contains("OtherXML"));
    }
}
