//! A DMR++ document reduced to what the BES parity harness compares, per variable (full path):
//! DAP4 type, shape, structure members, the `dmrpp:chunks` attributes (filters, deflate level, fill
//! value, byte order), chunk shape, every chunk (position, offset, nBytes), compact data, string
//! layout (`dmrpp:FixedLengthStringArray`, `dmrpp:vlsa`, `dmrpp:specialstructuredata`) and the
//! `_FillValue` attribute. Parsed with `quick-xml` into a small element tree; anything malformed is
//! an `Err` naming what, never a panic, so the harness can report it as a row.

use std::collections::BTreeMap;

use quick_xml::events::{BytesStart, Event};

/// One element of the document.
#[derive(Debug, Default, Clone)]
pub struct Node {
    /// Tag name with its prefix (`dmrpp:chunks`).
    pub name: String,
    /// Attributes, decoded.
    pub attributes: Vec<(String, String)>,
    /// The text directly inside the element, concatenated.
    pub text: String,
    /// Child elements.
    pub children: Vec<Node>,
}

impl Node {
    fn attribute(&self, key: &str) -> Option<&str> {
        self.attributes.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    fn child(&self, name: &str) -> Option<&Node> {
        self.children.iter().find(|c| c.name == name)
    }
}

fn open(start: &BytesStart<'_>) -> Result<Node, String> {
    let name = String::from_utf8_lossy(start.name().as_ref()).into_owned();
    let mut attributes = Vec::new();
    for attr in start.attributes() {
        let attr = attr.map_err(|e| format!("<{name}>: {e}"))?;
        let key = String::from_utf8_lossy(attr.key.as_ref()).into_owned();
        let value =
            attr.normalized_value(quick_xml::XmlVersion::Implicit1_0).map_err(|e| format!("<{name} {key}>: {e}"))?;
        attributes.push((key, value.into_owned()));
    }
    Ok(Node { name, attributes, ..Node::default() })
}

/// The document's root element.
///
/// # Errors
/// What is malformed.
pub fn parse_tree(text: &str) -> Result<Node, String> {
    // Some of BES's sidecars start with a line of diagnostic output.
    let text = &text[text.find('<').unwrap_or(0)..];
    let mut reader = quick_xml::Reader::from_str(text);
    let mut stack = vec![Node::default()];
    loop {
        match reader.read_event().map_err(|e| e.to_string())? {
            Event::Start(e) => stack.push(open(&e)?),
            Event::Empty(e) => {
                let node = open(&e)?;
                stack.last_mut().ok_or("unbalanced")?.children.push(node);
            }
            Event::End(_) => {
                let node = stack.pop().ok_or("unbalanced")?;
                stack.last_mut().ok_or("unbalanced end tag")?.children.push(node);
            }
            Event::Text(t) => {
                let text = t.xml10_content().map_err(|e| e.to_string())?;
                stack.last_mut().ok_or("unbalanced")?.text.push_str(&text);
            }
            Event::GeneralRef(r) => {
                let name = r.decode().map_err(|e| e.to_string())?;
                let c = match name.as_ref() {
                    "amp" => "&".to_string(),
                    "lt" => "<".into(),
                    "gt" => ">".into(),
                    "quot" => "\"".into(),
                    "apos" => "'".into(),
                    other => match r.resolve_char_ref().map_err(|e| e.to_string())? {
                        Some(c) => c.to_string(),
                        None => return Err(format!("unknown entity &{other};")),
                    },
                };
                stack.last_mut().ok_or("unbalanced")?.text.push_str(&c);
            }
            Event::Eof => break,
            _ => {}
        }
    }
    let mut document = stack.pop().filter(|_| stack.is_empty()).ok_or("unclosed elements")?;
    document.children.pop().ok_or_else(|| "no root element".to_string())
}

/// The DAP4 variable types.
const VARIABLE_TYPES: [&str; 16] = [
    "Byte",
    "Char",
    "Int8",
    "UInt8",
    "Int16",
    "UInt16",
    "Int32",
    "UInt32",
    "Int64",
    "UInt64",
    "Float32",
    "Float64",
    "String",
    "Url",
    "Enum",
    "Structure",
];

/// One `dmrpp:chunk`: position (absent for contiguous data), offset, nBytes.
pub type Chunk = (Option<Vec<u64>>, u64, u64);

/// What is compared of one variable.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Variable {
    /// DAP4 type (`Enum` with its enumeration's base type is given as `Enum`).
    pub dap_type: String,
    /// Dimension sizes (named dimensions resolved through their declarations).
    pub shape: Vec<u64>,
    /// A structure's members, `Type name [sizes]`, in order.
    pub members: Vec<String>,
    /// `compressionType`, split.
    pub filters: Vec<String>,
    /// `deflateLevel`.
    pub deflate_level: Option<String>,
    /// `fillValue`.
    pub fill_value: Option<String>,
    /// `byteOrder`.
    pub byte_order: Option<String>,
    /// `structOffset` (a structure with padding).
    pub struct_offset: Option<String>,
    /// `chunkDimensionSizes`.
    pub chunk_shape: Option<Vec<u64>>,
    /// (position, offset, nBytes), sorted.
    pub chunks: Vec<Chunk>,
    /// `dmrpp:compact`, still base64 (whitespace removed).
    pub compact: Option<String>,
    /// String layout: `fixed LEN PAD`, `vlsa: v1|v2|...`, `special: BASE64`.
    pub strings: Option<String>,
    /// The `_FillValue` attribute: type and values.
    pub fill_attribute: Option<(String, Vec<String>)>,
    /// Whether `dmrpp:chunks` is present at all.
    pub has_chunks: bool,
}

