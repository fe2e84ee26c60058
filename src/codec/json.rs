//! JSON form of codecs: one element of the `codecs` array of a Zarr v3 `zarr.json`.
//!
//! Stage: inside [`crate::codec`]; used by `metadata` through [`crate::codec::CodecChain`].
//!
//! Written form: `{"name": ..., "configuration": {...}}`, with the configuration keys of Zarr v3
//! core (`bytes`: `endian`; `gzip`: `level`; `zstd`: `level`, `checksum`) and of the
//! zarr-extensions `numcodecs.*` codecs (`numcodecs.shuffle`: `elementsize`; `numcodecs.zlib`:
//! `level`; `numcodecs.fletcher32`: none; `blosc`: `cname`, `clevel`, `shuffle`, `typesize`,
//! `blocksize`). `bytes` without endian is written without a
//! configuration; `numcodecs.fletcher32` with an empty one, which zarr-python requires.
//!
//! Accepted on input: the same, plus a bare name string for codecs that need no configuration,
//! an empty or missing configuration for those, a missing zstd `checksum` (false, the zarr-python
//! default), and the top-level `must_understand` key. Unknown configuration keys are rejected:
//! they could change what the stored bytes mean.

use serde_json::{json, Map, Value};

use super::{BloscCompressor, BloscShuffle, Codec, CodecError, Endian};

/// The codec as `{"name": ..., "configuration": ...}`.
pub(super) fn codec_to_json(codec: &Codec) -> Value {
    let name = codec.name();
    match *codec {
        Codec::Bytes { endian: None } => json!({ "name": name }),
        Codec::Fletcher32 => json!({ "name": name, "configuration": {} }),
        // zarr-python writes (and expects) an empty configuration.
        Codec::VlenUtf8 => json!({ "name": name, "configuration": {} }),
        Codec::Bytes { endian: Some(endian) } => {
            json!({ "name": name, "configuration": { "endian": endian.as_str() } })
        }
        Codec::Shuffle { element_size } => {
            json!({ "name": name, "configuration": { "elementsize": element_size } })
        }
        Codec::Zlib { level } | Codec::Gzip { level } => {
            json!({ "name": name, "configuration": { "level": level } })
        }
        Codec::Zstd { level, checksum } => {
            json!({ "name": name, "configuration": { "level": level, "checksum": checksum } })
        }
        Codec::Blosc { cname, clevel, shuffle, typesize, blocksize } => json!({
            "name": name,
            "configuration": {
                "cname": cname.as_str(),
                "clevel": clevel,
                "shuffle": shuffle.as_str(),
                "typesize": typesize,
                "blocksize": blocksize,
            }
        }),
    }
}

/// Parses one codec (object or bare name string) and validates its configuration.
pub(super) fn codec_from_json(value: &Value) -> Result<Codec, CodecError> {
    let empty = Map::new();
    let (name, configuration) = match value {
        Value::String(name) => (name.as_str(), &empty),
        Value::Object(object) => split_object(object, &empty)?,
        other => {
            return Err(CodecError::InvalidJson { reason: format!("expected a codec object or name, found {other}") })
        }
    };
    let config = Config { codec: name, map: configuration };
    let codec = match name {
        "bytes" => parse_bytes(&config)?,
        "numcodecs.shuffle" => Codec::Shuffle { element_size: config.usize("elementsize")? },
        "numcodecs.zlib" => Codec::Zlib { level: config.u32("level")? },
        "gzip" => Codec::Gzip { level: config.u32("level")? },
        "zstd" => {
            Codec::Zstd { level: config.i32("level")?, checksum: config.optional_bool("checksum")?.unwrap_or(false) }
        }
        "numcodecs.fletcher32" => Codec::Fletcher32,
        "blosc" => parse_blosc(&config)?,
        "vlen-utf8" => Codec::VlenUtf8,
        other => return Err(CodecError::UnknownCodec { name: other.to_owned() }),
    };
    config.reject_unknown_keys(&codec)?;
    codec.validate()?;
    Ok(codec)
}

/// Splits a codec object into its name and configuration (missing configuration = empty).
fn split_object<'a>(
    object: &'a Map<String, Value>,
    empty: &'a Map<String, Value>,
) -> Result<(&'a str, &'a Map<String, Value>), CodecError> {
    let name = match object.get("name") {
        Some(Value::String(name)) => name.as_str(),
        _ => {
            return Err(CodecError::InvalidJson {
                reason: format!("codec object without a string \"name\": {object:?}"),
            })
        }
    };
    if let Some(key) = object.keys().find(|k| !matches!(k.as_str(), "name" | "configuration" | "must_understand")) {
        return Err(CodecError::InvalidJson { reason: format!("codec {name:?} has unknown key {key:?}") });
    }
    let configuration = match object.get("configuration") {
        None | Some(Value::Null) => empty,
        Some(Value::Object(map)) => map,
        Some(other) => {
            return Err(CodecError::InvalidJson {
                reason: format!("codec {name:?} configuration is not an object: {other}"),
            })
        }
    };
    Ok((name, configuration))
}

