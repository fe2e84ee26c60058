//! vzarr's notes on an array, kept in its `zarr.json` as the extension field `"vzarr"`: what the Zarr
//! attributes (JSON values) cannot say about the source's attributes, and how the store holds the
//! data (notes about storage, not user attributes).
//!
//! ```json
//! "vzarr": {"must_understand": false,
//!           "attribute_types": {"scale_factor": "float32", "valid_range": "int16"},
//!           "withheld_attributes": {"_FillValue": "e"},
//!           "copied_chunks": "copies, not references: the szip filter has no Zarr codec, ...",
//!           "source_filters": [{"id": 4, "name": "szip", "client_data": [141, 8, 32, 40]}]}
//! ```
//!
//! - `attribute_types`: the numeric type of each number-valued attribute whose type JSON loses (every
//!   type but `int64` and `float64`, which JSON numbers read back as). xarray picks the type it
//!   unpacks `scale_factor`/`add_offset` data to from these attributes' types: float32 data stay
//!   float32 only when they are float32.
//! - `withheld_attributes`: attributes left out of `attributes` because xarray's Zarr backend fails
//!   on them (a char array's `_FillValue`: `Unsupported dtype |S<n>`).
//! - `enum`: an HDF5 enum variable's members, name -> integer (its values are the integers; vzarr
//!   names the members as the CF flags `flag_values`/`flag_meanings` too). vzarr's xarray engine
//!   shows the enum as xarray's netCDF4 engine does: in the encoding's `dtype`, not as flags.
//! - `copied_chunks`: why every chunk is a store-owned copy, not a reference (a filter no Zarr codec
//!   describes: szip, PyTables' LZO, blosc2); `vzarr info` and `scan` say so too.
//! - `source_filters`: the source's HDF5 filter pipeline, in encode order (each filter's id, its
//!   usual name, else the name the file records, and its client data, `cd_values`), recorded where
//!   the chunks are copies: the codec chain is then vzarr's (shuffle, zstd), not the source's, and
//!   vzarr's xarray engine reports the filters from this note as xarray's netCDF4 engine reports
//!   them (`szip={'coding': 'nn', 'pixels_per_block': 8}`; h5netcdf's `compression='lzf'`). Where
//!   the chunks are references the codec chain is the pipeline itself, and no note repeats it.
//! - `fill_value`: set when the HDF5 fill value is undefined (libhdf5 leaves unwritten elements
//!   uninitialized; vzarr reads them as the type's default).
//! - `compound`: for a struct array, the source compound's member order and array members where
//!   they differ from the struct's ([`CompoundNote`], module `compound_note`).
//! - `attribute_shapes`: the shape of each attribute of more than one dimension, whose values
//!   `attributes` lists flat (in C order, as libnetcdf gives them): h5py and VirtualiZarr's
//!   HDFParser give them nested, and so does `vzarr.virtualizarr.Parser`.
//! - `object_references`: for a `string` array of the paths HDF5 object references name, the
//!   source's chunk shape (`{"chunk_shape": [..]}`); `reference_attributes`: the attributes whose
//!   values are such paths. `vzarr.virtualizarr.Parser(links_and_references=True)` gives both as
//!   VirtualiZarr's HDFParser does (paths relative to the object, the draft Links and Object
//!   References and ref conventions).
//! - `reference_fields`: for a struct array (an HDF5 compound with object reference members, which
//!   vzarr stores), the fields holding the paths the references name; the Python parser gives them
//!   relative with `links_and_references=True`, as HDFParser does.
//! - `source_layout`: how the source file lays the array out, as xarray's netCDF4 engine reports it
//!   in the `contiguous` and `chunksizes` encodings: `"contiguous"` (contiguous or compact HDF5
//!   storage), `{"chunks": [..]}` (the HDF5 chunk shape, over the dataset's own dimensions: a
//!   folded char array's string length included) or `"classic"` (a NetCDF-3 variable, which has
//!   neither chunks nor filters: netCDF4 reports no storage keys for it). Combined arrays keep the
//!   first file's.
//! - `unlimited_dims`: the array's dimensions that are unlimited in the source (an HDF5 dimension
//!   scale of unlimited maximum size, NetCDF-3's record dimension): the dataset's
//!   `encoding["unlimited_dims"]` in xarray.
//! - `enum_name`: an enum variable's type name in the file (the HDF5 committed datatype's link
//!   name, e.g. netCDF-4's `cloud_t`), which xarray writes the enum back as.
//! - `string_pad`: how an HDF5 fixed-length string array pads its strings (`"null_term"`,
//!   `"null_pad"` or `"space_pad"`, DMR++'s names), for `dmrpp:FixedLengthStringArray` out.
//! - `source_path`: the variable's path in its source file, where the array is named otherwise (a
//!   DMR++ sidecar's DAP name `Data_Fields/t` for the HDF5 dataset `Data Fields/t`), for `verify`.
//! - `attribute_encodings`: attributes whose bytes JSON text cannot hold (HDF5 opaque values,
//!   strings that are not valid UTF-8), name -> `"base64"`: each value is the base64 text of its
//!   bytes (h5py gives them as `numpy.void` and `bytes`).
//!
//! `attribute_types` also names `complex64`/`complex128` for complex attributes (h5py's compound of
//! two floats `r`, `i`), whose JSON values are objects `{"r": .., "i": ..}` (lists of them for
//! arrays): Zarr readers see the members, vzarr's Python package gives NumPy complex numbers.
//!
//! `must_understand: false` lets any Zarr reader ignore the field (zarr-python 3 keeps it in
//! `metadata.extra_fields`); vzarr's Python `Array.attrs` and its xarray engine apply it, so that
//! `xr.open_dataset(store, engine="vzarr")` shows the attributes as netCDF4 shows the source's (the
//! storage notes go to each variable's `encoding`, as `vzarr:copied_chunks` and `vzarr:fill_value`).

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use super::compound_note::CompoundNote;
use super::json_text::MARKER;
use super::{Attributes, DataType, MetadataError};

