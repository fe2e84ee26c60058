//! The `struct` data type (zarr-extensions `data-types/struct`): named fields, each of its own data
//! type, packed one after another with no padding, as zarr-python 3 writes and reads it (a NumPy
//! structured dtype, `zarr.dtype.Struct`):
//!
//! ```json
//! {"name": "struct", "configuration": {"fields": [
//!     {"name": "a", "data_type": "int32"},
//!     {"name": "p", "data_type": {"name": "struct", "configuration": {"fields": [...]}}}]}}
//! ```
//!
//! zarr-python 3.4 also reads its legacy spelling `{"name": "structured", "configuration": {"fields":
//! [["a", "int32"], ...]}}`; vzarr reads both and writes `struct`. Every multi-byte field is stored
//! in the byte order of the array's `bytes` codec. The fill value is a JSON object of field name ->
//! the field's own fill value JSON (zarr-python also reads base64 of the little-endian element).
//!
//! Types are interned: [`StructType::intern`] returns one `&'static` instance per distinct layout, so
//! [`DataType`] stays `Copy`. Each distinct layout a process meets is kept for its lifetime (a few
//! hundred bytes each; files hold a handful).

use std::collections::HashSet;
use std::sync::{Mutex, OnceLock};

use serde_json::{json, Value};

use super::{DataType, MetadataError};
use crate::codec::SwapSpan;

/// Deepest nesting of structs vzarr accepts (HDF5 files nest compounds a few levels at most).
pub const MAX_STRUCT_DEPTH: usize = 16;

/// Most fields one struct may have.
pub const MAX_STRUCT_FIELDS: usize = 4096;

/// One named field of a [`StructType`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct StructField {
    /// The field name (not empty; unique within its struct).
    pub name: String,
    /// The field's data type (numbers, fixed-width bytes, raw bytes, complex, or another struct).
    pub data_type: DataType,
}

/// A packed record of named fields: field `i` starts where field `i - 1` ends.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct StructType {
    fields: Vec<StructField>,
    size: usize,
    /// The byte runs that reverse when the byte order changes, nested structs' flattened.
    swaps: Vec<SwapSpan>,
}

static INTERNED: OnceLock<Mutex<HashSet<&'static StructType>>> = OnceLock::new();

