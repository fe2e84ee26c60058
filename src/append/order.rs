//! Where the tail goes: its position after the stored end (strictly after, no new gap in a store
//! without gaps), the combined source table in the order a fresh scan gives it (groups of variables,
//! then every file's position along the concatenation dimensions, outermost first), and the
//! provenance of the result.

use std::collections::BTreeMap;

use super::{AppendError, AppendOptions, Recorded, Scanned};
use crate::combine::ConcatDim;
use crate::dataset::{Provenance, SourceBox, SourcePart, VirtualDataset};
use crate::manifest::SourceTable;

/// A source of the result: a stored one or one of the tail's (by id in its table).
#[derive(Debug, Clone, Copy)]
enum Origin {
    Stored(u32),
    Tail(u32),
}

/// How the stored dataset and the tail fit together.
pub(crate) struct Layout {
    /// The appended dimension.
    pub(crate) dim: String,
    /// The concatenation dimensions, outermost first.
    pub(crate) dims: Vec<ConcatDim>,
    /// Index of the appended dimension in `dims`.
    pub(crate) k: usize,
    /// Names of the new dimensions (their coordinate arrays stay as stored).
    pub(crate) new_dims: Vec<String>,
    /// The combined source table.
    pub(crate) sources: SourceTable,
    /// Stored source id -> combined id.
    pub(crate) stored_ids: Vec<u32>,
    /// Tail source id -> combined id.
    pub(crate) tail_ids: Vec<u32>,
    /// Start of the last stored segment along the dimension (where the tail begins).
    pub(crate) last_start: u64,
    /// The stored extent along the dimension.
    pub(crate) stored_len: u64,
    /// Start of every segment (file position) of the result along the dimension.
    pub(crate) segment_starts: Vec<u64>,
    /// The rescanned stored files: location and the arrays their stored box lists.
    pub(crate) last_boxes: Vec<(String, Vec<String>)>,
    boxes: Vec<SourceBox>,
    /// Per combined source: its group of variables (index in the fresh combine's order).
    groups: Vec<usize>,
}

impl Layout {
    /// Places the tail after the stored dataset.
    pub(crate) fn new(
        stored: &VirtualDataset,
        tail: &VirtualDataset,
        scanned: &Scanned,
        recorded: &Recorded,
        options: &AppendOptions,
    ) -> Result<Self, AppendError> {
        let k = recorded.dim;
        let dims = recorded.combine.dims.clone();
        let dim = dims[k].name.clone();
        let stored_starts = starts(&stored.provenance.boxes, k);
        let tail_starts = starts(&tail.provenance.boxes, k);
        let stored_len = stored.provenance.boxes.iter().map(|b| b.ranges[k].0 + b.ranges[k].1).max().unwrap_or(0);
        let last_start = stored_starts.last().copied().unwrap_or(0);
        check_after(tail, scanned, k, &dim)?;
        check_gaps(stored, tail, options)?;
        let (sources, stored_ids, tail_ids, boxes, groups) =
            combined_sources(stored, tail, scanned, k, &stored_starts)?;
        let segment_starts =
            stored_starts.iter().copied().chain(tail_starts.iter().skip(1).map(|s| s + last_start)).collect();
        let last_boxes = stored
            .provenance
            .boxes
            .iter()
            .filter_map(|b| stored.sources.get(b.source).map(|s| (s.location.clone(), b.arrays.clone())))
            .filter(|(location, _)| scanned.last.contains(location))
            .collect();
        Ok(Layout {
            new_dims: dims.iter().filter(|d| d.is_new()).map(|d| d.name.clone()).collect(),
            dim,
            dims,
            k,
            sources,
            stored_ids,
            tail_ids,
            last_start,
            stored_len,
            segment_starts,
            last_boxes,
            boxes,
            groups,
        })
    }

