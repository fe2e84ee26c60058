//! The chunks of one `<dmrpp:chunks>`, kept compact as the XML parser meets them (input: each
//! `<dmrpp:chunk>`'s attribute texts, and its linked blocks; output: a [`ChunkList`]). A sidecar
//! lists up to millions of chunks: each is one fixed-size record, the positions of all of them
//! share one vector and the `href`s are interned, so no chunk costs an allocation of its own.
//!
//! Every number is checked as it is read. The first problem is kept (later chunks are then not
//! stored) and reported for the variable when its storage is read (`chunks::storage`), as it was
//! when chunks were read from the element tree: a bad chunk refuses its variable, not the sidecar.

use std::borrow::Cow;
use std::collections::HashMap;

/// What one `<dmrpp:chunk>` says, as the text of its attributes.
#[derive(Debug, Default)]
pub(super) struct ChunkText<'a> {
    pub(super) offset: Option<Cow<'a, str>>,
    pub(super) n_bytes: Option<Cow<'a, str>>,
    /// `chunkPositionInArray`, `[i,j,k]`.
    pub(super) position: Option<Cow<'a, str>>,
    pub(super) href: Option<Cow<'a, str>>,
}

/// One stored chunk: its byte range, where its position lies in [`ChunkList::coords`], its `href`.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Record {
    offset: u64,
    length: u64,
    /// First coordinate of the position in `coords`.
    start: usize,
    /// Coordinates of the position; [`NO_POSITION`] when the chunk gives none.
    rank: u32,
    /// Index in `hrefs` plus one; 0 when the chunk names no file of its own.
    href: u32,
}

/// `Record::rank` of a chunk without `chunkPositionInArray`.
const NO_POSITION: u32 = u32::MAX;

/// The chunks of one `<dmrpp:chunks>`, in document order.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct ChunkList {
    records: Vec<Record>,
    coords: Vec<u64>,
    hrefs: Vec<String>,
    href_ids: HashMap<String, u32>,
    error: Option<ChunkListError>,
}

/// One chunk, as [`ChunkList::iter`] gives it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Chunk<'a> {
    pub(super) offset: u64,
    pub(super) length: u64,
    /// The element index of the chunk's origin, when given.
    pub(super) position: Option<&'a [u64]>,
    /// The chunk's own file: an index into [`ChunkList::hrefs`].
    pub(super) href: Option<usize>,
}

/// Why a chunk of a chunk list does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum ChunkListError {
    /// An offset or size that is no number.
    #[error("chunk {name} {value:?}")]
    Field {
        /// `offset` or `nBytes`.
        name: &'static str,
        /// Its text.
        value: String,
    },
    /// A chunk without offset and size (and without blocks).
    #[error("a dmrpp:chunk without offset and nBytes")]
    NoOffset,
    /// A position that does not parse.
    #[error("chunkPositionInArray {0:?}")]
    Position(String),
    /// A block without a valid offset and size.
    #[error("a dmrpp:block without a valid offset and nBytes")]
    Block,
    /// Blocks that are not adjacent.
    #[error("a chunk of linked blocks that are not adjacent (no single byte range holds it)")]
    Apart,
    /// A block ending past 2^64.
    #[error("a dmrpp:block past 2^64 bytes")]
    BlockEnd,
}

impl ChunkList {
    /// Adds the chunk `text` describes; `blocks`, when the chunk has `dmrpp:block` children, the
    /// (offset, nBytes) texts of each. After a problem, nothing more is stored.
    pub(super) fn push<'b>(
        &mut self,
        text: &ChunkText<'_>,
        blocks: Option<impl Iterator<Item = (Option<&'b str>, Option<&'b str>)>>,
    ) {
        if self.error.is_some() {
            return;
        }
        let start = self.coords.len();
        if let Err(why) = self.try_push(text, blocks) {
            self.coords.truncate(start);
            self.error = Some(why);
        }
    }

    fn try_push<'b>(
        &mut self,
        text: &ChunkText<'_>,
        blocks: Option<impl Iterator<Item = (Option<&'b str>, Option<&'b str>)>>,
    ) -> Result<(), ChunkListError> {
        let start = self.coords.len();
        let rank = match text.position.as_deref() {
            Some(position) => self.position(position)?,
            None => NO_POSITION,
        };
        let (offset, length) = match blocks {
            Some(blocks) => joined(blocks)?,
            None => {
                let field = |name: &'static str, value: Option<&str>| {
                    let parse = |v: &str| v.trim().parse::<u64>();
                    value
                        .map(|v| parse(v).map_err(|_| ChunkListError::Field { name, value: v.to_string() }))
                        .transpose()
                };
                let offset = field("offset", text.offset.as_deref())?;
                let (Some(offset), Some(length)) = (offset, field("nBytes", text.n_bytes.as_deref())?) else {
                    return Err(ChunkListError::NoOffset);
                };
                (offset, length)
            }
        };
        let href = match text.href.as_deref() {
            Some(href) => self.intern(href),
            None => 0,
        };
        self.records.push(Record { offset, length, start, rank, href });
        Ok(())
    }

    /// `[i,j,k]` appended to `coords`; its number of coordinates.
    fn position(&mut self, text: &str) -> Result<u32, ChunkListError> {
        let bad = || ChunkListError::Position(text.to_string());
        let inner = text.trim().strip_prefix('[').and_then(|t| t.strip_suffix(']')).ok_or_else(bad)?;
        if inner.trim().is_empty() {
            return Ok(0);
        }
        let mut rank = 0u32;
        for value in inner.split(',') {
            self.coords.push(value.trim().parse::<u64>().map_err(|_| bad())?);
            rank = rank.checked_add(1).filter(|&r| r != NO_POSITION).ok_or_else(bad)?;
        }
        Ok(rank)
    }

    /// The `hrefs` index (plus one) of `href`, added when new.
    fn intern(&mut self, href: &str) -> u32 {
        if let Some(&id) = self.href_ids.get(href) {
            return id;
        }
        self.hrefs.push(href.to_string());
        let id = self.hrefs.len() as u32;
        self.href_ids.insert(href.to_string(), id);
        id
    }

    /// The first problem met, if any.
    pub(super) fn error(&self) -> Option<&ChunkListError> {
        self.error.as_ref()
    }

    /// Number of chunks.
    pub(super) fn len(&self) -> usize {
        self.records.len()
    }

    /// Whether there are no chunks.
    pub(super) fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// The distinct `href`s, as [`Chunk::href`] indexes them.
    pub(super) fn hrefs(&self) -> &[String] {
        &self.hrefs
    }

    /// The first chunk.
    pub(super) fn first(&self) -> Option<Chunk<'_>> {
        self.iter().next()
    }

    /// Every chunk, in document order.
    pub(super) fn iter(&self) -> impl Iterator<Item = Chunk<'_>> + '_ {
        self.records.iter().map(|r| Chunk {
            offset: r.offset,
            length: r.length,
            position: (r.rank != NO_POSITION).then(|| &self.coords[r.start..r.start + r.rank as usize]),
            href: r.href.checked_sub(1).map(|h| h as usize),
        })
    }

    /// Drops the last coordinate of every position whose last coordinate is 0 (a netCDF `char`
    /// array's string dimension folded into its element type; any other position then fails the
    /// chunk table's checks).
    pub(super) fn drop_last_zero_coordinate(&mut self) {
        for r in &mut self.records {
            if r.rank != NO_POSITION && r.rank > 0 && self.coords[r.start + r.rank as usize - 1] == 0 {
                r.rank -= 1;
            }
        }
    }
}

