//! Opening the store `read`, `info` and `verify` name ([`StoreArgs`]): a native store, or an
//! Icechunk repository (a local directory or an `s3://` URL holding one; its `main` branch, or the
//! one `--branch` names), both through [`Store::open_with`].
//!
//! Stores are reached through object_store, whose paths are UTF-8. A local store whose name is not
//! valid UTF-8 (which `scan` and `append` write without trouble) is opened through a descriptor of
//! its directory ([`DirectoryAlias`], held as long as the store), and messages name it as given.

use std::sync::Arc;

use super::args::StoreArgs;
use crate::read::{OpenOptions, Store};
use crate::source::DirectoryAlias;

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
        let alias = DirectoryAlias::open(&self.store).map_err(|e| anyhow::anyhow!("{}: {e}", self.name()))?;
        let store = Store::open_with(alias.path(), &options)
            .await
            .map_err(|e| anyhow::anyhow!("{}", alias.unalias(&e.to_string(), &self.store)))?;
        Ok(store.into_view_of(&self.name(), Arc::new(alias)))
    }
}
