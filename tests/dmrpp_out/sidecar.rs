//! A small reader of DMR++ documents for the tests: each variable's type, shape, filters, fill value
//! and storage, keyed by its path (`group/name`). Tags are found with one regular expression; the
//! sidecars compared are BES's and vzarr's, both plain XML without comments or CDATA.

use std::collections::BTreeMap;

/// DAP4 atomic types a numeric variable can have.
pub const ATOMIC: [&str; 11] =
    ["Byte", "Int8", "UInt8", "Int16", "UInt16", "Int32", "UInt32", "Int64", "UInt64", "Float32", "Float64"];

/// Where a variable's bytes are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Storage {
    /// `chunkDimensionSizes` (empty for contiguous data) and the chunks, sorted: (position, offset, nBytes).
    Chunked { shape: Vec<u64>, chunks: Vec<(Option<Vec<u64>>, u64, u64)> },
    /// `dmrpp:compact` data, decoded.
    Compact(Vec<u8>),
}

/// One variable.
#[derive(Debug, Clone)]
pub struct Variable {
    pub dap_type: String,
    pub shape: Vec<u64>,
    pub filters: Vec<String>,
    pub fill_value: Option<String>,
    pub storage: Storage,
}

/// A parsed sidecar.
#[derive(Debug)]
pub struct Sidecar {
    pub href: String,
    pub variables: BTreeMap<String, Variable>,
}

fn attribute(attrs: &str, name: &str) -> Option<String> {
    let re = regex::Regex::new(&format!(r#"(?:^|\s){}\s*=\s*"([^"]*)""#, regex::escape(name))).unwrap();
    re.captures(attrs).map(|c| c[1].to_string())
}

impl Sidecar {
    /// Parses `text`; panics on anything the tests do not expect.
    pub fn parse(text: &str) -> Sidecar {
        let tag = regex::Regex::new(r"<(/?)([A-Za-z][A-Za-z0-9:]*)([^>]*?)(/?)>").unwrap();
        let mut href = String::new();
        let mut groups: Vec<String> = Vec::new();
        let mut variables = BTreeMap::new();
        let mut current: Option<(String, Variable)> = None;
        let mut attribute_depth = 0;
        let mut last_end = 0;
        for m in tag.captures_iter(text) {
            let whole = m.get(0).unwrap();
            let text_before = &text[last_end..whole.start()];
            last_end = whole.end();
            let (closing, name, attrs, empty) = (&m[1] == "/", &m[2], &m[3], &m[4] == "/");
            if name == "Attribute" {
                attribute_depth += if closing {
                    -1
                } else if empty {
                    0
                } else {
                    1
                };
                continue;
            }
            if attribute_depth > 0 {
                continue;
            }
            match (closing, name) {
                (false, "Dataset") => href = attribute(attrs, "dmrpp:href").unwrap_or_default(),
                (false, "Group") => groups.push(attribute(attrs, "name").unwrap()),
                (true, "Group") => {
                    groups.pop();
                }
                (false, "Dim") => {
                    if let Some((_, v)) = current.as_mut() {
                        v.shape.push(attribute(attrs, "size").and_then(|s| s.parse().ok()).unwrap_or(0));
                    }
                }
                (false, "dmrpp:chunks") => {
                    let v = &mut current.as_mut().expect("chunks inside a variable").1;
                    v.filters = attribute(attrs, "compressionType")
                        .map(|t| t.split_whitespace().map(str::to_string).collect())
                        .unwrap_or_default();
                    v.fill_value = attribute(attrs, "fillValue");
                }
                (true, "dmrpp:chunkDimensionSizes") => {
                    let v = &mut current.as_mut().unwrap().1;
                    let shape: Vec<u64> = text_before.split_whitespace().map(|n| n.parse().unwrap()).collect();
                    if let Storage::Chunked { shape: s, .. } = &mut v.storage {
                        *s = shape;
                    }
                }
                (false, "dmrpp:chunk") => {
                    let v = &mut current.as_mut().unwrap().1;
                    let position = attribute(attrs, "chunkPositionInArray").map(|p| {
                        p.trim_matches(|c| c == '[' || c == ']').split(',').map(|n| n.trim().parse().unwrap()).collect()
                    });
                    let offset = attribute(attrs, "offset").unwrap().parse().unwrap();
                    let length = attribute(attrs, "nBytes").unwrap().parse().unwrap();
                    if let Storage::Chunked { chunks, .. } = &mut v.storage {
                        chunks.push((position, offset, length));
                    }
                }
                (true, "dmrpp:compact") => {
                    use base64::Engine as _;
                    let data = base64::engine::general_purpose::STANDARD.decode(text_before.trim()).unwrap();
                    current.as_mut().unwrap().1.storage = Storage::Compact(data);
                }
                (false, t)
                    if current.is_none() && (ATOMIC.contains(&t) || ["String", "Structure", "Enum"].contains(&t)) =>
                {
                    let path = groups
                        .iter()
                        .chain([&attribute(attrs, "name").unwrap()])
                        .cloned()
                        .collect::<Vec<_>>()
                        .join("/");
                    let v = Variable {
                        dap_type: t.to_string(),
                        shape: Vec::new(),
                        filters: Vec::new(),
                        fill_value: None,
                        storage: Storage::Chunked { shape: Vec::new(), chunks: Vec::new() },
                    };
                    if empty {
                        variables.insert(path, v);
                    } else {
                        current = Some((path, v));
                    }
                }
                (true, t) if current.as_ref().is_some_and(|(_, v)| v.dap_type == t) => {
                    let (path, mut v) = current.take().unwrap();
                    if let Storage::Chunked { chunks, .. } = &mut v.storage {
                        chunks.sort();
                    }
                    variables.insert(path, v);
                }
                _ => {}
            }
        }
        Sidecar { href, variables }
    }
}
