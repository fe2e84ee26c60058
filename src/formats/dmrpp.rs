//! DMR++ sidecars out (OPeNDAP BES `dmrpp_module`; what `get_dmrpp` writes): one XML document per
//! source file describing that file's own variables and chunks, for NASA-style archives where every
//! granule `X.h5` carries `X.h5.dmrpp`.
//!
//! ```text
//! <?xml version="1.0" encoding="UTF-8"?>
//! <Dataset xmlns="http://xml.opendap.org/ns/DAP/4.0#" xmlns:dmrpp="http://xml.opendap.org/dap/dmrpp/1.0.0#"
//!          dapVersion="4.0" dmrVersion="1.0" name="X.h5" dmrpp:href="file:///data/X.h5" dmrpp:version="vzarr 0.1.0">
//!     <Dimension name="time" size="4"/>
//!     <Float32 name="tas">
//!         <Dim name="/time"/> <Dim size="90"/>
//!         <Attribute name="units" type="String"><Value>K</Value></Attribute>
//!         <dmrpp:chunks compressionType="shuffle deflate" deflateLevel="4" fillValue="0" byteOrder="LE">
//!             <dmrpp:chunkDimensionSizes>1 90</dmrpp:chunkDimensionSizes>
//!             <dmrpp:chunk offset="4016" nBytes="812" chunkPositionInArray="[0,0]"/>
//!         </dmrpp:chunks>
//!     </Float32>
//!     <Group name="g"> ... </Group>
//! </Dataset>
//! ```
//!
//! Input: the dataset of one scanned file (before any combine: a sidecar lists the file's chunks, not
//! an archive's grid). Variables translate in `store/dmrpp/variable`, attributes in
//! `store/dmrpp/attributes`. A variable DMR++ cannot describe is left out with a warning (the exit
//! code of `scan` says so). Named dimensions are declared in the group holding their coordinate
//! variable (else the root); `phony_dim_*` dimensions are anonymous (`<Dim size>`), as BES writes
//! dimensions of plain HDF5 datasets. `dmrpp:href` is the source's URL (`file://` for local files,
//! rewritten by [`UrlPrefix`] rules). Atomic: staged and published by `store/publish`.

mod attributes;
mod special_struct;
mod types;
mod variable;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use self::attributes::{attributes_xml, escape};
use self::variable::{variable_xml, DimRefs};
use crate::dataset::{ScanWarning, VirtualDataset};
use crate::formats::{location_url, UrlPrefix};
use crate::metadata::{ArrayNotes, DataType};
use crate::store::{io_error, ArrayInfo, StoreInfo, WriteError, WriteOptions, Writer};
use crate::store::{OutputKind, Staged};

/// The DAP4 namespace of a DMR.
const DAP_NAMESPACE: &str = "http://xml.opendap.org/ns/DAP/4.0#";
/// The DMR++ namespace.
const DMRPP_NAMESPACE: &str = "http://xml.opendap.org/dap/dmrpp/1.0.0#";

/// Writes the dataset of one scanned file as its DMR++ sidecar.
#[derive(Debug, Clone, Default)]
pub struct DmrppWriter {
    /// Location rewrites for `dmrpp:href`, as [`super::KerchunkWriter`]'s. Default: none.
    pub url_prefixes: Vec<UrlPrefix>,
}

/// The sidecar's file name for a source at `location`: its file name followed by `.dmrpp`.
#[must_use]
pub fn sidecar_name(location: &str) -> String {
    let name = location.trim_end_matches('/').rsplit('/').next().unwrap_or(location);
    format!("{name}.dmrpp")
}

