//! kerchunk documents with Zarr v2 keys, as Python kerchunk writes them (`SingleHdf5ToZarr`,
//! `NetCDF3ToZarr`, `MultiZarrToZarr`): `.zgroup`, `.zarray` and `.zattrs` per node, chunk keys
//! `<array>/i.j.k`. They are translated key by key into the Zarr v3 document vzarr writes: each
//! node's `zarr.json` (the `.zarray` fields as v3 metadata, `_ARRAY_DIMENSIONS` as dimension names),
//! each chunk key as `<array>/c/i/j/k`, the references themselves unchanged.
//!
//! What a Zarr v2 array can say that vzarr cannot read is refused naming the key: Fortran order,
//! filters other than `shuffle`, compressors other than zlib, gzip and zstd, and dtypes other than
//! booleans, numbers, fixed-width bytes (`S`, `V`) and `vlen-utf8` strings.

use serde_json::{json, Map, Value};

use crate::codec::BloscShuffle;
use crate::formats::kerchunk::read::parse::{KeyError, RawRef};
use crate::metadata::{DataType, FillValue};

/// Whether the metadata keys `meta` are Zarr v2's (a `.zgroup` or `.zarray` anywhere).
pub(crate) fn is_v2(meta: &[(String, Value)]) -> bool {
    meta.iter().any(|(k, _)| is_meta(k, ".zgroup") || is_meta(k, ".zarray"))
}

/// Whether `key` is the v2 metadata file `name` of some node.
fn is_meta(key: &str, name: &str) -> bool {
    key == name || key.ends_with(&format!("/{name}"))
}

/// The node path of a v2 metadata key (`.zgroup` -> `""`, `grp/tas/.zarray` -> `grp/tas`).
fn node_of<'k>(key: &'k str, name: &str) -> Option<&'k str> {
    if key == name {
        return Some("");
    }
    key.strip_suffix(name)?.strip_suffix('/')
}

/// A metadata value: inline JSON text, or (as some writers leave it) a JSON object.
fn json_of(key: &str, value: &Value) -> Result<Value, KeyError> {
    match value {
        Value::String(text) => {
            crate::metadata::from_text(text.as_bytes()).map_err(|e| (key.to_string(), format!("not JSON: {e}")))
        }
        Value::Object(_) => Ok(value.clone()),
        _ => Err((key.to_string(), "a metadata document that is not JSON text".into())),
    }
}

/// The Zarr v3 metadata (`zarr.json` documents, as JSON values) of the v2 metadata keys `meta`; the chunk keys `chunks` renamed to v3's,
/// their references unchanged.
///
/// # Errors
/// The key and what is wrong: malformed metadata, or an array vzarr cannot read.
pub(crate) fn to_v3(
    meta: Vec<(String, Value)>,
    chunks: &mut [(Box<str>, RawRef)],
) -> Result<Vec<(String, Value)>, KeyError> {
    // Each `.zattrs` is taken out of `refs` as its node is made, and each node's document stays a
    // JSON value: no copy of a long attribute is kept beside another.
    let mut refs: Map<String, Value> = meta.into_iter().collect();
    let keys: Vec<String> = refs.keys().cloned().collect();
    let mut out = Map::new();
    let mut arrays: Vec<(String, char, usize)> = Vec::new();
    for key in &keys {
        if let Some(path) = node_of(key, ".zgroup") {
            let attributes = take_attributes(&mut refs, path)?;
            let doc = json!({"zarr_format": 3, "node_type": "group", "attributes": attributes});
            out.insert(crate::metadata::node_key(path), doc);
        } else if let Some(path) = node_of(key, ".zarray") {
            let zarray = json_of(key, &refs[key.as_str()])?;
            let mut attributes = take_attributes(&mut refs, path)?;
            let (doc, separator) =
                array_doc(&zarray, &mut attributes).map_err(|reason| (key.clone(), reason.to_string()))?;
            let rank = doc["shape"].as_array().map_or(0, Vec::len);
            out.insert(crate::metadata::node_key(path), doc);
            arrays.push((path.to_string(), separator, rank));
        }
    }
    if !refs.contains_key(".zgroup") && !refs.contains_key(".zarray") {
        let doc = json!({"zarr_format": 3, "node_type": "group", "attributes": take_attributes(&mut refs, "")?});
        out.insert("zarr.json".into(), doc);
    }
    // Longest array paths first, so a chunk key is matched to the deepest array holding it.
    arrays.sort_by_key(|(path, _, _)| std::cmp::Reverse(path.len()));
    for (key, _) in chunks.iter_mut() {
        let chunk = arrays.iter().find_map(|(path, separator, rank)| {
            let rest = if path.is_empty() { Some(&**key) } else { key.strip_prefix(&format!("{path}/")) };
            rest.map(|rest| (path, rest, *separator, *rank))
        });
        let Some((path, rest, separator, rank)) = chunk else {
            return Err((key.to_string(), "not a chunk of any array".into()));
        };
        let coords: Option<Vec<u64>> = rest.split(separator).map(|c| c.parse().ok()).collect();
        let coords = match coords {
            // The only chunk of a 0-d array is `0`.
            Some(c) if rank == 0 && c == [0] => Vec::new(),
            Some(c) if c.len() == rank => c,
            _ => {
                let reason =
                    format!("not a chunk key of a {rank}-d Zarr v2 array (indices separated by {separator:?})");
                return Err((key.to_string(), reason));
            }
        };
        *key = crate::metadata::chunk_key(path, &coords).into_boxed_str();
    }
    Ok(out.into_iter().collect())
}

