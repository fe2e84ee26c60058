//! The fuzz targets: each names a parser of untrusted bytes, how its inputs are mutated and how one
//! input is run through vzarr's public entry points (bytes written to a scratch directory, then
//! scanned or opened and read as a user would; chunk decoders called directly).

mod codec;
mod scan;
mod store;

use std::path::{Path, PathBuf};

use crate::rng::Rng;

pub use store::SOURCES;

/// What a target's run needs besides its input.
pub struct Context {
    /// A directory of the target's own, emptied before each case.
    pub scratch: PathBuf,
    /// The runtime store reads block on.
    pub runtime: tokio::runtime::Runtime,
}

impl Context {
    /// Empties the scratch directory and returns it.
    pub fn fresh_dir(&self) -> &Path {
        let _ = std::fs::remove_dir_all(&self.scratch);
        std::fs::create_dir_all(&self.scratch).expect("scratch directory");
        &self.scratch
    }
}

/// A target's mutation: one input from a seed, splicing from the other seeds.
pub type Mutator = fn(&mut Rng, &[u8], &[&[u8]]) -> Vec<u8>;

/// A target's run of one input (case number, context).
pub type Runner = Box<dyn Fn(&Context, &[u8], u64)>;

/// One fuzz target.
pub struct Target {
    /// Name (also the folder of its seeds and regressions).
    pub name: &'static str,
    /// The parsers it reaches.
    pub about: &'static str,
    /// One mutated input from `input`, splicing from `others`.
    pub mutate: Mutator,
    /// Runs one input (case number `case`, which some targets use to vary their options). Errors are
    /// the parser's business; a panic, a hang or an oversized allocation is a failure.
    pub run: Runner,
}

/// With `VZARR_FUZZ_SHOW=1`, prints what a case's parser said (to check that seeds reach deep).
pub fn show(what: &str, result: impl std::fmt::Debug) {
    if std::env::var_os("VZARR_FUZZ_SHOW").is_some() {
        eprintln!("  {what}: {result:?}");
    }
}

/// Every target, in the order they run.
pub fn all() -> Vec<Target> {
    let mut targets = scan::targets();
    targets.extend(store::targets());
    targets.extend(codec::targets());
    targets
}
