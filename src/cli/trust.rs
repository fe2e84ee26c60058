//! `vzarr trust STORE` and the authorization every reading command starts from: the user's trust
//! list, `VZARR_ALLOW_SOURCES` and `--allow-source`.

use anyhow::Context;

use super::args::TrustArgs;
use super::Outcome;
use crate::read::Store;
use crate::trust::{containers_of, Authorization, TrustList};

/// What a reading command trusts: the trust list, the environment variable, then `--allow-source`.
pub(crate) fn authorization(allow: &[String]) -> anyhow::Result<Authorization> {
    let mut auth = Authorization::from_user_config()?;
    auth.extend(allow);
    Ok(auth)
}

/// Adds the containers of a store just written to the user's trust list (what `scan` does, so
/// everyday use needs no flag). A trust list that cannot be updated is a warning: the store is
/// written, and `vzarr trust` or `--allow-source` can authorize it later.
pub(crate) fn trust_written(containers: &[String]) {
    let added = TrustList::default_path().and_then(|path| TrustList::add(&path, containers).map(|a| (path, a)));
    match added {
        Ok((path, added)) if !added.is_empty() => {
            errln!("note: trusted source containers added to {}: {}", path.display(), added.join(", "));
        }
        Ok(_) => {}
        Err(e) => errln!("warning: {e}: read the store with --allow-source or run `vzarr trust`"),
    }
}

/// `vzarr trust`: prints the containers the store's sources lie in (resolved like a reader would),
/// then adds them to the trust list unless `--list`.
pub(crate) async fn run(args: TrustArgs) -> anyhow::Result<Outcome> {
    let store = Store::open(&args.store, &Authorization::default()).await?;
    let sources = store.all_sources().await?;
    let containers = containers_of(&sources);
    for c in &containers {
        outln!("{c}");
    }
    let declared = &store.info().source_containers;
    let undeclared: Vec<&String> = containers.iter().filter(|c| !Authorization::new(declared).covers(c)).collect();
    if !declared.is_empty() && !undeclared.is_empty() {
        let list: Vec<&str> = undeclared.iter().map(|s| s.as_str()).collect();
        errln!("warning: {}: sources outside the containers the store declares: {}", args.store, list.join(", "));
    }
    if args.list {
        return Ok(Outcome::Done);
    }
    let path = TrustList::default_path()?;
    let added = TrustList::add(&path, &containers).with_context(|| format!("{}: trusting its sources", args.store))?;
    errln!("{} container(s) added to {}", added.len(), path.display());
    Ok(Outcome::Done)
}