/// Why a `.zarray` is not read ([`array_doc`]): what of it vzarr does not read or finds malformed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ZarrayError {
    /// A field the metadata must have.
    #[error("no {name:?} field")]
    NoField {
        /// The field.
        name: String,
    },
    /// A field that must be a list.
    #[error("{name:?} is not a list")]
    NotList {
        /// The field.
        name: String,
    },
    /// A list that must hold integers.
    #[error("{name:?} holds a non-integer")]
    NonInteger {
        /// The field.
        name: String,
    },
    /// Not Zarr v2 metadata.
    #[error("not Zarr v2 array metadata (zarr_format is not 2)")]
    NotV2,
    /// Chunks and shape of different ranks.
    #[error("chunks {chunks:?} and shape {shape:?} differ in rank")]
    Rank {
        /// The chunk shape.
        chunks: Vec<u64>,
        /// The shape.
        shape: Vec<u64>,
    },
    /// An order other than C.
    #[error("order {order:?}: only C order is read")]
    Order {
        /// The order.
        order: String,
    },
    /// A dimension separator other than `.` or `/`.
    #[error("dimension separator {separator:?}")]
    Separator {
        /// The separator.
        separator: String,
    },
    /// Filters that are not a list.
    #[error("\"filters\" is not a list")]
    FiltersNotList,
    /// Variable-length strings with more than their filter.
    #[error("vlen-utf8 strings with other filters or a compressor")]
    Strings,
    /// An `_ARRAY_DIMENSIONS` attribute that does not name each dimension.
    #[error("_ARRAY_DIMENSIONS is not one name per dimension")]
    DimensionNames,
    /// A structured (list) dtype.
    #[error("dtype {dtype}: structured dtypes are not read")]
    Structured {
        /// The dtype.
        dtype: Value,
    },
    /// A dtype string vzarr does not read.
    #[error("dtype {dtype:?} is not read")]
    DataType {
        /// The dtype.
        dtype: String,
    },
    /// A filter or compressor vzarr does not read.
    #[error("{role} {spec}: only shuffle, zlib, gzip, zstd, fletcher32 and blosc are read")]
    Codec {
        /// `filter` or `compressor`.
        role: String,
        /// Its configuration.
        spec: Value,
    },
    /// A blosc shuffle numcodecs does not define.
    #[error("{role} {spec}: blosc shuffle {code} is not 0, 1, 2 or -1")]
    BloscShuffle {
        /// `filter` or `compressor`.
        role: String,
        /// Its configuration.
        spec: Value,
        /// The shuffle.
        code: i64,
    },
}

/// The `.zattrs` of node `path`, taken out of `refs` (an empty object when it has none).
fn take_attributes(refs: &mut Map<String, Value>, path: &str) -> Result<Map<String, Value>, KeyError> {
    let key = if path.is_empty() { ".zattrs".to_string() } else { format!("{path}/.zattrs") };
    match refs.remove(&key) {
        None => Ok(Map::new()),
        Some(Value::Object(map)) => Ok(map),
        Some(value) => match json_of(&key, &value)? {
            Value::Object(map) => Ok(map),
            _ => Err((key, "attributes that are not a JSON object".into())),
        },
    }
}

