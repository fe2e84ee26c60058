//! A kerchunk reference document read into a compact form as it is parsed, never as one
//! `serde_json::Value` tree (which took about 18 times the document's size: 8.1 GB for a 447 MB
//! document of 8 million references).
//!
//! Input: the document's bytes. Output: [`Parsed`]: the top-level fields vzarr reads (`version`,
//! `templates`, `gen`, the `vzarr` header), the metadata keys (`zarr.json`, `.zarray`, `.zgroup`,
//! `.zattrs`: small JSON values), and every other key as a [`RawRef`]: a byte range whose URL is an
//! index into the document's distinct URLs (as written, templates not yet expanded), decoded inline
//! bytes, or what is wrong with it (reported naming the key once the document is read). A reference
//! then costs its key, 24 bytes and its share of one copy of its URL.

use std::collections::HashMap;
use std::fmt;

use base64::Engine;
use bytes::Bytes;
use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserializer;
use serde_json::Value;

/// A key of the document and what is wrong with it.
pub(crate) type KeyError = (String, String);

/// One chunk key's value, as the document gives it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum RawRef {
    /// `[url, offset, length]`: `url` indexes [`Parsed::urls`].
    Range {
        /// The URL's index in [`Parsed::urls`].
        url: u32,
        /// First byte.
        offset: u64,
        /// Bytes.
        length: u64,
    },
    /// Inline bytes (`base64:` decoded, or the text's own bytes).
    Inline(Bytes),
    /// Not a reference vzarr reads, and why.
    Bad(String),
}

/// The document, as far as vzarr reads it.
#[derive(Debug, Default)]
pub(crate) struct Parsed {
    /// `version`.
    pub(crate) version: Option<Value>,
    /// `templates`.
    pub(crate) templates: Option<Value>,
    /// Whether `gen` is present and not null.
    pub(crate) generated: bool,
    /// The `vzarr` header.
    pub(crate) vzarr: Option<Value>,
    /// Whether the document has a `refs` object.
    pub(crate) has_refs: bool,
    /// The metadata keys and their values (JSON text or objects), in document order.
    pub(crate) meta: Vec<(String, Value)>,
    /// Every other key of `refs` and its value, in document order.
    pub(crate) chunks: Vec<(Box<str>, RawRef)>,
    /// The distinct URLs of the references, as written.
    pub(crate) urls: Vec<String>,
}

/// Reads `bytes` as a kerchunk document.
///
/// # Errors
/// The JSON error (position and what was expected) when `bytes` is not JSON or its top level or
/// `refs` is not an object.
pub(crate) fn parse(bytes: &[u8]) -> Result<Parsed, serde_json::Error> {
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let parsed = deserializer.deserialize_map(DocumentVisitor)?;
    deserializer.end()?;
    Ok(parsed)
}

/// Whether `key` names a node's metadata rather than a chunk.
pub(crate) fn is_meta(key: &str) -> bool {
    let name = key.rsplit('/').next().unwrap_or(key);
    matches!(name, "zarr.json" | ".zarray" | ".zgroup" | ".zattrs" | ".zmetadata")
}

struct DocumentVisitor;

impl<'de> Visitor<'de> for DocumentVisitor {
    type Value = Parsed;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a kerchunk reference document (a JSON object)")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Parsed, A::Error> {
        let mut parsed = Parsed::default();
        let mut urls = HashMap::new();
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "version" => parsed.version = Some(map.next_value()?),
                "templates" => parsed.templates = Some(map.next_value()?),
                "gen" => parsed.generated = !map.next_value::<Value>()?.is_null(),
                "vzarr" => parsed.vzarr = Some(map.next_value()?),
                "refs" => {
                    map.next_value_seed(RefsSeed { parsed: &mut parsed, urls: &mut urls })?;
                    parsed.has_refs = true;
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(parsed)
    }
}

/// The `refs` object, read into [`Parsed::meta`], [`Parsed::chunks`] and [`Parsed::urls`].
struct RefsSeed<'a> {
    parsed: &'a mut Parsed,
    urls: &'a mut HashMap<String, u32>,
}

impl<'de> DeserializeSeed<'de> for RefsSeed<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for RefsSeed<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a \"refs\" object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<String>()? {
            if key.ends_with(".zmetadata") && is_meta(&key) {
                // Consolidated metadata repeats the other keys: not read.
                map.next_value::<IgnoredAny>()?;
            } else if is_meta(&key) {
                let value = map.next_value()?;
                self.parsed.meta.push((key, value));
            } else {
                let seed = RefSeed { urls: self.urls, list: &mut self.parsed.urls };
                let value = map.next_value_seed(seed)?;
                self.parsed.chunks.push((key.into_boxed_str(), value));
            }
        }
        Ok(())
    }
}

