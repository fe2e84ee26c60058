//! One `refs.<N>.parq` file of a kerchunk Parquet reference set decoded into chunk entries.
//!
//! Columns are found by name (`path`, `offset`, `size`, `raw`; fastparquet and pyarrow order them
//! alike, but nothing requires it), in any number of row groups, plain or dictionary-encoded
//! (`path` as pandas categoricals), nullable or not. `offset` and `size` may be absent (a set of
//! inline chunks only) and then read as 0. Untrusted: the file's own row count is checked against
//! what the caller allows before any row is decoded, and every buffer grows only with decoded rows.
//! No page is decompressed before every page header of the columns read has been summed
//! (`read/pages`): a column may decompress to what its rows can hold (a `raw` cell at most the
//! array's largest chunk, [`Limits::max_cell`]), so a small file declaring a page of 1 GiB is
//! refused, never allocated.
//!
//! Column at a time, for speed (a reference set holds up to 10^7 rows and more): `offset` and
//! `size` decoded whole, `raw` kept only where not null, then `path` decoded a batch at a time
//! straight into the entries. A row's URL is resolved to the file's own URL index once per run of
//! rows naming the same URL (a dictionary-encoded column gives them the same bytes), never copied.

use std::collections::HashMap;

use bytes::Bytes;
use parquet::basic::Type as PhysicalType;
use parquet::column::reader::{ColumnReader, ColumnReaderImpl};
use parquet::data_type::{ByteArray, ByteArrayType, DataType, Int64Type};
use parquet::errors::ParquetError;
use parquet::file::reader::{FileReader, SerializedFileReader};

use crate::manifest::ChunkEntry;

/// Rows decoded per call.
const BATCH: usize = 4096;

/// Longest path a row may give (a signed URL is a few KiB).
const MAX_PATH: u64 = 64 << 10;

/// What the caller allows a record file.
#[derive(Debug, Clone, Copy)]
pub(super) struct Limits {
    /// Most rows (the record size of `.zmetadata`).
    pub(super) max_rows: usize,
    /// Rows that must not reference a whole file.
    pub(super) needed: usize,
    /// Longest `raw` cell: the array's largest chunk, stored, as its metadata declares it.
    pub(super) max_cell: u64,
}

/// A record file's rows as chunk entries, numbered within the file: a `Source` entry's `source` is
/// an index into `urls`, an `Owned` entry's `offset` one into `inline`.
#[derive(Debug, Default)]
pub(super) struct RecordRows {
    /// One entry per row, in row order.
    pub(super) entries: Vec<ChunkEntry>,
    /// The distinct URLs, in order of first use (valid UTF-8).
    pub(super) urls: Vec<String>,
    /// The inline chunks' bytes.
    pub(super) inline: Vec<Bytes>,
}

