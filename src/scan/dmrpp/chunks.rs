//! A variable's storage as its DMR++ describes it (input: the variable's `dmrpp:*` children; output:
//! [`Storage`]), and a chunked variable's chunk table.
//!
//! `<dmrpp:chunks compressionType="shuffle deflate" deflateLevel="4" fillValue=".." byteOrder="LE">`
//! lists the HDF5 filters in pipeline (encode) order, repeats allowed ("deflate deflate"); then
//! `<dmrpp:chunkDimensionSizes>` (chunked layout only) and one `<dmrpp:chunk offset nBytes
//! chunkPositionInArray="[i,j]">` per stored chunk, the position being the element index of the
//! chunk's origin. A chunk may name its own file (`href`, BES's "missing variables" file) and may
//! consist of `<dmrpp:block offset nBytes>` runs (HDF4 linked blocks), referenced as one range only
//! when they are adjacent. `<dmrpp:compact>` holds the data itself (base64), `<dmrpp:vlsa>` the
//! strings of a variable-length string array (`<v c="repeat" s="size">`, `s` meaning zlib-compressed
//! base64 text), `<dmrpp:FixedLengthStringArray string_length pad>` a fixed-length string type,
//! `<dmrpp:specialstructuredata>` the elements of a structure with string members (base64).
//!
//! Every count comes from untrusted text and is checked before anything is sized by it.

use super::chunk_list::{ChunkList, ChunkListError};
use super::files::FilesError;
use super::xml::Element;
use crate::codec::Endian;
use crate::dataset::ChunkTable;
use crate::grid::ChunkGrid;
use crate::manifest::ChunkEntry;

/// Most strings a `dmrpp:vlsa` may expand to (the reader's limit for `string` arrays).
const MAX_STRINGS: u64 = crate::metadata::MAX_STRING_ELEMENTS;
/// Most bytes of text one variable's strings may hold.
const MAX_STRING_BYTES: u64 = 256 << 20;

/// What `<dmrpp:chunks>` says, and the chunks it lists.
#[derive(Debug, Default, Clone)]
pub(super) struct ChunksInfo {
    /// Filter names in pipeline order.
    pub(super) filters: Vec<String>,
    pub(super) deflate_level: Option<u32>,
    pub(super) fill: Option<String>,
    pub(super) byte_order: Option<Endian>,
    /// `chunkDimensionSizes`, for a chunked layout.
    pub(super) chunk_shape: Option<Vec<u64>>,
    /// `structOffset`: the offsets of a structure's members after the first, then its size.
    pub(super) struct_offsets: Option<Vec<u64>>,
    /// The chunks, as the parser listed them (`dmrpp/chunk_list`).
    pub(super) chunks: ChunkList,
}

/// How a variable's values are stored.
#[derive(Debug)]
pub(super) enum Storage {
    /// In chunks of the data file (chunked, or contiguous when `chunk_shape` is `None`).
    Chunks(ChunksInfo),
    /// In the sidecar: compact data (or BES's missing data), and the `dmrpp:chunks` attributes.
    Inline(ChunksInfo, Vec<u8>),
    /// A variable-length string array's strings, in row-major order.
    Strings(Vec<String>),
    /// A structure with string members: its elements as BES writes them into the sidecar
    /// (`dmrpp:specialstructuredata`, decoded from base64; `dmrpp/special_struct` reads them).
    Structure(Vec<u8>),
    /// HDF4 linked blocks that are not adjacent (offset, length each, in order), which no one byte
    /// range holds: read from the data file into the store.
    Blocks(ChunksInfo, Vec<(u64, u64)>),
    /// Something vzarr cannot reference, and why.
    Unsupported(String),
}

