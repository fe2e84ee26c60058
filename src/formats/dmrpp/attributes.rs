//! Node attributes as DAP4 `<Attribute name type><Value>...</Value></Attribute>` elements, and XML
//! text escaping.
//!
//! Types: strings are `String`; numbers take the source's numeric type where vzarr noted it
//! (`ArrayNotes::types`), else `Int64` for integers and `Float64` for the rest; a list is one
//! `<Value>` per element. Attributes withheld from xarray (`ArrayNotes::withheld`) are the file's too
//! and are written. Values that are neither (nested objects, mixed lists) are left out.

use std::fmt::Write as _;

use serde_json::Value;

use super::variable::dap_type;
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

/// The attribute elements of a node (groups pass default notes).
pub(super) fn attributes_xml(attributes: &Attributes, notes: &ArrayNotes, indent: &str) -> String {
    let mut out = String::new();
    for (name, value) in attributes.iter().chain(notes.withheld.iter()) {
        let Some((dap, values)) = typed_values(value, notes.types.get(name).copied()) else { continue };
        writeln!(out, "{indent}<Attribute name=\"{}\" type=\"{dap}\">", escape(name)).ok();
        for value in values {
            writeln!(out, "{indent}    <Value>{}</Value>", escape(&value)).ok();
        }
        writeln!(out, "{indent}</Attribute>").ok();
    }
    out
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
