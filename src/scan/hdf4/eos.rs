//! HDF-EOS2 (the HDF-EOS Library User's Guide, "Grid" and "Swath" structures): the ODL structural
//! metadata of `StructMetadata.0` (`.1`, ... continue it) names each grid's and swath's fields and
//! their dimensions.
//!
//! - Fields get the dimension names of their `DimList` (`YDim`, `XDim`) in place of the SD names
//!   HDF-EOS writes (`YDim:MOD_Grid`), unless that would give one name two lengths in the file
//!   (then every name is kept).
//! - Fields get the grid's projection (`Projection`, corner points, `ProjParams`, sphere and zone
//!   codes, origin and pixel registration) or the swath's name as `hdfeos_*` attributes, and the root
//!   group gets each swath's dimension maps.
//! - A geographic grid (`GCTP_GEO`, corners in packed degrees-minutes-seconds) whose `XDim` and
//!   `YDim` names are its own gets `XDim`/`YDim` coordinate arrays of longitudes and latitudes
//!   (pixel centres, or corners with `HDFE_CORNER`), stored by the store.
//!
//! Input: the scanned dataset (root attributes and arrays); output: the same, renamed and annotated.
//! Metadata that does not parse adds nothing: structural metadata never makes a scan fail.

mod odl;

use std::collections::HashMap;

use serde_json::{json, Map, Value};

use crate::codec::{CodecChain, Endian};
use crate::dataset::{ChunkTable, OwnedBytesError, VirtualArray, VirtualDataset};
use crate::grid::ChunkGrid;
use crate::metadata::{float_attribute, ArrayMetadata, DataType, FillValue};

/// Grid keys copied to attributes as `hdfeos_<key>`.
const GRID_KEYS: [&str; 9] = [
    "Projection",
    "UpperLeftPointMtrs",
    "LowerRightMtrs",
    "ProjParams",
    "SphereCode",
    "ZoneCode",
    "GridOrigin",
    "PixelRegistration",
    "XDim",
];

/// One field of a grid or swath: its name, dimension names and the attributes it gets.
struct Field {
    name: String,
    dims: Vec<String>,
    attributes: Map<String, Value>,
}

/// Applies the structural metadata of the dataset's root attributes, if any.
pub(crate) fn apply(dataset: &mut VirtualDataset) -> Result<(), (String, OwnedBytesError)> {
    let Some(root) = dataset.groups.first_mut() else { return Ok(()) };
    let text: String = (0..)
        .map_while(|i| root.attributes.get(&format!("StructMetadata.{i}")).and_then(Value::as_str).map(str::to_string))
        .collect();
    if text.is_empty() {
        return Ok(());
    }
    let top = odl::parse(&text);
    let mut fields = Vec::new();
    let mut geo_grids = Vec::new();
    if let Some(grids) = top.child("GridStructure") {
        for grid in &grids.children {
            fields.extend(grid_fields(grid));
            geo_grids.extend(geo_grid(grid));
        }
    }
    if let Some(swaths) = top.child("SwathStructure") {
        let mut maps = Map::new();
        for swath in &swaths.children {
            fields.extend(swath_fields(swath));
            if let (Some(name), Some(m)) = (swath.get("SwathName"), dimension_maps(swath)) {
                maps.insert(name.to_string(), m);
            }
        }
        if !maps.is_empty() {
            root.attributes.insert("hdfeos_dimension_maps".into(), Value::Object(maps));
        }
    }
    let renamed = rename_dims(&mut dataset.arrays, &fields);
    if renamed {
        add_geo_coordinates(dataset, &geo_grids)?;
    }
    Ok(())
}

fn grid_fields(grid: &odl::Node) -> Vec<Field> {
    let Some(name) = grid.get("GridName") else { return Vec::new() };
    let mut attributes = Map::new();
    attributes.insert("hdfeos_grid".into(), Value::from(name));
    for key in GRID_KEYS.iter().chain(&["YDim"]) {
        if let Some(value) = grid.entries.iter().find(|(k, _)| k == key).map(|(_, v)| v) {
            attributes.insert(format!("hdfeos_{key}"), odl_value(value));
        }
    }
    objects(grid, "DataField", "DataFieldName", &attributes)
}

fn swath_fields(swath: &odl::Node) -> Vec<Field> {
    let Some(name) = swath.get("SwathName") else { return Vec::new() };
    let mut attributes = Map::new();
    attributes.insert("hdfeos_swath".into(), Value::from(name));
    let mut fields = objects(swath, "GeoField", "GeoFieldName", &attributes);
    fields.extend(objects(swath, "DataField", "DataFieldName", &attributes));
    fields
}

