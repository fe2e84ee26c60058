//! Node attributes as DAP4 `<Attribute name type><Value>...</Value></Attribute>` elements, and XML
//! text escaping.
//!
//! Types: strings are `String`; numbers take the source's numeric type where vzarr noted it
//! (`ArrayNotes::types`), else `Int64` for integers and `Float64` for the rest; a list is one
//! `<Value>` per element. Attributes withheld from xarray (`ArrayNotes::withheld`) are the file's too
//! and are written. Values that are neither (nested objects, mixed lists) are left out.
//!
//! `_FillValue` is written as BES writes it, in the variable's own DAP4 type with its value: the
//! scan keeps a float array's `_FillValue` as xarray's Zarr v3 encoding (the base64 of a
//! little-endian f64, `metadata::encode_fill_value_attribute`), which is decoded back here (a DMR++
//! reader such as VirtualiZarr's `DMRPPParser` refuses a `String` fill value of a numeric variable).

use std::fmt::Write as _;

use serde_json::Value;

use super::types::dap_type;
use crate::metadata::{attribute_f64, ArrayNotes, Attributes, DataType};

/// `text` with `&`, `<`, `>`, `"` and `'` escaped, and control characters as character references.
pub(super) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\n' | '\t' | '\r' => {
                write!(out, "&#{};", c as u32).ok();
            }
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

/// The attribute elements of a node (groups pass default notes and no data type).
pub(super) fn attributes_xml(
    attributes: &Attributes,
    notes: &ArrayNotes,
    data_type: Option<DataType>,
    indent: &str,
) -> String {
    let mut out = String::new();
    for (name, value) in attributes.iter().chain(notes.withheld.iter()) {
        let typed = match data_type.filter(|_| name == "_FillValue") {
            Some(data_type) => fill_value_attribute(value, data_type),
            None => typed_values(value, notes.types.get(name).copied()),
        };
        let Some((dap, values)) = typed else { continue };
        writeln!(out, "{indent}<Attribute name=\"{}\" type=\"{dap}\">", escape(name)).ok();
        for value in values {
            writeln!(out, "{indent}    <Value>{}</Value>", escape(&value)).ok();
        }
        writeln!(out, "{indent}</Attribute>").ok();
    }
    out
}

/// A variable's `_FillValue` in the variable's DAP4 type: decoded from xarray's base64 form for
/// floats, as given for integers; `None` (left out) when the variable's type has no DAP4 atomic
/// form or the value does not decode.
fn fill_value_attribute(value: &Value, data_type: DataType) -> Option<(&'static str, Vec<String>)> {
    let dap = dap_type(data_type)?;
    let number = match value {
        Value::String(text) if data_type.is_float() => {
            let bytes: [u8; 8] = crate::base64::decode(text)?.try_into().ok()?;
            f64::from_le_bytes(bytes)
        }
        other => attribute_f64(other)?,
    };
    let text = if number.is_nan() {
        "nan".to_string()
    } else if number.is_infinite() {
        if number > 0.0 { "inf" } else { "-inf" }.to_string()
    } else {
        match (data_type, value) {
            (DataType::Float32, _) => (number as f32).to_string(),
            (DataType::Float64, _) => number.to_string(),
            (_, Value::Number(n)) => n.to_string(),
            _ => format!("{}", number as i64),
        }
    };
    Some((dap, vec![text]))
}

/// The DAP4 type and the texts of an attribute's values.
fn typed_values(value: &Value, noted: Option<DataType>) -> Option<(&'static str, Vec<String>)> {
    let items: Vec<&Value> = match value {
        Value::Array(list) if !list.is_empty() => list.iter().collect(),
        Value::Array(_) => return None,
        other => vec![other],
    };
    if items.iter().all(|v| v.is_string()) {
        return Some(("String", items.iter().filter_map(|v| v.as_str()).map(str::to_string).collect()));
    }
    let numbers: Vec<f64> = items.iter().map(|v| attribute_f64(v)).collect::<Option<_>>()?;
    let integers = items.iter().all(|v| v.is_i64() || v.is_u64());
    let dap = match noted.and_then(dap_type) {
        Some(dap) => dap,
        None if integers => "Int64",
        None => "Float64",
    };
    let texts = items
        .iter()
        .zip(&numbers)
        .map(|(v, x)| match v {
            Value::Number(n) => n.to_string(),
            _ if x.is_nan() => "nan".into(),
            _ if *x > 0.0 => "inf".into(),
            _ => "-inf".into(),
        })
        .collect();
    Some((dap, texts))
}
