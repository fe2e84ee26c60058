//! The netCDF view of an HDF5 file, from the native reader: groups, variables, dimension names and
//! lengths, user attributes, following the NetCDF-4 conventions as libnetcdf applies them.
//!
//! - A dataset with `CLASS = "DIMENSION_SCALE"` defines a dimension named as its link (not by its
//!   `NAME` attribute, which may be any text); when `NAME` starts with "This is a netCDF dimension but
//!   not a netCDF variable" the dataset only carries the dimension and is not a variable. A scale
//!   reached through links in several groups defines a dimension in each; a variable's reference to it
//!   names the one of its own group or nearest ancestor.
//! - A variable's dimensions come from `DIMENSION_LIST` (object references to scales); a scale
//!   variable is its own dimension; a multi-dimensional coordinate variable lists dimension ids in
//!   `_Netcdf4Coordinates`.
//! - A variable that has a dimension's name without being its coordinate is stored as
//!   `_nc4_non_coord_NAME` and is shown as `NAME`.
//! - Datasets without scales get `phony_dim_N` dimensions as libnetcdf names them: per group, an
//!   existing phony dimension of the same length and kind is reused, else a new one is numbered with
//!   the next dimension id of the file.
//! - An unlimited dimension is as long as the longest variable that uses it.
//! - Bookkeeping attributes are hidden.
//! - External links are followed (`links`): objects are keyed by their file and address, so a scale
//!   and the variables listing it in `DIMENSION_LIST` match within their own file, as libnetcdf
//!   matches them by file number and address; a link leading back to one of its own ancestor groups
//!   (a cycle) is left out with a warning.

use std::collections::HashMap;

use hdf5_reader::group::Group;
use hdf5_reader::Dataset;

use super::attributes::{attribute_json, attribute_type, reference_json, Heap, BOOKKEEPING};
use super::links::LinkedFiles;
use crate::dataset::{GroupNode, Hdf5Links, LinkTarget};
use crate::metadata::{ArrayNotes, Attributes};

/// libnetcdf's name for the dimension scale of a dimension that has no variable.
const DIMENSION_ONLY: &str = "This is a netCDF dimension but not a netCDF variable";
/// The prefix libnetcdf gives a variable named as a dimension it is not the coordinate of.
const NON_COORD: &str = "_nc4_non_coord_";
/// Deepest group nesting followed (a crafted file cannot recurse without end).
const MAX_DEPTH: usize = 64;

/// One variable as netCDF shows it.
pub(crate) struct H5Variable {
    /// `group/name` path from the root, no leading slash.
    pub(crate) path: String,
    /// The dataset holding its values.
    pub(crate) dataset: Dataset,
    /// The file it lies in (its source id: 0 for the file scanned, more for linked files).
    pub(crate) file: usize,
    /// Dimension names and (netCDF) lengths, in order.
    pub(crate) dims: Vec<(String, u64)>,
    /// User attributes.
    pub(crate) attributes: Attributes,
    /// The numeric types of its attributes.
    pub(crate) notes: ArrayNotes,
    /// Why its dimensions cannot be believed: a fixed-length dimension (its scale, which
    /// `DIMENSION_LIST` names) of another length than the dataset along that axis. The variable is
    /// refused by name: its dimension's length would invent elements (read as fill) or lose some.
    pub(crate) dimension_problem: Option<String>,
}

/// Groups (root first) and variables of a file, and attributes that had to be left out.
#[derive(Default)]
pub(crate) struct H5Structure {
    pub(crate) groups: Vec<GroupNode>,
    pub(crate) variables: Vec<H5Variable>,
    /// (object path, attribute name, why) of attributes with no JSON form.
    pub(crate) dropped_attributes: Vec<(String, String, String)>,
    /// (link path, why) of external links not followed.
    pub(crate) unresolved_links: Vec<(String, String)>,
    /// The path (from `/`, as libhdf5 names it) of every group and dataset, by object header address:
    /// what object references resolve to.
    pub(crate) objects: Objects,
    /// Every group's links as stored and its reference attributes (`Hdf5Links`).
    pub(crate) links: Hdf5Links,
}

/// An object of the scan: its file (index) and object header address.
pub(crate) type ObjectKey = (usize, u64);

