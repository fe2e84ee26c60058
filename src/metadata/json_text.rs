//! The text of `zarr.json` documents, with non-finite floating-point attribute values as the bare
//! tokens `NaN`, `Infinity` and `-Infinity`, the way zarr-python 3 writes and reads them (its
//! `json.dumps(..., allow_nan=True)` / `json.loads`), so that xarray gives the floats `nan`, `inf`
//! and `-inf` a netCDF file holds, not strings.
//!
//! Strict JSON has no such tokens and `serde_json::Value` cannot hold a non-finite number, so in
//! memory such a value is a marker object `{"$vzarr.non_finite": "NaN"}` ([`non_finite`]): an object
//! is never a netCDF attribute value, so the marker cannot be confused with the text `"NaN"`.
//! [`to_text`] writes markers as bare tokens (everything else exactly as `serde_json`'s pretty
//! printer does) and [`from_text`] reads bare tokens back into markers. Strict JSON parsers (zarrs,
//! `serde_json`) refuse a document that holds such a token; xarray, zarr-python and fsspec read it.
//! Fill values are not concerned: `fill_value` uses the spec's strings `"NaN"`, `"Infinity"`.

use serde_json::{Map, Value};

/// The key of the marker object standing for a non-finite float.
pub(super) const MARKER: &str = "$vzarr.non_finite";

/// The JSON value of a floating-point attribute element: a number when finite, else the marker of
/// `NaN`, `Infinity` or `-Infinity`.
pub fn float_attribute(v: f64) -> Value {
    if v.is_nan() {
        non_finite("NaN")
    } else if v.is_infinite() {
        non_finite(if v > 0.0 { "Infinity" } else { "-Infinity" })
    } else {
        Value::from(v)
    }
}

fn non_finite(token: &str) -> Value {
    let mut map = Map::new();
    map.insert(MARKER.into(), Value::from(token));
    Value::Object(map)
}

/// The float a value stands for: a JSON number or a non-finite marker (None otherwise).
pub fn attribute_f64(value: &Value) -> Option<f64> {
    match non_finite_token(value) {
        Some("NaN") => Some(f64::NAN),
        Some("Infinity") => Some(f64::INFINITY),
        Some("-Infinity") => Some(f64::NEG_INFINITY),
        Some(_) => None,
        None => value.as_f64(),
    }
}

fn non_finite_token(value: &Value) -> Option<&str> {
    let map = value.as_object().filter(|m| m.len() == 1)?;
    map.get(MARKER)?.as_str().filter(|t| matches!(*t, "NaN" | "Infinity" | "-Infinity"))
}

/// A document as pretty-printed text (two-space indents, as `serde_json::to_string_pretty`), with
/// non-finite markers as bare tokens. Leaves are written straight into the text (no copy of a long
/// string attribute is made on the way).
pub fn to_text(doc: &Value) -> String {
    let mut out = Vec::new();
    write_value(&mut out, doc, 0);
    // Only `serde_json`'s output and ASCII punctuation were written: always UTF-8.
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

fn write_value(out: &mut Vec<u8>, value: &Value, depth: usize) {
    if let Some(token) = non_finite_token(value) {
        out.extend_from_slice(token.as_bytes());
        return;
    }
    let indent = |out: &mut Vec<u8>, depth: usize| out.extend(std::iter::repeat_n(b"  ", depth).flatten());
    match value {
        Value::Array(items) if !items.is_empty() => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                out.extend_from_slice(if i == 0 { b"\n" } else { b",\n" });
                indent(out, depth + 1);
                write_value(out, item, depth + 1);
            }
            out.push(b'\n');
            indent(out, depth);
            out.push(b']');
        }
        Value::Object(map) if !map.is_empty() => {
            out.push(b'{');
            for (i, (key, item)) in map.iter().enumerate() {
                out.extend_from_slice(if i == 0 { b"\n" } else { b",\n" });
                indent(out, depth + 1);
                write_leaf(out, key);
                out.extend_from_slice(b": ");
                write_value(out, item, depth + 1);
            }
            out.push(b'\n');
            indent(out, depth);
            out.push(b'}');
        }
        leaf => write_leaf(out, leaf),
    }
}

