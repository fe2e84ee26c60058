//! A DMR++ document as an element tree (input: the sidecar's bytes; output: [`Element`]s), parsed
//! with `quick-xml` under the limits an untrusted document needs: no DTD (a `<!DOCTYPE>`, and so
//! any entity declaration, is refused before anything is expanded), only the five predefined
//! entities and character references, elements nested at most [`MAX_DEPTH`] deep and at most
//! [`MAX_ELEMENTS`] of them, every start tag closed by its own end tag, and the tree's memory bounded
//! by what was read ([`tree_budget`]: each element, attribute, text and listed chunk is charged
//! before it is stored, so a document of millions of empty elements is refused, not allocated).
//!
//! BES declares `encoding="ISO-8859-1"` but writes UTF-8 in practice; a document that is not
//! valid UTF-8 is read as Latin-1 (every byte one character). Text before the first `<` (a line of
//! diagnostic output some BES versions wrote into their test sidecars) is skipped.
//!
//! Streaming for the chunk lists: a `<dmrpp:chunk>` inside `<dmrpp:chunks>` is no element of the
//! tree but a record of its parent's [`ChunkList`], read straight from its start tag (or, when it
//! has `dmrpp:block` children, from its element once closed), so a sidecar of 10^5 chunks costs no
//! allocation per chunk.

use quick_xml::events::{BytesStart, Event};
use quick_xml::XmlVersion;

use super::chunk_list::{ChunkList, ChunkText};

/// Deepest element nesting accepted (BES writes a handful of levels per group).
pub(super) const MAX_DEPTH: usize = 256;
/// Most elements one document may hold (a sidecar of 10^7 chunks is far past any granule's).
pub(super) const MAX_ELEMENTS: usize = 1 << 26;

/// Most memory the tree of any document may take.
pub(super) const MAX_TREE_BYTES: usize = 1 << 30;
/// Memory the tree of a document may take beyond [`TREE_BYTES_PER_BYTE`] per byte of it.
const TREE_BASE_BYTES: usize = 64 << 20;
/// Memory the tree may take per byte of the document (an attribute-heavy sidecar takes about 6).
const TREE_BYTES_PER_BYTE: usize = 8;

/// The memory the tree of a document of `len` bytes may take: 64 MiB plus 8 bytes per byte of the
/// document, at most [`MAX_TREE_BYTES`].
pub(super) fn tree_budget(len: usize) -> usize {
    TREE_BASE_BYTES.saturating_add(len.saturating_mul(TREE_BYTES_PER_BYTE)).min(MAX_TREE_BYTES)
}

/// What an element costs the budget before its name and attributes: its record, twice (a vector
/// grows by doubling).
const ELEMENT_COST: usize = 2 * std::mem::size_of::<Element>();
/// What an attribute costs the budget before its text.
const ATTRIBUTE_COST: usize = 2 * std::mem::size_of::<(String, String)>();
/// What a listed chunk costs the budget (its record and position, twice).
const CHUNK_COST: usize = 96;

/// One element: its qualified name (`Int32`, `dmrpp:chunk`), attributes in document order, the text
/// directly inside it (concatenated), and its child elements; a `dmrpp:chunks` element holds its
/// `dmrpp:chunk` children as a [`ChunkList`] instead.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Element {
    pub(super) name: String,
    pub(super) attributes: Vec<(String, String)>,
    pub(super) text: String,
    pub(super) children: Vec<Element>,
    /// The `dmrpp:chunk` children of a `dmrpp:chunks` element.
    pub(super) chunks: Option<Box<ChunkList>>,
}

impl Element {
    /// The value of attribute `name` (qualified, e.g. `dmrpp:href`).
    pub(super) fn attr(&self, name: &str) -> Option<&str> {
        self.attributes.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    /// The first child named `name`.
    pub(super) fn child(&self, name: &str) -> Option<&Element> {
        self.children.iter().find(|c| c.name == name)
    }

    /// Every child named `name`.
    pub(super) fn children_named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Element> + 'a {
        self.children.iter().filter(move |c| c.name == name)
    }
}