/// The v3 `zarr.json` of a `.zarray` (its `_ARRAY_DIMENSIONS` attribute taken out of `attributes` as
/// the dimension names), and the array's chunk key separator.
fn array_doc(zarray: &Value, attributes: &mut Map<String, Value>) -> Result<(Value, char), ZarrayError> {
    let field = |name: &str| zarray.get(name).ok_or_else(|| ZarrayError::NoField { name: name.into() });
    let dims = |name: &str| -> Result<Vec<u64>, ZarrayError> {
        let list = field(name)?.as_array().ok_or_else(|| ZarrayError::NotList { name: name.into() })?;
        list.iter().map(|v| v.as_u64().ok_or_else(|| ZarrayError::NonInteger { name: name.into() })).collect()
    };
    if zarray.get("zarr_format").and_then(Value::as_u64) != Some(2) {
        return Err(ZarrayError::NotV2);
    }
    let shape = dims("shape")?;
    let chunks = dims("chunks")?;
    if chunks.len() != shape.len() {
        return Err(ZarrayError::Rank { chunks, shape });
    }
    if let Some(order) = zarray.get("order").and_then(Value::as_str).filter(|o| *o != "C") {
        return Err(ZarrayError::Order { order: order.into() });
    }
    let separator = match zarray.get("dimension_separator").and_then(Value::as_str) {
        None | Some(".") => '.',
        Some("/") => '/',
        Some(other) => return Err(ZarrayError::Separator { separator: other.into() }),
    };
    let filters: Vec<&Value> = match zarray.get("filters") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(list)) => list.iter().collect(),
        Some(_) => return Err(ZarrayError::FiltersNotList),
    };
    let compressor = zarray.get("compressor").filter(|c| !c.is_null());
    let (data_type, endian) = data_type(field("dtype")?, &filters)?;
    let mut codecs = Vec::new();
    if data_type == DataType::String {
        if compressor.is_some() || filters.len() != 1 {
            return Err(ZarrayError::Strings);
        }
        codecs.push(json!({"name": "vlen-utf8"}));
    } else {
        codecs.push(json!({"name": "bytes", "configuration": {"endian": endian}}));
        for filter in &filters {
            codecs.push(codec(filter, "filter")?);
        }
        if let Some(compressor) = compressor {
            codecs.push(codec(compressor, "compressor")?);
        }
    }
    let fill_value = match zarray.get("fill_value") {
        None | Some(Value::Null) => FillValue::zero(data_type).to_json(data_type),
        Some(value) => value.clone(),
    };
    let dimension_names = match attributes.remove("_ARRAY_DIMENSIONS") {
        Some(Value::Array(names)) if names.len() == shape.len() && names.iter().all(Value::is_string) => {
            Some(Value::Array(names))
        }
        Some(_) => return Err(ZarrayError::DimensionNames),
        None => None,
    };
    let mut doc = json!({
        "zarr_format": 3,
        "node_type": "array",
        "shape": shape,
        "data_type": data_type.to_json(),
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": chunks}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": fill_value,
        "codecs": codecs,
        "attributes": attributes,
    });
    if let Some(names) = dimension_names {
        doc["dimension_names"] = names;
    }
    Ok((doc, separator))
}

/// The data type and byte order of a NumPy type string (`<f4`, `>i2`, `|u1`, `|S8`, `|V4`, `|b1`, `<U5`),
/// or `string` for an object dtype with the `vlen-utf8` filter.
fn data_type(dtype: &Value, filters: &[&Value]) -> Result<(DataType, &'static str), ZarrayError> {
    let Some(text) = dtype.as_str() else {
        return Err(ZarrayError::Structured { dtype: dtype.clone() });
    };
    let unsupported = || ZarrayError::DataType { dtype: text.into() };
    if text == "|O" || text == "O" {
        let vlen = filters.iter().any(|f| f.get("id").and_then(Value::as_str) == Some("vlen-utf8"));
        return if vlen { Ok((DataType::String, "little")) } else { Err(unsupported()) };
    }
    let mut chars = text.chars();
    let order = chars.next().ok_or_else(unsupported)?;
    let endian = match order {
        '<' | '|' | '=' => "little",
        '>' => "big",
        _ => return Err(unsupported()),
    };
    let kind = chars.next().ok_or_else(unsupported)?;
    let size: u32 = chars.as_str().parse().map_err(|_| unsupported())?;
    let data_type = match (kind, size) {
        ('b', 1) => DataType::Bool,
        ('i', 1) => DataType::Int8,
        ('i', 2) => DataType::Int16,
        ('i', 4) => DataType::Int32,
        ('i', 8) => DataType::Int64,
        ('u', 1) => DataType::UInt8,
        ('u', 2) => DataType::UInt16,
        ('u', 4) => DataType::UInt32,
        ('u', 8) => DataType::UInt64,
        ('f', 2) => DataType::Float16,
        ('f', 4) => DataType::Float32,
        ('f', 8) => DataType::Float64,
        ('c', 8) => DataType::Complex64,
        ('c', 16) => DataType::Complex128,
        ('S', n) if n > 0 => DataType::FixedBytes(n),
        ('V', n) if n > 0 => DataType::RawBytes(n),
        ('U', n) if n > 0 && n <= crate::metadata::MAX_LENGTH_BYTES / 4 => DataType::FixedUtf32(4 * n),
        _ => return Err(unsupported()),
    };
    Ok((data_type, endian))
}