/// HDF5 object paths (`/`, `/grp/name`) by file and object header address (the first path found for
/// an object of several hard links).
#[derive(Default)]
pub(crate) struct Objects {
    paths: HashMap<ObjectKey, String>,
    /// Each file's address size, which old-style object references are written with.
    offset_sizes: Vec<u8>,
}

impl Objects {
    fn add(&mut self, key: ObjectKey, path: &str) {
        self.paths.entry(key).or_insert_with(|| format!("/{path}"));
    }

    /// The address size of file `file`.
    pub(crate) fn offset_size(&self, file: usize) -> u8 {
        self.offset_sizes.get(file).copied().unwrap_or(0)
    }

    /// The paths of the objects the old-style object references in `raw` (stored in file `file`,
    /// `size` bytes per reference) point at: the empty string for a null reference (address 0 or
    /// undefined); an error for a reference of another size than the file's addresses (new-style
    /// references) or to an address that is no group or dataset of the file.
    pub(crate) fn resolve(&self, file: usize, raw: &[u8], size: u8) -> Result<Vec<String>, ReferenceError> {
        let offset_size = self.offset_size(file);
        if size != offset_size || size == 0 {
            return Err(ReferenceError::Size { size, offset_size });
        }
        let addresses = hdf5_reader::reference::read_object_references(raw, size).map_err(ReferenceError::Read)?;
        addresses
            .iter()
            .map(|&a| match a {
                0 => Ok(String::new()),
                a if hdf5_reader::io::Cursor::is_undefined_offset(a, size) => Ok(String::new()),
                a => self.paths.get(&(file, a)).cloned().ok_or(ReferenceError::Dangling(a)),
            })
            .collect()
    }
}

/// Why object references do not resolve to the paths of their objects.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ReferenceError {
    /// References of another size than the file's addresses.
    #[error(
        "object references of {size} bytes (new-style HDF5 1.12 references?), not the file's {offset_size}-byte addresses"
    )]
    Size {
        /// Bytes per reference.
        size: u8,
        /// Bytes of the file's addresses.
        offset_size: u8,
    },
    /// The reader could not read the references.
    #[error("{0}")]
    Read(#[source] hdf5_reader::error::Error),
    /// A reference to an address that holds no object.
    #[error("an object reference to address {0:#x}, which is no group or dataset of the file")]
    Dangling(u64),
}

/// Why the netCDF structure of a file could not be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StructureError {
    /// The root group could not be read.
    #[error("root group: {0}")]
    Root(#[source] hdf5_reader::error::Error),
    /// A group's attributes, members or links could not be read.
    #[error("group /{path}: {what}: {source}")]
    Group {
        /// The group's path.
        path: String,
        /// `attributes`, `members` or `links`.
        what: &'static str,
        /// The reader's error.
        source: hdf5_reader::error::Error,
    },
    /// An object lies in a file the scan did not open.
    #[error("/{0}: lies in a file the scan did not open")]
    Unopened(String),
    /// Groups nested deeper than vzarr walks.
    #[error("{0}: groups nested deeper than {MAX_DEPTH} levels")]
    TooDeep(String),
    /// A dataset's `DIMENSION_LIST` could not be read.
    #[error("{name}: DIMENSION_LIST: {source}")]
    DimensionList {
        /// The dataset's name.
        name: String,
        /// The reader's error.
        source: hdf5_reader::error::Error,
    },
}

/// A dimension defined by a scale.
#[derive(Debug, Clone)]
struct Dim {
    name: String,
    length: u64,
    unlimited: bool,
}

/// A dataset found while walking, before dimensions are resolved.
struct Found {
    group: usize,
    path: String,
    dataset: Dataset,
    /// The file the dataset lies in.
    file: usize,
    /// For a dimension scale: its `NAME` attribute (None when it has none); read once while walking.
    scale: Option<Option<String>>,
}

impl Found {
    fn is_scale(&self) -> bool {
        self.scale.is_some()
    }

    /// A scale that only carries a dimension, not a netCDF variable.
    fn dimension_only(&self) -> bool {
        matches!(&self.scale, Some(Some(name)) if name.starts_with(DIMENSION_ONLY))
    }
}