    /// The provenance of the result: the stored one with the tail's files, boxes and gaps added.
    /// Re-encoding is filled in by `times`.
    pub(crate) fn provenance(&self, stored: &VirtualDataset, tail: &VirtualDataset) -> Provenance {
        let old = &stored.provenance;
        let mut gaps: Vec<String> = old.gaps.iter().chain(&tail.provenance.gaps).cloned().collect();
        gaps.sort_by_key(|gap| self.group_of_gap(gap));
        gaps.dedup();
        let parts = match &old.concat_dim {
            Some(_) => self
                .boxes
                .iter()
                .map(|b| SourcePart { source: b.source, start: b.ranges[0].0, length: b.ranges[0].1 })
                .collect(),
            None => Vec::new(),
        };
        Provenance {
            concat_dim: old.concat_dim.clone(),
            parts,
            concat_dims: old.concat_dims.clone(),
            boxes: self.boxes.clone(),
            gaps,
            reencoded: old.reencoded.clone(),
            units: old.units.clone(),
            recipe: old.recipe.clone(),
        }
    }
}

impl Layout {
    /// The group of the files a gap note names (`... between A and B`), for ordering the notes group
    /// by group as a fresh combine lists them.
    fn group_of_gap(&self, gap: &str) -> usize {
        let Some((_, files)) = gap.split_once(" between ") else { return 0 };
        let named = |s: &crate::manifest::SourceFile| {
            files.strip_prefix(s.location.as_str()).is_some_and(|r| r.starts_with(" and "))
        };
        self.sources.iter().position(named).map_or(0, |i| self.groups[i])
    }
}

/// The distinct starts along dimension `k`, ascending.
fn starts(boxes: &[SourceBox], k: usize) -> Vec<u64> {
    let mut out: Vec<u64> = boxes.iter().filter_map(|b| b.ranges.get(k).map(|r| r.0)).collect();
    out.sort_unstable();
    out.dedup();
    out
}

fn location_of(tail: &VirtualDataset, id: u32) -> String {
    tail.sources.get(id).map(|s| s.location.clone()).unwrap_or_default()
}

/// Every rescanned stored file is first along the dimension in the tail: no new file starts before
/// the stored end.
fn check_after(tail: &VirtualDataset, scanned: &Scanned, k: usize, dim: &str) -> Result<(), AppendError> {
    let boxes = &tail.provenance.boxes;
    let Some(late) = boxes.iter().find(|b| b.ranges[k].0 != 0 && scanned.last.contains(&location_of(tail, b.source)))
    else {
        return Ok(());
    };
    let stored = location_of(tail, late.source);
    let early = boxes
        .iter()
        .find(|b| b.ranges[k].0 == 0 && !scanned.last.contains(&location_of(tail, b.source)))
        .map(|b| location_of(tail, b.source))
        .unwrap_or_default();
    let value = |file: &str, last: bool| {
        scanned.coordinates.get(file).map_or_else(String::new, |c| {
            let v = if last { c.values.last() } else { c.values.first() };
            let units = c.units.as_deref().map(|u| format!(" {u}")).unwrap_or_default();
            v.map_or_else(String::new, |v| format!("{v}{units}"))
        })
    };
    Err(AppendError::NotAfter {
        first: value(&early, false),
        last: value(&stored, true),
        file: early,
        dim: dim.to_string(),
        stored,
    })
}

/// A store without gaps gets none from an append, unless allowed.
fn check_gaps(stored: &VirtualDataset, tail: &VirtualDataset, options: &AppendOptions) -> Result<(), AppendError> {
    match tail.provenance.gaps.first() {
        Some(gap) if stored.provenance.gaps.is_empty() && !options.allow_gaps => {
            Err(AppendError::Gap { detail: format!("gap: {gap}") })
        }
        _ => Ok(()),
    }
}

/// Per box: its group (counted from the boxes' order: each group's files come together, the first at
/// the all-zero position) and its position along every dimension (segment index along `k`).
fn keys(boxes: &[SourceBox], k: usize, starts: &[u64]) -> Vec<(usize, Vec<u64>)> {
    let mut group = 0usize;
    let mut out = Vec::with_capacity(boxes.len());
    for (i, b) in boxes.iter().enumerate() {
        let pos: Vec<u64> = b
            .ranges
            .iter()
            .enumerate()
            .map(|(d, r)| if d == k { starts.partition_point(|&s| s < r.0) as u64 } else { r.0 })
            .collect();
        if i > 0 && pos.iter().all(|&p| p == 0) {
            group += 1;
        }
        out.push((group, pos));
    }
    out
}

