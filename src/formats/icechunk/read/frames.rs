//! Checks of a repository's compressed files before Icechunk reads them.
//!
//! Every Icechunk file (the `repo` info file, snapshots, manifests) is a short header and one zstd
//! frame. Icechunk 2.3 allocates the decoded size the frame's header declares (up to 16 GiB) before
//! it decodes a byte, and it preallocates the byte size a snapshot records for a manifest before
//! fetching it. Both numbers are untrusted: a damaged repository would drive an allocation of
//! gigabytes (an abort where memory is limited). Before Icechunk reads a file, vzarr therefore
//!
//! - reads the file's first bytes and takes the size its frame declares: at most
//!   [`TRUSTED_DECODED_BYTES`] is let through, and a larger one is believed only once the frame was
//!   decoded (streaming, in bounded memory) to exactly that many bytes;
//! - checks, before a manifest is fetched, that its file has exactly the size the snapshot records
//!   (two one-byte range reads: the recorded last byte exists, the byte after it does not).
//!
//! The `repo` file is read whole instead (one request, as the head was), its frame checked the same
//! way, then decoded and its flexbuffers walked (`formats/icechunk/read/flex`): the configuration and the
//! commit properties, which Icechunk deserializes with unbounded recursion.
//!
//! Input: the repository's storage, the file paths; output: `Ok` or the reason the file is damaged.
//! Opening a repository checks its `repo` file and the branch's snapshot; a manifest is checked when
//! it is first fetched (all at once for the whole-branch reads of `append` and `compact`).

use std::io::Read;

use futures::{StreamExt, TryStreamExt};
use icechunk::asset_manager::AssetManager;
use icechunk::format::flatbuffers::generated;
use icechunk::format::format_constants::ICECHUNK_FILE_HEADER_LEN;
use icechunk::format::{MANIFESTS_FILE_PATH, REPO_INFO_FILE_PATH, SNAPSHOTS_FILE_PATH};
use icechunk::storage::{Settings, StorageContext, StorageErrorKind};
use icechunk::Storage;

use super::flex::{check_flexbuffer, FlexError};

/// Why a repository file is refused before Icechunk reads it (each names the file).
#[derive(Debug, thiserror::Error)]
pub(crate) enum FrameError {
    /// The storage's settings could not be had.
    #[error("{0}")]
    Settings(#[source] icechunk::StorageError),
    /// A flexbuffer of the `repo` file Icechunk could not deserialize safely.
    #[error("{}: {source}: the repository is damaged", REPO_INFO_FILE_PATH)]
    RepoInfo {
        /// Why the flexbuffer is refused.
        source: FlexError,
    },
    /// A file whose zstd frame does not hold what it declares.
    #[error("{path}: {source}")]
    Frame {
        /// The file.
        path: String,
        /// What the frame holds.
        source: FrameDecodeError,
    },
    /// A manifest's file is missing.
    #[error("its file ({path}) is missing")]
    Missing {
        /// The file.
        path: String,
    },
    /// A manifest's file is shorter than the snapshot records.
    #[error("its file ({path}) is shorter than the {recorded} bytes the snapshot records for manifest {id}")]
    Shorter {
        /// The file.
        path: String,
        /// The size the snapshot records.
        recorded: u64,
        /// The manifest.
        id: String,
    },
    /// A manifest's file is longer than the snapshot records.
    #[error("its file ({path}) is longer than the {recorded} bytes the snapshot records for manifest {id}")]
    Longer {
        /// The file.
        path: String,
        /// The size the snapshot records.
        recorded: u64,
        /// The manifest.
        id: String,
    },
}

/// Why a zstd frame is refused ([`decodes_to`]).
#[derive(Debug, thiserror::Error)]
pub(crate) enum FrameDecodeError {
    /// The decoder cannot start on it.
    #[error("its zstd frame does not decode ({0}): the repository is damaged")]
    Start(#[source] std::io::Error),
    /// It stops decoding before the size it declares.
    #[error(
        "its zstd frame declares {declared} decoded bytes but does not decode ({source}): the repository is damaged"
    )]
    Decode {
        /// The size it declares.
        declared: u64,
        /// The decoder's error.
        source: std::io::Error,
    },
    /// It decodes to another size than it declares.
    #[error("its zstd frame declares {declared} decoded bytes but holds {}: the repository is damaged", holds(*.decoded, *.declared))]
    Size {
        /// The size it declares.
        declared: u64,
        /// The bytes it decoded to (at most one more than declared).
        decoded: u64,
    },
}

/// What a frame holds, for [`FrameDecodeError::Size`]: its size, or "more" than declared.
fn holds(decoded: u64, declared: u64) -> String {
    if decoded > declared {
        "more".to_string()
    } else {
        decoded.to_string()
    }
}