/// Why a record file's rows are refused ([`rows`]).
#[derive(Debug, thiserror::Error)]
pub(super) enum RowsError {
    /// The `parquet` crate panicked on a page.
    #[error("a corrupt page the Parquet decoder cannot read")]
    CorruptPage,
    /// Not a Parquet file.
    #[error("not a Parquet file: {0}")]
    NotParquet(#[source] ParquetError),
    /// A negative row count.
    #[error("a negative row count")]
    NegativeCount,
    /// More rows than a record file holds.
    #[error("{count} rows, more than the record size {max_rows} of .zmetadata")]
    TooManyRows {
        /// Rows in the file.
        count: usize,
        /// The record size.
        max_rows: usize,
    },
    /// Neither reference column.
    #[error("no \"path\" or \"raw\" column: not kerchunk references")]
    NoColumns,
    /// A column of another physical type.
    #[error("column {name:?} is {found}, not {kind}")]
    ColumnType {
        /// The column.
        name: String,
        /// Its type.
        found: PhysicalType,
        /// The type it must have.
        kind: PhysicalType,
    },
    /// A row that is not a valid reference.
    #[error("row {row}: {problem}")]
    Row {
        /// The row.
        row: usize,
        /// What is wrong with it.
        problem: RowProblem,
    },
    /// A column chunk whose pages lie outside the file.
    #[error("row group {group}, column {column}: pages at {start}, {len} bytes, outside the file's {file_len} bytes")]
    Pages {
        /// The row group.
        group: usize,
        /// The column's path.
        column: String,
        /// The pages' first byte.
        start: i64,
        /// Their length.
        len: i64,
        /// The file's length.
        file_len: usize,
    },
    /// A column chunk whose pages would decompress to more than its rows can hold.
    #[error("row group {group}, column {column}: {source}")]
    PageSizes {
        /// The row group.
        group: usize,
        /// The column's path.
        column: String,
        /// What its page headers declare.
        source: super::pages::PagesError,
    },
    /// A `raw` cell longer than the array's largest chunk.
    #[error("row {row}: a raw cell of {len} bytes, more than the {max_cell} the array's largest chunk may take")]
    LongCell {
        /// The row.
        row: usize,
        /// Its length.
        len: usize,
        /// The most allowed.
        max_cell: u64,
    },
    /// A column whose values do not read.
    #[error("column {name:?}: {problem}")]
    Column {
        /// The column.
        name: String,
        /// What is wrong with it.
        problem: ColumnProblem,
    },
}

/// What is wrong with a row ([`RowsError::Row`]).
#[derive(Debug, thiserror::Error)]
pub(super) enum RowProblem {
    /// A path that is not UTF-8.
    #[error("a path that is not UTF-8")]
    NotUtf8,
    /// More distinct paths than source ids.
    #[error("more than 2^32 paths")]
    TooManyPaths,
    /// A negative offset or size.
    #[error("a negative offset or size ({offset}, {size})")]
    Negative {
        /// The offset.
        offset: i64,
        /// The size.
        size: i64,
    },
    /// A reference with no byte range where a chunk is needed.
    #[error("a reference to a whole file, with no byte range")]
    WholeFile,
}

/// What is wrong with a column's values ([`RowsError::Column`]).
#[derive(Debug, thiserror::Error)]
pub(super) enum ColumnProblem {
    /// The `parquet` crate's error.
    #[error("{0}")]
    Parquet(#[source] ParquetError),
    /// A reader of another physical type.
    #[error("an unexpected physical type")]
    PhysicalType,
    /// More values than rows.
    #[error("more values than its {count} rows")]
    MoreValues {
        /// The file's rows.
        count: usize,
    },
    /// Fewer values than definition levels.
    #[error("fewer values than levels")]
    FewerValues,
    /// Another number of values than rows.
    #[error("{values} values for {count} rows")]
    Count {
        /// Values read.
        values: usize,
        /// The file's rows.
        count: usize,
    },
}

/// The rows of the Parquet file `bytes`, at most `limits.max_rows` of them; the first
/// `limits.needed` must not reference a whole file (`size` 0 at offset 0).
///
/// # Errors
/// [`RowsError`]: not Parquet, a column missing or of the wrong type, more rows than allowed,
/// pages declaring more than their rows can hold, a `raw` cell longer than the array's largest
/// chunk, undecodable pages, or a row that is not a valid reference (`row N: ...`).
pub(super) fn rows(bytes: Bytes, limits: Limits) -> Result<RecordRows, RowsError> {
    // The `parquet` crate panics on some corrupt pages (a byte array's length prefix cut short, found
    // by the kerchunk-parquet fuzz target): contained here as an error. Nothing outlives the call.
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| decode_rows(bytes, limits)))
        .unwrap_or(Err(RowsError::CorruptPage))
}

