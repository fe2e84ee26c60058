//! Manifest and transaction-log files as Icechunk's asset manager writes them, for the ones vzarr
//! builds.
//!
//! An Icechunk metadata file is a binary header (magic bytes, the writing client's name padded to
//! 24 bytes, spec version, file type, compression algorithm) followed by one zstd frame that
//! records its decoded size; the object carries the same facts as metadata. The asset manager's
//! own writers take a verified `Manifest` or `TransactionLog`, and verifying a flatbuffer of 10^6
//! references costs more than building it; vzarr's builders are verified instead by its tests
//! (every build with debug assertions verifies each file it builds) and by Icechunk whenever it
//! reads one.

use std::io::Write;
use std::path::Path;

use bytes::Bytes;
use icechunk::format::format_constants::{
    CompressionAlgorithmBin, FileTypeBin, SpecVersionBin, ICECHUNK_CLIENT_NAME, ICECHUNK_CLIENT_NAME_METADATA_KEY,
    ICECHUNK_COMPRESSION_METADATA_KEY, ICECHUNK_COMPRESSION_ZSTD, ICECHUNK_FILE_TYPE_MANIFEST,
    ICECHUNK_FILE_TYPE_METADATA_KEY, ICECHUNK_FILE_TYPE_TRANSACTION_LOG, ICECHUNK_FORMAT_MAGIC_BYTES,
    ICECHUNK_IMPL_NAME_LEN, LATEST_ICECHUNK_FORMAT_VERSION_METADATA_KEY,
};
use icechunk::format::{ManifestId, SnapshotId, MANIFESTS_FILE_PATH, TRANSACTION_LOGS_FILE_PATH};
use icechunk::storage::{Settings, StorageContext};
use icechunk::Repository;

/// The kinds of file vzarr writes itself.
#[derive(Debug, Clone, Copy)]
pub(super) enum Kind {
    Manifest,
    TransactionLog,
}

impl Kind {
    fn bin(self) -> FileTypeBin {
        match self {
            Kind::Manifest => FileTypeBin::Manifest,
            Kind::TransactionLog => FileTypeBin::TransactionLog,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Kind::Manifest => ICECHUNK_FILE_TYPE_MANIFEST,
            Kind::TransactionLog => ICECHUNK_FILE_TYPE_TRANSACTION_LOG,
        }
    }
}