/// How one axis of a variable was resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Axis {
    /// Index into the real dimensions.
    Real(usize),
    /// Index into the phony dimensions.
    Phony(usize),
}

/// Reads the netCDF structure of the file scanned, following its external links (`links`).
pub(crate) fn read_structure(links: &LinkedFiles, record_links: bool) -> Result<H5Structure, StructureError> {
    let mut out = H5Structure::default();
    let (mut found, mut post, mut group_attributes) = (Vec::new(), Vec::new(), Vec::new());
    let root = links.main().root_group().map_err(StructureError::Root)?;
    let mut walked = Walked {
        found: &mut found,
        post: &mut post,
        group_attributes: &mut group_attributes,
        links,
        ancestors: Vec::new(),
        record_links,
    };
    walk(&root, "", 0, &mut out, &mut walked)?;
    out.objects.offset_sizes = links.files().iter().map(|f| f.file.superblock().offset_size).collect();
    // Group attributes once every object's path is known (object references name them).
    for (index, file, group) in &group_attributes {
        let (index, file) = (*index, *file);
        let path = out.groups[index].path.clone();
        let attrs = group.attributes().map_err(|source| StructureError::Group {
            path: path.clone(),
            what: "attributes",
            source,
        })?;
        let resolve = |reference: &[u8], size: usize| group.resolve_vlen_reference_bytes(reference, size);
        let heap = Heap { offset_size: usize::from(out.objects.offset_size(file)), resolve: &resolve };
        let (values, notes) =
            attributes((path.as_str(), file), attrs, &out.objects, &heap, &mut out.dropped_attributes);
        if record_links {
            for name in notes.reference_attributes.iter().filter(|n| values.contains_key(n.as_str())) {
                out.links.reference_attributes.push((path.clone(), name.clone()));
            }
        }
        out.groups[index].attributes = values;
        out.groups[index].attribute_encodings = notes.encodings;
    }
    let group_paths = out.groups.iter().map(|g| g.path.clone()).collect();
    let maps = scales(&found, group_paths, out.objects.offset_sizes.clone());
    let mut phony: Vec<Dim> = Vec::new();
    let mut group_dims: Vec<Vec<Axis>> = (0..out.groups.len()).map(|_| Vec::new()).collect();
    for (d, &g) in maps.groups.iter().enumerate() {
        group_dims[g].push(Axis::Real(d));
    }
    let mut resolved = Vec::with_capacity(found.len());
    for &g in &post {
        for f in found.iter().filter(|f| f.group == g) {
            if f.dimension_only() {
                continue;
            }
            let known = axes(f, &maps)?.unwrap_or_else(|| vec![None; f.dataset.ndim()]);
            let axes = phony_axes(f, known, &maps.dims, &mut phony, &mut group_dims[g]);
            resolved.push((f, axes));
        }
    }
    let mut dims = maps.dims;
    // An unlimited dimension is as long as the longest variable along it.
    for (f, axes) in &resolved {
        for (axis, extent) in axes.iter().zip(f.dataset.shape()) {
            if let Axis::Real(d) = axis {
                if dims[*d].unlimited {
                    dims[*d].length = dims[*d].length.max(*extent);
                }
            }
        }
    }
    for (f, axes) in resolved {
        let unlimited: Vec<String> = axes
            .iter()
            .filter_map(|axis| match axis {
                Axis::Real(d) if dims[*d].unlimited => Some(dims[*d].name.clone()),
                _ => None,
            })
            .collect();
        let dimension_problem = axes.iter().zip(f.dataset.shape()).find_map(|(axis, &extent)| match axis {
            Axis::Real(d) if !dims[*d].unlimited && dims[*d].length != extent => Some(format!(
                "its dimension {} (the scale DIMENSION_LIST names) has {} elements, the dataset {extent} along that axis \
                 (libnetcdf refuses it; h5py reads {extent})",
                dims[*d].name, dims[*d].length
            )),
            _ => None,
        });
        let dims = axes
            .iter()
            .map(|axis| match axis {
                Axis::Real(d) => (dims[*d].name.clone(), dims[*d].length),
                Axis::Phony(p) => (phony[*p].name.clone(), phony[*p].length),
            })
            .collect();
        let resolve = |reference: &[u8], size: usize| f.dataset.resolve_vlen_reference_bytes(reference, size);
        let heap = Heap { offset_size: usize::from(out.objects.offset_size(f.file)), resolve: &resolve };
        let object = (f.path.as_str(), f.file);
        let (attributes, mut notes) =
            attributes(object, f.dataset.attributes(), &out.objects, &heap, &mut out.dropped_attributes);
        notes.enum_name = enum_type_name(f, &group_attributes, &out.groups, links);
        notes.unlimited_dims = unlimited;
        let path = netcdf_path(&f.path);
        let dataset = f.dataset.clone();
        out.variables.push(H5Variable { path, dataset, file: f.file, dims, attributes, notes, dimension_problem });
    }
    Ok(out)
}