/// Appends the compact JSON of `leaf` (writing into a `Vec` cannot fail).
fn write_leaf<T: serde::Serialize + ?Sized>(out: &mut Vec<u8>, leaf: &T) {
    let _ = serde_json::to_writer(out, leaf);
}

/// Parses a document, accepting the bare tokens `NaN`, `Infinity` and `-Infinity` (outside strings)
/// as non-finite markers.
///
/// # Errors
/// The `serde_json` error when the text is not JSON (with those tokens allowed).
pub fn from_text(bytes: &[u8]) -> serde_json::Result<Value> {
    match tokens_to_markers(bytes) {
        None => serde_json::from_slice(bytes),
        Some(text) => serde_json::from_slice(&text),
    }
}

/// The text with every bare non-finite token replaced by its marker object, or None when it has none.
fn tokens_to_markers(bytes: &[u8]) -> Option<Vec<u8>> {
    const TOKENS: [&[u8]; 3] = [b"-Infinity", b"Infinity", b"NaN"];
    let mut out: Option<Vec<u8>> = None;
    let (mut in_string, mut escaped, mut copied) = (false, false, 0);
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if in_string {
            (in_string, escaped) = match (escaped, b) {
                (true, _) => (true, false),
                (false, b'\\') => (true, true),
                (false, b'"') => (false, false),
                _ => (true, false),
            };
        } else if b == b'"' {
            in_string = true;
        } else if let Some(token) = TOKENS.iter().find(|t| bytes[i..].starts_with(t)) {
            let text = out.get_or_insert_with(|| Vec::with_capacity(bytes.len() + 64));
            text.extend_from_slice(&bytes[copied..i]);
            let name = std::str::from_utf8(token).unwrap_or_default();
            text.extend_from_slice(format!("{{\"{MARKER}\":\"{name}\"}}").as_bytes());
            i += token.len();
            copied = i;
            continue;
        }
        i += 1;
    }
    let mut text = out?;
    text.extend_from_slice(&bytes[copied..]);
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pretty_text_equals_serde_json_for_finite_documents() {
        let doc = json!({"a": [1, 2.5, "x\"y"], "b": {}, "c": [], "d": {"e": null, "f": [true, {"g": -1}]}});
        assert_eq!(to_text(&doc), serde_json::to_string_pretty(&doc).unwrap());
    }

    #[test]
    fn non_finite_values_round_trip_as_bare_tokens() {
        let doc = json!({
            "valid_range": [float_attribute(f64::NEG_INFINITY), float_attribute(f64::NAN), 1.5],
            "text": "NaN \\\" Infinity",
            "missing_value": float_attribute(f64::INFINITY),
        });
        let text = to_text(&doc);
        assert!(text.contains("-Infinity,\n    NaN,") && text.contains("\"missing_value\": Infinity"), "{text}");
        assert_eq!(from_text(text.as_bytes()).unwrap(), doc);
        let back = from_text(text.as_bytes()).unwrap();
        assert!(attribute_f64(&back["valid_range"][1]).unwrap().is_nan());
        assert_eq!(attribute_f64(&back["missing_value"]), Some(f64::INFINITY));
        assert_eq!(back["text"], "NaN \\\" Infinity", "tokens inside strings stay text");
        assert_eq!(attribute_f64(&json!(2)), Some(2.0));
        assert_eq!(attribute_f64(&json!("NaN")), None, "the text NaN is not a float");
    }

    #[test]
    fn tokens_are_pythons_three_spellings() {
        // What Python's json module (zarr-python's reader) accepts: the exact three spellings.
        let text = to_text(&json!([float_attribute(f64::NAN), float_attribute(f64::NEG_INFINITY)]));
        assert_eq!(text, "[\n  NaN,\n  -Infinity\n]");
        assert!(from_text(b"[nan]").is_err());
    }
}
