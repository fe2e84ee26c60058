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

/// The file of a flatbuffer of `kind`: header and zstd frame at `level`.
pub(super) fn file(data: &[u8], kind: Kind, spec: SpecVersionBin, level: i32) -> Result<Vec<u8>, String> {
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
) -> Result<Vec<u8>, String> {
    let mut file = Vec::with_capacity((len / 4).min(1 << 30) as usize + 64);
    file.extend_from_slice(ICECHUNK_FORMAT_MAGIC_BYTES);
    let client = format!("{:<width$}", *ICECHUNK_CLIENT_NAME, width = ICECHUNK_IMPL_NAME_LEN);
    file.extend_from_slice(&client.as_bytes()[..ICECHUNK_IMPL_NAME_LEN]);
    file.extend_from_slice(&[spec as u8, kind.bin() as u8, CompressionAlgorithmBin::Zstd as u8]);
    let mut encoder = zstd::stream::write::Encoder::new(&mut file, level).map_err(|e| e.to_string())?;
    encoder.set_pledged_src_size(Some(len)).map_err(|e| e.to_string())?;
    let mut buffered = std::io::BufWriter::with_capacity(1 << 18, encoder);
    write(&mut buffered).map_err(|e| e.to_string())?;
    let encoder = buffered.into_inner().map_err(|e| e.error().to_string())?;
    encoder.finish().map_err(|e| e.to_string())?;
    Ok(file)
}

/// Stores manifest `id`'s `file`; returns its size in bytes.
pub(super) async fn put_manifest(repository: &Repository, id: &ManifestId, file: Vec<u8>) -> Result<u64, String> {
    put(repository, &format!("{MANIFESTS_FILE_PATH}/{id}"), Kind::Manifest, file).await
}

/// Stores the transaction log `file` of snapshot `id`.
pub(super) async fn put_transaction_log(
    repository: &Repository,
    id: &SnapshotId,
    file: Vec<u8>,
) -> Result<u64, String> {
    put(repository, &format!("{TRANSACTION_LOGS_FILE_PATH}/{id}"), Kind::TransactionLog, file).await
}

/// Stores `file` at `path` in the repository, with the metadata storage class and the object
/// metadata Icechunk gives files of `kind`; returns its size in bytes.
async fn put(repository: &Repository, path: &str, kind: Kind, file: Vec<u8>) -> Result<u64, String> {
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
        .map_err(|e| e.to_string())?;
    written.must_write().map_err(|e| e.to_string())?;
    Ok(size)
}