/// The fields listed in group `group` of a grid or swath.
fn objects(parent: &odl::Node, group: &str, key: &str, attributes: &Map<String, Value>) -> Vec<Field> {
    let Some(list) = parent.child(group) else { return Vec::new() };
    list.children
        .iter()
        .filter_map(|object| {
            let name = object.get(key)?.to_string();
            let dims = odl::values(object.get("DimList")?);
            Some(Field { name, dims, attributes: attributes.clone() })
        })
        .collect()
}

fn dimension_maps(swath: &odl::Node) -> Option<Value> {
    let maps: Vec<Value> = swath
        .child("DimensionMap")?
        .children
        .iter()
        .filter_map(|m| {
            Some(json!({
                "geo": m.get("GeoDimension")?,
                "data": m.get("DataDimension")?,
                "offset": m.get("Offset").and_then(|v| v.parse::<i64>().ok()),
                "increment": m.get("Increment").and_then(|v| v.parse::<i64>().ok()),
            }))
        })
        .collect();
    (!maps.is_empty()).then_some(Value::Array(maps))
}

/// An ODL value as JSON: numbers as numbers, lists as arrays, the rest as text.
fn odl_value(value: &str) -> Value {
    let one = |v: &str| match v.parse::<i64>() {
        Ok(i) => Value::from(i),
        Err(_) => v.parse::<f64>().map_or_else(|_| Value::from(v.trim_matches('"')), float_attribute),
    };
    if value.trim_start().starts_with('(') {
        Value::Array(odl::values(value).iter().map(|v| one(v)).collect())
    } else {
        one(value.trim())
    }
}

/// Renames the dimensions of every field found among the arrays, unless a name would get two
/// lengths. Adds the fields' attributes either way. Returns whether names changed.
fn rename_dims(arrays: &mut [VirtualArray], fields: &[Field]) -> bool {
    let mut proposed: Vec<(usize, Vec<String>)> = Vec::new();
    for field in fields {
        let Some((i, array)) = arrays.iter_mut().enumerate().find(|(_, a)| a.path == field.name) else { continue };
        for (k, v) in &field.attributes {
            array.metadata.attributes.entry(k.clone()).or_insert_with(|| v.clone());
        }
        if array.metadata.shape().len() == field.dims.len() {
            proposed.push((i, field.dims.clone()));
        }
    }
    let mut lengths: HashMap<String, u64> = HashMap::new();
    for (i, array) in arrays.iter().enumerate() {
        let names = match proposed.iter().find(|(j, _)| *j == i) {
            Some((_, names)) => names.clone(),
            None => array.metadata.dimension_names.clone().unwrap_or_default(),
        };
        for (name, n) in names.iter().zip(array.metadata.shape()) {
            if *lengths.entry(name.clone()).or_insert(n) != n {
                return false;
            }
        }
    }
    let changed = !proposed.is_empty();
    for (i, names) in proposed {
        arrays[i].metadata.dimension_names = Some(names);
    }
    changed
}

/// The (longitudes, latitudes) of the only geographic grid described by structural metadata `text`
/// (what the `XDim` and `YDim` coordinate arrays hold), for `verify`.
#[cfg(feature = "verify")]
pub(crate) fn geo_coordinates(text: &str) -> Option<(Vec<f64>, Vec<f64>)> {
    let top = odl::parse(text);
    let grids: Vec<GeoGrid> = top.child("GridStructure")?.children.iter().filter_map(geo_grid).collect();
    match <[GeoGrid; 1]>::try_from(grids) {
        Ok([grid]) => Some((grid.lon, grid.lat)),
        Err(_) => None,
    }
}

/// A geographic grid's coordinates: (longitudes, latitudes) of its pixels.
struct GeoGrid {
    lon: Vec<f64>,
    lat: Vec<f64>,
}

fn geo_grid(grid: &odl::Node) -> Option<GeoGrid> {
    if grid.get("Projection")? != "GCTP_GEO" {
        return None;
    }
    let (nx, ny) = (grid.get("XDim")?.parse::<usize>().ok()?, grid.get("YDim")?.parse::<usize>().ok()?);
    if nx == 0 || ny == 0 || nx > 1 << 24 || ny > 1 << 24 {
        return None;
    }
    let corner = |key: &str| -> Option<(f64, f64)> {
        let v: Vec<f64> = odl::values(grid.get(key)?).iter().filter_map(|v| v.parse().ok()).collect();
        Some((packed_dms(*v.first()?), packed_dms(*v.get(1)?)))
    };
    let ((west, north), (east, south)) = (corner("UpperLeftPointMtrs")?, corner("LowerRightMtrs")?);
    let at = if grid.get("PixelRegistration") == Some("HDFE_CORNER") { 0.0 } else { 0.5 };
    let axis = |start: f64, end: f64, n: usize| -> Vec<f64> {
        let step = (end - start) / n as f64;
        (0..n).map(|i| start + (i as f64 + at) * step).collect()
    };
    Some(GeoGrid { lon: axis(west, east, nx), lat: axis(north, south, ny) })
}

