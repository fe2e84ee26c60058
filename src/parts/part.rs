//! The part file: one shard's per-file scans, written atomically, read back one file at a time.
//!
//! ```text
//! "VZPART\0\0" | u32 version | u32 header length | header (JSON: PartHeader) | u32 CRC-32 of all before
//! per file, in input order: u64 record length | record (parts/record) | u32 CRC-32 of the record
//! end of file (exactly after the header's `files` records)
//! ```
//!
//! Written through `store/publish` (hidden sibling, synced, renamed into place), so a part is either
//! complete or absent, and a retried task replaces its part: [`write_part`] always replaces an
//! existing *part* (recognised by its magic), never any other file.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::record::{decode_dataset, encode_dataset};
use super::{Shard, ShardError};
use crate::dataset::{OwnedBytesBudget, VirtualDataset};
use crate::store::{OutputKind, Staged};

/// The first bytes of every part file.
pub(crate) const PART_MAGIC: [u8; 8] = *b"VZPART\0\0";
/// The part format this build writes and reads.
pub(crate) const PART_FORMAT_VERSION: u32 = 1;
/// Largest header accepted (the header is a few hundred bytes; this bounds the allocation).
const MAX_HEADER_LEN: u32 = 1 << 20;

/// The scan options that change what a file's scan holds: every part of a run must agree on them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartScanOptions {
    /// `--concat` dimension names, outermost first.
    pub concat_dims: Vec<String>,
    /// `--skip-unsupported`.
    pub skip_unsupported: bool,
    /// `--max-slab-mib`, in bytes.
    pub max_slab_bytes: u64,
    /// Largest array whose values get a digest.
    pub digest_max_bytes: u64,
}

/// What a part says about itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartHeader {
    /// The shard number, from 0.
    pub shard: u32,
    /// The number of shards of the run.
    pub count: u32,
    /// The number of inputs of the whole run.
    pub inputs: u64,
    /// Position of this shard's first input in the sorted input list.
    pub first: u64,
    /// Number of files (records) in this part.
    pub files: u64,
    /// [`super::inputs_digest`] of the whole sorted input list.
    pub inputs_digest: String,
    /// The scan options.
    pub scan: PartScanOptions,
    /// The program that wrote it (`vzarr 0.1.0`): parts of different versions are not merged.
    pub generator: String,
}

impl PartHeader {
    /// The shard this part is.
    ///
    /// # Errors
    /// [`ShardError::Spec`] when the numbers are out of range.
    pub fn shard(&self) -> Result<Shard, ShardError> {
        Shard::new(self.shard, self.count)
    }

    fn encode(&self) -> Vec<u8> {
        let json = serde_json::to_vec(self).unwrap_or_default();
        let mut out = Vec::with_capacity(json.len() + 20);
        out.extend_from_slice(&PART_MAGIC);
        out.extend_from_slice(&PART_FORMAT_VERSION.to_le_bytes());
        out.extend_from_slice(&(json.len() as u32).to_le_bytes());
        out.extend_from_slice(&json);
        out.extend_from_slice(&crc32(&out).to_le_bytes());
        out
    }
}

fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = flate2::Crc::new();
    crc.update(bytes);
    crc.sum()
}

fn io(path: &Path, what: &str) -> impl FnOnce(std::io::Error) -> ShardError {
    let (path, what) = (path.to_path_buf(), what.to_string());
    move |source| ShardError::Io { path, what, source }
}