/// The name of the extension field in an array's `zarr.json`.
pub const EXTENSION_FIELD: &str = "vzarr";

/// vzarr's notes on an array: source facts its JSON attributes cannot hold, and how it is stored.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ArrayNotes {
    /// The numeric type of number-valued attributes, where it is not `int64` or `float64`.
    pub types: BTreeMap<String, DataType>,
    /// Attributes withheld from `attributes` (xarray's Zarr backend fails on them).
    pub withheld: Attributes,
    /// An enum variable's members (name, integer value), in the file's order.
    pub enum_members: Option<Map<String, Value>>,
    /// Why every chunk is a store-owned copy, not a reference, when it is.
    pub copied_chunks: Option<String>,
    /// What the fill value is when the source leaves it undefined.
    pub fill_value: Option<String>,
    /// How a struct array's source compound lists its members, when the struct cannot say it.
    pub compound: Option<CompoundNote>,
    /// The shape of attributes of more than one dimension (their values are listed flat).
    pub shapes: BTreeMap<String, Vec<u64>>,
    /// For an array of the paths HDF5 object references name: the source's chunk shape.
    pub object_references: Option<Vec<u64>>,
    /// For a struct array: the fields holding the paths HDF5 object references name.
    pub reference_fields: Vec<String>,
    /// The attributes whose values are the paths HDF5 object references name.
    pub reference_attributes: std::collections::BTreeSet<String>,
    /// How attributes whose bytes JSON text cannot hold (opaque values, strings that are not UTF-8)
    /// are written: attribute name -> `"base64"` (each value the base64 text of its bytes).
    pub encodings: BTreeMap<String, String>,
    /// How the source file lays the array out, when the scan knows it.
    pub source_layout: Option<SourceLayout>,
    /// The array's dimensions that are unlimited in the source, in the array's order.
    pub unlimited_dims: Vec<String>,
    /// An enum variable's type name in the file.
    pub enum_name: Option<String>,
    /// The source's HDF5 filter pipeline, in encode order, where the chunks are copies.
    pub source_filters: Vec<FilterNote>,
    /// How a fixed-length string array pads its strings in the source (`null_term`, `null_pad`,
    /// `space_pad`).
    pub string_pad: Option<String>,
    /// The variable's path in its source file where the scan names the array otherwise (a DMR++
    /// sidecar's DAP name for an HDF5 dataset whose path holds spaces or dots, from BES's
    /// `fullnamepath`).
    pub source_path: Option<String>,
    /// For a struct array the scan repacked (an HDF5 compound with padding): the file's own chunks,
    /// which the DMR++ writer lists as BES does. Held in memory only: never written to `zarr.json`.
    pub source_chunks: Option<SourceChunks>,
}

