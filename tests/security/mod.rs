//! Stores are untrusted input (issue 15): sources are read only inside authorized containers and only
//! as regular files; a store's metadata is bound to its manifests and its own chunk bytes carry
//! checksums; sizes taken from metadata are bounded; outputs never replace special files or links.
//!
//! Every store that reads values is checked against libnetcdf's read of the original file.

mod authorization;
mod integrity;
mod limits;
mod outputs;
mod paths;
mod terminal;
