//! Merging the parts of a sharded scan (`parts/`): [`Archive::merge_parts_on`] reads the parts its
//! inputs name (files, glob patterns, object-store URLs), checks they are one run's and were scanned
//! along the archive's concatenation dimensions, and combines them into the dataset one scan over all
//! inputs would have made.

use std::path::PathBuf;

use super::{Archive, PipelineError};
use crate::dataset::VirtualDataset;
use crate::parts::read_parts;
use crate::source::RemoteOptions;

/// What [`Archive::merge_parts_on`] produced.
#[derive(Debug, Clone)]
pub struct MergedParts {
    /// The combined dataset.
    pub dataset: VirtualDataset,
    /// Source files the parts hold.
    pub inputs: u64,
    /// The parts given as object-store URLs (an object-store output must not be nor hold them).
    pub part_urls: Vec<String>,
}

impl Archive {
    /// Merges the scan parts the archive's inputs name, calling `progress(files_read, files)` as the
    /// parts are read. The combine options and concatenation dimensions are the archive's; the scan
    /// options recorded in the store are those the parts were scanned with.
    ///
    /// # Errors
    /// [`PipelineError::Parts`] for parts that are damaged or not one run's,
    /// [`PipelineError::PartsDimensions`] when the parts were scanned along other dimensions, and the
    /// errors of [`Archive::combine`].
    pub fn merge_parts_on(
        &self,
        runtime: &tokio::runtime::Handle,
        progress: &(dyn Fn(u64, u64) + Sync),
    ) -> Result<MergedParts, PipelineError> {
        let paths = self.files(runtime)?;
        // Parts on object stores are copied into a private directory first (they are compact: about 4
        // bytes a reference) and read from there; the directory goes when the merge ends.
        let copies = PartCopies::new();
        let mut local = Vec::with_capacity(paths.len());
        for path in &paths {
            match crate::source::Location::from(path) {
                crate::source::Location::Url(url) => local.push(copies.fetch(&url, self.remote_options(), runtime)?),
                crate::source::Location::Local(_) => local.push(path.clone()),
            }
        }
        let part_urls = crate::source::urls_of(&paths);
        let parts = read_parts(&local, self.owned_budget_of())?;
        let Some(first) = parts.first() else { return Err(PipelineError::Options("no parts".into())) };
        let header = first.header().clone();
        let given: Vec<String> = self.concat_dims().iter().map(|d| d.name.clone()).collect();
        if given != header.scan.concat_dims {
            return Err(PipelineError::PartsDimensions {
                part: first.path().to_path_buf(),
                scanned: header.scan.concat_dims.clone(),
                given,
            });
        }
        let files = usize::try_from(header.inputs).unwrap_or(usize::MAX);
        self.check_file_count(files)?;
        let mut scanned = Vec::with_capacity(files.min(1 << 24));
        for part in parts {
            for dataset in part {
                scanned.push(dataset?);
                progress(scanned.len() as u64, header.inputs);
            }
        }
        let archive =
            self.clone().skip_unsupported(header.scan.skip_unsupported).max_slab_bytes(header.scan.max_slab_bytes);
        let dataset = archive.combine(scanned, files)?;
        Ok(MergedParts { dataset, inputs: header.inputs, part_urls })
    }
}

/// Local copies of parts kept on object stores, in a directory removed on drop.
struct PartCopies {
    dir: PathBuf,
    next: std::cell::Cell<usize>,
}

impl PartCopies {
    fn new() -> Self {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        let dir = std::env::temp_dir().join(format!("vzarr-merge-{}-{nanos}", std::process::id()));
        PartCopies { dir, next: std::cell::Cell::new(0) }
    }

    /// Copies the part at `url` and returns the copy's path (named after the part, so errors name it).
    fn fetch(
        &self,
        url: &str,
        remote: &RemoteOptions,
        runtime: &tokio::runtime::Handle,
    ) -> Result<PathBuf, PipelineError> {
        use futures::StreamExt;
        use object_store::ObjectStoreExt;
        use std::io::Write;
        let failed = |what: &str, reason: String| PipelineError::PartCopy {
            url: url.to_string(),
            what: what.to_string(),
            reason,
        };
        let parsed = url::Url::parse(url).map_err(|e| failed("parsing the URL", e.to_string()))?;
        let (store, path) =
            crate::source::store_for_url(&parsed, remote).map_err(|e| failed("reaching it", e.to_string()))?;
        let n = self.next.replace(self.next.get() + 1);
        let dir = self.dir.join(n.to_string());
        std::fs::create_dir_all(&dir).map_err(|e| failed("creating a local copy", e.to_string()))?;
        let name = path.filename().unwrap_or("part.vzpart").to_string();
        let copy = dir.join(name);
        let mut out = std::fs::File::create(&copy).map_err(|e| failed("creating a local copy", e.to_string()))?;
        runtime.block_on(async {
            let got =
                store.get(&path).await.map_err(|e| failed("reading the part", crate::source::describe_error(&e)))?;
            let mut stream = got.into_stream();
            while let Some(bytes) = stream.next().await {
                let bytes = bytes.map_err(|e| failed("reading the part", crate::source::describe_error(&e)))?;
                out.write_all(&bytes).map_err(|e| failed("writing a local copy", e.to_string()))?;
            }
            Ok(copy)
        })
    }
}

impl Drop for PartCopies {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
