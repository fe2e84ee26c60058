//! One array's reference files, `<array>/refs.<N>.parq`, written a record (file) at a time.
//!
//! Each file holds `record_size` rows in chunk order (C order of the chunk indices; row `i` of the
//! array lives in file `i / record_size`), the last file padded with missing rows as kerchunk pads
//! it. Columns, as kerchunk's `refs_to_dataframe` writes them:
//!
//! ```text
//! optional binary path (UTF8)   the source URL; null for inline and missing chunks
//! required int64  offset        byte offset in the source (0 otherwise)
//! required int64  size          byte length in the source (0 otherwise)
//! optional binary raw           the chunk's bytes when inline; null otherwise
//! ```
//!
//! `path` dictionary-encoded (few distinct URLs), `offset` and `size` delta-encoded
//! (`DELTA_BINARY_PACKED`: a source's chunks follow one another, so an offset's delta is about a
//! chunk's length), neither compressed: kerchunk's zstd made the writer and every reader several
//! times slower for less. `raw` (inline chunks' bytes) is zstd-compressed. Statistics (null counts)
//! for the integer columns only. fastparquet (what fsspec reads with), pyarrow and the `parquet`
//! crate read all of these. Memory is one record's rows per writing thread, never the array's.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::data_type::{ByteArray, ByteArrayType, Int64Type};
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::parser::parse_message_type;
use parquet::schema::types::{ColumnPath, Type};

use crate::store::{io_error, WriteError};

/// The schema of a reference file.
const SCHEMA: &str = "message kerchunk_refs {
    optional binary path (UTF8);
    required int64 offset;
    required int64 size;
    optional binary raw;
}";

/// One row: where one chunk is.
pub(crate) enum Row<'a> {
    /// Never written: read as the fill value.
    Missing,
    /// `size` bytes at `offset` of the source at `url` (the URL's bytes, shared between rows).
    Reference {
        /// The source URL.
        url: &'a ByteArray,
        /// Byte offset.
        offset: u64,
        /// Byte length.
        size: u64,
    },
    /// The chunk's bytes, inline.
    Inline(Vec<u8>),
}

/// The writer of one array's record files, each written on its own (so records can be written in
/// parallel, one record's rows in memory per writing thread).
pub(crate) struct RecordFiles {
    dir: PathBuf,
    record_size: usize,
    schema: Arc<Type>,
    properties: Arc<WriterProperties>,
    /// The same, `path` not dictionary-encoded: for a record naming no URL.
    no_urls: Arc<WriterProperties>,
}

/// One record's columns; `path` and `raw` hold only their non-null values, with definition levels.
#[derive(Default)]
struct Columns {
    path: Vec<ByteArray>,
    path_defined: Vec<i16>,
    offset: Vec<i64>,
    size: Vec<i64>,
    raw: Vec<ByteArray>,
    raw_defined: Vec<i16>,
}

impl Columns {
    fn with_capacity(rows: usize) -> Self {
        Columns {
            path: Vec::with_capacity(rows),
            path_defined: Vec::with_capacity(rows),
            offset: Vec::with_capacity(rows),
            size: Vec::with_capacity(rows),
            raw: Vec::new(),
            raw_defined: Vec::with_capacity(rows),
        }
    }

    fn rows(&self) -> usize {
        self.offset.len()
    }

    fn push(&mut self, row: Row<'_>) {
        let (path, offset, size, raw) = match row {
            Row::Missing => (None, 0, 0, None),
            Row::Reference { url, offset, size } => (Some(url.clone()), offset, size, None),
            Row::Inline(bytes) => (None, 0, 0, Some(ByteArray::from(bytes))),
        };
        self.path_defined.push(i16::from(path.is_some()));
        self.path.extend(path);
        // Offsets and lengths past i64::MAX do not occur in files; saturate rather than wrap.
        self.offset.push(i64::try_from(offset).unwrap_or(i64::MAX));
        self.size.push(i64::try_from(size).unwrap_or(i64::MAX));
        self.raw_defined.push(i16::from(raw.is_some()));
        self.raw.extend(raw);
    }
}

