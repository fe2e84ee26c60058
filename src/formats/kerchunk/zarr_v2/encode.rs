//! Zarr v3 metadata as the Zarr v2 documents kerchunk Parquet holds (zarr-specs v2, "Metadata"):
//! `.zgroup` and `.zattrs` of a group, `.zarray` and `.zattrs` of an array.
//!
//! The codec chain `[bytes, b2b...]` becomes the dtype's byte order plus `filters` (the bytes -> bytes
//! codecs in encode order, as numcodecs configurations) and no `compressor`, as kerchunk writes HDF5
//! filter pipelines; `dimension_names` become the `_ARRAY_DIMENSIONS` attribute xarray reads. What
//! Zarr v2 cannot say is refused with the reason: a rectilinear chunk grid (v2 has one chunk shape per
//! array) and struct data types.

use serde_json::{json, Map, Value};

use crate::codec::{Codec, Endian};
use crate::metadata::{ArrayMetadata, Attributes, DataType};

/// Why an array has no Zarr v2 form ([`array_documents`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum EncodeError {
    /// A rectilinear chunk grid: Zarr v2 has one chunk shape per array.
    #[error("its chunk grid is rectilinear, which Zarr v2 (kerchunk Parquet) cannot express")]
    Rectilinear,
    /// A struct data type.
    #[error("its data type is a struct, which vzarr does not write as Zarr v2")]
    Struct,
    /// An array -> bytes codec among the filters.
    #[error("codec {codec} out of place")]
    OutOfPlace {
        /// The codec's name.
        codec: String,
    },
}

/// The `.zgroup` document.
pub(crate) fn zgroup() -> Value {
    json!({"zarr_format": 2})
}

/// The `.zarray` and `.zattrs` documents of an array.
///
/// # Errors
/// [`EncodeError`]: why the array has no Zarr v2 form (a rectilinear grid, a struct data type).
pub(crate) fn array_documents(metadata: &ArrayMetadata) -> Result<(Value, Value), EncodeError> {
    let grid = &metadata.chunk_grid;
    let chunks: Vec<u64> =
        grid.dims().iter().map(|d| d.regular_size()).collect::<Option<_>>().ok_or(EncodeError::Rectilinear)?;
    let (dtype, filters) = dtype_and_filters(metadata)?;
    let zarray = json!({
        "chunks": chunks,
        "compressor": null,
        "dtype": dtype,
        "fill_value": v2_fill_value(metadata),
        "filters": if filters.is_empty() { Value::Null } else { Value::Array(filters) },
        "order": "C",
        "shape": metadata.shape(),
        "zarr_format": 2,
    });
    let mut attributes = metadata.attributes.clone();
    // The CF `_FillValue` stays in its Zarr v3 form too (vzarr's readers take it from there; xarray's
    // zarr engine takes the Zarr v2 `fill_value` in its place).
    if let Some(names) = &metadata.dimension_names {
        attributes.insert("_ARRAY_DIMENSIONS".into(), json!(names));
    }
    Ok((zarray, Value::Object(attributes)))
}

/// A group's `.zattrs`.
pub(crate) fn group_attributes(attributes: &Attributes) -> Value {
    Value::Object(attributes.clone())
}

/// The NumPy dtype string and the numcodecs filter list of an array.
fn dtype_and_filters(metadata: &ArrayMetadata) -> Result<(String, Vec<Value>), EncodeError> {
    let data_type = metadata.data_type;
    if let DataType::Struct(_) = data_type {
        return Err(EncodeError::Struct);
    }
    let mut filters = Vec::new();
    let mut endian = None;
    for codec in metadata.codecs.codecs() {
        match codec {
            Codec::Bytes { endian: e } => endian = *e,
            Codec::VlenUtf8 => filters.push(json!({"id": "vlen-utf8"})),
            other => filters.push(numcodecs(other)?),
        }
    }
    let descr = data_type.numpy_descr();
    let dtype = match (endian, descr.as_bytes().first()) {
        (Some(Endian::Big), Some(b'<')) => format!(">{}", &descr[1..]),
        _ => descr,
    };
    Ok((dtype, filters))
}

/// The numcodecs configuration (`{"id": ..., ...}`) of a bytes -> bytes codec.
fn numcodecs(codec: &Codec) -> Result<Value, EncodeError> {
    Ok(match codec {
        Codec::Shuffle { element_size } => json!({"id": "shuffle", "elementsize": element_size}),
        Codec::Zlib { level } => json!({"id": "zlib", "level": level}),
        Codec::Gzip { level } => json!({"id": "gzip", "level": level}),
        Codec::Zstd { level, checksum } => json!({"id": "zstd", "level": level, "checksum": checksum}),
        Codec::Fletcher32 => json!({"id": "fletcher32"}),
        Codec::Blosc { cname, clevel, shuffle, blocksize, .. } => {
            let shuffle = match shuffle.as_str() {
                "shuffle" => 1,
                "bitshuffle" => 2,
                _ => 0,
            };
            json!({"id": "blosc", "cname": cname.as_str(), "clevel": clevel, "shuffle": shuffle, "blocksize": blocksize})
        }
        Codec::Bytes { .. } | Codec::VlenUtf8 => {
            return Err(EncodeError::OutOfPlace { codec: codec.name().to_string() })
        }
    })
}

