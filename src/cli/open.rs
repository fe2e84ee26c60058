//! Opening the store `read`, `info` and `verify` name ([`StoreArgs`]): a native store, or an
//! Icechunk repository (a local directory or an `s3://` URL holding one; its `main` branch, or the
//! one `--branch` names), both through [`Store::open_with`].
//!
//! Stores are reached through object_store, whose paths are UTF-8. A local store whose name is not
//! valid UTF-8 (which `scan` and `append` write without trouble) is opened through a descriptor of
//! its directory (`/proc/self/fd/N`, held as long as the store), and messages name it as given.

use std::ffi::OsStr;
use std::sync::Arc;

use super::args::StoreArgs;
use crate::read::{OpenOptions, Store};

impl StoreArgs {
    /// The store's name for messages (lossy where it is not UTF-8).
    pub(crate) fn name(&self) -> String {
        self.store.to_string_lossy().into_owned()
    }

    /// Opens the store with the command's `--branch`, `--allow-source` (besides the trust list),
    /// `--no-check-sources` and remote options.
    pub(crate) async fn open(&self) -> anyhow::Result<Store> {
        let authorization = super::trust::authorization(&self.allow_source)?;
        let mut options = OpenOptions::new(authorization)
            .with_remote(self.remote.options())
            .with_check_sources(!self.no_check_sources);
        options.branch.clone_from(&self.branch);
        if let Some(location) = self.store.to_str() {
            return Ok(Store::open_with(location, &options).await?);
        }
        let (alias, directory) = descriptor_alias(&self.store).map_err(|e| anyhow::anyhow!("{}: {e}", self.name()))?;
        let store = Store::open_with(&alias, &options)
            .await
            .map_err(|e| anyhow::anyhow!("{}", e.to_string().replace(&alias, &self.name())))?;
        Ok(store.into_view_of(&self.name(), Arc::new(directory)))
    }
}

/// A UTF-8 path naming the directory `path` names: `/proc/self/fd/N` of a descriptor opened on it,
/// valid while the returned file is open.
fn descriptor_alias(path: &OsStr) -> std::io::Result<(String, std::fs::File)> {
    use std::os::fd::AsRawFd;
    let directory = std::fs::File::open(path)?;
    if !directory.metadata()?.is_dir() {
        return Err(std::io::Error::other("not a store directory"));
    }
    Ok((format!("/proc/self/fd/{}", directory.as_raw_fd()), directory))
}