type Combined = (SourceTable, Vec<u32>, Vec<u32>, Vec<SourceBox>, Vec<usize>);

/// The combined source table (stored files and the tail's new ones, in a fresh scan's order), the id
/// maps, and every file's box in the result.
fn combined_sources(
    stored: &VirtualDataset,
    tail: &VirtualDataset,
    scanned: &Scanned,
    k: usize,
    stored_starts: &[u64],
) -> Result<Combined, AppendError> {
    let (old_boxes, tail_boxes) = (&stored.provenance.boxes, &tail.provenance.boxes);
    let tail_starts = starts(tail_boxes, k);
    let mut order: Vec<((usize, Vec<u64>), Origin)> = Vec::new();
    for (key, b) in keys(old_boxes, k, stored_starts).into_iter().zip(old_boxes) {
        order.push((key, Origin::Stored(b.source)));
    }
    let shift = stored_starts.len().saturating_sub(1);
    for ((g, mut pos), b) in keys(tail_boxes, k, &tail_starts).into_iter().zip(tail_boxes) {
        if pos[k] == 0 {
            continue; // a rescanned stored file
        }
        pos[k] += shift as u64;
        order.push(((g, pos), Origin::Tail(b.source)));
    }
    order.sort_by(|a, b| a.0.cmp(&b.0));
    if let Some(w) = order.windows(2).find(|w| w[0].0 == w[1].0) {
        let problem = format!("two files at one position ({:?})", w[0].0);
        return Err(AppendError::Build { variable: String::new(), problem });
    }
    let mut sources = SourceTable::new();
    let mut stored_ids = vec![u32::MAX; stored.sources.len()];
    let mut tail_ids = vec![u32::MAX; tail.sources.len()];
    let mut boxes = Vec::with_capacity(order.len());
    let old_box: BTreeMap<u32, &SourceBox> = old_boxes.iter().map(|b| (b.source, b)).collect();
    let new_box: BTreeMap<u32, &SourceBox> = tail_boxes.iter().map(|b| (b.source, b)).collect();
    let last_start = stored_starts.last().copied().unwrap_or(0);
    let groups = order.iter().map(|((g, _), _)| *g).collect();
    for (_, origin) in &order {
        let id = sources.len() as u32;
        let (file, mut b) = match *origin {
            Origin::Stored(i) => {
                stored_ids[i as usize] = id;
                (stored.sources.get(i), old_box[&i].clone())
            }
            Origin::Tail(j) => {
                tail_ids[j as usize] = id;
                let mut b = new_box[&j].clone();
                b.ranges[k].0 += last_start;
                (tail.sources.get(j), b)
            }
        };
        let file = file.cloned().ok_or_else(|| AppendError::Build {
            variable: String::new(),
            problem: "a box names a source not in the table".into(),
        })?;
        b.source = id;
        boxes.push(b);
        sources.push(file);
    }
    map_rescanned(stored, tail, scanned, &stored_ids, &mut tail_ids);
    Ok((sources, stored_ids, tail_ids, boxes, groups))
}

/// The rescanned stored files of the tail take their stored file's combined id.
fn map_rescanned(
    stored: &VirtualDataset,
    tail: &VirtualDataset,
    scanned: &Scanned,
    stored_ids: &[u32],
    tail_ids: &mut [u32],
) {
    let by_location: BTreeMap<&str, u32> =
        stored.sources.iter().enumerate().map(|(i, s)| (s.location.as_str(), i as u32)).collect();
    for (j, s) in tail.sources.iter().enumerate() {
        if scanned.last.contains(&s.location) {
            if let Some(&i) = by_location.get(s.location.as_str()) {
                tail_ids[j] = stored_ids[i as usize];
            }
        }
    }
}