/// The file's own storage of an array whose store chunks are repacked copies (HDF5 compounds with
/// padding), for the DMR++ writer. Not part of the array's metadata: equal to every other (two
/// scans of one archive compare their notes, and the files' chunks always differ), never serialized.
#[derive(Debug, Clone)]
pub struct SourceChunks {
    /// BES's `structOffset`: the stored offsets of the members after the first, then the stored
    /// element size.
    pub struct_offsets: Vec<u64>,
    /// How the file stores the elements.
    pub storage: SourceStorage,
}

/// How the file stores a repacked array's elements ([`SourceChunks`]).
#[derive(Debug, Clone)]
pub enum SourceStorage {
    /// In chunks of `chunk_shape`: (linear chunk index, offset, length in bytes) of every chunk the
    /// file holds, in source 0.
    Chunked {
        /// The file's chunk shape.
        chunk_shape: Vec<u64>,
        /// The chunks the file holds.
        chunks: std::sync::Arc<Vec<(u64, u64, u64)>>,
    },
    /// In one block of `length` bytes at `offset` (BES lists it with no chunk shape or position).
    Contiguous {
        /// The block's offset in source 0.
        offset: u64,
        /// Its length in bytes.
        length: u64,
    },
    /// In the object header: these stored (padded) elements, in file order.
    Compact(std::sync::Arc<Vec<u8>>),
}

impl PartialEq for SourceChunks {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

/// One filter of a source's HDF5 filter pipeline, as the `source_filters` note records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilterNote {
    /// The HDF5 filter id (4 szip, 32000 LZF, ...).
    pub id: i32,
    /// The filter's usual name, else the name the file records (may be empty).
    pub name: String,
    /// The filter's client data (`cd_values`) as the file stores them.
    pub client_data: Vec<u32>,
}

impl FilterNote {
    fn to_json(&self) -> Value {
        json!({"id": self.id, "name": self.name, "client_data": self.client_data})
    }

    fn from_json(value: &Value) -> Option<Self> {
        let id = i32::try_from(value.get("id")?.as_i64()?).ok()?;
        let name = value.get("name")?.as_str()?.to_owned();
        let client_data = value.get("client_data")?.as_array()?;
        let client_data =
            client_data.iter().map(|v| v.as_u64().and_then(|n| u32::try_from(n).ok())).collect::<Option<_>>()?;
        Some(FilterNote { id, name, client_data })
    }
}

/// How a source file lays an array's data out (what netCDF4's `Variable.chunking()` tells).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SourceLayout {
    /// One block: HDF5 contiguous or compact storage.
    Contiguous,
    /// A NetCDF-3 variable: no HDF5 layout, no filters.
    Classic,
    /// HDF5 chunks of this shape, over the dataset's own dimensions.
    Chunked(Vec<u64>),
}

impl SourceLayout {
    fn to_json(&self) -> Value {
        match self {
            SourceLayout::Contiguous => Value::from("contiguous"),
            SourceLayout::Classic => Value::from("classic"),
            SourceLayout::Chunked(shape) => json!({ "chunks": shape }),
        }
    }

    fn from_json(value: &Value) -> Option<Self> {
        match value.as_str() {
            Some("contiguous") => return Some(SourceLayout::Contiguous),
            Some("classic") => return Some(SourceLayout::Classic),
            _ => {}
        }
        let dims = value.pointer("/chunks")?.as_array()?;
        dims.iter().map(Value::as_u64).collect::<Option<Vec<u64>>>().map(SourceLayout::Chunked)
    }
}

impl ArrayNotes {
    /// Records the numeric type of attribute `name` when JSON loses it (see the module docs).
    pub fn note_type(&mut self, name: &str, data_type: DataType) {
        if is_noted_type(data_type) {
            self.types.insert(name.to_string(), data_type);
        }
    }