impl Writer for DmrppWriter {
    fn write(
        &self,
        dataset: &VirtualDataset,
        destination: &Path,
        options: &WriteOptions,
    ) -> Result<StoreInfo, WriteError> {
        let refuse =
            |reason: String| WriteError::BadName { path: destination.to_path_buf(), node: String::new(), reason };
        // Source 0 is the scanned file; others (HDF5 external links) hold variables the sidecar leaves out.
        let Some(source) = dataset.sources.get(0) else {
            return Err(refuse("a DMR++ sidecar describes one file, and the dataset has none".into()));
        };
        let href = location_url(&source.location, &self.url_prefixes).map_err(|e| refuse(e.to_string()))?;
        let (document, left_out) = document(dataset, &href, &source.location, destination);
        let inputs = crate::store::local_sources(&dataset.sources);
        let staged = Staged::begin(destination, OutputKind::Dmrpp, options.overwrite, &inputs)?;
        std::fs::write(staged.path(), document).map_err(io_error(staged.path(), "writing the sidecar"))?;
        staged.publish()?;
        let mut info = StoreInfo::of(dataset, "dmrpp", Vec::new());
        let skipped: Vec<&str> = left_out.iter().map(|w| w.variable.as_str()).collect();
        info.arrays =
            dataset.arrays.iter().filter(|a| !skipped.contains(&a.path.as_str())).map(ArrayInfo::of).collect();
        info.warnings.extend(left_out);
        Ok(info)
    }
}

/// The sidecar text and the variables left out.
fn document(dataset: &VirtualDataset, href: &str, location: &str, destination: &Path) -> (String, Vec<ScanWarning>) {
    let name = sidecar_name(location);
    let name = name.strip_suffix(".dmrpp").unwrap_or(&name);
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    writeln!(
        out,
        "<Dataset xmlns=\"{DAP_NAMESPACE}\" xmlns:dmrpp=\"{DMRPP_NAMESPACE}\" dapVersion=\"4.0\" dmrVersion=\"1.0\" \
         name=\"{}\" dmrpp:href=\"{}\" dmrpp:version=\"vzarr {}\">",
        escape(name),
        escape(href),
        env!("CARGO_PKG_VERSION")
    )
    .ok();
    let dims = Dimensions::of(dataset);
    let mut left_out = Vec::new();
    let special = special_values(dataset, destination);
    let context = Context { dataset, dims: &dims, special: &special, location };
    group_xml(&context, "", "    ", &mut out, &mut left_out);
    out.push_str("</Dataset>\n");
    (out, left_out)
}

/// What every group's variables are written from.
struct Context<'a> {
    dataset: &'a VirtualDataset,
    dims: &'a Dimensions,
    /// The decoded elements of each structure with string members, or why they cannot be read.
    special: &'a BTreeMap<String, Result<Vec<u8>, String>>,
    /// The source file, as warnings name it.
    location: &'a str,
}

/// The decoded elements of every structure with string members (BES writes their values into the
/// sidecar), each read through vzarr's reader from the file, or why it cannot be.
fn special_values(dataset: &VirtualDataset, destination: &Path) -> BTreeMap<String, Result<Vec<u8>, String>> {
    let mut out = BTreeMap::new();
    for (index, array) in dataset.arrays.iter().enumerate() {
        let DataType::Struct(fields) = array.metadata.data_type else { continue };
        if !special_struct::has_text(fields) {
            continue;
        }
        let values = crate::formats::inline::read_arrays(dataset, &[index], destination, "write its elements")
            .map(|mut v| v.pop().unwrap_or_default())
            .map_err(|e| e.to_string());
        out.insert(array.path.clone(), values);
    }
    out
}

