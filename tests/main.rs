//! The integration suite: one binary, one module per topic. Every value read through vzarr is compared,
//! bit for bit, with libnetcdf's read of the original file (`common::oracle_read`).
//!
//! Layout: Cargo makes every `tests/*.rs` file (and every `tests/*/main.rs`) a test binary of its own,
//! so each topic module is a directory, `tests/<topic>/mod.rs`, and the shared support lives in
//! `tests/common/` (whose `fixtures.rs` `examples/make_fixtures.rs` also includes).

mod append;
mod archive;
mod bad_input;
mod cli;
mod common;
mod compact;
mod concat;
mod dmrpp;
mod dmrpp_out;
mod everyday;
mod hostile;
mod hygiene;
mod icechunk_repo;
mod interop;
mod kerchunk_docs;
mod native_hdf5;
mod netcdf3;
mod oracle_worker;
mod parity;
mod parquet;
mod publish;
mod remote;
mod scale;
mod scale_out;
mod scan_hdf5;
mod scan_netcdf4;
mod security;
mod selections;
mod sharding;
mod store_safety;