/// Why a document is not a well-formed DMR++ document, with the byte position where that was found.
#[derive(Debug, thiserror::Error)]
#[error("malformed XML at byte {position}: {message}")]
pub(crate) struct XmlError {
    /// Byte offset in the document (after skipped leading text).
    pub(crate) position: u64,
    /// What is wrong.
    pub(crate) message: String,
}

/// What the tree builder refuses (the message of an [`XmlError`], which adds the position).
#[derive(Debug, thiserror::Error)]
enum BuildError {
    /// An element or text after the root element closed.
    #[error("content after the root element")]
    AfterRoot,
    /// Elements nested deeper than [`MAX_DEPTH`].
    #[error("elements nested deeper than {MAX_DEPTH}")]
    TooDeep,
    /// More than [`MAX_ELEMENTS`] elements.
    #[error("more than {MAX_ELEMENTS} elements")]
    TooMany,
    /// A tree that would take more memory than the document's budget ([`tree_budget`]).
    #[error("the document's elements would take more than {budget} bytes of memory ({len} bytes of XML)")]
    TooLarge {
        /// The budget.
        budget: usize,
        /// The document's length.
        len: usize,
    },
    /// A start tag's attribute does not parse.
    #[error("<{element}>: {source}")]
    Attribute {
        /// The element's name.
        element: String,
        /// The parser's error.
        source: quick_xml::events::attributes::AttrError,
    },
    /// An attribute's value does not decode (an undefined entity).
    #[error("<{element} {key}>: {source}")]
    Value {
        /// The element's name.
        element: String,
        /// The attribute's name.
        key: String,
        /// The parser's error.
        source: quick_xml::Error,
    },
    /// An end tag without its start tag.
    #[error("an end tag without its start tag")]
    NoStart,
    /// Text outside the root element.
    #[error("text outside the root element")]
    TextOutside,
    /// The document ends inside an element.
    #[error("the document ends inside <{0}> (truncated?)")]
    Truncated(String),
    /// The document has no element.
    #[error("no root element")]
    NoRoot,
}

/// The document's root element.
///
/// # Errors
/// [`XmlError`] for malformed or truncated XML, a DTD or entity declaration, an undefined entity,
/// nesting deeper than [`MAX_DEPTH`], more than [`MAX_ELEMENTS`] elements, or a tree that would take
/// more memory than [`tree_budget`] gives the document.
pub(super) fn parse(bytes: &[u8]) -> Result<Element, XmlError> {
    let start = bytes.iter().position(|&b| b == b'<').unwrap_or(bytes.len());
    let text: std::borrow::Cow<'_, str> = match std::str::from_utf8(&bytes[start..]) {
        Ok(text) => text.into(),
        Err(_) => bytes[start..].iter().map(|&b| char::from(b)).collect::<String>().into(),
    };
    let mut reader = quick_xml::Reader::from_str(&text);
    reader.config_mut().check_end_names = true;
    let mut builder = Builder { budget: tree_budget(bytes.len()), len: bytes.len(), ..Builder::default() };
    loop {
        let position = reader.buffer_position();
        // The message quotes the document: one line of it, cut (so text, not the cause).
        let fail = |message: String| XmlError { position, message: one_line(&message) };
        let refused = |e: BuildError| fail(e.to_string());
        match reader.read_event().map_err(|e| fail(e.to_string()))? {
            Event::Start(e) => builder.open(&e).map_err(refused)?,
            Event::Empty(e) => builder.empty(&e).map_err(refused)?,
            Event::End(_) => builder.close().map_err(refused)?,
            Event::Text(t) => builder.text(&t.xml10_content().map_err(|e| fail(e.to_string()))?).map_err(refused)?,
            Event::CData(t) => builder.text(&t.decode().map_err(|e| fail(e.to_string()))?).map_err(refused)?,
            Event::GeneralRef(r) => {
                let name = r.decode().map_err(|e| fail(e.to_string()))?;
                let resolved = match r.resolve_char_ref().map_err(|e| fail(e.to_string()))? {
                    Some(c) => c.to_string(),
                    None => predefined(&name).ok_or_else(|| fail(format!("undefined entity &{name};")))?.to_string(),
                };
                builder.text(&resolved).map_err(refused)?;
            }
            Event::DocType(_) => return Err(fail("a DOCTYPE (DTD or entity declarations) is not accepted".into())),
            Event::Decl(_) | Event::PI(_) | Event::Comment(_) => {}
            Event::Eof => return builder.finish().map_err(refused),
        }
    }
}

