//! `vzarr check-sidecars`: a sidecar against its data file (input: the sidecar's location; output:
//! every [`Difference`]). Both are scanned (the sidecar by the DMR++ scanner, the data file by the
//! scanner its content selects) and compared variable by variable: data type, shape, chunk shape,
//! fill value, byte order (of types wider than a byte), filters (the codecs after `bytes`; a
//! deflate level, which decoding does not use, is not compared) and every chunk's presence, offset
//! and length, and for chunks the sidecar holds itself (compact data) their bytes. A variable the
//! sidecar describes but vzarr cannot represent is not compared and is listed as such
//! ([`SidecarCheck::not_compared`]); a variable whose storage the scan refuses as wrong (chunks
//! outside the array or off its grid, offsets past the file, compact data of the wrong length) is a
//! difference, as `vzarr scan` refuses it (a refusal that stops the whole scan, such as a chunk past
//! the end of the data file, is that variable's difference and nothing else is compared). Filters are
//! printed by name (a sidecar may list thousands), in full only where their names agree.

use std::path::{Path, PathBuf};

use crate::codec::Codec;
use crate::dataset::{VirtualArray, VirtualDataset};
use crate::manifest::ChunkEntry;
use crate::scan::{ScanError, ScanOptions};

/// One way a sidecar disagrees with its data file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Difference {
    /// The variable.
    pub variable: String,
    /// The chunk's linear index in the variable's grid, for chunk differences.
    pub chunk: Option<u64>,
    /// What differs (`offset`, `length`, `filters`, `fill value`, ...).
    pub what: String,
    /// What the sidecar says.
    pub sidecar: String,
    /// What the data file says.
    pub file: String,
}

impl std::fmt::Display for Difference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: ", self.variable)?;
        if let Some(chunk) = self.chunk {
            write!(f, "chunk {chunk}: ")?;
        }
        write!(f, "{}: sidecar {}, file {}", self.what, self.sidecar, self.file)
    }
}

/// The outcome of checking one sidecar.
#[derive(Debug, Clone)]
pub(crate) struct SidecarCheck {
    /// The data file compared with.
    pub data_file: String,
    /// Variables compared.
    pub compared: usize,
    /// Every difference found.
    pub differences: Vec<Difference>,
    /// Variables not compared and why (what vzarr cannot represent from the sidecar).
    pub not_compared: Vec<String>,
}

/// Scans `sidecar` and its data file and compares them.
///
/// # Errors
/// [`ScanError`] when the sidecar is not a valid sidecar or either cannot be scanned.
pub(crate) fn check_sidecar(sidecar: &Path, options: &ScanOptions) -> Result<SidecarCheck, ScanError> {
    let lenient = ScanOptions { skip_unsupported: true, concat_dims: Vec::new(), ..options.clone() };
    let from_sidecar = match crate::scan::scan_input(sidecar, &lenient) {
        Ok(dataset) => dataset,
        // A lie for which `scan` refuses the whole sidecar (a chunk past the end of the data file):
        // a difference of that variable, as `scan` names it.
        Err(ScanError::Variable { variable, what, source, .. }) => {
            let why = format!("refused by scan ({what}: {source})");
            return Ok(SidecarCheck {
                data_file: String::new(),
                compared: 0,
                differences: vec![difference(&variable, None, "storage", why, "readable")],
                not_compared: Vec::new(),
            });
        }
        Err(e) => return Err(e),
    };
    let data_file = from_sidecar.sources.get(0).map(|s| s.location.clone()).unwrap_or_default();
    let from_file = crate::scan::scan_input(&PathBuf::from(&data_file), &lenient)?;
    let mut check = SidecarCheck { data_file, compared: 0, differences: Vec::new(), not_compared: Vec::new() };
    for warning in &from_sidecar.warnings {
        check.not_compared.push(format!("{}: {}", warning.variable, warning.message));
    }
    compare(&from_sidecar, &from_file, &mut check);
    // The lenient scan leaves out what it refuses; the strict one tells a wrong sidecar (an error)
    // from what vzarr cannot represent (unsupported).
    let strict = ScanOptions { skip_unsupported: false, ..lenient };
    if let Err(ScanError::Variable { variable, what, source, .. }) = crate::scan::scan_input(sidecar, &strict) {
        let why = format!("{what}: {source}");
        check.differences.push(difference(&variable, None, "storage", format!("refused by scan ({why})"), "readable"));
    }
    Ok(check)
}

