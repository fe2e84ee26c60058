//! The I/O side of the store-owned bytes' memory budget ([`OwnedBytesBudget`]): the spill files
//! (unlinked temporary files in [`std::env::temp_dir`], `TMPDIR`) and the budget the environment
//! sets (`VZARR_OWNED_MEMORY`), read where a command, the Python package or a scan's options begin.

use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::dataset::{OwnedBytesBudget, OwnedBytesError, SpillFile, SpillFiles, DEFAULT_MEMORY_BUDGET};

/// The environment variable setting the memory budget for store-owned bytes, in bytes (a plain
/// number, or with a `K`, `M` or `G` suffix for KiB, MiB, GiB); 0 spills every copied chunk.
pub const MEMORY_BUDGET_VAR: &str = "VZARR_OWNED_MEMORY";

/// Spill files created unlinked in the temporary directory.
#[derive(Debug, Default)]
struct TempSpillFiles;

/// An unlinked temporary file and the path it was created at.
#[derive(Debug)]
struct TempSpillFile {
    file: std::fs::File,
    path: PathBuf,
}

impl SpillFile for TempSpillFile {
    fn write_all_at(&self, bytes: &[u8], at: u64) -> std::io::Result<()> {
        self.file.write_all_at(bytes, at)
    }

    fn read_exact_at(&self, out: &mut [u8], at: u64) -> std::io::Result<()> {
        self.file.read_exact_at(out, at)
    }

    fn path(&self) -> &Path {
        &self.path
    }
}

impl SpillFiles for TempSpillFiles {
    fn create(&self) -> Result<Box<dyn SpillFile>, OwnedBytesError> {
        let dir = std::env::temp_dir();
        let named = tempfile::Builder::new()
            .prefix("vzarr-owned-")
            .suffix(".spill")
            .tempfile_in(&dir)
            .map_err(|source| OwnedBytesError::Create { dir, source })?;
        let path = named.path().to_path_buf();
        Ok(Box::new(TempSpillFile { file: named.into_file(), path }))
    }
}

/// A budget of `limit` bytes in memory, the rest spilled to an unlinked temporary file.
pub fn owned_bytes_budget(limit: u64) -> OwnedBytesBudget {
    OwnedBytesBudget::new(limit, Arc::new(TempSpillFiles))
}

/// [`MEMORY_BUDGET_VAR`] set to what is not a size ([`owned_bytes_budget_from_env`]).
#[derive(Debug, Clone, thiserror::Error)]
#[error("{}={value:?}: not a size (a number of bytes, or with a K, M or G suffix: 64M)", MEMORY_BUDGET_VAR)]
#[non_exhaustive]
pub struct MemoryBudgetError {
    /// The variable's value.
    pub value: std::ffi::OsString,
}

/// The budget [`MEMORY_BUDGET_VAR`] sets, else [`DEFAULT_MEMORY_BUDGET`].
///
/// # Errors
/// [`MemoryBudgetError`] when the variable is set but is not a size.
pub fn owned_bytes_budget_from_env() -> Result<OwnedBytesBudget, MemoryBudgetError> {
    let Some(value) = std::env::var_os(MEMORY_BUDGET_VAR) else {
        return Ok(owned_bytes_budget(DEFAULT_MEMORY_BUDGET));
    };
    match value.to_str().and_then(parse_size) {
        Some(limit) => Ok(owned_bytes_budget(limit)),
        None => Err(MemoryBudgetError { value }),
    }
}

/// `123`, `64K`, `64M`, `1G` (binary units, `KiB`/`MiB`/`GiB` too), in bytes.
fn parse_size(text: &str) -> Option<u64> {
    let text = text.trim();
    let digits = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (number, unit) = text.split_at(digits);
    let shift = match unit.trim().to_ascii_uppercase().as_str() {
        "" | "B" => 0,
        "K" | "KB" | "KIB" => 10,
        "M" | "MB" | "MIB" => 20,
        "G" | "GB" | "GIB" => 30,
        _ => return None,
    };
    number.parse::<u64>().ok()?.checked_mul(1 << shift)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_in_binary_units() {
        assert_eq!(parse_size("0"), Some(0));
        assert_eq!(parse_size("1234"), Some(1234));
        assert_eq!(parse_size("64M"), Some(64 << 20));
        assert_eq!(parse_size(" 2 GiB "), Some(2 << 30));
        assert_eq!(parse_size("8k"), Some(8 << 10));
        assert_eq!(parse_size("lots"), None);
        assert_eq!(parse_size("-1"), None);
    }

    #[test]
    fn a_budget_of_zero_spills_to_a_temporary_file() {
        let budget = owned_bytes_budget(0);
        let owned = crate::dataset::OwnedBytes::from_vec(vec![7; 1000], &budget).unwrap();
        assert_eq!((owned.spilled_bytes(), owned.to_vec().unwrap()), (1000, vec![7; 1000]));
        assert_eq!(budget.held(), 0);
    }
}