/// The v3 codec of a v2 filter or compressor (`{"id": ..., ...}`).
fn codec(spec: &Value, role: &str) -> Result<Value, ZarrayError> {
    let id = spec.get("id").and_then(Value::as_str).unwrap_or("");
    let int = |name: &str, default: i64| spec.get(name).and_then(Value::as_i64).unwrap_or(default);
    Ok(match id {
        "shuffle" => json!({"name": "numcodecs.shuffle", "configuration": {"elementsize": int("elementsize", 4)}}),
        "zlib" => json!({"name": "numcodecs.zlib", "configuration": {"level": int("level", 1)}}),
        "gzip" => json!({"name": "gzip", "configuration": {"level": int("level", 1)}}),
        "zstd" => json!({"name": "zstd", "configuration": {"level": int("level", 0), "checksum": false}}),
        // HDF5's checksum, as vzarr's kerchunk Parquet writer and kerchunk write it.
        "fletcher32" => json!({"name": "numcodecs.fletcher32", "configuration": {}}),
        "blosc" => blosc(spec, role)?,
        _ => return Err(ZarrayError::Codec { role: role.into(), spec: spec.clone() }),
    })
}

/// The v3 `blosc` codec of numcodecs' `{"id": "blosc", "cname", "clevel", "shuffle", "blocksize"}`.
/// numcodecs' shuffle is a number (0 none, 1 byte, 2 bit, -1 automatic: byte or bit by the element
/// size, which only steers encoding); v2 records no `typesize`, which decoding does not need (each
/// Blosc frame's header holds it).
fn blosc(spec: &Value, role: &str) -> Result<Value, ZarrayError> {
    let cname = spec.get("cname").and_then(Value::as_str).unwrap_or("lz4");
    let clevel = spec.get("clevel").and_then(Value::as_i64).unwrap_or(5);
    let code = spec.get("shuffle").and_then(Value::as_i64).unwrap_or(1);
    let shuffle = match code {
        -1 => Some(BloscShuffle::Shuffle),
        code => u32::try_from(code).ok().and_then(BloscShuffle::from_code),
    };
    let Some(shuffle) = shuffle.map(BloscShuffle::as_str) else {
        return Err(ZarrayError::BloscShuffle { role: role.into(), spec: spec.clone(), code });
    };
    let blocksize = spec.get("blocksize").and_then(Value::as_u64).unwrap_or(0);
    let configuration = json!({"cname": cname, "clevel": clevel, "shuffle": shuffle, "blocksize": blocksize});
    Ok(json!({"name": "blosc", "configuration": configuration}))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::Codec;
    use crate::metadata::ArrayMetadata;

    /// Chunk keys and their references.
    type Chunks = Vec<(Box<str>, RawRef)>;

    /// The v3 metadata (by key) and chunk keys of the `refs` of a v2 document.
    fn translated(refs: Value) -> Result<(Map<String, Value>, Chunks), KeyError> {
        let doc = serde_json::to_vec(&json!({"version": 1, "refs": refs})).unwrap();
        let mut parsed = crate::formats::kerchunk::read::parse::parse(&doc).unwrap();
        assert!(is_v2(&parsed.meta) || !parsed.meta.iter().any(|(k, _)| k.ends_with(".zarray")));
        let meta = to_v3(parsed.meta, &mut parsed.chunks)?;
        Ok((meta.into_iter().collect(), parsed.chunks))
    }

    #[test]
    fn v2_arrays_become_v3_metadata_and_keys() {
        let zarray = json!({"zarr_format": 2, "shape": [4, 6], "chunks": [2, 3], "dtype": ">i2",
            "compressor": {"id": "zlib", "level": 4}, "filters": [{"id": "shuffle", "elementsize": 2}],
            "fill_value": null, "order": "C"});
        let (v3, chunks) = translated(json!({
            ".zgroup": "{\"zarr_format\": 2}",
            ".zattrs": "{\"title\": \"t\"}",
            "v/.zarray": zarray.to_string(),
            "v/.zattrs": "{\"_ARRAY_DIMENSIONS\": [\"y\", \"x\"], \"units\": \"K\"}",
            "v/1.0": ["file:///a.nc", 10, 20],
            "v/0.1": "base64:AAAA",
        }))
        .unwrap();
        let chunk = |key: &str| chunks.iter().find(|(k, _)| &**k == key).map(|(_, r)| r.clone());
        assert_eq!(chunk("v/c/1/0"), Some(RawRef::Range { url: 0, offset: 10, length: 20 }));
        assert_eq!(chunk("v/c/0/1"), Some(RawRef::Inline(bytes::Bytes::from_static(&[0, 0, 0]))));
        let doc = v3["v/zarr.json"].clone();
        let meta = ArrayMetadata::from_json(&doc).unwrap();
        assert_eq!(meta.data_type, DataType::Int16);
        assert_eq!(meta.dimension_names, Some(vec!["y".to_string(), "x".to_string()]));
        assert_eq!(doc["attributes"], json!({"units": "K"}));
        assert_eq!(doc["codecs"][0], json!({"name": "bytes", "configuration": {"endian": "big"}}));
        assert_eq!(doc["codecs"][1]["name"], "numcodecs.shuffle");
        assert_eq!(doc["codecs"][2], json!({"name": "numcodecs.zlib", "configuration": {"level": 4}}));
        let root = v3["zarr.json"].clone();
        assert_eq!(root["attributes"]["title"], "t");
    }

    #[test]
    fn fletcher32_and_blosc_become_the_codecs_vzarr_decodes() {
        let zarray = json!({"zarr_format": 2, "shape": [4], "chunks": [2], "dtype": "<i4",
            "compressor": {"id": "blosc", "cname": "zstd", "clevel": 3, "shuffle": 2, "blocksize": 0},
            "filters": [{"id": "fletcher32"}], "fill_value": 0, "order": "C"});
        let (v3, _) = translated(json!({"v/.zarray": zarray.to_string()})).unwrap();
        let meta = ArrayMetadata::from_json(&v3["v/zarr.json"]).unwrap();
        let names: Vec<&str> = meta.codecs.codecs().iter().map(Codec::name).collect();
        assert_eq!(names, ["bytes", "numcodecs.fletcher32", "blosc"]);
        let blosc = json!({"name": "blosc", "configuration":
            {"cname": "zstd", "clevel": 3, "shuffle": "bitshuffle", "blocksize": 0}});
        assert_eq!(v3["v/zarr.json"]["codecs"][2], blosc);
        let bad = zarray_with_shuffle(&zarray, 7);
        assert!(translated(json!({"v/.zarray": bad.to_string()})).unwrap_err().1.contains("blosc shuffle 7"));
    }

    fn zarray_with_shuffle(zarray: &Value, shuffle: i64) -> Value {
        let mut zarray = zarray.clone();
        zarray["compressor"]["shuffle"] = json!(shuffle);
        zarray
    }

    #[test]
    fn what_vzarr_cannot_read_is_refused_naming_the_key() {
        let array = |extra: Value| {
            let mut zarray = json!({"zarr_format": 2, "shape": [4], "chunks": [2], "dtype": "<f8",
                "compressor": null, "filters": null, "fill_value": "NaN", "order": "C"});
            zarray.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
            translated(json!({"a/.zarray": zarray.to_string()}))
                .map(|_| ())
                .map_err(|(key, reason)| format!("{key}: {reason}"))
        };
        assert!(array(json!({})).is_ok());
        assert!(array(json!({"order": "F"})).unwrap_err().contains("a/.zarray: order"));
        assert!(array(json!({"dtype": "<M8[ns]"})).unwrap_err().contains("dtype"));
        assert!(array(json!({"compressor": {"id": "lz4"}})).unwrap_err().contains("compressor"));
        assert!(array(json!({"filters": [{"id": "delta", "dtype": "<f8"}]})).unwrap_err().contains("filter"));
        assert!(translated(json!({".zgroup": "{}", "b/0": "x"})).is_err());
    }
}