/// A parsed sidecar: the variables by full path (`/g/v`).
#[derive(Debug, Default)]
pub struct Sidecar {
    pub variables: BTreeMap<String, Variable>,
}

/// Parses a sidecar.
///
/// # Errors
/// What is malformed (a chunk without an offset, a size that is no number).
pub fn parse(text: &str) -> Result<Sidecar, String> {
    let root = parse_tree(text)?;
    if root.name != "Dataset" {
        return Err(format!("the root element is <{}>, not <Dataset>", root.name));
    }
    let mut dims = BTreeMap::new();
    collect_dimensions(&root, "", &mut dims)?;
    let mut sidecar = Sidecar::default();
    collect_variables(&root, "", &dims, &mut sidecar.variables)?;
    Ok(sidecar)
}

fn collect_dimensions(group: &Node, path: &str, out: &mut BTreeMap<String, u64>) -> Result<(), String> {
    for child in &group.children {
        match child.name.as_str() {
            "Dimension" => {
                let name = child.attribute("name").ok_or("a <Dimension> without a name")?;
                let size = number(child.attribute("size").ok_or("a <Dimension> without a size")?)?;
                out.insert(format!("{path}/{name}"), size);
            }
            "Group" => {
                let name = child.attribute("name").ok_or("a <Group> without a name")?;
                collect_dimensions(child, &format!("{path}/{name}"), out)?;
            }
            _ => {}
        }
    }
    Ok(())
}

fn number(text: &str) -> Result<u64, String> {
    text.trim().parse().map_err(|_| format!("{text:?} is not a count"))
}

fn numbers(text: &str, separators: &[char]) -> Result<Vec<u64>, String> {
    text.split(|c: char| separators.contains(&c) || c.is_whitespace()).filter(|s| !s.is_empty()).map(number).collect()
}

fn collect_variables(
    group: &Node,
    path: &str,
    dims: &BTreeMap<String, u64>,
    out: &mut BTreeMap<String, Variable>,
) -> Result<(), String> {
    for child in &group.children {
        let Some(name) = child.attribute("name") else { continue };
        let full = format!("{path}/{name}");
        if child.name == "Group" {
            collect_variables(child, &full, dims, out)?;
        } else if VARIABLE_TYPES.contains(&child.name.as_str()) {
            let variable = variable(child, dims).map_err(|e| format!("{full}: {e}"))?;
            out.insert(full, variable);
        }
    }
    Ok(())
}

fn shape(node: &Node, dims: &BTreeMap<String, u64>) -> Result<Vec<u64>, String> {
    let mut shape = Vec::new();
    for dim in node.children.iter().filter(|c| c.name == "Dim") {
        let size = match (dim.attribute("size"), dim.attribute("name")) {
            (Some(size), _) => number(size)?,
            (None, Some(name)) => *dims.get(name).ok_or_else(|| format!("dimension {name} is not declared"))?,
            (None, None) => return Err("a <Dim> with neither name nor size".into()),
        };
        shape.push(size);
    }
    Ok(shape)
}

