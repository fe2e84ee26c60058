//! The DMR of a DMR++ document (input: the root [`Element`]; output: [`Dmr`]): its groups with their
//! attributes, and every variable with its group, netCDF dimensions and attributes, ready for
//! `translate`.
//!
//! Shared dimensions (`<Dimension name size>` in a group, `<Dim name="/g/d"/>` in a variable) keep
//! their names (the last path component, as netCDF shows them). Anonymous ones (`<Dim size="n"/>`,
//! what BES writes for an HDF5 dataset without dimension scales) are named as libnetcdf and the HDF5
//! scanner name them: per group, an existing dimension of the same length that the variable does not
//! use already is reused, else a new `phony_dim_N` is numbered with the next dimension id of the file
//! (shared dimensions first), groups visited children first.

use std::collections::HashMap;

use super::attributes::{attributes, hdf5_path};
use super::types::names_a_variable;
use super::xml::Element;
use crate::dataset::GroupNode;
use crate::metadata::{ArrayNotes, Attributes};

/// Most dimensions one variable may have (HDF5's own limit is 32).
const MAX_RANK: usize = 32;

/// Why the DMR of a document cannot be read.
#[derive(Debug, thiserror::Error)]
pub(super) enum DmrError {
    /// The root element is not `Dataset`.
    #[error("the root element is <{0}>, not <Dataset>")]
    Root(String),
    /// Groups nested deeper than elements may be.
    #[error("groups nested too deep")]
    TooDeep,
    /// A shared dimension without a valid size.
    #[error("dimension {0}: no valid size")]
    DimensionSize(String),
    /// A group without a valid name.
    #[error("a group in /{path} has no valid name ({name:?})")]
    GroupName {
        /// The parent group's path.
        path: String,
        /// The name it has.
        name: String,
    },
}

/// Why a variable's dimensions cannot be resolved.
#[derive(Debug, Clone, thiserror::Error)]
pub(super) enum DimError {
    /// More dimensions than a variable may have.
    #[error("{0} dimensions, more than {MAX_RANK}")]
    Rank(usize),
    /// A shared dimension the document does not declare.
    #[error("dimension {0} is not declared")]
    Undeclared(String),
    /// An anonymous dimension's size that does not parse.
    #[error("dimension size {0:?}")]
    Size(String),
    /// A `<Dim>` without name or size.
    #[error("a <Dim> with neither name nor size")]
    Empty,
}

/// The DMR's content.
pub(super) struct Dmr<'a> {
    /// Groups, the root first.
    pub(super) groups: Vec<GroupNode>,
    /// Variables, in group order (children first) and document order within a group.
    pub(super) variables: Vec<DmrVariable<'a>>,
    /// Enumerations by fully qualified name (`/g1/NoNameEnum0`).
    pub(super) enumerations: HashMap<String, &'a Element>,
    /// (object, attribute, why) for attributes left out.
    pub(super) dropped: Vec<(String, String, String)>,
}

/// One variable of the DMR.
pub(super) struct DmrVariable<'a> {
    /// Path from the root without leading slash (`g1/temp`).
    pub(super) path: String,
    /// Its element (type name, storage children, structure members).
    pub(super) element: &'a Element,
    /// Its dimensions: (netCDF name, length), outermost first; `Err` when one cannot be resolved.
    pub(super) dims: Result<Vec<(String, u64)>, DimError>,
    /// Its attributes and their number types.
    pub(super) attributes: Attributes,
    pub(super) notes: ArrayNotes,
}

/// A dimension of one axis before anonymous ones are named.
enum Axis {
    Named(String, u64),
    Anonymous(u64),
}

/// Walks the document from its root `Dataset`.
pub(super) fn read_dmr(root: &Element) -> Result<Dmr<'_>, DmrError> {
    if root.name != "Dataset" {
        return Err(DmrError::Root(root.name.clone()));
    }
    let mut walk = Walk::default();
    walk.group(root, "", 0)?;
    let real = walk.shared.len();
    let mut phony_count = 0;
    let mut variables = Vec::with_capacity(walk.found.len());
    for group in walk.post {
        let mut group_dims: Vec<(String, u64)> = walk.group_shared[group].clone();
        for found in walk.found.iter().filter(|f| f.group == group) {
            let dims = found.axes.as_ref().map_err(Clone::clone).map(|axes| {
                let mut used: Vec<String> = Vec::new();
                let mut dims = Vec::with_capacity(axes.len());
                for axis in axes {
                    let (name, length) = match axis {
                        Axis::Named(name, length) => (name.clone(), *length),
                        Axis::Anonymous(length) => {
                            let free = group_dims.iter().find(|(n, l)| l == length && !used.contains(n));
                            let name = free.map(|(n, _)| n.clone()).unwrap_or_else(|| {
                                let name = format!("phony_dim_{}", real + phony_count);
                                phony_count += 1;
                                group_dims.push((name.clone(), *length));
                                name
                            });
                            (name, *length)
                        }
                    };
                    used.push(name.clone());
                    dims.push((name, length));
                }
                dims
            });
            let (attributes, mut notes, dropped) = attributes(found.element);
            // BES names variables for DAP (`Data_Fields` for the group `Data Fields`): where the
            // HDF5 path differs, it goes with the array, for `verify`'s look-up in the source.
            notes.source_path = hdf5_path(found.element).filter(|p| *p != found.path);
            walk.dropped.extend(dropped.into_iter().map(|(name, why)| (found.path.clone(), name, why)));
            variables.push(DmrVariable { path: found.path.clone(), element: found.element, dims, attributes, notes });
        }
    }
    Ok(Dmr { groups: walk.groups, variables, enumerations: walk.enumerations, dropped: walk.dropped })
}