fn compare(sidecar: &VirtualDataset, file: &VirtualDataset, check: &mut SidecarCheck) {
    let skipped = |path: &str| sidecar.warnings.iter().any(|w| w.variable == path);
    for theirs in &file.arrays {
        match sidecar.array(&theirs.path) {
            Some(ours) => {
                check.compared += 1;
                compare_array(ours, theirs, sidecar, file, &mut check.differences);
            }
            None if skipped(&theirs.path) => {}
            None => check.differences.push(difference(&theirs.path, None, "variable", "absent", "present")),
        }
    }
    for ours in sidecar.arrays.iter().filter(|a| file.array(&a.path).is_none()) {
        check.differences.push(difference(&ours.path, None, "variable", "present", "absent"));
    }
}

fn difference(
    variable: &str,
    chunk: Option<u64>,
    what: &str,
    sidecar: impl ToString,
    file: impl ToString,
) -> Difference {
    Difference {
        variable: variable.into(),
        chunk,
        what: what.into(),
        sidecar: sidecar.to_string(),
        file: file.to_string(),
    }
}

fn compare_array(
    ours: &VirtualArray,
    theirs: &VirtualArray,
    sidecar: &VirtualDataset,
    file: &VirtualDataset,
    out: &mut Vec<Difference>,
) {
    let (a, b) = (&ours.metadata, &theirs.metadata);
    let var = ours.path.as_str();
    let before = out.len();
    if a.data_type != b.data_type {
        out.push(difference(var, None, "type", a.data_type, b.data_type));
    }
    if a.shape() != b.shape() {
        out.push(difference(var, None, "shape", format!("{:?}", a.shape()), format!("{:?}", b.shape())));
    }
    if a.chunk_grid != b.chunk_grid {
        let shape = |m: &crate::metadata::ArrayMetadata| {
            format!("{:?}", m.chunk_grid.dims().iter().map(|d| d.edge(0)).collect::<Vec<_>>())
        };
        out.push(difference(var, None, "chunk shape", shape(a), shape(b)));
    }
    let endian = |m: &crate::metadata::ArrayMetadata| {
        m.codecs.codecs().iter().find_map(|c| match c {
            Codec::Bytes { endian } => *endian,
            _ => None,
        })
    };
    if a.element_size() > 1 && b.element_size() > 1 && endian(a) != endian(b) {
        let name =
            |e: Option<crate::codec::Endian>| e.map_or("not given".to_string(), |e| format!("{e:?}").to_lowercase());
        out.push(difference(var, None, "byte order", name(endian(a)), name(endian(b))));
    }
    if a.fill_value != b.fill_value && a.data_type == b.data_type {
        let json = |m: &crate::metadata::ArrayMetadata| m.fill_value.to_json(m.data_type);
        out.push(difference(var, None, "fill value", json(a), json(b)));
    }
    let (fa, fb) = (filters(a.codecs.codecs()), filters(b.codecs.codecs()));
    if fa != fb {
        let (sa, sb) = shown_filters(a.codecs.codecs(), b.codecs.codecs());
        out.push(difference(var, None, "filters", sa, sb));
    }
    if out.len() == before {
        compare_chunks(ours, theirs, (sidecar, file), out);
    }
}