/// Writes a part holding `datasets` (the shard's per-file scans, in input order) at `destination`,
/// atomically, replacing an older part there (a retried task) but nothing else.
///
/// # Errors
/// [`ShardError::Write`] when the destination cannot be written (an ordinary file is there, it is an
/// input, I/O), [`ShardError::Mismatch`] when `header.files` is not the number of datasets, or
/// [`ShardError::Corrupt`] when a dataset cannot be encoded.
pub(crate) fn write_part(
    destination: &Path,
    header: &PartHeader,
    datasets: &[VirtualDataset],
) -> Result<(), ShardError> {
    if header.files != datasets.len() as u64 {
        return Err(ShardError::Mismatch(format!("{} datasets for a part of {} files", datasets.len(), header.files)));
    }
    let inputs: Vec<PathBuf> = datasets.iter().flat_map(|d| crate::store::local_sources(&d.sources)).collect();
    let staged = Staged::begin(destination, OutputKind::ScanPart, true, &inputs)?;
    let file = File::create(staged.path()).map_err(io(destination, "creating the part"))?;
    let mut out = BufWriter::new(file);
    out.write_all(&header.encode()).map_err(io(destination, "writing the part"))?;
    for dataset in datasets {
        let record = encode_dataset(dataset)
            .map_err(|e| ShardError::Corrupt { path: destination.to_path_buf(), problem: e.to_string() })?;
        out.write_all(&(record.len() as u64).to_le_bytes()).map_err(io(destination, "writing the part"))?;
        out.write_all(&record).map_err(io(destination, "writing the part"))?;
        out.write_all(&crc32(&record).to_le_bytes()).map_err(io(destination, "writing the part"))?;
    }
    out.into_inner().map_err(|e| io(destination, "writing the part")(e.into_error()))?;
    staged.publish()?;
    Ok(())
}

/// An open part: its header, then its files' scans one at a time ([`Iterator`]), so merging holds one
/// record's bytes at a time, never a whole part.
#[derive(Debug)]
pub(crate) struct PartReader {
    path: PathBuf,
    header: PartHeader,
    file: BufReader<File>,
    /// Bytes of the file not read yet.
    left: u64,
    /// The budget the records' store-owned bytes are counted in.
    budget: OwnedBytesBudget,
    /// Records not read yet.
    records: u64,
}

impl PartReader {
    /// Opens a part and checks its header.
    ///
    /// # Errors
    /// [`ShardError::Io`] or [`ShardError::Corrupt`] (not a part, another version, bad checksum).
    pub(crate) fn open(path: &Path, budget: &OwnedBytesBudget) -> Result<Self, ShardError> {
        // A FIFO or device matched by a glob would block or never end: only regular files are parts.
        let kind = std::fs::metadata(path).map_err(io(path, "opening the part"))?.file_type();
        if !kind.is_file() {
            return Err(ShardError::Corrupt { path: path.to_path_buf(), problem: "not a regular file".into() });
        }
        let file = File::open(path).map_err(io(path, "opening the part"))?;
        let left = file.metadata().map_err(io(path, "opening the part"))?.len();
        let mut reader = PartReader {
            path: path.to_path_buf(),
            header: PartHeader::default_for_read(),
            file: BufReader::new(file),
            left,
            budget: budget.clone(),
            records: 0,
        };
        reader.header = reader.read_header()?;
        reader.header.shard().map_err(|e| reader.corrupt(e.to_string()))?;
        reader.records = reader.header.files;
        if reader.records == 0 && reader.left != 0 {
            return Err(reader.corrupt(format!("{} bytes after the header of an empty part", reader.left)));
        }
        Ok(reader)
    }

    /// The part's header.
    pub(crate) fn header(&self) -> &PartHeader {
        &self.header
    }