    /// Drops the types of attributes that are absent from `attributes` or no longer hold numbers (a
    /// float `_FillValue` in xarray's base64 form), so that notes read back from `zarr.json` equal
    /// the notes written.
    pub fn prune(&mut self, attributes: &Attributes) {
        self.types.retain(|name, t| attributes.get(name.as_str()).is_some_and(|v| holds_values(v, *t)));
        self.shapes.retain(|name, _| attributes.contains_key(name.as_str()));
        self.reference_attributes.retain(|name| attributes.contains_key(name.as_str()));
        self.encodings.retain(|name, _| attributes.contains_key(name.as_str()));
    }

    /// The extension field's value for an array with `attributes`, or None when there is nothing to
    /// say. Types are given only for attributes that are present and hold numbers (a value replaced
    /// by a string or dropped when files were combined loses its note).
    pub fn to_json(&self, attributes: &Attributes) -> Option<Value> {
        let types: Map<String, Value> = self
            .types
            .iter()
            .filter(|(name, t)| attributes.get(name.as_str()).is_some_and(|v| holds_values(v, **t)))
            .map(|(name, t)| (name.clone(), Value::from(t.name())))
            .collect();
        let shapes: Map<String, Value> = self
            .shapes
            .iter()
            .filter(|(name, _)| attributes.contains_key(name.as_str()))
            .map(|(name, shape)| (name.clone(), Value::from(shape.clone())))
            .collect();
        let encodings: Map<String, Value> = self
            .encodings
            .iter()
            .filter(|(name, _)| attributes.contains_key(name.as_str()))
            .map(|(name, encoding)| (name.clone(), Value::from(encoding.as_str())))
            .collect();
        let storage = [("copied_chunks", &self.copied_chunks), ("fill_value", &self.fill_value)];
        let references: Vec<Value> = self
            .reference_attributes
            .iter()
            .filter(|name| attributes.contains_key(name.as_str()))
            .map(|name| Value::from(name.as_str()))
            .collect();
        if types.is_empty()
            && shapes.is_empty()
            && encodings.is_empty()
            && references.is_empty()
            && self.object_references.is_none()
            && self.reference_fields.is_empty()
            && self.withheld.is_empty()
            && self.enum_members.is_none()
            && storage.iter().all(|(_, note)| note.is_none())
            && self.compound.is_none()
            && self.source_layout.is_none()
            && self.unlimited_dims.is_empty()
            && self.enum_name.is_none()
            && self.source_filters.is_empty()
            && self.string_pad.is_none()
            && self.source_path.is_none()
        {
            return None;
        }
        let mut field = json!({"must_understand": false});
        if !types.is_empty() {
            field["attribute_types"] = Value::Object(types);
        }
        if !self.withheld.is_empty() {
            field["withheld_attributes"] = Value::Object(self.withheld.clone());
        }
        if !shapes.is_empty() {
            field["attribute_shapes"] = Value::Object(shapes);
        }
        if !encodings.is_empty() {
            field["attribute_encodings"] = Value::Object(encodings);
        }
        if !references.is_empty() {
            field["reference_attributes"] = Value::Array(references);
        }
        if let Some(chunk_shape) = &self.object_references {
            field["object_references"] = json!({"chunk_shape": chunk_shape});
        }
        if !self.reference_fields.is_empty() {
            field["reference_fields"] = json!(self.reference_fields);
        }
        if let Some(members) = &self.enum_members {
            field["enum"] = Value::Object(members.clone());
        }
        for (key, note) in storage {
            if let Some(note) = note {
                field[key] = Value::from(note.as_str());
            }
        }
        if let Some(compound) = &self.compound {
            field["compound"] = compound.to_json();
        }
        if let Some(layout) = &self.source_layout {
            field["source_layout"] = layout.to_json();
        }
        if !self.unlimited_dims.is_empty() {
            field["unlimited_dims"] = json!(self.unlimited_dims);
        }
        if let Some(name) = &self.enum_name {
            field["enum_name"] = Value::from(name.as_str());
        }
        if let Some(pad) = &self.string_pad {
            field["string_pad"] = Value::from(pad.as_str());
        }
        if let Some(path) = &self.source_path {
            field["source_path"] = Value::from(path.as_str());
        }
        if !self.source_filters.is_empty() {
            field["source_filters"] = self.source_filters.iter().map(FilterNote::to_json).collect();
        }
        Some(field)
    }