/// A variable found, before its anonymous dimensions are named.
struct Found<'a> {
    path: String,
    group: usize,
    element: &'a Element,
    axes: Result<Vec<Axis>, DimError>,
}

#[derive(Default)]
struct Walk<'a> {
    groups: Vec<GroupNode>,
    /// Every shared dimension by fully qualified name.
    shared: HashMap<String, u64>,
    /// Per group, its shared dimensions (name, length) in document order.
    group_shared: Vec<Vec<(String, u64)>>,
    enumerations: HashMap<String, &'a Element>,
    found: Vec<Found<'a>>,
    /// Group indexes, children before their parent.
    post: Vec<usize>,
    dropped: Vec<(String, String, String)>,
}

impl<'a> Walk<'a> {
    fn group(&mut self, element: &'a Element, path: &str, depth: usize) -> Result<(), DmrError> {
        if depth > super::xml::MAX_DEPTH {
            return Err(DmrError::TooDeep);
        }
        let (attributes, _, dropped) = attributes(element);
        self.dropped.extend(dropped.into_iter().map(|(name, why)| (format!("/{path}"), name, why)));
        let index = self.groups.len();
        self.groups.push(GroupNode::new(path, attributes));
        self.group_shared.push(Vec::new());
        let prefix = if path.is_empty() { String::from("/") } else { format!("/{path}/") };
        for child in &element.children {
            let name = child.attr("name").unwrap_or_default();
            match child.name.as_str() {
                "Dimension" => {
                    let size = child.attr("size").and_then(|s| s.trim().parse::<u64>().ok());
                    let size = size.ok_or_else(|| DmrError::DimensionSize(format!("{prefix}{name}")))?;
                    self.shared.insert(format!("{prefix}{name}"), size);
                    self.group_shared[index].push((name.to_string(), size));
                }
                "Enumeration" => {
                    self.enumerations.insert(format!("{prefix}{name}"), child);
                }
                _ => {}
            }
        }
        for child in &element.children {
            let name = child.attr("name").unwrap_or_default();
            if child.name == "Group" {
                if name.is_empty() || name.contains('/') {
                    return Err(DmrError::GroupName { path: path.to_string(), name: name.to_string() });
                }
                let sub = if path.is_empty() { name.to_string() } else { format!("{path}/{name}") };
                self.group(child, &sub, depth + 1)?;
            } else if names_a_variable(child) {
                let var_path = if path.is_empty() { name.to_string() } else { format!("{path}/{name}") };
                let axes = self.axes(child);
                self.found.push(Found { path: var_path, group: index, element: child, axes });
            }
        }
        self.post.push(index);
        Ok(())
    }

    /// The axes of a variable's `<Dim>` children.
    fn axes(&self, element: &Element) -> Result<Vec<Axis>, DimError> {
        let dims: Vec<&Element> = element.children_named("Dim").collect();
        if dims.len() > MAX_RANK {
            return Err(DimError::Rank(dims.len()));
        }
        dims.iter()
            .map(|dim| match (dim.attr("name"), dim.attr("size")) {
                (Some(name), _) => {
                    let length = self.shared.get(name).ok_or_else(|| DimError::Undeclared(name.to_string()))?;
                    Ok(Axis::Named(name.rsplit('/').next().unwrap_or(name).to_string(), *length))
                }
                (None, Some(size)) => {
                    size.trim().parse().map(Axis::Anonymous).map_err(|_| DimError::Size(size.to_string()))
                }
                (None, None) => Err(DimError::Empty),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_anonymous_dimensions_as_libnetcdf() {
        let doc = r#"<Dataset><Dimension name="t" size="2"/>
            <Int32 name="a"><Dim name="/t"/><Dim size="3"/></Int32>
            <Int32 name="b"><Dim size="3"/><Dim size="3"/></Int32>
            <Int32 name="c"><Dim size="2"/></Int32>
            <Group name="g"><Float32 name="d"><Dim size="3"/></Float32><Int8 name="e"><Dim name="/nope"/></Int8></Group>
            </Dataset>"#;
        let root = super::super::xml::parse(doc.as_bytes()).unwrap();
        let dmr = read_dmr(&root).unwrap();
        let dims = |path: &str| {
            let v = dmr.variables.iter().find(|v| v.path == path).unwrap();
            v.dims.clone().map(|d| d.into_iter().map(|(n, _)| n).collect::<Vec<_>>())
        };
        // The child group is visited first: its phony dimension takes the first number.
        assert_eq!(dims("g/d").unwrap(), ["phony_dim_1"]);
        assert_eq!(dims("a").unwrap(), ["t", "phony_dim_2"]);
        assert_eq!(dims("b").unwrap(), ["phony_dim_2", "phony_dim_3"]);
        assert_eq!(dims("c").unwrap(), ["t"]);
        assert!(dims("g/e").unwrap_err().to_string().contains("not declared"));
        assert_eq!(dmr.groups.iter().map(|g| g.path.as_str()).collect::<Vec<_>>(), ["", "g"]);
    }
}