    /// The part's path.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    fn corrupt(&self, problem: impl Into<String>) -> ShardError {
        ShardError::Corrupt { path: self.path.clone(), problem: problem.into() }
    }

    fn read_exact(&mut self, len: u64, what: &str) -> Result<Vec<u8>, ShardError> {
        if len > self.left {
            return Err(self.corrupt(format!("{what}: truncated: need {len} bytes, {} left", self.left)));
        }
        let mut bytes = vec![0; len as usize];
        self.file.read_exact(&mut bytes).map_err(io(&self.path, "reading the part"))?;
        self.left -= len;
        Ok(bytes)
    }

    fn read_header(&mut self) -> Result<PartHeader, ShardError> {
        let start = self.read_exact(16, "header")?;
        if start[..8] != PART_MAGIC {
            return Err(self.corrupt("no part magic (VZPART) at the start"));
        }
        let version = u32::from_le_bytes([start[8], start[9], start[10], start[11]]);
        if version != PART_FORMAT_VERSION {
            return Err(self.corrupt(format!(
                "unsupported part version {version} (this build reads version {PART_FORMAT_VERSION})"
            )));
        }
        let len = u32::from_le_bytes([start[12], start[13], start[14], start[15]]);
        if len > MAX_HEADER_LEN {
            return Err(self.corrupt(format!("header of {len} bytes")));
        }
        let json = self.read_exact(u64::from(len), "header")?;
        let stored = self.read_exact(4, "header checksum")?;
        let computed = crc32(&[start.as_slice(), &json].concat());
        if stored != computed.to_le_bytes() {
            return Err(self.corrupt("header checksum mismatch"));
        }
        serde_json::from_slice(&json).map_err(|e| self.corrupt(format!("header: {e}")))
    }

    fn next_record(&mut self) -> Result<VirtualDataset, ShardError> {
        let number = self.header.files - self.records;
        let len = u64::from_le_bytes(self.read_exact(8, "record length")?.try_into().unwrap_or_default());
        let record = self.read_exact(len, "record")?;
        let stored = self.read_exact(4, "record checksum")?;
        if stored != crc32(&record).to_le_bytes() {
            return Err(self.corrupt(format!("file {number} of the part: checksum mismatch")));
        }
        self.records -= 1;
        let dataset = decode_dataset(&record, &self.budget)
            .map_err(|e| self.corrupt(format!("file {number} of the part: {e}")))?;
        if dataset.sources.len() != 1 {
            return Err(self.corrupt(format!("file {number} of the part has {} sources", dataset.sources.len())));
        }
        if self.records == 0 && self.left != 0 {
            return Err(self.corrupt(format!("{} bytes after the last file", self.left)));
        }
        Ok(dataset)
    }
}

impl PartHeader {
    fn default_for_read() -> Self {
        PartHeader {
            shard: 0,
            count: 1,
            inputs: 0,
            first: 0,
            files: 0,
            inputs_digest: String::new(),
            scan: PartScanOptions {
                concat_dims: Vec::new(),
                skip_unsupported: false,
                max_slab_bytes: 0,
                digest_max_bytes: 0,
            },
            generator: String::new(),
        }
    }
}

impl Iterator for PartReader {
    type Item = Result<VirtualDataset, ShardError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.records == 0 {
            return None;
        }
        let result = self.next_record();
        if result.is_err() {
            self.records = 0;
            self.left = 0;
        }
        Some(result)
    }
}

/// Opens the parts of one run and checks they belong together and cover every shard exactly once:
/// same shard count, inputs, input digest, scan options and vzarr version; every shard number once;
/// each part's files where its shard's slice of the inputs is. Returns them in shard order. The same
/// file named twice (a glob and a name) counts once.
///
/// # Errors
/// [`ShardError::Mismatch`] naming the two parts that disagree, or listing the missing and
/// duplicated shard numbers; errors of [`PartReader::open`].
pub(crate) fn read_parts(paths: &[PathBuf], budget: &OwnedBytesBudget) -> Result<Vec<PartReader>, ShardError> {
    let mut seen = std::collections::HashSet::new();
    let mut parts = Vec::new();
    for path in paths {
        let key = std::fs::canonicalize(path).map_err(io(path, "opening the part"))?;
        if seen.insert(key) {
            parts.push(PartReader::open(path, budget)?);
        }
    }
    let Some(first) = parts.first() else {
        return Err(ShardError::Mismatch("no parts given".into()));
    };
    let first_header = first.header.clone();
    let first_path = first.path.display().to_string();
    for part in &parts {
        check_same_run(&first_header, &first_path, part)?;
    }
    check_coverage(&parts, first_header.count)?;
    parts.sort_by_key(|p| p.header.shard);
    Ok(parts)
}