/// A message quoting the document on one line, at most 200 characters of it.
fn one_line(message: &str) -> String {
    let line = message.split_whitespace().collect::<Vec<_>>().join(" ");
    match line.char_indices().nth(200) {
        Some((cut, _)) => format!("{}...", &line[..cut]),
        None => line,
    }
}

/// The replacement text of XML's five predefined entities.
fn predefined(name: &str) -> Option<&'static str> {
    Some(match name {
        "amp" => "&",
        "lt" => "<",
        "gt" => ">",
        "quot" => "\"",
        "apos" => "'",
        _ => return None,
    })
}

/// The tree under construction: the open elements, innermost last.
#[derive(Default)]
struct Builder {
    open: Vec<Element>,
    root: Option<Element>,
    count: usize,
    /// Memory charged so far, and the most that may be.
    charged: usize,
    budget: usize,
    /// The document's length (for the message).
    len: usize,
}

impl Builder {
    /// Charges `bytes` of memory to the budget before they are stored.
    fn charge(&mut self, bytes: usize) -> Result<(), BuildError> {
        self.charged = self.charged.saturating_add(bytes);
        if self.charged > self.budget {
            return Err(BuildError::TooLarge { budget: self.budget, len: self.len });
        }
        Ok(())
    }

    /// Counts one more element, which must fit the limits.
    fn admit(&mut self) -> Result<(), BuildError> {
        if self.root.is_some() {
            return Err(BuildError::AfterRoot);
        }
        if self.open.len() >= MAX_DEPTH {
            return Err(BuildError::TooDeep);
        }
        self.count += 1;
        if self.count > MAX_ELEMENTS {
            return Err(BuildError::TooMany);
        }
        Ok(())
    }

    /// The chunk list of the innermost open element when it is `dmrpp:chunks`.
    fn chunk_list(&mut self) -> Option<&mut ChunkList> {
        let parent = self.open.last_mut().filter(|p| p.name == "dmrpp:chunks")?;
        Some(parent.chunks.get_or_insert_with(Box::default))
    }

    /// An element without content: a chunk of a chunk list is read from its attributes alone.
    fn empty(&mut self, start: &BytesStart<'_>) -> Result<(), BuildError> {
        if start.name().as_ref() != b"dmrpp:chunk" || self.chunk_list().is_none() {
            self.open(start)?;
            return self.close();
        }
        self.admit()?;
        self.charge(CHUNK_COST)?;
        let mut text = ChunkText::default();
        for attr in start.attributes() {
            let element = || "dmrpp:chunk".to_string();
            let attr = attr.map_err(|source| BuildError::Attribute { element: element(), source })?;
            // Every value is decoded, as the tree's are: an undefined entity anywhere is malformed.
            let value = attr.normalized_value(XmlVersion::Implicit1_0).map_err(|source| BuildError::Value {
                element: element(),
                key: String::from_utf8_lossy(attr.key.as_ref()).into_owned(),
                source,
            })?;
            let slot = match attr.key.as_ref() {
                b"offset" => &mut text.offset,
                b"nBytes" => &mut text.n_bytes,
                b"chunkPositionInArray" => &mut text.position,
                b"href" => &mut text.href,
                _ => continue,
            };
            slot.get_or_insert(value);
        }
        if let Some(list) = self.chunk_list() {
            list.push(&text, None::<std::iter::Empty<_>>);
        }
        Ok(())
    }

    fn open(&mut self, start: &BytesStart<'_>) -> Result<(), BuildError> {
        self.admit()?;
        self.charge(ELEMENT_COST + start.name().as_ref().len())?;
        let name = String::from_utf8_lossy(start.name().as_ref()).into_owned();
        let mut attributes = Vec::new();
        for attr in start.attributes() {
            let attr = attr.map_err(|source| BuildError::Attribute { element: name.clone(), source })?;
            let key = String::from_utf8_lossy(attr.key.as_ref()).into_owned();
            let value = match attr.normalized_value(XmlVersion::Implicit1_0) {
                Ok(value) => value,
                Err(source) => return Err(BuildError::Value { element: name, key, source }),
            };
            self.charge(ATTRIBUTE_COST + key.len() + value.len())?;
            attributes.push((key, value.into_owned()));
        }
        self.open.push(Element { name, attributes, ..Element::default() });
        Ok(())
    }

