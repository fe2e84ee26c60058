//! Opening the store `read`, `info` and `verify` name: a native store, or an Icechunk repository
//! (a local directory or an `s3://` URL holding one; its `main` branch, or the one `--branch` names),
//! both through [`Store::open_with`].

use crate::read::{OpenOptions, Store};
use crate::source::RemoteOptions;
use crate::trust::Authorization;

/// An opened store.
pub(crate) struct Opened {
    pub(crate) store: Store,
}

/// Opens `location` at `branch` (Icechunk repositories only; default `main`), reading sources inside
/// `authorization`, checking them against their fingerprints when `check_sources`.
pub(crate) async fn open_store(
    location: &str,
    branch: Option<&str>,
    authorization: &Authorization,
    check_sources: bool,
    remote: &RemoteOptions,
) -> anyhow::Result<Opened> {
    let mut options =
        OpenOptions::new(authorization.clone()).with_remote(remote.clone()).with_check_sources(check_sources);
    options.branch = branch.map(str::to_string);
    Ok(Opened { store: Store::open_with(location, &options).await? })
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