    /// Parses the extension field of an array `zarr.json` document (none: empty notes).
    ///
    /// # Errors
    /// [`MetadataError::Invalid`] when the field is not an object of the form above, names a type
    /// that is not a numeric one, or has a malformed `compound` note.
    pub fn from_json(doc: &Value) -> Result<Self, MetadataError> {
        let Some(field) = doc.get(EXTENSION_FIELD) else { return Ok(Self::default()) };
        let invalid = |reason: String| MetadataError::Invalid { field: EXTENSION_FIELD, reason };
        let object = field.as_object().ok_or_else(|| invalid(format!("{field} is not an object")))?;
        let mut notes = Self::default();
        if let Some(types) = object.get("attribute_types") {
            let types = types.as_object().ok_or_else(|| invalid("attribute_types is not an object".into()))?;
            for (name, value) in types {
                let data_type = DataType::from_json(value)
                    .ok()
                    .filter(|t| is_noted_type(*t))
                    .ok_or_else(|| invalid(format!("attribute {name}: {value} is not a numeric type")))?;
                notes.types.insert(name.clone(), data_type);
            }
        }
        if let Some(shapes) = object.get("attribute_shapes") {
            let shapes = shapes.as_object().ok_or_else(|| invalid("attribute_shapes is not an object".into()))?;
            for (name, value) in shapes {
                let shape = value
                    .as_array()
                    .and_then(|dims| dims.iter().map(Value::as_u64).collect::<Option<Vec<u64>>>())
                    .ok_or_else(|| invalid(format!("attribute {name}: shape {value} is not a list of integers")))?;
                notes.shapes.insert(name.clone(), shape);
            }
        }
        if let Some(encodings) = object.get("attribute_encodings") {
            notes.encodings = parse_attribute_encodings(encodings).map_err(invalid)?;
        }
        // A list of names under `key` (absent: empty).
        let names = |key: &str| match object.get(key) {
            None => Ok(Vec::new()),
            Some(value) => value
                .as_array()
                .and_then(|n| n.iter().map(|v| v.as_str().map(str::to_owned)).collect::<Option<Vec<String>>>())
                .ok_or_else(|| invalid(format!("{key} is not a list of names"))),
        };
        notes.reference_attributes = names("reference_attributes")?.into_iter().collect();
        if let Some(references) = object.get("object_references") {
            let chunk_shape = references
                .pointer("/chunk_shape")
                .and_then(Value::as_array)
                .and_then(|dims| dims.iter().map(Value::as_u64).collect::<Option<Vec<u64>>>())
                .ok_or_else(|| invalid(format!("object_references: {references} has no chunk_shape list")))?;
            notes.object_references = Some(chunk_shape);
        }
        notes.reference_fields = names("reference_fields")?;
        if let Some(withheld) = object.get("withheld_attributes") {
            let withheld =
                withheld.as_object().ok_or_else(|| invalid("withheld_attributes is not an object".into()))?;
            notes.withheld = withheld.clone();
        }
        if let Some(members) = object.get("enum") {
            let members = members
                .as_object()
                .filter(|m| m.values().all(|v| v.is_i64() || v.is_u64()))
                .ok_or_else(|| invalid("enum is not an object of integers".into()))?;
            notes.enum_members = Some(members.clone());
        }
        let text = |key: &str| match object.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(invalid(format!("{key}: {other} is not a string"))),
        };
        notes.copied_chunks = text("copied_chunks")?;
        notes.fill_value = text("fill_value")?;
        notes.enum_name = text("enum_name")?;
        notes.string_pad = text("string_pad")?;
        notes.source_path = text("source_path")?;
        if let Some(layout) = object.get("source_layout") {
            let layout = SourceLayout::from_json(layout);
            notes.source_layout = Some(layout.ok_or_else(|| {
                invalid("source_layout is not \"contiguous\", \"classic\" or {\"chunks\": [..]}".into())
            })?);
        }
        notes.unlimited_dims = names("unlimited_dims")?;
        if let Some(filters) = object.get("source_filters") {
            notes.source_filters = filters
                .as_array()
                .and_then(|f| f.iter().map(FilterNote::from_json).collect::<Option<Vec<FilterNote>>>())
                .ok_or_else(|| {
                    invalid("source_filters is not a list of {\"id\", \"name\", \"client_data\"} objects".into())
                })?;
        }
        if let Some(compound) = object.get("compound") {
            let note = CompoundNote::from_json(compound, 0).map_err(|why| invalid(format!("compound: {why}")))?;
            notes.compound = Some(note);
        }
        Ok(notes)
    }

    /// Checks the notes that describe the array's data type against it (`compound` needs a struct it
    /// fits).
    ///
    /// # Errors
    /// [`MetadataError::Invalid`] naming the extension field and what does not fit.
    pub fn check(&self, data_type: DataType) -> Result<(), MetadataError> {
        match &self.compound {
            Some(note) => note
                .check(data_type)
                .map_err(|why| MetadataError::Invalid { field: EXTENSION_FIELD, reason: format!("compound: {why}") }),
            None => Ok(()),
        }
    }
}