/// What [`walk`] collects besides the groups.
struct Walked<'a> {
    /// Datasets, in walk order.
    found: &'a mut Vec<Found>,
    /// Group indices in post-order (children before their parent, the order libnetcdf matches
    /// dimensions in).
    post: &'a mut Vec<usize>,
    /// Each group's attributes, converted once every object's path is known.
    /// (group index, file index, group).
    group_attributes: &'a mut Vec<(usize, usize, Group)>,
    /// The files of the scan, external links followed.
    links: &'a LinkedFiles,
    /// The groups from the root to the one being walked.
    ancestors: Vec<ObjectKey>,
    /// Record each group's links as stored ([`Hdf5Links`]).
    record_links: bool,
}

impl Walked<'_> {
    /// The file an object lies in, by its storage.
    fn file_of(&self, storage: &dyn hdf5_reader::Storage, path: &str) -> Result<usize, StructureError> {
        self.links.index_of(storage).ok_or_else(|| StructureError::Unopened(path.to_string()))
    }
}

/// The name of the type of an enum dataset, as libnetcdf finds it: netCDF-4 defines an enum type as
/// an HDF5 committed datatype linked by name in the variable's group or an ancestor, and the
/// dataset's datatype equals it (libnetcdf matches the two with `H5Tequal`). The nearest group's
/// type wins; None for another type, or an enum no committed datatype defines (h5py's).
fn enum_type_name(
    f: &Found,
    groups: &[(usize, usize, Group)],
    nodes: &[GroupNode],
    links: &LinkedFiles,
) -> Option<String> {
    use hdf5_reader::messages::HdfMessage;
    use hdf5_reader::object_header::ObjectHeader;
    let datatype = f.dataset.dtype();
    if !matches!(datatype, hdf5_reader::Datatype::Enum { .. }) {
        return None;
    }
    let files = links.files();
    let superblock = files.get(f.file)?.file.superblock();
    let mut path = nodes.get(f.group)?.path.as_str();
    loop {
        let group = groups.iter().find(|(index, file, _)| *file == f.file && nodes[*index].path == path);
        if let Some((_, _, group)) = group {
            // The group's links that name neither a group nor a dataset: its committed datatypes.
            let (subgroups, datasets) = group.member_names().ok()?;
            for (name, target) in group.links().ok()? {
                let hdf5_reader::messages::link::LinkTarget::Hard { address } = target else { continue };
                if subgroups.contains(&name) || datasets.contains(&name) {
                    continue;
                }
                let Ok(header) = ObjectHeader::parse_at_storage_with_limit(
                    group.storage(),
                    address,
                    superblock.offset_size,
                    superblock.length_size,
                    hdf5_reader::DEFAULT_MAX_OBJECT_HEADER_BYTES,
                ) else {
                    continue;
                };
                let committed = header.messages.iter().find_map(|m| match m {
                    HdfMessage::Datatype(message) => Some(&message.datatype),
                    _ => None,
                });
                if committed == Some(datatype) {
                    return Some(name);
                }
            }
        }
        if path.is_empty() {
            return None;
        }
        path = path.rsplit_once('/').map_or("", |(parent, _)| parent);
    }
}

