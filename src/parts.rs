//! Scan parts (scale-out): a scan split into shards of the inputs (job-array tasks), each writing a
//! *part*, then one merge. (Zarr sharding, a codec, is another thing: `codec/sharding`.)
//!
//! ```text
//! inputs (sorted) ──slice I of N──▶ scan (per-file datasets) ──write_part──▶ part I   (one per task)
//! parts 0..N ──read_parts (checked: one run, every shard once)──▶ per-file datasets ──combine──▶ store
//! ```
//!
//! A shard is a contiguous slice of the sorted inputs ([`Shard::range`]), so every node computes the
//! same slices from the same inputs. A part holds the shard's per-file scans as they are, not
//! combined (`parts/record`: the manifest encoding for chunk entries, JSON for metadata), plus what
//! merge needs to check the parts belong together: shard number and count, the number of inputs, the
//! index of the shard's first input, a digest of the whole sorted input list and the scan options
//! (`parts/part`). Merging reads the parts one file at a time and hands exactly the datasets one
//! `scan` over all inputs would have made, in the same order, to the same combine: the same store.
//! The format is specified in `docs/design/003-scan-parts.md`.
//!
//! Which shard a task scans comes from `--shard I/N` or from the job-array environment of Slurm,
//! Kubernetes Indexed Jobs or AWS Batch ([`shard_from_env`]).

mod part;
pub(crate) mod record;
// Which shard a job-array task scans: the command line's (`--shard`, the scheduler's environment).
#[cfg(any(feature = "cli", test))]
mod scheduler;

pub(crate) use part::{read_parts, write_part, PartHeader, PartScanOptions};
#[cfg(feature = "cli")]
pub(crate) use scheduler::shard_from_env;

use std::path::PathBuf;

/// A shard, or a set of parts, that cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ShardError {
    /// `--shard` or the scheduler's environment does not give a valid shard.
    #[error("{0}")]
    Spec(String),
    /// The scheduler's environment gives no usable shard number: the shard must be given explicitly.
    #[error("{0}")]
    NoShard(String),
    /// The scheduler's environment gives a shard number but not the number of shards.
    #[error("{0}")]
    NoCount(String),
    /// Reading or writing a part failed.
    #[error("{}: {what}: {source}", path.display())]
    Io {
        /// The part file.
        path: PathBuf,
        /// What was being done.
        what: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A part's bytes are not a valid part (corrupt, truncated, another kind of file).
    #[error("{}: not a valid scan part: {problem}", path.display())]
    Corrupt {
        /// The part file.
        path: PathBuf,
        /// What is wrong.
        problem: String,
    },
    /// The parts do not belong together or do not cover every shard exactly once.
    #[error("{0}")]
    Mismatch(String),
    /// Writing the part failed.
    #[error(transparent)]
    Write(#[from] crate::store::WriteError),
}

/// The `index`-th of `count` contiguous slices of the sorted inputs (`0 <= index < count`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// This shard's number, from 0.
    pub index: u32,
    /// The number of shards.
    pub count: u32,
}

impl Shard {
    /// A shard, checked: `count >= 1` and `index < count`.
    ///
    /// # Errors
    /// [`ShardError::Spec`] for an index outside `0..count` or a count of 0.
    pub fn new(index: u32, count: u32) -> Result<Self, ShardError> {
        if count == 0 || index >= count {
            return Err(ShardError::Spec(format!("shard {index}/{count}: the shard must be in 0..{count}")));
        }
        Ok(Shard { index, count })
    }

    /// The inputs (positions in the sorted list of `inputs`) this shard scans: shard `i` of `n` takes
    /// `i * inputs / n .. (i + 1) * inputs / n`, so slices differ in length by at most one and some
    /// are empty when there are fewer inputs than shards.
    pub fn range(&self, inputs: usize) -> std::ops::Range<usize> {
        let at = |i: u32| (i as u128 * inputs as u128 / self.count as u128) as usize;
        at(self.index)..at(self.index + 1)
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl std::str::FromStr for Shard {
    type Err = String;

    /// Parses `I/N`.
    fn from_str(text: &str) -> Result<Self, String> {
        let bad = || format!("{text:?}: expected I/N, shard I (from 0) of N, e.g. 3/16");
        let (i, n) = text.split_once('/').ok_or_else(bad)?;
        let (i, n) = (i.trim().parse().map_err(|_| bad())?, n.trim().parse().map_err(|_| bad())?);
        Shard::new(i, n).map_err(|e| e.to_string())
    }
}

/// A digest of the whole sorted input list (locations as given to the scanner, one per line), so that
/// merge can tell parts of different runs apart: 128-bit FNV-1a, written as 32 hex digits. Not a
/// defence against forgery; parts are trusted as much as the inputs.
pub(crate) fn inputs_digest<S: AsRef<str>>(inputs: &[S]) -> String {
    const PRIME: u128 = 0x0000_0000_0100_0000_0000_0000_0000_013B;
    let mut hash: u128 = 0x6c62_272e_07bb_0142_62b8_2175_6295_c58d;
    for input in inputs {
        for &byte in input.as_ref().as_bytes().iter().chain(b"\n") {
            hash ^= u128::from(byte);
            hash = hash.wrapping_mul(PRIME);
        }
    }
    format!("{hash:032x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_cover_the_inputs_once_in_order() {
        for inputs in [0usize, 1, 3, 16, 17, 1000] {
            for count in [1u32, 2, 4, 16, 33] {
                let mut next = 0;
                for index in 0..count {
                    let range = Shard::new(index, count).unwrap().range(inputs);
                    assert_eq!(range.start, next, "{index}/{count} of {inputs}");
                    assert!(range.len() <= inputs / count as usize + 1);
                    next = range.end;
                }
                assert_eq!(next, inputs);
            }
        }
    }

    #[test]
    fn shard_text_is_checked() {
        assert_eq!("3/16".parse::<Shard>().unwrap(), Shard { index: 3, count: 16 });
        for bad in ["", "3", "16/16", "0/0", "-1/4", "a/b", "1/2/3"] {
            assert!(bad.parse::<Shard>().is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn digest_depends_on_every_input_and_the_order() {
        let a = inputs_digest(&["a.nc", "b.nc"]);
        assert_eq!(a.len(), 32);
        assert_eq!(a, inputs_digest(&["a.nc".to_string(), "b.nc".to_string()]));
        assert_ne!(a, inputs_digest(&["b.nc", "a.nc"]));
        assert_ne!(a, inputs_digest(&["a.nc", "b.n", "c"]));
        assert_ne!(a, inputs_digest(&["a.ncb.nc"]));
    }
}