/// The Zarr v2 `fill_value`, which Zarr v2 readers fill missing chunks with and xarray's zarr engine
/// masks by: the CF `_FillValue` attribute where the array has one (netCDF's masking value), else the
/// storage fill value, `null` where that is zero (HDF5's default: no fill value was set, and a
/// netCDF reader masks nothing; Zarr v2 readers fill missing chunks with zeros for `null` too).
fn v2_fill_value(metadata: &ArrayMetadata) -> Value {
    if let Some(value) = cf_fill_value(metadata) {
        return value;
    }
    let zero = metadata.fill_value.as_bytes().iter().all(|b| *b == 0);
    if zero && !matches!(metadata.data_type, DataType::FixedBytes(_) | DataType::RawBytes(_)) {
        return Value::Null;
    }
    fill_value(metadata)
}

/// The array's CF `_FillValue` attribute as a Zarr v2 `fill_value`, for numeric arrays: a number, or
/// for floats xarray's Zarr v3 form of it (base64 of the value as a little-endian float64).
fn cf_fill_value(metadata: &ArrayMetadata) -> Option<Value> {
    let data_type = metadata.data_type;
    let numeric = data_type.is_float() || data_type.is_integer();
    match metadata.attributes.get("_FillValue")? {
        Value::Number(n) if numeric => Some(Value::Number(n.clone())),
        Value::String(text) if data_type.is_float() => {
            let bytes: [u8; 8] = crate::base64::decode(text)?.try_into().ok()?;
            Some(float_value(f64::from_le_bytes(bytes)))
        }
        _ => None,
    }
}

/// A float as Zarr v2 writes it: a number, or `"NaN"`, `"Infinity"`, `"-Infinity"`.
fn float_value(value: f64) -> Value {
    if value.is_nan() {
        json!("NaN")
    } else if value.is_infinite() {
        json!(if value > 0.0 { "Infinity" } else { "-Infinity" })
    } else {
        json!(value)
    }
}

/// The Zarr v2 `fill_value` of the storage fill value: numbers as numbers, non-finite floats as `"NaN"`, `"Infinity"`,
/// `"-Infinity"`, byte strings base64-encoded, `null` for variable-length strings.
fn fill_value(metadata: &ArrayMetadata) -> Value {
    let data_type = metadata.data_type;
    let bytes = metadata.fill_value.as_bytes();
    match data_type {
        DataType::Float16 | DataType::Float32 | DataType::Float64 => {
            float_value(data_type.values_to_f64(bytes).first().copied().unwrap_or(0.0))
        }
        DataType::FixedBytes(_) | DataType::RawBytes(_) => json!(crate::base64::encode(bytes)),
        DataType::String => Value::Null,
        _ => metadata.fill_value.to_json(data_type),
    }
}

/// `.zmetadata`'s `metadata` map entry names of node `path` (`""` is the root).
pub(crate) fn key(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_string()
    } else {
        format!("{path}/{name}")
    }
}

/// Inserts a node's documents into the consolidated `metadata` map.
pub(crate) fn insert(map: &mut Map<String, Value>, path: &str, name: &str, doc: Value) {
    map.insert(key(path, name), doc);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::CodecChain;
    use crate::grid::{ChunkDim, ChunkGrid};
    use crate::metadata::{ArrayNotes, FillValue};

    fn array(grid: ChunkGrid, codecs: Vec<Codec>, data_type: DataType) -> ArrayMetadata {
        ArrayMetadata {
            data_type,
            chunk_grid: grid,
            fill_value: FillValue::zero(data_type),
            codecs: CodecChain::new(codecs).unwrap(),
            dimension_names: Some(vec!["time".into(), "x".into()]),
            attributes: Attributes::new(),
            notes: ArrayNotes::default(),
        }
    }

    #[test]
    fn regular_arrays_become_v2_documents_and_rectilinear_ones_are_refused() {
        let codecs = vec![
            Codec::Bytes { endian: Some(Endian::Big) },
            Codec::Shuffle { element_size: 4 },
            Codec::Zlib { level: 4 },
        ];
        let grid = ChunkGrid::regular(&[10, 4], &[3, 4]).unwrap();
        let (zarray, zattrs) = array_documents(&array(grid, codecs.clone(), DataType::Float32)).unwrap();
        assert_eq!(zarray["dtype"], ">f4");
        assert_eq!(zarray["chunks"], json!([3, 4]));
        assert_eq!(zarray["filters"], json!([{"id": "shuffle", "elementsize": 4}, {"id": "zlib", "level": 4}]));
        assert_eq!(zattrs["_ARRAY_DIMENSIONS"], json!(["time", "x"]));
        let rectilinear =
            ChunkGrid::new(vec![ChunkDim::from_edges(10, &[4, 6]).unwrap(), ChunkDim::regular(4, 4).unwrap()]);
        let err = array_documents(&array(rectilinear, codecs, DataType::Float32)).unwrap_err();
        assert_eq!(err, EncodeError::Rectilinear);
        assert!(err.to_string().contains("rectilinear"), "{err}");
    }
}