fn variable(node: &Node, dims: &BTreeMap<String, u64>) -> Result<Variable, String> {
    let mut v = Variable { dap_type: node.name.clone(), shape: shape(node, dims)?, ..Variable::default() };
    for member in node.children.iter().filter(|c| VARIABLE_TYPES.contains(&c.name.as_str())) {
        let name = member.attribute("name").unwrap_or_default();
        v.members.push(format!("{} {name} {:?}", member.name, shape(member, dims)?));
    }
    // Older sidecars (BES's `d_int.h5.dmrpp`) list `dmrpp:chunk` in the variable itself.
    let chunks = node.child("dmrpp:chunks").or_else(|| node.child("dmrpp:chunk").map(|_| node));
    if let Some(chunks) = chunks {
        v.has_chunks = true;
        v.filters =
            chunks.attribute("compressionType").unwrap_or_default().split_whitespace().map(str::to_string).collect();
        v.deflate_level = chunks.attribute("deflateLevel").map(str::to_string);
        v.fill_value = chunks.attribute("fillValue").map(str::to_string);
        v.byte_order = chunks.attribute("byteOrder").map(str::to_string);
        v.struct_offset = chunks.attribute("structOffset").map(|o| o.split_whitespace().collect::<Vec<_>>().join(" "));
        if let Some(sizes) = chunks.child("dmrpp:chunkDimensionSizes") {
            v.chunk_shape = Some(numbers(&sizes.text, &[])?);
        }
        for chunk in chunks.children.iter().filter(|c| c.name == "dmrpp:chunk") {
            let position = chunk.attribute("chunkPositionInArray").map(|p| numbers(p, &['[', ']', ','])).transpose()?;
            let offset = number(chunk.attribute("offset").ok_or("a chunk without an offset")?)?;
            let length = number(chunk.attribute("nBytes").ok_or("a chunk without nBytes")?)?;
            v.chunks.push((position, offset, length));
        }
        v.chunks.sort();
    }
    if let Some(compact) = node.child("dmrpp:compact") {
        v.compact = Some(compact.text.split_whitespace().collect());
    }
    if let Some(fixed) = node.child("dmrpp:FixedLengthStringArray") {
        let (len, pad) = (fixed.attribute("string_length"), fixed.attribute("pad"));
        v.strings = Some(format!("fixed {} {}", len.unwrap_or("?"), pad.unwrap_or("?")));
    }
    if let Some(vlsa) = node.child("dmrpp:vlsa") {
        v.strings = Some(format!("vlsa: {}", vlsa_values(vlsa)?.join("|")));
    }
    if let Some(special) = node.child("dmrpp:specialstructuredata") {
        v.strings = Some(format!("special: {}", special.text.split_whitespace().collect::<String>()));
    }
    if let Some(fill) =
        node.children.iter().find(|c| c.name == "Attribute" && c.attribute("name") == Some("_FillValue"))
    {
        let values = fill.children.iter().filter(|c| c.name == "Value").map(|c| c.text.trim().to_string()).collect();
        v.fill_attribute = Some((fill.attribute("type").unwrap_or_default().to_string(), values));
    }
    Ok(v)
}

/// A `dmrpp:vlsa`'s strings, expanded: `c` repeats a value, `s` marks base64 of its zlib stream.
fn vlsa_values(vlsa: &Node) -> Result<Vec<String>, String> {
    use base64::Engine as _;
    use std::io::Read as _;
    let mut out = Vec::new();
    for v in vlsa.children.iter().filter(|c| c.name == "v") {
        let repeat = v.attribute("c").map(number).transpose()?.unwrap_or(1);
        let text = match v.attribute("s") {
            Some(_) => {
                let raw = base64::engine::general_purpose::STANDARD
                    .decode(v.text.trim())
                    .map_err(|e| format!("a vlsa value: {e}"))?;
                let mut text = String::new();
                flate2::read::ZlibDecoder::new(raw.as_slice())
                    .read_to_string(&mut text)
                    .map_err(|e| format!("a vlsa value: {e}"))?;
                text
            }
            None => v.text.clone(),
        };
        out.extend(std::iter::repeat_n(text, repeat as usize));
    }
    Ok(out)
}

/// Whether two number texts are the same value (BES prints floats with 6 significant digits); a
/// structure's fill values (space-separated) are compared one by one.
pub fn same_number(ours: &str, bes: &str) -> bool {
    let (a, b): (Vec<&str>, Vec<&str>) = (ours.split_whitespace().collect(), bes.split_whitespace().collect());
    if a.len() > 1 || b.len() > 1 {
        return a.len() == b.len() && a.iter().zip(&b).all(|(x, y)| same_number(x, y));
    }
    match (ours.trim().parse::<f64>(), bes.trim().parse::<f64>()) {
        (Ok(a), Ok(b)) if a.is_nan() || b.is_nan() => a.is_nan() && b.is_nan(),
        (Ok(a), Ok(b)) => a == b || (a - b).abs() <= 1e-6 * a.abs().max(b.abs()),
        _ => ours.trim() == bes.trim(),
    }
}

/// Contiguous storage in its two forms BES writes (one chunk without a position, or the whole shape
/// as the chunk shape and the origin as the position): the second.
fn normalized_chunks(v: &Variable) -> (Option<Vec<u64>>, Vec<Chunk>) {
    match (&v.chunk_shape, v.chunks.as_slice()) {
        (None, [(position, offset, length)]) if position.as_ref().is_none_or(|p| p.iter().all(|&x| x == 0)) => {
            (Some(v.shape.clone()), vec![(Some(vec![0; v.shape.len()]), *offset, *length)])
        }
        _ => (v.chunk_shape.clone(), v.chunks.clone()),
    }
}