/// Parses the `bytes` codec: `endian` is optional (1-byte types).
fn parse_bytes(config: &Config<'_>) -> Result<Codec, CodecError> {
    let endian = match config.map.get("endian") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(
            Endian::parse(s)
                .ok_or_else(|| config.invalid(format!("endian must be \"little\" or \"big\", found {s:?}")))?,
        ),
        Some(other) => return Err(config.invalid(format!("endian is not a string: {other}"))),
    };
    Ok(Codec::Bytes { endian })
}

/// Parses the `blosc` codec: `typesize` may be missing for `noshuffle` (zarr-python then fills it in
/// from the data type; 1 here, which only steers encoding), `blocksize` defaults to 0 (automatic).
fn parse_blosc(config: &Config<'_>) -> Result<Codec, CodecError> {
    let text = |key: &str| match config.required(key)? {
        Value::String(s) => Ok(s.as_str()),
        other => Err(config.invalid(format!("{key} must be a string, found {other}"))),
    };
    let cname = text("cname")?;
    let cname = BloscCompressor::parse(cname).ok_or_else(|| config.invalid(format!("unknown cname {cname:?}")))?;
    let shuffle = text("shuffle")?;
    let shuffle = BloscShuffle::parse(shuffle).ok_or_else(|| config.invalid(format!("unknown shuffle {shuffle:?}")))?;
    let clevel = u8::try_from(config.u32("clevel")?).map_err(|_| config.invalid("clevel is out of range".into()))?;
    let optional = |key: &str| if config.map.contains_key(key) { config.usize(key).map(Some) } else { Ok(None) };
    let typesize = optional("typesize")?.unwrap_or(1);
    let blocksize = optional("blocksize")?.unwrap_or(0);
    Ok(Codec::Blosc { cname, clevel, shuffle, typesize, blocksize })
}

/// A codec's configuration object, with typed getters that name the codec in their errors.
struct Config<'a> {
    codec: &'a str,
    map: &'a Map<String, Value>,
}

