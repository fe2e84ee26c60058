//! Source authorization: a store is untrusted input, so vzarr reads a source only when the reader
//! has authorized the *container* it lies in.
//!
//! A container is a location prefix ending in `/`: a local directory (`/data/archive/`), an object
//! store prefix (`s3://bucket/prefix/`) or a web path (`https://host/path/`). Writers record the
//! containers of a store's source table in `vzarr.json` ([`containers_of`]); readers take an
//! [`Authorization`] (the containers the user trusts) and check every source against it before any
//! byte is read ([`Authorization::check`]). Local sources are resolved first (symlinks, `..`): the
//! file actually opened must lie inside an authorized container, be a regular file, and not live
//! on a kernel pseudo file system (procfs, sysfs, ...), whose files report a size of 0 and whose
//! contents (process environments, credentials) no archive holds.
//!
//! The user's trust list ([`TrustList`]) lives in `$XDG_CONFIG_HOME/vzarr/trusted-sources`, else
//! `~/.config/vzarr/trusted-sources`: one container a line. `vzarr scan` adds the containers of
//! the stores it writes; `vzarr trust STORE` adds a downloaded store's after review. The environment
//! variable [`ALLOW_ENV`] adds containers for one process (comma-separated: `:` occurs in URLs).

mod check;
mod container;
mod list;

pub use check::{Authorization, Authorized, TrustError, ALLOW_ENV};
pub use container::{container_of, containers_of, containers_of_locations};
pub use list::{TrustList, TRUST_FILE};
