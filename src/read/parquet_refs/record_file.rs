//! One `refs.<N>.parq` file of a kerchunk Parquet reference set parsed into rows.
//!
//! Columns are found by name (`path`, `offset`, `size`, `raw`; fastparquet and pyarrow order them
//! alike, but nothing requires it), in any number of row groups, plain or dictionary-encoded
//! (`path` as pandas categoricals), nullable or not. `offset` and `size` may be absent (a set of
//! inline chunks only) and then read as 0. Untrusted: the file's own row count is checked against
//! what the caller allows before any row is decoded, and every buffer grows only with decoded rows.

use std::sync::Arc;

use bytes::Bytes;
use parquet::basic::Type as PhysicalType;
use parquet::column::reader::{ColumnReader, ColumnReaderImpl};
use parquet::data_type::{ByteArray, ByteArrayType, DataType, Int64Type};
use parquet::file::reader::{FileReader, SerializedFileReader};

/// Rows decoded per call.
const BATCH: usize = 4096;

/// One row: where one chunk is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Row {
    /// `path` and `raw` both null.
    Missing,
    /// `size` bytes at `offset` of `url`.
    Reference {
        /// The URL (or path) as written; rows in a row with the same URL share one.
        url: Arc<str>,
        /// Byte offset (>= 0).
        offset: i64,
        /// Byte length (>= 0; 0 with offset 0 means the whole file).
        size: i64,
    },
    /// The chunk's bytes.
    Inline(Bytes),
}

/// A column's values, one per row (`None`: null).
enum Values {
    Bytes(Vec<Option<ByteArray>>),
    Ints(Vec<Option<i64>>),
}

/// The rows of the Parquet file `bytes`, at most `max_rows` of them.
///
/// # Errors
/// One phrase: not Parquet, a column missing or of the wrong type, more rows than allowed, or
/// undecodable pages.
pub(super) fn rows(bytes: Bytes, max_rows: usize) -> Result<Vec<Row>, String> {
    // The `parquet` crate panics on some corrupt pages (a byte array's length prefix cut short, found
    // by the kerchunk-parquet fuzz target): contained here as an error. Nothing outlives the call.
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| decode_rows(bytes, max_rows)))
        .unwrap_or_else(|_| Err("a corrupt page the Parquet decoder cannot read".to_string()))
}

/// [`rows`], which the `parquet` crate may panic in.
fn decode_rows(bytes: Bytes, max_rows: usize) -> Result<Vec<Row>, String> {
    let file_len = bytes.len();
    let reader = SerializedFileReader::new(bytes).map_err(|e| format!("not a Parquet file: {e}"))?;
    check_column_chunks(&reader, file_len)?;
    let metadata = reader.metadata().file_metadata();
    let count = usize::try_from(metadata.num_rows()).map_err(|_| "a negative row count".to_string())?;
    if count > max_rows {
        return Err(format!("{count} rows, more than the record size {max_rows} of .zmetadata"));
    }
    let schema = metadata.schema_descr();
    let find = |name: &str| (0..schema.num_columns()).find(|&i| schema.column(i).name() == name);
    let (path, raw) = (find("path"), find("raw"));
    if path.is_none() && raw.is_none() {
        return Err("no \"path\" or \"raw\" column: not kerchunk references".into());
    }
    let column = |index: Option<usize>, name: &str, kind: PhysicalType| -> Result<Option<Values>, String> {
        let Some(index) = index else { return Ok(None) };
        let found = schema.column(index).physical_type();
        if found != kind {
            return Err(format!("column {name:?} is {found}, not {kind}"));
        }
        read_column(&reader, index, kind, count).map(Some).map_err(|e| format!("column {name:?}: {e}"))
    };
    let paths = column(path, "path", PhysicalType::BYTE_ARRAY)?;
    let offsets = column(find("offset"), "offset", PhysicalType::INT64)?;
    let sizes = column(find("size"), "size", PhysicalType::INT64)?;
    let raws = column(raw, "raw", PhysicalType::BYTE_ARRAY)?;
    let mut last = None;
    (0..count).map(|i| row(i, paths.as_ref(), offsets.as_ref(), sizes.as_ref(), raws.as_ref(), &mut last)).collect()
}