/// Walks the group tree: groups in pre-order into `out` (and every object's path into its
/// `objects`), the rest into `walked`.
fn walk(
    group: &Group,
    path: &str,
    depth: usize,
    out: &mut H5Structure,
    walked: &mut Walked<'_>,
) -> Result<(), StructureError> {
    if depth > MAX_DEPTH {
        return Err(StructureError::TooDeep(path.to_string()));
    }
    let index = out.groups.len();
    let key = (walked.file_of(group.storage(), path)?, group.address());
    walked.group_attributes.push((index, key.0, group.clone()));
    out.groups.push(GroupNode::new(path, Attributes::new()));
    out.objects.add(key, path);
    let (children, datasets) =
        group.members().map_err(|source| StructureError::Group { path: path.to_string(), what: "members", source })?;
    if walked.record_links {
        record_links(group, path, key.0, &mut out.links)?;
    }
    for link in walked.links.take_unresolved() {
        let why = format!("external link to {} left out (libhdf5 shows no object there): {}", link.target, link.why);
        out.unresolved_links.push((join(path, &link.name), why));
    }
    for dataset in datasets {
        let text = |name: &str| dataset.attribute(name).ok().and_then(|a| a.read_string().ok());
        let scale = (text("CLASS").as_deref() == Some("DIMENSION_SCALE")).then(|| text("NAME"));
        let dataset_path = join(path, leaf(dataset.name()));
        let file = walked.file_of(dataset.storage(), &dataset_path)?;
        out.objects.add((file, dataset.address()), &dataset_path);
        walked.found.push(Found { group: index, path: dataset_path, dataset, file, scale });
    }
    walked.ancestors.push(key);
    for child in children {
        let child_path = join(path, leaf(child.name()));
        let child_key = (walked.file_of(child.storage(), &child_path)?, child.address());
        if walked.ancestors.contains(&child_key) {
            let why = "left out: an external link leading back to a group that contains it (a cycle)".to_string();
            out.unresolved_links.push((child_path, why));
            continue;
        }
        walk(&child, &child_path, depth + 1, out, walked)?;
    }
    walked.ancestors.pop();
    walked.post.push(index);
    Ok(())
}

/// Records the links of `group` (at `path`, in file `file`) as stored.
fn record_links(group: &Group, path: &str, file: usize, out: &mut Hdf5Links) -> Result<(), StructureError> {
    use hdf5_reader::messages::link::LinkTarget as Stored;
    let links =
        group.links().map_err(|source| StructureError::Group { path: path.to_string(), what: "links", source })?;
    for (name, target) in links {
        let target = match target {
            Stored::Hard { address } => LinkTarget::Hard { file, address },
            Stored::Soft { path } => LinkTarget::Soft(path),
            Stored::External { filename, path } => LinkTarget::External { file: filename, path },
        };
        out.links.push((path.to_string(), name, target));
    }
    Ok(())
}

/// The dimensions defined by scales, by object address and by `_Netcdf4Dimid`.
struct ScaleMaps {
    dims: Vec<Dim>,
    /// The group each dimension is defined in.
    groups: Vec<usize>,
    /// The dimensions of each scale object (several when links in several groups name it).
    by_address: HashMap<ObjectKey, Vec<usize>>,
    /// Each group's path, by index.
    group_paths: Vec<String>,
    /// Dimensions by file and `_Netcdf4Dimid`.
    by_id: HashMap<(usize, i64), usize>,
    /// Each file's address size.
    offset_sizes: Vec<u8>,
}

impl ScaleMaps {
    /// The dimension of the scale object `key` as a variable of group `group` sees it: the one
    /// defined in that group or its nearest ancestor (libnetcdf looks for a dimension's scale from the
    /// variable's group up), else the first defined.
    fn scale_at(&self, key: ObjectKey, group: usize) -> Option<usize> {
        let candidates = self.by_address.get(&key)?;
        let here = &self.group_paths[group];
        let contains = |g: usize| {
            let path = &self.group_paths[g];
            path.is_empty() || here == path || here.starts_with(&format!("{path}/"))
        };
        let nearest = candidates
            .iter()
            .copied()
            .filter(|&d| contains(self.groups[d]))
            .max_by_key(|&d| self.group_paths[self.groups[d]].len());
        nearest.or_else(|| candidates.first().copied())
    }
}