/// A cause from Icechunk's storage or the flatbuffer verifier, kept as it came.
type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Why a repository file (a manifest, a transaction log) was not written or stored.
#[derive(Debug, thiserror::Error)]
pub(super) enum ObjectError {
    /// Writing or compressing the file failed.
    #[error("{0}")]
    Write(#[source] std::io::Error),
    /// A file of a local repository could not be written.
    #[error("{}: {source}", .path.display())]
    Local {
        /// The file.
        path: std::path::PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The transaction log built does not verify as Icechunk's reader verifies it.
    #[error("the transaction log built does not verify: {0}")]
    Verify(#[source] BoxError),
    /// The repository's storage did not store the file.
    #[error("{0}")]
    Storage(#[source] BoxError),
}

/// The file of a flatbuffer of `kind`: header and zstd frame at `level`.
pub(super) fn file(data: &[u8], kind: Kind, spec: SpecVersionBin, level: i32) -> Result<Vec<u8>, ObjectError> {
    file_written(kind, spec, level, data.len() as u64, |out| out.write_all(data))
}

/// The file of a flatbuffer of `kind` and `len` bytes that `write` writes, compressed as it is written
/// (the flatbuffer itself is never held whole).
pub(super) fn file_written(
    kind: Kind,
    spec: SpecVersionBin,
    level: i32,
    len: u64,
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<Vec<u8>, ObjectError> {
    let file = Vec::with_capacity((len / 4).min(1 << 30) as usize + 64);
    write_file(file, kind, spec, level, len, write)
}

/// Writes the file of a flatbuffer of `kind` and `len` bytes that `write` writes into `out` (header,
/// then the zstd frame, compressed as it is written); returns `out`.
pub(super) fn write_file<W: Write>(
    mut out: W,
    kind: Kind,
    spec: SpecVersionBin,
    level: i32,
    len: u64,
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<W, ObjectError> {
    let client = format!("{:<width$}", *ICECHUNK_CLIENT_NAME, width = ICECHUNK_IMPL_NAME_LEN);
    let header = [spec as u8, kind.bin() as u8, CompressionAlgorithmBin::Zstd as u8];
    let mut head = ICECHUNK_FORMAT_MAGIC_BYTES.to_vec();
    head.extend_from_slice(&client.as_bytes()[..ICECHUNK_IMPL_NAME_LEN]);
    head.extend_from_slice(&header);
    out.write_all(&head).map_err(ObjectError::Write)?;
    let mut encoder = zstd::stream::write::Encoder::new(out, level).map_err(ObjectError::Write)?;
    encoder.set_pledged_src_size(Some(len)).map_err(ObjectError::Write)?;
    let mut buffered = std::io::BufWriter::with_capacity(1 << 18, encoder);
    write(&mut buffered).map_err(ObjectError::Write)?;
    let encoder = buffered.into_inner().map_err(|e| ObjectError::Write(e.into_error()))?;
    encoder.finish().map_err(ObjectError::Write)
}

/// Writes the transaction log of snapshot `id` straight into the local repository at `root`
/// (`transactions/ID`, the file Icechunk's local storage would write), `write` writing the file as
/// [`write_file`] takes it: compressed into a sibling `ID#vzarr`, then renamed into place, so that
/// memory never holds the log (at 10^8 chunks it is hundreds of megabytes even compressed). Returns
/// its size in bytes.
pub(super) fn write_local_transaction_log(
    root: &Path,
    id: &SnapshotId,
    write: impl FnOnce(std::io::BufWriter<std::fs::File>) -> Result<std::io::BufWriter<std::fs::File>, ObjectError>,
) -> Result<u64, ObjectError> {
    let dir = root.join(TRANSACTION_LOGS_FILE_PATH);
    std::fs::create_dir_all(&dir).map_err(local(&dir))?;
    let (path, staged) = (dir.join(id.to_string()), dir.join(format!("{id}#vzarr")));
    let written = std::fs::File::create(&staged)
        .map_err(local(&staged))
        .and_then(|file| write(std::io::BufWriter::with_capacity(1 << 20, file)))
        .and_then(|out| out.into_inner().map_err(|e| local(&staged)(e.into_error())))
        .and_then(|file| file.metadata().map(|m| m.len()).map_err(local(&staged)))
        .and_then(|size| std::fs::rename(&staged, &path).map(|()| size).map_err(local(&path)));
    if written.is_err() {
        let _ = std::fs::remove_file(&staged);
    }
    written
}

/// [`ObjectError::Local`] of `path`.
fn local(path: &Path) -> impl FnOnce(std::io::Error) -> ObjectError + '_ {
    move |source| ObjectError::Local { path: path.to_path_buf(), source }
}

/// Stores manifest `id`'s `file`; returns its size in bytes.
pub(super) async fn put_manifest(repository: &Repository, id: &ManifestId, file: Vec<u8>) -> Result<u64, ObjectError> {
    put(repository, &format!("{MANIFESTS_FILE_PATH}/{id}"), Kind::Manifest, file).await
}

/// Stores the transaction log `file` of snapshot `id`.
pub(super) async fn put_transaction_log(
    repository: &Repository,
    id: &SnapshotId,
    file: Vec<u8>,
) -> Result<u64, ObjectError> {
    put(repository, &format!("{TRANSACTION_LOGS_FILE_PATH}/{id}"), Kind::TransactionLog, file).await
}

/// Stores `file` at `path` in the repository, with the metadata storage class and the object
/// metadata Icechunk gives files of `kind`; returns its size in bytes.
async fn put(repository: &Repository, path: &str, kind: Kind, file: Vec<u8>) -> Result<u64, ObjectError> {
    let spec = repository.asset_manager().spec_version();
    let metadata = vec![
        (LATEST_ICECHUNK_FORMAT_VERSION_METADATA_KEY.to_string(), (spec as u8).to_string()),
        (ICECHUNK_CLIENT_NAME_METADATA_KEY.to_string(), ICECHUNK_CLIENT_NAME.to_string()),
        (ICECHUNK_FILE_TYPE_METADATA_KEY.to_string(), kind.name().to_string()),
        (ICECHUNK_COMPRESSION_METADATA_KEY.to_string(), ICECHUNK_COMPRESSION_ZSTD.to_string()),
    ];
    let context = repository.storage_context();
    let settings =
        Settings { storage_class: context.settings.metadata_storage_class().cloned(), ..context.settings.clone() };
    let context = StorageContext::new(&settings, context.attribution);
    let size = file.len() as u64;
    let written = repository
        .storage()
        .put_object(&context, path, Bytes::from(file), None, metadata, None)
        .await
        .map_err(|e| ObjectError::Storage(Box::new(e)))?;
    written.must_write().map_err(|e| ObjectError::Storage(Box::new(e)))?;
    Ok(size)
}