/// The largest decoded size a frame may declare without being decoded first: 64 MiB, more than the
/// snapshot and manifests of most repositories take.
pub(crate) const TRUSTED_DECODED_BYTES: u64 = 64 << 20;

/// The longest zstd frame header (magic, descriptor, window, dictionary id, content size).
const FRAME_HEADER_MAX: usize = 18;

/// The storage of a repository and the context its requests go out with.
pub(crate) struct Files<'a> {
    storage: &'a (dyn Storage + Send + Sync),
    settings: Settings,
}

impl<'a> Files<'a> {
    /// The files of the repository in `storage`.
    pub(crate) async fn new(storage: &'a (dyn Storage + Send + Sync)) -> Result<Files<'a>, FrameError> {
        let settings = storage.default_settings().await.map_err(FrameError::Settings)?;
        Ok(Files { storage, settings })
    }

    /// The files of the repository `assets` reads.
    pub(crate) fn of(assets: &'a AssetManager) -> Files<'a> {
        Files { storage: assets.storage().as_ref(), settings: assets.storage_settings().clone() }
    }

    /// Checks the `repo` info file (repositories of format 1 have none: nothing to check).
    pub(crate) async fn check_repo_info(&self) -> Result<(), FrameError> {
        let Some(decoded) = self.checked_decoded(REPO_INFO_FILE_PATH).await? else { return Ok(()) };
        // A buffer that does not verify is left to Icechunk, which refuses it in its own words.
        let Ok(repo) = flatbuffers::root::<generated::Repo>(&decoded) else { return Ok(()) };
        let snapshots = repo.snapshots().iter().filter_map(|s| s.metadata());
        let items = repo.metadata().into_iter().chain(snapshots).flat_map(|items| items.iter());
        let config = repo.config().map(|c| c.bytes());
        for bytes in config.into_iter().chain(items.map(|item| item.value().bytes())) {
            check_flexbuffer(bytes).map_err(|source| FrameError::RepoInfo { source })?;
        }
        Ok(())
    }

    /// Checks the file of snapshot `id` (its frame). Its commit properties are flexbuffers too, but
    /// Icechunk reads them on vzarr's paths only from the `repo` file (format 2; a format-1
    /// snapshot's are MessagePack), so the snapshot is not decoded here a second time.
    pub(crate) async fn check_snapshot(&self, id: &str) -> Result<(), FrameError> {
        self.check_frame(&format!("{SNAPSHOTS_FILE_PATH}/{id}")).await
    }

    /// The file at `path` read whole (one request), its frame checked as [`Files::check_frame`]
    /// checks it, and decoded. `None` when it cannot be read or does not decode within the size its
    /// frame declares (or the trusted size): Icechunk then refuses it in its own words.
    async fn checked_decoded(&self, path: &str) -> Result<Option<Vec<u8>>, FrameError> {
        let Ok(whole) = self.get(path, None).await else { return Ok(None) };
        let Some(frame) = whole.get(ICECHUNK_FILE_HEADER_LEN..) else { return Ok(None) };
        // A frame that declares no size is decoded up to the trusted size, and left to Icechunk past it.
        let limit = match declared_size(frame) {
            Some(declared) if declared > TRUSTED_DECODED_BYTES => {
                decodes_to(frame, declared).map_err(|source| FrameError::Frame { path: path.into(), source })?;
                declared
            }
            Some(declared) => declared,
            None => TRUSTED_DECODED_BYTES,
        };
        let Ok(decoder) = zstd::stream::read::Decoder::with_buffer(frame) else { return Ok(None) };
        let mut decoded = Vec::new();
        let read = decoder.single_frame().take(limit.saturating_add(1)).read_to_end(&mut decoded);
        Ok(read.ok().filter(|_| decoded.len() as u64 <= limit).map(|_| decoded))
    }

    /// Checks the manifests a snapshot lists (`(id, recorded byte size)`), 16 at a time.
    pub(crate) async fn check_manifests(&self, manifests: &[(String, u64)]) -> Result<(), FrameError> {
        futures::stream::iter(manifests)
            .map(|(id, size)| self.check_manifest(id, *size))
            .buffer_unordered(16)
            .try_collect::<()>()
            .await
    }

    /// Checks manifest `id`, for which the snapshot records `recorded` bytes (0: no size recorded):
    /// its file has exactly that size, and its frame declares a size it decodes to.
    pub(crate) async fn check_manifest(&self, id: &str, recorded: u64) -> Result<(), FrameError> {
        let path = format!("{MANIFESTS_FILE_PATH}/{id}");
        // Both at once: one round of requests before the manifest's first fetch.
        let (size, frame) = futures::join!(self.check_size(&path, id, recorded), self.check_frame(&path));
        size.and(frame)
    }

    /// Checks that the manifest file at `path` has the `recorded` bytes (0: nothing recorded): its
    /// last byte can be read and the byte after it cannot.
    async fn check_size(&self, path: &str, id: &str, recorded: u64) -> Result<(), FrameError> {
        if recorded == 0 {
            return Ok(());
        }
        let (last, past) =
            futures::join!(self.get(path, Some(recorded - 1..recorded)), self.get(path, Some(recorded..recorded + 1)));
        let (path, id) = (path.to_string(), id.to_string());
        match (last, past) {
            (Err(e), _) if matches!(e.kind, StorageErrorKind::ObjectNotFound) => Err(FrameError::Missing { path }),
            (Err(_), _) => Err(FrameError::Shorter { path, recorded, id }),
            (Ok(_), Ok(past)) if !past.is_empty() => Err(FrameError::Longer { path, recorded, id }),
            _ => Ok(()),
        }
    }

    /// Checks the zstd frame of the file at `path` (see the module docs). A file that cannot be
    /// read, is too short or holds no frame is left to Icechunk, which refuses it in its own words.
    async fn check_frame(&self, path: &str) -> Result<(), FrameError> {
        let head_len = (ICECHUNK_FILE_HEADER_LEN + FRAME_HEADER_MAX) as u64;
        let head = match self.get(path, Some(0..head_len)).await {
            Ok(head) => head,
            // A file shorter than the range asked for is read whole (it is a few bytes).
            Err(_) => match self.get(path, None).await {
                Ok(whole) => whole,
                Err(_) => return Ok(()),
            },
        };
        let Some(declared) = head.get(ICECHUNK_FILE_HEADER_LEN..).and_then(declared_size) else { return Ok(()) };
        if declared <= TRUSTED_DECODED_BYTES {
            return Ok(());
        }
        let Ok(whole) = self.get(path, None).await else { return Ok(()) };
        let frame = whole.get(ICECHUNK_FILE_HEADER_LEN..).unwrap_or_default();
        decodes_to(frame, declared).map_err(|source| FrameError::Frame { path: path.into(), source })
    }

    /// The bytes of the object at `path` (`range` of them).
    async fn get(&self, path: &str, range: Option<std::ops::Range<u64>>) -> Result<Vec<u8>, icechunk::StorageError> {
        let context = StorageContext::unattributed(&self.settings);
        let (stream, _) = self.storage.get_object_range(&context, path, range.as_ref()).await?;
        let parts: Vec<bytes::Bytes> = stream.try_collect().await?;
        Ok(parts.concat())
    }
}

/// The decoded size a zstd frame's header declares (`None`: no frame, or no size declared).
pub(crate) fn declared_size(frame: &[u8]) -> Option<u64> {
    zstd::zstd_safe::get_frame_content_size(frame).ok().flatten()
}

/// Decodes `frame` streaming (a window at a time, nothing else held) and checks that it holds
/// exactly `declared` bytes.
pub(crate) fn decodes_to(frame: &[u8], declared: u64) -> Result<(), FrameDecodeError> {
    let decoder = zstd::stream::read::Decoder::with_buffer(frame).map_err(FrameDecodeError::Start)?;
    let mut decoded = 0u64;
    let mut buffer = vec![0u8; 1 << 16];
    let mut reader = decoder.single_frame().take(declared.saturating_add(1));
    loop {
        match reader.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => decoded += n as u64,
            Err(source) => return Err(FrameDecodeError::Decode { declared, source }),
        }
    }
    if decoded != declared {
        return Err(FrameDecodeError::Size { declared, decoded });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A frame of `data` whose header declares `declared` bytes instead.
    fn frame_declaring(data: &[u8], declared: u64) -> Vec<u8> {
        crate::testing::redeclared_frame(&zstd::bulk::compress(data, 1).unwrap(), declared)
    }

    #[test]
    fn a_frame_is_believed_only_for_the_size_it_decodes_to() {
        let data = vec![7u8; (TRUSTED_DECODED_BYTES + 1000) as usize];
        let honest = frame_declaring(&data, data.len() as u64);
        assert_eq!(declared_size(&honest), Some(data.len() as u64));
        assert_eq!(zstd::decode_all(honest.as_slice()).unwrap(), data, "the rebuilt frame decodes");
        decodes_to(&honest, data.len() as u64).unwrap();
        for lie in [data.len() as u64 - 1, data.len() as u64 + 1, 12 << 30] {
            let frame = frame_declaring(&data, lie);
            let message = decodes_to(&frame, declared_size(&frame).unwrap()).unwrap_err().to_string();
            assert!(message.contains(&format!("declares {lie} decoded bytes")), "{message}");
        }
        let truncated = &honest[..honest.len() / 2];
        assert!(decodes_to(truncated, data.len() as u64).is_err());
    }
}