fn scales(found: &[Found], group_paths: Vec<String>, offset_sizes: Vec<u8>) -> ScaleMaps {
    let (mut dims, mut groups, mut by_address, mut by_id) = (Vec::new(), Vec::new(), HashMap::new(), HashMap::new());
    for f in found.iter().filter(|f| f.is_scale()) {
        let ds = &f.dataset;
        // libnetcdf names a dimension after its scale's link, whatever the scale's `NAME` says.
        let name = netcdf_name(leaf(&f.path)).to_string();
        let length = ds.shape().first().copied().unwrap_or(0);
        let unlimited = ds.max_dims().and_then(|m| m.first()).is_some_and(|&m| m == u64::MAX);
        by_address.entry((f.file, ds.address())).or_insert_with(Vec::new).push(dims.len());
        if let Some(id) = ds.attribute("_Netcdf4Dimid").ok().and_then(|a| a.read_scalar::<i32>().ok()) {
            by_id.insert((f.file, i64::from(id)), dims.len());
        }
        dims.push(Dim { name, length, unlimited });
        groups.push(f.group);
    }
    ScaleMaps { dims, groups, by_address, group_paths, by_id, offset_sizes }
}

/// The dimensions of one variable from its scales, None for an axis without one; None when it has no
/// scales at all (phony dimensions).
fn axes(f: &Found, maps: &ScaleMaps) -> Result<Option<Vec<Option<Axis>>>, StructureError> {
    let by_id = &maps.by_id;
    let ds = &f.dataset;
    let rank = ds.ndim();
    if rank == 0 {
        return Ok(Some(Vec::new()));
    }
    if f.is_scale() && rank == 1 {
        if let Some(d) = maps.scale_at((f.file, ds.address()), f.group) {
            return Ok(Some(vec![Some(Axis::Real(d))]));
        }
    }
    if f.is_scale() {
        if let Ok(ids) = ds.attribute("_Netcdf4Coordinates").and_then(|a| a.read_1d::<i32>()) {
            let axes: Option<Vec<Axis>> =
                ids.iter().map(|id| by_id.get(&(f.file, i64::from(*id))).map(|&d| Axis::Real(d))).collect();
            if let Some(axes) = axes.filter(|a| a.len() == rank) {
                return Ok(Some(axes.into_iter().map(Some).collect()));
            }
        }
    }
    let offset_size = usize::from(maps.offset_sizes.get(f.file).copied().unwrap_or(8));
    let Some(addresses) = dimension_list(ds, offset_size)? else { return Ok(None) };
    // An axis whose entry is missing (a list shorter than the rank), empty, or names an object that
    // is no dimension scale has no dimension here. libnetcdf 4.9 gives such an axis an invalid
    // dimension id (ncdump stops at "NetCDF: Invalid dimension ID or name", netCDF4-python cannot open
    // the file) and h5py lists no scale for it: vzarr names it as libnetcdf names an axis without a
    // scale (`phony_axes`), and keeps the axes whose entries name scales.
    let scale = |a: u64| maps.scale_at((f.file, a), f.group);
    Ok(Some(addresses.iter().map(|a| a.and_then(scale).map(Axis::Real)).collect()))
}

/// libnetcdf's dimensions for the axes of a dataset without scales (`known` None): per axis, the first
/// dimension of its group (`group_dims`: real ones, then phony ones as created) of the same length and
/// kind that the variable does not already use, else a new `phony_dim_N` numbered with the next
/// dimension id. Axes with a scale keep it.
fn phony_axes(
    f: &Found,
    known: Vec<Option<Axis>>,
    real: &[Dim],
    phony: &mut Vec<Dim>,
    group_dims: &mut Vec<Axis>,
) -> Vec<Axis> {
    let ds = &f.dataset;
    let max = ds.max_dims().map(<[u64]>::to_vec);
    let mut axes: Vec<Axis> = known.iter().flatten().copied().collect();
    let mut out = Vec::with_capacity(known.len());
    for (axis, (&length, known)) in ds.shape().iter().zip(known).enumerate() {
        if let Some(known) = known {
            out.push(known);
            continue;
        }
        let unlimited = max.as_ref().and_then(|m| m.get(axis)).is_some_and(|&m| m == u64::MAX);
        let fits = |a: &Axis| {
            let dim = match *a {
                Axis::Real(d) => &real[d],
                Axis::Phony(p) => &phony[p],
            };
            dim.length == length && dim.unlimited == unlimited && !axes.contains(a)
        };
        let chosen = group_dims.iter().copied().find(fits).unwrap_or_else(|| {
            let name = format!("phony_dim_{}", real.len() + phony.len());
            phony.push(Dim { name, length, unlimited });
            group_dims.push(Axis::Phony(phony.len() - 1));
            Axis::Phony(phony.len() - 1)
        });
        axes.push(chosen);
        out.push(chosen);
    }
    out
}