/// [`rows`], which the `parquet` crate may panic in.
fn decode_rows(bytes: Bytes, limits: Limits) -> Result<RecordRows, RowsError> {
    let Limits { max_rows, needed, max_cell } = limits;
    let file_len = bytes.len();
    let reader = SerializedFileReader::new(bytes.clone()).map_err(RowsError::NotParquet)?;
    check_column_chunks(&reader, file_len)?;
    check_page_sizes(&reader, &bytes, max_cell)?;
    let metadata = reader.metadata().file_metadata();
    let count = usize::try_from(metadata.num_rows()).map_err(|_| RowsError::NegativeCount)?;
    if count > max_rows {
        return Err(RowsError::TooManyRows { count, max_rows });
    }
    let schema = metadata.schema_descr();
    let find = |name: &str| (0..schema.num_columns()).find(|&i| schema.column(i).name() == name);
    let (path, raw) = (find("path"), find("raw"));
    if path.is_none() && raw.is_none() {
        return Err(RowsError::NoColumns);
    }
    let column = |index: Option<usize>, name: &str, kind: PhysicalType| -> Result<Option<Column>, RowsError> {
        let Some(index) = index else { return Ok(None) };
        let found = schema.column(index).physical_type();
        if found != kind {
            return Err(RowsError::ColumnType { name: name.into(), found, kind });
        }
        let max_def = schema.column(index).max_def_level();
        Ok(Some(Column { reader: &reader, index, max_def, count, name: name.to_string() }))
    };
    let path = column(path, "path", PhysicalType::BYTE_ARRAY)?;
    let offsets = column(find("offset"), "offset", PhysicalType::INT64)?.map(|c| c.ints()).transpose()?;
    let sizes = column(find("size"), "size", PhysicalType::INT64)?.map(|c| c.ints()).transpose()?;
    let mut out = RecordRows::default();
    // `raw` first: a row with inline bytes is inline whatever its `path` says.
    let mut raws: Vec<Option<u32>> = Vec::new();
    if let Some(raw) = column(raw, "raw", PhysicalType::BYTE_ARRAY)? {
        raw.bytes(|row, value| {
            if let Some(v) = value.filter(|v| v.len() as u64 > max_cell) {
                return Err(RowsError::LongCell { row, len: v.len(), max_cell });
            }
            raws.push(value.map(|v| {
                out.inline.push(Bytes::copy_from_slice(v.data()));
                out.inline.len() as u32 - 1
            }));
            Ok(())
        })?;
    }
    let int = |values: &Option<Vec<i64>>, i: usize| values.as_ref().map_or(0, |v| v[i]);
    let mut urls = UrlIndex::default();
    let mut entry = |i: usize, url: Option<&ByteArray>| -> Result<ChunkEntry, RowsError> {
        if let Some(k) = raws.get(i).copied().flatten() {
            let length = out.inline[k as usize].len() as u64;
            return Ok(ChunkEntry::Owned { offset: u64::from(k), length });
        }
        let Some(url) = url else { return Ok(ChunkEntry::Missing) };
        let source = urls.id(url, &mut out.urls).map_err(|problem| RowsError::Row { row: i, problem })?;
        let (offset, size) = (int(&offsets, i), int(&sizes, i));
        if offset < 0 || size < 0 {
            return Err(RowsError::Row { row: i, problem: RowProblem::Negative { offset, size } });
        }
        if offset == 0 && size == 0 && i < needed {
            return Err(RowsError::Row { row: i, problem: RowProblem::WholeFile });
        }
        Ok(ChunkEntry::Source { source, offset: offset as u64, length: size as u64 })
    };
    let mut entries = Vec::new();
    match path {
        Some(path) => path.bytes(|i, value| {
            entries.push(entry(i, value)?);
            Ok(())
        })?,
        None => (0..count).try_for_each(|i| entry(i, None).map(|e| entries.push(e)))?,
    }
    out.entries = entries;
    Ok(out)
}

/// The file's URLs by their bytes; the last one met is recognised by its address (a dictionary
/// page's value shared by every row naming it), else by its bytes.
#[derive(Default)]
struct UrlIndex {
    last: Option<(usize, usize, u32)>,
    ids: HashMap<Vec<u8>, u32>,
}

impl UrlIndex {
    fn id(&mut self, url: &ByteArray, urls: &mut Vec<String>) -> Result<u32, RowProblem> {
        let data = url.data();
        let key = (data.as_ptr() as usize, data.len());
        if let Some((ptr, len, id)) = self.last {
            if (ptr, len) == key {
                return Ok(id);
            }
        }
        let id = match self.ids.get(data) {
            Some(&id) => id,
            None => {
                let text = std::str::from_utf8(data).map_err(|_| RowProblem::NotUtf8)?;
                let id = u32::try_from(urls.len()).map_err(|_| RowProblem::TooManyPaths)?;
                urls.push(text.to_string());
                self.ids.insert(data.to_vec(), id);
                id
            }
        };
        self.last = Some((key.0, key.1, id));
        Ok(id)
    }
}

/// Every column chunk's pages lie inside the file (the `parquet` crate panics on a negative start or
/// length when it reads the chunk: found by the kerchunk-parquet fuzz target).
fn check_column_chunks(reader: &SerializedFileReader<Bytes>, file_len: usize) -> Result<(), RowsError> {
    for (g, group) in reader.metadata().row_groups().iter().enumerate() {
        for column in group.columns() {
            let start = column.dictionary_page_offset().unwrap_or(column.data_page_offset());
            let len = column.compressed_size();
            let end = start.checked_add(len).and_then(|end| usize::try_from(end).ok());
            if start < 0 || len < 0 || end.is_none_or(|end| end > file_len) {
                let column = column.column_path().to_string();
                return Err(RowsError::Pages { group: g, column, start, len, file_len });
            }
        }
    }
    Ok(())
}