impl Config<'_> {
    fn invalid(&self, reason: String) -> CodecError {
        CodecError::InvalidConfig { codec: self.codec.to_owned(), reason }
    }

    fn required(&self, key: &str) -> Result<&Value, CodecError> {
        self.map.get(key).ok_or_else(|| self.invalid(format!("missing {key:?}")))
    }

    fn i64(&self, key: &str) -> Result<i64, CodecError> {
        let value = self.required(key)?;
        value.as_i64().ok_or_else(|| self.invalid(format!("{key} must be an integer, found {value}")))
    }

    fn i32(&self, key: &str) -> Result<i32, CodecError> {
        let n = self.i64(key)?;
        i32::try_from(n).map_err(|_| self.invalid(format!("{key} {n} is out of range")))
    }

    fn u32(&self, key: &str) -> Result<u32, CodecError> {
        let n = self.i64(key)?;
        u32::try_from(n).map_err(|_| self.invalid(format!("{key} {n} is out of range")))
    }

    fn usize(&self, key: &str) -> Result<usize, CodecError> {
        let n = self.i64(key)?;
        usize::try_from(n).map_err(|_| self.invalid(format!("{key} {n} is out of range")))
    }

    fn optional_bool(&self, key: &str) -> Result<Option<bool>, CodecError> {
        match self.map.get(key) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(other) => Err(self.invalid(format!("{key} must be a boolean, found {other}"))),
        }
    }

    /// Fails on any configuration key the codec does not define.
    fn reject_unknown_keys(&self, codec: &Codec) -> Result<(), CodecError> {
        let known: &[&str] = match codec {
            Codec::Bytes { .. } => &["endian"],
            Codec::Shuffle { .. } => &["elementsize"],
            Codec::Zlib { .. } | Codec::Gzip { .. } => &["level"],
            Codec::Zstd { .. } => &["level", "checksum"],
            Codec::Blosc { .. } => &["cname", "clevel", "shuffle", "typesize", "blocksize"],
            Codec::Fletcher32 | Codec::VlenUtf8 => &[],
        };
        match self.map.keys().find(|k| !known.contains(&k.as_str())) {
            Some(key) => Err(self.invalid(format!("unknown configuration key {key:?}"))),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all_codecs() -> Vec<Codec> {
        vec![
            Codec::Bytes { endian: None },
            Codec::Bytes { endian: Some(Endian::Little) },
            Codec::Bytes { endian: Some(Endian::Big) },
            Codec::Shuffle { element_size: 8 },
            Codec::Zlib { level: 0 },
            Codec::Gzip { level: 9 },
            Codec::Zstd { level: -5, checksum: true },
            Codec::Fletcher32,
            Codec::Blosc {
                cname: BloscCompressor::Lz4,
                clevel: 5,
                shuffle: BloscShuffle::BitShuffle,
                typesize: 4,
                blocksize: 0,
            },
            Codec::VlenUtf8,
        ]
    }

    #[test]
    fn every_codec_round_trips() {
        for codec in all_codecs() {
            let value = codec_to_json(&codec);
            assert_eq!(codec_from_json(&value).unwrap(), codec, "{value}");
            // Through text too, as zarr.json is read back.
            let text = serde_json::to_string(&value).unwrap();
            let reparsed: Value = serde_json::from_str(&text).unwrap();
            assert_eq!(codec_from_json(&reparsed).unwrap(), codec);
        }
    }

    #[test]
    fn written_form_matches_the_specs() {
        assert_eq!(
            codec_to_json(&Codec::Bytes { endian: Some(Endian::Little) }),
            json!({"name": "bytes", "configuration": {"endian": "little"}})
        );
        assert_eq!(
            codec_to_json(&Codec::Shuffle { element_size: 4 }),
            json!({"name": "numcodecs.shuffle", "configuration": {"elementsize": 4}})
        );
        assert_eq!(
            codec_to_json(&Codec::Zlib { level: 4 }),
            json!({"name": "numcodecs.zlib", "configuration": {"level": 4}})
        );
        assert_eq!(
            codec_to_json(&Codec::Zstd { level: 3, checksum: false }),
            json!({"name": "zstd", "configuration": {"level": 3, "checksum": false}})
        );
        assert_eq!(codec_to_json(&Codec::Fletcher32), json!({"name": "numcodecs.fletcher32", "configuration": {}}));
    }

    #[test]
    fn lenient_input_forms() {
        let cases = [
            (json!("numcodecs.fletcher32"), Codec::Fletcher32),
            (json!({"name": "numcodecs.fletcher32", "configuration": {}}), Codec::Fletcher32),
            (json!("bytes"), Codec::Bytes { endian: None }),
            (json!({"name": "bytes", "configuration": {}}), Codec::Bytes { endian: None }),
            (json!({"name": "zstd", "configuration": {"level": 1}}), Codec::Zstd { level: 1, checksum: false }),
            (json!({"name": "gzip", "configuration": {"level": 5}, "must_understand": true}), Codec::Gzip { level: 5 }),
        ];
        for (value, expected) in cases {
            assert_eq!(codec_from_json(&value).unwrap(), expected, "{value}");
        }
    }

    #[test]
    fn unknown_codec_is_named() {
        let err = codec_from_json(&json!({"name": "numcodecs.blosc", "configuration": {}})).unwrap_err();
        assert!(matches!(&err, CodecError::UnknownCodec { name } if name == "numcodecs.blosc"));
        assert!(err.to_string().contains("numcodecs.blosc"));
    }

    #[test]
    fn bad_configurations_are_rejected() {
        let bad = [
            json!({"name": "numcodecs.shuffle", "configuration": {}}),
            json!({"name": "numcodecs.shuffle", "configuration": {"elementsize": 0}}),
            json!({"name": "numcodecs.shuffle", "configuration": {"elementsize": -1}}),
            json!({"name": "numcodecs.zlib", "configuration": {"level": 10}}),
            json!({"name": "numcodecs.zlib", "configuration": {"level": "1"}}),
            json!({"name": "numcodecs.zlib"}),
            json!({"name": "gzip", "configuration": {"level": 5, "mtime": 0}}),
            json!({"name": "zstd", "configuration": {"level": 1000, "checksum": false}}),
            json!({"name": "zstd", "configuration": {"level": 1, "checksum": 1}}),
            json!({"name": "bytes", "configuration": {"endian": "middle"}}),
            json!({"name": "numcodecs.fletcher32", "configuration": {"location": "start"}}),
        ];
        for value in bad {
            let err = codec_from_json(&value).unwrap_err();
            assert!(matches!(err, CodecError::InvalidConfig { .. }), "{value}: {err}");
        }
        let malformed = [
            json!(3),
            json!({"configuration": {}}),
            json!({"name": "gzip", "configuration": [5]}),
            json!({"name": "gzip", "configuration": {"level": 5}, "extra": 1}),
        ];
        for value in malformed {
            let err = codec_from_json(&value).unwrap_err();
            assert!(matches!(err, CodecError::InvalidJson { .. }), "{value}");
        }
    }
}