/// The one byte range of a chunk's linked blocks, which must be adjacent.
fn joined<'b>(blocks: impl Iterator<Item = (Option<&'b str>, Option<&'b str>)>) -> Result<(u64, u64), ChunkListError> {
    let (mut start, mut end) = (None::<u64>, 0u64);
    for (offset, length) in blocks {
        let number = |v: Option<&str>| v.and_then(|v| v.trim().parse::<u64>().ok());
        let (Some(offset), Some(length)) = (number(offset), number(length)) else {
            return Err(ChunkListError::Block);
        };
        if start.is_some() && offset != end {
            return Err(ChunkListError::Apart);
        }
        start.get_or_insert(offset);
        end = offset.checked_add(length).ok_or(ChunkListError::BlockEnd)?;
    }
    let offset = start.unwrap_or(0);
    Ok((offset, end - offset))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text<'a>(offset: &'a str, n_bytes: &'a str, position: Option<&'a str>, href: Option<&'a str>) -> ChunkText<'a> {
        ChunkText {
            offset: Some(offset.into()),
            n_bytes: Some(n_bytes.into()),
            position: position.map(Cow::from),
            href: href.map(Cow::from),
        }
    }

    const NO_BLOCKS: Option<std::iter::Empty<(Option<&str>, Option<&str>)>> = None;

    #[test]
    fn keeps_positions_and_interns_hrefs() {
        let mut list = ChunkList::default();
        list.push(&text("10", "5", Some("[0, 4]"), None), NO_BLOCKS);
        list.push(&text(" 20 ", "6", Some("[]"), Some("a.h5")), NO_BLOCKS);
        list.push(&text("30", "7", None, Some("a.h5")), NO_BLOCKS);
        let blocks = [(Some("40"), Some("2")), (Some("42"), Some("3"))];
        list.push(&text("0", "0", Some("[3,0]"), Some("b.h5")), Some(blocks.into_iter()));
        assert_eq!(list.error(), None);
        let chunks: Vec<Chunk<'_>> = list.iter().collect();
        assert_eq!(chunks[0], Chunk { offset: 10, length: 5, position: Some(&[0, 4]), href: None });
        assert_eq!(chunks[1], Chunk { offset: 20, length: 6, position: Some(&[]), href: Some(0) });
        assert_eq!(chunks[2], Chunk { offset: 30, length: 7, position: None, href: Some(0) });
        assert_eq!(chunks[3], Chunk { offset: 40, length: 5, position: Some(&[3, 0]), href: Some(1) });
        assert_eq!(list.hrefs(), ["a.h5", "b.h5"]);
        list.drop_last_zero_coordinate();
        assert_eq!(
            list.iter().map(|c| c.position).collect::<Vec<_>>(),
            [Some(&[0, 4][..]), Some(&[]), None, Some(&[3])]
        );
    }

    #[test]
    fn keeps_the_first_problem() {
        let mut list = ChunkList::default();
        list.push(&text("1", "2", Some("[1,x]"), None), NO_BLOCKS);
        list.push(&text("-1", "2", None, None), NO_BLOCKS);
        assert!(list.error().unwrap().to_string().contains("chunkPositionInArray"), "{:?}", list.error());
        assert!(list.is_empty());
        let mut list = ChunkList::default();
        list.push(&ChunkText { offset: Some("1".into()), ..ChunkText::default() }, NO_BLOCKS);
        assert!(list.error().unwrap().to_string().contains("without offset and nBytes"));
        let mut list = ChunkList::default();
        let apart = [(Some("0"), Some("2")), (Some("5"), Some("3"))];
        list.push(&text("0", "0", None, None), Some(apart.into_iter()));
        assert!(list.error().unwrap().to_string().contains("not adjacent"));
        let mut list = ChunkList::default();
        list.push(&text("0", "0", None, None), Some([(Some("1"), None)].into_iter()));
        assert!(list.error().unwrap().to_string().contains("dmrpp:block without"));
    }
}
