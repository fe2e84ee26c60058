//! The netCDF view of a file, through libnetcdf: groups, variables, dimension names and attributes.
//!
//! libnetcdf resolves dimension scales to names (and names `phony_dim_N` the dimensions of plain HDF5
//! datasets), hides netCDF-4 bookkeeping attributes and decodes attribute types; the HDF5 side
//! (`scan/hdf5`) adds what libnetcdf does not expose: where the chunks are.

use netcdf::{AttributeValue, Group, Variable};
use serde_json::Value;

use crate::dataset::GroupNode;
use crate::metadata::{float_attribute, Attributes};

/// Bookkeeping attributes of netCDF-4 / HDF5 dimension scales: never user attributes
/// (REFERENCE.md section 3).
const BOOKKEEPING: [&str; 10] = [
    "DIMENSION_LIST",
    "REFERENCE_LIST",
    "CLASS",
    "NAME",
    "_Netcdf4Dimid",
    "_Netcdf4Coordinates",
    "_NCProperties",
    "_IsNetcdf4",
    "_SuperblockVersion",
    "_nc3_strict",
];

/// One variable as libnetcdf sees it.
#[derive(Debug, Clone)]
pub(crate) struct NcVariable {
    /// `group/name` path from the root, no leading slash.
    pub(crate) path: String,
    /// Dimension names and lengths, in order.
    pub(crate) dims: Vec<(String, u64)>,
    /// User attributes.
    pub(crate) attributes: Attributes,
}

/// Groups (root first) and variables of a file.
#[derive(Debug, Clone, Default)]
pub(crate) struct NcStructure {
    pub(crate) groups: Vec<GroupNode>,
    pub(crate) variables: Vec<NcVariable>,
}

/// Reads the group tree, variables, dimensions and attributes of an open netCDF-4 / HDF5 file.
pub(crate) fn read_structure(file: &netcdf::File) -> Result<NcStructure, netcdf::Error> {
    let mut out = NcStructure::default();
    match file.root() {
        Some(root) => walk(&root, "", &mut out)?,
        None => return Err(netcdf::Error::Str("file has no root group".into())),
    }
    Ok(out)
}

fn walk(group: &Group<'_>, prefix: &str, out: &mut NcStructure) -> Result<(), netcdf::Error> {
    out.groups.push(GroupNode { path: prefix.to_string(), attributes: attributes(group.attributes())? });
    for var in group.variables() {
        out.variables.push(variable(&var, prefix)?);
    }
    for child in group.groups() {
        let path = join(prefix, &child.name());
        walk(&child, &path, out)?;
    }
    Ok(())
}

fn variable(var: &Variable<'_>, prefix: &str) -> Result<NcVariable, netcdf::Error> {
    let dims = var.dimensions().iter().map(|d| (d.name(), d.len() as u64)).collect();
    Ok(NcVariable { path: join(prefix, &var.name()), dims, attributes: attributes(var.attributes())? })
}

/// Runs `f` on the variable at `path` (`grp/sub/var`), or returns None when there is none.
///
/// # Errors
/// The error `f` returns.
pub fn with_variable<T>(
    file: &netcdf::File,
    path: &str,
    f: impl FnOnce(&Variable<'_>) -> Result<T, netcdf::Error>,
) -> Result<Option<T>, netcdf::Error> {
    let (groups, name) = path.rsplit_once('/').unwrap_or(("", path));
    if groups.is_empty() {
        return file.variable(name).map(|v| f(&v)).transpose();
    }
    let Some(root) = file.root() else { return Ok(None) };
    let segments: Vec<&str> = groups.split('/').collect();
    in_group(&root, &segments, name, f)
}

fn in_group<T>(
    group: &Group<'_>,
    segments: &[&str],
    name: &str,
    f: impl FnOnce(&Variable<'_>) -> Result<T, netcdf::Error>,
) -> Result<Option<T>, netcdf::Error> {
    match segments.split_first() {
        None => group.variable(name).map(|v| f(&v)).transpose(),
        Some((first, rest)) => match group.group(first) {
            Some(child) => in_group(&child, rest, name, f),
            None => Ok(None),
        },
    }
}

/// `prefix/name`, or `name` at the root.
pub(crate) fn join(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_string()
    } else {
        format!("{prefix}/{name}")
    }
}

fn attributes<'a>(attrs: impl Iterator<Item = netcdf::Attribute<'a>>) -> Result<Attributes, netcdf::Error> {
    let mut out = Attributes::new();
    for attr in attrs {
        if BOOKKEEPING.contains(&attr.name()) {
            continue;
        }
        out.insert(attr.name().to_string(), attribute_json(attr.value()?));
    }
    Ok(out)
}

/// JSON for one attribute value: scalars stay scalars, lists become arrays, non-finite floats become
/// the strings `"NaN"`, `"Infinity"`, `"-Infinity"`.
pub(crate) fn attribute_json(value: AttributeValue) -> Value {
    fn list<T>(v: Vec<T>, f: impl Fn(T) -> Value) -> Value {
        Value::Array(v.into_iter().map(f).collect())
    }
    match value {
        AttributeValue::Uchar(v) => Value::from(v),
        AttributeValue::Uchars(v) => list(v, Value::from),
        AttributeValue::Schar(v) => Value::from(v),
        AttributeValue::Schars(v) => list(v, Value::from),
        AttributeValue::Ushort(v) => Value::from(v),
        AttributeValue::Ushorts(v) => list(v, Value::from),
        AttributeValue::Short(v) => Value::from(v),
        AttributeValue::Shorts(v) => list(v, Value::from),
        AttributeValue::Uint(v) => Value::from(v),
        AttributeValue::Uints(v) => list(v, Value::from),
        AttributeValue::Int(v) => Value::from(v),
        AttributeValue::Ints(v) => list(v, Value::from),
        AttributeValue::Ulonglong(v) => Value::from(v),
        AttributeValue::Ulonglongs(v) => list(v, Value::from),
        AttributeValue::Longlong(v) => Value::from(v),
        AttributeValue::Longlongs(v) => list(v, Value::from),
        AttributeValue::Float(v) => float_attribute(f64::from(v)),
        AttributeValue::Floats(v) => list(v, |x| float_attribute(f64::from(x))),
        AttributeValue::Double(v) => float_attribute(v),
        AttributeValue::Doubles(v) => list(v, float_attribute),
        AttributeValue::Str(v) => Value::from(v),
        AttributeValue::Strs(v) => list(v, Value::from),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attribute_values_become_json() {
        assert_eq!(attribute_json(AttributeValue::Short(-3)), Value::from(-3));
        assert_eq!(attribute_json(AttributeValue::Floats(vec![1.5, f32::NAN])), serde_json::json!([1.5, "NaN"]));
        assert_eq!(attribute_json(AttributeValue::Double(f64::NEG_INFINITY)), Value::from("-Infinity"));
        assert_eq!(attribute_json(AttributeValue::Str("K".into())), Value::from("K"));
        assert_eq!(join("", "tas"), "tas");
        assert_eq!(join("a/b", "tas"), "a/b/tas");
    }
}