impl StructType {
    /// The interned struct of these fields.
    ///
    /// # Errors
    /// [`MetadataError::Invalid`] when there are no fields or more than [`MAX_STRUCT_FIELDS`], a name
    /// is empty or repeated, a field has no fixed size (`string`), the element is larger than 16 MiB
    /// (as `length_bytes` may be: its fill value is allocated when the metadata is read), or the
    /// struct nests deeper than [`MAX_STRUCT_DEPTH`].
    pub fn intern(fields: Vec<StructField>) -> Result<&'static StructType, MetadataError> {
        let invalid = |reason: String| MetadataError::Invalid { field: "data_type", reason };
        if fields.is_empty() || fields.len() > MAX_STRUCT_FIELDS {
            return Err(invalid(format!("a struct needs 1 to {MAX_STRUCT_FIELDS} fields, not {}", fields.len())));
        }
        let mut names = HashSet::new();
        for f in &fields {
            if f.name.is_empty() || !names.insert(f.name.as_str()) {
                return Err(invalid(format!("struct field name {:?} is empty or repeated", f.name)));
            }
            if f.data_type.size() == 0 {
                return Err(invalid(format!("struct field {} has no fixed size ({})", f.name, f.data_type)));
            }
        }
        let size: usize = fields.iter().map(|f| f.data_type.size()).sum();
        if size > super::MAX_LENGTH_BYTES as usize {
            let most = super::MAX_LENGTH_BYTES;
            return Err(invalid(format!("a struct of {size} bytes (at most {most} an element, as for bytes)")));
        }
        let swaps = swap_spans(&fields);
        let candidate = StructType { size, fields, swaps };
        if candidate.depth() > MAX_STRUCT_DEPTH {
            return Err(invalid(format!("structs nested more than {MAX_STRUCT_DEPTH} deep")));
        }
        let table = INTERNED.get_or_init(Mutex::default);
        let mut table = table.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(&known) = table.get(&candidate) {
            return Ok(known);
        }
        let leaked: &'static StructType = Box::leak(Box::new(candidate));
        table.insert(leaked);
        Ok(leaked)
    }

    /// The fields, in storage order.
    pub fn fields(&self) -> &[StructField] {
        &self.fields
    }

    /// Bytes per element: the sum of the fields' sizes.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Each field with its byte offset in the element.
    pub fn offsets(&self) -> impl Iterator<Item = (usize, &StructField)> {
        self.fields.iter().scan(0, |at, f| {
            let offset = *at;
            *at += f.data_type.size();
            Some((offset, f))
        })
    }

    /// Levels of structs: 1 for a struct of plain fields.
    fn depth(&self) -> usize {
        1 + self
            .fields
            .iter()
            .map(|f| match f.data_type {
                DataType::Struct(s) => s.depth(),
                _ => 0,
            })
            .max()
            .unwrap_or(0)
    }

    /// Whether any field (nested ones included) has a byte order (numbers of more than one byte).
    pub fn has_multi_byte_fields(&self) -> bool {
        !self.swaps.is_empty()
    }

    /// The byte runs of an element that reverse when the byte order changes (each multi-byte field,
    /// nested structs' included), in element order: the `bytes` codec's rule for this struct.
    pub fn swap_spans(&'static self) -> &'static [SwapSpan] {
        &self.swaps
    }

    /// The widths in bytes of its `fixed_length_utf32` fields, in field order (none when it has
    /// none: such fields hold the text vzarr stored for HDF5 strings and references).
    pub fn text_widths(&self) -> Vec<u32> {
        self.fields
            .iter()
            .filter_map(|f| match f.data_type {
                DataType::FixedUtf32(n) => Some(n),
                _ => None,
            })
            .collect()
    }

    /// This struct with its `fixed_length_utf32` fields `widths` bytes wide, in field order.
    ///
    /// # Errors
    /// [`MetadataError::Invalid`] when `widths` does not give one width per such field, or a width
    /// is no positive multiple of 4.
    pub fn with_text_widths(&self, widths: &[u32]) -> Result<&'static StructType, MetadataError> {
        let invalid = |reason: String| MetadataError::Invalid { field: "data_type", reason };
        if widths.len() != self.text_widths().len() || widths.iter().any(|&w| w == 0 || !w.is_multiple_of(4)) {
            return Err(invalid(format!("text widths {widths:?} for the struct's {:?}", self.text_widths())));
        }
        let mut widths = widths.iter();
        let fields = self.fields.iter().map(|f| StructField {
            name: f.name.clone(),
            data_type: match f.data_type {
                DataType::FixedUtf32(_) => widths.next().map_or(f.data_type, |&w| DataType::FixedUtf32(w)),
                t => t,
            },
        });
        StructType::intern(fields.collect())
    }

    /// `elements` (whole elements of this struct) as elements of `wider`, a struct of the same fields
    /// whose text fields are at least as wide ([`StructType::with_text_widths`]): each field copied
    /// to its place, text padded with NUL code points (the same bytes in either byte order).
    /// None when `wider` is no such struct.
    pub fn widened(&self, elements: &[u8], wider: &StructType) -> Option<Vec<u8>> {
        let wide = wider.text_widths();
        let same_fields = self.with_text_widths(&wide).is_ok_and(|s| s == wider)
            && self.text_widths().iter().zip(&wide).all(|(narrow, wide)| narrow <= wide);
        if !same_fields || self.size == 0 || !elements.len().is_multiple_of(self.size) {
            return None;
        }
        let places: Vec<(usize, usize, usize)> =
            self.offsets().zip(wider.offsets()).map(|((at, f), (to, _))| (at, to, f.data_type.size())).collect();
        let mut out = vec![0u8; elements.len() / self.size * wider.size];
        for (element, wide) in elements.chunks_exact(self.size).zip(out.chunks_exact_mut(wider.size)) {
            for &(at, to, size) in &places {
                wide[to..to + size].copy_from_slice(&element[at..at + size]);
            }
        }
        Some(out)
    }

    /// The `data_type` JSON.
    pub fn to_json(&self) -> Value {
        let fields: Vec<Value> =
            self.fields.iter().map(|f| json!({"name": f.name, "data_type": f.data_type.to_json()})).collect();
        json!({"name": "struct", "configuration": {"fields": fields}})
    }

    /// Parses `struct` (or legacy `structured`) data type JSON, `depth` levels below the array's.
    pub(super) fn from_json(value: &Value, depth: usize) -> Result<&'static StructType, MetadataError> {
        let invalid = |reason: String| MetadataError::Invalid { field: "data_type", reason };
        if depth >= MAX_STRUCT_DEPTH {
            return Err(invalid(format!("structs nested more than {MAX_STRUCT_DEPTH} deep")));
        }
        let listed = value.pointer("/configuration/fields").and_then(Value::as_array);
        let listed = listed.ok_or_else(|| invalid(format!("{value}: a struct needs configuration.fields")))?;
        if listed.len() > MAX_STRUCT_FIELDS {
            return Err(invalid(format!("a struct of {} fields", listed.len())));
        }
        let mut fields = Vec::with_capacity(listed.len());
        for field in listed {
            let (name, data_type) = match field {
                Value::Object(o) => (o.get("name"), o.get("data_type")),
                Value::Array(pair) if pair.len() == 2 => (pair.first(), pair.get(1)),
                _ => (None, None),
            };
            let (Some(Value::String(name)), Some(data_type)) = (name, data_type) else {
                return Err(invalid(format!("struct field {field} needs a name and a data_type")));
            };
            let data_type = DataType::from_json_at(data_type, depth + 1)?;
            fields.push(StructField { name: name.clone(), data_type });
        }
        StructType::intern(fields)
    }

    /// The NumPy dtype description of native-order elements (`[('a', '<i4'), ('b', '|S3')]`), as an
    /// `.npy` header writes it.
    pub fn numpy_descr(&self) -> String {
        let fields: Vec<String> = self
            .fields
            .iter()
            .map(|f| {
                let name = f.name.replace('\\', "\\\\").replace('\'', "\\'");
                match f.data_type {
                    DataType::Struct(s) => format!("('{name}', {})", s.numpy_descr()),
                    t => format!("('{name}', '{}')", t.numpy_descr()),
                }
            })
            .collect();
        format!("[{}]", fields.join(", "))
    }
}