/// The first scan option that differs between two parts: its name and both values.
fn first_difference(a: &PartScanOptions, b: &PartScanOptions) -> Option<(&'static str, String, String)> {
    let dims = |o: &PartScanOptions| format!("[{}]", o.concat_dims.join(", "));
    let options = [
        ("concatenation dimensions", dims(a), dims(b)),
        ("skip_unsupported", a.skip_unsupported.to_string(), b.skip_unsupported.to_string()),
        ("max_slab_bytes", a.max_slab_bytes.to_string(), b.max_slab_bytes.to_string()),
        ("digest_max_bytes", a.digest_max_bytes.to_string(), b.digest_max_bytes.to_string()),
    ];
    options.into_iter().find(|(_, x, y)| x != y)
}

fn check_same_run(first: &PartHeader, first_path: &str, part: &PartReader) -> Result<(), ShardError> {
    let h = &part.header;
    let differs = |what: &str, here: String, there: String| {
        Err(ShardError::Mismatch(format!(
            "{}: {what} is {here} but {there} in {first_path}: parts of different runs cannot be merged",
            part.path.display()
        )))
    };
    if h.count != first.count {
        return differs("the shard count", h.count.to_string(), first.count.to_string());
    }
    if (h.inputs, &h.inputs_digest) != (first.inputs, &first.inputs_digest) {
        let list = |h: &PartHeader| format!("{} inputs (digest {})", h.inputs, h.inputs_digest);
        return differs("the input list", list(h), list(first));
    }
    if let Some((option, here, there)) = first_difference(&h.scan, &first.scan) {
        return differs(&format!("the scan option {option}"), here, there);
    }
    if h.generator != first.generator {
        return differs("the generator", h.generator.clone(), first.generator.clone());
    }
    let range = h.shard()?.range(usize::try_from(h.inputs).unwrap_or(usize::MAX));
    if (h.first, h.files) != (range.start as u64, range.len() as u64) {
        return Err(ShardError::Corrupt {
            path: part.path.clone(),
            problem: format!(
                "shard {}/{} holds inputs {}..{} but that shard is inputs {}..{}",
                h.shard,
                h.count,
                h.first,
                h.first.saturating_add(h.files),
                range.start,
                range.end
            ),
        });
    }
    Ok(())
}

fn check_coverage(parts: &[PartReader], count: u32) -> Result<(), ShardError> {
    let mut by_shard: Vec<Vec<&Path>> = vec![Vec::new(); count as usize];
    for part in parts {
        by_shard[part.header.shard as usize].push(&part.path);
    }
    let missing: Vec<u32> = (0..count).filter(|&s| by_shard[s as usize].is_empty()).collect();
    let duplicated: Vec<String> = (0..count)
        .filter(|&s| by_shard[s as usize].len() > 1)
        .map(|s| {
            let files: Vec<String> = by_shard[s as usize].iter().map(|p| p.display().to_string()).collect();
            format!("{s} ({})", files.join(", "))
        })
        .collect();
    let mut problems = Vec::new();
    if !missing.is_empty() {
        problems.push(format!("missing shard(s) {}", number_ranges(&missing)));
    }
    if !duplicated.is_empty() {
        problems.push(format!("duplicated shard(s) {}", duplicated.join("; ")));
    }
    if problems.is_empty() {
        return Ok(());
    }
    Err(ShardError::Mismatch(format!("{} (the run has {count} shards, 0 to {})", problems.join("; "), count - 1)))
}

/// `1, 3-5, 9`.
fn number_ranges(numbers: &[u32]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < numbers.len() {
        let mut j = i;
        while j + 1 < numbers.len() && numbers[j + 1] == numbers[j] + 1 {
            j += 1;
        }
        out.push(if j == i { numbers[i].to_string() } else { format!("{}-{}", numbers[i], numbers[j]) });
        i = j + 1;
    }
    out.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_are_compact() {
        assert_eq!(number_ranges(&[1, 3, 4, 5, 9]), "1, 3-5, 9");
        assert_eq!(number_ranges(&[]), "");
    }
}