/// The scale addresses of `DIMENSION_LIST`, one per axis (None for an axis whose entry is missing or
/// empty); None when the attribute is absent. `offset_size` is the file's address size, which object
/// references are written with.
fn dimension_list(ds: &Dataset, offset_size: usize) -> Result<Option<Vec<Option<u64>>>, StructureError> {
    let Ok(attr) = ds.attribute("DIMENSION_LIST") else { return Ok(None) };
    let entry = 4 + offset_size + 4;
    let mut out = Vec::with_capacity(ds.ndim());
    for item in attr.raw_data.chunks_exact(entry).take(ds.ndim()) {
        let heap = ds
            .resolve_vlen_reference_bytes(item, offset_size)
            .map_err(|source| StructureError::DimensionList { name: ds.name().to_string(), source })?;
        let refs = hdf5_reader::reference::read_object_references(&heap, offset_size as u8)
            .map_err(|source| StructureError::DimensionList { name: ds.name().to_string(), source })?;
        out.push(refs.first().copied());
    }
    out.resize(ds.ndim(), None);
    Ok(Some(out))
}

/// User attributes of an object (its path and file) and their numeric types; attributes with no JSON
/// form are listed in `dropped`.
fn attributes(
    object: (&str, usize),
    attrs: Vec<hdf5_reader::Attribute>,
    objects: &Objects,
    heap: &Heap<'_>,
    dropped: &mut Vec<(String, String, String)>,
) -> (Attributes, ArrayNotes) {
    let (mut out, mut notes) = (Attributes::new(), ArrayNotes::default());
    for attr in attrs {
        if BOOKKEEPING.contains(&attr.name.as_str()) {
            continue;
        }
        let reference = matches!(
            attr.datatype,
            hdf5_reader::Datatype::Reference { ref_type: hdf5_reader::ReferenceType::Object, .. }
        );
        let json = match attr.datatype {
            // Object references as the paths of their targets, as h5py's `f[ref].name`.
            hdf5_reader::Datatype::Reference { ref_type: hdf5_reader::ReferenceType::Object, size } => {
                let paths = objects.resolve(object.1, &attr.raw_data, size);
                paths.map(|paths| (reference_json(paths, &attr.shape), None)).map_err(|e| e.to_string())
            }
            _ => attribute_json(&attr, heap).map_err(|e| e.to_string()),
        };
        match json {
            Ok((value, encoding)) => {
                if let Some(encoding) = encoding {
                    notes.encodings.insert(attr.name.clone(), encoding.to_string());
                }
                if let Some(t) = attribute_type(&attr.datatype) {
                    notes.note_type(&attr.name, t);
                }
                if attr.shape.len() > 1 {
                    notes.shapes.insert(attr.name.clone(), attr.shape.clone());
                }
                if reference {
                    notes.reference_attributes.insert(attr.name.clone());
                }
                out.insert(attr.name.clone(), value);
            }
            Err(why) => dropped.push((object.0.to_string(), attr.name.clone(), why)),
        }
    }
    (out, notes)
}

/// The last component of an HDF5 path.
fn leaf(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// A dataset name as netCDF shows it.
fn netcdf_name(name: &str) -> &str {
    name.strip_prefix(NON_COORD).unwrap_or(name)
}

/// A dataset path as netCDF shows it (the last component without `_nc4_non_coord_`).
fn netcdf_path(path: &str) -> String {
    match path.rsplit_once('/') {
        Some((parent, name)) => join(parent, netcdf_name(name)),
        None => netcdf_name(path).to_string(),
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