/// Every chunk of two arrays of the same grid: presence, offset, length, file, inline bytes.
fn compare_chunks(
    ours: &VirtualArray,
    theirs: &VirtualArray,
    datasets: (&VirtualDataset, &VirtualDataset),
    out: &mut Vec<Difference>,
) {
    let (sidecar, file) = datasets;
    let var = ours.path.as_str();
    let location = |d: &VirtualDataset, s: u32| d.sources.get(s).map(|f| f.location.clone()).unwrap_or_default();
    for (k, (x, y)) in ours.chunks.iter().zip(theirs.chunks.iter()).enumerate() {
        let k = Some(k as u64);
        match (x, y) {
            (
                ChunkEntry::Source { source: s1, offset: o1, length: l1 },
                ChunkEntry::Source { source: s2, offset: o2, length: l2 },
            ) => {
                if o1 != o2 {
                    out.push(difference(var, k, "offset", o1, o2));
                }
                if l1 != l2 {
                    out.push(difference(var, k, "length", l1, l2));
                }
                if location(sidecar, s1) != location(file, s2) {
                    out.push(difference(var, k, "file", location(sidecar, s1), location(file, s2)));
                }
            }
            (ChunkEntry::Owned { offset: o1, length: l1 }, ChunkEntry::Owned { offset: o2, length: l2 }) => {
                let same = ours
                    .chunks
                    .owned_chunk(o1, l1)
                    .ok()
                    .zip(theirs.chunks.owned_chunk(o2, l2).ok())
                    .is_some_and(|(p, q)| p == q);
                if !same {
                    out.push(difference(
                        var,
                        k,
                        "inline bytes",
                        format!("{l1} bytes"),
                        format!("{l2} bytes, not the same"),
                    ));
                }
            }
            (ChunkEntry::Missing, ChunkEntry::Missing) | (ChunkEntry::Source { .. }, ChunkEntry::Owned { .. }) => {}
            (x, y) => out.push(difference(var, k, "chunk", describe(x), describe(y))),
        }
    }
}

/// The codecs after `bytes`, deflate levels left out.
fn filters(codecs: &[Codec]) -> Vec<String> {
    codecs
        .iter()
        .filter(|c| !matches!(c, Codec::Bytes { .. }))
        .map(|c| match c {
            Codec::Zlib { .. } => "zlib".to_string(),
            other => other.to_json().to_string(),
        })
        .collect()
}

/// Most filters named in a difference; the rest are counted.
const SHOWN_FILTERS: usize = 8;

/// Two differing filter lists as a difference shows them: by name (at most [`SHOWN_FILTERS`] of
/// each), or where the names agree, the first pair that differs in full (cut to 200 characters).
fn shown_filters(a: &[Codec], b: &[Codec]) -> (String, String) {
    let kept = |codecs: &[Codec]| -> Vec<Codec> {
        codecs.iter().filter(|c| !matches!(c, Codec::Bytes { .. })).cloned().collect()
    };
    let (a, b) = (kept(a), kept(b));
    let names = |codecs: &[Codec]| -> Vec<&'static str> { codecs.iter().map(Codec::name).collect() };
    if names(&a) == names(&b) {
        let cut = |c: &Codec| {
            let text = c.to_json().to_string();
            match text.char_indices().nth(200) {
                Some((at, _)) => format!("{}...", &text[..at]),
                None => text,
            }
        };
        let differing =
            a.iter().zip(&b).find(|(x, y)| filters(std::slice::from_ref(*x)) != filters(std::slice::from_ref(*y)));
        if let Some((x, y)) = differing {
            return (cut(x), cut(y));
        }
    }
    let show = |codecs: &[Codec]| {
        let names = names(codecs);
        let mut text = names.iter().take(SHOWN_FILTERS).copied().collect::<Vec<_>>().join(" ");
        if names.len() > SHOWN_FILTERS {
            text.push_str(&format!(" ... ({} filters)", names.len()));
        }
        if names.is_empty() {
            text = "none".into();
        }
        text
    };
    (show(&a), show(&b))
}

fn describe(entry: ChunkEntry) -> String {
    match entry {
        ChunkEntry::Missing => "not stored".into(),
        ChunkEntry::Source { offset, length, .. } => format!("{length} bytes at {offset}"),
        ChunkEntry::Owned { length, .. } => format!("{length} bytes held inline"),
    }
}
