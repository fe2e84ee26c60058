//! The `zarr.json` model (zarr-specs v3 core, "Metadata"): array and group documents.
//!
//! Pure data model shared by every stage: the scanners build [`ArrayMetadata`], the store writes it as
//! `zarr.json`, and the reader parses it back. It knows nothing of HDF5, netCDF or I/O.

mod array_notes;
mod compound_note;
mod data_type;
mod fill_value;
mod json_text;
mod keys;
mod struct_type;

pub use array_notes::{ArrayNotes, FilterNote, SourceChunks, SourceLayout, SourceStorage, EXTENSION_FIELD};
pub use compound_note::CompoundNote;
pub use data_type::DataType;
pub(crate) use data_type::{MAX_LENGTH_BYTES, MAX_STRING_ELEMENTS};
pub use fill_value::FillValue;
pub use json_text::{attribute_f64, float_attribute, from_text, to_text};
pub use keys::{chunk_key, node_key};
pub use struct_type::{StructField, StructType, MAX_STRUCT_DEPTH, MAX_STRUCT_FIELDS};

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use crate::codec::{CodecChain, CodecError};
use crate::grid::{ChunkGrid, GridError};

/// A `zarr.json` document that cannot be built or parsed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MetadataError {
    /// A field is missing or has a value vzarr cannot use.
    #[error("zarr.json field `{field}`: {reason}")]
    Invalid {
        /// The field name.
        field: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// The chunk grid is invalid.
    #[error("zarr.json chunk_grid: {0}")]
    Grid(#[from] GridError),
    /// The codec list is invalid.
    #[error("zarr.json codecs: {0}")]
    Codec(#[from] CodecError),
}

/// Attributes of a node: a JSON object.
pub type Attributes = Map<String, Value>;

/// The metadata of one Zarr v3 array.
#[derive(Debug, Clone, PartialEq)]
pub struct ArrayMetadata {
    /// Element type.
    pub data_type: DataType,
    /// Chunk grid; its extents are the array shape.
    pub chunk_grid: ChunkGrid,
    /// Value of elements in chunks that were never written.
    pub fill_value: FillValue,
    /// Codecs that turn a stored chunk into elements.
    pub codecs: CodecChain,
    /// One name per dimension, when known.
    pub dimension_names: Option<Vec<String>>,
    /// User attributes (CF attributes and the like).
    pub attributes: Attributes,
    /// What the JSON attributes cannot say about the source's (their numeric types; attributes
    /// withheld from xarray's Zarr backend): the extension field `"vzarr"` of `zarr.json`.
    pub notes: ArrayNotes,
}

impl ArrayMetadata {
    /// The array shape (element counts per dimension).
    pub fn shape(&self) -> Vec<u64> {
        self.chunk_grid.shape()
    }

    /// Bytes per element.
    pub fn element_size(&self) -> usize {
        self.data_type.size()
    }

    /// The `zarr.json` document.
    pub fn to_json(&self) -> Value {
        let mut doc = json!({
            "zarr_format": 3,
            "node_type": "array",
            "shape": self.shape(),
            "data_type": self.data_type.to_json(),
            "chunk_grid": self.chunk_grid.to_json(),
            "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
            "fill_value": self.fill_value.to_json(self.data_type),
            "codecs": self.codecs.to_json(),
            "attributes": Value::Object(self.attributes.clone()),
        });
        if let Some(obj) = doc.as_object_mut() {
            if let Some(names) = &self.dimension_names {
                obj.insert("dimension_names".into(), json!(names));
            }
            if let Some(notes) = self.notes.to_json(&self.attributes) {
                obj.insert(EXTENSION_FIELD.into(), notes);
            }
        }
        doc
    }

    /// The `zarr.json` text as vzarr writes it: non-finite attribute values as the bare tokens
    /// `NaN`, `Infinity`, `-Infinity` ([`to_text`]), never as vzarr's in-memory markers.
    pub fn to_text(&self) -> String {
        to_text(&self.to_json())
    }

    /// Parses an array `zarr.json` document.
    ///
    /// # Errors
    /// [`MetadataError`] naming the first field that is missing or invalid.
    pub fn from_json(doc: &Value) -> Result<Self, MetadataError> {
        expect_node(doc, "array")?;
        let shape = parse_shape(field(doc, "shape")?)?;
        let data_type = DataType::from_json(field(doc, "data_type")?)?;
        let chunk_grid = ChunkGrid::from_json(field(doc, "chunk_grid")?, &shape)?;
        check_key_encoding(doc)?;
        let fill_value = FillValue::from_json(data_type, field(doc, "fill_value")?)?;
        let codecs = CodecChain::from_json(field(doc, "codecs")?)?;
        let dimension_names = match doc.get("dimension_names") {
            None | Some(Value::Null) => None,
            Some(v) => Some(parse_names(v, shape.len())?),
        };
        let notes = ArrayNotes::from_json(doc)?;
        notes.check(data_type)?;
        Ok(ArrayMetadata {
            data_type,
            chunk_grid,
            fill_value,
            codecs,
            dimension_names,
            attributes: parse_attributes(doc)?,
            notes,
        })
    }
}

/// The `zarr.json` of a group.
pub fn group_json(attributes: &Attributes) -> Value {
    json!({"zarr_format": 3, "node_type": "group", "attributes": Value::Object(attributes.clone())})
}

/// The `zarr.json` of a group some of whose attributes are written as `encodings` says (name ->
/// `"base64"`: their bytes, which JSON text cannot hold): noted, as an array's, in the extension
/// field `vzarr` (`attribute_encodings`).
pub fn noted_group_json(attributes: &Attributes, encodings: &BTreeMap<String, String>) -> Value {
    let mut doc = group_json(attributes);
    if !encodings.is_empty() {
        doc[EXTENSION_FIELD] = json!({"must_understand": false, "attribute_encodings": encodings});
    }
    doc
}

/// The attributes a group `zarr.json` notes as written in base64 (see [`noted_group_json`]).
///
/// # Errors
/// [`MetadataError::Invalid`] when the note is not an object of `"base64"`.
pub fn group_encodings_from_json(doc: &Value) -> Result<BTreeMap<String, String>, MetadataError> {
    let Some(note) = doc.get(EXTENSION_FIELD).and_then(|v| v.get("attribute_encodings")) else {
        return Ok(BTreeMap::new());
    };
    array_notes::parse_attribute_encodings(note).map_err(|reason| invalid("vzarr", reason))
}

/// Parses a group `zarr.json` document into its attributes.
///
/// # Errors
/// [`MetadataError::Invalid`] when the document is not a Zarr v3 group.
pub fn group_from_json(doc: &Value) -> Result<Attributes, MetadataError> {
    expect_node(doc, "group")?;
    parse_attributes(doc)
}

/// The node type (`"array"` or `"group"`) of a `zarr.json` document.
///
/// # Errors
/// [`MetadataError::Invalid`] when the document is not Zarr v3 or has no valid node type.
pub fn node_type(doc: &Value) -> Result<&str, MetadataError> {
    if doc.get("zarr_format") != Some(&json!(3)) {
        return Err(invalid("zarr_format", "not a Zarr v3 document"));
    }
    match doc.get("node_type").and_then(Value::as_str) {
        Some(t @ ("array" | "group")) => Ok(t),
        _ => Err(invalid("node_type", "expected \"array\" or \"group\"")),
    }
}

/// Encodes a `_FillValue` attribute the way xarray reads Zarr v3 attributes (its `FillValueCoder`):
/// for floating-point arrays the base64 of the value as a little-endian f64; integers stay numbers.
/// Without this xarray cannot open CF data from Zarr v3. xarray decodes no `_FillValue` of a
/// fixed-width byte-string array (`|S<n>`: "Unsupported dtype"), so a char array's `_FillValue` is
/// withheld from the attributes into `notes` (the array's `fill_value` holds it too; vzarr's xarray
/// engine restores it, and masks as xarray does on the netCDF file). Struct and raw-bytes arrays lose
/// theirs (their `fill_value` holds it; xarray has no attribute form for them). The notes then keep
/// only the types of attributes that still hold numbers ([`ArrayNotes::prune`]).
pub fn encode_fill_value_attribute(data_type: DataType, attributes: &mut Attributes, notes: &mut ArrayNotes) {
    encode_fill_value(data_type, attributes, notes);
    notes.prune(attributes);
}

fn encode_fill_value(data_type: DataType, attributes: &mut Attributes, notes: &mut ArrayNotes) {
    let Some(value) = attributes.get("_FillValue") else { return };
    let encoded = match data_type {
        t if t.is_float() => attribute_f64(value).map(|v| crate::base64::encode(&v.to_le_bytes())),
        DataType::FixedBytes(_) => {
            if let Some(value) = attributes.remove("_FillValue") {
                notes.withheld.insert("_FillValue".into(), value);
            }
            return;
        }
        DataType::Struct(_) | DataType::RawBytes(_) => {
            attributes.remove("_FillValue");
            return;
        }
        _ => None,
    };
    if let Some(encoded) = encoded {
        attributes.insert("_FillValue".into(), Value::from(encoded));
    }
}

fn invalid(field: &'static str, reason: impl Into<String>) -> MetadataError {
    MetadataError::Invalid { field, reason: reason.into() }
}

fn field<'a>(doc: &'a Value, name: &'static str) -> Result<&'a Value, MetadataError> {
    doc.get(name).ok_or_else(|| invalid(name, "missing"))
}

fn expect_node(doc: &Value, expected: &str) -> Result<(), MetadataError> {
    let found = node_type(doc)?;
    if found != expected {
        return Err(invalid("node_type", format!("expected {expected}, found {found}")));
    }
    Ok(())
}

/// Most dimensions an array may have (libnetcdf's `NC_MAX_VAR_DIMS`; HDF5 allows 32): a crafted
/// `zarr.json` cannot make per-dimension work unbounded.
pub const MAX_RANK: usize = 1024;

fn parse_shape(v: &Value) -> Result<Vec<u64>, MetadataError> {
    let shape = v
        .as_array()
        .and_then(|items| items.iter().map(Value::as_u64).collect::<Option<Vec<_>>>())
        .ok_or_else(|| invalid("shape", format!("{v} is not a list of non-negative integers")))?;
    if shape.len() > MAX_RANK {
        return Err(invalid("shape", format!("{} dimensions; vzarr supports at most {MAX_RANK}", shape.len())));
    }
    Ok(shape)
}

fn check_key_encoding(doc: &Value) -> Result<(), MetadataError> {
    let enc = field(doc, "chunk_key_encoding")?;
    let separator = enc.pointer("/configuration/separator").and_then(Value::as_str).unwrap_or("/");
    if enc.get("name").and_then(Value::as_str) != Some("default") || separator != "/" {
        return Err(invalid("chunk_key_encoding", format!("only default with \"/\" is supported, found {enc}")));
    }
    Ok(())
}

fn parse_names(v: &Value, ndim: usize) -> Result<Vec<String>, MetadataError> {
    let names: Option<Vec<String>> =
        v.as_array().map(|items| items.iter().map(|n| n.as_str().unwrap_or_default().to_string()).collect());
    match names {
        Some(names) if names.len() == ndim => Ok(names),
        _ => Err(invalid("dimension_names", format!("{v} does not name {ndim} dimensions"))),
    }
}

fn parse_attributes(doc: &Value) -> Result<Attributes, MetadataError> {
    match doc.get("attributes") {
        None | Some(Value::Null) => Ok(Attributes::new()),
        Some(Value::Object(map)) => Ok(map.clone()),
        Some(other) => Err(invalid("attributes", format!("{other} is not an object"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::{Codec, Endian};

    fn sample() -> ArrayMetadata {
        let grid = ChunkGrid::new(vec![
            crate::grid::ChunkDim::from_edges(59, &[31, 28]).unwrap(),
            crate::grid::ChunkDim::regular(10, 5).unwrap(),
        ]);
        let mut attributes = Attributes::new();
        attributes.insert("units".into(), json!("K"));
        attributes.insert("scale_factor".into(), json!(0.5));
        let mut notes = ArrayNotes::default();
        notes.note_type("scale_factor", DataType::Float32);
        ArrayMetadata {
            data_type: DataType::Int16,
            chunk_grid: grid,
            fill_value: FillValue::from_bytes(DataType::Int16, (-999i16).to_ne_bytes().to_vec()).unwrap(),
            codecs: CodecChain::new(vec![
                Codec::Bytes { endian: Some(Endian::Big) },
                Codec::Shuffle { element_size: 2 },
                Codec::Zlib { level: 4 },
            ])
            .unwrap(),
            dimension_names: Some(vec!["time".into(), "x".into()]),
            attributes,
            notes,
        }
    }

    #[test]
    fn array_round_trips_through_json() {
        let meta = sample();
        let doc = meta.to_json();
        assert_eq!(doc["shape"], json!([59, 10]));
        assert_eq!(doc["chunk_grid"]["name"], "rectilinear");
        assert_eq!(doc["fill_value"], -999);
        assert_eq!(ArrayMetadata::from_json(&doc).unwrap(), meta);
    }

    #[test]
    fn rejects_wrong_documents() {
        let mut doc = sample().to_json();
        doc["dimension_names"] = json!(["time"]);
        assert!(ArrayMetadata::from_json(&doc).is_err());
        assert!(ArrayMetadata::from_json(&group_json(&Attributes::new())).is_err());
        let mut doc = sample().to_json();
        doc["chunk_key_encoding"] = json!({"name": "v2"});
        assert!(ArrayMetadata::from_json(&doc).is_err());
    }

    #[test]
    fn fill_values_survive_text_exactly() {
        // The netCDF default float fill, whose shortest decimal form needs exact parsing.
        let mut meta = sample();
        meta.data_type = DataType::Float64;
        meta.fill_value =
            FillValue::from_bytes(DataType::Float64, 9.969209968386869e36f64.to_ne_bytes().to_vec()).unwrap();
        meta.codecs = CodecChain::raw(Some(Endian::Little));
        let text = serde_json::to_string(&meta.to_json()).unwrap();
        let back = ArrayMetadata::from_json(&serde_json::from_str(&text).unwrap()).unwrap();
        assert_eq!(back.fill_value, meta.fill_value);
    }

    #[test]
    fn fill_value_attributes_use_xarrays_encoding() {
        let mut attrs = Attributes::new();
        attrs.insert("_FillValue".into(), json!(1.0e20));
        encode_fill_value_attribute(DataType::Float32, &mut attrs, &mut ArrayNotes::default());
        let bytes = crate::base64::decode(attrs["_FillValue"].as_str().unwrap()).unwrap();
        assert_eq!(f64::from_le_bytes(bytes.try_into().unwrap()), 1.0e20);
        let mut ints = Attributes::new();
        ints.insert("_FillValue".into(), json!(-999));
        encode_fill_value_attribute(DataType::Int16, &mut ints, &mut ArrayNotes::default());
        assert_eq!(ints["_FillValue"], json!(-999));
        let mut nan = Attributes::new();
        nan.insert("_FillValue".into(), float_attribute(f64::NAN));
        encode_fill_value_attribute(DataType::Float64, &mut nan, &mut ArrayNotes::default());
        let bytes = crate::base64::decode(nan["_FillValue"].as_str().unwrap()).unwrap();
        assert!(f64::from_le_bytes(bytes.try_into().unwrap()).is_nan());
        let mut chars = Attributes::new();
        chars.insert("_FillValue".into(), json!("x"));
        let mut notes = ArrayNotes::default();
        encode_fill_value_attribute(DataType::FixedBytes(4), &mut chars, &mut notes);
        assert!(chars.is_empty(), "no _FillValue attribute on a byte-string array: {chars:?}");
        assert_eq!(notes.withheld["_FillValue"], json!("x"), "withheld for vzarr's engine");
    }

    #[test]
    fn group_round_trips() {
        let mut attrs = Attributes::new();
        attrs.insert("title".into(), json!("t"));
        assert_eq!(group_from_json(&group_json(&attrs)).unwrap(), attrs);
    }
}