/// One chunk key's value; URLs interned in `list` (index by `urls`).
struct RefSeed<'a> {
    urls: &'a mut HashMap<String, u32>,
    list: &'a mut Vec<String>,
}

impl RefSeed<'_> {
    /// The index of `url` among the document's distinct URLs (`None` past 2^32 of them).
    fn intern(self, url: String) -> Option<u32> {
        if let Some(&id) = self.urls.get(&url) {
            return Some(id);
        }
        let id = u32::try_from(self.list.len()).ok()?;
        self.list.push(url.clone());
        self.urls.insert(url, id);
        Some(id)
    }
}

impl<'de> DeserializeSeed<'de> for RefSeed<'_> {
    type Value = RawRef;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<RawRef, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for RefSeed<'_> {
    type Value = RawRef;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a reference [url, offset, length] or inline bytes")
    }

    fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<RawRef, E> {
        Ok(match text.strip_prefix("base64:") {
            Some(encoded) => match base64::engine::general_purpose::STANDARD.decode(encoded) {
                Ok(bytes) => RawRef::Inline(bytes.into()),
                Err(e) => RawRef::Bad(format!("invalid base64: {e}")),
            },
            None => RawRef::Inline(Bytes::copy_from_slice(text.as_bytes())),
        })
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<RawRef, A::Error> {
        let url = seq.next_element::<Value>()?;
        let offset = seq.next_element::<Value>()?;
        let length = seq.next_element::<Value>()?;
        let mut extra = false;
        while seq.next_element::<IgnoredAny>()?.is_some() {
            extra = true;
        }
        Ok(match (url, offset, length, extra) {
            (Some(Value::String(url)), Some(offset), Some(length), false) => match (offset.as_u64(), length.as_u64()) {
                (Some(offset), Some(length)) => match self.intern(url) {
                    Some(url) => RawRef::Range { url, offset, length },
                    None => RawRef::Bad("more than 2^32 distinct URLs".into()),
                },
                _ => RawRef::Bad("offset and length must be non-negative integers".into()),
            },
            (Some(Value::String(_)), None, None, false) => {
                RawRef::Bad("a reference to a whole file, with no byte range".into())
            }
            _ => RawRef::Bad("not [url, offset, length]".into()),
        })
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawRef, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(neither())
    }

    fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<RawRef, E> {
        Ok(neither())
    }

    fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<RawRef, E> {
        Ok(neither())
    }

    fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<RawRef, E> {
        Ok(neither())
    }

    fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<RawRef, E> {
        Ok(neither())
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<RawRef, E> {
        Ok(neither())
    }
}

fn neither() -> RawRef {
    RawRef::Bad("neither a reference nor inline bytes".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_are_read_compactly_and_bad_ones_kept_with_the_reason() {
        let doc = br#"{"version": 1, "other": [1, {"a": 2}], "templates": {"u": "s3://b"},
            "refs": {".zgroup": "{}", "a/.zarray": {"x": 1}, "a/.zmetadata": {"big": [1, 2]},
              "a/0": ["{{u}}/f.nc", 10, 20], "a/1": ["{{u}}/f.nc", 30, 5], "a/2": "base64:AAEC",
              "a/3": "raw", "a/4": ["x"], "a/5": ["x", -1, 2], "a/6": 7, "a/7": {"k": [1]},
              "a/8": "base64:!!"}}"#;
        let parsed = parse(doc).unwrap();
        assert_eq!(parsed.version, Some(Value::from(1)));
        assert!(parsed.has_refs && !parsed.generated);
        let meta: Vec<&str> = parsed.meta.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(meta, [".zgroup", "a/.zarray"]);
        assert_eq!(parsed.urls, ["{{u}}/f.nc"]);
        let chunk = |i: usize| &parsed.chunks[i].1;
        assert_eq!(chunk(0), &RawRef::Range { url: 0, offset: 10, length: 20 });
        assert_eq!(chunk(1), &RawRef::Range { url: 0, offset: 30, length: 5 });
        assert_eq!(chunk(2), &RawRef::Inline(Bytes::from_static(&[0, 1, 2])));
        assert_eq!(chunk(3), &RawRef::Inline(Bytes::from_static(b"raw")));
        for (i, reason) in [(4, "whole file"), (5, "non-negative"), (6, "neither"), (7, "neither"), (8, "base64")] {
            assert!(matches!(chunk(i), RawRef::Bad(r) if r.contains(reason)), "{i}: {:?}", chunk(i));
        }
        assert!(parse(b"[1]").is_err() && parse(br#"{"refs": []}"#).is_err() && parse(b"{} x").is_err());
    }
}