/// The numeric types JSON numbers do not carry (they read back as `int64` or `float64`), and the
/// complex types (JSON objects of their two parts).
fn is_noted_type(data_type: DataType) -> bool {
    use DataType::*;
    matches!(
        data_type,
        Int8 | Int16 | Int32 | UInt8 | UInt16 | UInt32 | UInt64 | Float16 | Float32 | Complex64 | Complex128
    )
}

/// Whether `value` holds values of the noted type `data_type`: complex numbers (objects of two
/// numbers, or a non-empty list of them) for a complex type, else numbers ([`holds_numbers`]).
fn holds_values(value: &Value, data_type: DataType) -> bool {
    if !matches!(data_type, DataType::Complex64 | DataType::Complex128) {
        return holds_numbers(value);
    }
    let complex = |v: &Value| v.as_object().is_some_and(|o| o.len() == 2 && o.values().all(holds_number));
    match value {
        Value::Array(items) => !items.is_empty() && items.iter().all(complex),
        other => complex(other),
    }
}

/// A number, NaN and infinities included (their markers).
fn holds_number(value: &Value) -> bool {
    value.is_number() || value.as_object().is_some_and(|o| o.contains_key(MARKER))
}

/// A number, or a non-empty list of numbers (NaN and infinities included: [`float_attribute`]).
///
/// [`float_attribute`]: super::float_attribute
fn holds_numbers(value: &Value) -> bool {
    match value {
        Value::Array(items) => !items.is_empty() && items.iter().all(holds_number),
        other => holds_number(other),
    }
}