/// Every column chunk's pages lie inside the file (the `parquet` crate panics on a negative start or
/// length when it reads the chunk: found by the kerchunk-parquet fuzz target).
fn check_column_chunks(reader: &SerializedFileReader<Bytes>, file_len: usize) -> Result<(), String> {
    for (g, group) in reader.metadata().row_groups().iter().enumerate() {
        for column in group.columns() {
            let start = column.dictionary_page_offset().unwrap_or(column.data_page_offset());
            let len = column.compressed_size();
            let end = start.checked_add(len).and_then(|end| usize::try_from(end).ok());
            if start < 0 || len < 0 || end.is_none_or(|end| end > file_len) {
                let name = column.column_path();
                return Err(format!(
                    "row group {g}, column {name}: pages at {start}, {len} bytes, outside the file's {file_len} bytes"
                ));
            }
        }
    }
    Ok(())
}

/// Row `i` from the columns; `last` is the URL of the row before (kept when this row's is the same).
fn row(
    i: usize,
    paths: Option<&Values>,
    offsets: Option<&Values>,
    sizes: Option<&Values>,
    raws: Option<&Values>,
    last: &mut Option<Arc<str>>,
) -> Result<Row, String> {
    let bytes = |values: Option<&Values>| match values {
        Some(Values::Bytes(list)) => list.get(i).cloned().flatten(),
        _ => None,
    };
    let int = |values: Option<&Values>| match values {
        Some(Values::Ints(list)) => list.get(i).copied().flatten().unwrap_or(0),
        _ => 0,
    };
    if let Some(raw) = bytes(raws) {
        return Ok(Row::Inline(Bytes::from(raw.data().to_vec())));
    }
    let Some(url) = bytes(paths) else { return Ok(Row::Missing) };
    let url = std::str::from_utf8(url.data()).map_err(|_| format!("row {i}: a path that is not UTF-8"))?;
    let (offset, size) = (int(offsets), int(sizes));
    if offset < 0 || size < 0 {
        return Err(format!("row {i}: a negative offset or size ({offset}, {size})"));
    }
    let url = match last {
        Some(same) if **same == *url => same.clone(),
        _ => last.insert(Arc::from(url)).clone(),
    };
    Ok(Row::Reference { url, offset, size })
}

/// Every value of column `index` (of physical type `kind`), `count` rows over all row groups.
fn read_column(
    reader: &SerializedFileReader<Bytes>,
    index: usize,
    kind: PhysicalType,
    count: usize,
) -> Result<Values, String> {
    let values = match kind {
        PhysicalType::BYTE_ARRAY => Values::Bytes(collect::<ByteArrayType>(reader, index, count, |c| match c {
            ColumnReader::ByteArrayColumnReader(r) => Some(r),
            _ => None,
        })?),
        _ => Values::Ints(collect::<Int64Type>(reader, index, count, |c| match c {
            ColumnReader::Int64ColumnReader(r) => Some(r),
            _ => None,
        })?),
    };
    Ok(values)
}

/// The values of column `index` over all row groups (nulls as `None`), exactly `count` of them.
fn collect<T: DataType>(
    reader: &SerializedFileReader<Bytes>,
    index: usize,
    count: usize,
    typed: impl Fn(ColumnReader) -> Option<ColumnReaderImpl<T>>,
) -> Result<Vec<Option<T::T>>, String> {
    let max_def = reader.metadata().file_metadata().schema_descr().column(index).max_def_level();
    let mut out = Vec::new();
    for group in 0..reader.num_row_groups() {
        let group = reader.get_row_group(group).map_err(|e| e.to_string())?;
        let column = group.get_column_reader(index).map_err(|e| e.to_string())?;
        let mut column = typed(column).ok_or("an unexpected physical type")?;
        loop {
            let (mut defs, mut values) = (Vec::new(), Vec::new());
            let (records, _, _) =
                column.read_records(BATCH, Some(&mut defs), None, &mut values).map_err(|e| e.to_string())?;
            if records == 0 {
                break;
            }
            if out.len() + records > count {
                return Err(format!("more values than its {count} rows"));
            }
            if max_def == 0 {
                out.extend(values.into_iter().map(Some));
                continue;
            }
            let mut values = values.into_iter();
            for def in defs.iter().take(records) {
                out.push(if *def == max_def { Some(values.next().ok_or("fewer values than levels")?) } else { None });
            }
        }
    }
    if out.len() != count {
        return Err(format!("{} values for {count} rows", out.len()));
    }
    Ok(out)
}