/// Degrees from GCTP's packed degrees-minutes-seconds (`DDDMMMSSS.SS`).
fn packed_dms(v: f64) -> f64 {
    let sign = v.signum();
    let v = v.abs();
    let degrees = (v / 1e6).trunc();
    let minutes = ((v - degrees * 1e6) / 1e3).trunc();
    let seconds = v - degrees * 1e6 - minutes * 1e3;
    sign * (degrees + minutes / 60.0 + seconds / 3600.0)
}

/// `XDim` (longitude) and `YDim` (latitude) coordinate arrays for the only geographic grid, when
/// arrays use those dimensions at those lengths and none of that name exists.
fn add_geo_coordinates(dataset: &mut VirtualDataset, grids: &[GeoGrid]) -> Result<(), (String, OwnedBytesError)> {
    let [grid] = grids else { return Ok(()) };
    let length_of = |arrays: &[VirtualArray], name: &str| {
        arrays.iter().find_map(|a| {
            let names = a.metadata.dimension_names.as_ref()?;
            names.iter().position(|n| n == name).map(|d| a.metadata.shape()[d])
        })
    };
    let axes = [("XDim", &grid.lon, "longitude", "degrees_east"), ("YDim", &grid.lat, "latitude", "degrees_north")];
    for (name, values, standard_name, units) in axes {
        if length_of(&dataset.arrays, name) != Some(values.len() as u64)
            || dataset.arrays.iter().any(|a| a.path == name)
        {
            continue;
        }
        if let Some(array) = coordinate(name, values, standard_name, units).map_err(|e| (name.to_string(), e))? {
            dataset.arrays.push(array);
        }
    }
    Ok(())
}

fn coordinate(
    name: &str,
    values: &[f64],
    standard_name: &str,
    units: &str,
) -> Result<Option<VirtualArray>, OwnedBytesError> {
    let n = values.len() as u64;
    let Ok(grid) = ChunkGrid::regular(&[n], &[n.max(1)]) else { return Ok(None) };
    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    let mut chunks = ChunkTable::missing(1);
    let entry = chunks.push_owned(&bytes)?;
    chunks.set(0, entry);
    let mut attributes = Map::new();
    attributes.insert("standard_name".into(), Value::from(standard_name));
    attributes.insert("units".into(), Value::from(units));
    let metadata = ArrayMetadata {
        data_type: DataType::Float64,
        chunk_grid: grid,
        fill_value: FillValue::zero(DataType::Float64),
        codecs: CodecChain::raw(Some(Endian::Little)),
        dimension_names: Some(vec![name.to_string()]),
        attributes,
        notes: Default::default(),
    };
    Ok(Some(VirtualArray {
        path: name.to_string(),
        metadata,
        chunks,
        rewritten_chunks: 0,
        digest: None,
        tails: Vec::new(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn array(name: &str, dims: &[&str], shape: &[u64]) -> VirtualArray {
        let mut a = coordinate(name, &[0.0], "x", "1").unwrap().unwrap();
        a.metadata.chunk_grid = ChunkGrid::regular(shape, shape).unwrap();
        a.metadata.dimension_names = Some(dims.iter().map(|d| d.to_string()).collect());
        a
    }

    fn field(name: &str, dims: &[&str]) -> Field {
        Field { name: name.into(), dims: dims.iter().map(|d| d.to_string()).collect(), attributes: Map::new() }
    }

    #[test]
    fn dimensions_are_renamed_unless_a_name_would_get_two_lengths() {
        let mut arrays =
            vec![array("a", &["YDim:G1", "XDim:G1"], &[2, 3]), array("b", &["YDim:G2", "XDim:G2"], &[2, 3])];
        assert!(rename_dims(&mut arrays, &[field("a", &["YDim", "XDim"]), field("b", &["YDim", "XDim"])]));
        assert_eq!(arrays[1].metadata.dimension_names.as_deref().unwrap(), ["YDim", "XDim"]);
        let mut arrays =
            vec![array("a", &["YDim:G1", "XDim:G1"], &[2, 3]), array("b", &["YDim:G2", "XDim:G2"], &[4, 3])];
        assert!(!rename_dims(&mut arrays, &[field("a", &["YDim", "XDim"]), field("b", &["YDim", "XDim"])]));
        assert_eq!(arrays[1].metadata.dimension_names.as_deref().unwrap(), ["YDim:G2", "XDim:G2"]);
    }

    #[test]
    fn packed_degrees_minutes_seconds() {
        assert_eq!(packed_dms(-180000000.0), -180.0);
        assert!((packed_dms(45030000.0) - 45.5).abs() < 1e-12);
    }
}