/// Why a variable's storage cannot be read from its sidecar.
#[derive(Debug, thiserror::Error)]
pub(super) enum ChunksError {
    /// Inline data that is not base64.
    #[error("{0} is not base64")]
    NotBase64(&'static str),
    /// A number attribute that does not parse.
    #[error("{name} {text:?}")]
    Number {
        /// The attribute.
        name: &'static str,
        /// Its text.
        text: String,
    },
    /// A byte order other than `LE` and `BE`.
    #[error("byteOrder {0:?}")]
    ByteOrder(String),
    /// A chunk shape with a zero.
    #[error("chunkDimensionSizes {0:?} has a zero")]
    ZeroChunk(Vec<u64>),
    /// A chunk of the list does not parse.
    #[error("{0}")]
    List(#[source] ChunkListError),
    /// More strings than one variable may hold.
    #[error("more than {MAX_STRINGS} strings")]
    TooManyStrings,
    /// A repeat count that does not parse.
    #[error("vlsa repeat count {0:?}")]
    Repeat(String),
    /// More strings listed than the variable has elements.
    #[error("dmrpp:vlsa lists more strings than the variable's {0} elements")]
    MoreStrings(u64),
    /// A string size that does not parse.
    #[error("vlsa size {0:?}")]
    VlsaSize(String),
    /// A compressed string that is not base64.
    #[error("a vlsa string that is not base64")]
    VlsaBase64,
    /// A string that is not UTF-8.
    #[error("a vlsa string that is not UTF-8")]
    VlsaUtf8,
    /// More bytes of strings than one variable may hold.
    #[error("more than {MAX_STRING_BYTES} bytes of strings")]
    TooManyBytes,
    /// Another number of strings than elements.
    #[error("dmrpp:vlsa lists {total} strings for {count} elements")]
    Count {
        /// Strings listed.
        total: u64,
        /// The variable's elements.
        count: u64,
    },
    /// Inline data that does not inflate.
    #[error("inflating inline data: {0}")]
    Inflate(#[source] std::io::Error),
    /// Inline data inflating past the limit.
    #[error("inline data inflates past {0} bytes")]
    InflatesPast(u64),
    /// One of several chunks without a position.
    #[error("chunk {0} has no chunkPositionInArray")]
    NoPosition(usize),
    /// A position of another rank than the array's.
    #[error("chunk {k}: position {origin:?} has {} coordinates, the array {rank}", origin.len())]
    Coordinates {
        /// The chunk's index in the list.
        k: usize,
        /// Its position.
        origin: Vec<u64>,
        /// The array's rank.
        rank: usize,
    },
    /// A position that is no chunk origin inside the shape.
    #[error("chunk {k}: position {origin:?} is not a chunk origin inside shape {shape:?}")]
    NotOrigin {
        /// The chunk's index in the list.
        k: usize,
        /// Its position.
        origin: Vec<u64>,
        /// The array's shape.
        shape: Vec<u64>,
    },
    /// A position listed twice.
    #[error("chunk {k}: position {origin:?} is listed twice")]
    Twice {
        /// The chunk's index in the list.
        k: usize,
        /// Its position.
        origin: Vec<u64>,
    },
    /// The file a chunk lies in cannot be used.
    #[error("{0}")]
    Source(#[from] FilesError),
}

/// The storage of variable `element` holding `count` elements (`None`: more than fit in 64 bits).
pub(super) fn storage(element: &Element, count: Option<u64>) -> Result<Storage, ChunksError> {
    if let Some(vlsa) = element.child("dmrpp:vlsa") {
        return strings(vlsa, count).map(Storage::Strings);
    }
    if let Some(data) = element.child("dmrpp:specialstructuredata") {
        let text: String = data.text.split_whitespace().collect();
        let name = "dmrpp:specialstructuredata";
        return crate::base64::decode(&text).map(Storage::Structure).ok_or(ChunksError::NotBase64(name));
    }
    // Older sidecars (BES's `d_int.h5.dmrpp`) list `<dmrpp:chunk>` in the variable itself.
    let bare = element.child("dmrpp:chunks").is_none() && element.child("dmrpp:chunk").is_some();
    let info = match element.child("dmrpp:chunks") {
        Some(chunks) => {
            let info = chunks_info(chunks)?;
            if let Some(blocks) = linked_blocks(chunks, &info)? {
                return Ok(blocks);
            }
            info
        }
        None if bare => {
            let mut info = chunks_info(element)?;
            let mut list = ChunkList::default();
            element.children_named("dmrpp:chunk").for_each(|chunk| super::xml::list_chunk(&mut list, chunk));
            if let Some(why) = list.error() {
                return Err(ChunksError::List(why.clone()));
            }
            info.chunks = list;
            info
        }
        None => ChunksInfo::default(),
    };
    for name in ["dmrpp:compact", "dmrpp:missingdata"] {
        if let Some(inline) = element.child(name) {
            let text: String = inline.text.split_whitespace().collect();
            let bytes = crate::base64::decode(&text).ok_or(ChunksError::NotBase64(name))?;
            // Missing data (BES's values of variables the file lacks) is zlib-compressed when it helps.
            let bytes = match name {
                "dmrpp:missingdata" => inflate_bounded(&bytes, MAX_STRING_BYTES).unwrap_or(bytes),
                _ => bytes,
            };
            return Ok(Storage::Inline(info, bytes));
        }
    }
    if element.child("dmrpp:chunks").is_none() && !bare {
        return Ok(Storage::Unsupported("no dmrpp:chunks, dmrpp:compact or dmrpp:vlsa: no storage described".into()));
    }
    Ok(Storage::Chunks(info))
}

/// The attributes and chunks of `<dmrpp:chunks>`.
fn chunks_info(element: &Element) -> Result<ChunksInfo, ChunksError> {
    let number = |name: &'static str, text: &str| {
        text.trim().parse::<u64>().map_err(|_| ChunksError::Number { name, text: text.to_string() })
    };
    let mut info = ChunksInfo {
        filters: element.attr("compressionType").unwrap_or("").split_whitespace().map(str::to_string).collect(),
        fill: element.attr("fillValue").map(str::to_string),
        ..ChunksInfo::default()
    };
    if let Some(level) = element.attr("deflateLevel") {
        info.deflate_level = Some(number("deflateLevel", level)?.min(9) as u32);
    }
    info.byte_order = match element.attr("byteOrder") {
        None => None,
        Some("LE") => Some(Endian::Little),
        Some("BE") => Some(Endian::Big),
        Some(other) => return Err(ChunksError::ByteOrder(other.to_string())),
    };
    if let Some(offsets) = element.attr("structOffset") {
        info.struct_offsets =
            Some(offsets.split_whitespace().map(|o| number("structOffset", o)).collect::<Result<_, _>>()?);
    }
    if let Some(sizes) = element.child("dmrpp:chunkDimensionSizes") {
        let shape: Vec<u64> =
            sizes.text.split_whitespace().map(|s| number("chunkDimensionSizes", s)).collect::<Result<_, _>>()?;
        if shape.contains(&0) {
            return Err(ChunksError::ZeroChunk(shape));
        }
        info.chunk_shape = Some(shape);
    }
    if let Some(chunks) = &element.chunks {
        if let Some(why) = chunks.error() {
            return Err(ChunksError::List(why.clone()));
        }
        info.chunks = ChunkList::clone(chunks);
    }
    Ok(info)
}

/// BES's HDF4 linked blocks listed in `dmrpp:chunks` itself (`info` its attributes): one chunk of
/// the whole array when adjacent, else [`Storage::Blocks`]; None when there are none.
fn linked_blocks(element: &Element, info: &ChunksInfo) -> Result<Option<Storage>, ChunksError> {
    if !info.chunks.is_empty() || element.child("dmrpp:block").is_none() {
        return Ok(None);
    }
    let mut blocks = Vec::new();
    for block in element.children_named("dmrpp:block") {
        let number = |name: &'static str| {
            let text = block.attr(name).unwrap_or_default();
            text.trim().parse::<u64>().map_err(|_| ChunksError::Number { name, text: text.to_string() })
        };
        blocks.push((number("offset")?, number("nBytes")?));
    }
    let adjacent = blocks.windows(2).all(|w| w[0].0.checked_add(w[0].1) == Some(w[1].0));
    if !adjacent {
        return Ok(Some(Storage::Blocks(info.clone(), blocks)));
    }
    let mut list = ChunkList::default();
    super::xml::list_chunk(&mut list, element);
    if let Some(why) = list.error() {
        return Err(ChunksError::List(why.clone()));
    }
    Ok(Some(Storage::Chunks(ChunksInfo { chunks: list, ..info.clone() })))
}

/// The strings of `<dmrpp:vlsa>`, expanded (`c` repeats), checked against `count` before any is.
fn strings(vlsa: &Element, count: Option<u64>) -> Result<Vec<String>, ChunksError> {
    let count = count.filter(|&c| c <= MAX_STRINGS).ok_or(ChunksError::TooManyStrings)?;
    let mut total = 0u64;
    let mut bytes = 0u64;
    let mut out = Vec::new();
    for v in vlsa.children_named("v") {
        let repeat = match v.attr("c") {
            Some(c) => c.trim().parse::<u64>().map_err(|_| ChunksError::Repeat(c.to_string()))?,
            None => 1,
        };
        total = total.checked_add(repeat).filter(|&t| t <= count).ok_or(ChunksError::MoreStrings(count))?;
        let text = match v.attr("s") {
            Some(size) => {
                let size = size.trim().parse::<u64>().map_err(|_| ChunksError::VlsaSize(size.to_string()))?;
                let raw = crate::base64::decode(v.text.trim()).ok_or(ChunksError::VlsaBase64)?;
                let inflated = inflate_bounded(&raw, size.min(MAX_STRING_BYTES))?;
                String::from_utf8(inflated).map_err(|_| ChunksError::VlsaUtf8)?
            }
            None => v.text.clone(),
        };
        bytes = bytes.saturating_add((text.len() as u64).saturating_mul(repeat));
        if bytes > MAX_STRING_BYTES {
            return Err(ChunksError::TooManyBytes);
        }
        out.extend(std::iter::repeat_n(text, repeat as usize));
    }
    if total != count {
        return Err(ChunksError::Count { total, count });
    }
    Ok(out)
}

/// A zlib stream inflated, refusing more than `limit` bytes of output.
fn inflate_bounded(bytes: &[u8], limit: u64) -> Result<Vec<u8>, ChunksError> {
    use std::io::Read;
    let mut out = Vec::new();
    let mut decoder = flate2::read::ZlibDecoder::new(bytes).take(limit.saturating_add(1));
    decoder.read_to_end(&mut out).map_err(ChunksError::Inflate)?;
    if out.len() as u64 > limit {
        return Err(ChunksError::InflatesPast(limit));
    }
    Ok(out)
}

/// The chunk table of a chunked variable of `grid` (chunk shape `chunk_shape`) from its listed
/// chunks; `source_of` gives a chunk's source id from its `href` (asked once per distinct `href`).
/// Positions must have one coordinate per dimension (trailing zeros beyond it are accepted, as BES
/// accepts them), lie inside the array, on a chunk boundary, once each.
pub(super) fn chunk_table(
    grid: &ChunkGrid,
    chunk_shape: &[u64],
    mut table: ChunkTable,
    chunks: &ChunkList,
    source_of: &mut dyn FnMut(Option<&str>) -> Result<u32, FilesError>,
) -> Result<ChunkTable, ChunksError> {
    let shape = grid.shape();
    let zeros = vec![0; shape.len()];
    let mut coords = Vec::with_capacity(shape.len());
    // One id per distinct href: as many as the sidecar names, not sized by any count it gives.
    let mut sources: Vec<Option<u32>> = vec![None; chunks.hrefs().len()];
    let data_file = source_of(None)?;
    for (k, chunk) in chunks.iter().enumerate() {
        let origin = match chunk.position {
            Some(p) => p,
            None if chunks.len() == 1 => &zeros,
            None => return Err(ChunksError::NoPosition(k)),
        };
        // BES reads a position by its leading coordinates: extra ones are accepted when all zero
        // (BES's own `t_string_chunk.h5` sidecar lists `[14,0]` for a 1-D array), never otherwise.
        let extra_zeros = origin.get(shape.len()..).is_some_and(|rest| rest.iter().all(|&o| o == 0));
        if origin.len() < shape.len() || !extra_zeros {
            let (origin, rank) = (origin.to_vec(), shape.len());
            return Err(ChunksError::Coordinates { k, origin, rank });
        }
        let origin = &origin[..shape.len()];
        let outside = origin.iter().zip(&shape).zip(chunk_shape).any(|((&o, &n), &c)| o >= n || o % c != 0);
        if outside {
            return Err(ChunksError::NotOrigin { k, origin: origin.to_vec(), shape: shape.clone() });
        }
        coords.clear();
        coords.extend(origin.iter().zip(chunk_shape).map(|(o, c)| o / c));
        let linear = grid.linear_index(&coords) as usize;
        if table.get(linear) != Some(ChunkEntry::Missing) {
            return Err(ChunksError::Twice { k, origin: origin.to_vec() });
        }
        let source = match chunk.href {
            None => data_file,
            Some(h) => match sources[h] {
                Some(id) => id,
                None => *sources[h].insert(source_of(Some(&chunks.hrefs()[h]))?),
            },
        };
        table.set(linear, ChunkEntry::Source { source, offset: chunk.offset, length: chunk.length });
    }
    Ok(table)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(xml: &str) -> Element {
        super::super::xml::parse(xml.as_bytes()).unwrap()
    }

    #[test]
    fn blocks_in_the_chunks_element_are_one_piece_or_read_each() {
        let blocks = |second: u64| {
            parse(&format!(
                r#"<Int32><dmrpp:chunks byteOrder="BE"><dmrpp:block offset="100" nBytes="40"/><dmrpp:block offset="{second}" nBytes="8"/></dmrpp:chunks></Int32>"#
            ))
        };
        let Storage::Chunks(info) = storage(&blocks(140), Some(12)).unwrap() else { panic!() };
        let chunks: Vec<(u64, u64)> = info.chunks.iter().map(|c| (c.offset, c.length)).collect();
        assert_eq!(chunks, [(100, 48)]);
        // Apart: each block, to be read from the data file (never the fill value).
        let Storage::Blocks(_, apart) = storage(&blocks(500), Some(12)).unwrap() else { panic!() };
        assert_eq!(apart, [(100, 40), (500, 8)]);
    }

    #[test]
    fn chunks_attributes_and_positions() {
        let v = parse(
            r#"<Int32><dmrpp:chunks compressionType="shuffle deflate deflate fletcher32" deflateLevel="4" fillValue="-1" byteOrder="BE">
            <dmrpp:chunkDimensionSizes>3 4</dmrpp:chunkDimensionSizes>
            <dmrpp:chunk offset="10" nBytes="5" chunkPositionInArray="[0,4]"/>
            <dmrpp:chunk offset="20" nBytes="5" chunkPositionInArray="[3,0]"><dmrpp:block offset="20" nBytes="2"/><dmrpp:block offset="22" nBytes="3"/></dmrpp:chunk>
            </dmrpp:chunks></Int32>"#,
        );
        let Storage::Chunks(info) = storage(&v, Some(48)).unwrap() else { panic!() };
        assert_eq!(info.filters, ["shuffle", "deflate", "deflate", "fletcher32"]);
        assert_eq!(
            (info.deflate_level, info.byte_order, info.fill.as_deref()),
            (Some(4), Some(Endian::Big), Some("-1"))
        );
        assert_eq!(info.chunk_shape, Some(vec![3, 4]));
        assert_eq!(info.chunks.iter().nth(1).map(|c| c.length), Some(5));
        let grid = ChunkGrid::regular(&[6, 8], &[3, 4]).unwrap();
        let table = chunk_table(&grid, &[3, 4], ChunkTable::missing(4), &info.chunks, &mut |_| Ok(0)).unwrap();
        assert_eq!(table.get(1), Some(ChunkEntry::Source { source: 0, offset: 10, length: 5 }));
        assert_eq!(table.get(2), Some(ChunkEntry::Source { source: 0, offset: 20, length: 5 }));
        assert_eq!(table.get(0), Some(ChunkEntry::Missing));
    }

    #[test]
    fn missing_data_is_inflated_when_compressed() {
        use std::io::Write;
        let values: Vec<u8> = (0..16u8).collect();
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        z.write_all(&values).unwrap();
        for encoded in [z.finish().unwrap(), values.clone()] {
            let xml =
                format!("<UInt8><dmrpp:missingdata>{}</dmrpp:missingdata></UInt8>", crate::base64::encode(&encoded));
            let Storage::Inline(_, bytes) = storage(&parse(&xml), Some(16)).unwrap() else { panic!() };
            assert_eq!(bytes, values);
        }
    }

    #[test]
    fn bad_positions_and_counts_are_refused() {
        let grid = ChunkGrid::regular(&[6], &[3]).unwrap();
        let list = |positions: &[&str]| {
            let chunks: String = positions
                .iter()
                .map(|p| format!(r#"<dmrpp:chunk offset="0" nBytes="1" chunkPositionInArray="{p}"/>"#))
                .collect();
            let v = parse(&format!("<Int32><dmrpp:chunks>{chunks}</dmrpp:chunks></Int32>"));
            let Storage::Chunks(info) = storage(&v, Some(6)).unwrap() else { panic!() };
            info.chunks
        };
        for bad in ["[6]", "[1]", "[0,1]", "[]", &format!("[{}]", u64::MAX)] {
            let err = chunk_table(&grid, &[3], ChunkTable::missing(2), &list(&[bad]), &mut |_| Ok(0))
                .unwrap_err()
                .to_string();
            assert!(err.contains("position"), "{err}");
        }
        // Trailing zero coordinates are read as BES reads them: by the leading ones.
        let table = chunk_table(&grid, &[3], ChunkTable::missing(2), &list(&["[3,0]", "[0,0,0]"]), &mut |_| Ok(0));
        let table = table.unwrap();
        assert!((0..2).all(|i| matches!(table.get(i), Some(ChunkEntry::Source { .. }))));
        let twice = list(&["[3]", "[3]"]);
        assert!(chunk_table(&grid, &[3], ChunkTable::missing(2), &twice, &mut |_| Ok(0))
            .unwrap_err()
            .to_string()
            .contains("twice"));
        let bad = parse(r#"<Int32><dmrpp:chunks><dmrpp:chunk offset="x" nBytes="1"/></dmrpp:chunks></Int32>"#);
        assert!(storage(&bad, Some(6)).unwrap_err().to_string().contains("chunk offset"));
        let v = parse(r#"<String><dmrpp:vlsa><v c="99999999999999">a</v></dmrpp:vlsa></String>"#);
        assert!(storage(&v, Some(4)).unwrap_err().to_string().contains("more strings"));
        let v = parse(r#"<String><dmrpp:vlsa><v c="3">a</v><v>b</v></dmrpp:vlsa></String>"#);
        let Storage::Strings(s) = storage(&v, Some(4)).unwrap() else { panic!() };
        assert_eq!(s, ["a", "a", "a", "b"]);
    }
}