/// The contents of group `path`: its dimensions, variables, subgroups and attributes.
fn group_xml(context: &Context<'_>, path: &str, indent: &str, out: &mut String, left_out: &mut Vec<ScanWarning>) {
    let Context { dataset, dims, special, location } = context;
    for (name, size) in dims.declared_in(path) {
        writeln!(out, "{indent}<Dimension name=\"{}\" size=\"{size}\"/>", escape(name)).ok();
    }
    for array in dataset.arrays.iter().filter(|a| parent_of(&a.path) == path) {
        let xml = match special.get(&array.path) {
            Some(Err(why)) => Err(why.clone()),
            Some(Ok(values)) => {
                variable_xml(array, &dims.refs_of(array), Some(values), indent).map_err(|e| e.to_string())
            }
            None => variable_xml(array, &dims.refs_of(array), None, indent).map_err(|e| e.to_string()),
        };
        match xml {
            Ok(xml) => out.push_str(&xml),
            Err(message) => left_out.push(ScanWarning {
                file: location.to_string(),
                variable: array.path.clone(),
                message: format!("left out of the DMR++ sidecar: {message}"),
            }),
        }
    }
    for group in dataset.groups.iter().filter(|g| !g.path.is_empty() && parent_of(&g.path) == path) {
        let name = group.path.rsplit('/').next().unwrap_or(&group.path);
        writeln!(out, "{indent}<Group name=\"{}\">", escape(name)).ok();
        group_xml(context, &group.path, &format!("{indent}    "), out, left_out);
        writeln!(out, "{indent}</Group>").ok();
    }
    if let Some(group) = dataset.groups.iter().find(|g| g.path == path) {
        out.push_str(&attributes_xml(&group.attributes, &ArrayNotes::default(), None, indent));
    }
}

/// The group path of a node path (`""` for a root node).
fn parent_of(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(parent, _)| parent)
}

/// Where each named dimension is declared: (group path, name) -> size.
struct Dimensions {
    declared: BTreeMap<(String, String), u64>,
}

impl Dimensions {
    /// Declarations for every named dimension of the dataset's arrays: in the group of a 1-d
    /// coordinate variable of that name and size, else at the root (when the root has not declared
    /// the name with another size; such a dimension stays anonymous).
    fn of(dataset: &VirtualDataset) -> Self {
        let mut declared = BTreeMap::new();
        for array in &dataset.arrays {
            let name = array.path.rsplit('/').next().unwrap_or(&array.path);
            let shape = array.metadata.shape();
            if let (Some([dim]), [size]) = (array.metadata.dimension_names.as_deref(), shape.as_slice()) {
                if dim == name && is_named(dim) {
                    declared.insert((parent_of(&array.path).to_string(), dim.clone()), *size);
                }
            }
        }
        let mut dims = Dimensions { declared };
        for array in &dataset.arrays {
            let names = array.metadata.dimension_names.clone().unwrap_or_default();
            for (name, size) in names.iter().zip(array.metadata.shape()) {
                if is_named(name) && dims.declaring_group(parent_of(&array.path), name, size).is_none() {
                    dims.declared.entry((String::new(), name.clone())).or_insert(size);
                }
            }
        }
        dims
    }

    /// The dimensions declared in group `path`.
    fn declared_in<'a>(&'a self, path: &'a str) -> impl Iterator<Item = (&'a str, u64)> + 'a {
        self.declared
            .iter()
            .filter(move |((group, _), _)| group == path)
            .map(|((_, name), size)| (name.as_str(), *size))
    }

    /// The nearest group, from `group` up to the root, declaring `name` with `size`.
    fn declaring_group(&self, group: &str, name: &str, size: u64) -> Option<String> {
        let mut current = group;
        loop {
            match self.declared.get(&(current.to_string(), name.to_string())) {
                Some(&declared) if declared == size => return Some(current.to_string()),
                Some(_) => return None,
                None if current.is_empty() => return None,
                None => current = parent_of(current),
            }
        }
    }

    /// How each dimension of `array` is written: the fully qualified name of its declaration, or
    /// anonymous.
    fn refs_of(&self, array: &crate::dataset::VirtualArray) -> DimRefs {
        let names = array.metadata.dimension_names.clone().unwrap_or_default();
        let shape = array.metadata.shape();
        (0..shape.len())
            .map(|d| {
                let name = names.get(d).filter(|n| is_named(n))?;
                let group = self.declaring_group(parent_of(&array.path), name, shape[d])?;
                Some(if group.is_empty() { format!("/{name}") } else { format!("/{group}/{name}") })
            })
            .collect()
    }
}

/// Whether a dimension name is a real one (not HDF5's anonymous `phony_dim_N`).
fn is_named(name: &str) -> bool {
    !name.is_empty() && !name.starts_with("phony_dim_")
}