    fn close(&mut self) -> Result<(), BuildError> {
        let element = self.open.pop().ok_or(BuildError::NoStart)?;
        if element.name == "dmrpp:chunk" {
            if let Some(list) = self.chunk_list() {
                list_chunk(list, &element);
                return Ok(());
            }
        }
        match self.open.last_mut() {
            Some(parent) => parent.children.push(element),
            None => self.root = Some(element),
        }
        Ok(())
    }

    fn text(&mut self, text: &str) -> Result<(), BuildError> {
        if !self.open.is_empty() {
            self.charge(text.len())?;
        }
        match self.open.last_mut() {
            Some(element) => element.text.push_str(text),
            None if text.trim().is_empty() => {}
            None => return Err(BuildError::TextOutside),
        }
        Ok(())
    }

    fn finish(self) -> Result<Element, BuildError> {
        if let Some(open) = self.open.last() {
            return Err(BuildError::Truncated(open.name.clone()));
        }
        self.root.ok_or(BuildError::NoRoot)
    }
}

/// A `dmrpp:chunk` element (one with content, linked blocks; or one outside `dmrpp:chunks`, as
/// older sidecars list them) added to `list`.
pub(super) fn list_chunk(list: &mut ChunkList, chunk: &Element) {
    let text = ChunkText {
        offset: chunk.attr("offset").map(Into::into),
        n_bytes: chunk.attr("nBytes").map(Into::into),
        position: chunk.attr("chunkPositionInArray").map(Into::into),
        href: chunk.attr("href").map(Into::into),
    };
    let mut blocks = chunk.children_named("dmrpp:block").map(|b| (b.attr("offset"), b.attr("nBytes"))).peekable();
    let has_blocks = blocks.peek().is_some();
    list.push(&text, has_blocks.then_some(blocks));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_the_tree_with_text_attributes_and_entities() {
        let doc = br#"junk line
<?xml version="1.0"?><Dataset a="x &amp; y"><Int32 name="v"><Value>1 &lt; 2&#33;</Value></Int32><E/></Dataset>"#;
        let root = parse(doc).unwrap();
        assert_eq!(root.attr("a"), Some("x & y"));
        assert_eq!(root.children.len(), 2);
        assert_eq!(root.child("Int32").unwrap().child("Value").unwrap().text, "1 < 2!");
    }

    #[test]
    fn refuses_dtds_truncation_and_deep_nesting() {
        let entity = br#"<?xml version="1.0"?><!DOCTYPE d [<!ENTITY a "aaaa">]><d>&a;</d>"#;
        assert!(parse(entity).unwrap_err().message.contains("DOCTYPE"));
        assert!(parse(b"<d><e>&a;</e></d>").unwrap_err().message.contains("undefined entity"));
        assert!(parse(b"<d><e>").unwrap_err().message.contains("truncated"));
        assert!(parse(b"<d><e></d>").is_err());
        let deep = "<a>".repeat(MAX_DEPTH + 1);
        assert!(parse(deep.as_bytes()).unwrap_err().message.contains("deeper"));
        assert!(parse(b"").is_err());
    }

    #[test]
    fn refuses_a_tree_past_its_budget_before_storing_it() {
        // Empty elements cost far more than their four bytes: 64 MiB of them take the budget.
        let n = TREE_BASE_BYTES / (ELEMENT_COST + 1 - 4 * TREE_BYTES_PER_BYTE) + 10;
        let doc = format!("<d>{}</d>", "<a/>".repeat(n));
        assert!(tree_budget(doc.len()) > TREE_BASE_BYTES);
        let err = parse(doc.as_bytes()).unwrap_err();
        assert!(err.message.contains("bytes of memory"), "{}", err.message);
        let small = format!("<d>{}</d>", "<a/>".repeat(1000));
        assert_eq!(parse(small.as_bytes()).unwrap().children.len(), 1000);
    }
}
