//! Opening the store `read`, `info` and `verify` name: a native store, or an Icechunk repository
//! (a local directory or an `s3://` URL holding one; its `main` branch, or the one `--branch` names).
//!
//! An Icechunk repository is read into a [`crate::VirtualDataset`] (`store/icechunk/read`: sources
//! checked against the references' checksums, unless `--no-check-sources`) and written as a native store in a private temporary
//! directory, removed when the command ends; the usual reader then serves it, so reads, `info` and
//! `verify` (with the provenance vzarr kept in the snapshot) behave exactly as on a native store.

use std::path::{Path, PathBuf};

use crate::read::{OpenOptions, Store};
use crate::source::RemoteOptions;
use crate::store::{looks_like_repository, read_branch, read_icechunk, NativeWriter, WriteOptions, Writer};
use crate::trust::Authorization;

/// An opened store, and the temporary native copy of an Icechunk repository's metadata (if any),
/// removed on drop (after the store, which is dropped first).
pub(crate) struct Opened {
    pub(crate) store: Store,
    _temporary: Option<Temporary>,
}

/// A directory removed on drop.
struct Temporary(PathBuf);

impl Drop for Temporary {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Opens `location` (see the module docs) at `branch` (Icechunk repositories only; default `main`).
/// A URL is opened as a native store, else (when that fails) as an Icechunk repository; the native
/// store's error is reported when neither opens. With `check_sources` false an Icechunk
/// repository's sources are not fingerprinted (the store's own check is the caller's to turn off).
pub(crate) async fn open_store(
    location: &str,
    branch: Option<&str>,
    authorization: &Authorization,
    check_sources: bool,
    remote: &RemoteOptions,
) -> anyhow::Result<Opened> {
    let options = OpenOptions::new(authorization.clone()).with_remote(remote.clone());
    let on_branch = branch.unwrap_or("main");
    let not_repository = || anyhow::anyhow!("{location}: --branch applies to Icechunk repositories only");
    let dataset = if crate::source::is_url(location) {
        match Store::open_with(location, &options).await {
            Ok(_) if branch.is_some() => return Err(not_repository()),
            Ok(store) => return Ok(Opened { store, _temporary: None }),
            Err(native) => match read_repository(location, on_branch, remote, check_sources).await {
                Ok(dataset) => dataset,
                Err(e) if branch.is_some() => return Err(e.into()),
                Err(_) => return Err(native.into()),
            },
        }
    } else if looks_like_repository(Path::new(location)) {
        read_repository(location, on_branch, remote, check_sources).await?
    } else if branch.is_some() {
        return Err(not_repository());
    } else {
        return Ok(Opened { store: Store::open_with(location, &options).await?, _temporary: None });
    };
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    let dir = std::env::temp_dir().join(format!("vzarr-icechunk-{}-{nanos}", std::process::id()));
    std::fs::create_dir(&dir)?;
    let temporary = Temporary(dir);
    let native = temporary.0.join("view.vzarr");
    NativeWriter.write(&dataset, &native, &WriteOptions::default())?;
    let store = Store::open_with(&native.display().to_string(), &options).await?;
    Ok(Opened { store, _temporary: Some(temporary) })
}

/// Opens the store a `read`, `info` or `verify` command names, with its `--branch`,
/// `--allow-source` (besides the trust list) and `--no-check-sources`.
pub(crate) async fn open_named(
    store: &str,
    branch: Option<&str>,
    allow_source: &[String],
    no_check_sources: bool,
    remote: &RemoteOptions,
) -> anyhow::Result<Opened> {
    open_store(store, branch, &super::trust::authorization(allow_source)?, !no_check_sources, remote).await
}

/// The dataset on `branch` of the Icechunk repository at `location`, its sources fingerprinted and
/// checked against the references' checksums when `check_sources`.
async fn read_repository(
    location: &str,
    branch: &str,
    remote: &RemoteOptions,
    check_sources: bool,
) -> Result<crate::VirtualDataset, crate::store::IcechunkError> {
    if check_sources {
        read_icechunk(location, branch, remote).await
    } else {
        read_branch(location, branch, remote).await.map(|stored| stored.dataset)
    }
}