/// The runs of `fields` (packed in order) that reverse when the byte order changes.
fn swap_spans(fields: &[StructField]) -> Vec<SwapSpan> {
    let mut spans = Vec::new();
    let mut offset = 0;
    for field in fields {
        match field.data_type {
            DataType::Struct(inner) => {
                spans.extend(inner.swaps.iter().map(|span| SwapSpan { offset: offset + span.offset, ..*span }))
            }
            t if t.swap_unit() > 1 => spans.push(SwapSpan { offset, len: t.size(), unit: t.swap_unit() }),
            _ => {}
        }
        offset += field.data_type.size();
    }
    spans
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(name: &str, data_type: DataType) -> StructField {
        StructField { name: name.into(), data_type }
    }

    #[test]
    fn interned_structs_are_one_instance_and_round_trip() {
        let inner = StructType::intern(vec![field("x", DataType::UInt8), field("y", DataType::Float64)]).unwrap();
        let fields = vec![field("a", DataType::Int32), field("p", DataType::Struct(inner))];
        let outer = StructType::intern(fields.clone()).unwrap();
        assert!(std::ptr::eq(outer, StructType::intern(fields).unwrap()));
        assert_eq!(outer.size(), 13);
        assert_eq!(outer.offsets().map(|(o, _)| o).collect::<Vec<_>>(), vec![0, 4]);
        let parsed = DataType::from_json(&DataType::Struct(outer).to_json()).unwrap();
        assert_eq!(parsed, DataType::Struct(outer));
        assert_eq!(outer.numpy_descr(), "[('a', '<i4'), ('p', [('x', '|u1'), ('y', '<f8')])]");
    }

    #[test]
    fn struct_fields_swap_each_by_its_own_unit() {
        let inner = StructType::intern(vec![field("c", DataType::Complex64), field("t", DataType::FixedBytes(2))]);
        let s = StructType::intern(vec![
            field("a", DataType::Int16),
            field("b", DataType::UInt8),
            field("p", DataType::Struct(inner.unwrap())),
        ])
        .unwrap();
        let swap = DataType::Struct(s).byte_swap();
        let mut element: Vec<u8> = (0..13).collect();
        swap.apply(&mut element);
        assert_eq!(element, [1, 0, 2, 6, 5, 4, 3, 10, 9, 8, 7, 11, 12]);
        assert_eq!((swap.granule(), swap.reorders()), (13, true));
    }

    #[test]
    fn legacy_structured_spelling_is_read() {
        let legacy = json!({"name": "structured", "configuration": {"fields": [["a", "int16"], ["b", "uint8"]]}});
        let DataType::Struct(s) = DataType::from_json(&legacy).unwrap() else { panic!("not a struct") };
        assert_eq!((s.size(), s.fields()[1].name.as_str()), (3, "b"));
    }

    #[test]
    fn bad_structs_are_refused() {
        assert!(StructType::intern(vec![]).is_err());
        assert!(StructType::intern(vec![field("a", DataType::Int8), field("a", DataType::Int8)]).is_err());
        assert!(StructType::intern(vec![field("", DataType::Int8)]).is_err());
        assert!(StructType::intern(vec![field("s", DataType::String)]).is_err());
        let mut deep = json!("int8");
        for _ in 0..=MAX_STRUCT_DEPTH {
            deep = json!({"name": "struct", "configuration": {"fields": [{"name": "f", "data_type": deep}]}});
        }
        assert!(DataType::from_json(&deep).is_err());
    }
}