/// The first difference of vzarr's variable from BES's, if any.
pub fn first_difference(ours: &Variable, bes: &Variable) -> Option<String> {
    let differ = |what: &str, a: String, b: String| (a != b).then(|| format!("{what}: vzarr {a}, BES {b}"));
    let same_fill = |a: &Option<String>, b: &Option<String>| match (a, b) {
        // BES's placeholder for a string fill value it did not read.
        (_, None) => true,
        (_, Some(b)) if b == "unsupported-string" => true,
        (Some(a), Some(b)) => same_number(a, b),
        (None, Some(_)) => false,
    };
    let optional = |a: &Option<String>, b: &Option<String>| b.is_none() || a == b;
    let (ours_chunks, bes_chunks) = (normalized_chunks(ours), normalized_chunks(bes));
    differ("type", ours.dap_type.clone(), bes.dap_type.clone())
        .or_else(|| differ("shape", format!("{:?}", ours.shape), format!("{:?}", bes.shape)))
        .or_else(|| differ("members", format!("{:?}", ours.members), format!("{:?}", bes.members)))
        .or_else(|| differ("storage described", ours.has_chunks.to_string(), bes.has_chunks.to_string()))
        .or_else(|| differ("filters", format!("{:?}", ours.filters), format!("{:?}", bes.filters)))
        .or_else(|| {
            (!optional(&ours.deflate_level, &bes.deflate_level))
                .then(|| format!("deflate level: vzarr {:?}, BES {:?}", ours.deflate_level, bes.deflate_level))
        })
        .or_else(|| {
            (!same_fill(&ours.fill_value, &bes.fill_value))
                .then(|| format!("fill value: vzarr {:?}, BES {:?}", ours.fill_value, bes.fill_value))
        })
        .or_else(|| {
            // One-byte elements have no byte order: BES writes the file's (HDF4: BE), vzarr LE.
            let one_byte = ["Byte", "Int8", "UInt8", "Char"].contains(&bes.dap_type.as_str());
            (!one_byte && !optional(&ours.byte_order, &bes.byte_order))
                .then(|| format!("byte order: vzarr {:?}, BES {:?}", ours.byte_order, bes.byte_order))
        })
        .or_else(|| {
            // Older BES versions leave a packed structure's (implied) offsets out.
            (!optional(&ours.struct_offset, &bes.struct_offset))
                .then(|| format!("structOffset: vzarr {:?}, BES {:?}", ours.struct_offset, bes.struct_offset))
        })
        .or_else(|| differ("chunk shape", format!("{:?}", ours_chunks.0), format!("{:?}", bes_chunks.0)))
        .or_else(|| differ("chunks", format!("{:?}", ours_chunks.1), format!("{:?}", bes_chunks.1)))
        .or_else(|| differ("compact data", format!("{:?}", ours.compact), format!("{:?}", bes.compact)))
        .or_else(|| {
            // Older BES versions leave a fixed-length string array's layout out (its own scan then
            // cannot read the strings); where BES says it, vzarr must say the same.
            let bes_says_less =
                bes.strings.is_none() && ours.strings.as_deref().is_some_and(|s| s.starts_with("fixed"));
            (!bes_says_less)
                .then(|| differ("string layout", format!("{:?}", ours.strings), format!("{:?}", bes.strings)))?
        })
        .or_else(|| fill_attribute_difference(&ours.fill_attribute, &bes.fill_attribute))
}

fn fill_attribute_difference(
    ours: &Option<(String, Vec<String>)>,
    bes: &Option<(String, Vec<String>)>,
) -> Option<String> {
    match (ours, bes) {
        (None, None) => None,
        (Some((ta, va)), Some((tb, vb)))
            if ta == tb && va.len() == vb.len() && va.iter().zip(vb).all(|(a, b)| same_number(a, b)) =>
        {
            None
        }
        (a, b) => Some(format!("_FillValue attribute: vzarr {a:?}, BES {b:?}")),
    }
}

/// The first difference between two sidecars: a variable one has and the other lacks, or the first
/// variable (in path order) that differs.
pub fn compare(ours: &Sidecar, bes: &Sidecar) -> Option<String> {
    for (path, theirs) in &bes.variables {
        match ours.variables.get(path) {
            None => return Some(format!("{path}: {} missing from vzarr's sidecar", theirs.dap_type)),
            Some(mine) => {
                if let Some(d) = first_difference(mine, theirs) {
                    return Some(format!("{path}: {d}"));
                }
            }
        }
    }
    ours.variables.keys().find(|p| !bes.variables.contains_key(*p)).map(|p| format!("{p}: only in vzarr's sidecar"))
}