/// The `attribute_encodings` note (an array's or a group's): attribute name -> `"base64"`.
///
/// # Errors
/// The reason, when the note is not an object whose values are all `"base64"`.
pub(crate) fn parse_attribute_encodings(note: &Value) -> Result<BTreeMap<String, String>, String> {
    let encodings = note.as_object().filter(|m| m.values().all(|v| v == "base64"));
    let encodings = encodings.ok_or_else(|| "attribute_encodings is not an object of \"base64\"".to_string())?;
    Ok(encodings.keys().map(|name| (name.clone(), "base64".to_string())).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn source_layout_unlimited_dims_and_enum_name_round_trip() {
        for layout in [SourceLayout::Contiguous, SourceLayout::Classic, SourceLayout::Chunked(vec![1, 30, 30])] {
            let notes = ArrayNotes {
                source_layout: Some(layout),
                unlimited_dims: vec!["time".into()],
                enum_name: Some("cloud_t".into()),
                ..Default::default()
            };
            let field = notes.to_json(&Attributes::new()).unwrap();
            let parsed = ArrayNotes::from_json(&json!({ EXTENSION_FIELD: field })).unwrap();
            assert_eq!(parsed, notes);
        }
        let bad = json!({ EXTENSION_FIELD: {"source_layout": {"chunks": [1, -2]}} });
        assert!(ArrayNotes::from_json(&bad).unwrap_err().to_string().contains("source_layout"));
        let bad = json!({ EXTENSION_FIELD: {"unlimited_dims": "time"} });
        assert!(ArrayNotes::from_json(&bad).unwrap_err().to_string().contains("unlimited_dims"));
    }

    #[test]
    fn source_filters_round_trip() {
        let notes = ArrayNotes {
            copied_chunks: Some("copies".into()),
            source_filters: vec![
                FilterNote { id: 2, name: "shuffle".into(), client_data: vec![4] },
                FilterNote { id: 4, name: "szip".into(), client_data: vec![141, 8, 32, 40] },
                FilterNote { id: 32000, name: "lzf".into(), client_data: vec![4, 261, u32::MAX] },
            ],
            ..Default::default()
        };
        let field = notes.to_json(&Attributes::new()).unwrap();
        assert_eq!(field["source_filters"][1], json!({"id": 4, "name": "szip", "client_data": [141, 8, 32, 40]}));
        let parsed = ArrayNotes::from_json(&json!({ EXTENSION_FIELD: field })).unwrap();
        assert_eq!(parsed, notes);
        for bad in [
            json!({"source_filters": {"id": 4}}),
            json!({"source_filters": [{"id": 4, "name": "szip"}]}),
            json!({"source_filters": [{"id": 4, "name": "szip", "client_data": [-1]}]}),
            json!({"source_filters": [{"id": 4, "name": "szip", "client_data": [4294967296u64]}]}),
            json!({"source_filters": [{"id": 1u64 << 40, "name": "x", "client_data": []}]}),
        ] {
            let err = ArrayNotes::from_json(&json!({ EXTENSION_FIELD: bad })).unwrap_err();
            assert!(err.to_string().contains("source_filters"), "{err}");
        }
    }

    #[test]
    fn types_json_keeps_are_not_noted_and_notes_round_trip() {
        let mut notes = ArrayNotes::default();
        notes.note_type("scale_factor", DataType::Float32);
        notes.note_type("valid_range", DataType::Int16);
        notes.note_type("offset", DataType::Float64);
        notes.note_type("count", DataType::Int64);
        notes.note_type("gone", DataType::UInt8);
        notes.note_type("now_text", DataType::Int32);
        notes.withheld.insert("_FillValue".into(), json!("e"));
        notes.enum_members = Some(serde_json::from_value(json!({"RED": 0, "GREEN": 1})).unwrap());
        notes.copied_chunks = Some("copies".into());
        let attributes: Attributes = serde_json::from_value(json!({
            "scale_factor": 0.5, "valid_range": [-5, 5], "offset": 1.5, "count": 3, "now_text": "3",
        }))
        .unwrap();
        let mut attributes = attributes;
        attributes.insert("nan".into(), crate::metadata::float_attribute(f64::NAN));
        notes.note_type("nan", DataType::Float32);
        let field = notes.to_json(&attributes).unwrap();
        assert_eq!(
            field,
            json!({"must_understand": false,
                   "attribute_types": {"nan": "float32", "scale_factor": "float32", "valid_range": "int16"},
                   "withheld_attributes": {"_FillValue": "e"},
                   "enum": {"RED": 0, "GREEN": 1},
                   "copied_chunks": "copies"})
        );
        let parsed = ArrayNotes::from_json(&json!({ EXTENSION_FIELD: field })).unwrap();
        assert_eq!(parsed.types.len(), 3);
        assert_eq!(parsed.types["scale_factor"], DataType::Float32);
        assert_eq!(parsed.withheld["_FillValue"], json!("e"));
        assert_eq!(parsed.enum_members, notes.enum_members);
        assert_eq!(parsed.copied_chunks.as_deref(), Some("copies"));
        assert_eq!(parsed.fill_value, None);
        assert_eq!(ArrayNotes::default().to_json(&attributes), None);
        assert_eq!(ArrayNotes::from_json(&json!({})).unwrap(), ArrayNotes::default());
    }

    #[test]
    fn complex_types_and_compound_notes_round_trip() {
        let mut notes = ArrayNotes::default();
        notes.note_type("c", DataType::Complex64);
        notes.note_type("cs", DataType::Complex128);
        notes.note_type("not_complex", DataType::Complex64);
        notes.compound = Some(CompoundNote {
            member_order: Some(vec!["b".into(), "a".into()]),
            array_members: [("a".to_string(), vec![2])].into(),
            members: BTreeMap::new(),
        });
        let attributes: Attributes = serde_json::from_value(json!({
            "c": {"r": 1.0, "i": -2.5}, "cs": [{"r": 1, "i": 0}, {"r": 0, "i": 1}], "not_complex": 3,
        }))
        .unwrap();
        let field = notes.to_json(&attributes).unwrap();
        assert_eq!(
            field,
            json!({"must_understand": false,
                   "attribute_types": {"c": "complex64", "cs": "complex128"},
                   "compound": {"member_order": ["b", "a"], "array_members": {"a": [2]}}})
        );
        let parsed = ArrayNotes::from_json(&json!({ EXTENSION_FIELD: field })).unwrap();
        assert_eq!(parsed.types["cs"], DataType::Complex128);
        assert_eq!(parsed.compound, notes.compound);
        let pair = crate::metadata::StructType::intern(vec![
            crate::metadata::StructField { name: "a".into(), data_type: DataType::Int8 },
            crate::metadata::StructField { name: "b".into(), data_type: DataType::Int8 },
        ])
        .unwrap();
        let err = parsed.check(DataType::Struct(pair)).unwrap_err();
        assert!(err.to_string().contains("vzarr") && err.to_string().contains("array member a"), "{err}");
        assert!(parsed.check(DataType::Int8).is_err());
        assert!(ArrayNotes::default().check(DataType::Int8).is_ok());
    }

    #[test]
    fn attribute_shapes_round_trip_for_present_attributes() {
        let mut notes = ArrayNotes::default();
        notes.shapes.insert("grid".into(), vec![2, 2]);
        notes.shapes.insert("gone".into(), vec![3, 1]);
        let attributes: Attributes = serde_json::from_value(json!({"grid": ["a", "b", "c", "d"]})).unwrap();
        let field = notes.to_json(&attributes).unwrap();
        assert_eq!(field, json!({"must_understand": false, "attribute_shapes": {"grid": [2, 2]}}));
        let parsed = ArrayNotes::from_json(&json!({ EXTENSION_FIELD: field })).unwrap();
        assert_eq!(parsed.shapes, [("grid".to_string(), vec![2, 2])].into());
        notes.prune(&attributes);
        assert_eq!(notes.shapes, parsed.shapes);
        assert!(ArrayNotes::from_json(&json!({ EXTENSION_FIELD: {"attribute_shapes": {"a": [1, -2]}} })).is_err());
    }

    #[test]
    fn object_reference_notes_round_trip() {
        let mut notes = ArrayNotes {
            object_references: Some(vec![3]),
            reference_fields: vec!["timeseries".into()],
            ..ArrayNotes::default()
        };
        notes.reference_attributes.insert("table".into());
        notes.reference_attributes.insert("gone".into());
        let attributes: Attributes = serde_json::from_value(json!({"table": "/general/electrodes"})).unwrap();
        let field = notes.to_json(&attributes).unwrap();
        assert_eq!(
            field,
            json!({"must_understand": false, "reference_attributes": ["table"],
                   "object_references": {"chunk_shape": [3]}, "reference_fields": ["timeseries"]})
        );
        let parsed = ArrayNotes::from_json(&json!({ EXTENSION_FIELD: field })).unwrap();
        notes.prune(&attributes);
        assert_eq!(parsed, notes);
        for bad in [json!({"reference_attributes": "table"}), json!({"object_references": {"chunk_shape": "x"}})] {
            assert!(ArrayNotes::from_json(&json!({ EXTENSION_FIELD: bad })).is_err());
        }
    }

    #[test]
    fn malformed_fields_are_named() {
        for bad in [
            json!("x"),
            json!({"attribute_types": []}),
            json!({"attribute_types": {"a": "string"}}),
            json!({"attribute_types": {"a": "float64"}}),
            json!({"withheld_attributes": 3}),
            json!({"enum": {"RED": "zero"}}),
            json!({"fill_value": 0}),
            json!({"attribute_types": {"a": "struct"}}),
            json!({"compound": []}),
            json!({"compound": {"member_order": "a"}}),
            json!({"compound": {"array_members": {"c": [0]}}}),
        ] {
            let err = ArrayNotes::from_json(&json!({ EXTENSION_FIELD: bad })).unwrap_err();
            assert!(err.to_string().contains("vzarr"), "{err}");
        }
    }
}
