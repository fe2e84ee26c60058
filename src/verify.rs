//! Proof against the source: read every array through the store (manifest, byte ranges, codecs) and
//! compare it bit for bit with the same values read by libnetcdf from the original files.
//!
//! This module and `scan/` are the only places that open source files with their native libraries;
//! here libnetcdf is the oracle, deliberately independent of vzarr's own decoding.

mod oracle;

use serde::Serialize;

use crate::dataset::SourcePart;
use crate::grid::{DimSelection, Selection};
use crate::read::{ReadError, ReadOptions, Store};

/// Target bytes compared per step (bounds memory for large arrays).
const SLAB_BYTES: u64 = 32 << 20;

/// The verdict for one array.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ArrayVerdict {
    /// Array path.
    pub path: String,
    /// Elements compared.
    pub elements: u64,
    /// Elements whose bits differ.
    pub mismatches: u64,
    /// The first difference, described (`index [3, 4, 5]: store 0x.., source 0x..`).
    pub first_mismatch: Option<String>,
    /// Why the array could not be compared at all.
    pub error: Option<String>,
}

impl ArrayVerdict {
    /// True when every element matched.
    pub fn ok(&self) -> bool {
        self.mismatches == 0 && self.error.is_none()
    }
}

/// Compares every array of `store` with its source files.
///
/// `progress(path, done_elements, total_elements)` is called as the comparison advances.
///
/// # Errors
/// [`ReadError`] only when the store itself cannot be used; per-array failures are reported in the
/// verdicts.
pub async fn verify_store(
    store: &Store,
    options: &ReadOptions,
    progress: &(dyn Fn(&str, u64, u64) + Sync),
) -> Result<Vec<ArrayVerdict>, ReadError> {
    let mut verdicts = Vec::new();
    for info in &store.info().arrays {
        let verdict = match verify_array(store, &info.path, options, progress).await {
            Ok(v) => v,
            Err(e) => ArrayVerdict {
                path: info.path.clone(),
                elements: 0,
                mismatches: 0,
                first_mismatch: None,
                error: Some(e.to_string()),
            },
        };
        verdicts.push(verdict);
    }
    Ok(verdicts)
}

async fn verify_array(
    store: &Store,
    path: &str,
    options: &ReadOptions,
    progress: &(dyn Fn(&str, u64, u64) + Sync),
) -> Result<ArrayVerdict, ReadError> {
    let array = store.array(path).await?;
    let shape = array.shape();
    let total: u64 = shape.iter().product();
    let element_size = array.metadata().element_size() as u64;
    let mut verdict = ArrayVerdict {
        path: path.to_string(),
        elements: 0,
        mismatches: 0,
        first_mismatch: None,
        error: None,
    };
    for part in parts(store, &shape) {
        let location = store
            .sources()
            .get(part.source)
            .map(|f| f.location.clone())
            .unwrap_or_default();
        let mut source = oracle::OracleVariable::open(&location, path)
            .map_err(|e| oracle_error(&location, path, e))?;
        for (start, rows) in slabs(&shape, part, element_size) {
            let mut sel: Vec<DimSelection> = shape
                .iter()
                .map(|&n| DimSelection::Range {
                    start: 0,
                    stop: n,
                    step: 1,
                })
                .collect();
            if let Some(first) = sel.first_mut() {
                *first = DimSelection::Range {
                    start,
                    stop: start + rows,
                    step: 1,
                };
            }
            let ours = array.read(&Selection(sel), options).await?;
            let theirs = source
                .read_rows(start - part.start, rows)
                .map_err(|e| oracle_error(&location, path, e))?;
            compare(
                &ours.bytes,
                &theirs,
                element_size as usize,
                &shape,
                start,
                &mut verdict,
            );
            progress(path, verdict.elements, total);
        }
    }
    Ok(verdict)
}

fn oracle_error(location: &str, path: &str, e: netcdf::Error) -> ReadError {
    ReadError::Store {
        location: location.to_string(),
        what: format!("{path}: reading the source with libnetcdf"),
        source: e.into(),
    }
}

/// The source files and the index range each covers along the first dimension.
fn parts(store: &Store, shape: &[u64]) -> Vec<SourcePart> {
    let provenance = &store.info().provenance;
    if provenance.parts.is_empty() {
        return vec![SourcePart {
            source: 0,
            start: 0,
            length: shape.first().copied().unwrap_or(1),
        }];
    }
    provenance.parts.clone()
}

/// (first row, row count) steps covering `part` along the first dimension.
fn slabs(shape: &[u64], part: SourcePart, element_size: u64) -> Vec<(u64, u64)> {
    if shape.is_empty() {
        return vec![(0, 1)];
    }
    let row_bytes = shape[1..].iter().product::<u64>() * element_size;
    let rows = (SLAB_BYTES / row_bytes.max(1)).max(1);
    let end = part.start + part.length;
    (part.start..end)
        .step_by(rows as usize)
        .map(|s| (s, rows.min(end - s)))
        .collect()
}

fn compare(
    ours: &[u8],
    theirs: &[u8],
    element_size: usize,
    shape: &[u64],
    first_row: u64,
    verdict: &mut ArrayVerdict,
) {
    let n = ours.len().min(theirs.len()) / element_size.max(1);
    if ours.len() != theirs.len() {
        verdict.error.get_or_insert(format!(
            "store gave {} bytes, source {}",
            ours.len(),
            theirs.len()
        ));
    }
    for i in 0..n {
        let (a, b) = (
            &ours[i * element_size..(i + 1) * element_size],
            &theirs[i * element_size..(i + 1) * element_size],
        );
        if a != b {
            verdict.mismatches += 1;
            if verdict.first_mismatch.is_none() {
                let index = unravel(i as u64, shape, first_row);
                verdict.first_mismatch = Some(format!(
                    "index {index:?}: store {}, source {}",
                    hex(a),
                    hex(b)
                ));
            }
        }
    }
    verdict.elements += n as u64;
}

fn unravel(mut i: u64, shape: &[u64], first_row: u64) -> Vec<u64> {
    let mut out = vec![0; shape.len()];
    for d in (1..shape.len()).rev() {
        out[d] = i % shape[d];
        i /= shape[d].max(1);
    }
    if let Some(first) = out.first_mut() {
        *first = i + first_row;
    }
    out
}

fn hex(bytes: &[u8]) -> String {
    bytes
        .iter()
        .rev()
        .map(|b| format!("{b:02x}"))
        .collect::<String>()
        .chars()
        .fold(String::from("0x"), |mut s, c| {
            s.push(c);
            s
        })
}
