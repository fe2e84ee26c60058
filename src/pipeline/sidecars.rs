//! [`Archive::write_sidecars_on`]: one DMR++ sidecar per input file, `DIR/<file name>.dmrpp`, each from
//! that file's own scan (nothing is combined). The scan is the one every format gets, so writing the
//! sidecars of an archive costs what scanning it does; each sidecar is written atomically.

use std::path::{Path, PathBuf};

use super::{Archive, PipelineError};
use crate::formats::{sidecar_name, DmrppWriter};
use crate::scan::scan_files;
use crate::store::{StoreInfo, WriteError, WriteOptions, Writer};

/// The sidecars [`Archive::write_sidecars_on`] wrote, in input order.
#[derive(Debug)]
#[non_exhaustive]
pub struct SidecarsWritten {
    /// One per input file.
    pub sidecars: Vec<Sidecar>,
}

/// One sidecar written.
#[derive(Debug)]
#[non_exhaustive]
pub struct Sidecar {
    /// Where it was written.
    pub path: PathBuf,
    /// The location of the file it describes.
    pub source: String,
    /// What it describes: its variables, and what it left out (as warnings).
    pub info: StoreInfo,
}

impl SidecarsWritten {
    /// The warnings of every sidecar (variables a sidecar could not describe), each naming its sidecar.
    pub fn warnings(&self) -> impl Iterator<Item = String> + '_ {
        self.sidecars.iter().flat_map(|s| s.info.warnings.iter().map(move |w| format!("{}: {w}", s.path.display())))
    }
}

impl Archive {
    /// Scans `files` (this archive's inputs, expanded by [`Archive::files`]) and writes each one's
    /// DMR++ sidecar into the local directory `dir` (created when missing) as `writer` says, calling
    /// `progress(files_done, references)` after each scan. The concatenation dimensions play no
    /// part: a sidecar describes one file.
    ///
    /// # Errors
    /// [`PipelineError::Options`] for an object-store URL or a `dir` that is not a directory,
    /// [`PipelineError::Scan`] naming the file that failed (no sidecar is written then), and
    /// [`PipelineError::Write`] naming the sidecar that could not be written.
    pub fn write_sidecars_on(
        &self,
        runtime: &tokio::runtime::Handle,
        files: &[PathBuf],
        dir: &Path,
        writer: &DmrppWriter,
        options: &WriteOptions,
        progress: &(dyn Fn(usize, u64) + Sync),
    ) -> Result<SidecarsWritten, PipelineError> {
        if matches!(crate::source::Location::from(dir), crate::source::Location::Url(_)) {
            return Err(PipelineError::Options(format!(
                "{}: DMR++ sidecars are written into a local directory",
                dir.display()
            )));
        }
        if dir.exists() && !dir.is_dir() {
            return Err(PipelineError::Options(format!(
                "{}: DMR++ sidecars are written into a directory, and this is not one",
                dir.display()
            )));
        }
        let scanned = scan_files(files, &self.scan_options(runtime), progress)?;
        let write_error =
            |path: &Path, source: WriteError| PipelineError::Write { output: path.display().to_string(), source };
        std::fs::create_dir_all(dir)
            .map_err(crate::store::io_error(dir, "creating the directory"))
            .map_err(|e| write_error(dir, e))?;
        let mut sidecars = Vec::with_capacity(scanned.len());
        for dataset in &scanned {
            let source = dataset.sources.get(0).map(|s| s.location.clone()).unwrap_or_default();
            let path = dir.join(sidecar_name(&source));
            let info = writer.write(dataset, &path, options).map_err(|e| write_error(&path, e))?;
            sidecars.push(Sidecar { path, source, info });
        }
        Ok(SidecarsWritten { sidecars })
    }
}