impl RecordFiles {
    /// Starts the files of the array whose folder is `dir` (created here).
    pub(crate) fn create(dir: &Path, record_size: usize) -> Result<Self, WriteError> {
        std::fs::create_dir_all(dir).map_err(io_error(dir, "creating the array's folder"))?;
        let schema = Arc::new(parse_message_type(SCHEMA).map_err(|e| parquet_error(dir, e))?);
        let level = ZstdLevel::try_new(3).map_err(|e| parquet_error(dir, e))?;
        let builder = || {
            WriterProperties::builder()
                .set_compression(Compression::UNCOMPRESSED)
                .set_column_compression(ColumnPath::from("raw"), Compression::ZSTD(level))
                .set_statistics_enabled(EnabledStatistics::None)
                // fastparquet reads an integer column without a null count as nullable (floats in numpy),
                // which fsspec then cannot seek with.
                .set_column_statistics_enabled(ColumnPath::from("offset"), EnabledStatistics::Chunk)
                .set_column_statistics_enabled(ColumnPath::from("size"), EnabledStatistics::Chunk)
                .set_dictionary_enabled(false)
                .set_column_dictionary_enabled(ColumnPath::from("path"), true)
                .set_encoding(Encoding::PLAIN)
                .set_column_encoding(ColumnPath::from("offset"), Encoding::DELTA_BINARY_PACKED)
                .set_column_encoding(ColumnPath::from("size"), Encoding::DELTA_BINARY_PACKED)
                .set_max_row_group_row_count(Some(record_size.max(1)))
        };
        // A record without any URL (every chunk inline or missing: an inlined coordinate) has its
        // `path` column plain: fastparquet fails on a dictionary-encoded column of nulls only.
        let no_urls = builder().set_column_dictionary_enabled(ColumnPath::from("path"), false).build();
        Ok(RecordFiles {
            dir: dir.to_path_buf(),
            record_size: record_size.max(1),
            schema,
            properties: Arc::new(builder().build()),
            no_urls: Arc::new(no_urls),
        })
    }

    /// Writes file `record` (`refs.<record>.parq`) of the rows `rows` gives, at most the record size
    /// of them; a partial (last) record is padded with missing rows.
    pub(crate) fn write<'a>(
        &self,
        record: u64,
        rows: impl Iterator<Item = Result<Row<'a>, WriteError>>,
    ) -> Result<(), WriteError> {
        let mut columns = Columns::with_capacity(self.record_size);
        for row in rows.take(self.record_size) {
            columns.push(row?);
        }
        while columns.rows() < self.record_size {
            columns.push(Row::Missing);
        }
        let path = self.dir.join(format!("refs.{record}.parq"));
        let file = File::create(&path).map_err(io_error(&path, "creating reference file"))?;
        let properties = if columns.path.is_empty() { &self.no_urls } else { &self.properties };
        write_file(file, &self.schema, properties, &columns).map_err(|e| parquet_error(&path, e))
    }
}

/// Writes one record's columns as a Parquet file of one row group.
fn write_file(
    file: File,
    schema: &Arc<Type>,
    properties: &Arc<WriterProperties>,
    columns: &Columns,
) -> parquet::errors::Result<()> {
    let mut writer = SerializedFileWriter::new(file, schema.clone(), properties.clone())?;
    let mut group = writer.next_row_group()?;
    let mut index = 0;
    while let Some(mut column) = group.next_column()? {
        match index {
            0 => column.typed::<ByteArrayType>().write_batch(&columns.path, Some(&columns.path_defined), None)?,
            1 => column.typed::<Int64Type>().write_batch(&columns.offset, None, None)?,
            2 => column.typed::<Int64Type>().write_batch(&columns.size, None, None)?,
            _ => column.typed::<ByteArrayType>().write_batch(&columns.raw, Some(&columns.raw_defined), None)?,
        };
        column.close()?;
        index += 1;
    }
    group.close()?;
    writer.close()?;
    Ok(())
}

fn parquet_error(path: &Path, error: parquet::errors::ParquetError) -> WriteError {
    io_error(path, "writing Parquet")(std::io::Error::other(error))
}