/// Every page of the columns read declares no more than its rows can hold (`read/pages`): a `raw`
/// value at most `max_cell` bytes, a `path` at most [`MAX_PATH`], a number 8 (each with its length
/// or level bytes).
fn check_page_sizes(reader: &SerializedFileReader<Bytes>, file: &[u8], max_cell: u64) -> Result<(), RowsError> {
    use super::pages::Allowance;
    for (g, group) in reader.metadata().row_groups().iter().enumerate() {
        let rows = u64::try_from(group.num_rows()).map_err(|_| RowsError::NegativeCount)?;
        for column in group.columns() {
            let per_value = match column.column_descr().name() {
                "raw" => max_cell.saturating_add(5),
                "path" => MAX_PATH + 5,
                "offset" | "size" => 9,
                _ => continue,
            };
            // In the file: `check_column_chunks` has checked the range.
            let start = column.dictionary_page_offset().unwrap_or(column.data_page_offset()) as usize;
            let end = start + column.compressed_size() as usize;
            super::pages::check(file, start, end, rows, Allowance { per_value }).map_err(|source| {
                RowsError::PageSizes { group: g, column: column.column_path().to_string(), source }
            })?;
        }
    }
    Ok(())
}

/// One column of the file, `count` rows over all row groups.
struct Column<'r> {
    reader: &'r SerializedFileReader<Bytes>,
    index: usize,
    max_def: i16,
    count: usize,
    name: String,
}

impl Column<'_> {
    /// Every value of an INT64 column (nulls as 0).
    fn ints(self) -> Result<Vec<i64>, RowsError> {
        let mut out = Vec::new();
        self.each::<Int64Type>(
            |c| match c {
                ColumnReader::Int64ColumnReader(r) => Some(r),
                _ => None,
            },
            |_, value| {
                out.push(value.copied().unwrap_or(0));
                Ok(())
            },
        )?;
        Ok(out)
    }

    /// Calls `f` with each row number and value of a BYTE_ARRAY column (`None`: null).
    fn bytes(self, f: impl FnMut(usize, Option<&ByteArray>) -> Result<(), RowsError>) -> Result<(), RowsError> {
        self.each::<ByteArrayType>(
            |c| match c {
                ColumnReader::ByteArrayColumnReader(r) => Some(r),
                _ => None,
            },
            f,
        )
    }

    /// Calls `f` with each row number and value (`None`: null), exactly `count` of them, a batch of
    /// rows at a time.
    fn each<T: DataType>(
        self,
        typed: impl Fn(ColumnReader) -> Option<ColumnReaderImpl<T>>,
        mut f: impl FnMut(usize, Option<&T::T>) -> Result<(), RowsError>,
    ) -> Result<(), RowsError> {
        let Column { reader, index, max_def, count, name } = self;
        let fail = |problem: ColumnProblem| RowsError::Column { name: name.clone(), problem };
        let (mut defs, mut values) = (Vec::new(), Vec::new());
        let mut row = 0;
        for group in 0..reader.num_row_groups() {
            let group = reader.get_row_group(group).map_err(|e| fail(ColumnProblem::Parquet(e)))?;
            let column = group.get_column_reader(index).map_err(|e| fail(ColumnProblem::Parquet(e)))?;
            let mut column = typed(column).ok_or_else(|| fail(ColumnProblem::PhysicalType))?;
            loop {
                defs.clear();
                values.clear();
                let (records, _, _) = column
                    .read_records(BATCH, Some(&mut defs), None, &mut values)
                    .map_err(|e| fail(ColumnProblem::Parquet(e)))?;
                if records == 0 {
                    break;
                }
                if row + records > count {
                    return Err(fail(ColumnProblem::MoreValues { count }));
                }
                if max_def == 0 {
                    if values.len() < records {
                        return Err(fail(ColumnProblem::FewerValues));
                    }
                    for value in &values[..records] {
                        f(row, Some(value))?;
                        row += 1;
                    }
                    continue;
                }
                let mut next = values.iter();
                for def in defs.iter().take(records) {
                    let value = match *def == max_def {
                        true => Some(next.next().ok_or_else(|| fail(ColumnProblem::FewerValues))?),
                        false => None,
                    };
                    f(row, value)?;
                    row += 1;
                }
            }
        }
        if row != count {
            return Err(fail(ColumnProblem::Count { values: row, count }));
        }
        Ok(())
    }
}
