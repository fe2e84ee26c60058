//! Opening the store `read`, `info` and `verify` name ([`StoreArgs`]): a native store, or an
//! Icechunk repository (a local directory or an `s3://` URL holding one; its `main` branch, or the
//! one `--branch` names), both through [`Store::open_with`].
//!
//! The store's name is taken as given (a local name need not be UTF-8): the library classifies it once
//! ([`Location`](crate::source::Location)) and reaches a local store whose name is not UTF-8 through a
//! descriptor of its directory.

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
        Ok(Store::open_with(self.store.as_os_str(), &options).await?)
    }
}
